// The built-in backends, registered by the registry on first use (compile.h holds the public registry API).
// Internal to src/backends.
#pragma once
#include <memory>
#include <string>

#include "passes/pipeline.h"
#include "runtime/executor.h"
#include "support/debug_dump.h"
#include "sinter/compile.h"

namespace sinter::backends {

// "eager": runs the graph it is given, op by op, exactly as recorded (compile() with backend "eager" never
// captures at all; this is for code that hands a graph to the backend directly).
Backend eager_backend();
// "aot_eager": runs the functionalized graph on the eager kernels, op by op in graph order, so results
// (random draws included) equal eager's exactly.
Backend aot_eager_backend();
// "cudagraphs": aot_eager's run of the graph captured as CUDA graphs and replayed (cuda_graphs.cpp).
ContextBackend cudagraphs_backend();
// `body` (a compiled graph's run, `launches` kernels a call, -1 when not known) with CUDA graphs: captured per
// input layout on its second call, replayed after (cuda_graphs.cpp). A graph without CUDA inputs gets `body` back
// (logged).
CompiledGraph::Fn with_cuda_graphs(const Graph& graph, const CompileContext& ctx, CompiledGraph::Fn body,
                                   int launches);
struct CudaGraphCounts {
  int64_t captures = 0, replays = 0;  // in this process, over every compiled graph
};
CudaGraphCounts cuda_graph_counts();
// "inductor": generated kernels: C++ for CPU tensors (src/codegen/cpp), CUDA for CUDA tensors (src/codegen/cuda).
ContextBackend inductor_backend();
// The inductor's CPU path on one graph, for the context's options and target (tests use it to see the schedule:
// launches per call).
std::shared_ptr<runtime::Executor> compile_for_cpu(const Graph& graph, const CompileContext& ctx);
// The CUDA path: the same passes, lowering, schedule and plans, CUDA source (codegen/cuda) compiled by NVRTC for
// the GPU or by the host compiler for the simulated device, run by the CUDA launcher.
std::shared_ptr<runtime::Executor> compile_for_cuda(const Graph& graph, const CompileContext& ctx);

// What both paths share: passes, lowering, scheduling and planning of `graph`, dumped and logged as `name`.
std::shared_ptr<runtime::CompiledGraphParts> plan_graph(const Graph& graph, const CompileContext& ctx,
                                                       const std::string& name, support::DebugDump& dump);
std::string next_graph_name();  // "graph_<n>", unique in the process

// Eager CUDA ops run generated kernels (cuda_eager.cpp), kept in memory per op and operand layout; this forgets
// them, so that the next call of each loads its kernels again (from the disk cache where they are there).
void clear_cuda_eager_programs();
// How many (op, operand layout) programs are kept (declined ones included; the least recently used beyond 4096
// are forgotten).
size_t cuda_eager_program_count();

}  // namespace sinter::backends
