// The reference executor: runs a graph node by node through the eager kernels. Symbolic sizes take their values
// from the real inputs, and every symbolic int argument is evaluated with them, so one graph serves every shape
// its symbols allow. aot_eager and the tests compare against this.
#include <fmt/format.h>

#include "graph/graph_util.h"
#include "ops/dispatch.h"
#include "support/check.h"
#include "symbolic/expr.h"

namespace sinter {
namespace {

using graph_detail::trace_of;

class Interpreter {
 public:
  // Values live in one flat array: node n's outputs start at first_[n] (a per-node vector would cost an
  // allocation per node and call, which the per-call overhead of graph breaks pays on every op).
  explicit Interpreter(const Graph& g) : g_(g), first_(g.num_nodes() + 1, 0) {
    for (const Node& n : g_.nodes()) first_[n.id + 1] = first_[n.id] + static_cast<int>(n.outputs.size());
    values_.resize(first_.back());
  }

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) {
    bind_inputs(inputs);
    // The last node that uses each value; values nobody uses are dropped as soon as they are made.
    std::vector<int> last_use(first_.back(), -1);
    for (const Node& n : g_.nodes()) {
      graph_detail::for_each_tensor(n.args, [&](const Tensor& t) {
        SINTER_CHECK(g_.contains(t), "interpret: node {} uses a tensor that is not a value of this graph", n.id);
        last_use[slot(t)] = n.id;
      });
    }
    std::vector<Tensor> result;
    Args args;
    for (const Node& n : g_.nodes()) {
      switch (n.kind) {
        case NodeKind::kInput: break;  // bound above
        case NodeKind::kConstant: values_[first_[n.id]] = n.constant; break;
        case NodeKind::kOutput:
          for (const Value& v : n.args) result.push_back(lookup(v.tensor()));
          return result;
        case NodeKind::kOp: {
          args.clear();
          args.reserve(n.args.size());
          for (const Value& v : n.args) args.push_back(substitute(v));
          std::vector<Tensor> outs;
          if (inputs_as_recorded_ && replayable(n)) {
            outs.reserve(n.outputs.size());
            for (const Tensor& o : n.outputs) outs.push_back(empty_from_meta(o.meta()));
            run_kernel_into(n.op, args, outs, n.loc);
          } else {
            outs = run_eager(n.op, args, n.loc);
          }
          SINTER_CHECK(outs.size() == n.outputs.size(), "interpret: {} returned {} outputs, the graph records {}",
                       n.op_name(), outs.size(), n.outputs.size());
          for (size_t k = 0; k < outs.size(); ++k) values_[first_[n.id] + k] = std::move(outs[k]);
          break;
        }
      }
      // Free what this node was the last to read, and what nobody reads.
      graph_detail::for_each_tensor(n.args, [&](const Tensor& t) {
        int s = slot(t);
        if (last_use[s] == n.id) values_[s] = Tensor();
      });
      for (int s = first_[n.id]; s < first_[n.id + 1]; ++s)
        if (last_use[s] < 0) values_[s] = Tensor();
    }
    throw Error("interpret: the graph has no output node");
  }

