// C++ source for the scheduler's kernels (the CPU target). Each kernel becomes one function
//   extern "C" void kernelN(void* args, long long begin, long long end)
// that computes outer indices [begin, end) (rows for a row kernel, elements for a flat pointwise kernel), so the
// CPU launcher splits the range over its thread pool and a GEMM calls its epilogue on the rows it just produced.
// `args` points to {void** bufs; const long long* syms}: the kernel's buffers in `KernelPlan::buffers` order
// and the values of the symbols s0, s1, ... (sizes are arguments, so one kernel serves every admitted shape).
// The source is plain C++ a person can read, with the graph nodes each loop came from as comments; it includes
// no standard header (the prelude defines what it needs) and is split into several translation units so they
// compile in parallel.
#pragma once
#include <string>
#include <vector>

#include "inductor/kernel_plan.h"

namespace sinter::codegen::cpp {

struct GeneratedCode {
  std::vector<std::string> units;  // translation units (each complete, prelude included)
};

// Prints every planned loop kernel of `plan` (externs have none). The function of kernel k is named
// plan.kernels[k].name and takes its buffers in plan.kernels[k].buffers order.
GeneratedCode generate(const inductor::LoopProgram& program, const inductor::ProgramPlan& plan, int max_units);

}  // namespace sinter::codegen::cpp
