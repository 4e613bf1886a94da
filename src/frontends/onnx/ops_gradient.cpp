// ai.onnx.preview.training::Gradient: reverse-mode differentiation over the imported graph. The attributes name
// the differentiated computation: `y` as a function of the tensors named in `xs` (differentiated) and `zs` (held
// fixed); the node's inputs are the values at which it is evaluated (xs' then zs'), and its i-th output is dy/dxs[i].
// The importer re-runs the part of the enclosing graph between those tensors and y with the inputs substituted,
// recording each node that carries a derivative (a floating output computed from a floating input that depends
// on an x), then walks that tape backwards, building the backward ops out of sinter ops, so compile() captures
// them like the forward ones. A y with more than one element is differentiated as the sum of its elements (the
// seed is ones). The rules (vjp_rules below) cover Add, Sub, Mul, Div, Neg, Pow, Abs, Sqrt, Exp, Log, Relu,
// Sigmoid, Tanh, MatMul, Gemm, Sum, Mean, ReduceSum, ReduceMean, ReduceSumSquare, Identity, Cast, Reshape,
// Flatten, Squeeze, Unsqueeze, Transpose; broadcast inputs get their gradient summed back to their shape. Any
// other operator between xs and y is an Error that names it.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "frontends/onnx/importer.h"

