// The decomposition table and the pass that applies it (see decompose.h). The decompositions themselves live in
// src/passes/decompositions/, one file per family; each computes in the dtype the eager kernel computes in.
#include "passes/decompose.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "graph/graph_util.h"
#include "ops/custom_ops.h"
#include "passes/decompositions/builder.h"
#include "support/check.h"
#include "symbolic/shape_env.h"

namespace sinter::passes {
namespace {

using decomp::Decomposition;

// THE table: op -> its decomposition. Each function's comment in decompositions/ states its identity.
const std::vector<std::pair<OpId, Decomposition>>& table() {
  static const std::vector<std::pair<OpId, Decomposition>> entries = {
      // activations.cpp
      {OpId::gelu, decomp::gelu},                // 0.5 * x * (1 + erf(x / sqrt 2)), or the tanh form
      {OpId::silu, decomp::silu},                // x * sigmoid(x)
      {OpId::mish, decomp::mish},                // x * tanh(log1p(exp(x)))
      {OpId::softplus, decomp::softplus},        // x * beta > threshold ? x : log1p(exp(x * beta)) / beta
      {OpId::hardsigmoid, decomp::hardsigmoid},  // clamp(x + 3, 0, 6) / 6
      {OpId::hardswish, decomp::hardswish},      // x * clamp(x + 3, 0, 6) / 6
      {OpId::leaky_relu, decomp::leaky_relu},    // x > 0 ? x : x * slope
      {OpId::elu, decomp::elu},                  // x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale
      {OpId::celu, decomp::celu},                // x > 0 ? x : expm1(x / alpha) * alpha
      {OpId::selu, decomp::selu},                // elu with SELU's alpha and scale
      {OpId::hardtanh, decomp::hardtanh},        // clamp(x, lo, hi)
      {OpId::logit, decomp::logit},              // log(x / (1 - x)) of clamp(x, eps, 1 - eps)
      // pointwise.cpp
      {OpId::addcmul, decomp::addcmul},          // a + t1 * value * t2
      {OpId::addcdiv, decomp::addcdiv},          // a + t1 * value / t2
      {OpId::lerp_Scalar, decomp::lerp},         // a + w * (e - a), from the nearer end
      {OpId::lerp_Tensor, decomp::lerp},
      {OpId::square, decomp::square},            // x * x
      {OpId::dropout, decomp::dropout},          // eval (or p = 0): clone(x)
      // reductions.cpp
      {OpId::softmax_int, decomp::softmax},          // exp(x - amax) / sum(exp(x - amax))
      {OpId::log_softmax_int, decomp::log_softmax},  // (x - amax) - log(sum(exp(x - amax)))
      {OpId::logsumexp, decomp::logsumexp},          // log(sum(exp(x - m))) + m
      // var and std decompose only where recomputation is exact (exact_table, see reductions.cpp).
      {OpId::mse_loss, decomp::mse_loss},            // reduce((x - t)^2)
      // normalization.cpp
      {OpId::layer_norm, decomp::layer_norm},  // (x - mean) * rsqrt(var + eps) * w + b
      {OpId::rms_norm, decomp::rms_norm},      // x * rsqrt(mean(x^2) + eps) * w
      {OpId::group_norm, decomp::group_norm},  // layer_norm over [N, G, -1], then per-channel w, b
      {OpId::batch_norm, decomp::batch_norm},  // eval: x * scale + shift per channel
      {OpId::batch_norm_functional, decomp::batch_norm_functional},
      // convolution.cpp
      {OpId::conv2d_weight_grad, decomp::conv2d_weight_grad},  // CPU: im2col by strided slices, then bmm
      {OpId::conv2d, decomp::conv2d},  // CPU, a 1x1 image by a 1x1 kernel: linear(x.view(N, C), w.view(O, C), b)
  };
  return entries;
}

// Where recomputed values are exact (decompose's exact_recompute): var and std.
const std::vector<std::pair<OpId, Decomposition>>& exact_table() {
  static const std::vector<std::pair<OpId, Decomposition>> entries = {
      {OpId::var_correction, decomp::var},  // sum((x - m)^2) / max(0, N - correction), m from x - x[first]
      {OpId::std_correction, decomp::std},  // sqrt of var
  };
  return entries;
}

Decomposition find_decomposition(OpId op, bool exact_recompute) {
  if (const CustomOp* custom = custom_op(op)) return custom->decomposition ? decomp::custom : nullptr;
  for (const auto& [id, fn] : table())
    if (id == op) return fn;
  if (exact_recompute)
    for (const auto& [id, fn] : exact_table())
      if (id == op) return fn;
  return nullptr;
}

bool is_size_one(const SymInt& s) { return !s.is_symbolic() && s.hint() == 1; }

// Same elements at the same places (a size-1 dim's stride addresses nothing), by what the ShapeEnv knows: after a
// guard s3 == s0 a shape rule writes s2*s3 as s0*s2.
bool same_layout(const TensorMeta& a, const TensorMeta& b, const sym::ShapeEnv* env) {
  if (a.sizes.size() != b.sizes.size() || a.strides.size() != b.strides.size() ||
      !graph_detail::known_equal(a.offset, b.offset, env))
    return false;
  for (size_t d = 0; d < a.sizes.size(); ++d) {
    if (!graph_detail::known_equal(a.sizes[d], b.sizes[d], env)) return false;
    if (!is_size_one(a.sizes[d]) && !graph_detail::known_equal(a.strides[d], b.strides[d], env)) return false;
  }
  return true;
}

bool is_dense(const TensorMeta& m, const sym::ShapeEnv* env) {
  TensorMeta dense = m;
  dense.strides = graph_detail::dense_strides(m.sizes);
  dense.offset = 0;
  return same_layout(m, dense, env);
}

// The replacement laid out as the original value: the composite op made a dense output, and a view downstream
// may depend on that. Sets `restride` when the layouts still differ (later metas must be recomputed).
Tensor conform(decomp::Builder& b, Tensor value, const Tensor& original, const sym::ShapeEnv* env, bool& restride) {
  if (same_layout(value.meta(), original.meta(), env)) return value;
  if (is_dense(original.meta(), env)) value = b.op(OpId::clone, {value, MemoryFormat::kContiguous});
  if (!same_layout(value.meta(), original.meta(), env)) restride = true;
  return value;
}

}  // namespace

namespace decomp {

std::vector<int64_t> reduction_dims(const Value& dim, int64_t ndim) {
  std::vector<int64_t> listed;
  if (dim.is_int()) listed.push_back(dim.to_int());
  if (dim.is_int_list()) listed = dim.to_int_list();
  std::vector<bool> mask(static_cast<size_t>(ndim), listed.empty());
  // A 0-dim tensor's dims 0 and -1 wrap as if its rank were 1 (as the shape rules do); they reduce nothing.
  const int64_t n = std::max<int64_t>(ndim, 1);
  for (int64_t d : listed) {
    int64_t w = d < 0 ? d + n : d;
    SINTER_INTERNAL_ASSERT(w >= 0 && w < n, "dim {} out of range for rank {}", d, ndim);
    if (ndim > 0) mask[w] = true;
  }
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < ndim; ++d)
    if (mask[d]) dims.push_back(d);
  return dims;
}

}  // namespace decomp

