// The public neural-network functions of ops.h (normalisation, matmul family, convolution, pooling,
// upsampling, attention, losses, embedding, dropout): each packs its arguments in its row's schema order and
// dispatches. interpolate and cross_entropy are written over rows, as in torch.nn.functional.
#include <cmath>

#include "ops/dispatch.h"
#include "sinter/ops.h"
#include "support/check.h"

namespace sinter {

namespace {

// A `Tensor?` argument: an undefined tensor means None.
Value opt(const Tensor& t) { return t.defined() ? Value(t) : Value(); }

// floor(size * scale), staying symbolic when the scale is a whole number (the common 2x upsample).
SymInt scaled_size(const SymInt& size, double scale) {
  if (scale == std::floor(scale) && scale < 1e9) return size * static_cast<int64_t>(scale);
  return static_cast<int64_t>(std::floor(static_cast<double>(size.guard_int()) * scale));
}

}  // namespace

// ---- normalisation ----
Tensor layer_norm(const Tensor& input, const SymIntList& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps, Loc loc) {
  return dispatch1(OpId::layer_norm, {input, normalized_shape, opt(weight), opt(bias), eps}, loc);
}
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps, Loc loc) {
  return dispatch1(OpId::group_norm, {input, num_groups, opt(weight), opt(bias), eps}, loc);
}
Tensor rms_norm(const Tensor& input, const SymIntList& normalized_shape, const Tensor& weight,
                std::optional<double> eps, Loc loc) {
  return dispatch1(OpId::rms_norm, {input, normalized_shape, opt(weight), eps}, loc);
}
Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum, double eps, Loc loc) {
  return dispatch1(
      OpId::batch_norm,
      {input, opt(weight), opt(bias), opt(running_mean), opt(running_var), training, momentum, eps}, loc);
}

// ---- linear algebra ----
Tensor mm(const Tensor& self, const Tensor& mat2, Loc loc) { return dispatch1(OpId::mm, {self, mat2}, loc); }
Tensor bmm(const Tensor& self, const Tensor& mat2, Loc loc) {
  return dispatch1(OpId::bmm, {self, mat2}, loc);
}
Tensor matmul(const Tensor& self, const Tensor& other, Loc loc) {
  return dispatch1(OpId::matmul, {self, other}, loc);
}
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
             const Scalar& alpha, Loc loc) {
  return dispatch1(OpId::addmm, {self, mat1, mat2, beta, alpha}, loc);
}
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias, Loc loc) {
  return dispatch1(OpId::linear, {input, weight, opt(bias)}, loc);
}
Tensor einsum(const std::string& equation, const std::vector<Tensor>& tensors, Loc loc) {
  return dispatch1(OpId::einsum, {equation, tensors}, loc);
}

// ---- convolution ----
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, const SymIntList& stride,
              const SymIntList& padding, const SymIntList& dilation, int64_t groups, Loc loc) {
  return dispatch1(OpId::conv1d, {input, weight, opt(bias), stride, padding, dilation, groups}, loc);
}
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, const SymIntList& stride,
              Padding padding, const SymIntList& dilation, int64_t groups, Loc loc) {
  return dispatch1(OpId::conv1d_padding,
                   {input, weight, opt(bias), stride, padding == kSame ? "same" : "valid", dilation, groups},
                   loc);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const SymIntList& stride,
              const SymIntList& padding, const SymIntList& dilation, int64_t groups, Loc loc) {
  return dispatch1(OpId::conv2d, {input, weight, opt(bias), stride, padding, dilation, groups}, loc);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const SymIntList& stride,
              Padding padding, const SymIntList& dilation, int64_t groups, Loc loc) {
  return dispatch1(OpId::conv2d_padding,
                   {input, weight, opt(bias), stride, padding == kSame ? "same" : "valid", dilation, groups},
                   loc);
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const SymIntList& stride, const SymIntList& padding, const SymIntList& output_padding,
                        int64_t groups, const SymIntList& dilation, Loc loc) {
  return dispatch1(OpId::conv_transpose2d,
                   {input, weight, opt(bias), stride, padding, output_padding, groups, dilation}, loc);
}
Tensor conv2d_weight_grad(const Tensor& input, const SymIntList& weight_size, const Tensor& grad_output,
                          const SymIntList& stride, const SymIntList& padding, const SymIntList& dilation,
                          int64_t groups, Loc loc) {
  return dispatch1(OpId::conv2d_weight_grad, {input, weight_size, grad_output, stride, padding, dilation, groups},
                   loc);
}

