// Decompositions of the normalisations into mean.dim reductions and pointwise ops: layer_norm, rms_norm,
// group_norm, and batch_norm in eval form (running statistics). Statistics are taken in float32 for
// float16/bfloat16 inputs and the result is rounded once, as the eager kernels do. Batch norm in training takes
// the batch statistics and updates the running ones where batch_norm_functional returns them.
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

namespace {

// Training form: the batch statistics over every dim but the channels (biased variance) normalise x; with
// `updates`, the new running stats (1 - momentum) * running + momentum * batch, with the unbiased variance, as the
// eager kernel. A symbolic count per channel would put a symbolic factor into the update: that form is left alone.
std::optional<std::vector<Tensor>> batch_norm_train(Builder& b, const Node& n, bool updates) {
  const Tensor& x = n.args[0].tensor();
  const SymInt count = x.numel() / sym_max(x.sizes()[1], SymInt(1));
  if (updates && count.is_symbolic()) return std::nullopt;
  for (int k : {1, 2})  // an empty stand-in for absent running stats that something reads: leave it to the kernel
    if (updates && !optional_tensor(n.args[k + 2]) && b.used(n.outputs[k])) return std::nullopt;
  DType cd = compute_dtype(x.dtype());
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  Tensor xc = b.to(x, cd);
  Tensor mean = b.mean(xc, dims, true);
  Tensor centered = b.sub(xc, mean);
  Tensor var = b.mean(b.mul(centered, centered), dims, true);
  Tensor y = b.mul(centered, b.unary(OpId::rsqrt, b.add(var, n.args[7].to_double())));
  const int64_t trailing = x.dim() - 2;
  if (auto w = optional_tensor(n.args[1])) y = b.mul(y, b.unsqueeze_trailing(b.to(*w, cd), trailing));
  if (auto bias = optional_tensor(n.args[2])) y = b.add(y, b.unsqueeze_trailing(b.to(*bias, cd), trailing));
  std::vector<Tensor> outs{b.to(y, x.dtype())};
  if (!updates) return outs;
  const double m = n.args[6].to_double();
  const SymIntList per_channel{x.sizes()[1]};
  const double unbias = count.hint() > 1 ? static_cast<double>(count.hint()) / static_cast<double>(count.hint() - 1) : 1;
  for (int k : {1, 2}) {
    auto running = optional_tensor(n.args[k + 2]);
    if (!running || !b.used(n.outputs[k])) {
      outs.push_back(Tensor());
      continue;
    }
    Tensor batch = b.op(OpId::view, {k == 1 ? mean : var, per_channel});
    if (k == 2) batch = b.mul(batch, unbias);
    Tensor updated = b.add(b.mul(b.to(*running, cd), 1 - m), b.mul(batch, m));
    outs.push_back(b.to(updated, running->dtype()));
  }
  return outs;
}

}  // namespace

// batch_norm(x, w, b, running_mean, running_var, training, momentum, eps) -> x * scale + shift per channel (see
// batch_norm_eval); in training without running stats (nothing to update in place), the batch statistics'
// form. Training with running stats keeps the op (functionalization makes it batch_norm_functional).
Result batch_norm(Builder& b, const Node& n) {
  if (n.args[5].to_bool()) {
    if (optional_tensor(n.args[3]) || optional_tensor(n.args[4])) return std::nullopt;
    return batch_norm_train(b, n, false);
  }
  if (!eval_form(n)) return std::nullopt;
  return std::vector<Tensor>{batch_norm_eval(b, n)};
}

// batch_norm_functional: in eval form the eval output and copies of the unchanged running stats; in training the
// batch statistics' output and the updated running stats.
Result batch_norm_functional(Builder& b, const Node& n) {
  if (n.args[5].to_bool()) return batch_norm_train(b, n, true);
  if (!eval_form(n)) return std::nullopt;
  Tensor y = batch_norm_eval(b, n);
  std::vector<Tensor> outs{y};
  for (int k : {1, 2}) outs.push_back(b.used(n.outputs[k]) ? b.op(OpId::clone, {n.args[k + 2].tensor()}) : Tensor());
  return outs;
}

}  // namespace sinter::passes::decomp