std::vector<OpId> decomposed_ops() {
  std::vector<OpId> ops;
  for (const auto& entry : table()) ops.push_back(entry.first);
  return ops;
}

bool decompose(Graph& g, bool exact_recompute) {
  std::optional<sym::ShapeEnvScope> scope;
  if (g.shape_env()) scope.emplace(g.shape_env().get());
  Rewriter rw(g);
  std::vector<const Node*> nodes;
  for (const Node& n : g.nodes())
    if (n.is_op() && find_decomposition(n.op, exact_recompute)) nodes.push_back(&n);
  bool changed = false, restride = false;
  for (const Node* n : nodes) {
    decomp::Builder b(rw, *n);
    std::optional<std::vector<Tensor>> outs = find_decomposition(n->op, exact_recompute)(b, *n);
    if (!outs) continue;
    SINTER_INTERNAL_ASSERT(outs->size() == n->outputs.size(), "decomposition of {} made {} values for {} outputs",
                           n->op_name(), outs->size(), n->outputs.size());
    for (size_t k = 0; k < outs->size(); ++k) {
      if (!(*outs)[k].defined()) continue;
      rw.replace_all_uses(n->outputs[k], conform(b, (*outs)[k], n->outputs[k], g.shape_env().get(), restride));
    }
    rw.erase(*n);
    changed = true;
  }
  if (restride) rw.recompute_metas();
  return changed;
}

}  // namespace sinter::passes
