// The fusion scheduler: loop nodes -> kernels, for a Target. A kernel is an iteration domain (outer dims run
// in parallel; each stage loops over its own inner dims) holding fused node bodies, or one library call. Every
// decision, taken or refused, is logged on the `fusion` channel with its reason and score.
//
// Rules (greedy over the nodes in order, which is a topological order):
// - vertical and horizontal: a pointwise or reduction node joins the open kernel when its domain starts with the
//   kernel's outer dims and everything it reads from nodes of that kernel lies in the same outer row (a
//   reduction's result is read at its own output index; a stored row is read within the row);
// - a reduction turns a pointwise-only kernel into a row kernel (its prologue and epilogue then share rows:
//   layer norm, softmax); it is refused when that would leave no parallelism where there was some, and so is a
//   large element-wise node after a full reduction (one row: a loss's mean and its gradient);
// - an extern closes the open kernel; the kernel right after a row-blockable GEMM becomes its epilogue when it
//   walks the GEMM's output rows, reads the GEMM's output only in the row it computes, and has a shape the
//   target's library call accepts (Target::accepts: tile or rows epilogues on the CPU).
// - a node is refused when the kernel's bodies would pass kMaxKernelNodes scalar nodes (a chain of thousands of
//   ops becomes several kernels; lowering cuts each expression at LowerOptions::max_expression).
// - last, where the target runs combined kernels: consecutive flat element-wise kernels that store only the
//   program's outputs and share no buffer one of them writes (an optimiser's update of each parameter) form a
//   combined group, which runs as one launch (at most kMaxCombined kernels a group).
// Score = bytes of memory traffic a fusion saves (a buffer neither written nor read back), for the logs.
#pragma once
#include <string>
#include <vector>

#include "inductor/loop_ir.h"
#include "sinter/target.h"

namespace sinter::inductor {

// The most scalar nodes (summed over its fused bodies) one generated kernel computes: compile time of the
// generated C++ grows faster than linearly with the size of one function, and a memory round trip per few
// thousand ops costs little next to them.
inline constexpr int kMaxKernelNodes = 4000;
// The most kernels one combined launch runs.
inline constexpr int kMaxCombined = 64;

struct Stage {
  std::vector<int> nodes;  // loop nodes computed in one inner loop nest (or one reduction loop)
  bool reduction = false;
};

struct Kernel {
  enum class Kind : uint8_t { kLoops, kExtern } kind = Kind::kLoops;
  std::vector<int> nodes;         // in order
  std::vector<ExprPtr> outer;     // kLoops: dims walked in parallel (every node's domain starts with them)
  bool rows = false;              // kLoops: has a reduction, so outer rows are fixed; else flat pointwise
  std::vector<Stage> stages;      // kLoops
  int epilogue_of = -1;           // kLoops: index of the GEMM kernel that runs this one per row block
  int epilogue = -1;              // kExtern GEMM: index of its epilogue kernel
  int combined = -1;              // kLoops: its group in Schedule::combined (it runs in the group's one launch)
  std::vector<int> local_buffers; // buffers written and read only inside this kernel (never stored)
  std::string name;               // "kernel3"
};

struct Schedule {
  std::vector<Kernel> kernels;
  std::vector<std::string> decisions;  // "fuse loop node 3 (%5 = add) into kernel1: ... (score 4096 bytes)"
  std::vector<std::vector<int>> combined;  // groups of independent flat kernels run as one launch, in order
  int launches() const;  // launches per call (an epilogue runs inside its GEMM, a combined group is one)
  // The kernel whose launch runs kernel k: its GEMM for an epilogue, its group's first for a combined kernel.
  int launched_with(int k) const;
};

// `target` decides what may fuse into a library call (Target::accepts) and when a kernel is large enough that
// serialising it would lose parallelism (Target::parallel_min_elements).
Schedule schedule(const LoopProgram& program, const Target& target = host_cpu_target());

}  // namespace sinter::inductor
