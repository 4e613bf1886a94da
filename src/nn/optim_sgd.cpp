// torch.optim.SGD's single-tensor update, op for op.
#include "sinter/compile.h"
#include "sinter/ops.h"
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
  // The first step with momentum copies the gradient into the buffer, later ones decay it: a compiled step keeps
  // the case it was captured in (guarded: it recompiles once, for the second step).
  std::vector<std::pair<Tensor, bool>> first_steps;
  for (OptimizerParamGroup& group : param_groups()) {
    const auto& o = static_cast<const SGDOptions&>(group.options());
    std::map<std::string, Tensor> lrs;  // by device
    for (Tensor& param : group.params()) {
      Tensor grad = param.grad();
      if (!grad.defined()) continue;
      if (o.maximize()) grad = -grad;
      if (o.weight_decay() != 0) grad = grad.add(param, o.weight_decay());
      if (o.momentum() != 0) {
        const bool first = state_of(param).count("momentum_buffer") == 0;
        first_steps.emplace_back(param, first);
        Tensor buf = state_for(param, [&](std::map<std::string, Tensor>& s) { s["momentum_buffer"] = zeros_like(param); })
                         .at("momentum_buffer");
        if (first)
          buf.copy_(grad);
        else
          buf.mul_(o.momentum()).add_(grad, 1 - o.dampening());
        grad = o.nesterov() ? grad.add(buf, o.momentum()) : buf;
      }
      Tensor& lr = lrs[param.device().str()];
      if (!lr.defined()) lr = lr_tensor(group, param.device());
      param.sub_(grad * lr);
    }
  }
  if (!first_steps.empty())
    guard_host_state(
        [alive = alive(), self = this, first_steps] {
          if (alive.expired()) return false;
          for (const auto& [param, first] : first_steps)
            if ((self->state(param).count("momentum_buffer") == 0) != first) return false;
          return true;
        },
        "whether SGD's momentum buffers exist (its first step with momentum differs from the others)");
}

}  // namespace sinter::optim
