// ai.onnx.preview.training::Gradient: reverse-mode differentiation over the imported graph, by sinter's autograd
// (one implementation of reverse mode). The attributes name the differentiated computation: `y` as a function of
// the tensors named in `xs` (differentiated) and `zs` (held fixed); the node's inputs are the values at which it is
// evaluated (xs' then zs'), and its i-th output is dy/dxs[i]. The importer re-runs the part of the enclosing graph
// between those tensors and y with the inputs substituted, the xs as leaves that require grad, so autograd records
// it; then autograd::grad of y (seeded with ones: a y of several elements is differentiated as their sum) gives the
// outputs. Every operator whose sinter ops have a row in the derivative table is differentiated; one without is
// the Error that names the op. Under compile() the forward and backward ops are captured like the others.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "frontends/onnx/importer.h"
#include "sinter/autograd.h"

namespace sinter::onnx {
namespace {

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

  // The substituted values: the xs as leaves that require grad, so that autograd records what they reach.
  AutoGradMode grad_on(true);
  std::map<std::string, Val> values;
  std::vector<Tensor> leaves;
  for (size_t i = 0; i < xs.size() + zs.size(); ++i) {
    const std::string& name = i < xs.size() ? xs[i] : zs[i - xs.size()];
    Val v{c.in(i), c.known(i), 0};
    if (i < xs.size()) {
      if (!floating(v))
        c.fail(fmt::format("xs '{}' is {}: only floating tensors are differentiated", name, dtype_name(v.t.dtype())));
      v.t = v.t.detach().requires_grad_(true);
      v.known = false;  // a leaf of this derivative, not a constant to fold
      leaves.push_back(v.t);
    }
    values[name] = v;
  }

  // The nodes y depends on, stopping at the substituted names.
  Executor& exec = c.executor();
  const proto::Graph& g = exec.current_graph();
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
  for (size_t k : needed) {  // std::set iterates in graph (topological) order
    const proto::Node& n = g.nodes[k];
    bool touched = false;
    for (const std::string& in_name : n.inputs) touched = touched || values.count(in_name);
    bool available = std::all_of(n.outputs.begin(), n.outputs.end(),
                                 [&](const std::string& o) { return o.empty() || exec.find(o); });
    if (!touched && available) continue;  // its value in the graph is the value here
    if (has_subgraph(n))
      c.fail(fmt::format("node '{}' ({}) lies between xs/zs and y and runs subgraphs, which Gradient does not "
                         "differentiate through", n.name, n.op_type));
    std::vector<Val> ins;
    for (const std::string& in_name : n.inputs) ins.push_back(value_of(in_name));
    std::vector<Val> outs = exec.eval_node(n, ins);
    for (size_t i = 0; i < n.outputs.size() && i < outs.size(); ++i)
      if (!n.outputs[i].empty()) values[n.outputs[i]] = outs[i];
  }

  // Backward, through the derivative table.
  Val yv = value_of(y);
  if (!floating(yv)) c.fail(fmt::format("y '{}' is {}: only floating values are differentiated", y, dtype_name(yv.t.dtype())));
  std::vector<Tensor> grads(leaves.size());
  if (yv.t.requires_grad()) {
    try {
      grads = autograd::grad({yv.t}, leaves, {ones_like(yv.t)}, /*retain_graph=*/false, /*create_graph=*/false,
                             /*allow_unused=*/true);
    } catch (const Error& e) {
      c.fail(fmt::format("differentiating y '{}': {}", y, e.what()));
    }
  }
  std::vector<Tensor> outs;
  for (size_t i = 0; i < c.node().outputs.size(); ++i)
    outs.push_back(grads[i].defined() ? cast_to(grads[i].detach(), c.in(i).dtype()) : zeros_like(c.in(i)));
  return outs;
}

}  // namespace

void register_gradient_ops(OpTable& t) {
  // `host`: it re-runs nodes itself, which fold (or not) one by one.
  t["ai.onnx.preview.training::Gradient"] = {gradient, false, true};
}

}  // namespace sinter::onnx
