// The "inductor" backend (CPU): the pass pipeline, lowering to the loop IR, the fusion scheduler, C++ codegen,
// the kernel cache (compile once, load from disk in later processes) and the runtime that runs the result.
// The first call blocks until the graph's code is compiled.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <thread>

#include "backends/backends.h"
#include "codegen/cpp/cpp_codegen.h"
#include "inductor/lower.h"
#include "inductor/scheduler.h"
#include "passes/pipeline.h"
#include "runtime/compiled_program.h"
#include "support/check.h"
#include "support/log.h"

namespace sinter::backends {

std::shared_ptr<runtime::CompiledProgram> compile_for_cpu(const Graph& graph, const passes::PassContext& ctx) {
  static std::atomic<int> serial{0};
  Graph g = graph.clone();
  passes::run_inductor_passes(g, ctx);
  inductor::LoopProgram program = inductor::lower(g);
  inductor::Schedule schedule = inductor::schedule(program);
  int units = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  codegen::cpp::GeneratedCode code = codegen::cpp::generate(program, schedule, units);
  std::shared_ptr<runtime::SharedLibrary> library;
  if (!code.units.empty()) {
    // SINTER_CXXFLAGS: extra compiler flags for generated code (part of the cache key), e.g. to compare with
    // the vectorisers off.
    runtime::CompileOptions flags;
    if (const char* extra = std::getenv("SINTER_CXXFLAGS")) {
      std::istringstream words(extra);
      for (std::string w; words >> w;) flags.extra_flags.push_back(w);
    }
    runtime::CompiledObject obj =
        runtime::compile_and_load(code.units, fmt::format("graph_{}", serial++), flags);
    library = obj.library;
    SINTER_LOG(kPerfHints, "inductor: {} kernel(s), {} launch(es) per call, code {} in {:.3f} s ({})",
        schedule.kernels.size(), schedule.launches(), obj.from == runtime::CompiledObject::From::kCompiled ? "compiled" : "loaded from cache",
        obj.seconds, obj.source_path);
  }
  return std::make_shared<runtime::CompiledProgram>(std::move(program), std::move(schedule), std::move(code),
                                                    std::move(library));
}

Backend inductor_backend() {
  return [](const Graph& graph, const std::vector<Tensor>&) -> CompiledGraph {
    for (const Node* in : graph.input_nodes())
      SINTER_CHECK(in->meta().device.is_cpu(),
                   "inductor: input '{}' is on {}; this build generates CPU code only (use backend 'aot_eager' for "
                   "CUDA tensors)",
                   in->name, in->meta().device.str());
    auto program = compile_for_cpu(graph, passes::PassContext{});
    return CompiledGraph([program](const std::vector<Tensor>& inputs) { return program->run(inputs); },
                         program->launches());
  };
}

}  // namespace sinter::backends
