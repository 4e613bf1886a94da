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
#include "runtime/debug_dump.h"
#include "support/check.h"
#include "support/log.h"

namespace sinter::backends {

namespace {

// The kernels with the loop nodes (and graph values) each computes, then every fusion decision in order.
std::string schedule_text(const inductor::LoopProgram& program, const inductor::Schedule& schedule) {
  std::string out;
  for (const inductor::Kernel& k : schedule.kernels) {
    bool ext = k.kind == inductor::Kernel::Kind::kExtern;
    out += fmt::format("{}: {}{}{}\n", k.name, ext ? "extern" : k.rows ? "row loops" : "flat loops",
                       k.epilogue >= 0 ? fmt::format(", epilogue {}", schedule.kernels[k.epilogue].name) : "",
                       k.epilogue_of >= 0 ? fmt::format(", epilogue of {}", schedule.kernels[k.epilogue_of].name) : "");
    for (int id : k.nodes) out += fmt::format("  loop node {}: {}\n", id, program.nodes[id].origin);
  }
  out += "\nfusion decisions:\n";
  for (const std::string& d : schedule.decisions) out += "  " + d + "\n";
  return out;
}

}  // namespace

std::shared_ptr<runtime::CompiledProgram> compile_for_cpu(const Graph& graph, const CompileContext& ctx) {
  static std::atomic<int> serial{0};
  std::string name = fmt::format("graph_{}", serial++);
  runtime::DebugDump dump(ctx.debug_dir, name);
  dump.stage("captured", print_graph(graph));
  SINTER_LOG(kSchedule, "{}: {}", name, ctx.target.str());
  Graph g = graph.clone();
  passes::PassContext pass_ctx = passes::PassContext::from(ctx);
  std::string pass_log;
  if (dump.active()) {
    pass_ctx.after_pass = [&](const passes::PassRecord& r, const Graph& after) {
      pass_log += fmt::format("{}: {} ({:.3f} ms)\n", r.name, r.changed ? "changed" : "unchanged", r.ms);
      if (r.changed) dump.stage("after-" + r.name, print_graph(after));
    };
  }
  passes::run_inductor_passes(g, pass_ctx);
  dump.file("passes.txt", pass_log);
  dump.stage("before-lowering", print_graph(g));
  inductor::LoopProgram program = inductor::lower(g, {.target = &ctx.target});
  dump.stage("loop-program", program.str());
  inductor::Schedule schedule = inductor::schedule(program, ctx.target);
  dump.stage("schedule", schedule_text(program, schedule));
  SINTER_LOG(kSchedule, "{} kernels:\n{}", name, schedule_text(program, schedule));
  // One translation unit per core the target has: units compile in parallel.
  codegen::cpp::GeneratedCode code = codegen::cpp::generate(program, schedule, std::max(1, ctx.target.cores));
  std::shared_ptr<runtime::SharedLibrary> library;
  if (!code.units.empty()) {
    // SINTER_CXXFLAGS: extra compiler flags for generated code (part of the cache key), e.g. to compare with
    // the vectorisers off.
    runtime::CompileOptions flags;
    if (const char* extra = std::getenv("SINTER_CXXFLAGS")) {
      std::istringstream words(extra);
      for (std::string w; words >> w;) flags.extra_flags.push_back(w);
    }
    flags.debug_dir = dump.dir();
    runtime::CompiledObject obj = runtime::compile_and_load(code.units, name, flags);
    library = obj.library;
    SINTER_LOG(kPerfHints, "inductor: {} kernel(s), {} launch(es) per call, code {} in {:.3f} s ({})",
        schedule.kernels.size(), schedule.launches(), obj.from == runtime::CompiledObject::From::kCompiled ? "compiled" : "loaded from cache",
        obj.seconds, obj.source_path);
  }
  return std::make_shared<runtime::CompiledProgram>(std::move(program), std::move(schedule), std::move(code),
                                                    std::move(library));
}

ContextBackend inductor_backend() {
  return [](const Graph& graph, const std::vector<Tensor>&, const CompileContext& ctx) -> CompiledGraph {
    SINTER_CHECK(ctx.target.kind == TargetKind::kCpu,
                 "inductor: the graph's inputs are on CUDA ({}); this build generates CPU code only (use backend "
                 "'aot_eager' for CUDA tensors)",
                 ctx.target.name);
    for (const Node* in : graph.input_nodes())
      SINTER_CHECK(ctx.target.runs_on(in->meta().device),
                   "inductor: input '{}' is on {}; this build generates CPU code only (use backend 'aot_eager' for "
                   "CUDA tensors)",
                   in->name, in->meta().device.str());
    auto program = compile_for_cpu(graph, ctx);
    return CompiledGraph([program](const std::vector<Tensor>& inputs) { return program->run(inputs); },
                         program->launches());
  };
}

}  // namespace sinter::backends
