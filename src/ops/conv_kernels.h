// Convolution compute kernels behind conv1d/conv2d/conv_transpose2d: im2col + GEMM (contiguous or
// channels-last; a width-only im2col and one GEMM per height tap for stride 1), a direct GEMM for 1x1
// stride-1 convs, and direct loops for depthwise convs (conv_depthwise.cpp). Shape rules live in conv_2d.cpp.
#pragma once
#include "ops/op_table.h"
#include "ops/sgemm.h"
#include "sinter/tensor.h"
#include "sinter/value.h"

namespace sinter {

struct Conv2dParams {
  int64_t stride[2] = {1, 1};
  int64_t dilation[2] = {1, 1};
  int64_t pad_before[2] = {0, 0};  // top, left
  int64_t pad_after[2] = {0, 0};   // bottom, right ("same" may pad one more here than before)
  int64_t groups = 1;
};

// Where a caller keeps conv weights packed once (the CPU launcher, for weights that are constants of a graph):
// given the implicit GEMM (B the weight as the conv reads it), returns B packed for it, or null to have it
// packed per call.
struct WeightPacker {
  const blas::PackedB* (*pack)(void* ctx, const blas::TiledGemm& g) = nullptr;
  void* ctx = nullptr;
};

// out = conv2d(input, weight) + bias. input [N, C, H, W], weight [O, C/groups, kh, kw], bias [O] or
// undefined, out [N, O, OH, OW] dense (contiguous or channels-last: the kernel computes in out's layout).
// Floating dtypes.
void conv2d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv2dParams& p,
                    const Tensor& out);

// The same as one implicit GEMM over the output pixels (float32, channels-last `out`, one group, a CPU with
// sinter's micro-kernels), as a depthwise conv (one input and one output channel per group, a CPU with AVX2 or
// AVX-512) or as a direct conv of few input channels (conv_direct.h), calling tile_done(ctx, p0, p1, o0, o1) on each finished block of output pixels [p0, p1)
// (channels-last order) x channels [o0, o1), bias included, while it is still in cache. Returns false, having
// done nothing, when none of those holds.
bool conv2d_forward_tiled(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv2dParams& p,
                          const Tensor& out, blas::TileFn tile_done, void* ctx, const WeightPacker& packer = {});
// conv2d / conv2d.padding with the op's own arguments (checked as the op checks them) into `out` (the op's
// output sizes and layout), through conv2d_forward_tiled. Returns false, having done nothing, when it does not
// apply.
bool conv2d_tiled(OpId op, const Args& args, const Tensor& out, blas::TileFn tile_done, void* ctx,
                  const WeightPacker& packer = {});

// conv1d / conv1d.padding / conv2d / conv2d.padding with the op's own arguments (checked as the op checks them)
// as one conv2d over 4-D views: input and out [N, C, H, W] (a batch of one for an unbatched input, a height of 1
// for conv1d), weight [O, C/groups, kh, kw], the bias (undefined for none) and the parameters.
struct Conv2dCall {
  Tensor input, weight, bias, out;
  Conv2dParams p;
};
Conv2dCall conv2d_call(OpId op, const Args& args, const Tensor& out);

// The kCUDA kernel of those four ops (cuda_conv.cpp): cuDNN where it serves the call, else an im2col copy and a
// cuBLAS GEMM on the device where cuBLAS serves the dtype, else the CPU kernel through the fallback
// (ops/cuda_fallback.h).
void conv_cuda_kernel(OpId op, const Args& args, std::vector<Tensor>& outs);

// out = conv_transpose2d(input, weight) + bias. input [N, Cin, H, W], weight [Cin, Cout/groups, kh, kw],
// out [N, Cout, OH, OW] (any dense layout); pad_before is the padding, pad_after is ignored.
void conv_transpose2d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                              const Conv2dParams& p, const Tensor& out);

}  // namespace sinter
