// Matrix products of CUDA tensors through cuBLAS, loaded at run time like the driver (libcublas.so.13, or
// SINTER_CUBLAS), so libsinter builds and runs without it. float32 is computed in float32 (no TF32, as PyTorch's
// default; cuda::set_matmul_allow_tf32 allows it), float64 in float64, bfloat16 and float16 with float32
// accumulation. Integer and bool products have no cuBLAS kernel: the caller runs the CPU kernel instead.
#pragma once
#include "sinter/tensor.h"

namespace sinter::cuda {

// Whether gemm() serves `dtype` on this device (a GPU with cuBLAS loadable, a floating dtype). False on the
// simulated device, whose products run the CPU kernels on its host memory.
bool gemm_supported(DType dtype);

// out = alpha * (a @ b) + beta * out over the leading (batch) dims, which broadcast by stride 0: a [..., m, k],
// b [..., k, n], out [..., m, n] contiguous, all three of one rank >= 2 and one dtype on one CUDA device. An
// operand whose matrices have no unit stride is copied first. Throws sinter::Error naming the cuBLAS call and its
// status when cuBLAS fails.
void gemm(const Tensor& a, const Tensor& b, const Tensor& out, double alpha, double beta);

}  // namespace sinter::cuda
