// Programs (see program.h): the one place where a captured graph meets functionalization and a backend.
#include "capture/program.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>

#include "passes/functionalize.h"
#include "sinter/autograd.h"
#include "support/check.h"
#include "support/log.h"
#include "symbolic/expr.h"

namespace sinter::capture {

namespace {

bool inputs_share_storage(const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].has_storage()) continue;
    for (size_t j = 0; j < i; ++j)
      if (inputs[j].has_storage() && inputs[j].storage() == inputs[i].storage()) return true;
  }
  return false;
}

// The first input that has elements sharing memory (a zero stride over a dim longer than 1: an expanded
// tensor), or -1. Functional graphs cannot express a write into such an input: its memory has fewer elements
// than its shape.
int input_with_internal_overlap(const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || t.numel().hint() == 0) continue;
    for (int64_t d = 0; d < t.dim(); ++d)
      if (t.sizes()[d].hint() > 1 && t.strides()[d].hint() == 0) return static_cast<int>(i);
  }
  return -1;
}

// What a custom backend must return (see Program::OutputSpec), read from the functional graph.
void expect_outputs(Program& p, const Graph& graph) {
  p.check_outputs = true;
  for (const Tensor& t : graph.outputs()) p.output_specs.push_back({t.dtype(), t.device(), t.sizes()});
  const std::vector<Tensor> inputs = graph.inputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorMeta& m = inputs[i].meta();
    for (int pass = 0; pass < 2; ++pass) {
      const SymIntList& dims = pass == 0 ? m.sizes : m.strides;
      for (size_t d = 0; d < dims.size(); ++d) {
        if (!dims[d].is_symbolic() || !dims[d].expr()->is_symbol()) continue;
        size_t id = static_cast<size_t>(dims[d].expr()->symbol_id());
        if (id >= p.symbol_sources.size()) p.symbol_sources.resize(id + 1);
        if (p.symbol_sources[id].input < 0)
          p.symbol_sources[id] = {static_cast<int>(i), static_cast<int>(d), pass == 1};
      }
    }
  }
}

void check_outputs(const Program& p, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outs) {
  std::vector<int64_t> values(p.symbol_sources.size(), 0);
  for (size_t id = 0; id < p.symbol_sources.size(); ++id) {
    const Program::SymbolSource& src = p.symbol_sources[id];
    if (src.input < 0) continue;
    const Tensor& t = inputs.at(src.input);
    values[id] = (src.stride ? t.stride(src.dim) : t.size(src.dim)).hint();
  }
  // A size whose symbols no input carries (none should) is taken as the backend returned it.
  auto known = [&](const SymInt& s) {
    if (!s.is_symbolic()) return true;
    for (int64_t id : sym::free_symbols(s.expr()))
      if (id >= static_cast<int64_t>(p.symbol_sources.size()) || p.symbol_sources[id].input < 0) return false;
    return true;
  };
  auto sizes_of = [&](const SymIntList& sizes, const Tensor* got) {
    std::vector<int64_t> out;
    for (size_t d = 0; d < sizes.size(); ++d) {
      const SymInt& s = sizes[d];
      if (!known(s)) out.push_back(got && d < static_cast<size_t>(got->dim()) ? got->size(d).hint() : -1);
      else out.push_back(s.is_symbolic() ? sym::evaluate(*s.expr(), values) : s.hint());
    }
    return out;
  };
  for (size_t i = 0; i < p.output_specs.size(); ++i) {
    const Program::OutputSpec& want = p.output_specs[i];
    const Tensor& got = outs[i];
    SINTER_CHECK(got.defined(), "backend '{}' returned an undefined tensor as output {} (expected {}{})",
                 p.backend, i, dtype_name(want.dtype), fmt::format("{}", sizes_of(want.sizes, nullptr)));
    std::vector<int64_t> expected = sizes_of(want.sizes, &got), actual = got.sizes().hints();
    SINTER_CHECK(got.dtype() == want.dtype && got.device() == want.device && actual == expected,
                 "backend '{}' returned a wrong output {}: {} {} on {}, but the graph's output is {} {} on {}",
                 p.backend, i, dtype_name(got.dtype()), fmt::format("{}", actual), got.device().str(),
                 dtype_name(want.dtype), fmt::format("{}", expected), want.device.str());
  }
}

