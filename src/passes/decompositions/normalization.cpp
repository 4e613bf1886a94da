// Decompositions of the normalisations into mean.dim reductions and pointwise ops: layer_norm, rms_norm,
// group_norm, and batch_norm in eval form (running statistics). Statistics are taken in float32 for
// float16/bfloat16 inputs and the result is rounded once, as the eager kernels do. Batch norm in training
// (batch statistics and running-stat updates) is left to the lowering.
#include <limits>

#include "graph/graph_util.h"
#include "passes/decompositions/builder.h"

namespace sinter::passes::decomp {
namespace {

using Result = std::optional<std::vector<Tensor>>;

std::optional<Tensor> optional_tensor(const Value& v) {
  if (v.is_none() || !v.tensor().defined()) return std::nullopt;
  return v.tensor();
}

// (x - mean) * rsqrt(var + eps) over dims (kept), x in its compute dtype.
Tensor normalize(Builder& b, const Tensor& x, const std::vector<int64_t>& dims, double eps) {
  Tensor centered = b.sub(x, b.mean(x, dims, true));
  Tensor var = b.mean(b.mul(centered, centered), dims, true);
  return b.mul(centered, b.unary(OpId::rsqrt, b.add(var, eps)));
}

std::vector<int64_t> last_dims(int64_t ndim, int64_t count) {
  std::vector<int64_t> dims;
  for (int64_t d = ndim - count; d < ndim; ++d) dims.push_back(d);
  return dims;
}

// As torch.finfo(dtype).eps: rms_norm's default eps.
double machine_epsilon(DType dtype) {
  switch (dtype) {
    case kFloat64: return std::numeric_limits<double>::epsilon();
    case kFloat16: return 0.0009765625;  // 2^-10
    case kBFloat16: return 0.0078125;    // 2^-7
    default: return std::numeric_limits<float>::epsilon();
  }
}

// The eval-mode output: x * scale + shift per channel, scale = w / sqrt(running_var + eps),
// shift = b - running_mean * scale.
Tensor batch_norm_eval(Builder& b, const Node& n) {
  const Tensor& x = n.args[0].tensor();
  DType cd = compute_dtype(x.dtype());
  double eps = n.args[7].to_double();
  Tensor mean = b.to(n.args[3].tensor(), cd), var = b.to(n.args[4].tensor(), cd);
  Tensor scale = b.unary(OpId::rsqrt, b.add(var, eps));
  if (auto w = optional_tensor(n.args[1])) scale = b.mul(b.to(*w, cd), scale);
  Tensor shift = b.unary(OpId::neg, b.mul(mean, scale));
  if (auto bias = optional_tensor(n.args[2])) shift = b.add(b.to(*bias, cd), shift);
  int64_t trailing = x.dim() - 2;
  Tensor y = b.mul(b.to(x, cd), b.unsqueeze_trailing(scale, trailing));
  y = b.add(y, b.unsqueeze_trailing(shift, trailing));
  return b.to(y, x.dtype());
}

bool eval_form(const Node& n) {
  return !n.args[5].to_bool() && optional_tensor(n.args[3]) && optional_tensor(n.args[4]);
}

}  // namespace

// layer_norm(x, shape, w, b, eps) -> (x - mean(x)) * rsqrt(var(x) + eps) * w + b over the trailing `shape`
Result layer_norm(Builder& b, const Node& n) {
  const Tensor& x = n.args[0].tensor();
  DType cd = compute_dtype(x.dtype());
  int64_t count = static_cast<int64_t>(n.args[1].int_list().size());
  Tensor y = normalize(b, b.to(x, cd), last_dims(x.dim(), count), n.args[4].to_double());
  if (auto w = optional_tensor(n.args[2])) y = b.mul(y, b.to(*w, cd));
  if (auto bias = optional_tensor(n.args[3])) y = b.add(y, b.to(*bias, cd));
  return std::vector<Tensor>{b.to(y, n.meta().dtype)};
}

// rms_norm(x, shape, w, eps) -> round_to_input_dtype(x * rsqrt(mean(x^2) + eps)) * w; eps None is the input
// dtype's machine epsilon
Result rms_norm(Builder& b, const Node& n) {
  const Tensor& x = n.args[0].tensor();
  DType out = n.meta().dtype, cd = compute_dtype(out);
  int64_t count = static_cast<int64_t>(n.args[1].int_list().size());
  double eps = n.args[3].is_none() ? machine_epsilon(x.dtype()) : n.args[3].to_double();
  Tensor xc = b.to(x, cd);
  Tensor ms = b.mean(b.mul(xc, xc), last_dims(x.dim(), count), true);
  Tensor y = b.mul(xc, b.unary(OpId::rsqrt, b.add(ms, eps)));
  if (auto w = optional_tensor(n.args[2])) y = b.mul(b.to(b.to(y, x.dtype()), cd), b.to(*w, cd));
  return std::vector<Tensor>{b.to(y, out)};
}

// group_norm(x, G, w, b, eps) on x [N, C, *] -> normalize over each group's [C/G, *] of x viewed as [N, G, -1],
// then * w + b per channel
Result group_norm(Builder& b, const Node& n) {
  const Tensor& x = n.args[0].tensor();
  DType cd = compute_dtype(x.dtype());
  int64_t groups = n.args[1].to_int();
  Tensor xc = b.to(x, cd);
  if (!graph_detail::same_symints(xc.strides(), graph_detail::dense_strides(xc.sizes())))
    xc = b.op(OpId::clone, {xc, MemoryFormat::kContiguous});
  Tensor grouped = b.op(OpId::view, {xc, SymIntList{x.sizes()[0], SymInt(groups), SymInt(-1)}});
  Tensor y = b.op(OpId::view, {normalize(b, grouped, {2}, n.args[4].to_double()), x.sizes()});
  int64_t trailing = x.dim() - 2;
  if (auto w = optional_tensor(n.args[2])) y = b.mul(y, b.unsqueeze_trailing(b.to(*w, cd), trailing));
  if (auto bias = optional_tensor(n.args[3])) y = b.add(y, b.unsqueeze_trailing(b.to(*bias, cd), trailing));
  return std::vector<Tensor>{b.to(y, n.meta().dtype)};
}

// batch_norm(x, w, b, running_mean, running_var, training=false, momentum, eps) -> x * scale + shift per
// channel (see batch_norm_eval); training keeps the op
Result batch_norm(Builder& b, const Node& n) {
  if (!eval_form(n)) return std::nullopt;
  return std::vector<Tensor>{batch_norm_eval(b, n)};
}

// batch_norm_functional in eval form -> (the eval output, copies of the unchanged running stats)
Result batch_norm_functional(Builder& b, const Node& n) {
  if (!eval_form(n)) return std::nullopt;
  Tensor y = batch_norm_eval(b, n);
  std::vector<Tensor> outs{y};
  for (int k : {1, 2}) outs.push_back(b.used(n.outputs[k]) ? b.op(OpId::clone, {n.args[k + 2].tensor()}) : Tensor());
  return outs;
}

}  // namespace sinter::passes::decomp
