// nn::functional: the F.* spellings whose arguments differ from the ops', and the option-struct forms. Each is
// one call of an op of ops.h (normalize is a few, as PyTorch composes it).
#include "sinter/nn_functional.h"

namespace sinter::nn::functional {

Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx, Loc loc) {
  int64_t idx = -1;
  if (padding_idx) idx = *padding_idx < 0 ? *padding_idx + weight.size(0).guard_int() : *padding_idx;
  return sinter::embedding(weight, input, idx, loc);
}

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps, Loc loc) {
  return sinter::batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, loc);
}

// normalize(x) = x / clamp_min(||x||_p over dim, eps), as torch.nn.functional.normalize.
Tensor normalize(const Tensor& input, double p, int64_t dim, double eps, Loc loc) {
  Tensor denom = sinter::clamp_min(sinter::norm(input, p, DimList{dim}, true, loc), eps, loc);
  return sinter::div(input, denom.expand_as(input, loc), loc);
}

// ---- option structs ----
Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& o, Loc loc) {
  return sinter::softmax(input, o.dim(), o.dtype(), loc);
}
Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& o, Loc loc) {
  return sinter::log_softmax(input, o.dim(), o.dtype(), loc);
}
Tensor gelu(const Tensor& input, const GELUFuncOptions& o, Loc loc) {
  return sinter::gelu(input, o.approximate(), loc);
}
Tensor leaky_relu(const Tensor& input, const LeakyReLUFuncOptions& o, Loc loc) {
  return sinter::leaky_relu(input, o.negative_slope(), loc);
}
Tensor elu(const Tensor& input, const ELUFuncOptions& o, Loc loc) { return sinter::elu(input, o.alpha(), 1, 1, loc); }
Tensor softplus(const Tensor& input, const SoftplusFuncOptions& o, Loc loc) {
  return sinter::softplus(input, o.beta(), o.threshold(), loc);
}
Tensor hardtanh(const Tensor& input, const HardtanhFuncOptions& o, Loc loc) {
  return sinter::hardtanh(input, o.min_val(), o.max_val(), loc);
}
Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& o, Loc loc) {
  return sinter::layer_norm(input, o.normalized_shape(), o.weight(), o.bias(), o.eps(), loc);
}
Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& o, Loc loc) {
  return sinter::group_norm(input, o.num_groups(), o.weight(), o.bias(), o.eps(), loc);
}
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& o, Loc loc) {
  return sinter::batch_norm(input, o.weight(), o.bias(), running_mean, running_var, o.training(), o.momentum(),
                            o.eps(), loc);
}
Tensor dropout(const Tensor& input, const DropoutFuncOptions& o, Loc loc) {
  return sinter::dropout(input, o.p(), o.training(), loc);
}
Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& o, Loc loc) {
  return embedding(input, weight, o.padding_idx(), loc);
}
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& o, Loc loc) {
  return sinter::cross_entropy(input, target, o.weight(), o.reduction(), o.ignore_index(), o.label_smoothing(),
                               loc);
}
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& o, Loc loc) {
  return sinter::nll_loss(input, target, o.weight(), o.reduction(), o.ignore_index(), loc);
}
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& o, Loc loc) {
  return sinter::mse_loss(input, target, o.reduction(), loc);
}
Tensor normalize(const Tensor& input, const NormalizeFuncOptions& o, Loc loc) {
  return normalize(input, o.p(), o.dim(), o.eps(), loc);
}
Tensor pad(const Tensor& input, const PadFuncOptions& o, Loc loc) {
  // value defaults to 0, which other modes take as "not given"; any other value reaches the op (and its check).
  std::optional<double> value;
  if (o.mode() == "constant" || o.value() != 0) value = o.value();
  return sinter::pad(input, o.pad(), o.mode(), value, loc);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& o, Loc loc) {
  const SymIntList stride(o.stride()), dilation(o.dilation());
  if (o.padding_mode())
    return sinter::conv2d(input, weight, o.bias(), stride, *o.padding_mode(), dilation, o.groups(), loc);
  return sinter::conv2d(input, weight, o.bias(), stride, SymIntList(o.padding()), dilation, o.groups(), loc);
}
Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& o, Loc loc) {
  return sinter::max_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode(), loc);
}
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& o, Loc loc) {
  return sinter::avg_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad(),
                            o.divisor_override(), loc);
}
Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& o, Loc loc) {
  std::optional<SymIntList> size;
  if (o.size()) size = SymIntList(*o.size());
  return sinter::interpolate(input, size, o.scale_factor(), o.mode(), o.align_corners(), loc);
}

}  // namespace sinter::nn::functional
