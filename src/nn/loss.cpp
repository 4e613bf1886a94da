// The loss modules: each checks its reduction when made, registers its weights as buffers, and forwards to
// the functional that computes the loss (with its options, or with the buffers where it has weights).
#include "nn/util.h"
#include "sinter/nn.h"
#include "support/check.h"

namespace sinter::nn {

namespace {
void check_reduction(const std::string& reduction, const char* loss) {
  SINTER_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none",
               "{}: reduction must be 'mean', 'sum' or 'none', got '{}'", loss, reduction);
}
}  // namespace

Tensor Loss::operator()(const Tensor& input, const Tensor& target, Loc loc) {
  CallSiteScope scope(loc);
  return forward(input, target);
}

L1Loss::L1Loss(L1LossOptions options_) : options(std::move(options_)) {
  check_reduction(options.reduction(), "L1Loss");
}
Tensor L1Loss::forward(const Tensor& input, const Tensor& target) {
  return functional::l1_loss(input, target, options, call_site());
}

MSELoss::MSELoss(MSELossOptions options_) : options(std::move(options_)) {
  check_reduction(options.reduction(), "MSELoss");
}
Tensor MSELoss::forward(const Tensor& input, const Tensor& target) {
  return functional::mse_loss(input, target, options, call_site());
}

CrossEntropyLoss::CrossEntropyLoss(CrossEntropyLossOptions options_)
    : options(std::move(options_)), weight(options.weight()) {
  check_reduction(options.reduction(), "CrossEntropyLoss");
  register_buffer("weight", &weight);
}
Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  return functional::cross_entropy(input, target, weight, options.reduction(), options.ignore_index(),
                                   options.label_smoothing(), call_site());
}

NLLLoss::NLLLoss(NLLLossOptions options_) : options(std::move(options_)), weight(options.weight()) {
  check_reduction(options.reduction(), "NLLLoss");
  register_buffer("weight", &weight);
}
Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) {
  return functional::nll_loss(input, target, weight, options.reduction(), options.ignore_index(), call_site());
}

BCELoss::BCELoss(BCELossOptions options_) : options(std::move(options_)), weight(options.weight()) {
  check_reduction(options.reduction(), "BCELoss");
  register_buffer("weight", &weight);
}
Tensor BCELoss::forward(const Tensor& input, const Tensor& target) {
  return functional::binary_cross_entropy(input, target, weight, options.reduction(), call_site());
}

BCEWithLogitsLoss::BCEWithLogitsLoss(BCEWithLogitsLossOptions options_)
    : options(std::move(options_)), weight(options.weight()), pos_weight(options.pos_weight()) {
  check_reduction(options.reduction(), "BCEWithLogitsLoss");
  register_buffer("weight", &weight);
  register_buffer("pos_weight", &pos_weight);
}
Tensor BCEWithLogitsLoss::forward(const Tensor& input, const Tensor& target) {
  return functional::binary_cross_entropy_with_logits(input, target, weight, options.reduction(), pos_weight,
                                                      call_site());
}

SmoothL1Loss::SmoothL1Loss(SmoothL1LossOptions options_) : options(std::move(options_)) {
  check_reduction(options.reduction(), "SmoothL1Loss");
}
Tensor SmoothL1Loss::forward(const Tensor& input, const Tensor& target) {
  return functional::smooth_l1_loss(input, target, options, call_site());
}

HuberLoss::HuberLoss(HuberLossOptions options_) : options(std::move(options_)) {
  check_reduction(options.reduction(), "HuberLoss");
}
Tensor HuberLoss::forward(const Tensor& input, const Tensor& target) {
  return functional::huber_loss(input, target, options, call_site());
}

KLDivLoss::KLDivLoss(KLDivLossOptions options_) : options(std::move(options_)) {
  const std::string& r = options.reduction();
  SINTER_CHECK(r == "mean" || r == "batchmean" || r == "sum" || r == "none",
               "KLDivLoss: reduction must be 'mean', 'batchmean', 'sum' or 'none', got '{}'", r);
}
Tensor KLDivLoss::forward(const Tensor& input, const Tensor& target) {
  return functional::kl_div(input, target, options, call_site());
}

}  // namespace sinter::nn
