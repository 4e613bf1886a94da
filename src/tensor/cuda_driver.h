// The CUDA driver API, loaded with dlopen on first use (no link-time dependency on libcuda, no toolkit needed to
// build). Declares the few types and entry points sinter calls, with the driver's ABI (cuda.h's `_v2` symbols
// where the header maps a name to one). Every call goes through check(), which turns a failure into
// sinter::Error naming the call and the driver's error name and text.
#pragma once
#include <cstdint>
#include <string>

namespace sinter::cuda::driver {

using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st*;
using CUdeviceptr = unsigned long long;
inline constexpr CUresult kSuccess = 0;

// Device attributes (cuda.h's CUdevice_attribute values).
enum Attribute : int {
  kMaxThreadsPerBlock = 1,
  kWarpSize = 10,
  kMultiprocessorCount = 16,
  kL2CacheSize = 38,
  kComputeCapabilityMajor = 75,
  kComputeCapabilityMinor = 76,
  kMaxSharedMemoryPerBlockOptin = 97,
};

struct Api {
  CUresult (*cuInit)(unsigned int) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice) = nullptr;  // cuDeviceTotalMem_v2
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemGetInfo)(size_t*, size_t*) = nullptr;                    // cuMemGetInfo_v2
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;                  // cuMemAlloc_v2
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;                            // cuMemFree_v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;    // cuMemcpyHtoD_v2
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;          // cuMemcpyDtoH_v2
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
};

// The loaded and initialised driver, or null with `reason()` saying why (loaded once per process, thread-safe).
const Api* api();
const std::string& reason();
// The driver's name and text for `r` ("CUDA_ERROR_OUT_OF_MEMORY (out of memory)").
std::string error_text(CUresult r);
// Throws sinter::Error "<call>: <error_text>" unless r is success.
void check(CUresult r, const char* call);
// The API, or throws sinter::Error with reason() when there is none.
const Api& require();
// Makes `device`'s primary context current on this thread (retained once per device and process).
void use_device(int device);

}  // namespace sinter::cuda::driver
