// Eager CUDA ops through the code generator (backends/cuda_eager.cpp), as they run on a GPU: pointwise ops,
// reductions, normalisations, in-place ops and copies on CUDA tensors of several dtypes and layouts, each
// against the same op on the CPU, and counted as generated rather than run by the CPU kernel. In simulation the
// generated path is the one SINTER_CUDA_EAGER=generated selects.
#include <gtest/gtest.h>

#include <functional>

#include "backends/backends.h"
#include "ops/cuda_fallback.h"
#include "scoped_env.h"
#include "sinter/cuda.h"
#include "sinter/ops.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;

struct Case {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> fn;  // of two operands, both [6, 40] of the case's dtype
};

// Runs `fn` on CUDA copies of `a`, `b` and on the CPU, compares, and checks that every op ran generated code.
void expect_generated_like_cpu(const Case& c, const Tensor& a, const Tensor& b, double rtol = -1) {
  SCOPED_TRACE(c.name);
  Tensor want = c.fn(a, b);
  Tensor da = a.to(kCUDA), db = b.to(kCUDA);
  CudaEagerCounts before = cuda_eager_counts();
  Tensor got = c.fn(da, db);
  CudaEagerCounts after = cuda_eager_counts();
  EXPECT_TRUE(got.is_cuda());
  EXPECT_EQ(got.dtype(), want.dtype());
  EXPECT_EQ(got.sizes().hints(), want.sizes().hints());
  EXPECT_EQ(got.strides().hints(), want.strides().hints()) << "eager CUDA keeps the CPU's output layout";
  EXPECT_CLOSE(got.cpu(), want, rtol);
  EXPECT_GT(after.generated, before.generated);
  EXPECT_EQ(after.cpu, before.cpu) << "an op took its CPU kernel";
}

class CudaEagerCodegen : public ::testing::Test {
 protected:
  testing::ScopedEnv generated_{"SINTER_CUDA_EAGER", "generated"};
};