// The entry runs `graph` as recorded (in place, in program order, as eager does) instead of compiling it,
// because of `why`; SINTER_LOGS=perf_hints says so.
Program run_as_recorded(Program p, Graph graph, const std::string& why, const CompileOptions& options,
                        std::chrono::steady_clock::time_point start) {
  SINTER_LOG(kPerfHints, "{}: running the graph as recorded instead of compiling it with '{}'", why,
             options.backend);
  auto g = std::make_shared<const Graph>(std::move(graph));
  p.fn = [g](const std::vector<Tensor>& inputs) { return interpret(*g, inputs); };
  p.backend = "interpreter (in-place writes)";
  p.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return p;
}

}  // namespace

Program compile_program(Graph graph, const std::vector<Tensor>& example_inputs, const CompileOptions& options,
                        bool training, bool* fell_back, std::vector<bool> static_inputs,
                        std::shared_ptr<TierCounters> tiers) {
  auto start = std::chrono::steady_clock::now();
  Program p;
  p.text = print_graph(graph);
  p.num_ops = graph.num_ops();
  p.num_outputs = graph.has_output() ? static_cast<int>(graph.output_node().args.size()) : 0;
  SINTER_LOG(kGraph, "captured graph ({} ops):\n{}", p.num_ops, p.text);
  p.output_is_input.assign(p.num_outputs, -1);
  const int overlapping = input_with_internal_overlap(example_inputs);
  if ((inputs_share_storage(example_inputs) || overlapping >= 0) && has_mutations(graph)) {
    // The function writes an input that shares memory with another one, or one of whose elements share memory
    // (fill_ on an expanded tensor): a functional graph would let the other read stale values, or has no
    // value of the written tensor's shape to write back. Run the graph as recorded, where the writes land in
    // the real memory in program order, exactly as eager does (strides and the aliasing pattern are guarded,
    // so this entry only serves such inputs).
    std::string why = overlapping >= 0
                          ? fmt::format("input {} has elements that share memory (sizes {}, strides {})", overlapping,
                                        example_inputs[overlapping].sizes().str(),
                                        example_inputs[overlapping].strides().str())
                          : std::string("inputs share storage");
    return run_as_recorded(std::move(p), std::move(graph), why + " and the function writes in place", options,
                           start);
  }
  // Backends receive a graph without mutation; the writes it had become write-backs done here after each run.
  // A write with no functional form (fill_ into an expanded intermediate) runs the graph as recorded instead.
  std::optional<Graph> recorded;
  if (has_mutations(graph)) recorded = graph.clone();
  FunctionalizeResult f;
  try {
    f = functionalize(graph);
  } catch (const OverlappingWriteError& e) {
    return run_as_recorded(std::move(p), std::move(*recorded), e.what(), options, start);
  }
  for (const InputMutation& m : f.mutations) p.write_backs.push_back({m.input_index, m.output_index});
  for (size_t i = 0; i < f.outputs_aliasing_inputs.size() && i < p.output_is_input.size(); ++i)
    p.output_is_input[i] = f.outputs_aliasing_inputs[i];
  if (f.changed) SINTER_LOG(kGraph, "after functionalization:\n{}", print_graph(graph));
  p.output_views = plan_output_views(graph, p.num_outputs);
  compile_functional(p, graph, example_inputs, options, training, fell_back, std::move(static_inputs),
                     std::move(tiers));
  p.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return p;
}