namespace sinter::onnx {
namespace {

// One forward node as re-run for the gradient: its input and output values.
struct Step {
  const proto::Node* node;
  std::vector<Val> ins, outs;
  std::vector<bool> need;  // which inputs want a gradient (rules may skip the others)
};

// Gradients of a node's inputs (undefined where an input gets none) from those of its outputs (undefined where
// an output has none; at least one is defined).
using Vjp = std::vector<Tensor> (*)(Step& s, const std::vector<Tensor>& gout, NodeCtx& c);

// `g` (the gradient of a broadcast result) summed over the dims that broadcasting added to or stretched in `like`.
Tensor sum_to(const Tensor& g, const Tensor& like) {
  Tensor r = g;
  int64_t lead = r.dim() - like.dim();
  if (lead > 0) {
    DimList d;
    for (int64_t k = 0; k < lead; ++k) d.push_back(k);
    r = sum(r, OptDims(d), false);
  }
  DimList d;
  for (int64_t k = 0; k < like.dim(); ++k)
    if (like.size(k) == 1 && r.size(k) != 1) d.push_back(k);
  if (!d.empty()) r = sum(r, OptDims(d), true);
  return cast_to(r, like.dtype());
}

const Tensor& in(const Step& s, size_t i) { return s.ins[i].t; }
const Tensor& out(const Step& s, size_t i) { return s.outs[i].t; }

std::vector<Tensor> vjp_add(Step& s, const std::vector<Tensor>& g, NodeCtx&) {
  return {sum_to(g[0], in(s, 0)), sum_to(g[0], in(s, 1))};
}
std::vector<Tensor> vjp_sub(Step& s, const std::vector<Tensor>& g, NodeCtx&) {
  return {sum_to(g[0], in(s, 0)), sum_to(neg(g[0]), in(s, 1))};
}
// d(a*b) = b da + a db
std::vector<Tensor> vjp_mul(Step& s, const std::vector<Tensor>& g, NodeCtx&) {
  return {sum_to(mul(g[0], in(s, 1)), in(s, 0)), sum_to(mul(g[0], in(s, 0)), in(s, 1))};
}
// d(a/b) = da / b - (a/b) db / b
std::vector<Tensor> vjp_div(Step& s, const std::vector<Tensor>& g, NodeCtx&) {
  Tensor ga = div(g[0], in(s, 1));
  return {sum_to(ga, in(s, 0)), sum_to(neg(mul(ga, out(s, 0))), in(s, 1))};
}
std::vector<Tensor> vjp_neg(Step&, const std::vector<Tensor>& g, NodeCtx&) { return {neg(g[0])}; }
// d(a^b) = b a^(b-1) da + a^b log(a) db
std::vector<Tensor> vjp_pow(Step& s, const std::vector<Tensor>& g, NodeCtx&) {
  const Tensor& a = in(s, 0);
  Tensor b = cast_to(in(s, 1), a.dtype());
  Tensor ga = sum_to(mul(g[0], mul(b, pow(a, sub(b, Scalar(1))))), a);
  if (!s.need[1]) return {ga};
  return {ga, sum_to(mul(g[0], mul(out(s, 0), log(a))), in(s, 1))};
}
std::vector<Tensor> vjp_abs(Step& s, const std::vector<Tensor>& g, NodeCtx&) { return {mul(g[0], sign(in(s, 0)))}; }
// d sqrt(x) = dx / (2 sqrt(x))
std::vector<Tensor> vjp_sqrt(Step& s, const std::vector<Tensor>& g, NodeCtx&) {
  return {div(g[0], mul(out(s, 0), Scalar(2)))};
}
std::vector<Tensor> vjp_exp(Step& s, const std::vector<Tensor>& g, NodeCtx&) { return {mul(g[0], out(s, 0))}; }
std::vector<Tensor> vjp_log(Step& s, const std::vector<Tensor>& g, NodeCtx&) { return {div(g[0], in(s, 0))}; }
std::vector<Tensor> vjp_relu(Step& s, const std::vector<Tensor>& g, NodeCtx&) {
  return {where(gt(in(s, 0), Scalar(0)), g[0], Scalar(0))};
}
// sigmoid' = y (1 - y)
std::vector<Tensor> vjp_sigmoid(Step& s, const std::vector<Tensor>& g, NodeCtx&) {
  const Tensor& y = out(s, 0);
  return {mul(g[0], mul(y, rsub(y, Scalar(1))))};
}
// tanh' = 1 - y^2
std::vector<Tensor> vjp_tanh(Step& s, const std::vector<Tensor>& g, NodeCtx&) {
  const Tensor& y = out(s, 0);
  return {mul(g[0], rsub(mul(y, y), Scalar(1)))};
}

// matmul(a, b) with numpy's 1-D promotion: a [k] is [1, k], b [k] is [k, 1], and the result drops those dims.
// da = g b^T, db = a^T g, summed over broadcast batch dims.
std::vector<Tensor> vjp_matmul(Step& s, const std::vector<Tensor>& g, NodeCtx&) {
  const Tensor &a = in(s, 0), &b = in(s, 1);
  Tensor a2 = a.dim() == 1 ? unsqueeze(a, 0) : a, b2 = b.dim() == 1 ? unsqueeze(b, -1) : b;
  Tensor g2 = g[0];
  if (b.dim() == 1) g2 = unsqueeze(g2, -1);
  if (a.dim() == 1) g2 = unsqueeze(g2, -2);
  Tensor ga = sum_to(matmul(g2, transpose(b2, -1, -2)), a2);
  Tensor gb = sum_to(matmul(transpose(a2, -1, -2), g2), b2);
  return {reshape(ga, a.sizes()), reshape(gb, b.sizes())};
}

// Y = alpha op(A) op(B) + beta C: d op(A) = alpha g op(B)^T, d op(B) = alpha op(A)^T g, dC = beta g (summed back).
std::vector<Tensor> vjp_gemm(Step& s, const std::vector<Tensor>& g, NodeCtx& c) {
  double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  bool ta = c.attr_int("transA", 0) != 0, tb = c.attr_int("transB", 0) != 0;
  Tensor a = ta ? t(in(s, 0)) : in(s, 0), b = tb ? t(in(s, 1)) : in(s, 1);
  Tensor ga = mul(mm(g[0], t(b)), Scalar(alpha)), gb = mul(mm(t(a), g[0]), Scalar(alpha));
  std::vector<Tensor> r{ta ? t(ga) : ga, tb ? t(gb) : gb};
  if (s.ins.size() > 2 && in(s, 2).defined()) r.push_back(sum_to(mul(g[0], Scalar(beta)), in(s, 2)));
  return r;
}

// Sum and Mean of several inputs, broadcast together.
std::vector<Tensor> vjp_sum(Step& s, const std::vector<Tensor>& g, NodeCtx&) {
  std::vector<Tensor> r;
  for (const Val& v : s.ins) r.push_back(sum_to(g[0], v.t));
  return r;
}
std::vector<Tensor> vjp_mean(Step& s, const std::vector<Tensor>& g, NodeCtx&) {
  Tensor scaled = div(g[0], Scalar(static_cast<double>(s.ins.size())));
  std::vector<Tensor> r;
  for (const Val& v : s.ins) r.push_back(sum_to(scaled, v.t));
  return r;
}

// The dims a Reduce* node reduced (axes from the attribute before `since`, from input 1 after; none given: all,
// unless noop_with_empty_axes). Returns false for the no-op.
bool reduced_dims(NodeCtx& c, int64_t rank, int64_t since, DimList& dims) {
  std::vector<int64_t> axes = c.opset() >= since ? (c.has(1) ? c.ints(1) : std::vector<int64_t>{}) : c.attr_ints("axes");
  if (axes.empty() && c.attr_int("noop_with_empty_axes", 0) != 0) return false;
  if (axes.empty())
    for (int64_t k = 0; k < rank; ++k) dims.push_back(k);
  for (int64_t a : axes) dims.push_back(norm_axis(a, rank, c));
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return true;
}

// The gradient of a reduction's output spread back over the input (unsqueezed where keepdims=0), and the count
// of elements each output summed.
Tensor spread(const Tensor& g, const Tensor& x, NodeCtx& c, int64_t since, double& count) {
  DimList dims;
  count = 1;
  if (!reduced_dims(c, x.dim(), since, dims)) return g;
  Tensor r = g;
  if (c.attr_int("keepdims", 1) == 0)
    for (int64_t d : dims) r = unsqueeze(r, d);
  for (int64_t d : dims) count *= static_cast<double>(static_cast<int64_t>(x.size(d)));
  return expand(r, x.sizes());
}
std::vector<Tensor> vjp_reduce_sum(Step& s, const std::vector<Tensor>& g, NodeCtx& c) {
  double n;
  return {spread(g[0], in(s, 0), c, 13, n)};
}
std::vector<Tensor> vjp_reduce_mean(Step& s, const std::vector<Tensor>& g, NodeCtx& c) {
  double n;
  Tensor r = spread(g[0], in(s, 0), c, 18, n);
  return {div(r, Scalar(n))};
}
// d sum(x^2) = 2 x dx
std::vector<Tensor> vjp_reduce_sum_square(Step& s, const std::vector<Tensor>& g, NodeCtx& c) {
  double n;
  Tensor r = spread(g[0], in(s, 0), c, 18, n);
  return {mul(mul(r, in(s, 0)), Scalar(2))};
}

// Ops that only move or relabel elements: the gradient takes the input's shape (and dtype) back.
std::vector<Tensor> vjp_reshape(Step& s, const std::vector<Tensor>& g, NodeCtx&) {
  return {cast_to(reshape(g[0], in(s, 0).sizes()), in(s, 0).dtype())};
}
std::vector<Tensor> vjp_transpose(Step& s, const std::vector<Tensor>& g, NodeCtx& c) {
  int64_t rank = in(s, 0).dim();
  std::vector<int64_t> perm = c.attr_ints("perm");
  if (perm.empty())
    for (int64_t k = rank - 1; k >= 0; --k) perm.push_back(k);
  DimList inverse(std::vector<int64_t>(perm.size()));
  for (size_t k = 0; k < perm.size(); ++k) inverse[norm_axis(perm[k], rank, c)] = static_cast<int64_t>(k);
  return {permute(g[0], inverse)};
}

const std::map<std::string, Vjp, std::less<>>& vjp_rules() {
  static const std::map<std::string, Vjp, std::less<>> rules = {
      {"Add", vjp_add},         {"Sub", vjp_sub},
      {"Mul", vjp_mul},         {"Div", vjp_div},
      {"Neg", vjp_neg},         {"Pow", vjp_pow},
      {"Abs", vjp_abs},         {"Sqrt", vjp_sqrt},
      {"Exp", vjp_exp},         {"Log", vjp_log},
      {"Relu", vjp_relu},       {"Sigmoid", vjp_sigmoid},
      {"Tanh", vjp_tanh},       {"MatMul", vjp_matmul},
      {"Gemm", vjp_gemm},       {"Sum", vjp_sum},
      {"Mean", vjp_mean},       {"ReduceSum", vjp_reduce_sum},
      {"ReduceMean", vjp_reduce_mean}, {"ReduceSumSquare", vjp_reduce_sum_square},
      {"Identity", vjp_reshape}, {"Cast", vjp_reshape},
      {"Reshape", vjp_reshape}, {"Flatten", vjp_reshape},
      {"Squeeze", vjp_reshape}, {"Unsqueeze", vjp_reshape},
      {"Transpose", vjp_transpose},
  };
  return rules;
}

// A floating tensor (sequences and omitted values carry no derivative).
bool floating(const Val& v) { return v.t.defined() && is_floating(v.t.dtype()); }

bool has_subgraph(const proto::Node& n) {
  for (const proto::Attribute& a : n.attributes)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

std::vector<Tensor> gradient(NodeCtx& c) {
  const proto::Attribute* xa = c.node().attr("xs");
  const proto::Attribute* za = c.node().attr("zs");
  std::vector<std::string> xs = xa ? xa->strings : std::vector<std::string>{};
  std::vector<std::string> zs = za ? za->strings : std::vector<std::string>{};
  std::string y = c.attr_str("y", "");
  if (xs.empty() || y.empty()) c.fail("attributes 'xs' and 'y' are required");
  if (c.num_inputs() != xs.size() + zs.size())
    c.fail(fmt::format("takes one input per name in xs and zs ({}), got {}", xs.size() + zs.size(), c.num_inputs()));
  if (c.node().outputs.size() > xs.size())
    c.fail(fmt::format("has {} outputs but xs names {}", c.node().outputs.size(), xs.size()));

  Executor& exec = c.executor();
  const proto::Graph& g = exec.current_graph();
  // The substituted values, and which names carry a derivative.
  std::map<std::string, Val> values;
  std::set<std::string> diff;
  for (size_t i = 0; i < xs.size() + zs.size(); ++i) {
    const std::string& name = i < xs.size() ? xs[i] : zs[i - xs.size()];
    Val v{c.in(i), c.known(i), 0};
    values[name] = v;
    if (i < xs.size()) {
      if (!floating(v))
        c.fail(fmt::format("xs '{}' is {}: only floating tensors are differentiated", name, dtype_name(v.t.dtype())));
      diff.insert(name);
    }
  }

  // The nodes y depends on, stopping at the substituted names.
  std::map<std::string, size_t> producer;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (const std::string& o : g.nodes[k].outputs)
      if (!o.empty()) producer[o] = k;
  std::set<size_t> needed;
  std::vector<std::string> todo{y};
  while (!todo.empty()) {
    std::string name = todo.back();
    todo.pop_back();
    auto it = producer.find(name);
    if (values.count(name) || it == producer.end() || needed.count(it->second)) continue;
    if (&g.nodes[it->second] == &c.node()) c.fail(fmt::format("y '{}' depends on this Gradient node itself", y));
    needed.insert(it->second);
    for (const std::string& in_name : g.nodes[it->second].inputs)
      if (!in_name.empty()) todo.push_back(in_name);
  }
  if (!values.count(y) && !producer.count(y) && !exec.find(y)) c.fail(fmt::format("y '{}' is not a value of the graph", y));

  // Forward: re-run what the substituted values reach; reuse the graph's own values for the rest.
  auto value_of = [&](const std::string& name) -> Val {
    if (name.empty()) return Val{};
    if (auto it = values.find(name); it != values.end()) return it->second;
    const Val* v = exec.find(name);
    if (!v) c.fail(fmt::format("'{}' (needed to compute y) is not defined", name));
    return *v;
  };
  std::vector<Step> tape;
  for (size_t k : needed) {  // std::set iterates in graph (topological) order
    const proto::Node& n = g.nodes[k];
    bool touched = false, carries = false;
    for (const std::string& in_name : n.inputs) {
      touched = touched || values.count(in_name);
      carries = carries || diff.count(in_name);
    }
    bool available = std::all_of(n.outputs.begin(), n.outputs.end(),
                                 [&](const std::string& o) { return o.empty() || exec.find(o); });
    if (has_subgraph(n))
      c.fail(fmt::format("node '{}' ({}) lies between xs/zs and y and runs subgraphs, which Gradient does not "
                         "differentiate through", n.name, n.op_type));
    if (!touched && available) continue;  // its value in the graph is the value here
    Step s{&n, {}, {}, {}};
    for (const std::string& in_name : n.inputs) s.ins.push_back(value_of(in_name));
    s.outs = exec.eval_node(n, s.ins);
    bool derivative = false;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i].empty()) continue;
      values[n.outputs[i]] = s.outs[i];
      // A derivative flows through floating values computed from floating inputs that depend on an x.
      bool floating_in = false;
      for (size_t j = 0; j < n.inputs.size(); ++j)
        floating_in = floating_in || (diff.count(n.inputs[j]) && floating(s.ins[j]));
      if (carries && floating_in && floating(s.outs[i])) {
        diff.insert(n.outputs[i]);
        derivative = true;
      }
    }
    if (derivative) tape.push_back(std::move(s));
  }

