// Simplification (see simplify.h). Each rule finds a value that an op's result equals; `forward` then moves the
// result's users to it when that keeps the program's meaning (layouts that views depend on, and which outputs
// alias inputs), and DCE removes the dead op. The rules run in rounds until one changes nothing.
#include "passes/simplify.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "graph/graph_util.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"
#include "support/check.h"
#include "support/log.h"
#include "symbolic/shape_env.h"

namespace sinter::passes {
namespace {

using graph_detail::same_symint;
using graph_detail::same_symints;

// Ops on constants are folded into a new constant only when the result is at most this many elements: folding
// big tensors would trade a fused loop for memory held by the compiled graph.
constexpr int64_t kMaxFoldedElements = 4096;
constexpr int kMaxRounds = 32;

bool is_concrete(const SymInt& s, int64_t value) { return !s.is_symbolic() && s.hint() == value; }

bool same_layout(const TensorMeta& a, const TensorMeta& b) {
  if (!same_symints(a.sizes, b.sizes) || a.strides.size() != b.strides.size() || !same_symint(a.offset, b.offset))
    return false;
  for (size_t d = 0; d < a.sizes.size(); ++d)
    if (!is_concrete(a.sizes[d], 1) && !same_symint(a.strides[d], b.strides[d])) return false;
  return true;
}

bool is_view(const Node& n) { return n.is_op() && op_def(n.op).schema.is_view(); }

// The node at the start of a chain of views ending in `t` (an input, constant or non-view op).
const Node& root_of(const Graph& g, const Tensor& t) {
  const Node* n = &g.producer(t);
  while (is_view(*n) && n->args[0].is_tensor()) n = &g.producer(n->args[0].tensor());
  return *n;
}

// Whether user `u` of `t` depends on t's layout, not only on its values: a view or an output keeps it, and
// as_strided_scatter addresses its self through self's own strides (the dense copy that functionalization made
// of a strided input must stay a dense copy).
bool reads_layout(const Node& u, const Tensor& t) {
  if (u.kind == NodeKind::kOutput || is_view(u)) return true;
  return u.is_op(OpId::as_strided_scatter) && u.args[0].is_tensor() && u.args[0].tensor().is_same(t);
}

bool is_output(const Graph& g, const Tensor& t) {
  for (const Node* u : g.users(t))
    if (u->kind == NodeKind::kOutput) return true;
  return false;
}

// A scalar-valued constant (one element) as a double.
std::optional<double> constant_scalar(const Graph& g, const Value& v) {
  if (!v.is_tensor() || !v.tensor().defined()) return std::nullopt;
  const Node& p = g.producer(v.tensor());
  if (p.kind != NodeKind::kConstant || p.constant.numel().hint() != 1) return std::nullopt;
  // Through run_eager, not Tensor methods: a pass may run while a capture hook is installed.
  Tensor d = run_eager(OpId::to_copy, {p.constant, kFloat64, Value(), MemoryFormat::kContiguous}, Loc::current())[0];
  return *d.data_ptr<double>();
}

std::optional<double> scalar_value(const Graph& g, const Value& v) {
  if (v.is_scalar() || v.is_double() || v.is_int()) return v.to_double();
  return constant_scalar(g, v);
}

// ---- Identities: each returns the value the node's output equals, or an undefined tensor. ----

using Identity = Tensor (*)(const Graph& g, const Node& n);

Tensor self_if(const Node& n, bool cond) { return cond ? n.args[0].tensor() : Tensor(); }

// x * 1 -> x   (mul.Tensor: a one-element constant 1)
Tensor mul_one(const Graph& g, const Node& n) { return self_if(n, scalar_value(g, n.args[1]) == 1.0); }
// x + 0 -> x, x - 0 -> x   (any alpha)
Tensor add_zero(const Graph& g, const Node& n) { return self_if(n, scalar_value(g, n.args[1]) == 0.0); }
// x / 1 -> x
Tensor div_one(const Graph& g, const Node& n) { return self_if(n, scalar_value(g, n.args[1]) == 1.0); }
// _to_copy(x) to x's own dtype and device -> x   (a memory format leaves it to the layout check)
Tensor same_dtype_copy(const Graph&, const Node& n) {
  const Tensor& x = n.args[0].tensor();
  bool same_dtype = n.args[1].is_none() || n.args[1].dtype() == x.dtype();
  bool same_device = n.args[2].is_none() || n.args[2].device() == x.device();
  return self_if(n, same_dtype && same_device);
}
// Whether every value of integer or bool dtype `from` converts to `via` and back unchanged. Floating sources are
// left out: a float round trip that holds every number still changes a signalling NaN's bits (float32 -> float64
// -> float32 quiets it), and a narrowing one (float32 -> float16 -> float32) rounds.
bool exact_round_trip(DType from, DType via) {
  if (from == via || from == kBool) return true;
  auto int_bits = [](DType d) {
    switch (d) {
      case kInt8: return 8;
      case kUInt8: return 8;
      case kInt32: return 32;
      case kInt64: return 64;
      default: return 0;
    }
  };
  int bits = int_bits(from);
  if (bits == 0) return false;
  switch (via) {
    case kInt32: return bits <= 8;     // int8, uint8
    case kInt64: return true;
    case kFloat16: return bits <= 8;   // 11-bit significand
    case kBFloat16: return bits <= 8;  // 8-bit significand: |v| <= 256
    case kFloat32: return bits <= 8;   // 24-bit significand (int32 would round)
    case kFloat64: return bits <= 32;  // 53-bit significand
    default: return false;             // int8/uint8/bool cannot hold each other's values
  }
}
// _to_copy(_to_copy(x, via), x.dtype) -> x   when the round trip is exact for every value of x (int32 through
// float64); a chain that loses anything (float32 through float16 rounds, int64 through float64 rounds large
// values, float through an integer truncates) is kept, since the program asked for both conversions.
Tensor exact_round_trip_copy(const Graph& g, const Node& n) {
  const Node& inner = g.producer(n.args[0].tensor());
  if (!inner.is_op(OpId::to_copy) || n.args[1].is_none() || !n.args[2].is_none() || !inner.args[2].is_none())
    return Tensor();
  const Tensor& x = inner.args[0].tensor();
  DType via = inner.meta().dtype;
  return n.args[1].dtype() == x.dtype() && exact_round_trip(x.dtype(), via) ? x : Tensor();
}
// clone(x) -> x   (only where that changes no aliasing and no layout a view relies on: see forward())
Tensor clone_of(const Graph&, const Node& n) { return n.args[0].tensor(); }
// view(x, x.sizes) -> x
Tensor same_size_view(const Graph&, const Node& n) {
  return self_if(n, same_symints(n.args[1].int_list(), n.args[0].tensor().sizes()));
}
// expand(x, x.sizes) -> x
Tensor same_size_expand(const Graph&, const Node& n) {
  return self_if(n, same_symints(n.args[1].int_list(), n.args[0].tensor().sizes()));
}
// permute(x, [0, 1, ..., n-1]) -> x
Tensor identity_permute(const Graph&, const Node& n) {
  std::vector<int64_t> dims = n.args[1].to_int_list();
  int64_t rank = n.args[0].tensor().dim();
  for (size_t i = 0; i < dims.size(); ++i)
    if ((dims[i] < 0 ? dims[i] + rank : dims[i]) != static_cast<int64_t>(i)) return Tensor();
  return n.args[0].tensor();
}
// transpose(x, d, d) -> x
Tensor identity_transpose(const Graph&, const Node& n) {
  int64_t rank = std::max<int64_t>(n.args[0].tensor().dim(), 1);
  int64_t a = n.args[1].to_int(), b = n.args[2].to_int();
  return self_if(n, (a < 0 ? a + rank : a) == (b < 0 ? b + rank : b));
}
// slice(x, dim, 0, end >= size, 1) -> x
Tensor full_slice(const Graph&, const Node& n) {
  const Tensor& x = n.args[0].tensor();
  if (x.dim() == 0) return Tensor();
  int64_t dim = n.args[1].to_int();
  const SymInt& size = x.sizes()[dim < 0 ? dim + x.dim() : dim];
  const Value &start = n.args[2], &end = n.args[3];
  bool from_start = start.is_none() || is_concrete(start.sym_int(), 0);
  bool to_end = end.is_none() || same_symint(end.sym_int(), size) ||
                (!end.sym_int().is_symbolic() && !size.is_symbolic() && end.sym_int().hint() >= size.hint());
  return self_if(n, from_start && to_end && is_concrete(n.args[4].sym_int(), 1));
}
// neg(neg(x)) -> x
Tensor double_negation(const Graph& g, const Node& n) {
  const Node& inner = g.producer(n.args[0].tensor());
  return inner.is_op(OpId::neg) ? inner.args[0].tensor() : Tensor();
}

// The rule list: op -> identity.
const std::vector<std::pair<OpId, Identity>>& identities() {
  static const std::vector<std::pair<OpId, Identity>> rules = {
      {OpId::mul_Scalar, mul_one},          {OpId::mul_Tensor, mul_one},
      {OpId::add_Scalar, add_zero},         {OpId::add_Tensor, add_zero},
      {OpId::sub_Scalar, add_zero},         {OpId::sub_Tensor, add_zero},
      {OpId::div_Scalar, div_one},          {OpId::div_Tensor, div_one},
      {OpId::to_copy, same_dtype_copy},     {OpId::to_copy, exact_round_trip_copy},
      {OpId::clone, clone_of},
      {OpId::view, same_size_view},         {OpId::expand, same_size_expand},
      {OpId::permute, identity_permute},    {OpId::transpose_int, identity_transpose},
      {OpId::slice_Tensor, full_slice},     {OpId::neg, double_negation},
  };
  return rules;
}

class Simplifier {
 public:
  explicit Simplifier(Graph& g) : g_(g), rw_(g) {}

