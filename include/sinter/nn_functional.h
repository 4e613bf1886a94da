// sinter::nn::functional — torch.nn.functional / LibTorch's torch::nn::functional: the ops of ops.h under the
// names and argument orders of F.*, plus LibTorch's option structs (`F::softmax(x, F::SoftmaxFuncOptions(1))`).
// Use it as LibTorch code does: `namespace F = sinter::nn::functional;`. Nothing here computes on its own:
// each function forwards to an op, or is composed of ops as PyTorch composes it (normalize, the losses and
// similarities below), so compiled code captures the ops it is made of.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sinter/ops.h"

namespace sinter::nn::functional {

// ---- the ops whose F.* spelling is torch.*'s: the same functions ----
using sinter::celu;
using sinter::elu;
using sinter::gelu;
using sinter::hardsigmoid;
using sinter::hardswish;
using sinter::hardtanh;
using sinter::leaky_relu;
using sinter::mish;
using sinter::relu;
using sinter::relu6;
using sinter::selu;
using sinter::sigmoid;
using sinter::silu;
using sinter::softplus;
using sinter::tanh;
using sinter::threshold;

using sinter::log_softmax;
using sinter::softmax;

using sinter::group_norm;
using sinter::layer_norm;
using sinter::rms_norm;

using sinter::linear;
using sinter::conv1d;
using sinter::conv2d;
using sinter::conv_transpose2d;
using sinter::adaptive_avg_pool2d;
using sinter::avg_pool2d;
using sinter::max_pool2d;
using sinter::interpolate;
using sinter::pad;
using sinter::scaled_dot_product_attention;

using sinter::cross_entropy;
using sinter::dropout;
using sinter::mse_loss;
using sinter::nll_loss;

// ---- the ones whose argument order differs from torch.*'s ----
// F.embedding(input, weight): indices first (torch::embedding takes the weight first). padding_idx only marks
// a row for gradients; negative counts from the end.
Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx = {},
                 Loc loc = Loc::current());
// F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps).
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false, double momentum = 0.1,
                  double eps = 1e-5, Loc loc = Loc::current());
// input / max(||input||_p over dim, eps).
Tensor normalize(const Tensor& input, double p = 2.0, int64_t dim = 1, double eps = 1e-12,
                 Loc loc = Loc::current());

// ---- composed of ops, as in torch.nn.functional ----
// reduction: "mean", "sum" or "none"; any other value is an error naming the function.
// one_hot(indices, num_classes): int64 [*, num_classes]; num_classes -1 reads max(indices) + 1 (a graph break
// when compiled, as it depends on data).
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1, Loc loc = Loc::current());
Tensor logsigmoid(const Tensor& input, Loc loc = Loc::current());  // -softplus(-x), stable for large |x|
Tensor softsign(const Tensor& input, Loc loc = Loc::current());    // x / (1 + |x|)
Tensor tanhshrink(const Tensor& input, Loc loc = Loc::current());  // x - tanh(x)
// glu(x, dim) = a * sigmoid(b) for the two halves a, b of dim (its size must be even).
Tensor glu(const Tensor& input, int64_t dim = -1, Loc loc = Loc::current());
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
               Loc loc = Loc::current());
// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta 0: l1_loss).
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                      double beta = 1.0, Loc loc = Loc::current());
// 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta).
Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                  double delta = 1.0, Loc loc = Loc::current());
// -w (y log x + (1 - y) log(1 - x)), each log clamped at -100 as PyTorch does; input must be in [0, 1].
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            const std::string& reduction = "mean", Loc loc = Loc::current());
// The same on logits, computed stably: (1 - y) x + (1 + (pw - 1) y) softplus(-x).
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                        const std::string& reduction = "mean", const Tensor& pos_weight = {},
                                        Loc loc = Loc::current());
// target * (log target - input) (input holds log-probabilities; log_target: target does too). "batchmean"
// divides the sum by the first dim's size.
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
              bool log_target = false, Loc loc = Loc::current());
// sum(x1 * x2) / max(||x1|| * ||x2||, eps) over dim (operands broadcast).
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8,
                         Loc loc = Loc::current());
// ||x1 - x2 + eps||_p over the last dim.
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2.0, double eps = 1e-6,
                         bool keepdim = false, Loc loc = Loc::current());

