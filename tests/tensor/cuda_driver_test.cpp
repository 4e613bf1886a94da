// The CUDA driver, loaded at run time: on a machine without a GPU (CI) every query answers "none" and every call
// that needs a device throws an Error saying why; on a GPU machine the queries describe the device. Where the
// toolkit's cuda.h is present at build time, the driver ABI sinter declares is checked against it.
#include <gtest/gtest.h>

#include <string_view>
#include <type_traits>

#include "sinter/cuda.h"
#include "sinter/error.h"
#include "tensor/cuda_driver.h"
#include "testing.h"

#ifdef SINTER_CUDA_TOOLKIT
#include <cuda.h>
#endif

namespace sinter {
namespace {

TEST(CudaDriver, AvailabilityAgreesWithTheDeviceCount) {
  EXPECT_EQ(cuda::is_available(), cuda::device_count() > 0);
  EXPECT_EQ(cuda::is_available(), cuda::unavailable_reason().empty()) << cuda::unavailable_reason();
  RecordProperty("cuda", cuda::is_available() ? "available" : cuda::unavailable_reason());
}

// Without a driver or a device, the calls that need one say why (the public queries answer for the simulated
// device instead when SINTER_CUDA_SIM is set, as it is in a test run without a GPU).
TEST(CudaDriver, WithoutADeviceCallsSayWhy) {
  if (cuda::driver::api() != nullptr) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_ERROR(cuda::driver::require(), "CUDA is not available", cuda::driver::reason());
  EXPECT_ERROR(cuda::driver::use_device(0), "CUDA is not available");
  if (cuda::is_simulated()) return;
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

#ifdef SINTER_CUDA_TOOLKIT
// The entry points, attribute numbers and flags sinter declares are cuda.h's: each entry's symbol is the one cuda.h
// maps its name to (the `_v2` ones), and its signature is cuda.h's with enums read as int and handles as sinter's.
#define SINTER_STR2(x) #x
#define SINTER_STR(x) SINTER_STR2(x)
namespace driver = cuda::driver;

template <class T>
struct Ours {
  using type = std::conditional_t<std::is_enum_v<T>, int, T>;
};
template <class T>
struct Ours<T*> {
  using type = typename Ours<T>::type*;
};
template <class T>
struct Ours<const T> {
  using type = const typename Ours<T>::type;
};
template <>
struct Ours<CUctx_st> {
  using type = std::remove_pointer_t<driver::CUcontext>;
};
template <>
struct Ours<CUmod_st> {
  using type = std::remove_pointer_t<driver::CUmodule>;
};
template <>
struct Ours<CUfunc_st> {
  using type = std::remove_pointer_t<driver::CUfunction>;
};
template <>
struct Ours<CUstream_st> {
  using type = std::remove_pointer_t<driver::CUstream>;
};
template <>
struct Ours<CUevent_st> {
  using type = std::remove_pointer_t<driver::CUevent>;
};
template <>
struct Ours<CUgraph_st> {
  using type = std::remove_pointer_t<driver::CUgraph>;
};
template <>
struct Ours<CUgraphExec_st> {
  using type = std::remove_pointer_t<driver::CUgraphExec>;
};
template <class R, class... A>
struct Ours<R(A...)> {
  using type = typename Ours<R>::type(typename Ours<A>::type...);
};

// cuda.h's symbol for `fn` must be `symbol`; its type is kept as cuda_h_<fn> (## keeps the name unexpanded, so the
// versioned names can be undefined below and the Api members named plainly).
#define SINTER_CUDA_H_ENTRY(fn, symbol)                                                 \
  static_assert(std::string_view(SINTER_STR(fn)) == symbol, #fn " is " SINTER_STR(fn)); \
  using cuda_h_##fn = Ours<decltype(&::fn)>::type
SINTER_CUDA_H_ENTRY(cuInit, "cuInit");
SINTER_CUDA_H_ENTRY(cuDriverGetVersion, "cuDriverGetVersion");
SINTER_CUDA_H_ENTRY(cuDeviceGetCount, "cuDeviceGetCount");
SINTER_CUDA_H_ENTRY(cuDeviceGet, "cuDeviceGet");
SINTER_CUDA_H_ENTRY(cuDeviceGetName, "cuDeviceGetName");
SINTER_CUDA_H_ENTRY(cuDeviceGetAttribute, "cuDeviceGetAttribute");
SINTER_CUDA_H_ENTRY(cuDeviceTotalMem, "cuDeviceTotalMem_v2");
SINTER_CUDA_H_ENTRY(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
SINTER_CUDA_H_ENTRY(cuCtxSetCurrent, "cuCtxSetCurrent");
SINTER_CUDA_H_ENTRY(cuCtxSynchronize, "cuCtxSynchronize");
SINTER_CUDA_H_ENTRY(cuMemGetInfo, "cuMemGetInfo_v2");
SINTER_CUDA_H_ENTRY(cuMemAlloc, "cuMemAlloc_v2");
SINTER_CUDA_H_ENTRY(cuMemFree, "cuMemFree_v2");
SINTER_CUDA_H_ENTRY(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
SINTER_CUDA_H_ENTRY(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
SINTER_CUDA_H_ENTRY(cuGetErrorName, "cuGetErrorName");
SINTER_CUDA_H_ENTRY(cuGetErrorString, "cuGetErrorString");
SINTER_CUDA_H_ENTRY(cuModuleLoadData, "cuModuleLoadData");
SINTER_CUDA_H_ENTRY(cuModuleUnload, "cuModuleUnload");
SINTER_CUDA_H_ENTRY(cuModuleGetFunction, "cuModuleGetFunction");
SINTER_CUDA_H_ENTRY(cuFuncSetAttribute, "cuFuncSetAttribute");
SINTER_CUDA_H_ENTRY(cuLaunchKernel, "cuLaunchKernel");
SINTER_CUDA_H_ENTRY(cuStreamCreate, "cuStreamCreate");
SINTER_CUDA_H_ENTRY(cuStreamDestroy, "cuStreamDestroy_v2");
SINTER_CUDA_H_ENTRY(cuStreamSynchronize, "cuStreamSynchronize");
SINTER_CUDA_H_ENTRY(cuStreamWaitEvent, "cuStreamWaitEvent");
SINTER_CUDA_H_ENTRY(cuStreamQuery, "cuStreamQuery");
SINTER_CUDA_H_ENTRY(cuEventCreate, "cuEventCreate");
SINTER_CUDA_H_ENTRY(cuEventRecord, "cuEventRecord");
SINTER_CUDA_H_ENTRY(cuEventQuery, "cuEventQuery");
SINTER_CUDA_H_ENTRY(cuEventSynchronize, "cuEventSynchronize");
SINTER_CUDA_H_ENTRY(cuEventElapsedTime, "cuEventElapsedTime_v2");
SINTER_CUDA_H_ENTRY(cuEventDestroy, "cuEventDestroy_v2");
SINTER_CUDA_H_ENTRY(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
SINTER_CUDA_H_ENTRY(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
SINTER_CUDA_H_ENTRY(cuMemcpyDtoD, "cuMemcpyDtoD_v2");
SINTER_CUDA_H_ENTRY(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
SINTER_CUDA_H_ENTRY(cuMemsetD8, "cuMemsetD8_v2");
SINTER_CUDA_H_ENTRY(cuMemsetD8Async, "cuMemsetD8Async");
SINTER_CUDA_H_ENTRY(cuMemHostAlloc, "cuMemHostAlloc");
SINTER_CUDA_H_ENTRY(cuMemFreeHost, "cuMemFreeHost");
SINTER_CUDA_H_ENTRY(cuPointerGetAttribute, "cuPointerGetAttribute");
SINTER_CUDA_H_ENTRY(cuStreamBeginCapture, "cuStreamBeginCapture_v2");
SINTER_CUDA_H_ENTRY(cuStreamEndCapture, "cuStreamEndCapture");
SINTER_CUDA_H_ENTRY(cuGraphInstantiate, "cuGraphInstantiateWithFlags");
SINTER_CUDA_H_ENTRY(cuGraphLaunch, "cuGraphLaunch");
SINTER_CUDA_H_ENTRY(cuGraphExecDestroy, "cuGraphExecDestroy");
SINTER_CUDA_H_ENTRY(cuGraphDestroy, "cuGraphDestroy");
#undef cuDeviceTotalMem
#undef cuMemGetInfo
#undef cuMemAlloc
#undef cuMemFree
#undef cuMemcpyHtoD
#undef cuMemcpyDtoH
#undef cuStreamDestroy
#undef cuEventElapsedTime
#undef cuEventDestroy
#undef cuMemcpyHtoDAsync
#undef cuMemcpyDtoHAsync
#undef cuMemcpyDtoD
#undef cuMemcpyDtoDAsync
#undef cuMemsetD8
#undef cuStreamBeginCapture
#undef cuGraphInstantiate
#define SINTER_EXPECT_ABI(fn) \
  static_assert(std::is_same_v<cuda_h_##fn, decltype(driver::Api::fn)>, #fn " is declared otherwise in cuda.h")

constexpr bool same(long long a, long long b) { return a == b; }
TEST(CudaDriver, DeclaredAbiMatchesCudaH) {
  static_assert(same(driver::kMaxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  static_assert(same(driver::kWarpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE));
  static_assert(same(driver::kMultiprocessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  static_assert(same(driver::kL2CacheSize, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
  static_assert(same(driver::kComputeCapabilityMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
  static_assert(same(driver::kComputeCapabilityMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
  static_assert(same(driver::kMaxSharedMemoryPerBlockOptin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  static_assert(same(driver::kStreamNonBlocking, CU_STREAM_NON_BLOCKING));
  static_assert(same(driver::kEventDefault, CU_EVENT_DEFAULT));
  static_assert(same(driver::kEventDisableTiming, CU_EVENT_DISABLE_TIMING));
  static_assert(same(driver::kMemHostAllocPortable, CU_MEMHOSTALLOC_PORTABLE));
  static_assert(same(driver::kFuncAttributeMaxDynamicSharedSizeBytes, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES));
  static_assert(same(driver::kPointerAttributeMemoryType, CU_POINTER_ATTRIBUTE_MEMORY_TYPE));
  static_assert(same(driver::kPointerAttributeDeviceOrdinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL));
  static_assert(same(driver::kMemoryTypeHost, CU_MEMORYTYPE_HOST));
  static_assert(same(driver::kMemoryTypeDevice, CU_MEMORYTYPE_DEVICE));
  static_assert(same(driver::kStreamCaptureModeRelaxed, CU_STREAM_CAPTURE_MODE_RELAXED));
  static_assert(std::is_same_v<driver::CUdeviceptr, CUdeviceptr>);
  static_assert(std::is_same_v<driver::CUdevice, CUdevice>);
  static_assert(sizeof(CUresult) == sizeof(driver::CUresult) && driver::kSuccess == CUDA_SUCCESS);
  static_assert(same(driver::kNotReady, CUDA_ERROR_NOT_READY));
  static_assert(same(driver::kOutOfMemory, CUDA_ERROR_OUT_OF_MEMORY));
  static_assert(sizeof(CUfunction_attribute) == sizeof(int) && sizeof(CUpointer_attribute) == sizeof(int));
  SINTER_EXPECT_ABI(cuInit);
  SINTER_EXPECT_ABI(cuDriverGetVersion);
  SINTER_EXPECT_ABI(cuDeviceGetCount);
  SINTER_EXPECT_ABI(cuDeviceGet);
  SINTER_EXPECT_ABI(cuDeviceGetName);
  SINTER_EXPECT_ABI(cuDeviceGetAttribute);
  SINTER_EXPECT_ABI(cuDeviceTotalMem);
  SINTER_EXPECT_ABI(cuDevicePrimaryCtxRetain);
  SINTER_EXPECT_ABI(cuCtxSetCurrent);
  SINTER_EXPECT_ABI(cuCtxSynchronize);
  SINTER_EXPECT_ABI(cuMemGetInfo);
  SINTER_EXPECT_ABI(cuMemAlloc);
  SINTER_EXPECT_ABI(cuMemFree);
  SINTER_EXPECT_ABI(cuMemcpyHtoD);
  SINTER_EXPECT_ABI(cuMemcpyDtoH);
  SINTER_EXPECT_ABI(cuGetErrorName);
  SINTER_EXPECT_ABI(cuGetErrorString);
  SINTER_EXPECT_ABI(cuModuleLoadData);
  SINTER_EXPECT_ABI(cuModuleUnload);
  SINTER_EXPECT_ABI(cuModuleGetFunction);
  SINTER_EXPECT_ABI(cuFuncSetAttribute);
  SINTER_EXPECT_ABI(cuLaunchKernel);
  SINTER_EXPECT_ABI(cuStreamCreate);
  SINTER_EXPECT_ABI(cuStreamDestroy);
  SINTER_EXPECT_ABI(cuStreamSynchronize);
  SINTER_EXPECT_ABI(cuStreamWaitEvent);
  SINTER_EXPECT_ABI(cuStreamQuery);
  SINTER_EXPECT_ABI(cuEventCreate);
  SINTER_EXPECT_ABI(cuEventRecord);
  SINTER_EXPECT_ABI(cuEventQuery);
  SINTER_EXPECT_ABI(cuEventSynchronize);
  SINTER_EXPECT_ABI(cuEventElapsedTime);
  SINTER_EXPECT_ABI(cuEventDestroy);
  SINTER_EXPECT_ABI(cuMemcpyHtoDAsync);
  SINTER_EXPECT_ABI(cuMemcpyDtoHAsync);
  SINTER_EXPECT_ABI(cuMemcpyDtoD);
  SINTER_EXPECT_ABI(cuMemcpyDtoDAsync);
  SINTER_EXPECT_ABI(cuMemsetD8);
  SINTER_EXPECT_ABI(cuMemsetD8Async);
  SINTER_EXPECT_ABI(cuMemHostAlloc);
  SINTER_EXPECT_ABI(cuMemFreeHost);
  SINTER_EXPECT_ABI(cuPointerGetAttribute);
  SINTER_EXPECT_ABI(cuStreamBeginCapture);
  SINTER_EXPECT_ABI(cuStreamEndCapture);
  SINTER_EXPECT_ABI(cuGraphInstantiate);
  SINTER_EXPECT_ABI(cuGraphLaunch);
  SINTER_EXPECT_ABI(cuGraphExecDestroy);
  SINTER_EXPECT_ABI(cuGraphDestroy);
}
#endif

}  // namespace
}  // namespace sinter