// ---- pooling and upsampling ----
Tensor max_pool2d(const Tensor& self, const DimList& kernel_size, const DimList& stride,
                  const DimList& padding, const DimList& dilation, bool ceil_mode, Loc loc) {
  return dispatch1(OpId::max_pool2d, {self, kernel_size, stride, padding, dilation, ceil_mode}, loc);
}
Tensor avg_pool2d(const Tensor& self, const DimList& kernel_size, const DimList& stride,
                  const DimList& padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override, Loc loc) {
  return dispatch1(OpId::avg_pool2d,
                   {self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override}, loc);
}
Tensor adaptive_avg_pool2d(const Tensor& self, const SymIntList& output_size, Loc loc) {
  return dispatch1(OpId::adaptive_avg_pool2d, {self, output_size}, loc);
}

// interpolate(x, size | scale_factor, mode) -> upsample_nearest2d / upsample_bilinear2d with the output size
// floor(in * scale) per spatial dim. As in PyTorch, a given scale_factor is also passed on to the kernel.
Tensor interpolate(const Tensor& input, std::optional<SymIntList> size,
                   std::optional<std::vector<double>> scale_factor, const std::string& mode,
                   std::optional<bool> align_corners, Loc loc) {
  bool bilinear = mode == "bilinear";
  SINTER_CHECK_AT(loc, bilinear || mode == "nearest",
                  "interpolate(): mode '{}' is not supported (expected 'nearest' or 'bilinear')", mode);
  SINTER_CHECK_AT(loc, input.dim() == 4,
                  "interpolate(): mode '{}' expects a 4-D input (N, C, H, W), got shape {}", mode,
                  input.sizes().str());
  SINTER_CHECK_AT(loc, size || scale_factor, "interpolate(): either size or scale_factor should be defined");
  SINTER_CHECK_AT(loc, !(size && scale_factor),
                  "interpolate(): only one of size or scale_factor should be defined");
  SINTER_CHECK_AT(
      loc, bilinear || !align_corners,
      "interpolate(): align_corners can only be set with the interpolating mode 'bilinear', not '{}'", mode);
  SymIntList out_size;
  std::optional<double> scale_h, scale_w;
  if (size) {
    SINTER_CHECK_AT(loc, size->size() == 1 || size->size() == 2,
                    "interpolate(): size must have 1 or 2 entries for a 4-D input, got {}", size->str());
    out_size = size->size() == 1 ? SymIntList(2, (*size)[0]) : *size;
  } else {
    const std::vector<double>& s = *scale_factor;
    SINTER_CHECK_AT(loc, s.size() == 1 || s.size() == 2,
                    "interpolate(): scale_factor must have 1 or 2 entries for a 4-D input, got {}", s.size());
    scale_h = s[0];
    scale_w = s.size() == 2 ? s[1] : s[0];
    SINTER_CHECK_AT(loc, *scale_h > 0 && *scale_w > 0 && std::isfinite(*scale_h) && std::isfinite(*scale_w),
                    "interpolate(): scale_factor must be positive and finite, got ({}, {})", *scale_h,
                    *scale_w);
    out_size = {scaled_size(input.sizes()[2], *scale_h), scaled_size(input.sizes()[3], *scale_w)};
  }
  if (bilinear)
    return dispatch1(OpId::upsample_bilinear2d,
                     {input, out_size, align_corners.value_or(false), scale_h, scale_w}, loc);
  return dispatch1(OpId::upsample_nearest2d, {input, out_size, scale_h, scale_w}, loc);
}

// ---- attention ----
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, bool enable_gqa, Loc loc) {
  return dispatch1(OpId::scaled_dot_product_attention,
                   {query, key, value, opt(attn_mask), dropout_p, is_causal, scale, enable_gqa}, loc);
}

std::vector<Tensor> scaled_dot_product_attention_backward(const Tensor& grad, const Tensor& query, const Tensor& key,
                                                          const Tensor& value, bool is_causal, double scale,
                                                          Loc loc) {
  return dispatch(OpId::scaled_dot_product_attention_backward, {grad, query, key, value, is_causal, scale}, loc);
}

// ---- losses ----
// cross_entropy(...) -> the cross_entropy_loss row (log_softmax + nll_loss, with label smoothing).
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                     const std::string& reduction, int64_t ignore_index, double label_smoothing, Loc loc) {
  return dispatch1(OpId::cross_entropy_loss,
                   {input, target, opt(weight), reduction, ignore_index, label_smoothing}, loc);
}
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, const std::string& reduction,
                int64_t ignore_index, Loc loc) {
  return dispatch1(OpId::nll_loss, {input, target, opt(weight), reduction, ignore_index}, loc);
}
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction, Loc loc) {
  return dispatch1(OpId::mse_loss, {input, target, reduction}, loc);
}

// ---- embedding, dropout ----
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx, Loc loc) {
  return dispatch1(OpId::embedding, {weight, indices, padding_idx}, loc);
}
Tensor dropout(const Tensor& input, double p, bool train, Loc loc) {
  return dispatch1(OpId::dropout, {input, p, train}, loc);
}

}  // namespace sinter
