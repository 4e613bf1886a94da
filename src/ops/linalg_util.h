// What the linalg family's files share: their registration hooks, argument checks, compute-dtype buffers and
// the batched matmul core that mm/bmm/matmul/addmm/linear/einsum all end in.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "ops/kernel_util.h"
#include "ops/shape_util.h"

namespace sinter {

// One per file; register_linalg_ops (linalg_ops.cpp) calls them all.
void register_matmul_ops(OpTable& t);             // linalg_matmul.cpp: mm, bmm, matmul, addmm, linear
void register_einsum_ops(OpTable& t);             // linalg_einsum.cpp
void register_conv_ops(OpTable& t);               // conv_2d.cpp: conv1d, conv2d (+ .padding)
void register_conv_transpose_ops(OpTable& t);     // conv_transpose.cpp
void register_conv_weight_grad_ops(OpTable& t);   // conv_weight_grad.cpp
// conv2d_weight_grad's math in sinter ops on its arguments (the CPU kernel, the CUDA kernel where cuDNN does not
// serve, and the inductor's decomposition on the CPU, which records these ops into the graph).
Tensor conv2d_weight_grad_math(const Args& args);
void register_pool_ops(OpTable& t);               // pool_2d.cpp: max/avg/adaptive pools
void register_upsample_ops(OpTable& t);           // pool_upsample.cpp
void register_attention_ops(OpTable& t);          // attention_sdpa.cpp
// scaled_dot_product_attention's enable_gqa: `kv` [..., Hkv, S, E] with each head repeated for the
// q_heads / Hkv consecutive query heads it serves ([..., q_heads, S, E], a copy); `kv` itself when they match.
Tensor sdpa_repeat_kv(const Tensor& kv, int64_t q_heads);
// scaled_dot_product_attention_backward's math (its CPU kernel, and the CUDA kernel where flash does not apply):
// the gradients through softmax(q k^T * scale) @ v with the ops of q's device, in float32 for the half dtypes.
void sdpa_backward_math(const Args& args, std::vector<Tensor>& outs);
void sdpa_backward_cpu_kernel(OpId op, const Args& args, std::vector<Tensor>& outs);
void register_loss_ops(OpTable& t);               // loss_ops.cpp
void register_embedding_dropout_ops(OpTable& t);  // linalg_embedding.cpp

// The dtype a kernel computes in: float32 for float32/float16/bfloat16, float64, int64 for integers and bool.
DType compute_dtype(DType dtype);
// `t` as a dense tensor of `dtype` in `format` (t itself when it already is one; otherwise a converted copy).
Tensor contiguous_as(const Tensor& t, DType dtype, MemoryFormat format = MemoryFormat::kContiguous);
// Copies (converting, broadcasting) src into dst unless they are the same tensor.
void write_into(const Tensor& dst, const Tensor& src);

// Errors for the user's arguments.
void check_floating_input(const Tensor& t, std::string_view what);
void check_same_dtype(const Tensor& a, const Tensor& b, std::string_view a_name, std::string_view b_name);
// An `int[2]` argument as two plain ints (a single entry is used for both).
std::array<int64_t, 2> int_pair(const Value& v, std::string_view name);

// Element offsets of every item of a batch: `t`'s leading `nbatch` dims (size 1 or equal to `batch`'s entry,
// which broadcasts) enumerated row-major over `batch`.
std::vector<int64_t> batch_offsets(const Tensor& t, int64_t nbatch, const std::vector<int64_t>& batch);

// `t` ready for BLAS in compute dtype `cd`: itself when it has that dtype and its last two dims are
// BLAS-readable, else a dense converted copy.
Tensor blas_operand(const Tensor& t, DType cd);

// out = alpha * (a @ b) + beta * out over the batch: out is a dense contiguous [batch..., M, N] tensor; a is
// [batch_a..., M, K] and b [batch_b..., K, N] of out's rank, whose batch dims are 1 or out's (broadcast
// without copies). a and b have out's dtype. beta == 0 ignores out's contents.
void matmul_into(const Tensor& a, const Tensor& b, const Tensor& out, const Scalar& alpha = 1,
                 const Scalar& beta = 0);

// A view of `base` built directly (no dispatch, so kernels stay invisible to capture hooks): sizes and
// strides in elements, `offset` added to base's own storage offset.
Tensor strided_view(const Tensor& base, const std::vector<int64_t>& sizes,
                    const std::vector<int64_t>& strides, int64_t offset = 0);
// `t` with size-1 dims put in front until it has `rank` dims.
Tensor unsqueeze_to(const Tensor& t, int64_t rank);
std::vector<int64_t> sizes_of(const Tensor& t);
std::vector<int64_t> strides_of(const Tensor& t);

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace sinter
