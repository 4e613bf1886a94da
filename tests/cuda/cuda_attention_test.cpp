// scaled_dot_product_attention on CUDA tensors (backends/cuda_attention.cpp) against the CPU kernel on the same inputs:
// the flash kernel for bfloat16 and float16 (partial row and key tiles, causal with L < S and L = S, bool and
// additive masks broadcast over the batch, fully masked rows, key/value heads broadcast over query heads, strided
// q/k/v views as gpt_block makes them, head dims 32, 64 and 128), and the math path on the GPU for what flash does
// not take (float32, a head dim of 40, batch dims that do not merge); none of them run the CPU kernel. A compiled
// naive attention on CUDA (rewritten into the op) matches eager. On the simulated device with generated eager
// kernels, as on a GPU. The backward op: flash's backward against its CPU kernel, the math where flash's does not
// apply, and autograd through the op eagerly and compiled.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/cuda_fallback.h"
#include "scoped_env.h"
#include "sinter/compile.h"
#include "sinter/cuda.h"
#include "sinter/ops.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;

class CudaAttention : public ::testing::Test {
 protected:
  testing::ScopedEnv generated_{"SINTER_CUDA_EAGER", "generated"};
};

struct Sdpa {
  Tensor mask;
  bool causal = false;
  std::optional<double> scale;
  bool gqa = false;
};

// The CUDA result on CUDA copies of q, k, v (and the mask), against the CPU kernel; no CPU kernel may run but, on
// the simulated device, the math path's `products` (its GEMMs run the CPU's there).
void expect_like_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Sdpa& a, double rtol = -1,
                     int64_t products = 0) {
  Tensor want = scaled_dot_product_attention(q, k, v, a.mask, 0.0, a.causal, a.scale, a.gqa);
  Tensor dq = q.to(kCUDA), dk = k.to(kCUDA), dv = v.to(kCUDA);
  Tensor dm = a.mask.defined() ? a.mask.to(kCUDA) : Tensor();
  CudaEagerCounts before = cuda_eager_counts();
  Tensor got = scaled_dot_product_attention(dq, dk, dv, dm, 0.0, a.causal, a.scale, a.gqa);
  EXPECT_EQ(cuda_eager_counts().cpu, before.cpu + (cuda::is_simulated() ? products : 0))
      << "an op took its CPU kernel";
  ASSERT_TRUE(got.is_cuda());
  EXPECT_CLOSE(got.cpu(), want, rtol);
}

TEST_F(CudaAttention, FlashMatchesTheCpuKernel) {
  for (DType dt : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor q = random({2, 2, 70, 64}, dt, 1), k = random({2, 2, 130, 64}, dt, 2), v = random({2, 2, 130, 64}, dt, 3);
    expect_like_cpu(q, k, v, {});
    expect_like_cpu(q, k, v, {.scale = 0.3});
    expect_like_cpu(q, k, v, {.causal = true});  // L < S: top-left aligned
    Tensor sq = random({1, 3, 100, 64}, dt, 4);
    expect_like_cpu(sq, random({1, 3, 100, 64}, dt, 5), random({1, 3, 100, 64}, dt, 6), {.causal = true});
  }
}

TEST_F(CudaAttention, FlashMasks) {
  DType dt = kBFloat16;
  Tensor q = random({2, 3, 40, 64}, dt, 7), k = random({2, 3, 72, 64}, dt, 8), v = random({2, 3, 72, 64}, dt, 9);
  Tensor keep = gt(random({40, 72}, kFloat32, 10), -0.5);
  // Rows 3 and 17 see no key: zeros, as the CPU kernel gives.
  Tensor none = ones({1, 72}, TensorOptions(kBool));
  keep = keep.clone();
  keep.slice(0, 3, 4).copy_(logical_not(none));
  keep.slice(0, 17, 18).copy_(logical_not(none));
  expect_like_cpu(q, k, v, {.mask = keep});
  Tensor got = scaled_dot_product_attention(q.to(kCUDA), k.to(kCUDA), v.to(kCUDA), keep.to(kCUDA)).cpu();
  EXPECT_EQ(got.slice(2, 3, 4).abs().sum().item<double>(), 0.0);
  expect_like_cpu(q, k, v, {.mask = random({2, 1, 40, 72}, dt, 11)});  // additive, broadcast over heads
  expect_like_cpu(q, k, v, {.mask = random({72}, dt, 12)});             // additive, over the keys only
}

