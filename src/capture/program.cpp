// Programs (see program.h): the one place where a captured graph meets functionalization and a backend.
#include "capture/program.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>

#include "passes/functionalize.h"
#include "support/check.h"
#include "support/log.h"

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

// The first compiler failure that falls back by default is said on stderr whatever SINTER_LOGS is (the user
// asked for compiled code and gets aot_eager for that graph); later ones only under SINTER_LOGS=perf_hints.
void warn_compiler_failure_once(const char* message) {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  std::fprintf(stderr,
               "[sinter] warning: the C++ compiler failed on generated code; that graph runs on aot_eager "
               "instead (CompileOptions::fallback = false makes this an error; later failures are logged under "
               "SINTER_LOGS=perf_hints):\n%s\n",
               message);
}

}  // namespace

Program compile_program(Graph graph, const std::vector<Tensor>& example_inputs, const CompileOptions& options,
                        bool* fell_back) {
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
    SINTER_LOG(kPerfHints, "{} and the function writes in place: running the graph as recorded instead of "
               "compiling it with '{}'", why, options.backend);
    auto g = std::make_shared<const Graph>(std::move(graph));
    p.fn = [g](const std::vector<Tensor>& inputs) { return interpret(*g, inputs); };
    p.backend = "interpreter (aliased inputs)";
    p.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return p;
  }
  // Backends receive a graph without mutation; the writes it had become write-backs done here after each run.
  FunctionalizeResult f = functionalize(graph);
  for (const InputMutation& m : f.mutations) p.write_backs.push_back({m.input_index, m.output_index});
  for (size_t i = 0; i < f.outputs_aliasing_inputs.size() && i < p.output_is_input.size(); ++i)
    p.output_is_input[i] = f.outputs_aliasing_inputs[i];
  if (f.changed) SINTER_LOG(kGraph, "after functionalization:\n{}", print_graph(graph));

  p.backend = options.backend;
  try {
    p.fn = find_backend(options.backend)(graph, example_inputs);
  } catch (const std::exception& e) {
    // A compiler failure on generated code is sinter's bug (or the compiler's), not the user's: unless the user
    // turned fallback off, that graph runs on aot_eager (compile.h).
    const bool compiler_failed = dynamic_cast<const CompilerError*>(&e) != nullptr;
    if (!options.fallback.value_or(compiler_failed) || options.backend == "aot_eager") throw;
    if (compiler_failed && !options.fallback.has_value()) warn_compiler_failure_once(e.what());
    SINTER_LOG(kPerfHints, "backend '{}' failed, running aot_eager instead: {}", options.backend, e.what());
    SINTER_LOG(kRecompiles, "backend '{}' failed, running aot_eager instead: {}", options.backend, e.what());
    p.fn = find_backend("aot_eager")(graph, example_inputs);
    p.backend = "aot_eager";
    if (fell_back) *fell_back = true;
  }
  SINTER_INTERNAL_ASSERT(p.fn, "backend '{}' returned an empty compiled graph", p.backend);
  p.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return p;
}

std::vector<Tensor> run_program(const Program& p, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> outs = p.fn(inputs);
  SINTER_CHECK(outs.size() == static_cast<size_t>(p.num_outputs) + p.write_backs.size(),
               "backend '{}' returned {} outputs, the graph has {}", p.backend, outs.size(),
               static_cast<size_t>(p.num_outputs) + p.write_backs.size());
  for (const Program::WriteBack& w : p.write_backs) {
    Tensor dst = inputs[w.input];
    if (!dst.is_same(outs[w.output])) dst.copy_(outs[w.output]);
  }
  outs.resize(p.num_outputs);
  for (int i = 0; i < p.num_outputs; ++i)
    if (p.output_is_input[i] >= 0) outs[i] = inputs[p.output_is_input[i]];
  return outs;
}

}  // namespace sinter::capture
