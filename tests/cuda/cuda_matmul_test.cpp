// Matrix products on CUDA tensors (cuBLAS on a GPU; the CPU kernels on the simulated device) against the CPU:
// every rank case of matmul, transposed and broadcast operands, addmm's alpha and beta, linear with and without
// bias, each floating dtype, and integers (which have no cuBLAS kernel and run the CPU kernel).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sinter/compile.h"
#include "sinter/cuda.h"
#include "sinter/nn.h"
#include "sinter/ops.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;

double tolerance(DType dt) { return dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : 2e-2; }

TEST(CudaMatmul, EveryRankCaseAndLayout) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor a = random({6, 5}, dt, 1), b = random({5, 7}, dt, 2), v = random({5}, dt, 3);
    Tensor ba = random({3, 6, 5}, dt, 4), bb = random({3, 5, 7}, dt, 5), b4 = random({2, 1, 5, 7}, dt, 6);
    auto c = [](const Tensor& t) { return t.to(kCUDA); };
    EXPECT_CLOSE(mm(c(a), c(b)).cpu(), mm(a, b), tolerance(dt));
    EXPECT_CLOSE(mm(c(b).t(), c(a).t()).cpu(), mm(b.t(), a.t()), tolerance(dt));  // column-major operands
    EXPECT_CLOSE(bmm(c(ba), c(bb)).cpu(), bmm(ba, bb), tolerance(dt));
    EXPECT_CLOSE(matmul(c(v), c(v)).cpu(), matmul(v, v), tolerance(dt));
    EXPECT_CLOSE(matmul(c(a), c(v)).cpu(), matmul(a, v), tolerance(dt));
    EXPECT_CLOSE(matmul(c(v), c(b)).cpu(), matmul(v, b), tolerance(dt));
    EXPECT_CLOSE(matmul(c(ba), c(b)).cpu(), matmul(ba, b), tolerance(dt));         // broadcast batch (stride 0)
    EXPECT_CLOSE(matmul(c(ba), c(b4)).cpu(), matmul(ba, b4), tolerance(dt));       // [3,6,5] @ [2,1,5,7]
    Tensor q = random({2, 4, 3, 5}, dt, 7), k = random({2, 4, 3, 5}, dt, 8);
    // Attention's layout: batch dims that do not collapse into one stride (a loop of batched calls).
    Tensor qt = c(q).transpose(1, 2), kt = c(k).transpose(1, 2);
    EXPECT_CLOSE(matmul(qt, kt.transpose(-2, -1)).cpu(), matmul(q.transpose(1, 2), k.transpose(1, 2).transpose(-2, -1)),
                 tolerance(dt));
    Tensor s = c(random({6, 10}, dt, 9)).slice(1, 0, 10, 2);  // no unit stride: copied first
    EXPECT_CLOSE(mm(s, c(b)).cpu(), mm(s.cpu(), b), tolerance(dt));
  }
}

TEST(CudaMatmul, AddmmAndLinear) {
  for (DType dt : {kFloat32, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = random({4, 8}, dt, 10), w = random({3, 8}, dt, 11), bias = random({3}, dt, 12);
    Tensor self = random({4, 3}, dt, 13), a = random({4, 8}, dt, 14), b = random({8, 3}, dt, 15);
    EXPECT_CLOSE(linear(x.to(kCUDA), w.to(kCUDA), bias.to(kCUDA)).cpu(), linear(x, w, bias), tolerance(dt));
    EXPECT_CLOSE(linear(x.to(kCUDA), w.to(kCUDA)).cpu(), linear(x, w), tolerance(dt));
    EXPECT_CLOSE(addmm(self.to(kCUDA), a.to(kCUDA), b.to(kCUDA), 0.5, 2.0).cpu(), addmm(self, a, b, 0.5, 2.0),
                 tolerance(dt));
    EXPECT_CLOSE(addmm(bias.to(kCUDA), a.to(kCUDA), b.to(kCUDA)).cpu(), addmm(bias, a, b), tolerance(dt));
  }
  nn::Linear lin(8, 3);
  Tensor x = random({5, 8}, kFloat32, 16);
  Tensor want = lin(x);
  lin.to(kCUDA);
  EXPECT_CLOSE(lin(x.to(kCUDA)).cpu(), want, 1e-5);
}

// Compiled graphs with products: the GEMM extern on cuBLAS (the CPU GEMM when simulated), the bias, GELU and
// residual as generated kernels.
TEST(CudaMatmul, CompiledLinearsAndBatchedProducts) {
  for (DType dt : {kFloat32, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = random({2, 6, 16}, dt, 21), w1 = random({32, 16}, dt, 22), b1 = random({32}, dt, 23);
    Tensor w2 = random({16, 32}, dt, 24), b2 = random({16}, dt, 25);
    auto mlp = [](const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2) {
      return x + linear(gelu(linear(x, w1, b1)), w2, b2);
    };
    auto c = compile(mlp);
    auto d = [](const Tensor& t) { return t.to(kCUDA); };
    EXPECT_CLOSE(c(d(x), d(w1), d(b1), d(w2), d(b2)).cpu(), mlp(x, w1, b1, w2, b2), tolerance(dt));
    auto attn = [](const Tensor& q, const Tensor& k) { return softmax(matmul(q, k.transpose(-2, -1)) * 0.25, -1); };
    Tensor q = random({2, 3, 8, 16}, dt, 26), k = random({2, 3, 8, 16}, dt, 27);
    EXPECT_CLOSE(compile(attn)(d(q), d(k)).cpu(), attn(q, k), tolerance(dt));
  }
}

TEST(CudaMatmul, IntegersRunTheCpuKernel) {
  Tensor a = (random({4, 5}, kFloat32, 17) * 10).to(kInt64), b = (random({5, 3}, kFloat32, 18) * 10).to(kInt64);
  EXPECT_TENSOR_EQ(mm(a.to(kCUDA), b.to(kCUDA)).cpu(), mm(a, b));
}

TEST(CudaMatmul, Float32WithoutTf32UnlessAllowed) {
  EXPECT_FALSE(cuda::matmul_allow_tf32());
  Tensor a = random({64, 256}, kFloat64, 19), b = random({256, 64}, kFloat64, 20);
  Tensor want = mm(a, b);
  Tensor got = mm(a.to(kFloat32).to(kCUDA), b.to(kFloat32).to(kCUDA)).cpu().to(kFloat64);
  EXPECT_CLOSE(got, want, 1e-5);  // TF32 (10-bit mantissas) would be off by about 1e-3
  cuda::set_matmul_allow_tf32(true);
  Tensor fast = mm(a.to(kFloat32).to(kCUDA), b.to(kFloat32).to(kCUDA)).cpu().to(kFloat64);
  cuda::set_matmul_allow_tf32(false);
  EXPECT_CLOSE(fast, want, 1e-2);
}

}  // namespace
}  // namespace sinter
