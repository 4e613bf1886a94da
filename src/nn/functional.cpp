// nn::functional: the F.* spellings whose arguments differ from the ops', the functions PyTorch composes of ops
// (normalize, the losses, the similarities), and the option-struct forms.
#include "sinter/nn_functional.h"

#include "support/check.h"

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

namespace {

Tensor reduce(const Tensor& loss, const std::string& reduction, const char* fn, Loc loc) {
  if (reduction == "mean") return sinter::mean(loss, {}, loc);
  if (reduction == "sum") return sinter::sum(loss, {}, loc);
  SINTER_CHECK_AT(loc, reduction == "none", "{}: reduction must be 'mean', 'sum' or 'none', got '{}'", fn, reduction);
  return loss;
}

void check_same_sizes(const Tensor& input, const Tensor& target, const char* fn, Loc loc) {
  SINTER_CHECK_AT(loc, input.sizes() == target.sizes(),
                  "{}: target size {} must be the same as input size {}", fn, target.sizes().str(),
                  input.sizes().str());
}

}  // namespace

Tensor one_hot(const Tensor& indices, int64_t num_classes, Loc loc) {
  SINTER_CHECK_AT(loc, indices.dtype() == kInt64, "one_hot: indices must be int64, got {}", dtype_name(indices.dtype()));
  if (num_classes == -1) {
    SINTER_CHECK_AT(loc, indices.numel().guard_int() > 0, "one_hot: cannot infer num_classes from an empty tensor");
    num_classes = sinter::max(indices, loc).item<int64_t>() + 1;
  }
  SINTER_CHECK_AT(loc, num_classes >= 1 || (num_classes == 0 && indices.numel().guard_int() == 0),
                  "one_hot: num_classes must be positive (or -1), got {}", num_classes);
  if (indices.numel().guard_int() > 0) {
    SINTER_CHECK_AT(loc, sinter::min(indices, loc).item<int64_t>() >= 0, "one_hot: class values must be non-negative");
    SINTER_CHECK_AT(loc, sinter::max(indices, loc).item<int64_t>() < num_classes,
                    "one_hot: class values must be smaller than num_classes ({})", num_classes);
  }
  Tensor classes = sinter::arange(num_classes, TensorOptions(kInt64), loc);
  return sinter::eq(sinter::unsqueeze(indices, -1, loc), classes, loc).to(kInt64);
}

Tensor logsigmoid(const Tensor& input, Loc loc) {
  return sinter::neg(sinter::softplus(sinter::neg(input, loc), 1, 20, loc), loc);
}

Tensor softsign(const Tensor& input, Loc loc) {
  return sinter::div(input, sinter::add(sinter::abs(input, loc), 1, 1, loc), loc);
}

Tensor tanhshrink(const Tensor& input, Loc loc) { return sinter::sub(input, sinter::tanh(input, loc), 1, loc); }

