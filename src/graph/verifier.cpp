// The graph verifier: checks the invariants every pass may rely on and names the first node that breaks one.
// Shape rules are re-run under a scratch copy of the graph's ShapeEnv, so verifying records no guards.
#include <fmt/format.h>

#include <optional>
#include <set>

#include "graph/graph_util.h"
#include "ops/dispatch.h"
#include "symbolic/shape_env.h"

namespace sinter {
namespace {

using graph_detail::trace_of;

class Verifier {
 public:
  explicit Verifier(const Graph& g) : g_(g) {
    if (g.shape_env()) {
      scratch_.emplace(*g.shape_env());
      scope_.emplace(&*scratch_);
    }
  }

  void run() {
    if (!g_.has_output()) throw Error("graph verification failed: the graph has no output node (call set_outputs)");
    int position = 0;
    bool past_inputs = false;
    for (const Node& n : g_.nodes()) {
      if (n.id != position) fail(n, fmt::format("its id is {} but it is at position {}", n.id, position));
      ++position;
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        const TraceState* tr = trace_of(n.outputs[k]);
        if (!tr || tr->graph != g_.serial() || tr->node != n.id || tr->output != static_cast<int>(k))
          fail(n, fmt::format("output {} is not a proxy of this node", k));
      }
      if (n.kind == NodeKind::kInput && past_inputs) fail(n, "an input comes after a non-input node");
      past_inputs = past_inputs || n.kind != NodeKind::kInput;
      switch (n.kind) {
        case NodeKind::kInput: named_value(n); break;
        case NodeKind::kConstant:
          named_value(n);
          if (!n.constant.defined() || !n.constant.has_storage()) fail(n, "a constant without a real tensor");
          if (n.constant.dtype() != n.meta().dtype || !graph_detail::same_symints(n.constant.sizes(), n.meta().sizes))
            fail(n, fmt::format("the constant's tensor is {} but the node says {}",
                                graph_detail::meta_str(n.constant.meta()), graph_detail::meta_str(n.meta())));
          break;
        case NodeKind::kOutput:
          if (n.id != g_.num_nodes() - 1) fail(n, "the output node is not the last node");
          if (!n.outputs.empty()) fail(n, "the output node has outputs");
          for (size_t i = 0; i < n.args.size(); ++i) {
            if (!n.args[i].is_tensor()) fail(n, fmt::format("returned value {} is not a tensor", i));
            argument(n, n.args[i].tensor(), fmt::format("returned value {}", i));
          }
          break;
        case NodeKind::kOp: op(n); break;
      }
    }
  }

 private:
  void named_value(const Node& n) {
    if (n.outputs.size() != 1) fail(n, "inputs and constants have exactly one output");
    if (!n.args.empty()) fail(n, "inputs and constants take no arguments");
    if (n.name.empty()) fail(n, "inputs and constants need a name");
    if (!names_.insert(n.name).second) fail(n, fmt::format("the name '{}' is used twice", n.name));
  }

  void op(const Node& n) {
    const OpDef& def = op_def(n.op);
    const std::vector<SchemaArg>& schema = def.schema.args;
    if (n.args.size() != schema.size())
      fail(n, fmt::format("{} arguments, but the schema has {}: {}", n.args.size(), schema.size(), def.schema.str()));
    Args normalized = n.args;
    try {
      normalize_args(def, normalized);
    } catch (const Error& e) {
      fail(n, fmt::format("the arguments do not match the schema {}: {}", def.schema.str(), e.what()));
    }
    for (size_t i = 0; i < schema.size(); ++i) {
      if (!graph_detail::same_value(normalized[i], n.args[i]))
        fail(n, fmt::format("argument '{}' is a {}, not the normalized form of {}", schema[i].name,
                            n.args[i].kind_name(), schema[i].type_str));
      graph_detail::for_each_tensor(n.args[i], [&](const Tensor& t) {
        argument(n, t, fmt::format("argument '{}'", schema[i].name));
      });
    }
    std::vector<Tensor> expected;
    try {
      expected = run_meta(n.op, n.args);
    } catch (const Error& e) {
      fail(n, fmt::format("the shape rule rejects the arguments: {}", e.what()));
    }
    if (expected.size() != n.outputs.size())
      fail(n, fmt::format("the shape rule gives {} outputs, the node has {}", expected.size(), n.outputs.size()));
    for (size_t k = 0; k < expected.size(); ++k)
      if (!equivalent(expected[k].meta(), n.meta(k)))
        fail(n, fmt::format("output {} is recorded as {} but the shape rule gives {}", k,
                            graph_detail::meta_str(n.meta(k)), graph_detail::meta_str(expected[k].meta())));
  }

  // Equal metas, or equal once what the guards established since the node was recorded is applied to both
  // (a size recorded as s1 before a guard proved s1 == s0 is rebuilt as s0).
  bool equivalent(const TensorMeta& a, const TensorMeta& b) const {
    if (graph_detail::same_meta(a, b)) return true;
    if (!scratch_ || a.dtype != b.dtype || a.device != b.device) return false;
    auto same = [&](const SymInt& x, const SymInt& y) {
      return scratch_->simplify(sym::expr_of(x)) == scratch_->simplify(sym::expr_of(y));
    };
    auto same_list = [&](const SymIntList& x, const SymIntList& y) {
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!same(x[i], y[i])) return false;
      return true;
    };
    return same_list(a.sizes, b.sizes) && same_list(a.strides, b.strides) && same(a.offset, b.offset);
  }

  // A use: a value of this graph made by an earlier node.
  void argument(const Node& n, const Tensor& t, const std::string& what) {
    if (!g_.contains(t)) {
      fail(n, fmt::format("{} is {}", what,
                          trace_of(t) ? "a value of another graph or of an erased node"
                                      : "a real tensor, not a value of this graph"));
    }
    int def = trace_of(t)->node;
    if (def >= n.id) fail(n, fmt::format("{} is used before it is defined (by node {})", what, def));
  }

  [[noreturn]] void fail(const Node& n, const std::string& what) {
    throw Error(fmt::format("graph verification failed at node {} `{}`: {}", n.id, graph_detail::node_str(g_, n),
                            what));
  }

  const Graph& g_;
  std::set<std::string> names_;
  std::optional<sym::ShapeEnv> scratch_;
  std::optional<sym::ShapeEnvScope> scope_;
};

}  // namespace

void verify(const Graph& g) { Verifier(g).run(); }

}  // namespace sinter
