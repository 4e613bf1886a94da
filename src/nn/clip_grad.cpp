// torch.nn.utils.clip_grad_norm_ and clip_grad_value_: the total norm is the norm of the per-gradient norms
// (stacked on the first gradient's device), and every gradient is multiplied by min(1, max_norm / (norm +
// 1e-6)), also when that is 1, as PyTorch does to avoid a host read of the norm.
#include <cmath>

#include "sinter/autograd.h"
#include "sinter/ops.h"
#include "sinter/optim.h"
#include "support/check.h"

namespace sinter::nn::utils {

namespace {
std::vector<Tensor> defined_grads(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters) {
    Tensor g = p.defined() ? p.grad() : Tensor();
    if (g.defined()) grads.push_back(g);
  }
  return grads;
}
}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  NoGradGuard no_grad;
  std::vector<Tensor> grads = defined_grads(parameters);
  if (grads.empty()) return scalar_tensor(0.0, kFloat32);
  const Device first_device = grads[0].device();
  std::vector<Tensor> norms;
  for (const Tensor& g : grads) norms.push_back(sinter::norm(g, norm_type).to(first_device));
  Tensor total_norm = sinter::norm(sinter::stack(norms), norm_type);
  if (error_if_nonfinite) {
    const double value = total_norm.to(kFloat64).item<double>();
    SINTER_CHECK(
        std::isfinite(value),
        "clip_grad_norm_: the total norm of order {} for gradients from `parameters` is non-finite ({}), so "
        "it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, "
        "set error_if_nonfinite=false",
        norm_type, value);
  }
  // Python's max_norm / tensor is tensor.reciprocal() * max_norm.
  const Tensor clip_coef = (total_norm + 1e-6).reciprocal() * max_norm;
  const Tensor clip_coef_clamped = clip_coef.clamp_max(1.0);
  for (Tensor& g : grads) g.mul_(clip_coef_clamped.to(g.device()));
  return total_norm;
}

Tensor clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type, bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard no_grad;
  for (Tensor& g : defined_grads(parameters)) g.clamp_(-clip_value, clip_value);
}

void clip_grad_value_(const Tensor& parameter, double clip_value) {
  clip_grad_value_(std::vector<Tensor>{parameter}, clip_value);
}

}  // namespace sinter::nn::utils
