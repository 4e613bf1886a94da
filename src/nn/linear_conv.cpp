// Linear, the convolutions (Conv1d, Conv2d, ConvTranspose2d) and Embedding: PyTorch's parameter shapes,
// argument checks and initialisation (kaiming-uniform with a = sqrt(5), bias uniform in +-1/sqrt(fan_in)).
#include <fmt/format.h>

#include <cmath>

#include "nn/util.h"
#include "sinter/autograd.h"
#include "sinter/nn.h"
#include "support/check.h"

namespace sinter::nn {

namespace {
// The bias initialisation torch.nn shares between Linear and the convolutions.
void init_bias(Tensor& bias, int64_t fan_in) {
  if (!bias.defined()) return;
  double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
  init::uniform_(bias, -bound, bound);
}
}  // namespace

// ---- Linear ----
Linear::Linear(int64_t in, int64_t out, bool has_bias) : in_features(in), out_features(out) {
  check_size(in, "in_features", "Linear", true);
  check_size(out, "out_features", "Linear", true);
  weight = empty({out, in});
  register_parameter("weight", &weight);
  bias = has_bias ? empty({out}) : Tensor();
  register_parameter("bias", &bias);
  reset_parameters();
}
void Linear::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  init_bias(bias, in_features);
}
Tensor Linear::forward(const Tensor& input) { return linear(input, weight, bias, call_site()); }
std::string Linear::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", in_features, out_features,
                     py_bool(bias.defined()));
}

// ---- ConvNd ----
ConvNd::ConvNd(int nd, bool is_transposed, int64_t in, int64_t out, const DimList& kernel,
               const DimList& stride_, const ConvPadding& padding_, const DimList& dilation_, int64_t groups_,
               bool has_bias, const std::string& padding_mode_, const DimList& output_padding_)
    : in_channels(in),
      out_channels(out),
      groups(groups_),
      padding_mode(padding_mode_),
      transposed(is_transposed) {
  const char* layer = nd == 1 ? "Conv1d" : is_transposed ? "ConvTranspose2d" : "Conv2d";
  check_size(in, "in_channels", layer);
  check_size(out, "out_channels", layer);
  SINTER_CHECK(groups > 0, "{}: groups must be a positive integer, got {}", layer, groups);
  SINTER_CHECK(in % groups == 0, "{}: in_channels ({}) must be divisible by groups ({})", layer, in, groups);
  SINTER_CHECK(out % groups == 0, "{}: out_channels ({}) must be divisible by groups ({})", layer, out,
               groups);
  kernel_size = expand_arg(kernel, nd, "kernel_size", layer);
  stride = expand_arg(stride_, nd, "stride", layer);
  dilation = expand_arg(dilation_, nd, "dilation", layer);
  output_padding = expand_arg(output_padding_, nd, "output_padding", layer);
  for (int64_t k : kernel_size) check_size(k, "kernel_size", layer);
  for (int64_t s : stride) check_size(s, "stride", layer);
  for (int64_t d : dilation) check_size(d, "dilation", layer);
  SINTER_CHECK(padding_mode == "zeros" || padding_mode == "reflect" || padding_mode == "replicate" ||
                   padding_mode == "circular",
               "{}: padding_mode must be one of \"zeros\", \"reflect\", \"replicate\", \"circular\", got \"{}\"",
               layer, padding_mode);
  SINTER_CHECK(!transposed || padding_mode == "zeros", "{}: only \"zeros\" padding mode is supported", layer);
  if (!padding_.mode.empty()) {
    SINTER_CHECK(!transposed, "{}: padding must be numbers, got \"{}\"", layer, padding_.mode);
    SINTER_CHECK(padding_.mode == "same" || padding_.mode == "valid",
                 "{}: invalid padding string \"{}\", should be one of \"valid\", \"same\"", layer,
                 padding_.mode);
    if (padding_.mode == "same")
      for (int64_t s : stride)
        SINTER_CHECK(s == 1, "{}: padding=\"same\" is not supported for strided convolutions", layer);
    padding_string = padding_.mode;
    padding = std::vector<int64_t>(nd, 0);
  } else {
    padding = expand_arg(DimList(padding_.values), nd, "padding", layer);
    for (int64_t p : padding) check_size(p, "padding", layer, true);
  }
  std::vector<int64_t> wshape =
      transposed ? std::vector<int64_t>{in, out / groups} : std::vector<int64_t>{out, in / groups};
  wshape.insert(wshape.end(), kernel_size.begin(), kernel_size.end());
  weight = sinter::empty(SymIntList(wshape));
  register_parameter("weight", &weight);
  bias = has_bias ? empty({out}) : Tensor();
  register_parameter("bias", &bias);
  reset_parameters();
}

void ConvNd::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) init_bias(bias, init::calculate_fan_in_and_fan_out(weight).first);
}

Tensor ConvNd::pad_input(const Tensor& input) const {
  // F.pad takes (left, right) pairs from the last dim backwards, as PyTorch's
  // _reversed_padding_repeated_twice.
  SymIntList pads;
  for (size_t i = kernel_size.size(); i-- > 0;) {
    int64_t left = padding[i], right = padding[i];
    if (padding_string == "same") {
      int64_t total = dilation[i] * (kernel_size[i] - 1);
      left = total / 2;
      right = total - left;
    } else if (padding_string == "valid") {
      left = right = 0;
    }
    pads.push_back(left);
    pads.push_back(right);
  }
  if (padding_mode == "circular") return pad_circular(input, pads);
  return pad(input, pads, padding_mode, std::nullopt, call_site());
}

