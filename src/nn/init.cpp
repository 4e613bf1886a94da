// torch.nn.init: the in-place initialisers the layers use (kaiming-uniform for Linear and convolutions,
// xavier for attention's packed projection), drawing from sinter's default generator. Each writes under
// NoGradGuard, as torch.nn.init does, so parameters that require grad can be (re)initialised.
#include <cmath>

#include "sinter/autograd.h"
#include "sinter/nn.h"
#include "support/check.h"

namespace sinter::nn::init {

Tensor& uniform_(Tensor& t, double a, double b) {
  NoGradGuard no_grad;
  return t.uniform_(a, b);
}
Tensor& normal_(Tensor& t, double mean, double std) {
  NoGradGuard no_grad;
  return t.normal_(mean, std);
}
Tensor& constant_(Tensor& t, const Scalar& value) {
  NoGradGuard no_grad;
  return t.fill_(value);
}
Tensor& zeros_(Tensor& t) { return constant_(t, 0); }
Tensor& ones_(Tensor& t) { return constant_(t, 1); }

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  SINTER_CHECK(t.dim() >= 2,
               "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions (got {})",
               t.sizes().str());
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.sizes()[d].guard_int();
  return {t.sizes()[1].guard_int() * receptive, t.sizes()[0].guard_int() * receptive};
}

double calculate_gain(const std::string& nonlinearity, std::optional<double> param) {
  static const char* kLinear[] = {"linear",           "conv1d",           "conv2d",           "conv3d",
                                  "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid"};
  for (const char* n : kLinear)
    if (nonlinearity == n) return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4.0;
  SINTER_CHECK(false, "Unsupported nonlinearity \"{}\"", nonlinearity);
  return 0;
}

namespace {
// The standard deviation kaiming_* aims for: gain / sqrt(fan).
double kaiming_std(const Tensor& t, double a, const std::string& mode, const std::string& nonlinearity) {
  SINTER_CHECK(mode == "fan_in" || mode == "fan_out",
               "Mode {} not supported, please use one of fan_in, fan_out", mode);
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  int64_t fan = mode == "fan_in" ? fan_in : fan_out;
  return calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
}
}  // namespace

// Zero-element tensors are left alone (PyTorch warns and does nothing); their fan may be 0.
Tensor& kaiming_uniform_(Tensor& t, double a, const std::string& mode, const std::string& nonlinearity) {
  if (t.numel() == 0) return t;
  double bound = std::sqrt(3.0) * kaiming_std(t, a, mode, nonlinearity);
  return uniform_(t, -bound, bound);
}
Tensor& kaiming_normal_(Tensor& t, double a, const std::string& mode, const std::string& nonlinearity) {
  if (t.numel() == 0) return t;
  return normal_(t, 0, kaiming_std(t, a, mode, nonlinearity));
}
Tensor& xavier_uniform_(Tensor& t, double gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  if (t.numel() == 0) return t;
  double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return uniform_(t, -bound, bound);
}
Tensor& xavier_normal_(Tensor& t, double gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  if (t.numel() == 0) return t;
  return normal_(t, 0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)));
}

}  // namespace sinter::nn::init
