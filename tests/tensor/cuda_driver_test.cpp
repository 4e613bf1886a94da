// The CUDA driver, loaded at run time: on a machine without a GPU (CI) every query answers "none" and every call
// that needs a device throws an Error saying why; on a GPU machine the queries describe the device. Where the
// toolkit's cuda.h is present at build time, the driver ABI sinter declares is checked against it.
#include <gtest/gtest.h>

#include "sinter/cuda.h"
#include "sinter/error.h"
#include "tensor/cuda_driver.h"
#include "testing.h"

#ifdef SINTER_TEST_CUDA_H
#include <cuda.h>
#endif

namespace sinter {
namespace {

TEST(CudaDriver, AvailabilityAgreesWithTheDeviceCount) {
  EXPECT_EQ(cuda::is_available(), cuda::device_count() > 0);
  EXPECT_EQ(cuda::is_available(), cuda::unavailable_reason().empty()) << cuda::unavailable_reason();
  RecordProperty("cuda", cuda::is_available() ? "available" : cuda::unavailable_reason());
}

TEST(CudaDriver, WithoutADeviceCallsSayWhy) {
  if (cuda::is_available()) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_ERROR(cuda::get_device_properties(0), "CUDA is not available", cuda::unavailable_reason());
  EXPECT_ERROR(cuda::synchronize(), "CUDA is not available");
}

TEST(CudaDriver, OnAGpuThePropertiesDescribeIt) {
  if (!cuda::is_available()) GTEST_SKIP() << cuda::unavailable_reason();
  cuda::DeviceProperties p = cuda::get_device_properties(0);
  EXPECT_FALSE(p.name.empty());
  EXPECT_GE(p.major, 5);
  EXPECT_GT(p.multiprocessors, 0);
  EXPECT_EQ(p.warp_size, 32);
  EXPECT_GT(p.total_memory, int64_t{1} << 30);
  EXPECT_GE(p.max_shared_memory_per_block, 48 * 1024);
  EXPECT_GT(p.l2_cache_size, 0);
  cuda::synchronize(0);
  EXPECT_ERROR(cuda::get_device_properties(cuda::device_count()), "does not exist");
  EXPECT_ERROR(cuda::synchronize(cuda::device_count()), "does not exist");
  RecordProperty("device", p.name + " sm_" + std::to_string(p.major * 10 + p.minor) + ", " +
                               std::to_string(p.multiprocessors) + " SMs");
}

#ifdef SINTER_TEST_CUDA_H
// The attribute numbers and versioned entry points sinter uses are cuda.h's.
#define SINTER_STR2(x) #x
#define SINTER_STR(x) SINTER_STR2(x)
constexpr bool same(int a, int b) { return a == b; }
namespace driver = cuda::driver;
TEST(CudaDriver, DeclaredAbiMatchesCudaH) {
  static_assert(same(driver::kMaxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  static_assert(same(driver::kWarpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE));
  static_assert(same(driver::kMultiprocessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  static_assert(same(driver::kL2CacheSize, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
  static_assert(same(driver::kComputeCapabilityMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
  static_assert(same(driver::kComputeCapabilityMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
  static_assert(same(driver::kMaxSharedMemoryPerBlockOptin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  static_assert(sizeof(cuda::driver::CUdeviceptr) == sizeof(CUdeviceptr));
  static_assert(cuda::driver::kSuccess == CUDA_SUCCESS);
  EXPECT_STREQ(SINTER_STR(cuDeviceTotalMem), "cuDeviceTotalMem_v2");
  EXPECT_STREQ(SINTER_STR(cuMemGetInfo), "cuMemGetInfo_v2");
  EXPECT_STREQ(SINTER_STR(cuMemAlloc), "cuMemAlloc_v2");
  EXPECT_STREQ(SINTER_STR(cuMemFree), "cuMemFree_v2");
  EXPECT_STREQ(SINTER_STR(cuMemcpyHtoD), "cuMemcpyHtoD_v2");
  EXPECT_STREQ(SINTER_STR(cuMemcpyDtoH), "cuMemcpyDtoH_v2");
}
#endif

}  // namespace
}  // namespace sinter
