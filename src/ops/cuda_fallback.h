// Eager ops on CUDA tensors that have no CUDA kernel of their own yet run their CPU kernel instead. On the
// simulated device the CPU kernel runs on the device memory itself (it is host memory). On a GPU the operands
// are staged: each CUDA tensor argument is copied to a host mirror with its sizes and strides, the CPU kernel
// runs on the mirrors, and the outputs (and arguments written in place) are copied back. Correct for every op
// and every dtype, and the random ops draw the CPU's Philox stream, so one seed gives the same numbers on both
// devices; slow on a GPU, which SINTER_LOGS=perf_hints says once per op. CUDA kernels registered in the op table
// (OpTable::set_kernel) replace the fallback op by op.
#pragma once
#include <vector>

#include "ops/op_table.h"

namespace sinter {

void run_cpu_kernel_for_cuda(KernelFn cpu_kernel, OpId op, const Args& args, std::vector<Tensor>& outs,
                             bool data_dependent, Device device);

}  // namespace sinter
