// Eager ops on CUDA tensors that have no CUDA kernel of their own. First the code generator's kernels: the
// backends layer installs a CudaGeneratedKernel (backends/cuda_eager.cpp) that compiles a one-op graph through
// the inductor's CUDA path, which serves pointwise ops, reductions, normalisations and copies. What it declines
// (random and data-dependent ops, library calls, layouts it cannot write) runs its CPU kernel instead. On the
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

// `op` on CUDA operands: a generated kernel where one serves, else `cpu_kernel` as described above.
void run_without_cuda_kernel(KernelFn cpu_kernel, OpId op, const Args& args, std::vector<Tensor>& outs,
                             bool data_dependent, Device device);

// Runs `op` on CUDA operands with generated kernels, writing `outs` (preallocated by the op's shape rule; for
// an in-place op, self). Returns false, having written nothing, when it leaves the op to the CPU kernel.
using CudaGeneratedKernel = bool (*)(OpId op, const Args& args, std::vector<Tensor>& outs);
void set_cuda_generated_kernel(CudaGeneratedKernel fn);  // installed once, by the backends layer
// scaled_dot_product_attention's CUDA kernel (flash attention and the GPU math path, backends/cuda_attention.cpp),
// installed by the backends layer, which can compile kernels; until then the op runs its CPU kernel staged.
void set_cuda_attention_kernel(KernelFn fn);
KernelFn cuda_attention_kernel();  // null before it is installed
// scaled_dot_product_attention_backward's (flash attention's backward, backends/cuda_attention.cpp), likewise.
void set_cuda_attention_backward_kernel(KernelFn fn);
KernelFn cuda_attention_backward_kernel();
// Whether eager CUDA ops use the generated kernels: SINTER_CUDA_EAGER=generated|cpu (read at each op). The default is
// generated on a GPU and cpu on the simulated device, where the CPU kernels already run on device memory and
// compiling a host object per op and shape would slow every test; tests of the generated path set it.
bool cuda_eager_generated();
// Runs `op` through the installed kernel when cuda_eager_generated(); false when there is none or it declines.
bool run_cuda_generated(OpId op, const Args& args, std::vector<Tensor>& outs);

// How many eager CUDA op calls without a CUDA kernel of their own ran generated code, and how many their CPU
// kernel, since the process started (SINTER_LOGS=perf_hints names the ops that take the CPU kernel).
struct CudaEagerCounts {
  int64_t generated = 0, cpu = 0;
};
CudaEagerCounts cuda_eager_counts();

}  // namespace sinter
