// The backward engine: from root edges to the nodes the gradients are wanted at, each node run once after every
// node that feeds it (most recently created first among the ready ones, as PyTorch), on the calling thread.
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "autograd/nodes.h"
#include "ops/autocast.h"
#include "sinter/ops.h"
#include "support/check.h"

namespace sinter {
namespace autograd {
namespace {

struct Target {
  Edge edge;
  size_t index;  // into the captured gradients
};

struct Task {
  bool keep_graph = false;
  bool create_graph = false;
  // grad(): gradients are captured at the targets and no AccumulateGrad runs. backward(inputs=...): only the
  // targets accumulate. Plain backward(): every leaf accumulates.
  bool capture_only = false;
  bool restricted = false;
  std::vector<Target> targets;
  std::vector<Tensor> captured;
};

struct NodeState {
  std::vector<Tensor> buffer;
  int deps = 0;
  bool needed = false;
};

void add_into(Tensor& slot, const Tensor& g) {
  if (!slot.defined()) {
    slot = g;
    return;
  }
  slot = add(slot, g);
}

// Every node reachable from the roots, children before parents.
std::vector<Node*> post_order(const std::vector<Edge>& roots) {
  std::vector<Node*> order;
  std::unordered_set<Node*> seen;
  std::vector<std::pair<Node*, size_t>> stack;
  for (const Edge& r : roots) {
    if (!r.valid() || !seen.insert(r.fn.get()).second) continue;
    stack.push_back({r.fn.get(), 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->next_edges().size()) {
        Node* child = n->next_edges()[next++].fn.get();
        if (child && seen.insert(child).second) stack.push_back({child, 0});
        continue;
      }
      order.push_back(n);
      stack.pop_back();
    }
  }
  return order;
}

void execute(const std::vector<Edge>& roots, const std::vector<Tensor>& root_grads, Task& task) {
  std::vector<Node*> order = post_order(roots);
  std::unordered_map<Node*, NodeState> state;
  state.reserve(order.size());
  std::unordered_set<Node*> target_nodes;
  for (const Target& t : task.targets) target_nodes.insert(t.edge.fn.get());
  // Which nodes must run: those with a path to a target (every node when nothing restricts).
  std::unordered_set<Node*> runs;
  for (Node* n : order) {
    NodeState& s = state[n];
    bool child_needed = false;
    for (const Edge& e : n->next_edges())
      if (e.valid() && state[e.fn.get()].needed) child_needed = true;
    const bool is_target = task.restricted ? target_nodes.count(n) > 0 : true;
    s.needed = child_needed || is_target;
    const bool is_leaf_sink = n->next_edges().empty();
    if (child_needed || (is_target && !task.capture_only && (is_leaf_sink || !task.restricted))) runs.insert(n);
  }
  for (Node* n : order) {
    if (!state[n].needed) continue;
    for (const Edge& e : n->next_edges())
      if (e.valid() && state[e.fn.get()].needed) ++state[e.fn.get()].deps;
  }
  auto later_first = [](Node* a, Node* b) { return a->sequence_nr() < b->sequence_nr(); };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later_first)> ready(later_first);
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!roots[i].valid()) continue;
    NodeState& s = state[roots[i].fn.get()];
    if (s.buffer.empty()) s.buffer.resize(roots[i].fn->input_metas().size());
    add_into(s.buffer.at(roots[i].input_nr), root_grads[i]);
  }
  std::unordered_set<Node*> queued;
  for (const Edge& r : roots)
    if (r.valid() && state[r.fn.get()].needed && state[r.fn.get()].deps == 0 && queued.insert(r.fn.get()).second)
      ready.push(r.fn.get());

