// Rebuilding outputs that are views (see output_views.h).
#include "capture/output_views.h"

#include <unordered_map>

#include "graph/graph_util.h"
#include "ops/op_table.h"

namespace sinter::capture {

namespace {

// A view op whose only tensor argument is the viewed one (every view op of the table; anything else is taken as making
// a new value).
bool plain_view(const Node& n) {
  if (!n.is_op() || !op_def(n.op).schema.is_view() || n.args.empty() || !n.args[0].is_tensor()) return false;
  for (size_t i = 1; i < n.args.size(); ++i)
    if (n.args[i].is_tensor() || n.args[i].is_tensor_list()) return false;
  return true;
}

// The value `t` is a chain of views of: itself when it is not a view.
Tensor root_of(const Graph& g, Tensor t) {
  for (const Node* n = &g.producer(t); plain_view(*n); n = &g.producer(t)) t = n->args[0].tensor();
  return t;
}

// The same value in a clone of `g` (clones keep node ids and output positions).
Tensor in_clone(const Graph& clone, const Tensor& t) {
  const TraceState* tr = graph_detail::trace_of(t);
  return clone.node(tr->node).output(tr->output);
}

}  // namespace

OutputViews plan_output_views(Graph& graph, int num_user_outputs) {
  OutputViews plan;
  std::vector<Tensor> outputs = graph.outputs();
  const int n = std::min<int>(num_user_outputs, static_cast<int>(outputs.size()));
  std::vector<Tensor> roots;
  std::unordered_map<const TensorImpl*, std::vector<int>> members;  // computed root -> the outputs viewing it
  std::vector<std::pair<int, Tensor>> from_inputs;                  // output, the input it is a view of
  for (int i = 0; i < n; ++i) {
    roots.push_back(root_of(graph, outputs[i]));
    const Node& producer = graph.producer(roots[i]);
    if (producer.kind == NodeKind::kInput) {
      if (!roots[i].is_same(outputs[i])) from_inputs.push_back({i, roots[i]});  // an input itself is returned as is
    } else if (producer.is_op()) {
      members[roots[i].impl()].push_back(i);
    }
  }
  // The outputs rebuilt: views of an input (the chain starts there), then views of a group's root, which the
  // backend returns once at the group's slot (the views graph takes one base input per such root).
  std::vector<int> rebuilds;
  std::vector<Tensor> base_roots;  // per base: the root it stands for
  std::vector<Tensor> new_outputs = outputs;
  for (const auto& [i, input] : from_inputs) {
    rebuilds.push_back(i);
    new_outputs[i] = input;
  }
  for (int i = 0; i < n; ++i) {
    auto it = members.find(roots[i].impl());
    if (it == members.end() || it->second.front() != i) continue;  // handled with the group's first member
    const std::vector<int>& group = it->second;
    if (group.size() < 2) continue;  // a lone view of a value nobody else sees aliases nothing visible
    // The backend returns the root once, at the slot of the first output that is the root (or the first one).
    int slot = group.front();
    for (int k : group)
      if (outputs[k].is_same(roots[i])) {
        slot = k;
        break;
      }
    bool has_base = false;
    for (int k : group) {
      new_outputs[k] = roots[i];
      if (k != slot && outputs[k].is_same(roots[i])) {
        plan.repeats.push_back({k, slot});
        continue;
      }
      if (outputs[k].is_same(roots[i])) continue;  // the slot holds the root itself
      if (!has_base) {
        has_base = true;
        plan.base_outputs.push_back(slot);
        base_roots.push_back(roots[i]);
      }
      rebuilds.push_back(k);
    }
  }
  if (rebuilds.empty()) return plan;
  // The chains, in a clone: map every value before adding inputs renumbers the clone's nodes.
  Graph views = graph.clone();
  std::vector<Tensor> rebuilt_values, cloned_roots;
  for (int k : rebuilds) rebuilt_values.push_back(in_clone(views, outputs[k]));
  plan.rebuilt = std::move(rebuilds);
  for (const Tensor& root : base_roots) cloned_roots.push_back(in_clone(views, root));
  Rewriter rw(views);
  for (const Tensor& root : cloned_roots) rw.replace_all_uses(root, views.add_input("view_base", root.meta()));
  views.set_outputs(rebuilt_values);
  // Keep the inputs and the view chains only (erasing from the back, each node's users are gone first).
  for (int id = views.num_nodes() - 1; id >= 0; --id) {
    const Node& node = views.node(id);
    if (node.kind == NodeKind::kInput || node.kind == NodeKind::kOutput) continue;
    bool used = false;
    for (const Tensor& o : node.outputs) used = used || !views.users(o).empty();
    if (!used) rw.erase(node);
  }
  plan.views = std::make_shared<const Graph>(std::move(views));
  graph.set_outputs(std::move(new_outputs));
  return plan;
}

void rebuild_output_views(const OutputViews& plan, const std::vector<Tensor>& inputs, std::vector<Tensor>& outs) {
  if (plan.views) {
    std::vector<Tensor> args = inputs;
    for (int b : plan.base_outputs) args.push_back(outs[b]);
    std::vector<Tensor> views = interpret(*plan.views, args);
    for (size_t k = 0; k < views.size(); ++k) outs[plan.rebuilt[k]] = std::move(views[k]);
  }
  for (const auto& [k, earlier] : plan.repeats) outs[k] = outs[earlier];
}

}  // namespace sinter::capture
