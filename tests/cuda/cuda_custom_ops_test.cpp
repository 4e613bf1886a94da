// Custom ops (sinter/library.h) on CUDA tensors (the GPU when there is one, else the simulated device): an op with
// only a CPU kernel runs it on host copies, an op with a CUDA kernel runs that, and both compile for CUDA against
// the CPU's results.
#include <gtest/gtest.h>

#include <atomic>

#include "ops/custom_ops_testing.h"
#include "sinter/compile.h"
#include "sinter/cuda.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;

std::atomic<int> twice_cpu_calls{0}, twice_cuda_calls{0};

library::Op twice() {
  static library::Op op = library::define("cudalib::twice(Tensor x) -> Tensor", {
      .shape = [](const library::OpArgs& a) { return std::vector{library::dense_meta(a.tensor("x"))}; },
      .cpu = [](const library::OpArgs& a) { ++twice_cpu_calls; return std::vector{a.tensor("x") * 2}; },
      .cuda = [](const library::OpArgs& a) { ++twice_cuda_calls; return std::vector{a.tensor("x") * 2}; }});
  return op;
}

TEST(CudaCustomOps, ACpuKernelRunsOnCudaTensors) {
  testing::define_test_ops();
  Tensor x = random({4, 8}), w = random({8}, kFloat32, 1);
  Tensor y = library::call1("testlib::rms_gate", {x.to(kCUDA), w.to(kCUDA)});
  EXPECT_TRUE(y.device().is_cuda());
  EXPECT_CLOSE(y.to(kCPU), testing::rms_gate_reference(x, w, 1e-6));
}

TEST(CudaCustomOps, ACudaKernelRunsForCudaTensors) {
  Tensor x = random({3, 5});
  int cpu = twice_cpu_calls, cuda = twice_cuda_calls;
  Tensor y = twice()(x.to(kCUDA));
  EXPECT_TRUE(y.device().is_cuda());
  EXPECT_CLOSE(y.to(kCPU), x * 2);
  EXPECT_EQ(twice_cuda_calls, cuda + 1);
  EXPECT_EQ(twice_cpu_calls, cpu);
  EXPECT_CLOSE(twice()(x), x * 2);
  EXPECT_EQ(twice_cpu_calls, cpu + 1);
}

TEST(CudaCustomOps, CompiledForCudaMatchesTheCpu) {
  testing::define_test_ops();
  auto fn = [](const Tensor& x, const Tensor& w) {
    Tensor a = library::call1("testlib::rms_gate", {relu(x + 1), w});
    Tensor b = library::call1("testlib::rms_gate_decomposed", {x, w});
    return twice()(a + b) - 1;
  };
  Tensor x = random({6, 16}), w = random({16}, kFloat32, 2);
  Tensor want = fn(x, w);
  auto f = compile(fn, {.backend = "inductor"});
  int decomposed = testing::rms_gate_decomposed_kernel_calls;
  Tensor got = f(x.to(kCUDA), w.to(kCUDA));
  EXPECT_TRUE(got.device().is_cuda());
  EXPECT_CLOSE(got.to(kCPU), want);
  EXPECT_EQ(testing::rms_gate_decomposed_kernel_calls, decomposed) << "the decomposition is compiled";
}

}  // namespace
}  // namespace sinter