  bool run() {
    std::vector<TensorMeta> before;
    for (const Tensor& out : g_.outputs()) before.push_back(out.meta());
    bool changed = false;
    for (int round = 0; round < kMaxRounds; ++round) {
      bool c = apply_identities();
      c = fold_constants() || c;
      c = eliminate_common_subexpressions() || c;
      c = rw_.eliminate_dead_code() > 0 || c;
      if (restride_) rw_.recompute_metas();
      restride_ = false;
      if (!c) return restore_output_layouts(before) || changed;
      changed = true;
    }
    SINTER_LOG(kPasses, "simplify: no fixed point after {} rounds", kMaxRounds);
    return restore_output_layouts(before) || changed;
  }

 private:
  // The dims of a dense layout from the largest stride to the smallest, or none when the layout has gaps or
  // overlaps (size-1 dims, whose strides address nothing, keep their place among equal strides).
  static std::optional<std::vector<int64_t>> dense_order(const TensorMeta& m) {
    std::vector<int64_t> perm(m.sizes.size());
    for (size_t d = 0; d < perm.size(); ++d) perm[d] = static_cast<int64_t>(d);
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t a, int64_t b) { return m.strides[a].hint() > m.strides[b].hint(); });
    int64_t expected = 1;
    for (size_t i = perm.size(); i-- > 0;) {
      int64_t size = m.sizes[perm[i]].hint();
      if (size != 1 && m.strides[perm[i]].hint() != expected) return std::nullopt;
      expected *= std::max<int64_t>(size, 1);
    }
    return perm;
  }

