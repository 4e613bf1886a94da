// The Rewriter: every change to a built graph. Each edit renumbers the nodes it shifted, so ids stay positions and
// the order stays topological; edits that would break that (a use before its definition) throw instead.
#include <fmt/format.h>

#include <optional>

#include "graph/graph_util.h"
#include "ops/dispatch.h"
#include "support/check.h"
#include "symbolic/shape_env.h"

namespace sinter {

using graph_detail::trace_of;

Node& Rewriter::mutable_node(const Node& node) const {
  SINTER_CHECK(node.id >= 0 && node.id < g_.num_nodes() && g_.nodes_[node.id].get() == &node,
               "the node (id {}) does not belong to this graph", node.id);
  return *g_.nodes_[node.id];
}

std::vector<Tensor> Rewriter::insert_op_before(const Node& anchor, OpId op, Args args, Loc loc) {
  Node& a = mutable_node(anchor);
  SINTER_CHECK(a.kind == NodeKind::kOp || a.kind == NodeKind::kOutput,
               "ops are inserted before an op or the output node, not before an {}", a.op_name());
  return g_.insert_op(a.id, op, std::move(args), loc.line() != 0 ? loc : a.loc);
}

Tensor Rewriter::insert_op1_before(const Node& anchor, OpId op, Args args, Loc loc) {
  graph_detail::check_single_output(op, "insert_op_before");
  return insert_op_before(anchor, op, std::move(args), loc)[0];
}

int Rewriter::replace_all_uses(const Tensor& old_value, const Tensor& new_value) {
  g_.check_value(old_value, "the value to replace");
  g_.check_value(new_value, "the replacement");
  if (old_value.is_same(new_value)) return 0;
  const TensorMeta &o = old_value.meta(), &n = new_value.meta();
  // Sizes may be spelled with different symbols that the guards made equal (s0 and s2 after s0 == s2).
  auto same_sizes = [&] {
    if (o.sizes.size() != n.sizes.size()) return false;
    for (size_t i = 0; i < o.sizes.size(); ++i)
      if (!graph_detail::known_equal(o.sizes[i], n.sizes[i], g_.shape_env().get())) return false;
    return true;
  };
  SINTER_CHECK(o.dtype == n.dtype && o.device == n.device && same_sizes(),
               "replace_all_uses: the replacement {} differs from the value it replaces {}", graph_detail::meta_str(n),
               graph_detail::meta_str(o));
  int def = trace_of(new_value)->node;
  int count = 0;
  for (auto& node : g_.nodes_) {
    if (node->id == def) continue;  // the replacement's own node may read the old value (x -> f(x))
    for (Value& v : node->args) {
      int uses = 0;
      graph_detail::for_each_tensor(v, [&](const Tensor& t) { uses += t.is_same(old_value); });
      if (!uses) continue;
      SINTER_CHECK(node->id > def,
                   "replace_all_uses: node {} uses the old value but comes before node {}, which makes the replacement",
                   node->id, def);
      v = graph_detail::map_tensors(v, [&](const Tensor& t) { return t.is_same(old_value) ? new_value : t; });
      count += uses;
    }
  }
  return count;
}

void Rewriter::erase(const Node& node) {
  Node& n = mutable_node(node);
  SINTER_CHECK(n.kind != NodeKind::kOutput, "the output node cannot be erased (use Graph::set_outputs)");
  for (const Tensor& out : n.outputs) {
    std::vector<const Node*> users = g_.users(out);
    SINTER_CHECK(users.empty(), "node {} ({}) cannot be erased: its value is used by node {}", n.id, n.op_name(),
                 users.empty() ? -1 : users[0]->id);
  }
  for (Tensor& out : n.outputs) out.impl()->trace->node = -1;  // stale proxies no longer name a node
  int id = n.id;
  g_.nodes_.erase(g_.nodes_.begin() + id);
  g_.renumber(id);
}

void Rewriter::set_args(const Node& node, Args args) {
  Node& n = mutable_node(node);
  SINTER_CHECK(n.kind == NodeKind::kOp, "set_args applies to op nodes, not to an {}", n.op_name());
  // Record the new call just before the old one (the graph's add_op machinery checks and shapes it), move its
  // arguments and metas into the old node, whose proxies the users hold, and drop the new node.
  int pos = n.id;
  std::vector<Tensor> fresh = g_.insert_op(pos, n.op, std::move(args), n.loc);
  Node& made = *g_.nodes_[pos];
  bool same_count = fresh.size() == n.outputs.size();
  if (same_count) {
    n.args = std::move(made.args);
    for (size_t k = 0; k < fresh.size(); ++k) n.outputs[k].impl()->meta = fresh[k].meta();
  }
  for (Tensor& out : made.outputs) out.impl()->trace->node = -1;
  g_.nodes_.erase(g_.nodes_.begin() + pos);
  g_.renumber(pos);
  SINTER_CHECK(same_count, "set_args: {} now gives {} outputs instead of {}", n.op_name(), fresh.size(),
               n.outputs.size());
}

int Rewriter::eliminate_dead_code() {
  std::vector<std::vector<int>> uses(g_.num_nodes());
  for (const auto& n : g_.nodes_) uses[n->id].assign(n->outputs.size(), 0);
  for (const auto& n : g_.nodes_)
    graph_detail::for_each_tensor(n->args, [&](const Tensor& t) {
      if (g_.contains(t)) ++uses[trace_of(t)->node][trace_of(t)->output];
    });
  std::vector<bool> dead(g_.num_nodes(), false);
  int removed = 0;
  for (int i = g_.num_nodes() - 1; i >= 0; --i) {
    const Node& n = *g_.nodes_[i];
    if (n.kind != NodeKind::kOp && n.kind != NodeKind::kConstant) continue;
    bool used = false;
    for (int u : uses[i]) used = used || u > 0;
    if (used || has_side_effects(n)) continue;
    dead[i] = true;
    ++removed;
    graph_detail::for_each_tensor(n.args, [&](const Tensor& t) {
      if (g_.contains(t)) --uses[trace_of(t)->node][trace_of(t)->output];
    });
  }
  if (!removed) return 0;
  std::vector<std::unique_ptr<Node>> kept;
  for (auto& n : g_.nodes_) {
    if (dead[n->id]) {
      for (Tensor& out : n->outputs) out.impl()->trace->node = -1;
    } else {
      kept.push_back(std::move(n));
    }
  }
  g_.nodes_ = std::move(kept);
  g_.renumber(0);
  return removed;
}

void Rewriter::recompute_metas() {
  for (auto& n : g_.nodes_)
    if (n->kind == NodeKind::kOp) recompute_meta(*n);
}

void Rewriter::recompute_meta(const Node& node) {
  Node& n = mutable_node(node);
  SINTER_CHECK(n.kind == NodeKind::kOp, "recompute_meta applies to op nodes, not to an {}", n.op_name());
  std::optional<sym::ShapeEnvScope> scope;
  if (g_.shape_env()) scope.emplace(g_.shape_env().get());
  std::vector<Tensor> metas;
  try {
    metas = run_meta(n.op, n.args);
  } catch (const Error& e) {
    throw Error(fmt::format("recompute_metas: node {} `{}`: {}", n.id, graph_detail::node_str(g_, n), e.what()));
  }
  SINTER_CHECK(metas.size() == n.outputs.size(), "recompute_metas: node {} now gives {} outputs instead of {}", n.id,
               metas.size(), n.outputs.size());
  for (size_t k = 0; k < metas.size(); ++k) n.outputs[k].impl()->meta = metas[k].meta();
}

void Rewriter::set_output(size_t i, const Tensor& value) {
  Node& out = *g_.nodes_.back();
  SINTER_CHECK(out.kind == NodeKind::kOutput && i < out.args.size(), "set_output: the graph has no output {}", i);
  g_.check_value(value, "the new output");
  const TensorMeta &o = out.args[i].tensor().meta(), &n = value.meta();
  SINTER_CHECK(o.dtype == n.dtype && o.device == n.device && o.sizes.size() == n.sizes.size(),
               "set_output: the new output {} differs in dtype, device or rank", i);
  out.args[i] = value;
}

}  // namespace sinter
