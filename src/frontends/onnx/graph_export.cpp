// Model::to_graph(): runs the executor once under a hook that records each op into a sinter Graph instead of
// running it. Graph inputs are the model's inputs (a named dim becomes a symbol, shared by every input that names
// it) then its initializers (or constants, with freeze); other real tensors the ops meet (folded constants)
// become constants. Host arithmetic on a symbolic size specialises it (a guard in the graph's ShapeEnv).
#include <fmt/format.h>

#include <unordered_map>

#include "frontends/onnx/importer.h"
#include "graph/graph_util.h"
#include "support/check.h"
#include "symbolic/shape_env.h"

namespace sinter::onnx {
namespace {

class Recorder : public DispatchHook {
 public:
  explicit Recorder(Graph& g) : g_(g) {}

  void bind(const Tensor& real, const Tensor& value) { mapped_[real.impl()] = value; }

  std::vector<Tensor> call(OpId op, const Args& args, const Loc& loc) override {
    Args a;
    a.reserve(args.size());
    for (const Value& v : args) a.push_back(graph_detail::map_tensors(v, [&](const Tensor& t) { return value_of(t); }));
    HookScope none(nullptr);  // the shape rules run on proxies with no hook
    return g_.add_op(op, std::move(a), loc);
  }

  Tensor materialize(const Tensor& t, std::string_view what, const Loc&) override {
    if (!g_.contains(t)) return t;  // a real tensor (known on the host): reading it is fine
    throw Error(fmt::format("to_graph: the model reads a computed tensor's values on the host ({}), which one graph "
                            "cannot express (run the model through compile() instead: it splits at such reads)",
                            what));
  }

 private:
  Tensor value_of(const Tensor& t) {
    if (!t.defined() || g_.contains(t)) return t;
    auto it = mapped_.find(t.impl());
    if (it != mapped_.end()) return it->second;
    HookScope none(nullptr);
    Tensor c = g_.add_constant(t, "c");
    mapped_[t.impl()] = c;
    kept_.push_back(t);  // keeps the impl alive, so its address is not reused by another tensor
    return c;
  }

  Graph& g_;
  std::unordered_map<const TensorImpl*, Tensor> mapped_;
  std::vector<Tensor> kept_;
};

}  // namespace

Graph Model::to_graph(bool freeze) const {
  Graph g;
  auto env = std::make_shared<sym::ShapeEnv>();
  g.set_shape_env(env);
  sym::ShapeEnvScope env_scope(env.get());
  std::map<std::string, SymInt> symbols;
  std::vector<Val> inputs;
  for (const ValueInfo& v : data_->inputs) {
    SINTER_CHECK(v.has_shape, "to_graph: input '{}' has no declared shape", v.name);
    TensorMeta meta;
    meta.dtype = v.dtype;
    for (size_t d = 0; d < v.dims.size(); ++d) {
      if (v.dims[d] >= 0) {
        meta.sizes.push_back(v.dims[d]);
        continue;
      }
      std::string name = v.dim_params[d].empty() ? fmt::format("{}.size({})", v.name, d) : v.dim_params[d];
      auto it = symbols.find(name);
      if (it == symbols.end()) {
        int64_t hint = 64 + 8 * static_cast<int64_t>(symbols.size());
        it = symbols.emplace(name, env->create_symbol(hint, 2, sym::kInf, name)).first;
      }
      meta.sizes.push_back(it->second);
    }
    meta.strides = contiguous_strides(meta.sizes);
    inputs.push_back(Val{g.add_input(v.name, meta), false});
  }
  Recorder rec(g);
  for (const auto& [name, t] : data_->parameters) {
    if (freeze) {
      rec.bind(t, g.add_constant(t, name));
    } else {
      TensorMeta meta = t.meta();
      rec.bind(t, g.add_input(name, meta));
    }
  }
  std::vector<Val> outs;
  {
    HookScope hook(&rec);
    Executor ex(*data_);
    outs = ex.run(data_->proto.graph, inputs);
  }
  std::vector<Tensor> values;
  for (const Val& v : outs) {
    if (g.contains(v.t)) {
      values.push_back(v.t);
    } else {
      // An output known on the host (a constant): record it as a constant of the graph.
      HookScope none(nullptr);
      values.push_back(g.add_constant(v.t, "out"));
    }
  }
  g.set_outputs(values);
  if (env->num_symbols() == 0) g.set_shape_env(nullptr);
  return g;
}

}  // namespace sinter::onnx
