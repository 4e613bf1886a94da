// explain(): capture a call once, without caching anything, and report its graphs, breaks (with reasons and
// source lines), guards, ops and compile time. Also the printed forms of ExplainOutput and CompileStats.
#include <fmt/format.h>

#include <chrono>
#include <ostream>

#include "capture/engine_state.h"
#include "support/check.h"

namespace sinter {

namespace {

std::string_view mode_name(Mode m) {
  switch (m) {
    case Mode::kDefault:
      return "default";
    case Mode::kReduceOverhead:
      return "reduce-overhead";
    case Mode::kMaxAutotune:
      return "max-autotune";
  }
  return "?";
}

// What the mode does in this build, said wherever the mode is printed.
std::string mode_text(Mode m) {
  if (m == Mode::kDefault) return "default";
  if (m == Mode::kReduceOverhead)
    return "reduce-overhead (the inductor's graphs on CUDA tensors run as CUDA graphs; on CPU tensors as default)";
  return fmt::format("{} (the inductor's CUDA kernels are launched in the fastest of several block and grid sizes, "
                     "measured on their first launch and kept in the disk cache; on CPU tensors as default)",
                     mode_name(m));
}

std::string indent(const std::string& text, const std::string& prefix) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += prefix + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string CompileStats::str() const {
  std::string out = fmt::format(
      "compiles: {}, guard hits: {}, recompiles: {}, eager fallbacks: {}, graph breaks: {}, compile time: "
      "{:.3f} s, "
      "mode: {}{}\n",
      compiles, guard_hits, recompiles, eager_fallbacks, graph_breaks, compile_seconds, mode_text(mode),
      kernels_per_call >= 0 ? fmt::format(", kernels per call: {}", kernels_per_call) : "");
  if (first_tier_calls > 0 || tier_switches > 0)
    out += fmt::format("  tiered: {} call(s) served by aot_eager while the backend compiled, {} graph(s) switched "
                       "to the backend's code\n",
                       first_tier_calls, tier_switches);
  for (size_t i = 0; i < recompile_reasons.size(); ++i)
    out += fmt::format("  recompile {}: {}\n", i + 1, recompile_reasons[i].reason);
  return out;
}

std::string ExplainOutput::str() const {
  std::string out = fmt::format("Graph count: {}\nGraph break count: {}\n", graph_count, graph_break_count);
  if (!breaks.empty()) {
    out += "Break reasons:\n";
    for (size_t i = 0; i < breaks.size(); ++i)
      out += fmt::format("  {}. {} at {}\n", i + 1, breaks[i].reason, breaks[i].location);
  }
  std::string ops;
  for (size_t i = 0; i < ops_per_graph.size(); ++i) ops += (i ? ", " : "") + std::to_string(ops_per_graph[i]);
  out += fmt::format("Ops per graph: {}\n", ops.empty() ? "none" : ops);
  for (size_t i = 0; i < graphs.size(); ++i) out += fmt::format("Graph {}:\n{}", i, indent(graphs[i], "  "));
  if (!guards.empty()) {
    out += "Guards:\n";
    for (const std::string& g : guards) out += "  " + g + "\n";
  }
  if (!partition.empty()) {
    out += fmt::format("Partition (compiled training): {}\n", partition);
    out += fmt::format("Forward graph:\n{}", indent(forward_graph, "  "));
    out += fmt::format("Backward graph:\n{}", indent(backward_graph, "  "));
  }
  out += fmt::format("Mode: {}\n", mode_text(mode));
  out += fmt::format("Compile time: {:.4f} s\n", compile_seconds);
  return out;
}

std::ostream& operator<<(std::ostream& os, const ExplainOutput& e) { return os << e.str(); }

namespace capture {

ExplainOutput Engine::explain(std::vector<CallArg> args, const Invoke& invoke) {
  State& s = *state_;
  SINTER_CHECK(!current_hook(), "explain() cannot run while another function is being captured");
  ExplainOutput out;
  out.mode = s.options.mode;
  std::vector<Tensor> flat;
  flatten_tensors(args, flat);
  std::set<DynKey> dynamic;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    dynamic = s.auto_dynamic;
  }
  TracerConfig config = s.tracer_config();
  config.fullgraph = false;  // explain reports breaks instead of throwing
  // Segments of a function with breaks are printed, compiled (timed) and run, since the host code needs their
  // values to go on; nothing is cached.
  auto runner = [&](Segment& seg) {
    out.graphs.push_back(print_graph(seg.graph));
    out.ops_per_graph.push_back(seg.graph.num_ops());
    if (seg.one_off) return interpret(seg.graph, seg.inputs);
    Program p = compile_program(seg.graph.clone(), seg.inputs, s.options, s.training());
    out.compile_seconds += p.compile_seconds;
    return run_program(p, seg.inputs);
  };
  auto start = std::chrono::steady_clock::now();
  WholeCapture w = s.capture_whole(args, flat, dynamic, invoke, config, runner);
  if (!w.tracer->broke()) {
    Graph& g = w.tracer->segment().graph;
    out.graphs.push_back(print_graph(g));
    out.ops_per_graph.push_back(g.num_ops());
    out.guards = w.guards.describe();
    if (w.joint) {
      std::string why_not;
      std::shared_ptr<const TrainingProgram> t = compile_training(std::move(g), *w.joint, w.inputs, s.options,
                                                                  s.training(), nullptr, {}, nullptr, &why_not);
      out.partition = t ? partition_summary(*t) : "none: the graph runs eagerly because " + why_not;
      if (t) {
        out.forward_graph = forward_graph_text(*t);
        out.backward_graph = backward_graph_text(*t);
      }
    } else {
      compile_program(std::move(g), w.inputs, s.options, s.training());
    }
    out.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } else {
    for (const BreakRecord& b : w.tracer->breaks()) out.breaks.push_back({b.reason, b.location});
    out.guards.push_back(
        "(a function with graph breaks re-runs its host code on every call; each segment is reused when it "
        "records "
        "the same graph, input metas included)");
  }
  out.graph_count = static_cast<int>(out.graphs.size());
  out.graph_break_count = static_cast<int>(out.breaks.size());
  return out;
}

}  // namespace capture
}  // namespace sinter
