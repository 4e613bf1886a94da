// torch.optim.Adam's and AdamW's single-tensor update (_single_tensor_adam), op for op: the step counted per
// parameter, bias corrections from it, amsgrad's running maximum.
#include <cmath>
#include <functional>
#include <map>

#include "sinter/autograd.h"
#include "sinter/compile.h"
#include "sinter/ops.h"
#include "sinter/optim.h"
#include "support/check.h"

namespace sinter::optim {

namespace {

struct AdamHyper {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, maximize;
  bool decoupled;  // AdamW
};

template <class Options>
AdamHyper hyper_of(const OptimizerOptions& options, bool decoupled) {
  const auto& o = static_cast<const Options&>(options);
  return {o.lr(),
          std::get<0>(o.betas()),
          std::get<1>(o.betas()),
          o.eps(),
          o.weight_decay(),
          o.amsgrad(),
          o.maximize(),
          decoupled};
}

template <class Options>
void check_adam(const OptimizerOptions& options, const char* name) {
  const auto* o = dynamic_cast<const Options*>(&options);
  SINTER_CHECK(o != nullptr, "{}: a param group's options must be {}Options (these are another optimizer's)",
               name, name);
  const auto [beta1, beta2] = o->betas();
  SINTER_CHECK(o->lr() >= 0, "{}: invalid learning rate: {}", name, o->lr());
  SINTER_CHECK(o->eps() >= 0, "{}: invalid epsilon value: {}", name, o->eps());
  SINTER_CHECK(beta1 >= 0 && beta1 < 1, "{}: invalid beta parameter at index 0: {}", name, beta1);
  SINTER_CHECK(beta2 >= 0 && beta2 < 1, "{}: invalid beta parameter at index 1: {}", name, beta2);
  SINTER_CHECK(o->weight_decay() >= 0, "{}: invalid weight_decay value: {}", name, o->weight_decay());
}

// `lr` is the group's learning rate (a 0-dim float64 tensor on the parameter's device). The step count and the bias
// corrections are tensors, as in PyTorch's capturable Adam, so a compiled step reads nothing on the host; they are
// float64, so the corrections equal the host arithmetic of PyTorch's default Adam.
void adam_update(Tensor& param, std::map<std::string, Tensor>& state, const AdamHyper& h, const Tensor& lr) {
  Tensor grad = param.grad();
  if (h.maximize) grad = -grad;
  Tensor& step_t = state.at("step");
  Tensor& exp_avg = state.at("exp_avg");
  Tensor& exp_avg_sq = state.at("exp_avg_sq");
  step_t.add_(1);

  if (h.weight_decay != 0) {
    if (h.decoupled)
      param.mul_(1 - lr * h.weight_decay);
    else
      grad = grad.add(param, h.weight_decay);
  }
  exp_avg.copy_(exp_avg.lerp(grad, 1 - h.beta1));
  exp_avg_sq.mul_(h.beta2);
  exp_avg_sq.copy_(exp_avg_sq.addcmul(grad, grad, 1 - h.beta2));

  const Tensor step = step_t.to(kFloat64);
  const Tensor bias_correction1 = 1 - pow(h.beta1, step);
  const Tensor bias_correction2 = 1 - pow(h.beta2, step);
  const Tensor step_size = lr / bias_correction1;
  const Tensor bias_correction2_sqrt = sqrt(bias_correction2);

  Tensor denom;
  if (h.amsgrad) {
    if (!state.count("max_exp_avg_sq")) {  // amsgrad turned on after the first step: kept across calls
      CaptureSuspended eager;
      state["max_exp_avg_sq"] = zeros_like(param);
    }
    Tensor& max_exp_avg_sq = state.at("max_exp_avg_sq");
    max_exp_avg_sq.copy_(maximum(max_exp_avg_sq, exp_avg_sq));
    denom = (max_exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(h.eps);
  } else {
    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(h.eps);
  }
  // param.addcdiv_(exp_avg, denom, -step_size), with the step size a tensor.
  param.add_(exp_avg / denom * -step_size);
}

// A parameter's state before its first update (zeros, as PyTorch's _init_group; the step on its device).
void adam_init(std::map<std::string, Tensor>& s, const Tensor& p, bool amsgrad) {
  s["step"] = zeros({}, TensorOptions(kFloat32, p.device()));
  s["exp_avg"] = zeros_like(p);
  s["exp_avg_sq"] = zeros_like(p);
  if (amsgrad) s["max_exp_avg_sq"] = zeros_like(p);
}

// Adam's and AdamW's update of every group: the state (made the first time, outside any capture), then the update.
template <class Options>
void adam_groups(std::vector<OptimizerParamGroup>& groups, bool decoupled,
                 const std::function<std::map<std::string, Tensor>&(const Tensor&, bool)>& state_of,
                 const std::function<Tensor(const OptimizerParamGroup&, Device)>& lr_of) {
  for (OptimizerParamGroup& group : groups) {
    const AdamHyper h = hyper_of<Options>(group.options(), decoupled);
    std::map<std::string, Tensor> lrs;  // by device
    for (Tensor& param : group.params()) {
      if (!param.grad().defined()) continue;
      Tensor& lr = lrs[param.device().str()];
      if (!lr.defined()) lr = lr_of(group, param.device());
      adam_update(param, state_of(param, h.amsgrad), h, lr);
    }
  }
}

}  // namespace

Adam::Adam(const std::vector<Tensor>& params, const AdamOptions& defaults)
    : Adam(std::vector<OptimizerParamGroup>{OptimizerParamGroup(params)}, defaults) {}

Adam::Adam(const std::vector<OptimizerParamGroup>& groups, const AdamOptions& defaults)
    : Optimizer("Adam", defaults.clone()) {
  init(groups);
}

void Adam::check_options(const OptimizerOptions& options) const { check_adam<AdamOptions>(options, "Adam"); }

void Adam::update() {
  auto state = [this](const Tensor& p, bool amsgrad) -> std::map<std::string, Tensor>& {
    return state_for(p, [&](std::map<std::string, Tensor>& fresh) { adam_init(fresh, p, amsgrad); });
  };
  adam_groups<AdamOptions>(param_groups(), false, state,
                           [this](const OptimizerParamGroup& g, Device d) { return lr_tensor(g, d); });
}

AdamW::AdamW(const std::vector<Tensor>& params, const AdamWOptions& defaults)
    : AdamW(std::vector<OptimizerParamGroup>{OptimizerParamGroup(params)}, defaults) {}

AdamW::AdamW(const std::vector<OptimizerParamGroup>& groups, const AdamWOptions& defaults)
    : Optimizer("AdamW", defaults.clone()) {
  init(groups);
}

void AdamW::check_options(const OptimizerOptions& options) const {
  check_adam<AdamWOptions>(options, "AdamW");
}

void AdamW::update() {
  auto state = [this](const Tensor& p, bool amsgrad) -> std::map<std::string, Tensor>& {
    return state_for(p, [&](std::map<std::string, Tensor>& fresh) { adam_init(fresh, p, amsgrad); });
  };
  adam_groups<AdamWOptions>(param_groups(), true, state,
                            [this](const OptimizerParamGroup& g, Device d) { return lr_tensor(g, d); });
}

}  // namespace sinter::optim
