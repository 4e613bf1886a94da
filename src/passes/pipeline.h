// The inductor pass pipeline: what runs on a captured graph before lowering, in the order of docs/ARCHITECTURE.md
// section 6 (functionalize -> patterns -> decompose -> simplify), as one flat named list. It logs the graph after each
// pass that changed it (SINTER_LOGS=passes), times every pass, lets any pass be switched off by name
// (SINTER_DISABLE_PASSES=decompose,simplify) and verifies the graph around every pass when SINTER_VERIFY_PASSES=1
// or in builds without NDEBUG.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "passes/functionalize.h"
#include "sinter/compile.h"
#include "sinter/graph.h"

namespace sinter::passes {

struct PassRecord {
  std::string name;
  bool changed = false;
  double ms = 0;
};

struct PassContext {
  bool freeze = false;    // parameters are kConstant nodes: patterns may fold them (conv + batch_norm)
  bool training = false;  // the module runs in training mode (no pass depends on it yet: room for autograd)
  // The target's kernels round every op as eager does (no contraction of a * b + c), so a value recomputed in a
  // fused kernel equals itself: var and std may decompose (decompose.h). The CUDA target's NVRTC code does.
  bool exact_recompute = false;
  // The target runs float32 convolutions fastest in channels-last (the CPU with sinter's GEMM micro-kernels):
  // the layout pass converts them (layout.h).
  bool channels_last_convs = false;
  // Where functionalize reports writes into graph inputs when the graph still mutates (capture hands over
  // functional graphs, so this is normally untouched); null makes such a graph an error.
  FunctionalizeResult* functionalized = nullptr;
  // Called after every pass that ran, with the graph as it left the pass (SINTER_DEBUG_DIR dumps it).
  std::function<void(const PassRecord&, const Graph&)> after_pass;

  // What the passes take from a compilation's context: freeze (so compile(module, {.freeze = true}) folds a
  // frozen conv + batch_norm) and training.
  static PassContext from(const CompileContext& ctx);
};

// Runs the pipeline on `g` in place; returns one record per pass that ran (disabled passes are left out).
std::vector<PassRecord> run_inductor_passes(Graph& g, const PassContext& ctx);

// The pipeline's pass names, in order.
std::vector<std::string> inductor_pass_names();

}  // namespace sinter::passes