TEST_F(CudaAttention, FlashLayoutsAndHeadDims) {
  DType dt = kBFloat16;
  // One key/value head for every query head (broadcast batch dim).
  expect_like_cpu(random({2, 4, 33, 64}, dt, 13), random({2, 1, 50, 64}, dt, 14), random({2, 1, 50, 64}, dt, 15), {});
  // Grouped-query attention: 6 query heads over 2 and over 1 key/value heads, with a mask and causal.
  expect_like_cpu(random({2, 6, 33, 64}, dt, 26), random({2, 2, 70, 64}, dt, 27), random({2, 2, 70, 64}, dt, 28),
                  {.causal = true, .gqa = true});
  expect_like_cpu(random({6, 33, 64}, dt, 29), random({1, 70, 64}, dt, 30), random({1, 70, 64}, dt, 31),
                  {.mask = random({33, 70}, dt, 32), .gqa = true});
  // q, k, v as gpt_block splits its qkv projection: views of one [B, S, 3, H, Dh] tensor.
  Tensor qkv = random({2, 65, 3, 2, 64}, dt, 16).permute({2, 0, 3, 1, 4});
  expect_like_cpu(qkv.select(0, 0), qkv.select(0, 1), qkv.select(0, 2), {.causal = true});
  for (int64_t d : {32, 128}) {
    SCOPED_TRACE(d);
    expect_like_cpu(random({1, 2, 20, d}, dt, 17), random({1, 2, 90, d}, dt, 18), random({1, 2, 90, d}, dt, 19), {});
  }
  // Rank 3 and rank 5 (three batch dims that merge into two).
  expect_like_cpu(random({3, 10, 16}, dt, 20), random({3, 12, 16}, dt, 21), random({3, 12, 16}, dt, 22), {});
  expect_like_cpu(random({2, 2, 2, 10, 16}, dt, 23), random({2, 2, 2, 12, 16}, dt, 24),
                  random({2, 2, 2, 12, 16}, dt, 25), {});
}

TEST_F(CudaAttention, MathPathOnTheGpu) {
  expect_like_cpu(random({2, 2, 30, 64}), random({2, 2, 40, 64}), random({2, 2, 40, 64}), {.causal = true}, 1e-5, 2);
  Tensor keep = gt(random({30, 40}, kFloat32, 30), 0.0);
  keep.slice(0, 5, 6).fill_(false);
  expect_like_cpu(random({2, 2, 30, 64}, kFloat32, 31), random({2, 2, 40, 64}, kFloat32, 32),
                  random({2, 2, 40, 64}, kFloat32, 33), {.mask = keep}, 1e-5, 2);
  DType dt = kBFloat16;
  expect_like_cpu(random({2, 3, 30, 40}, dt, 34), random({2, 3, 36, 40}, dt, 35), random({2, 3, 36, 40}, dt, 36),
                  {.causal = true}, -1, 2);  // head dim 40
  // Batch dims that no two strides describe: k transposed over its batch dims.
  Tensor kt = random({3, 2, 2, 36, 16}, dt, 37).permute({1, 0, 2, 3, 4});
  expect_like_cpu(random({2, 3, 2, 30, 16}, dt, 38), kt, random({2, 3, 2, 36, 16}, dt, 39), {}, -1, 2);
  // Grouped-query attention in float32.
  expect_like_cpu(random({2, 4, 30, 16}, kFloat32, 40), random({2, 2, 36, 16}, kFloat32, 41),
                  random({2, 2, 36, 16}, kFloat32, 42), {.gqa = true}, 1e-5, 2);
}

// scaled_dot_product_attention_backward on CUDA copies against its CPU kernel (the math in float32); `flash`: no
// CPU kernel and no product may run (flash's kernels only).
void expect_backward_like_cpu(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                              double rtol, bool flash = true) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1).hint()));
  std::vector<Tensor> want = scaled_dot_product_attention_backward(g, q, k, v, causal, scale);
  CudaEagerCounts before = cuda_eager_counts();
  std::vector<Tensor> got =
      scaled_dot_product_attention_backward(g.to(kCUDA), q.to(kCUDA), k.to(kCUDA), v.to(kCUDA), causal, scale);
  if (flash) EXPECT_EQ(cuda_eager_counts().cpu, before.cpu) << "an op took its CPU kernel";
  ASSERT_EQ(got.size(), 3u);
  const char* names[] = {"grad_query", "grad_key", "grad_value"};
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(names[i]);
    ASSERT_TRUE(got[i].is_cuda());
    EXPECT_EQ(got[i].sizes().hints(), want[i].sizes().hints());
    EXPECT_CLOSE(got[i].cpu().to(kFloat32), want[i].to(kFloat32), rtol);
  }
}

