// torch.optim.Adam's and AdamW's single-tensor update (_single_tensor_adam), op for op: the step counted per
// parameter, bias corrections from it, amsgrad's running maximum.
#include <cmath>

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

void adam_update(Tensor& param, std::map<std::string, Tensor>& state, const AdamHyper& h) {
  Tensor grad = param.grad();
  if (h.maximize) grad = -grad;
  if (state.empty()) {
    state["step"] = scalar_tensor(int64_t{0}, kInt64);
    state["exp_avg"] = zeros_like(param);
    state["exp_avg_sq"] = zeros_like(param);
    if (h.amsgrad) state["max_exp_avg_sq"] = zeros_like(param);
  }
  Tensor& step_t = state.at("step");
  Tensor& exp_avg = state.at("exp_avg");
  Tensor& exp_avg_sq = state.at("exp_avg_sq");
  step_t.add_(1);

  if (h.weight_decay != 0) {
    if (h.decoupled)
      param.mul_(1 - h.lr * h.weight_decay);
    else
      grad = grad.add(param, h.weight_decay);
  }
  exp_avg.copy_(exp_avg.lerp(grad, 1 - h.beta1));
  exp_avg_sq.mul_(h.beta2);
  exp_avg_sq.copy_(exp_avg_sq.addcmul(grad, grad, 1 - h.beta2));

  const double step = static_cast<double>(step_t.item<int64_t>());
  const double bias_correction1 = 1 - std::pow(h.beta1, step);
  const double bias_correction2 = 1 - std::pow(h.beta2, step);
  const double step_size = h.lr / bias_correction1;
  const double bias_correction2_sqrt = std::pow(bias_correction2, 0.5);

  Tensor denom;
  if (h.amsgrad) {
    Tensor& max_exp_avg_sq = state.try_emplace("max_exp_avg_sq", zeros_like(param)).first->second;
    max_exp_avg_sq.copy_(maximum(max_exp_avg_sq, exp_avg_sq));
    denom = (max_exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(h.eps);
  } else {
    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(h.eps);
  }
  param.copy_(param.addcdiv(exp_avg, denom, -step_size));
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
  for (OptimizerParamGroup& group : param_groups()) {
    const AdamHyper h = hyper_of<AdamOptions>(group.options(), false);
    for (Tensor& param : group.params())
      if (param.grad().defined()) adam_update(param, state_of(param), h);
  }
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
  for (OptimizerParamGroup& group : param_groups()) {
    const AdamHyper h = hyper_of<AdamWOptions>(group.options(), true);
    for (Tensor& param : group.params())
      if (param.grad().defined()) adam_update(param, state_of(param), h);
  }
}

}  // namespace sinter::optim