  // A removed copy lets a layout flow further than eager's did (clone(x, contiguous) of a channels-last x, then
  // a conv and a relu: the relu came out contiguous, now channels-last). Graph outputs keep eager's layout (the
  // caller may view them): an output whose dense layout changed gets a copy back to it, lowered as the output's
  // store, so free there. A contiguous or channels-last layout is a clone's memory format; any other dense
  // layout (a transpose) is a contiguous clone of the output permuted to that dim order, permuted back.
  bool restore_output_layouts(const std::vector<TensorMeta>& before) {
    std::vector<Tensor> outs = g_.outputs();
    bool changed = false;
    for (size_t i = 0; i < outs.size() && i < before.size(); ++i) {
      if (same_layout(outs[i].meta(), before[i])) continue;
      Tensor old = empty_from_meta(before[i], /*with_data=*/false);
      if (old.is_contiguous() || old.is_contiguous(MemoryFormat::kChannelsLast)) {
        MemoryFormat format = old.is_contiguous() ? MemoryFormat::kContiguous : MemoryFormat::kChannelsLast;
        outs[i] = g_.add_op1(OpId::clone, {outs[i], format});
        changed = true;
        continue;
      }
      std::optional<std::vector<int64_t>> perm = dense_order(before[i]);
      if (!perm) continue;  // eager's output was a view with gaps: forward() keeps those layouts
      std::vector<int64_t> inverse(perm->size());
      for (size_t d = 0; d < perm->size(); ++d) inverse[(*perm)[d]] = static_cast<int64_t>(d);
      Tensor t = g_.add_op1(OpId::permute, {outs[i], SymIntList(*perm)});
      t = g_.add_op1(OpId::clone, {t, MemoryFormat::kContiguous});
      outs[i] = g_.add_op1(OpId::permute, {t, SymIntList(inverse)});
      changed = true;
    }
    if (changed) g_.set_outputs(outs);
    return changed;
  }

