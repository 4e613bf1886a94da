// CUDA tensors: copies between the devices (any strides and dtypes), the caching allocator's statistics, reads
// from the host, eager ops on CUDA tensors (their CPU kernels through the fallback until they have CUDA kernels)
// against the same ops on the CPU, and the random ops drawing the same numbers on both devices for one seed.
#include <gtest/gtest.h>

#include "sinter/cuda.h"
#include "sinter/ops.h"
#include "sinter/random.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;

TEST(CudaTensor, TheDeviceIsAvailable) {
  ASSERT_TRUE(cuda::is_available()) << cuda::unavailable_reason();
  EXPECT_GE(cuda::device_count(), 1);
  EXPECT_EQ(cuda::get_device_properties(0).warp_size, 32);
}

TEST(CudaTensor, CopiesRoundTripInEveryLayoutAndDtype) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt64, kInt32, kInt8, kUInt8, kBool}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = random({5, 7, 3}, dt, 1);
    Tensor d = x.to(kCUDA);
    EXPECT_TRUE(d.is_cuda());
    EXPECT_EQ(d.dtype(), dt);
    EXPECT_TRUE(testing::equal(d.cpu(), x));
    // Non-contiguous sources and destinations, and a conversion on the way.
    Tensor t = x.transpose(0, 2).to(kCUDA);
    EXPECT_TRUE(testing::equal(t.cpu(), x.transpose(0, 2)));
    Tensor sliced = d.narrow(1, 2, 3).transpose(0, 1);
    EXPECT_TRUE(testing::equal(sliced.cpu(), x.narrow(1, 2, 3).transpose(0, 1)));
    Tensor dst = zeros({7, 5}, TensorOptions(kFloat32).device(kCUDA));
    dst.narrow(0, 1, 3).copy_(x.select(2, 0).narrow(1, 1, 3).transpose(0, 1));
    Tensor want = zeros({7, 5}, kFloat32);
    want.narrow(0, 1, 3).copy_(x.select(2, 0).narrow(1, 1, 3).transpose(0, 1));
    EXPECT_TRUE(testing::equal(dst.cpu(), want));
    EXPECT_TRUE(testing::equal(d.to(kFloat64).cpu(), x.to(kFloat64)));
  }
}

TEST(CudaTensor, HostReadsCopyFirst) {
  Tensor d = arange(0, 6, 1, TensorOptions(kInt64)).to(kCUDA);
  EXPECT_EQ(d.select(0, 4).item<int64_t>(), 4);
  EXPECT_EQ(d.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  std::string text = d.str();
  EXPECT_NE(text.find("device='cuda:0'"), std::string::npos) << text;
}

TEST(CudaTensor, TheAllocatorCachesAndCounts) {
  cuda::empty_cache();
  int64_t before = cuda::memory_allocated();
  {
    Tensor a = empty({1000, 1000}, TensorOptions(kFloat32).device(kCUDA));
    EXPECT_GE(cuda::memory_allocated() - before, 4000000);
    EXPECT_GE(cuda::max_memory_allocated(), cuda::memory_allocated());
  }
  EXPECT_EQ(cuda::memory_allocated(), before);
  EXPECT_GE(cuda::memory_reserved(), 4000000);  // the freed block stays cached for the next tensor
  cuda::empty_cache();
  EXPECT_EQ(cuda::memory_reserved(), cuda::memory_allocated());
  cuda::reset_peak_memory_stats();
  EXPECT_EQ(cuda::max_memory_allocated(), cuda::memory_allocated());
}

TEST(CudaTensor, RunningOutOfMemorySaysHowMuch) {
  EXPECT_ERROR(empty({int64_t{1} << 50}, TensorOptions(kFloat32).device(kCUDA)), "CUDA out of memory",
               "tried to allocate", "cuda:0");
}

TEST(CudaTensor, MixingDevicesIsAnError) {
  Tensor a = random({3}, kFloat32, 1).to(kCUDA), b = random({3}, kFloat32, 2);
  EXPECT_ERROR(a + b, "same device", "cuda:0", "cpu");
}

TEST(CudaTensor, EagerOpsMatchTheCpu) {
  Tensor x = random({6, 9}, kFloat32, 1), w = random({9, 4}, kFloat32, 2);
  Tensor dx = x.to(kCUDA), dw = w.to(kCUDA);
  EXPECT_TRUE(testing::close((dx * 2 + 1).cpu(), x * 2 + 1));
  EXPECT_TRUE(testing::close(softmax(dx, -1).cpu(), softmax(x, -1)));
  EXPECT_TRUE(testing::close(matmul(dx, dw).cpu(), matmul(x, w)));
  EXPECT_TRUE(testing::close(std::get<0>(sort(dx, 1)).cpu(), std::get<0>(sort(x, 1))));
  EXPECT_TRUE(testing::equal(nonzero(dx > 0).cpu(), nonzero(x > 0)));
  EXPECT_TRUE(nonzero(dx > 0).is_cuda());
  Tensor y = dx.clone();
  y.add_(1).mul_(dx);  // in place on the device
  EXPECT_TRUE(testing::close(y.cpu(), (x + 1) * x));
}

TEST(CudaTensor, OneSeedGivesTheSameNumbersOnBothDevices) {
  manual_seed(7);
  Tensor a = randn({4, 5});
  manual_seed(7);
  Tensor b = randn({4, 5}, TensorOptions(kFloat32).device(kCUDA));
  EXPECT_TRUE(b.is_cuda());
  EXPECT_TRUE(testing::equal(b.cpu(), a));
}

}  // namespace
}  // namespace sinter