// ---- LibTorch's option structs: `Options(required).name(value)...`; `options.name()` reads one ----
// One option: a chainable setter and a getter, as LibTorch's TORCH_ARG. `= value` after it sets the default.
#define SINTER_ARG(T, name)                \
 public:                                   \
  auto& name(T value) {                    \
    name##_ = std::move(value);            \
    return *this;                          \
  }                                        \
  const T& name() const { return name##_; } \
                                           \
 private:                                  \
  T name##_

struct SoftmaxFuncOptions {
  explicit SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}
  SINTER_ARG(int64_t, dim);
  SINTER_ARG(std::optional<DType>, dtype);
};
struct LogSoftmaxFuncOptions {
  explicit LogSoftmaxFuncOptions(int64_t dim) : dim_(dim) {}
  SINTER_ARG(int64_t, dim);
  SINTER_ARG(std::optional<DType>, dtype);
};
struct GELUFuncOptions {
  SINTER_ARG(std::string, approximate) = "none";
};
struct LeakyReLUFuncOptions {
  SINTER_ARG(double, negative_slope) = 0.01;
};
struct ELUFuncOptions {
  SINTER_ARG(double, alpha) = 1.0;
};
struct SoftplusFuncOptions {
  SINTER_ARG(double, beta) = 1.0;
  SINTER_ARG(double, threshold) = 20.0;
};
struct HardtanhFuncOptions {
  SINTER_ARG(double, min_val) = -1.0;
  SINTER_ARG(double, max_val) = 1.0;
};
struct LayerNormFuncOptions {
  explicit LayerNormFuncOptions(std::vector<int64_t> normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {}
  SINTER_ARG(std::vector<int64_t>, normalized_shape);
  SINTER_ARG(Tensor, weight);
  SINTER_ARG(Tensor, bias);
  SINTER_ARG(double, eps) = 1e-5;
};
struct GroupNormFuncOptions {
  explicit GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}
  SINTER_ARG(int64_t, num_groups);
  SINTER_ARG(Tensor, weight);
  SINTER_ARG(Tensor, bias);
  SINTER_ARG(double, eps) = 1e-5;
};
struct BatchNormFuncOptions {
  SINTER_ARG(Tensor, weight);
  SINTER_ARG(Tensor, bias);
  SINTER_ARG(bool, training) = false;
  SINTER_ARG(double, momentum) = 0.1;
  SINTER_ARG(double, eps) = 1e-5;
};
struct DropoutFuncOptions {
  SINTER_ARG(double, p) = 0.5;
  SINTER_ARG(bool, training) = true;
};
struct EmbeddingFuncOptions {
  SINTER_ARG(std::optional<int64_t>, padding_idx);
};
// ---- the losses' options; the loss modules of sinter/nn_loss.h take the same structs, as LibTorch's do ----
// reduction: "mean", "sum" or "none" (LibTorch's torch::kMean, kSum, kNone). Where LibTorch's options take the
// reduction as their one constructor argument (L1LossFuncOptions(torch::kSum)), these take it as a string.
struct CrossEntropyFuncOptions {
  SINTER_ARG(Tensor, weight);
  SINTER_ARG(int64_t, ignore_index) = -100;
  SINTER_ARG(std::string, reduction) = "mean";
  SINTER_ARG(double, label_smoothing) = 0.0;
};
struct NLLLossFuncOptions {
  SINTER_ARG(Tensor, weight);
  SINTER_ARG(int64_t, ignore_index) = -100;
  SINTER_ARG(std::string, reduction) = "mean";
};
struct MSELossFuncOptions {
  MSELossFuncOptions() = default;
  explicit MSELossFuncOptions(std::string reduction) : reduction_(std::move(reduction)) {}
  SINTER_ARG(std::string, reduction) = "mean";
};
struct L1LossFuncOptions {
  L1LossFuncOptions() = default;
  explicit L1LossFuncOptions(std::string reduction) : reduction_(std::move(reduction)) {}
  SINTER_ARG(std::string, reduction) = "mean";
};
// beta unset: 1.0, as in LibTorch.
struct SmoothL1LossFuncOptions {
  SmoothL1LossFuncOptions() = default;
  explicit SmoothL1LossFuncOptions(std::string reduction) : reduction_(std::move(reduction)) {}
  SINTER_ARG(std::string, reduction) = "mean";
  SINTER_ARG(std::optional<double>, beta);
};
struct HuberLossFuncOptions {
  HuberLossFuncOptions() = default;
  explicit HuberLossFuncOptions(std::string reduction) : reduction_(std::move(reduction)) {}
  SINTER_ARG(std::string, reduction) = "mean";
  SINTER_ARG(double, delta) = 1.0;
};
// reduction: also "batchmean".
struct KLDivFuncOptions {
  KLDivFuncOptions() = default;
  explicit KLDivFuncOptions(std::string reduction) : reduction_(std::move(reduction)) {}
  SINTER_ARG(std::string, reduction) = "mean";
  SINTER_ARG(bool, log_target) = false;
};
struct BinaryCrossEntropyFuncOptions {
  SINTER_ARG(Tensor, weight);
  SINTER_ARG(std::string, reduction) = "mean";
};
struct BinaryCrossEntropyWithLogitsFuncOptions {
  SINTER_ARG(Tensor, weight);
  SINTER_ARG(std::string, reduction) = "mean";
  SINTER_ARG(Tensor, pos_weight);
};
struct NormalizeFuncOptions {
  SINTER_ARG(double, p) = 2.0;
  SINTER_ARG(int64_t, dim) = 1;
  SINTER_ARG(double, eps) = 1e-12;
};
// mode: "constant", "reflect" or "replicate"; value fills for "constant".
struct PadFuncOptions {
  explicit PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}
  SINTER_ARG(std::vector<int64_t>, pad);
  SINTER_ARG(std::string, mode) = "constant";
  SINTER_ARG(double, value) = 0.0;
};
// padding: numbers, or kSame / kValid (as torch::kSame).
struct Conv2dFuncOptions {
  SINTER_ARG(Tensor, bias);
  SINTER_ARG(DimList, stride) = 1;
  SINTER_ARG(DimList, dilation) = 1;
  SINTER_ARG(int64_t, groups) = 1;

