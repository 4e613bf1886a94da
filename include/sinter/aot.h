// Ahead-of-time artifacts: a compiled function saved as a directory that another process (or machine with the
// same kind of CPU) loads and runs without compiling anything, so a deployment needs no C++ compiler.
//
//   auto f = sinter::compile(model, {.dynamic = sinter::Dynamic::kAlways});
//   sinter::aot::save(f, "model.sinter", x);                // captures f(x), compiles it, writes the directory
//   sinter::aot::Artifact a = sinter::aot::load("model.sinter");
//   std::vector<Tensor> y = a({x2});                        // any sizes the saved guards admit
//
// The directory holds:
//   manifest.json        format, the CPU it was built for, the symbols' ranges and the guards, the input count, and
//                        the digest of every other file (the SHA-256 of the SHA-256s of its 1 MiB blocks)
//   graph.txt            the captured graph after functionalization (print_graph's text)
//   weights.safetensors  the tensors the function read without taking them as arguments (a module's parameters
//                        and buffers), by graph input name
//   constants.safetensors the graph's constants (weights frozen into it, CompileOptions::freeze), by node name
//   kernels/<sha>.so     the inductor's CPU kernels, named by the SHA-256 of their generated source
//
// load() checks every hash (a modified or truncated file is refused), that this CPU has every instruction set
// extension the kernels were built for, and rebuilds the execution plan from the graph (lowering and scheduling
// are deterministic; nothing is traced and no compiler is asked: the objects are found by their source's hash).
// Each call checks its inputs against the saved guards (count, dtype, device, sizes, the symbols' ranges and
// relations) and throws sinter::Error naming the input and the guard. An input laid out differently from the
// saved one is copied contiguous where the graph expects contiguous inputs.
//
// What an artifact holds: one whole graph (no graph breaks) of a function whose arguments are tensors, run for
// inference (no gradients), that does not write its inputs and returns new tensors (not its inputs or views of
// them), on CPU tensors. Each of these is an Error at save naming it. Sizes stay symbolic where the compiled
// function's dynamic policy made them so (Dynamic::kAlways, or mark_dynamic); else the artifact serves the saved
// sizes only. CUDA graphs are refused for now (their cubins are not kept).
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sinter/compile.h"

namespace sinter::aot {

// Writes the artifact of an exported capture (Compiled::export_graph) to directory `path` (created; an earlier
// artifact there is replaced).
void save_graph(capture::ExportedGraph exported, const std::string& path);

// Captures `compiled`'s function on the example arguments and writes its artifact to `path`.
template <class Fn, class... A>
void save(const Compiled<Fn>& compiled, const std::string& path, A&&... example_args) {
  save_graph(compiled.export_graph(std::forward<A>(example_args)...), path);
}

class Artifact {
 public:
  Artifact() = default;
  // Runs the artifact on its inputs (the saved function's tensor arguments, flattened, in order).
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  int num_inputs() const;
  // The inputs' dtypes, sizes (symbolic where the artifact takes any size; hints() are the saved example's) and
  // layouts.
  std::vector<TensorMeta> input_metas() const;
  const std::string& path() const;
  // The inputs it takes (dtypes and sizes, symbols included), the symbols' ranges and the guards.
  std::string describe() const;
  explicit operator bool() const { return static_cast<bool>(state_); }

  struct State;  // src/aot/artifact.cpp
  explicit Artifact(std::shared_ptr<const State> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<const State> state_;
};

// Reads, checks and prepares the artifact in directory `path` (see the top of this file).
Artifact load(const std::string& path);

}  // namespace sinter::aot
