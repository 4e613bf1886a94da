// The inductor's op tables (tests/inductor/inductor_ops_cases.h) compiled for CUDA: the CUDA code generator's
// kernels run on the GPU, or in CI on the simulated device, and are compared with eager on the CPU (float32 rel
// err <= 1e-5, float64 <= 1e-12, bf16/f16 <= 1e-2, integers exact).
#include <gtest/gtest.h>

#include "inductor/inductor_ops_cases.h"
#include "ops/cuda_fallback.h"
#include "scoped_env.h"
#include "sinter/cuda.h"
#include "sinter/ops.h"
#include "testing.h"

namespace sinter::inductor_ops {
namespace {

using testing::random;
using testing::random_positive;

TEST(CudaInductor, UnaryFloat32IsOneKernel) {
  EXPECT_EQ(check_cases(unary_float_cases(), float_inputs({13, 37}, kFloat32), -1, kCUDA), 1);
}

TEST(CudaInductor, UnaryOtherFloatingDtypesNonContiguous) {
  for (DType dt : {kFloat64, kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    Inputs in = float_inputs({9, 21}, dt);
    for (Tensor& t : in) t = testing::non_contiguous(t);
    check_cases(unary_float_cases(), in, -1, kCUDA);
  }
}

TEST(CudaInductor, BinaryFloatingBroadcast) {
  for (DType dt : {kFloat32, kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    check_cases(binary_float_cases(), float_inputs({5, 1, 33}, dt, {7, 33}), -1, kCUDA);
  }
}

TEST(CudaInductor, IntegerOps) {
  for (DType dt : {kInt64, kInt32, kUInt8}) {
    SCOPED_TRACE(dtype_name(dt));
    check_cases(int_cases(dt), int_inputs({6, 1, 19}, dt, {4, 19}), -1, kCUDA);
  }
}

TEST(CudaInductor, ReductionsFloating) {
  for (DType dt : {kFloat32, kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = random({6, 7, 45}, dt, 1), u = random_positive({6, 7, 45}, dt, 0.8, 1.2, 2);
    check_cases(reduction_cases(), {x, u, testing::non_contiguous(x)}, -1, kCUDA);
  }
}

// Rows of every group size the generator picks: 4..32 lanes in a warp, 256 and 1024 threads in a block.
TEST(CudaInductor, RowReductionsOfEveryGroupSize) {
  std::vector<Case> cases = {
      {"softmax", [](const Inputs& i) { return softmax(i[0], -1); }},
      {"sum", [](const Inputs& i) { return i[0].sum(DimList{1}); }},
      {"amax keepdim - x", [](const Inputs& i) { return amax(i[0], DimList{1}, true) - i[0]; }},
      {"mean", [](const Inputs& i) { return mean(i[0], DimList{1}); }},
  };
  for (int64_t n : {3, 17, 100, 1000, 5000, 20000}) {
    SCOPED_TRACE(n);
    check_cases(cases, {random({5, n}, kFloat32, 1)}, n > 4000 ? 1e-4 : -1, kCUDA);
  }
}

TEST(CudaInductor, CompositesFloat32AndBFloat16) {
  check_cases(composite_cases(), composite_inputs(kFloat32), -1, kCUDA);
  check_cases(composite_cases(), composite_inputs(kBFloat16), -1, kCUDA);
}

TEST(CudaInductor, ViewsNansAndDivisions) {
  check_cases(view_cases(), {random({4, 6, 10}, kFloat32, 1)}, -1, kCUDA);
  for (DType dt : {kFloat32, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    check_cases(nan_cases(), nan_inputs(dt), -1, kCUDA);
  }
  check_cases(division_cases(), division_inputs(kFloat32), 0, kCUDA);
  check_cases(division_cases(), division_inputs(kInt32), -1, kCUDA);
}

TEST(CudaInductor, IntegerDivisionByZeroRaises) {
  Tensor a = full({4}, 3, kInt64).to(kCUDA), b = zeros({4}, kInt64).to(kCUDA);
  auto f = compile([](const Tensor& x, const Tensor& y) { return floor_divide(x, y) + 1; });
  EXPECT_ERROR(f(a, b), "ZeroDivisionError");
}

TEST(CudaInductor, OutputsStayOnTheDevice) {
  auto f = compile([](const Tensor& x) { return relu(x) * 2 + 1; });
  Tensor x = random({64, 3}, kFloat32, 1);
  Tensor y = f(x.to(kCUDA));
  EXPECT_TRUE(y.is_cuda());
  EXPECT_TRUE(testing::close(y.cpu(), relu(x) * 2 + 1));
  EXPECT_EQ(f.stats().compiles, 1);
}

// var and std are loop kernels on CUDA (a two-pass form shifted by a row's first element), exact where eager is:
// the variance of a constant is 0 and one element with correction 1 is NaN (repro r19).
TEST(CudaInductor, VarAndStdAreLoopKernelsAndExactWhereEagerIs) {
  Tensor x = random({6, 7, 45}, kFloat32, 3) * 4 + 100;  // an offset mean: the shift keeps the precision
  std::vector<Case> cases = {
      {"var last", [](const Inputs& i) { return var(i[0], {2}); }},
      {"std dims 0,2 keepdim", [](const Inputs& i) { return std(i[0], {0, 2}, 1, true); }},
      {"var all correction 0", [](const Inputs& i) { return var(i[0], {}, 0); }},
      {"var of a product", [](const Inputs& i) { return var(i[0] * 1.5 - 2, {1}); }},
  };
  check_cases(cases, {x}, -1, kCUDA);
  // bfloat16 input (computed in float32, as eager); not the product: fused, it is not rounded to bfloat16 before
  // the reduction (as in PyTorch's inductor), and the variance of 7 values sees that rounding.
  cases.pop_back();
  check_cases(cases, {x.to(kBFloat16)}, -1, kCUDA);
  {  // eager var on CUDA runs a generated program, not the CPU kernel
    testing::ScopedEnv generated("SINTER_CUDA_EAGER", "generated");
    CudaEagerCounts before = cuda_eager_counts();
    Tensor got = var(x.to(kCUDA), {2});
    EXPECT_EQ(cuda_eager_counts().cpu, before.cpu);
    EXPECT_TRUE(testing::close(got.cpu(), var(x, {2}), 1e-5));
  }
  auto f = compile([](const Tensor& t) { return var(t * 1); });
  EXPECT_EQ(f(full({12}, 0.1).to(kCUDA)).item<double>(), 0.0);
  auto g = compile([](const Tensor& t) { return var(pow(t, 3), {0}, 1); });
  for (float v : {3.5f, 1.7f, -2.3f, 0.37f})
    EXPECT_TRUE(std::isnan(g(from_vector<float>({v}, {1}).to(kCUDA)).item<double>())) << v;
}

// A 0-d tensor on the CPU combines with CUDA tensors in eager (as in PyTorch), so a compiled CUDA graph takes one
// as an input, and one that the function only returns comes back on the CPU.
TEST(CudaInductor, CpuScalarTensorInputs) {
  auto f = compile([](const Tensor& x, const Tensor& s) { return std::vector<Tensor>{x * s + 1, s}; });
  Tensor x = random({8, 5}, kFloat32, 1), s = scalar_tensor(2.5, kFloat32);
  for (int i = 0; i < 2; ++i) {
    std::vector<Tensor> out = f(x.to(kCUDA), s);
    EXPECT_TRUE(out[0].is_cuda());
    EXPECT_TRUE(testing::close(out[0].cpu(), x * s + 1));
    EXPECT_TRUE(out[1].is_cpu());
    EXPECT_EQ(out[1].item<float>(), 2.5f);
  }
  EXPECT_EQ(f.stats().compiles, 1);
}

// Independent flat kernels of different shapes run as one combined launch, each part over its own blocks: one
// part takes its scalar path (a misaligned view), one divides integers (its error flag is the launch's), one is
// large enough to need many blocks.
TEST(CudaInductor, IndependentKernelsRunAsOneCombinedLaunch) {
  auto f = compile([](const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& i, const Tensor& j) {
    return std::vector<Tensor>{a * 2 + 1, exp(b), sigmoid(c) * c, floor_divide(i, j)};
  });
  Tensor a = random({7}, kFloat32, 1), b = random({3, 65}, kFloat32, 2).narrow(1, 1, 64),
         c = random({64, 1000}, kFloat32, 3), i = full({5, 2}, 7, kInt64), j = full({5, 2}, 2, kInt64);
  Tensor bg = random({3, 65}, kFloat32, 2).to(kCUDA).narrow(1, 1, 64);  // starts 4 bytes into its storage
  std::vector<Tensor> got = f(a.to(kCUDA), bg, c.to(kCUDA), i.to(kCUDA), j.to(kCUDA));
  EXPECT_TRUE(testing::close(got[0].cpu(), a * 2 + 1));
  EXPECT_TRUE(testing::close(got[1].cpu(), exp(b)));
  EXPECT_TRUE(testing::close(got[2].cpu(), sigmoid(c) * c));
  EXPECT_TRUE(testing::equal(got[3].cpu(), floor_divide(i, j)));
  EXPECT_EQ(f.stats().kernels_per_call, 1);
  EXPECT_ERROR(f(a.to(kCUDA), bg, c.to(kCUDA), i.to(kCUDA), zeros({5, 2}, kInt64).to(kCUDA)), "ZeroDivisionError");
}

}  // namespace
}  // namespace sinter::inductor_ops