  // Whether reading `value` instead of `old_value` (a different layout) changes the layout that reaches a view.
  // Layouts flow on through the users whose output follows their input's layout (pointwise ops, to, clone): eager
  // gave layer_norm's result contiguous strides and its `to` and the view after it followed them; the same `to` of
  // the transposed input of a removed clone is transposed, and the view no longer applies. So the users' metas are
  // recomputed on the new layout, and their users followed while a layout still differs. (Outputs that a layout
  // reaches through other ops get eager's layouts back at the end.)
  bool relayout_reaches_view(const Tensor& old_value, const Tensor& value) {
    std::unordered_map<const TensorImpl*, Tensor> moved = {{old_value.impl(), value}};
    for (const Node& n : g_.nodes()) {
      if (!n.is_op()) continue;
      bool reads = false, depends = false;
      Args args;
      for (const Value& v : n.args)
        args.push_back(graph_detail::map_tensors(v, [&](const Tensor& t) {
          auto it = moved.find(t.impl());
          if (it == moved.end()) return t;
          reads = true;
          depends = depends || reads_layout(n, t);
          return it->second;
        }));
      if (depends) return true;
      if (!reads) continue;
      std::vector<Tensor> metas;
      try {
        metas = run_meta(n.op, args);
      } catch (const Error&) {
        return true;
      }
      for (size_t k = 0; k < metas.size() && k < n.outputs.size(); ++k)
        if (!same_layout(metas[k].meta(), n.outputs[k].meta())) moved[n.outputs[k].impl()] = metas[k];
    }
    return false;
  }

  // Moves the users of `old_value` to `value`, when that keeps the meaning: same sizes/dtype/device; a different
  // layout only where `old_value` is no output and the layout reaches no view; and no graph output starts
  // aliasing an input, a constant or another output.
  bool forward(const Tensor& old_value, const Tensor& value) {
    if (!value.defined() || old_value.is_same(value)) return false;
    const TensorMeta &o = old_value.meta(), &n = value.meta();
    if (o.dtype != n.dtype || o.device != n.device || !same_symints(o.sizes, n.sizes)) return false;
    bool relaid = !same_layout(o, n);
    if (relaid && (is_output(g_, old_value) || relayout_reaches_view(old_value, value))) return false;
    // The outputs that are old_value or views of it become value or views of value's root: refused when that
    // root is an input or a constant (the caller's result would alias them: x.clone().t() returned, then written
    // by a write-back or by the caller) or the root of another output.
    const Node& old_producer = g_.producer(old_value);
    bool reaches_output = false;
    for (const Tensor& out : g_.outputs()) reaches_output = reaches_output || &root_of(g_, out) == &old_producer;
    if (reaches_output) {
      const Node& root = root_of(g_, value);
      if (root.kind == NodeKind::kInput || root.kind == NodeKind::kConstant) return false;
      for (const Tensor& out : g_.outputs())
        if (&root_of(g_, out) == &root) return false;
    }
    if (rw_.replace_all_uses(old_value, value) == 0) return false;
    restride_ = restride_ || relaid;
    return true;
  }