  // Backward.
  std::map<std::string, Tensor> grads;
  Val yv = value_of(y);
  if (!floating(yv)) c.fail(fmt::format("y '{}' is {}: only floating values are differentiated", y, dtype_name(yv.t.dtype())));
  if (diff.count(y)) grads[y] = ones_like(yv.t);
  for (auto st = tape.rbegin(); st != tape.rend(); ++st) {
    const proto::Node& n = *st->node;
    std::vector<Tensor> gout;
    bool any = false;
    for (const std::string& o : n.outputs) {
      auto it = grads.find(o);
      gout.push_back(it != grads.end() ? it->second : Tensor());
      any = any || it != grads.end();
    }
    if (!any) continue;
    auto rule = vjp_rules().find(op_key(n));
    if (rule == vjp_rules().end())
      c.fail(fmt::format("operator {} (node '{}') lies between xs and y, and Gradient has no derivative for it",
                         op_key(n), n.name));
    for (size_t i = 0; i < gout.size(); ++i)
      if (!gout[i].defined()) gout[i] = zeros_like(st->outs[i].t);
    for (const std::string& name : n.inputs) st->need.push_back(diff.count(name) > 0);
    NodeCtx nc(exec, n, st->ins, c.opset());
    std::vector<Tensor> gin = rule->second(*st, gout, nc);
    for (size_t j = 0; j < n.inputs.size() && j < gin.size(); ++j) {
      const std::string& name = n.inputs[j];
      if (!diff.count(name) || !gin[j].defined() || !floating(st->ins[j])) continue;
      auto it = grads.find(name);
      grads[name] = it == grads.end() ? gin[j] : add(it->second, gin[j]);
    }
  }
  std::vector<Tensor> outs;
  for (size_t i = 0; i < c.node().outputs.size(); ++i) {
    auto it = grads.find(xs[i]);
    outs.push_back(it != grads.end() ? cast_to(it->second, c.in(i).dtype()) : zeros_like(c.in(i)));
  }
  return outs;
}

}  // namespace

void register_gradient_ops(OpTable& t) {
  // `host`: it re-runs nodes itself, which fold (or not) one by one.
  t["ai.onnx.preview.training::Gradient"] = {gradient, false, true};
}

}  // namespace sinter::onnx