// Flash attention's backward (the stats pass, then the dq and dk/dv kernels): partial query and key tiles, L < S
// and L = S, causal or not, a custom scale's absence, q/k/v as gpt_block's views of one qkv tensor, head dims 16,
// 32 and 64, rank 3.
TEST_F(CudaAttention, FlashBackwardMatchesTheCpu) {
  for (DType dt : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const double rtol = dt == kBFloat16 ? 3e-2 : 5e-3;
    for (bool causal : {false, true}) {
      SCOPED_TRACE(causal ? "causal" : "not causal");
      expect_backward_like_cpu(random({2, 2, 70, 64}, dt, 50), random({2, 2, 70, 64}, dt, 51),
                               random({2, 2, 130, 64}, dt, 52), random({2, 2, 130, 64}, dt, 53), causal, rtol);
      expect_backward_like_cpu(random({1, 3, 100, 32}, dt, 54), random({1, 3, 100, 32}, dt, 55),
                               random({1, 3, 100, 32}, dt, 56), random({1, 3, 100, 32}, dt, 57), causal, rtol);
    }
  }
  DType dt = kBFloat16;
  Tensor qkv = random({2, 65, 3, 2, 64}, dt, 58).permute({2, 0, 3, 1, 4});
  expect_backward_like_cpu(random({2, 2, 65, 64}, dt, 59), qkv.select(0, 0), qkv.select(0, 1), qkv.select(0, 2), true,
                           3e-2);
  expect_backward_like_cpu(random({3, 40, 16}, dt, 60), random({3, 40, 16}, dt, 61), random({3, 24, 16}, dt, 62),
                           random({3, 24, 16}, dt, 63), false, 3e-2);
}

// What flash's backward does not take runs the math on the device: float32, a head dim above 64.
TEST_F(CudaAttention, BackwardMathPath) {
  expect_backward_like_cpu(random({2, 2, 30, 32}), random({2, 2, 30, 32}), random({2, 2, 40, 32}),
                           random({2, 2, 40, 32}), true, 1e-5, false);
  DType dt = kBFloat16;
  expect_backward_like_cpu(random({1, 2, 20, 128}, dt, 64), random({1, 2, 20, 128}, dt, 65),
                           random({1, 2, 36, 128}, dt, 66), random({1, 2, 36, 128}, dt, 67), false, 2e-2, false);
}

// Autograd through scaled_dot_product_attention on CUDA takes the backward op; its gradients match the CPU's
// (whose derivative is the decomposition), eagerly and in a compiled training step.
TEST_F(CudaAttention, GradientsThroughTheBackwardOp) {
  DType dt = kBFloat16;
  Tensor q = random({2, 2, 48, 64}, dt, 68), k = random({2, 2, 48, 64}, dt, 69), v = random({2, 2, 48, 64}, dt, 70);
  auto loss = [](const Tensor& a, const Tensor& b, const Tensor& c) {
    Tensor o = scaled_dot_product_attention(a, b, c, {}, 0.0, true);
    return (o.to(kFloat32) * o.to(kFloat32)).sum();
  };
  auto grads = [&](const Tensor& a0, const Tensor& b0, const Tensor& c0, bool compiled) {
    Tensor a = a0.detach().requires_grad_(), b = b0.detach().requires_grad_(), c = c0.detach().requires_grad_();
    if (compiled) {
      auto f = compile(loss);
      f(a, b, c).backward();
    } else {
      loss(a, b, c).backward();
    }
    return std::vector<Tensor>{a.grad().cpu().to(kFloat32), b.grad().cpu().to(kFloat32), c.grad().cpu().to(kFloat32)};
  };
  std::vector<Tensor> want = grads(q, k, v, false);
  for (bool compiled : {false, true}) {
    SCOPED_TRACE(compiled ? "compiled" : "eager");
    std::vector<Tensor> got = grads(q.to(kCUDA), k.to(kCUDA), v.to(kCUDA), compiled);
    for (int i = 0; i < 3; ++i) EXPECT_CLOSE(got[i], want[i], 3e-2);
  }
}

TEST_F(CudaAttention, CompiledNaiveAttentionOnCuda) {
  auto naive = [](const Tensor& q, const Tensor& k, const Tensor& v) {
    return matmul(softmax(matmul(q, k.transpose(-2, -1)) * 0.125, -1), v);
  };
  DType dt = kBFloat16;
  Tensor q = random({2, 2, 48, 64}, dt, 40).to(kCUDA), k = random({2, 2, 80, 64}, dt, 41).to(kCUDA),
         v = random({2, 2, 80, 64}, dt, 42).to(kCUDA);
  auto f = compile(naive);
  Tensor want = naive(q, k, v).cpu();
  EXPECT_CLOSE(f(q, k, v).cpu(), want, 2e-2);
  EXPECT_CLOSE(f(q, k, v).cpu(), want, 2e-2);
}

}  // namespace
}  // namespace sinter
