// The "eager" backend: the graph as recorded, run op by op. compile(fn, {.backend = "eager"}) does not
// capture at all (the engine calls fn directly); this form serves code that hands a graph to the backend
// itself.
#include <memory>

#include "backends/backends.h"

namespace sinter::backends {

Backend eager_backend() {
  return [](const Graph& graph, const std::vector<Tensor>&) -> CompiledGraph {
    auto g = std::make_shared<const Graph>(graph.clone());
    return [g](const std::vector<Tensor>& inputs) { return interpret(*g, inputs); };
  };
}

}  // namespace sinter::backends
