// The "inductor" backend (CPU): the pass pipeline, lowering to the loop IR, the fusion scheduler, the kernel
// planner, C++ codegen, the kernel cache (compile once, load from disk in later processes), and the executor with
// the CPU launcher that runs the result.
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
#include "codegen/cpp/kernel_cache.h"
#include "inductor/kernel_plan.h"
#include "inductor/lower.h"
#include "inductor/scheduler.h"
#include "passes/pipeline.h"
#include "runtime/cpu_launcher.h"
#include "support/debug_dump.h"
#include "support/check.h"
#include "support/log.h"

namespace sinter::backends {

namespace {

// The kernels with the loop nodes (and graph values) each computes, then every fusion decision in order.
std::string schedule_text(const inductor::LoopProgram& program, const inductor::Schedule& schedule) {
  std::string out;
  for (const inductor::Kernel& k : schedule.kernels) {
    bool ext = k.kind == inductor::Kernel::Kind::kExtern;
    out += fmt::format("{}: {}{}{}{}\n", k.name, ext ? "extern" : k.rows ? "row loops" : "flat loops",
                       k.epilogue >= 0 ? fmt::format(", epilogue {}", schedule.kernels[k.epilogue].name) : "",
                       k.epilogue_of >= 0 ? fmt::format(", epilogue of {}", schedule.kernels[k.epilogue_of].name) : "",
                       k.combined >= 0 ? fmt::format(", combined group {}", k.combined) : "");
    for (int id : k.nodes) out += fmt::format("  loop node {}: {}\n", id, program.nodes[id].origin);
  }
  out += "\nfusion decisions:\n";
  for (const std::string& d : schedule.decisions) out += "  " + d + "\n";
  return out;
}

}  // namespace

std::shared_ptr<runtime::CompiledGraphParts> plan_graph(const Graph& graph, const CompileContext& ctx,
                                                       const std::string& name, support::DebugDump& dump) {
  if (dump.active()) dump.stage("captured", print_graph(graph));  // printing a graph costs: only when it is kept
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
  if (dump.active()) dump.stage("before-lowering", print_graph(g));
  auto parts = std::make_shared<runtime::CompiledGraphParts>();
  parts->program = std::make_shared<const inductor::LoopProgram>(inductor::lower(g, {.target = &ctx.target}));
  const inductor::LoopProgram& program = *parts->program;
  if (dump.active()) dump.stage("loop-program", program.str());
  parts->schedule = inductor::schedule(program, ctx.target);
  parts->plan = inductor::plan_kernels(program, parts->schedule);
  if (dump.active() || log_enabled(LogChannel::kSchedule)) {
    std::string text = schedule_text(program, parts->schedule) + "\nkernel plans:\n" + parts->plan.str(program);
    dump.stage("schedule", text);
    SINTER_LOG(kSchedule, "{} kernels:\n{}", name, text);
  }
  return parts;
}

std::string next_graph_name() {
  static std::atomic<int> serial{0};
  return fmt::format("graph_{}", serial++);
}

std::shared_ptr<runtime::Executor> compile_for_cpu(const Graph& graph, const CompileContext& ctx) {
  std::string name = next_graph_name();
  support::DebugDump dump(ctx.debug_dir, name);
  std::shared_ptr<runtime::CompiledGraphParts> parts = plan_graph(graph, ctx, name, dump);
  const inductor::LoopProgram& program = *parts->program;
  // One translation unit per core the target has: units compile in parallel.
  codegen::cpp::GeneratedCode code = codegen::cpp::generate(program, parts->plan, std::max(1, ctx.target.cores));
  std::shared_ptr<codegen::cpp::SharedLibrary> library;
  std::vector<runtime::KernelFn> fns(parts->plan.kernels.size(), nullptr);
  if (!code.units.empty()) {
    // SINTER_CXXFLAGS: extra compiler flags for generated code (part of the cache key), e.g. to compare with
    // the vectorisers off.
    codegen::cpp::CompileOptions flags;
    if (const char* extra = std::getenv("SINTER_CXXFLAGS")) {
      std::istringstream words(extra);
      for (std::string w; words >> w;) flags.extra_flags.push_back(w);
    }
    flags.debug_dir = dump.dir();
    flags.object_dir = ctx.aot_object_dir;
    flags.prebuilt = ctx.aot_prebuilt;
    codegen::cpp::CompiledObject obj = codegen::cpp::compile_and_load(code.units, name, flags);
    library = obj.library;
    for (size_t k = 0; k < fns.size(); ++k)
      if (!parts->plan.kernels[k].name.empty())
        fns[k] = reinterpret_cast<runtime::KernelFn>(library->symbol(parts->plan.kernels[k].name));
    SINTER_LOG(kPerfHints, "inductor: {} kernel(s), {} launch(es) per call, code {} in {:.3f} s ({})",
        parts->schedule.kernels.size(), parts->schedule.launches(),
        obj.from == codegen::cpp::CompiledObject::From::kCompiled ? "compiled" : "loaded from cache", obj.seconds,
        obj.source_path);
  }
  auto launcher = std::make_unique<runtime::CpuLauncher>(parts, std::move(fns), library);
  return std::make_shared<runtime::Executor>(parts, std::move(launcher));
}

ContextBackend inductor_backend() {
  return [](const Graph& graph, const std::vector<Tensor>&, const CompileContext& ctx) -> CompiledGraph {
    // A 0-d CPU tensor combines with CUDA tensors in eager (as in PyTorch): a CUDA graph takes it, copied to the
    // device at each call (an output that is that input comes back as the caller's tensor).
    std::vector<size_t> host_scalars;
    const std::vector<const Node*> inputs = graph.input_nodes();
    for (size_t k = 0; k < inputs.size(); ++k) {
      const TensorMeta& m = inputs[k]->meta();
      if (ctx.target.runs_on(m.device)) continue;
      SINTER_CHECK(ctx.target.kind == TargetKind::kCuda && m.device.is_cpu() && m.sizes.empty(),
                   "inductor: input '{}' is on {}, the graph is compiled for {}: all inputs of one graph must be on "
                   "one device (0-d CPU tensors excepted)", inputs[k]->name, m.device.str(), ctx.target.name);
      host_scalars.push_back(k);
    }
    SINTER_CHECK(ctx.target.kind != TargetKind::kCuda || ctx.aot_object_dir.empty(),
                 "aot: artifacts of CUDA graphs are not supported yet (their cubins are not kept); save the function "
                 "with CPU inputs");
    auto program = ctx.target.kind == TargetKind::kCuda ? compile_for_cuda(graph, ctx) : compile_for_cpu(graph, ctx);
    CompiledGraph::Fn run = [program](const std::vector<Tensor>& inputs) { return program->run(inputs); };
    if (!ctx.write_backs.empty()) {
      // Outputs written back into inputs are computed there where that is safe (Executor::run with `into`), so an
      // optimiser step updates its parameters and buffers in place instead of in new memory copied back at the
      // end.
      run = [program, pairs = ctx.write_backs, n = graph.outputs().size()](const std::vector<Tensor>& inputs) {
        std::vector<Tensor> into(n);
        for (const auto& [output, input] : pairs) into[output] = inputs[input];
        return program->run(inputs, std::move(into));
      };
    }
    // reduce-overhead: the program's launches as CUDA graphs (a CPU graph runs as in default mode, logged).
    if (ctx.options.mode == Mode::kReduceOverhead) {
      CompileContext moved_inputs = ctx;  // a 0-d CPU input reaches the CUDA graph as a fresh copy at each call
      for (size_t k : host_scalars)
        if (k < moved_inputs.static_inputs.size()) moved_inputs.static_inputs[k] = false;
      run = with_cuda_graphs(graph, moved_inputs, std::move(run), program->launches());
    }
    if (host_scalars.empty()) {
      CompiledGraph compiled(std::move(run), program->launches());
      if (ctx.options.mode != Mode::kReduceOverhead && ctx.write_backs.empty())
        compiled.set_consuming([program](std::vector<Tensor>&& inputs) { return program->run_consuming(std::move(inputs)); });
      return compiled;
    }
    Device device = kCUDA;  // that of the graph's device inputs
    for (const Node* in : inputs)
      if (in->meta().device.is_cuda()) device = in->meta().device;
    return CompiledGraph(
        [run, host_scalars, device](const std::vector<Tensor>& inputs) {
          std::vector<Tensor> moved = inputs;
          for (size_t k : host_scalars) moved[k] = inputs[k].to(device);
          std::vector<Tensor> outs = run(moved);
          for (Tensor& o : outs)
            for (size_t k : host_scalars)
              if (o.is_same(moved[k])) o = inputs[k];
          return outs;
        },
        program->launches());
  };
}

}  // namespace sinter::backends
