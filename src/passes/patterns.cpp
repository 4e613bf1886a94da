// The pattern rules (see patterns.h). A rule is a matcher that reads the graph and, when the whole pattern is
// there with every condition met, returns a Match; only then does its rewrite touch the graph (through the
// Rewriter). Intermediate values of a pattern must have no other users, so the rewrite removes them all.
#include "passes/patterns.h"

#include <cmath>
#include <functional>
#include <optional>

#include "ops/dispatch.h"
#include "ops/op_table.h"
#include "support/check.h"
#include "support/log.h"
#include "symbolic/shape_env.h"

namespace sinter::passes {
namespace {

// A value used by exactly one node (the pattern's next op), and not returned.
bool single_use(const Graph& g, const Tensor& t, const Node& user) {
  std::vector<const Node*> users = g.users(t);
  return users.size() == 1 && users[0] == &user;
}

bool is_constant(const Graph& g, const Value& v) {
  return v.is_tensor() && v.tensor().defined() && g.producer(v.tensor()).kind == NodeKind::kConstant;
}
bool is_constant_or_none(const Graph& g, const Value& v) { return v.is_none() || is_constant(g, v); }
const Tensor& constant_of(const Graph& g, const Value& v) { return g.producer(v.tensor()).constant; }

// Eager arithmetic on constants, straight through the kernels (a capture hook may be installed).
Tensor eager(OpId op, Args args, Loc loc = Loc::current()) {
  normalize_args(op_def(op), args);  // run_eager takes the arguments as the dispatcher passes them
  return run_eager(op, args, loc)[0];
}
Tensor as_double(const Tensor& t) { return eager(OpId::to_copy, {t, kFloat64}); }

// ---- conv2d(x, W, b) -> batch_norm(eval) => conv2d(x, W * s, (b - mean) * s + beta), s = gamma / sqrt(var + eps)

struct ConvBn {
  const Node* conv;
  const Node* bn;
};

std::optional<ConvBn> match_conv_bn(const Graph& g, const Node& bn, const PassContext& ctx) {
  if (!ctx.freeze || !(bn.is_op(OpId::batch_norm) || bn.is_op(OpId::batch_norm_functional))) return std::nullopt;
  if (bn.args[5].to_bool()) return std::nullopt;  // training uses the batch's statistics
  const Node& conv = g.producer(bn.args[0].tensor());
  if (!conv.is_op(OpId::conv2d) || !single_use(g, conv.output(), bn)) return std::nullopt;
  if (!is_constant(g, conv.args[1]) || !is_constant_or_none(g, conv.args[2])) return std::nullopt;
  for (int i : {1, 2})
    if (!is_constant_or_none(g, bn.args[i])) return std::nullopt;
  for (int i : {3, 4})
    if (!is_constant(g, bn.args[i])) return std::nullopt;
  for (size_t k = 1; k < bn.outputs.size(); ++k)  // the functional form's running-stat copies
    if (!g.users(bn.outputs[k]).empty()) return std::nullopt;
  return ConvBn{&conv, &bn};
}

void rewrite_conv_bn(Rewriter& rw, const ConvBn& m) {
  Graph& g = rw.graph();
  const Node &conv = *m.conv, &bn = *m.bn;
  const Tensor& weight = constant_of(g, conv.args[1]);
  int64_t channels = weight.sizes()[0].hint();
  // Folded in float64, rounded once into the weight's dtype.
  Tensor var = as_double(constant_of(g, bn.args[4]));
  Tensor scale = eager(OpId::rsqrt, {eager(OpId::add_Scalar, {var, bn.args[7].to_double()})});
  if (!bn.args[1].is_none()) scale = eager(OpId::mul_Tensor, {as_double(constant_of(g, bn.args[1])), scale});
  SymIntList per_channel{channels};
  for (int64_t d = 1; d < weight.dim(); ++d) per_channel.push_back(1);
  Tensor new_weight = eager(OpId::mul_Tensor, {as_double(weight), eager(OpId::view, {scale, per_channel})});
  Tensor bias = conv.args[2].is_none() ? eager(OpId::zeros, {SymIntList{channels}, kFloat64})
                                       : as_double(constant_of(g, conv.args[2]));
  Tensor new_bias = eager(OpId::mul_Tensor, {eager(OpId::sub_Tensor, {bias, as_double(constant_of(g, bn.args[3]))}), scale});
  if (!bn.args[2].is_none()) new_bias = eager(OpId::add_Tensor, {new_bias, as_double(constant_of(g, bn.args[2]))});
  DType bias_dtype = conv.args[2].is_none() ? weight.dtype() : constant_of(g, conv.args[2]).dtype();
  Tensor w = g.add_constant(eager(OpId::to_copy, {new_weight, weight.dtype()}), "conv_bn_weight");
  Tensor b = g.add_constant(eager(OpId::to_copy, {new_bias, bias_dtype}), "conv_bn_bias");
  Args args = conv.args;
  args[1] = w;
  args[2] = b;
  rw.set_args(conv, std::move(args));
  rw.replace_all_uses(bn.output(0), conv.output());
  rw.erase(bn);
}

// ---- matmul(softmax(matmul(q, k^T) * scale [+ mask], -1) [dropout in eval], v)
//        => scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)

struct Attention {
  std::vector<const Node*> chain;  // from the final matmul back to the first; erased in this order
  Tensor q, k, v, mask;
  double scale = 1;
  // Where k^T is one permute of a tensor laid out otherwise (an exported model's [B, T, H, D] -> [B, H, D, T]):
  // k is that tensor permuted by k_dims, made by the rewrite.
  Tensor k_source;
  std::vector<int64_t> k_dims;
};

int64_t wrap(int64_t d, int64_t rank) { return d < 0 ? d + rank : d; }

// The value of a scale operand: a Scalar, or a constant tensor of one element in the scores' dtype (an exported
// model divides by a 0-dim constant), which neither broadcasts the scores nor changes their dtype.
std::optional<double> scale_value(const Graph& g, const Value& v, const Tensor& scores) {
  if (!v.is_tensor()) return v.to_double();
  const Tensor& t = v.tensor();
  const Node& p = g.producer(t);
  if (p.kind != NodeKind::kConstant || t.dtype() != scores.dtype() || t.dim() > scores.dim() ||
      t.numel().is_symbolic() || t.numel().hint() != 1)
    return std::nullopt;
  return p.constant.to(kFloat64).reshape({-1}).item<double>();
}

// Whether `n` scales the scores: a multiplication or division by a scale_value.
bool is_scaling(const Graph& g, const Node& n) {
  const bool op = n.is_op(OpId::mul_Scalar) || n.is_op(OpId::div_Scalar) || n.is_op(OpId::mul_Tensor) ||
                  n.is_op(OpId::div_Tensor);
  return op && scale_value(g, n.args[1], n.args[0].tensor()).has_value();
}

// k when `t` is k with its last two dims swapped (transpose.int or permute), else undefined.
Tensor untransposed(const Graph& g, const Tensor& t, const Node*& node) {
  node = &g.producer(t);
  if (!node->is_op()) return Tensor();
  const Tensor& k = node->args[0].tensor();
  int64_t r = k.dim();
  if (r < 2) return Tensor();
  if (node->is_op(OpId::transpose_int)) {
    int64_t a = wrap(node->args[1].to_int(), r), b = wrap(node->args[2].to_int(), r);
    return std::min(a, b) == r - 2 && std::max(a, b) == r - 1 ? k : Tensor();
  }
  if (node->is_op(OpId::permute)) {
    std::vector<int64_t> dims = node->args[1].to_int_list();
    for (int64_t i = 0; i < r; ++i) {
      int64_t want = i == r - 2 ? r - 1 : (i == r - 1 ? r - 2 : i);
      if (wrap(dims[i], r) != want) return Tensor();
    }
    return k;
  }
  return Tensor();
}

std::optional<Attention> match_attention(const Graph& g, const Node& out) {
  if (!out.is_op(OpId::matmul)) return std::nullopt;
  Attention m;
  m.chain.push_back(&out);
  m.v = out.args[1].tensor();
  const Node* probs = &g.producer(out.args[0].tensor());
  // An eval dropout (or p = 0) between softmax and the matmul draws nothing: look through it.
  if (probs->is_op(OpId::dropout) && (!probs->args[2].to_bool() || probs->args[1].to_double() == 0)) {
    if (!single_use(g, probs->output(), *m.chain.back())) return std::nullopt;
    m.chain.push_back(probs);
    probs = &g.producer(probs->args[0].tensor());
  }
  if (!probs->is_op(OpId::softmax_int) || !probs->args[2].is_none()) return std::nullopt;
  if (!single_use(g, probs->output(), *m.chain.back())) return std::nullopt;
  const Tensor& logits = probs->args[0].tensor();
  if (logits.dim() < 2 || wrap(probs->args[1].to_int(), logits.dim()) != logits.dim() - 1) return std::nullopt;
  m.chain.push_back(probs);
  const Node* node = &g.producer(logits);
  auto step = [&](const Node* next) {  // node's output feeds only the chain's last node
    if (!single_use(g, node->output(), *m.chain.back())) return false;
    m.chain.push_back(node);
    node = next;
    return true;
  };
  if (node->is_op(OpId::add_Tensor) && node->args[2].scalar() == Scalar(1)) {
    // scores + mask, or mask + scores: the scores are the side made by the scaling or the first matmul.
    auto is_scores = [&](const Tensor& t) {
      const Node& p = g.producer(t);
      return is_scaling(g, p) || p.is_op(OpId::matmul);
    };
    int side = is_scores(node->args[0].tensor()) ? 0 : (is_scores(node->args[1].tensor()) ? 1 : -1);
    if (side < 0) return std::nullopt;
    m.mask = node->args[1 - side].tensor();
    if (!step(&g.producer(node->args[side].tensor()))) return std::nullopt;
  }
  if (is_scaling(g, *node)) {
    double s = *scale_value(g, node->args[1], node->args[0].tensor());
    if (node->is_op(OpId::div_Scalar) || node->is_op(OpId::div_Tensor)) s = 1.0 / s;
    if (!std::isfinite(s)) return std::nullopt;
    m.scale = s;
    if (!step(&g.producer(node->args[0].tensor()))) return std::nullopt;
  }
  if (!node->is_op(OpId::matmul) || !step(nullptr)) return std::nullopt;
  const Node* scores = m.chain.back();
  m.q = scores->args[0].tensor();
  const Node* transpose = nullptr;
  m.k = untransposed(g, scores->args[1].tensor(), transpose);
  if (!m.k.defined() && transpose->is_op(OpId::permute)) {
    // k^T = permute(x, dims) of any other order: k = permute(x, dims with the last two swapped).
    m.k_dims = transpose->args[1].to_int_list();
    if (m.k_dims.size() >= 2) {
      std::swap(m.k_dims[m.k_dims.size() - 1], m.k_dims[m.k_dims.size() - 2]);
      m.k_source = transpose->args[0].tensor();
    }
  }
  if ((!m.k.defined() && !m.k_source.defined()) || m.q.dim() < 2 || m.v.dim() < 2) return std::nullopt;
  if (single_use(g, transpose->output(), *scores)) m.chain.push_back(transpose);
  // The contract of scaled_dot_product_attention: same floating dtype, a float mask of that dtype (a bool
  // mask added as 0/1 means something else), and the same result sizes as the matmul chain.
  DType dt = m.q.dtype();
  const DType kt = m.k.defined() ? m.k.dtype() : m.k_source.dtype();
  if (!is_floating(dt) || kt != dt || m.v.dtype() != dt) return std::nullopt;
  if (m.mask.defined() && m.mask.dtype() != dt) return std::nullopt;
  return m;
}

bool rewrite_attention(Rewriter& rw, const Attention& m) {
  const Node& out = *m.chain.front();
  Tensor k = m.k;
  Args permute_args;
  if (!k.defined()) {  // checked on metadata first: nothing is added to the graph unless the rewrite happens
    permute_args = {m.k_source, SymIntList(m.k_dims)};
    try {
      k = run_meta(OpId::permute, permute_args)[0];
    } catch (const Error& e) {
      SINTER_LOG(kPasses, "patterns: attention not formed: {}", e.what());
      return false;
    }
  }
  Args args{m.q, k, m.v, m.mask.defined() ? Value(m.mask) : Value(), 0.0, false, m.scale};
  std::vector<Tensor> meta;
  try {
    meta = run_meta(OpId::scaled_dot_product_attention, args);
  } catch (const Error& e) {
    SINTER_LOG(kPasses, "patterns: attention not formed: {}", e.what());
    return false;
  }
  const TensorMeta &want = out.meta(), &got = meta[0].meta();
  if (got.dtype != want.dtype || got.sizes.str() != want.sizes.str()) return false;
  if (!m.k.defined()) args[1] = rw.insert_op1_before(out, OpId::permute, permute_args, out.loc);
  Tensor attn = rw.insert_op1_before(out, OpId::scaled_dot_product_attention, args, out.loc);
  rw.replace_all_uses(out.output(), attn);
  for (const Node* n : m.chain) rw.erase(*n);
  return true;
}

// ---- The rule list. ----

struct Rule {
  const char* name;
  // Tries the rule at `n`; returns whether it rewrote the graph (n may then be gone).
  std::function<bool(Rewriter&, const Node&, const PassContext&)> apply;
};

const std::vector<Rule>& rules() {
  static const std::vector<Rule> list = {
      // conv2d(x, W, b) then batch_norm(eval, constants) -> conv2d(x, W * s, (b - mean) * s + beta),
      // s = gamma / sqrt(running_var + eps)
      {"fold_conv_batch_norm",
       [](Rewriter& rw, const Node& n, const PassContext& ctx) {
         std::optional<ConvBn> m = match_conv_bn(rw.graph(), n, ctx);
         if (m) rewrite_conv_bn(rw, *m);
         return m.has_value();
       }},
      // matmul(softmax(matmul(q, k.transpose(-2, -1)) * scale [+ mask], -1), v)
      //   -> scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
      {"attention",
       [](Rewriter& rw, const Node& n, const PassContext&) {
         std::optional<Attention> m = match_attention(rw.graph(), n);
         return m && rewrite_attention(rw, *m);
       }},
  };
  return list;
}

}  // namespace

bool apply_patterns(Graph& g, const PassContext& ctx) {
  std::optional<sym::ShapeEnvScope> scope;
  if (g.shape_env()) scope.emplace(g.shape_env().get());
  Rewriter rw(g);
  bool changed = false;
  // Each match ends at the node it starts from; nodes erased by an earlier match are skipped (their ids are
  // stale), so the list is re-read after every rewrite.
  for (bool again = true; again;) {
    again = false;
    for (const Node& n : g.nodes()) {
      if (!n.is_op()) continue;
      for (const Rule& rule : rules()) {
        if (!rule.apply(rw, n, ctx)) continue;
        SINTER_LOG(kPasses, "patterns: applied {}", rule.name);
        again = changed = true;
        break;
      }
      if (again) break;
    }
  }
  return changed;
}

}  // namespace sinter::passes
