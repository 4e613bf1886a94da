// Lowering: a functional graph (after the pass pipeline) -> the loop IR.
//
// Pointwise ops and views become lazy index functions that consumers inline (so a chain of pointwise ops is one
// expression); reductions become Reduction nodes; GEMMs (mm, addmm, linear, 2-D matmul on float32) become
// row-blockable Extern nodes whose bias, scaling and later pointwise ops stay lazy so the scheduler can fuse them
// as epilogues; every other op becomes an Extern that runs the eager kernel. A lazy value is materialised into a
// buffer when a graph output or an extern needs memory, or when it has several users and recomputing it would
// cost more than storing it (the one cost-model decision taken here; logged on the `fusion` channel).
#pragma once
#include "inductor/loop_ir.h"
#include "sinter/target.h"

namespace sinter::inductor {

struct LowerOptions {
  // A value with several users is stored rather than recomputed when its expression has more nodes than this.
  int recompute_limit = 24;
  // A lazy expression (a chain of pointwise ops inlined into one kernel body) is stored once it has more nodes
  // than this, so no generated kernel grows with the length of a chain (SINTER_LOGS=fusion logs each cut).
  int max_expression = 1000;
  // What the code is for: ops on tensors of other devices, and GEMMs and convs of dtypes the target's library
  // calls do not take, become plain externs. Null: this machine's CPU.
  const Target* target = nullptr;
};

LoopProgram lower(const Graph& graph, const LowerOptions& options = {});

// Whether the scalar op table knows this graph op (tests and explain use it).
bool is_lowerable_pointwise(OpId op);

}  // namespace sinter::inductor
