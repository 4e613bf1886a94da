// torch.optim.SGD's single-tensor update, op for op.
#include "sinter/optim.h"
#include "support/check.h"

namespace sinter::optim {

SGD::SGD(const std::vector<Tensor>& params, const SGDOptions& defaults)
    : SGD(std::vector<OptimizerParamGroup>{OptimizerParamGroup(params)}, defaults) {}

SGD::SGD(const std::vector<OptimizerParamGroup>& groups, const SGDOptions& defaults)
    : Optimizer("SGD", defaults.clone()) {
  init(groups);
}

void SGD::check_options(const OptimizerOptions& options) const {
  const auto* o = dynamic_cast<const SGDOptions*>(&options);
  SINTER_CHECK(o != nullptr,
               "SGD: a param group's options must be SGDOptions (these are another optimizer's)");
  SINTER_CHECK(o->lr() >= 0, "SGD: invalid learning rate: {}", o->lr());
  SINTER_CHECK(o->momentum() >= 0, "SGD: invalid momentum value: {}", o->momentum());
  SINTER_CHECK(o->weight_decay() >= 0, "SGD: invalid weight_decay value: {}", o->weight_decay());
  SINTER_CHECK(!o->nesterov() || (o->momentum() > 0 && o->dampening() == 0),
               "SGD: Nesterov momentum requires a momentum and zero dampening (momentum {}, dampening {})",
               o->momentum(), o->dampening());
}

void SGD::update() {
  for (OptimizerParamGroup& group : param_groups()) {
    const auto& o = static_cast<const SGDOptions&>(group.options());
    for (Tensor& param : group.params()) {
      Tensor grad = param.grad();
      if (!grad.defined()) continue;
      if (o.maximize()) grad = -grad;
      if (o.weight_decay() != 0) grad = grad.add(param, o.weight_decay());
      if (o.momentum() != 0) {
        std::map<std::string, Tensor>& state = state_of(param);
        auto found = state.find("momentum_buffer");
        Tensor buf;
        if (found == state.end()) {
          buf = grad.detach().clone();
          state["momentum_buffer"] = buf;
        } else {
          buf = found->second;
          buf.mul_(o.momentum()).add_(grad, 1 - o.dampening());
        }
        grad = o.nesterov() ? grad.add(buf, o.momentum()) : buf;
      }
      param.add_(grad, -o.lr());
    }
  }
}

}  // namespace sinter::optim
