// A captured graph made runnable: functionalized, compiled by the chosen backend (or aot_eager as the
// fallback), and run with the write-backs that functionalization asks for. Both whole-function entries and
// the segments of functions with graph breaks go through here. Internal to src/capture.
#pragma once
#include <string>
#include <vector>

#include "capture/output_views.h"
#include "capture/tiered.h"
#include "sinter/compile.h"

namespace sinter::capture {

struct Program {
  std::string text;  // the captured graph, printed (before functionalization)
  int num_ops = 0;
  CompiledGraph fn;
  // After fn runs: copy output m.output into input m.input (inputs the function writes).
  struct WriteBack {
    int input = -1;
    int output = -1;
  };
  std::vector<WriteBack> write_backs;
  int num_outputs = 0;               // the user's outputs (the write-back values follow them)
  std::vector<int> output_is_input;  // per user output: the input it is (returned as that real tensor), or -1
  OutputViews output_views;          // user outputs rebuilt as views of what they alias (output_views.h)
  double compile_seconds = 0;
  std::string backend;  // the backend that compiled it ("aot_eager" after a fallback)
  std::string fallback_reason;  // why the chosen backend failed, when aot_eager replaced it
  // A custom backend's outputs are checked against the graph's (built-ins are trusted): per output its dtype,
  // device and sizes, whose symbols take this call's values from where they first appear among the inputs.
  struct OutputSpec {
    DType dtype = kFloat32;
    Device device = kCPU;
    SymIntList sizes;
  };
  struct SymbolSource {
    int input = -1, dim = -1;
    bool stride = false;
  };
  bool check_outputs = false;
  std::vector<OutputSpec> output_specs;
  std::vector<SymbolSource> symbol_sources;  // by symbol id
};

// Functionalizes `graph` and compiles it with options.backend; a failing backend throws, or, as options.fallback
// says (compile.h), logs and compiles with aot_eager instead (`fell_back` is set then). `training`: the compiled
// module was in training mode (CompileContext::training).
// `static_inputs`: CompileContext::static_inputs. Under options.tiered the program starts on aot_eager and the
// backend compiles in the background (tiered.h), counted in `tiers`.
Program compile_program(Graph graph, const std::vector<Tensor>& example_inputs, const CompileOptions& options,
                        bool training, bool* fell_back = nullptr, std::vector<bool> static_inputs = {},
                        std::shared_ptr<TierCounters> tiers = nullptr);
// The backend half of compile_program, for a graph without mutation whose Program fields (outputs, write-backs,
// output views) the caller has set: compiles `graph` into p.fn with options.backend, as compile_program does.
void compile_functional(Program& p, const Graph& graph, const std::vector<Tensor>& example_inputs,
                        const CompileOptions& options, bool training, bool* fell_back = nullptr,
                        std::vector<bool> static_inputs = {}, std::shared_ptr<TierCounters> tiers = nullptr);
// Runs the program on real inputs (in graph input order) and returns the user's outputs.
std::vector<Tensor> run_program(const Program& program, const std::vector<Tensor>& inputs);
// As run_program, owning the inputs, which the backend may free after their last use (CompiledGraph::consume)
// when nothing after the run reads them (no write-backs, outputs rebuilt as views, or outputs that are inputs).
std::vector<Tensor> run_program(const Program& program, std::vector<Tensor>&& inputs);

}  // namespace sinter::capture
