// The joint-graph partitioner (see partition.h). The cut is a max-flow problem over the forward values the
// backward needs: each value is split into an in-node and an out-node joined by an edge of its size in bytes
// (cutting it = keeping the value); values that cannot be recomputed (inputs, non-element-wise ops) hang from the
// source; values a backward op reads hang into the sink; data edges cannot be cut. The smallest cut is the cheapest
// set of kept values from which the backward can recompute everything else it reads.
#include "passes/partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <queue>
#include <set>
#include <unordered_set>

#include "graph/graph_util.h"
#include "ops/op_table.h"
#include "support/check.h"
#include "symbolic/expr.h"
#include "symbolic/shape_env.h"

namespace sinter::passes {

namespace {

using graph_detail::for_each_tensor;
using graph_detail::trace_of;

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;

// Element-wise ops, dtype casts and data movement: cheap to run again in the backward from values it has.
const std::unordered_set<OpId>& recomputable_ops() {
  static const std::unordered_set<OpId> ops = [] {
    std::unordered_set<OpId> s;
#define SINTER_PARTITION_UNARY(X, name) s.insert(OpId::name);
    SINTER_UNARY_NAMES(SINTER_PARTITION_UNARY, _)
#undef SINTER_PARTITION_UNARY
#define SINTER_PARTITION_BINARY(X, name) \
  s.insert(OpId::name##_Tensor);         \
  s.insert(OpId::name##_Scalar);
    SINTER_BINARY_TS_NAMES(SINTER_PARTITION_BINARY, _)
#undef SINTER_PARTITION_BINARY
    for (OpId op :
         {OpId::gelu, OpId::softplus, OpId::leaky_relu, OpId::elu, OpId::celu, OpId::hardtanh, OpId::threshold,
          OpId::logit, OpId::nan_to_num, OpId::add_Tensor, OpId::add_Scalar, OpId::sub_Tensor, OpId::sub_Scalar,
          OpId::rsub_Scalar, OpId::div_Tensor_mode, OpId::div_Scalar_mode, OpId::pow_Tensor_Tensor,
          OpId::pow_Tensor_Scalar, OpId::pow_Scalar, OpId::atan2, OpId::maximum, OpId::minimum, OpId::logical_and,
          OpId::logical_or, OpId::logical_xor, OpId::hypot, OpId::copysign, OpId::where_self,
          OpId::where_ScalarOther, OpId::where_ScalarSelf, OpId::clamp, OpId::clamp_Tensor, OpId::lerp_Scalar,
          OpId::lerp_Tensor, OpId::addcmul, OpId::addcdiv, OpId::to_copy, OpId::clone, OpId::masked_fill_Scalar,
          OpId::masked_fill_Tensor,
          // data movement: cheaper to redo than to keep (a conv's im2col stack is nine times its input)
          OpId::cat, OpId::stack, OpId::pad, OpId::repeat, OpId::flip, OpId::tril, OpId::triu})
      s.insert(op);
    return s;
  }();
  return ops;
}

bool recomputable(const Node& n) {
  if (!n.is_op()) return false;
  const OpDef& def = op_def(n.op);
  if (def.flags & (kRandom | kDataDependent)) return false;
  return def.schema.is_view() || recomputable_ops().count(n.op) > 0;
}

int64_t bytes_of(const Node& n) {
  int64_t total = 0;
  for (const Tensor& t : n.outputs)
    if (t.defined()) total += t.numel().hint() * static_cast<int64_t>(element_size(t.dtype()));
  return total;
}

// Dinic's max flow on a small dense-ish graph.
class MaxFlow {
 public:
  explicit MaxFlow(int n) : adj_(n), level_(n), next_(n) {}
  void add(int from, int to, int64_t cap) {
    adj_[from].push_back(static_cast<int>(edges_.size()));
    edges_.push_back({to, cap});
    adj_[to].push_back(static_cast<int>(edges_.size()));
    edges_.push_back({from, 0});
  }
  int64_t run(int s, int t) {
    int64_t flow = 0;
    while (bfs(s, t)) {
      std::fill(next_.begin(), next_.end(), 0);
      while (int64_t f = push(s, t, kInf)) flow += f;
    }
    return flow;
  }
  // Nodes reachable from s in the residual graph (after run()).
  std::vector<bool> reachable(int s) const {
    std::vector<bool> seen(adj_.size(), false);
    std::vector<int> stack{s};
    seen[s] = true;
    while (!stack.empty()) {
      int u = stack.back();
      stack.pop_back();
      for (int e : adj_[u])
        if (edges_[e].cap > 0 && !seen[edges_[e].to]) {
          seen[edges_[e].to] = true;
          stack.push_back(edges_[e].to);
        }
    }
    return seen;
  }

 private:
  struct Edge {
    int to;
    int64_t cap;
  };
  bool bfs(int s, int t) {
    std::fill(level_.begin(), level_.end(), -1);
    std::queue<int> q;
    level_[s] = 0;
    q.push(s);
    while (!q.empty()) {
      int u = q.front();
      q.pop();
      for (int e : adj_[u])
        if (edges_[e].cap > 0 && level_[edges_[e].to] < 0) {
          level_[edges_[e].to] = level_[u] + 1;
          q.push(edges_[e].to);
        }
    }
    return level_[t] >= 0;
  }
  // One augmenting path by depth-first search, iteratively (no recursion depth that grows with the graph).
  int64_t push(int s, int t, int64_t limit) {
    std::vector<int> path;  // edge ids
    int u = s;
    while (true) {
      if (u == t) {
        int64_t f = limit;
        for (int e : path) f = std::min(f, edges_[e].cap);
        for (int e : path) {
          edges_[e].cap -= f;
          edges_[e ^ 1].cap += f;
        }
        return f;
      }
      bool advanced = false;
      for (int& i = next_[u]; i < static_cast<int>(adj_[u].size()); ++i) {
        int e = adj_[u][i];
        if (edges_[e].cap > 0 && level_[edges_[e].to] == level_[u] + 1) {
          path.push_back(e);
          u = edges_[e].to;
          advanced = true;
          break;
        }
      }
      if (advanced) continue;
      if (path.empty()) return 0;
      level_[u] = -1;  // a dead end: never enter it again in this phase
      int e = path.back();
      path.pop_back();
      u = edges_[e ^ 1].to;
      ++next_[u];
    }
  }
  std::vector<Edge> edges_;
  std::vector<std::vector<int>> adj_;
  std::vector<int> level_;
  std::vector<int> next_;
};

// Node ids of the graph values an op reads.
std::vector<int> arg_nodes(const Node& n) {
  std::vector<int> out;
  for_each_tensor(n.args, [&](const Tensor& t) {
    if (const TraceState* tr = trace_of(t)) out.push_back(tr->node);
  });
  return out;
}

int node_of(const Tensor& t) {
  const TraceState* tr = trace_of(t);
  SINTER_INTERNAL_ASSERT(tr, "a graph output is not a value of the graph");
  return tr->node;
}

// The symbols a size list mentions.
void collect_symbols(const SymIntList& sizes, std::set<int64_t>& out) {
  for (const SymInt& s : sizes)
    if (s.is_symbolic())
      for (int64_t id : sym::free_symbols(s.expr())) out.insert(id);
}

void collect_symbols(const Value& v, std::set<int64_t>& out) {
  if (v.is_int() && v.sym_int().is_symbolic()) collect_symbols(SymIntList{v.sym_int()}, out);
  if (v.is_int_list()) collect_symbols(v.int_list(), out);
}

// Copies the nodes `keep` (in graph order) of `from` into `to`, reading each argument from `values` (node id ->
// its outputs in `to`), which receives the copies' outputs.
void copy_nodes(const Graph& from, const std::vector<bool>& keep, Graph& to, std::vector<std::vector<Tensor>>& values) {
  for (const Node& n : from.nodes()) {
    if (!keep[n.id] || !values[n.id].empty()) continue;
    if (n.kind == NodeKind::kConstant) {
      values[n.id] = {to.add_constant(n.constant, n.name)};
      continue;
    }
    SINTER_INTERNAL_ASSERT(n.is_op(), "partition: node {} is an input that was not given a value", n.id);
    Args args;
    args.reserve(n.args.size());
    for (const Value& v : n.args)
      args.push_back(graph_detail::map_tensors(v, [&](const Tensor& t) {
        const TraceState* tr = trace_of(t);
        SINTER_INTERNAL_ASSERT(tr && !values[tr->node].empty(), "partition: %{} reads a value it was not given", n.id);
        return values[tr->node].at(tr->output);
      }));
    values[n.id] = to.add_op(n.op, std::move(args), n.loc);
  }
}

}  // namespace

PartitionResult partition_joint(const Graph& joint, const JointSpec& spec) {
  const int n = joint.num_nodes();
  std::vector<const Node*> node(n);
  for (const Node& x : joint.nodes()) node[x.id] = &x;
  const std::vector<Tensor> outputs = joint.outputs();
  const std::vector<const Node*> inputs = joint.input_nodes();
  SINTER_INTERNAL_ASSERT(spec.tangent.size() == inputs.size() && spec.free_to_keep.size() == inputs.size(),
                         "partition: {} input flags for {} inputs", spec.tangent.size(), inputs.size());

  // Which values depend on a tangent (backward only), and which each half needs.
  std::vector<bool> tangent_dep(n, false), needed_fwd(n, false), needed_bwd(n, false);
  std::vector<int> input_pos(n, -1);
  for (size_t i = 0; i < inputs.size(); ++i) {
    input_pos[inputs[i]->id] = static_cast<int>(i);
    tangent_dep[inputs[i]->id] = spec.tangent[i];
  }
  for (const Node& x : joint.nodes())
    if (x.is_op())
      for (int a : arg_nodes(x)) tangent_dep[x.id] = tangent_dep[x.id] || tangent_dep[a];
  auto mark = [&](const std::vector<int>& roots, std::vector<bool>& needed) {
    std::vector<int> stack;
    for (int r : roots)
      if (!needed[r]) needed[r] = true, stack.push_back(r);
    while (!stack.empty()) {
      int u = stack.back();
      stack.pop_back();
      if (!node[u]->is_op()) continue;
      for (int a : arg_nodes(*node[u]))
        if (!needed[a]) needed[a] = true, stack.push_back(a);
    }
  };
  std::vector<int> fwd_roots, bwd_roots;
  for (int p : spec.forward_outputs) fwd_roots.push_back(node_of(outputs.at(p)));
  for (int p : spec.backward_outputs) bwd_roots.push_back(node_of(outputs.at(p)));
  mark(fwd_roots, needed_fwd);
  mark(bwd_roots, needed_bwd);
  for (int r = 0; r < n; ++r)
    SINTER_INTERNAL_ASSERT(!(needed_fwd[r] && tangent_dep[r]), "partition: a forward output depends on a tangent (%{})",
                           r);

  // Parameters are alive anyway: keeping one costs nothing.
  auto is_free = [&](int v) { return node[v]->kind == NodeKind::kInput && spec.free_to_keep[input_pos[v]]; };
  // The flow network over forward values the backward may need.
  const int source = 2 * n, sink = 2 * n + 1;
  MaxFlow flow(2 * n + 2);
  auto in = [](int v) { return 2 * v; };
  auto out = [](int v) { return 2 * v + 1; };
  std::vector<bool> boundary(n, false);  // forward values a backward op (or output) reads
  for (int v = 0; v < n; ++v) {
    if (!needed_bwd[v]) continue;
    if (tangent_dep[v]) {
      if (node[v]->is_op())
        for (int a : arg_nodes(*node[v]))
          if (!tangent_dep[a]) boundary[a] = true;
      continue;
    }
  }
  for (int r : bwd_roots)
    if (!tangent_dep[r]) boundary[r] = true;
  for (int v = 0; v < n; ++v) {
    if (!needed_bwd[v] || tangent_dep[v] || node[v]->kind == NodeKind::kOutput) continue;
    const Node& x = *node[v];
    int64_t cap = is_free(v) ? 0 : bytes_of(x);
    if (x.kind == NodeKind::kConstant) cap = 0;
    flow.add(in(v), out(v), cap);
    if (!recomputable(x)) flow.add(source, in(v), kInf);
    if (x.is_op())
      for (int a : arg_nodes(x)) flow.add(out(a), in(v), kInf);
    if (boundary[v]) flow.add(out(v), sink, kInf);
  }
  flow.run(source, sink);
  const std::vector<bool> reach = flow.reachable(source);
  std::vector<bool> cut(n, false);
  for (int v = 0; v < n; ++v)
    cut[v] = needed_bwd[v] && !tangent_dep[v] && node[v]->kind != NodeKind::kOutput &&
             node[v]->kind != NodeKind::kConstant && reach[in(v)] && !reach[out(v)];

  PartitionResult r;
  // The backward: walk from its outputs, stopping at cut values (which it keeps) and tangents.
  std::vector<bool> in_bwd(n, false), kept(n, false);
  {
    std::vector<int> stack;
    for (int root : bwd_roots)
      if (!in_bwd[root]) in_bwd[root] = true, stack.push_back(root);
    while (!stack.empty()) {
      int u = stack.back();
      stack.pop_back();
      if (cut[u] || !node[u]->is_op()) continue;
      for (int a : arg_nodes(*node[u]))
        if (!in_bwd[a]) in_bwd[a] = true, stack.push_back(a);
    }
  }
  for (int v = 0; v < n; ++v) kept[v] = cut[v] && in_bwd[v];
  for (int v = 0; v < n; ++v) {
    SINTER_INTERNAL_ASSERT(!in_bwd[v] || kept[v] || tangent_dep[v] || node[v]->is_op() ||
                               node[v]->kind == NodeKind::kConstant,
                           "partition: the backward reads input %{} that the cut did not keep", v);
    if (in_bwd[v] && !kept[v] && !tangent_dep[v] && node[v]->is_op()) ++r.recomputed_ops;
  }

  // The forward: every non-tangent input, then what its outputs and the kept values need.
  std::vector<std::vector<Tensor>> fvals(n);
  r.forward.set_shape_env(joint.shape_env());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!spec.tangent[i]) fvals[inputs[i]->id] = {r.forward.add_input(inputs[i]->name, inputs[i]->meta())};
  std::vector<int> kept_ids;
  for (int v = 0; v < n; ++v)
    if (kept[v]) kept_ids.push_back(v);
  std::vector<bool> in_fwd(n, false);
  std::vector<int> fwd_need = fwd_roots;
  fwd_need.insert(fwd_need.end(), kept_ids.begin(), kept_ids.end());
  mark(fwd_need, in_fwd);
  copy_nodes(joint, in_fwd, r.forward, fvals);
  std::vector<Tensor> fwd_outs;
  for (int p : spec.forward_outputs) {
    const TraceState* tr = trace_of(outputs[p]);
    fwd_outs.push_back(fvals[tr->node].at(tr->output));
  }
  std::vector<std::string> kept_text;
  for (int v : kept_ids) {
    for (const Tensor& t : fvals[v]) {
      if (!t.defined()) continue;
      fwd_outs.push_back(t);
      ++r.num_kept;
    }
    if (!is_free(v)) r.kept_bytes += bytes_of(*node[v]);
    kept_text.push_back(fmt::format("%{} ({}, {})", v, node[v]->op_name(), graph_detail::meta_str(node[v]->meta())));
  }
  for (int v = 0; v < n; ++v)
    if (boundary[v] && node[v]->kind != NodeKind::kConstant && !is_free(v)) r.kept_bytes_naive += bytes_of(*node[v]);
  r.forward.set_outputs(std::move(fwd_outs));

  // The backward's inputs: kept values, tangents, then carriers of the symbols nothing else brings in.
  std::vector<std::vector<Tensor>> bvals(n);
  r.backward.set_shape_env(joint.shape_env());
  std::vector<TensorMeta> bwd_input_metas;
  for (int v : kept_ids)
    for (size_t k = 0; k < node[v]->outputs.size(); ++k) {
      const Tensor& t = node[v]->outputs[k];
      bvals[v].push_back(t.defined() ? r.backward.add_input(fmt::format("kept{}", v), t.meta()) : Tensor());
      if (t.defined()) bwd_input_metas.push_back(t.meta());
    }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (spec.tangent[i]) {
      bvals[inputs[i]->id] = {r.backward.add_input(inputs[i]->name, inputs[i]->meta())};
      bwd_input_metas.push_back(inputs[i]->meta());
    }
  if (joint.shape_env() && joint.shape_env()->num_symbols() > 0) {
    std::set<int64_t> used, bound;
    for (int v = 0; v < n; ++v) {
      if (!in_bwd[v] || !node[v]->is_op() || kept[v]) continue;
      for (const Tensor& t : node[v]->outputs)
        if (t.defined()) collect_symbols(t.sizes(), used), collect_symbols(t.strides(), used);
      for (const Value& a : node[v]->args) collect_symbols(a, used);
    }
    for (const TensorMeta& m : bwd_input_metas) {
      collect_symbols(m.strides, used);
      for (const SymInt& s : m.sizes)
        if (s.is_symbolic() && s.expr()->is_symbol()) bound.insert(s.expr()->symbol_id());
        else if (s.is_symbolic()) collect_symbols(SymIntList{s}, used);
    }
    for (int64_t id : used)
      if (!bound.count(id)) {
        r.carried_symbols.push_back(id);
        SymInt s(sym::make_symbol(id), joint.shape_env()->hint(id));
        r.backward.add_input(fmt::format("sym{}", id), TensorMeta{{s}, {0}, 0, kInt64, kCPU});
      }
  }
  copy_nodes(joint, in_bwd, r.backward, bvals);
  std::vector<Tensor> bwd_outs;
  for (int p : spec.backward_outputs) {
    const TraceState* tr = trace_of(outputs[p]);
    bwd_outs.push_back(bvals[tr->node].at(tr->output));
  }
  r.backward.set_outputs(std::move(bwd_outs));
  r.summary = fmt::format("kept {} value{} ({} bytes; keeping every forward value the backward reads: {} bytes), "
                          "recomputed {} op{} in the backward{}{}",
                          kept_ids.size(), kept_ids.size() == 1 ? "" : "s", r.kept_bytes, r.kept_bytes_naive,
                          r.recomputed_ops, r.recomputed_ops == 1 ? "" : "s", kept_text.empty() ? "" : ": ",
                          graph_detail::join(kept_text, ", "));
  return r;
}

}  // namespace sinter::passes
