// Convolutions of CUDA tensors through cuDNN, loaded at run time like cuBLAS (libcudnn.so.9, or SINTER_CUDNN;
// SINTER_CUDNN=off keeps it unloaded), so libsinter builds and runs without it. float32 is computed without TF32
// unless cuda::set_matmul_allow_tf32 allows it, float64 in float64, bfloat16 and float16 on tensor cores with
// float32 accumulation. The algorithm is cuDNN's heuristic first choice that fits a workspace budget, kept per
// geometry. A call cuDNN does not serve (asymmetric padding, an operand that is not 16-byte aligned, a size past
// int, no algorithm) returns false, and the caller takes its own path.
#pragma once
#include <cstdint>

#include "ops/conv_kernels.h"
#include "sinter/tensor.h"

namespace sinter::cuda {

// Whether cuDNN may serve convolutions of `dtype` here: a GPU (not the simulated device), a floating dtype, the
// library loadable and not switched off.
bool dnn_supported(DType dtype);

// out = conv2d(x, w) + bias (x [N, C, H, W], w [O, C/groups, kh, kw], bias [O] or undefined, out [N, O, OH, OW],
// any strides) on one CUDA device. False when cuDNN does not serve this call (nothing is written); throws
// sinter::Error naming the cuDNN call and the shapes when cuDNN fails.
bool dnn_conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p, const Tensor& out);

// out = conv_transpose2d(x, w) + bias (x [N, Cin, H, W], w [Cin, Cout/groups, kh, kw], out [N, Cout, OH, OW]):
// the input gradient of the conv2d whose input has out's shape, which cuDNN computes as its backward data. p's
// pad_before is the padding; out's sizes carry the output padding. False and throws as dnn_conv2d.
bool dnn_conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p,
                          const Tensor& out);

// dw = the gradient of conv2d(x, w) with respect to w (x [N, C, H, W], dy [N, O, OH, OW], dw [O, C/groups, kh,
// kw], dense in the layout dy has) by cuDNN's backward filter. False and throws as dnn_conv2d.
bool dnn_conv2d_weight_grad(const Tensor& x, const Tensor& dy, const Conv2dParams& p, const Tensor& dw);

// How many convolutions cuDNN has run in this process (tests check that a GPU takes this path).
int64_t dnn_calls();

}  // namespace sinter::cuda
