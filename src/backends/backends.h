// The built-in backends, registered by the registry on first use (compile.h holds the public registry API).
// Internal to src/backends.
#pragma once
#include <memory>
#include <string>

#include "passes/pipeline.h"
#include "runtime/executor.h"
#include "sinter/compile.h"

namespace sinter::backends {

// "eager": runs the graph it is given, op by op, exactly as recorded (compile() with backend "eager" never
// captures at all; this is for code that hands a graph to the backend directly).
Backend eager_backend();
// "aot_eager": runs the functionalized graph on the eager kernels, op by op in graph order, so results
// (random draws included) equal eager's exactly.
Backend aot_eager_backend();
// "inductor": generated C++ kernels for CPU tensors (src/inductor, src/codegen/cpp, src/runtime).
ContextBackend inductor_backend();
// The inductor's CPU path on one graph, for the context's options and target (tests use it to see the schedule:
// launches per call).
std::shared_ptr<runtime::Executor> compile_for_cpu(const Graph& graph, const CompileContext& ctx);

}  // namespace sinter::backends
