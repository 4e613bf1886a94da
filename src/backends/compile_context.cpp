// CompileContext::for_graph: the context capture builds for each graph it hands to a backend.
#include <cstdlib>

#include "sinter/compile.h"

namespace sinter {

CompileContext CompileContext::for_graph(const Graph& graph, const CompileOptions& options) {
  CompileContext ctx;
  ctx.options = options;
  bool cuda = false;
  for (const Node* in : graph.input_nodes()) cuda = cuda || in->meta().device.is_cuda();
  ctx.target = cuda ? cuda_target(90) : host_cpu_target();
  ctx.shape_env = graph.shape_env();
  if (const char* dir = std::getenv("SINTER_DEBUG_DIR")) ctx.debug_dir = dir;
  return ctx;
}

}  // namespace sinter