void compile_functional(Program& p, const Graph& graph, const std::vector<Tensor>& example_inputs,
                        const CompileOptions& options, bool training, bool* fell_back, std::vector<bool> static_inputs,
                        std::shared_ptr<TierCounters> tiers) {
  auto start = std::chrono::steady_clock::now();
  p.backend = options.backend;
  CompileContext context = CompileContext::for_graph(graph, options);
  context.training = training;
  context.static_inputs = std::move(static_inputs);
  for (const Program::WriteBack& w : p.write_backs) context.write_backs.emplace_back(w.output, w.input);
  const bool tiered = options.tiered && options.backend != "aot_eager" && options.backend != "eager";
  try {
    p.fn = tiered ? start_tiered(graph, example_inputs, context, options.backend, std::move(tiers))
                  : find_backend(options.backend)(graph, example_inputs, context);
    SINTER_CHECK(static_cast<bool>(p.fn),
                 "backend '{}' returned an empty CompiledGraph (a default-constructed one, or one made from an "
                 "empty function); a backend must return a callable that runs the graph",
                 options.backend);
  } catch (const std::exception& e) {
    // A compiler failure on generated code is sinter's bug (or the compiler's), not the user's: unless the user
    // turned fallback off, that graph runs on aot_eager (compile.h).
    const bool compiler_failed = dynamic_cast<const CompilerError*>(&e) != nullptr;
    if (!options.fallback.value_or(compiler_failed) || options.backend == "aot_eager") throw;
    // Said on stderr once per compiled function by the engine (Program::fallback_reason).
    SINTER_LOG(kPerfHints, "backend '{}' failed, running aot_eager instead: {}", options.backend, e.what());
    SINTER_LOG(kRecompiles, "backend '{}' failed, running aot_eager instead: {}", options.backend, e.what());
    p.fallback_reason = e.what();
    p.fn = find_backend("aot_eager")(graph, example_inputs, context);
    p.backend = "aot_eager";
    if (fell_back) *fell_back = true;
  }
  SINTER_INTERNAL_ASSERT(p.fn, "backend '{}' returned an empty compiled graph", p.backend);
  if (!is_builtin_backend(p.backend)) expect_outputs(p, graph);
  p.compile_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<Tensor> run_program(const Program& p, std::vector<Tensor>&& inputs) {
  const bool reads_inputs_after = !p.write_backs.empty() || !p.output_views.empty() || p.check_outputs ||
                                  std::any_of(p.output_is_input.begin(), p.output_is_input.end(),
                                              [](int i) { return i >= 0; });
  if (reads_inputs_after) return run_program(p, static_cast<const std::vector<Tensor>&>(inputs));
  std::vector<Tensor> outs = p.fn.consume(std::move(inputs));
  SINTER_CHECK(outs.size() == static_cast<size_t>(p.num_outputs), "backend '{}' returned {} outputs, the graph has {}",
               p.backend, outs.size(), p.num_outputs);
  return outs;
}

std::vector<Tensor> run_program(const Program& p, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> outs = p.fn(inputs);
  SINTER_CHECK(outs.size() == static_cast<size_t>(p.num_outputs) + p.write_backs.size(),
               "backend '{}' returned {} outputs, the graph has {}", p.backend, outs.size(),
               static_cast<size_t>(p.num_outputs) + p.write_backs.size());
  if (p.check_outputs) check_outputs(p, inputs, outs);
  // The function's own writes, replayed: it made them under NoGradGuard (an optimiser step) or on tensors that
  // do not require grad (compiled training refuses the rest), so nothing here is differentiated.
  NoGradGuard no_grad;
  for (const Program::WriteBack& w : p.write_backs) {
    Tensor dst = inputs[w.input];
    if (!dst.is_same(outs[w.output])) dst.copy_(outs[w.output]);
  }
  outs.resize(p.num_outputs);
  if (!p.output_views.empty()) rebuild_output_views(p.output_views, inputs, outs);
  for (int i = 0; i < p.num_outputs; ++i)
    if (p.output_is_input[i] >= 0) outs[i] = inputs[p.output_is_input[i]];
  return outs;
}

}  // namespace sinter::capture
