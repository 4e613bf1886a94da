// The kernel plan: what every code generator needs to know about a scheduled loop kernel, decided once here so
// that the C++ printer (and the CUDA one after it) only prints. Per kernel:
// - its loops per stage, neighbouring dims that every access walks as one coalesced and size-1 dims dropped, the
//   bodies and store offsets rewritten for them; the last loop of a stage is the innermost and, where the data
//   allows, the contiguous one;
// - the index width: 32 bits when every size, stride and offset the kernel touches is static and below 2^31;
// - cached values: a costly per-element value that a reduction computes and a later stage of the same rows
//   computes again (softmax's exp(x - max)) is stored by the reduction into that stage's output and loaded there;
// - forwarded loads: loads of values the kernel itself computed earlier (a reduction's row result, a value of the
//   same stage), which a printer reads from a register instead of memory;
// - hoisted reciprocals: divisions by a row's reduction result, printed as one reciprocal per row and a multiply;
// - column lanes: a reduction whose data is contiguous across rows, not along the reduced dim, vectorised across
//   rows;
// - its buffer arguments in call order, and the iteration count and work per iteration the launcher splits.
// The plan prints as text (SINTER_LOGS=schedule), which the scheduler's tests compare.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "inductor/loop_ir.h"
#include "inductor/scheduler.h"

namespace sinter::inductor {

struct LoopDim {
  int var = 0;   // the loop variable (loop_var(var)) this loop walks
  ExprPtr size;  // its trip count (several original dims multiplied when they coalesced)
};

struct PlannedNode {
  int node = -1;                   // the loop node
  SExpr body = nullptr;            // rewritten for the stage's loops
  ExprPtr store;                   // the store offset, rewritten likewise
  bool stored = true;              // false for a kernel-local buffer (its value never goes to memory)
  int keep_for = -1;               // reduction: the pointwise node whose output keeps `body` per element
  ExprPtr keep_at;                 // ... and where in that node's output (its store offset)
  std::vector<SExpr> loaded_keeps; // pointwise: values a reduction of this kernel kept in its output
};

struct StagePlan {
  bool reduction = false;
  std::vector<LoopDim> loops;  // innermost last; a reduction reduces over all of them
  std::vector<PlannedNode> nodes;
  ExprPtr elems;  // product of the loops' sizes (a reduction's element count: a mean divides by it)
  // Loads a printer reads from the kernel's own values: load -> the loop node that computed it.
  std::unordered_map<SExpr, int> forwarded;
  std::unordered_set<SExpr> reciprocal_divs;  // div nodes whose divisor is a row's reduction result
};

// A launch-time condition of a generated kernel's fast path (the CUDA vector path): a buffer argument's address
// aligned to `bytes`, or a symbolic size a multiple of `by`. The launcher evaluates them on the host.
struct VectorCheck {
  int argument = -1;  // >= 0: the kernel's buffer parameter that must be aligned
  unsigned bytes = 0;
  ExprPtr divisible;  // argument < 0: this size must be a multiple of `by`
  int64_t by = 1;
};

struct KernelPlan {
  int kernel = -1;  // index into Schedule::kernels
  std::string name;
  bool rows = false;            // outer rows in parallel, stages inside; else one flat pointwise stage
  // rows with one reduction stage whose loads are contiguous along the last outer dim and strided along the
  // reduced one (a column sum: a bias's gradient): vector lanes run over consecutive rows, not reduced elements.
  bool column_lanes = false;
  bool index32 = false;         // every index fits in 32 bits
  std::vector<LoopDim> outer;   // rows: the parallel dims (loop variables 0 .. outer.size()-1)
  std::vector<StagePlan> stages;
  std::vector<int> buffers;     // program buffers in argument order (loads, then stores, node by node)
  ExprPtr total;      // iterations the launcher splits: rows, or elements of a flat kernel
  ExprPtr work;       // elements of work per iteration (the parallel grain)
  ExprPtr row_elems;  // flat kernels: elements per row of a GEMM output it walks as an epilogue; null for rows
  std::string epilogue_of;  // the GEMM kernel that runs this one per row block, if any

  int argument(int buffer) const;  // position of `buffer` in `buffers`
  std::string str(const LoopProgram& program) const;
};

struct ProgramPlan {
  std::unique_ptr<SPool> pool;       // rewritten expressions, over the program's pool
  std::vector<KernelPlan> kernels;   // one per Schedule::kernels entry; externs have an empty name
  std::string str(const LoopProgram& program) const;
};

// Plans every loop kernel of `schedule`. `program` must outlive the plan (its pool is the plan pool's base).
ProgramPlan plan_kernels(const LoopProgram& program, const Schedule& schedule);

}  // namespace sinter::inductor
