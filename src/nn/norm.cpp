// The normalisation layers: BatchNorm1d/2d (running statistics as buffers, updated in training through the
// batch_norm op), LayerNorm, GroupNorm and RMSNorm. Affine weights start at one, biases at zero, as torch.nn.
#include <fmt/format.h>

#include "nn/util.h"
#include "sinter/nn.h"
#include "support/check.h"

namespace sinter::nn {

namespace {
std::string py_optional(const std::optional<double>& v) { return v ? py_float(*v) : "None"; }
}  // namespace

// ---- BatchNorm ----
BatchNormBase::BatchNormBase(int64_t num, double eps_, std::optional<double> momentum_, bool affine_,
                             bool track)
    : num_features(num), eps(eps_), momentum(momentum_), affine(affine_), track_running_stats(track) {
  check_size(num, "num_features", "BatchNorm");
  weight = affine ? ones({num}) : Tensor();
  register_parameter("weight", &weight);
  bias = affine ? zeros({num}) : Tensor();
  register_parameter("bias", &bias);
  running_mean = track ? zeros({num}) : Tensor();
  register_buffer("running_mean", &running_mean);
  running_var = track ? ones({num}) : Tensor();
  register_buffer("running_var", &running_var);
  num_batches_tracked = track ? zeros({}, TensorOptions(kInt64)) : Tensor();
  register_buffer("num_batches_tracked", &num_batches_tracked);
}

Tensor BatchNormBase::forward(const Tensor& input) {
  check_input_dim(input);
  double factor = momentum.value_or(0.0);
  if (is_training() && track_running_stats && num_batches_tracked.defined()) {
    num_batches_tracked.add_(1);
    // momentum none: a cumulative moving average, weighting every batch so far equally.
    if (!momentum) factor = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
  }
  // Batch statistics normalise in training, and in eval when there are no running ones to use.
  bool use_batch_stats = is_training() || (!running_mean.defined() && !running_var.defined());
  bool pass_running = !is_training() || track_running_stats;
  return batch_norm(input, weight, bias, pass_running ? running_mean : Tensor(),
                    pass_running ? running_var : Tensor(), use_batch_stats, factor, eps, call_site());
}

std::string BatchNormBase::extra_repr() const {
  return fmt::format("{}, eps={}, momentum={}, affine={}, track_running_stats={}", num_features,
                     py_float(eps), py_optional(momentum), py_bool(affine), py_bool(track_running_stats));
}

BatchNorm1d::BatchNorm1d(int64_t num, double eps, std::optional<double> momentum, bool affine, bool track)
    : BatchNormBase(num, eps, momentum, affine, track) {}
void BatchNorm1d::check_input_dim(const Tensor& input) const {
  SINTER_CHECK_AT(call_site(), input.dim() == 2 || input.dim() == 3,
                  "BatchNorm1d: expected 2D or 3D input (got {}D input)", input.dim());
}

BatchNorm2d::BatchNorm2d(int64_t num, double eps, std::optional<double> momentum, bool affine, bool track)
    : BatchNormBase(num, eps, momentum, affine, track) {}
void BatchNorm2d::check_input_dim(const Tensor& input) const {
  SINTER_CHECK_AT(call_site(), input.dim() == 4, "BatchNorm2d: expected 4D input (got {}D input)",
                  input.dim());
}

// ---- LayerNorm ----
LayerNorm::LayerNorm(int64_t shape, double eps, bool affine, bool bias)
    : LayerNorm(std::vector<int64_t>{shape}, eps, affine, bias) {}
LayerNorm::LayerNorm(std::vector<int64_t> shape, double eps_, bool affine, bool has_bias)
    : normalized_shape(std::move(shape)), eps(eps_), elementwise_affine(affine) {
  for (int64_t s : normalized_shape) check_size(s, "normalized_shape", "LayerNorm", true);
  weight = affine ? ones(SymIntList(normalized_shape)) : Tensor();
  register_parameter("weight", &weight);
  bias = affine && has_bias ? zeros(SymIntList(normalized_shape)) : Tensor();
  register_parameter("bias", &bias);
}
Tensor LayerNorm::forward(const Tensor& input) {
  return layer_norm(input, normalized_shape, weight, bias, eps, call_site());
}
std::string LayerNorm::extra_repr() const {
  return fmt::format("{}, eps={}, elementwise_affine={}", py_tuple(normalized_shape), py_float(eps),
                     py_bool(elementwise_affine));
}

// ---- GroupNorm ----
GroupNorm::GroupNorm(int64_t groups, int64_t channels, double eps_, bool affine_)
    : num_groups(groups), num_channels(channels), eps(eps_), affine(affine_) {
  check_size(groups, "num_groups", "GroupNorm");
  check_size(channels, "num_channels", "GroupNorm", true);
  SINTER_CHECK(channels % groups == 0, "GroupNorm: num_channels ({}) must be divisible by num_groups ({})",
               channels, groups);
  weight = affine ? ones({channels}) : Tensor();
  register_parameter("weight", &weight);
  bias = affine ? zeros({channels}) : Tensor();
  register_parameter("bias", &bias);
}
Tensor GroupNorm::forward(const Tensor& input) {
  return group_norm(input, num_groups, weight, bias, eps, call_site());
}
std::string GroupNorm::extra_repr() const {
  return fmt::format("{}, {}, eps={}, affine={}", num_groups, num_channels, py_float(eps), py_bool(affine));
}

// ---- RMSNorm ----
RMSNorm::RMSNorm(int64_t shape, std::optional<double> eps, bool affine)
    : RMSNorm(std::vector<int64_t>{shape}, eps, affine) {}
RMSNorm::RMSNorm(std::vector<int64_t> shape, std::optional<double> eps_, bool affine)
    : normalized_shape(std::move(shape)), eps(eps_), elementwise_affine(affine) {
  for (int64_t s : normalized_shape) check_size(s, "normalized_shape", "RMSNorm", true);
  weight = affine ? ones(SymIntList(normalized_shape)) : Tensor();
  register_parameter("weight", &weight);
}
Tensor RMSNorm::forward(const Tensor& input) {
  return rms_norm(input, normalized_shape, weight, eps, call_site());
}
std::string RMSNorm::extra_repr() const {
  return fmt::format("{}, eps={}, elementwise_affine={}", py_tuple(normalized_shape), py_optional(eps),
                     py_bool(elementwise_affine));
}

}  // namespace sinter::nn