TEST_F(CudaEagerCodegen, PointwiseOpsInEveryFloatDtype) {
  std::vector<Case> cases = {
      {"exp", [](const Tensor& a, const Tensor&) { return exp(a); }},
      {"gelu", [](const Tensor& a, const Tensor&) { return gelu(a); }},
      {"add broadcast", [](const Tensor& a, const Tensor& b) { return add(a, b.select(0, 1)); }},
      {"mul scalar", [](const Tensor& a, const Tensor&) { return a * 0.25; }},
      {"div", [](const Tensor& a, const Tensor& b) { return a / (b.abs() + 1); }},
      {"where", [](const Tensor& a, const Tensor& b) { return where(a > b, a, b); }},
      {"transposed input", [](const Tensor& a, const Tensor& b) { return a.t() + b.t(); }},
      {"strided input", [](const Tensor& a, const Tensor&) { return sigmoid(a.slice(1, 1, 40, 3)); }},
      {"to float64", [](const Tensor& a, const Tensor&) { return a.to(kFloat64); }},
  };
  for (DType dt : {kFloat32, kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor a = random({6, 40}, dt, 1), b = random({6, 40}, dt, 2);
    for (const Case& c : cases) expect_generated_like_cpu(c, a, b);
  }
}

TEST_F(CudaEagerCodegen, IntegerAndBoolOps) {
  Tensor a = random({6, 40}, kInt64, 3), b = random({6, 40}, kInt64, 4);
  expect_generated_like_cpu({"int add", [](const Tensor& x, const Tensor& y) { return x + y * 3; }}, a, b);
  expect_generated_like_cpu({"compare", [](const Tensor& x, const Tensor& y) { return x.lt(y); }}, a, b);
  expect_generated_like_cpu({"to int32", [](const Tensor& x, const Tensor&) { return x.to(kInt32); }}, a, b);
}

TEST_F(CudaEagerCodegen, ReductionsAndNormalisations) {
  Tensor a = random({6, 40}, kFloat32, 5), b = random({6, 40}, kFloat32, 6);
  std::vector<Case> cases = {
      {"sum dim", [](const Tensor& x, const Tensor&) { return x.sum({1}); }},
      {"mean all", [](const Tensor& x, const Tensor&) { return x.mean(); }},
      {"amax keepdim", [](const Tensor& x, const Tensor&) { return amax(x, {0}, true); }},
      {"softmax", [](const Tensor& x, const Tensor&) { return softmax(x, 1); }},
      {"layer_norm", [](const Tensor& x, const Tensor& y) { return layer_norm(x, {40}, y.select(0, 0), y.select(0, 1)); }},
      // In eval, batch_norm only reads its running statistics: generated like any function of its operands.
      {"batch_norm eval",
       [](const Tensor& x, const Tensor& y) {
         return batch_norm(x, y.select(0, 0), abs(y.select(0, 1)) + 0.5, y.select(0, 2), y.select(0, 3), false,
                           0.1, 1e-5);
       }},
  };
  for (const Case& c : cases) expect_generated_like_cpu(c, a, b, 1e-5);
}

TEST_F(CudaEagerCodegen, InPlaceOpsWriteSelf) {
  Tensor a = random({6, 40}, kFloat32, 7), b = random({6, 40}, kFloat32, 8);
  // Each case writes into a copy of `x` (contiguous, then a transposed view of a contiguous tensor) and returns it.
  std::vector<Case> cases = {
      {"add_", [](const Tensor& x, const Tensor& y) { Tensor s = x.clone(); s.add_(y, 0.5); return s; }},
      {"mul_ transposed", [](const Tensor& x, const Tensor& y) {
         Tensor s = x.t().contiguous().t();
         s.mul_(y);
         return s;
       }},
      {"relu_", [](const Tensor& x, const Tensor&) { Tensor s = x.clone(); s.relu_(); return s; }},
      {"fill_", [](const Tensor& x, const Tensor&) { Tensor s = x.clone(); s.fill_(-0.5); return s; }},
      {"copy_ broadcast", [](const Tensor& x, const Tensor& y) { Tensor s = x.clone(); s.copy_(y.select(0, 2)); return s; }},
      {"copy_ converts", [](const Tensor& x, const Tensor& y) {
         Tensor s = x.to(kBFloat16);
         s.copy_(y.t().contiguous().t());
         return s;
       }},
  };
  for (const Case& c : cases) expect_generated_like_cpu(c, a, b);
}

TEST_F(CudaEagerCodegen, CopiesIntoDenseLayouts) {
  Tensor a = random({4, 5, 6}, kFloat32, 9);
  Tensor d = a.to(kCUDA);
  // contiguous() of a permuted tensor, clone of a sliced one, copy_ into a channels-last-like layout.
  EXPECT_TRUE(testing::equal(d.permute({2, 0, 1}).contiguous().cpu(), a.permute({2, 0, 1}).contiguous()));
  EXPECT_TRUE(testing::equal(d.slice(2, 1, 6, 2).clone().cpu(), a.slice(2, 1, 6, 2).clone()));
  Tensor dst = empty({4, 6, 5}, TensorOptions(kFloat16).device(kCUDA)).transpose(1, 2);
  dst.copy_(d);
  EXPECT_TRUE(testing::equal(dst.cpu(), a.to(kFloat16)));
  // A write into a view that is not dense still lands where eager puts it.
  Tensor big = zeros({4, 5, 12}, TensorOptions(kFloat32).device(kCUDA));
  big.slice(2, 0, 12, 2).copy_(d);
  Tensor want = zeros({4, 5, 12}, kFloat32);
  want.slice(2, 0, 12, 2).copy_(a);
  EXPECT_TRUE(testing::equal(big.cpu(), want));
  // A cache written at one position: a window that is not dense, copied in dense slices by generated kernels
  // (converting from float16; without a conversion each slice would be one memcpy).
  Tensor cache = zeros({2, 3, 8, 4}, TensorOptions(kFloat32).device(kCUDA));
  Tensor k = random({2, 3, 4}, kFloat16, 12);
  CudaEagerCounts before = cuda_eager_counts();
  cache.select(2, 5).copy_(k.to(kCUDA));
  EXPECT_EQ(cuda_eager_counts().generated - before.generated, 6);
  EXPECT_EQ(cuda_eager_counts().cpu, before.cpu);
  Tensor want_cache = zeros({2, 3, 8, 4}, kFloat32);
  want_cache.select(2, 5).copy_(k);
  EXPECT_TRUE(testing::equal(cache.cpu(), want_cache));
}

TEST_F(CudaEagerCodegen, ProgramsAreReusedForOneShape) {
  Tensor a = random({6, 40}, kFloat32, 10).to(kCUDA);
  Tensor warm = cos(a) * 3.0;
  CudaEagerCounts before = cuda_eager_counts();
  for (int i = 0; i < 5; ++i) warm = cos(a) * 3.0;
  EXPECT_EQ(cuda_eager_counts().generated - before.generated, 10);
  EXPECT_CLOSE(warm.cpu(), cos(a.cpu()) * 3.0);
}

// A Scalar operand of mul/div/add/sub/comparisons is a value of the program, not part of it: a new value each call
// (a learning rate, a schedule) reuses the one program per op and layout.
TEST_F(CudaEagerCodegen, ScalarOperandsAreRunTimeValues) {
  Tensor a = random({6, 40}, kFloat32, 12), h = random({6, 40}, kBFloat16, 13);
  Tensor i = arange(0, 24, 1, TensorOptions(kInt32)).reshape({4, 6});
  Tensor da = a.to(kCUDA), dh = h.to(kCUDA), di = i.to(kCUDA);
  backends::clear_cuda_eager_programs();
  for (double s : {0.5, -1.25, 3.0e5, 1.0 / 3}) {
    SCOPED_TRACE(s);
    EXPECT_CLOSE((da * s).cpu(), a * s);
    EXPECT_CLOSE((da / s).cpu(), a / s);
    EXPECT_CLOSE(add(da, s).cpu(), add(a, s));
    EXPECT_CLOSE((dh * s).cpu(), h * s);  // bfloat16 computed in float32, as on the CPU
    Tensor got = dh * s;
    EXPECT_EQ(got.dtype(), kBFloat16);
    EXPECT_CLOSE(gt(da, s).cpu(), gt(a, s));
    Tensor ip = da.clone();
    ip.mul_(s);
    EXPECT_CLOSE(ip.cpu(), a * s);
    int64_t k = static_cast<int64_t>(s * 4) + 7;
    EXPECT_EQ((di * k).cpu().to_vector<int32_t>(), (i * k).to_vector<int32_t>());  // integers stay integers
    Tensor f = di * s;                          // an integer tensor times a float: float32
    EXPECT_EQ(f.dtype(), kFloat32);
    EXPECT_CLOSE(f.cpu(), i * s);
  }
  // mul (float32, bfloat16, int32 * int, int32 * float), div, add, gt, mul_, the clones: one program each.
  EXPECT_LE(backends::cuda_eager_program_count(), 12u);
}

TEST_F(CudaEagerCodegen, OpsItDeclinesRunTheirCpuKernel) {
  Tensor a = random({6, 40}, kFloat32, 11);
  Tensor d = a.to(kCUDA);
  CudaEagerCounts before = cuda_eager_counts();
  Tensor got = d.cumsum(1);  // a scan is not generated: the CPU kernel computes it
  EXPECT_GT(cuda_eager_counts().cpu, before.cpu);
  EXPECT_CLOSE(got.cpu(), a.cumsum(1));
  EXPECT_CLOSE(d.argsort(1).cpu(), a.argsort(1));  // data-dependent: its CPU kernel too
  // Integer division by zero raises as on the CPU.
  Tensor i = arange(0, 4, 1, TensorOptions(kInt64)).to(kCUDA);
  EXPECT_THROW(floor_divide(i, zeros({4}, TensorOptions(kInt64).device(kCUDA))), Error);
}

}  // namespace
}  // namespace sinter
