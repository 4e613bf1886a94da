// The "aot_eager" backend: the functional graph capture hands over, run on the eager kernels by the
// interpreter. No pass reorders or drops anything, so random ops draw from the default generator in eager's
// order and every result equals eager's bit for bit; it is the reference that other backends are tested
// against.
#include <memory>

#include "backends/backends.h"

namespace sinter::backends {

Backend aot_eager_backend() {
  return [](const Graph& graph, const std::vector<Tensor>&) -> CompiledGraph {
    auto g = std::make_shared<const Graph>(graph.clone());
    return [g](const std::vector<Tensor>& inputs) { return interpret(*g, inputs); };
  };
}

}  // namespace sinter::backends