  bool apply_identities() {
    bool changed = false;
    for (const Node* n : op_nodes()) {
      for (const auto& [op, rule] : identities()) {
        if (!n->is_op(op)) continue;
        Tensor to = rule(g_, *n);
        if (to.defined() && forward(n->output(), to)) changed = true;
      }
    }
    return changed;
  }

  // An op whose tensor arguments are all constants, small, pure, and not returned: run it now.
  bool fold_constants() {
    bool changed = false;
    for (const Node* n : op_nodes()) {
      if (has_side_effects(*n) || n->outputs.size() != 1 || is_output(g_, n->output())) continue;
      const TensorMeta& m = n->meta();
      bool concrete = !m.sizes.any_symbolic() && !m.strides.any_symbolic() && !m.offset.is_symbolic();
      int64_t numel = 1;
      for (const SymInt& s : m.sizes) numel *= s.hint();
      if (!concrete || numel > kMaxFoldedElements) continue;
      bool all_constant = true;
      int tensors = 0;
      graph_detail::for_each_tensor(n->args, [&](const Tensor& t) {
        ++tensors;
        all_constant = all_constant && g_.producer(t).kind == NodeKind::kConstant;
      });
      if (!all_constant || tensors == 0) continue;
      Args args;
      for (const Value& v : n->args)
        args.push_back(graph_detail::map_tensors(v, [&](const Tensor& t) { return g_.producer(t).constant; }));
      Tensor value = run_eager(n->op, args, n->loc)[0];
      if (!same_layout(value.meta(), m)) continue;
      Tensor folded = rw_.graph().add_constant(value, "folded");
      changed = rw_.replace_all_uses(n->output(), folded) > 0 || changed;
    }
    return changed;
  }

  // Two calls of the same pure op on the same arguments make the same values: the later one's users move to
  // the earlier one (forward() refuses where two outputs would become one buffer).
  bool eliminate_common_subexpressions() {
    bool changed = false;
    std::unordered_map<size_t, std::vector<const Node*>> seen;
    for (const Node* n : op_nodes()) {
      if (has_side_effects(*n)) continue;
      size_t key = static_cast<size_t>(n->op);
      graph_detail::for_each_tensor(n->args, [&](const Tensor& t) {
        key = key * 1000003u ^ std::hash<const void*>()(t.impl());
      });
      const Node* match = nullptr;
      for (const Node* c : seen[key]) {
        if (c->op != n->op || c->args.size() != n->args.size()) continue;
        bool same = true;
        for (size_t i = 0; same && i < c->args.size(); ++i) same = graph_detail::same_value(c->args[i], n->args[i]);
        if (same) match = c;
        if (match) break;
      }
      if (!match) {
        seen[key].push_back(n);
        continue;
      }
      for (size_t k = 0; k < n->outputs.size(); ++k) changed = forward(n->outputs[k], match->outputs[k]) || changed;
    }
    return changed;
  }

  std::vector<const Node*> op_nodes() const {
    std::vector<const Node*> nodes;
    for (const Node& n : g_.nodes())
      if (n.is_op()) nodes.push_back(&n);
    return nodes;
  }

  Graph& g_;
  Rewriter rw_;
  bool restride_ = false;
};

}  // namespace

bool simplify(Graph& g) {
  std::optional<sym::ShapeEnvScope> scope;
  if (g.shape_env()) scope.emplace(g.shape_env().get());
  return Simplifier(g).run();
}

}  // namespace sinter::passes