 public:
  auto& padding(DimList value) {
    padding_ = std::move(value);
    padding_mode_.reset();
    return *this;
  }
  auto& padding(sinter::Padding mode) {
    padding_mode_ = mode;
    return *this;
  }
  const DimList& padding() const { return padding_; }
  const std::optional<sinter::Padding>& padding_mode() const { return padding_mode_; }

 private:
  DimList padding_ = 0;
  std::optional<sinter::Padding> padding_mode_;
};
// stride empty: the kernel size, as PyTorch. A single number stands for both spatial dims.
struct MaxPool2dFuncOptions {
  explicit MaxPool2dFuncOptions(DimList kernel_size) : kernel_size_(std::move(kernel_size)) {}
  SINTER_ARG(DimList, kernel_size);
  SINTER_ARG(DimList, stride);
  SINTER_ARG(DimList, padding) = 0;
  SINTER_ARG(DimList, dilation) = 1;
  SINTER_ARG(bool, ceil_mode) = false;
};
struct AvgPool2dFuncOptions {
  explicit AvgPool2dFuncOptions(DimList kernel_size) : kernel_size_(std::move(kernel_size)) {}
  SINTER_ARG(DimList, kernel_size);
  SINTER_ARG(DimList, stride);
  SINTER_ARG(DimList, padding) = 0;
  SINTER_ARG(bool, ceil_mode) = false;
  SINTER_ARG(bool, count_include_pad) = true;
  SINTER_ARG(std::optional<int64_t>, divisor_override);
};
// Give size or scale_factor. mode: "nearest" or "bilinear".
struct InterpolateFuncOptions {
  SINTER_ARG(std::optional<std::vector<int64_t>>, size);
  SINTER_ARG(std::optional<std::vector<double>>, scale_factor);
  SINTER_ARG(std::string, mode) = "nearest";
  SINTER_ARG(std::optional<bool>, align_corners);
};
#undef SINTER_ARG

Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& options, Loc loc = Loc::current());
Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& options, Loc loc = Loc::current());
Tensor gelu(const Tensor& input, const GELUFuncOptions& options, Loc loc = Loc::current());
Tensor leaky_relu(const Tensor& input, const LeakyReLUFuncOptions& options, Loc loc = Loc::current());
Tensor elu(const Tensor& input, const ELUFuncOptions& options, Loc loc = Loc::current());
Tensor softplus(const Tensor& input, const SoftplusFuncOptions& options, Loc loc = Loc::current());
Tensor hardtanh(const Tensor& input, const HardtanhFuncOptions& options, Loc loc = Loc::current());
Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options, Loc loc = Loc::current());
Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& options, Loc loc = Loc::current());
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options, Loc loc = Loc::current());
Tensor dropout(const Tensor& input, const DropoutFuncOptions& options, Loc loc = Loc::current());
Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& options,
                 Loc loc = Loc::current());
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options,
                     Loc loc = Loc::current());
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options,
                Loc loc = Loc::current());
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options,
                Loc loc = Loc::current());
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options,
               Loc loc = Loc::current());
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options,
                      Loc loc = Loc::current());
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options,
                  Loc loc = Loc::current());
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options, Loc loc = Loc::current());
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& options,
                            Loc loc = Loc::current());
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options,
                                        Loc loc = Loc::current());
Tensor normalize(const Tensor& input, const NormalizeFuncOptions& options, Loc loc = Loc::current());
Tensor pad(const Tensor& input, const PadFuncOptions& options, Loc loc = Loc::current());
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options,
              Loc loc = Loc::current());
Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options, Loc loc = Loc::current());
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options, Loc loc = Loc::current());
Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options, Loc loc = Loc::current());

}  // namespace sinter::nn::functional
