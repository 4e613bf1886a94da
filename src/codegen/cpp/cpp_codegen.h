// C++ source for the scheduler's kernels (the CPU target). Each kernel becomes one function
//   extern "C" void kernelN(void* args, long long begin, long long end)
// that computes outer indices [begin, end) (rows for a row kernel, elements for a flat pointwise kernel), so the
// runtime splits the range over its thread pool and a GEMM calls its epilogue on the rows it just produced.
// `args` points to {void** bufs; const long long* syms}: the kernel's buffers in `KernelInfo::buffers` order
// and the values of the symbols s0, s1, ... (sizes are arguments, so one kernel serves every admitted shape).
// The source is plain C++ a person can read, with the graph nodes each loop came from as comments; it includes
// no standard header (the prelude defines what it needs) and is split into several translation units so they
// compile in parallel.
#pragma once
#include <string>
#include <vector>

#include "inductor/loop_ir.h"
#include "inductor/scheduler.h"

namespace sinter::codegen::cpp {

struct KernelInfo {
  std::string symbol;        // the function's name in the shared object
  std::vector<int> buffers;  // program buffer ids, in the order the function expects them
  ExprPtr total;        // iteration count: rows (row kernel) or elements (flat kernel)
  ExprPtr work;         // elements of work per iteration (for the parallel grain)
  ExprPtr row_elems;    // flat kernels: elements per GEMM row when used as an epilogue (else null)
};

struct GeneratedCode {
  std::vector<std::string> units;   // translation units (each complete, prelude included)
  std::vector<KernelInfo> kernels;  // one per Schedule::kernels entry (extern entries have an empty symbol)
};

// `program` is taken by reference because dims are coalesced (a rewrite of index expressions through its pool).
GeneratedCode generate(inductor::LoopProgram& program, const inductor::Schedule& schedule, int max_units);

}  // namespace sinter::codegen::cpp