Tensor ConvNd::pad_circular(const Tensor& input, const SymIntList& pads) const {
  // Each spatial dim wraps around: the last `left` entries go in front, the first `right` ones behind (as
  // PyTorch's _pad_circular); made of narrow + cat, so capture records it like any other op.
  const Loc at = call_site();
  const int64_t spatial = static_cast<int64_t>(kernel_size.size());
  SINTER_CHECK_AT(at, input.dim() == spatial + 1 || input.dim() == spatial + 2,
                  "{}: expected a {}-D or {}-D input for circular padding, got {}-D", layer_name(), spatial + 1,
                  spatial + 2, input.dim());
  Tensor x = input;
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t dim = x.dim() - 1 - i;
    const SymInt size = x.sizes()[dim];
    const SymInt left = pads[2 * i], right = pads[2 * i + 1];
    SINTER_CHECK_AT(at, left <= size && right <= size,
                    "{}: circular padding ({}, {}) of dim {} (size {}) would wrap around more than once",
                    layer_name(), left.hint(), right.hint(), dim, size.hint());
    std::vector<Tensor> parts;
    if (left.hint() > 0) parts.push_back(x.narrow(dim, size - left, left, at));
    parts.push_back(x);
    if (right.hint() > 0) parts.push_back(x.narrow(dim, 0, right, at));
    if (parts.size() > 1) x = cat(parts, dim, at);
  }
  return x;
}

std::string ConvNd::extra_repr() const {
  std::string s = fmt::format("{}, {}, kernel_size={}, stride={}", in_channels, out_channels,
                              py_tuple(kernel_size), py_tuple(stride));
  auto all = [](const std::vector<int64_t>& v, int64_t x) {
    for (int64_t e : v)
      if (e != x) return false;
    return true;
  };
  if (!padding_string.empty())
    s += ", padding=" + padding_string;
  else if (!all(padding, 0))
    s += ", padding=" + py_tuple(padding);
  if (!all(dilation, 1)) s += ", dilation=" + py_tuple(dilation);
  if (!all(output_padding, 0)) s += ", output_padding=" + py_tuple(output_padding);
  if (groups != 1) s += fmt::format(", groups={}", groups);
  if (!bias.defined()) s += ", bias=False";
  if (padding_mode != "zeros") s += ", padding_mode=" + padding_mode;
  return s;
}

Conv1d::Conv1d(int64_t in, int64_t out, const DimList& kernel, const DimList& stride,
               const ConvPadding& padding, const DimList& dilation, int64_t groups, bool bias,
               const std::string& padding_mode)
    : ConvNd(1, false, in, out, kernel, stride, padding, dilation, groups, bias, padding_mode, 0) {}
Tensor Conv1d::forward(const Tensor& input) {
  if (explicit_padding())
    return conv1d(pad_input(input), weight, bias, stride, SymIntList{0}, dilation, groups, call_site());
  if (!padding_string.empty())
    return conv1d(input, weight, bias, stride, padding_enum(), dilation, groups, call_site());
  return conv1d(input, weight, bias, stride, padding, dilation, groups, call_site());
}

Conv2d::Conv2d(int64_t in, int64_t out, const DimList& kernel, const DimList& stride,
               const ConvPadding& padding, const DimList& dilation, int64_t groups, bool bias,
               const std::string& padding_mode)
    : ConvNd(2, false, in, out, kernel, stride, padding, dilation, groups, bias, padding_mode, 0) {}
Tensor Conv2d::forward(const Tensor& input) {
  if (explicit_padding())
    return conv2d(pad_input(input), weight, bias, stride, SymIntList{0, 0}, dilation, groups, call_site());
  if (!padding_string.empty())
    return conv2d(input, weight, bias, stride, padding_enum(), dilation, groups, call_site());
  return conv2d(input, weight, bias, stride, padding, dilation, groups, call_site());
}

ConvTranspose2d::ConvTranspose2d(int64_t in, int64_t out, const DimList& kernel, const DimList& stride,
                                 const DimList& padding, const DimList& output_padding, int64_t groups,
                                 bool bias, const DimList& dilation, const std::string& padding_mode)
    : ConvNd(2, true, in, out, kernel, stride, ConvPadding(std::vector<int64_t>(padding)), dilation, groups,
             bias, padding_mode, output_padding) {
  for (size_t i = 0; i < 2; ++i)
    SINTER_CHECK(
        this->output_padding[i] < std::max(this->stride[i], this->dilation[i]),
        "ConvTranspose2d: output padding must be smaller than either stride or dilation, got output_padding "
        "{}, stride {}, dilation {}",
        py_tuple(this->output_padding), py_tuple(this->stride), py_tuple(this->dilation));
}
Tensor ConvTranspose2d::forward(const Tensor& input) {
  return conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation,
                          call_site());
}

// ---- Embedding ----
Embedding::Embedding(int64_t num, int64_t dim, std::optional<int64_t> pad)
    : num_embeddings(num), embedding_dim(dim) {
  check_size(num, "num_embeddings", "Embedding", true);
  check_size(dim, "embedding_dim", "Embedding", true);
  if (pad) {
    SINTER_CHECK(*pad < num && *pad >= -num, "Embedding: padding_idx {} must be within num_embeddings ({})",
                 *pad, num);
    padding_idx = *pad < 0 ? *pad + num : *pad;
  }
  weight = empty({num, dim});
  register_parameter("weight", &weight);
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight.select(0, *padding_idx).zero_();
  }
}
Tensor Embedding::forward(const Tensor& indices) {
  return embedding(weight, indices, padding_idx.value_or(-1), call_site());
}
std::string Embedding::extra_repr() const {
  std::string s = fmt::format("{}, {}", num_embeddings, embedding_dim);
  if (padding_idx) s += fmt::format(", padding_idx={}", *padding_idx);
  return s;
}

}  // namespace sinter::nn