Tensor glu(const Tensor& input, int64_t dim, Loc loc) {
  SINTER_CHECK_AT(loc, input.dim() > 0, "glu: a 0-dim tensor has no dim to halve");
  int64_t d = dim < 0 ? dim + input.dim() : dim;
  SINTER_CHECK_AT(loc, d >= 0 && d < input.dim(), "glu: dim {} out of range for a {}-dim tensor", dim, input.dim());
  int64_t n = input.size(d).guard_int();
  SINTER_CHECK_AT(loc, n % 2 == 0, "glu: halving dimension must be even, but dimension {} is size {}", d, n);
  std::vector<Tensor> halves = sinter::chunk(input, 2, d, loc);
  return sinter::mul(halves[0], sinter::sigmoid(halves[1], loc), loc);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction, Loc loc) {
  check_same_sizes(input, target, "l1_loss", loc);
  return reduce(sinter::abs(sinter::sub(input, target, 1, loc), loc), reduction, "l1_loss", loc);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction, double beta,
                      Loc loc) {
  check_same_sizes(input, target, "smooth_l1_loss", loc);
  SINTER_CHECK_AT(loc, beta >= 0, "smooth_l1_loss: beta must be non-negative, got {}", beta);
  if (beta == 0) return l1_loss(input, target, reduction, loc);
  Tensor d = sinter::abs(sinter::sub(input, target, 1, loc), loc);
  Tensor quad = sinter::div(sinter::mul(sinter::mul(d, d, loc), 0.5, loc), beta, loc);
  Tensor loss = sinter::where(sinter::lt(d, beta, loc), quad, sinter::sub(d, 0.5 * beta, 1, loc), loc);
  return reduce(loss, reduction, "smooth_l1_loss", loc);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction, double delta, Loc loc) {
  check_same_sizes(input, target, "huber_loss", loc);
  SINTER_CHECK_AT(loc, delta > 0, "huber_loss: delta must be positive, got {}", delta);
  Tensor d = sinter::abs(sinter::sub(input, target, 1, loc), loc);
  Tensor quad = sinter::mul(sinter::mul(d, d, loc), 0.5, loc);
  Tensor lin = sinter::mul(sinter::sub(d, 0.5 * delta, 1, loc), delta, loc);
  return reduce(sinter::where(sinter::lt(d, delta, loc), quad, lin, loc), reduction, "huber_loss", loc);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            const std::string& reduction, Loc loc) {
  check_same_sizes(input, target, "binary_cross_entropy", loc);
  // Checked on real data only: a traced input (a proxy, no data) would turn the check into a graph break.
  if (!input.is_meta() && input.numel().guard_int() > 0) {
    Tensor inside = sinter::logical_and(sinter::ge(input, 0, loc), sinter::le(input, 1, loc), loc);
    SINTER_CHECK_AT(loc, sinter::all(inside, loc).item<bool>(),
                    "binary_cross_entropy: all elements of input should be between 0 and 1");
  }
  Tensor log_x = sinter::clamp_min(sinter::log(input, loc), -100, loc);
  Tensor log_1mx = sinter::clamp_min(sinter::log(sinter::rsub(input, 1, 1, loc), loc), -100, loc);
  // -(y log x + (1 - y) log(1 - x)) = (y - 1) log(1 - x) - y log x
  Tensor loss = sinter::sub(sinter::mul(sinter::sub(target, 1, 1, loc), log_1mx, loc), sinter::mul(target, log_x, loc),
                            1, loc);
  if (weight.defined()) loss = sinter::mul(loss, weight, loc);
  return reduce(loss, reduction, "binary_cross_entropy", loc);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        const std::string& reduction, const Tensor& pos_weight, Loc loc) {
  check_same_sizes(input, target, "binary_cross_entropy_with_logits", loc);
  // log(1 + exp(-x)), stable for either sign of x
  Tensor sp = sinter::softplus(sinter::neg(input, loc), 1, 20, loc);
  Tensor scale = pos_weight.defined()
                     ? sinter::add(sinter::mul(sinter::sub(pos_weight, 1, 1, loc), target, loc), 1, 1, loc)
                     : Tensor();
  Tensor loss = sinter::add(sinter::mul(sinter::rsub(target, 1, 1, loc), input, loc),
                            scale.defined() ? sinter::mul(scale, sp, loc) : sp, 1, loc);
  if (weight.defined()) loss = sinter::mul(loss, weight, loc);
  return reduce(loss, reduction, "binary_cross_entropy_with_logits", loc);
}

Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction, bool log_target, Loc loc) {
  Tensor loss = log_target ? sinter::mul(sinter::exp(target, loc), sinter::sub(target, input, 1, loc), loc)
                           : sinter::sub(sinter::where(sinter::eq(target, 0, loc), 0,
                                                       sinter::mul(target, sinter::log(target, loc), loc), loc),
                                         sinter::mul(target, input, loc), 1, loc);
  if (reduction == "batchmean") {
    Tensor s = sinter::sum(loss, {}, loc);
    return input.dim() == 0 ? s : sinter::div(s, input.size(0).guard_int(), loc);
  }
  return reduce(loss, reduction, "kl_div", loc);
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps, Loc loc) {
  Tensor dot = sinter::sum(sinter::mul(x1, x2, loc), DimList{dim}, false, {}, loc);
  Tensor n1 = sinter::norm(x1, 2, DimList{dim}, false, loc), n2 = sinter::norm(x2, 2, DimList{dim}, false, loc);
  return sinter::div(dot, sinter::clamp_min(sinter::mul(n1, n2, loc), eps, loc), loc);
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim, Loc loc) {
  Tensor d = sinter::add(sinter::sub(x1, x2, 1, loc), eps, 1, loc);
  return sinter::norm(d, p, DimList{-1}, keepdim, loc);
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
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& o, Loc loc) {
  return l1_loss(input, target, o.reduction(), loc);
}
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& o, Loc loc) {
  return smooth_l1_loss(input, target, o.reduction(), o.beta().value_or(1.0), loc);
}
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& o, Loc loc) {
  return huber_loss(input, target, o.reduction(), o.delta(), loc);
}
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& o, Loc loc) {
  return kl_div(input, target, o.reduction(), o.log_target(), loc);
}
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& o,
                            Loc loc) {
  return binary_cross_entropy(input, target, o.weight(), o.reduction(), loc);
}
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& o, Loc loc) {
  return binary_cross_entropy_with_logits(input, target, o.weight(), o.reduction(), o.pos_weight(), loc);
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