 private:
  void bind_inputs(const std::vector<Tensor>& inputs) {
    std::vector<const Node*> nodes = g_.input_nodes();
    SINTER_CHECK(inputs.size() == nodes.size(), "interpret: the graph takes {} inputs, got {}", nodes.size(),
                 inputs.size());
    struct Deferred {
      size_t input;
      size_t dim;
    };
    std::vector<Deferred> compound;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i];
      const TensorMeta& m = nodes[i]->meta();
      // Formatted only when a check fails (SINTER_CHECK evaluates its message arguments lazily).
      auto who = [&] { return fmt::format("interpret: input '{}' (#{})", nodes[i]->name, i); };
      SINTER_CHECK(t.defined(), "{} is an undefined tensor", who());
      SINTER_CHECK(t.dtype() == m.dtype, "{} must be {}, got {}", who(), dtype_name(m.dtype), dtype_name(t.dtype()));
      SINTER_CHECK(t.device() == m.device, "{} must be on {}, got {}", who(), m.device.str(), t.device().str());
      SINTER_CHECK(t.dim() == static_cast<int64_t>(m.sizes.size()), "{} must have {} dims ({}), got {} dims {}",
                   who(), m.sizes.size(), graph_detail::meta_str(m), t.dim(), t.sizes().str());
      for (size_t d = 0; d < m.sizes.size(); ++d) {
        const SymInt& want = m.sizes[d];
        int64_t got = t.sizes()[d].hint();
        if (!want.is_symbolic()) {
          SINTER_CHECK(want.hint() == got, "{} dim {} must be {}, got {} (sizes {})", who(), d, want.hint(), got,
                       t.sizes().str());
        } else if (want.expr()->is_symbol()) {
          int64_t id = want.expr()->symbol_id();
          if (id >= static_cast<int64_t>(symbols_.size())) {
            symbols_.resize(id + 1, 0);
            bound_.resize(id + 1, false);
            sources_.resize(id + 1);
          }
          if (!bound_[id]) {
            symbols_[id] = got;
            bound_[id] = true;
            sources_[id] = fmt::format("input '{}' dim {}", nodes[i]->name, d);
          } else {
            SINTER_CHECK(symbols_[id] == got, "{} dim {} is s{}, which is {} (from {}), but got {}", who(), d, id,
                         symbols_[id], sources_[id], got);
          }
        } else {
          compound.push_back({i, d});
        }
      }
      values_[first_[nodes[i]->id]] = t;
      inputs_as_recorded_ = inputs_as_recorded_ && t.has_storage() && !m.strides.any_symbolic() &&
                            graph_detail::same_symints(t.strides(), m.strides) &&
                            graph_detail::same_symints(t.sizes(), m.sizes);
    }
    for (const Deferred& c : compound) {
      const SymInt& want = nodes[c.input]->meta().sizes[c.dim];
      int64_t value = evaluate(want, fmt::format("input '{}' dim {}", nodes[c.input]->name, c.dim));
      int64_t got = inputs[c.input].sizes()[c.dim].hint();
      SINTER_CHECK(value == got, "interpret: input '{}' (#{}) dim {} is {} = {}, but got {}", nodes[c.input]->name,
                   c.input, c.dim, want.str(), value, got);
    }
  }

  int64_t evaluate(const SymInt& v, const std::string& where) {
    for (int64_t id : sym::free_symbols(v.expr()))
      SINTER_CHECK(id < static_cast<int64_t>(bound_.size()) && bound_[id],
                   "interpret: {} is {}, but s{} is not the size of any input dimension, so its value is unknown",
                   where, v.str(), id);
    return sym::evaluate(*v.expr(), symbols_);
  }

  SymInt concrete(const SymInt& v) {
    return v.is_symbolic() ? SymInt(evaluate(v, "an argument")) : v;
  }

  Value substitute(const Value& v) {
    if (v.is_int()) return v.sym_int().is_symbolic() ? Value(concrete(v.sym_int())) : v;
    if (v.is_int_list()) {
      if (!v.int_list().any_symbolic()) return v;
      SymIntList out;
      for (const SymInt& s : v.int_list()) out.push_back(concrete(s));
      return Value(std::move(out));
    }
    return graph_detail::map_tensors(v, [&](const Tensor& t) { return lookup(t); });
  }

  // Whether the node's recorded output metas are what its shape rule would say now, so the kernel can write
  // into outputs allocated from them directly: true for concrete metas of an op that makes new tensors (not
  // a view, not in place, not data-dependent) when the inputs have the recorded layouts.
  static bool replayable(const Node& n) {
    const OpDef& def = op_def(n.op);
    if ((def.flags & kDataDependent) || def.schema.is_view() || def.schema.is_inplace() || n.outputs.empty())
      return false;
    for (const Tensor& o : n.outputs) {
      const TensorMeta& m = o.meta();
      if (m.sizes.any_symbolic() || m.strides.any_symbolic()) return false;
    }
    return true;
  }

  int slot(const Tensor& proxy) const {
    const TraceState* tr = trace_of(proxy);
    return first_[tr->node] + tr->output;
  }

  const Tensor& lookup(const Tensor& proxy) {
    const Tensor& t = values_[slot(proxy)];
    SINTER_INTERNAL_ASSERT(t.defined(), "interpret: value of node {} was freed before its last use",
                           trace_of(proxy)->node);
    return t;
  }

  const Graph& g_;
  bool inputs_as_recorded_ = true;  // every input has data and the recorded sizes and strides
  std::vector<int> first_;     // per node: the slot of its first output in values_
  std::vector<Tensor> values_;  // per slot: the real tensor
  std::vector<int64_t> symbols_;             // symbol id -> value
  std::vector<bool> bound_;
  std::vector<std::string> sources_;  // where each symbol's value came from, for messages
};

}  // namespace

std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs) {
  return Interpreter(g).run(inputs);
}

}  // namespace sinter