  AutoGradMode mode(task.create_graph);
  AutocastExcluded no_autocast;  // the backward runs in the dtypes its forward used
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    NodeState& s = state[n];
    s.buffer.resize(n->input_metas().size());
    for (const Target& t : task.targets)
      if (t.edge.fn.get() == n && s.buffer[t.edge.input_nr].defined())
        add_into(task.captured[t.index], s.buffer[t.edge.input_nr]);
    for (auto& [input_nr, weak] : n->retained())
      if (std::shared_ptr<TensorImpl> impl = weak.lock(); impl && s.buffer.at(input_nr).defined())
        accumulate_into(impl->grad, s.buffer[input_nr], task.create_graph);
    bool any = false;
    for (const Tensor& g : s.buffer) any = any || g.defined();
    std::vector<Tensor> outs;
    if (any && runs.count(n)) {
      if (!task.keep_graph) n->prepare_release();
      outs = n->apply(std::move(s.buffer));
      if (!task.keep_graph) n->release();
    }
    s.buffer.clear();
    for (size_t i = 0; i < n->next_edges().size(); ++i) {
      const Edge& e = n->next_edges()[i];
      if (!e.valid()) continue;
      NodeState& cs = state[e.fn.get()];
      if (!cs.needed) continue;
      if (i < outs.size() && outs[i].defined()) {
        const GradMeta& m = e.fn->input_metas().at(e.input_nr);
        SINTER_INTERNAL_ASSERT(outs[i].sizes() == m.sizes, "{} returned a gradient of shape {} for an input of shape {}",
                               n->name(), outs[i].sizes().str(), m.sizes.str());
        if (cs.buffer.empty()) cs.buffer.resize(e.fn->input_metas().size());
        add_into(cs.buffer[e.input_nr], outs[i]);
      }
      if (--cs.deps == 0 && queued.insert(e.fn.get()).second) ready.push(e.fn.get());
    }
  }
}

// The roots' gradients: given, or ones for a one-element root.
std::vector<Tensor> root_gradients(const std::vector<Tensor>& roots, const std::vector<Tensor>& given) {
  SINTER_CHECK(given.empty() || given.size() == roots.size(), "got {} gradients for {} tensors", given.size(),
               roots.size());
  std::vector<Tensor> out;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    SINTER_CHECK(r.defined(), "element {} of the tensors to differentiate is undefined", i);
    SINTER_CHECK(r.requires_grad(), "element {} of tensors does not require grad and does not have a grad_fn", i);
    Tensor g = i < given.size() ? given[i] : Tensor();
    if (!g.defined()) {
      SINTER_CHECK(r.numel().guard_int() == 1,
                   "grad can be implicitly created only for one-element outputs (element {} has shape {}); pass the "
                   "gradient of the output",
                   i, r.sizes().str());
      g = ones_like(r);
    }
    SINTER_CHECK(g.sizes() == r.sizes(), "mismatch in shape: grad_output[{}] has a shape of {} and output[{}] has a "
                 "shape of {}", i, g.sizes().str(), i, r.sizes().str());
    out.push_back(g);
  }
  return out;
}

std::vector<Edge> edges_of(const std::vector<Tensor>& tensors) {
  std::vector<Edge> out;
  for (const Tensor& t : tensors) out.push_back(gradient_edge(t));
  return out;
}

}  // namespace

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph, bool create_graph,
                         bool allow_unused) {
  std::vector<Tensor> root_grads = root_gradients(outputs, grad_outputs);
  Task task;
  task.keep_graph = retain_graph.value_or(create_graph);
  task.create_graph = create_graph;
  task.capture_only = true;
  task.restricted = true;
  for (size_t i = 0; i < inputs.size(); ++i) {
    SINTER_CHECK(inputs[i].defined() && inputs[i].requires_grad(), "input {} of grad() does not require grad", i);
    task.targets.push_back({gradient_edge(inputs[i]), i});
  }
  task.captured.resize(inputs.size());
  execute(edges_of(outputs), root_grads, task);
  for (size_t i = 0; i < inputs.size(); ++i)
    SINTER_CHECK(task.captured[i].defined() || allow_unused,
                 "input {} of grad() appears not to have been used in the graph; pass allow_unused=true if this is "
                 "what you want",
                 i);
  return task.captured;
}

void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors,
              std::optional<bool> retain_graph, bool create_graph, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> root_grads = root_gradients(tensors, grad_tensors);
  Task task;
  task.keep_graph = retain_graph.value_or(create_graph);
  task.create_graph = create_graph;
  task.restricted = !inputs.empty();
  for (size_t i = 0; i < inputs.size(); ++i) {
    SINTER_CHECK(inputs[i].defined() && inputs[i].requires_grad(), "input {} of backward() does not require grad", i);
    task.targets.push_back({gradient_edge(inputs[i]), i});
  }
  task.captured.resize(inputs.size());
  execute(edges_of(tensors), root_grads, task);
  // A non-leaf named in inputs keeps its gradient in .grad(), as PyTorch does.
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].is_leaf() && task.captured[i].defined())
      accumulate_into(inputs[i].impl()->grad, task.captured[i], create_graph);
}

}  // namespace autograd

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      const std::vector<Tensor>& inputs) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph, inputs);
}

}  // namespace sinter
