// The CUDA driver API, loaded with dlopen on first use (no link-time dependency on libcuda, no toolkit needed to
// build). Declares the few types and entry points sinter calls, with the driver's ABI (cuda.h's `_v2` symbols
// where the header maps a name to one). Every call goes through check(), which turns a failure into
// sinter::Error naming the call and the driver's error name and text.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace sinter::cuda::driver {

using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st*;
using CUdeviceptr = unsigned long long;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;
inline constexpr CUresult kSuccess = 0;
inline constexpr CUresult kOutOfMemory = 2;  // CUDA_ERROR_OUT_OF_MEMORY
inline constexpr CUresult kNotReady = 600;  // CUDA_ERROR_NOT_READY: a queried stream or event has work pending

// Flags and attribute numbers (cuda.h's values).
inline constexpr unsigned int kStreamNonBlocking = 0x1;            // CU_STREAM_NON_BLOCKING
inline constexpr unsigned int kEventDefault = 0x0;                 // CU_EVENT_DEFAULT
inline constexpr unsigned int kEventDisableTiming = 0x2;           // CU_EVENT_DISABLE_TIMING
inline constexpr unsigned int kMemHostAllocPortable = 0x1;         // CU_MEMHOSTALLOC_PORTABLE
inline constexpr int kFuncAttributeMaxDynamicSharedSizeBytes = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
inline constexpr int kPointerAttributeMemoryType = 2;              // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
inline constexpr int kPointerAttributeDeviceOrdinal = 9;           // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
inline constexpr unsigned int kMemoryTypeHost = 0x1;               // CU_MEMORYTYPE_HOST
inline constexpr unsigned int kMemoryTypeDevice = 0x2;             // CU_MEMORYTYPE_DEVICE
inline constexpr int kStreamCaptureModeRelaxed = 2;                // CU_STREAM_CAPTURE_MODE_RELAXED

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
  // Modules and launches.
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, CUstream, void**, void**) = nullptr;
  // Streams and events.
  CUresult (*cuStreamCreate)(CUstream*, unsigned int) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;  // cuStreamDestroy_v2
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned int) = nullptr;
  CUresult (*cuStreamQuery)(CUstream) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned int) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventQuery)(CUevent) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;  // cuEventElapsedTime_v2 (older drivers: v1)
  CUresult (*cuEventDestroy)(CUevent) = nullptr;                       // cuEventDestroy_v2
  // Copies, fills and pinned host memory.
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream) = nullptr;  // cuMemcpyHtoDAsync_v2
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream) = nullptr;        // cuMemcpyDtoHAsync_v2
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t) = nullptr;                 // cuMemcpyDtoD_v2
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;  // cuMemcpyDtoDAsync_v2
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t) = nullptr;                 // cuMemsetD8_v2
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
  CUresult (*cuMemHostAlloc)(void**, size_t, unsigned int) = nullptr;
  CUresult (*cuMemFreeHost)(void*) = nullptr;
  CUresult (*cuPointerGetAttribute)(void*, int, CUdeviceptr) = nullptr;  // optional: null when the driver lacks it
  // CUDA graphs: stream capture, instantiation, replay.
  CUresult (*cuStreamBeginCapture)(CUstream, int) = nullptr;                       // cuStreamBeginCapture_v2
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*) = nullptr;
  CUresult (*cuGraphInstantiate)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;  // ..WithFlags
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph) = nullptr;
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

// A loaded cubin (or PTX) image in the context current on this thread (use_device first); unloaded on destruction.
// `name` names the module in errors (the kernel or program it holds).
class Module {
 public:
  Module(const std::string& image, std::string name);
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module();
  // The kernel `kernel` (its extern "C" name); throws sinter::Error naming it and the module when absent.
  CUfunction function(const std::string& kernel) const;
  CUmodule get() const { return module_; }
  const std::string& name() const { return name_; }

 private:
  CUmodule module_ = nullptr;
  std::string name_;
};

struct Dim3 {
  unsigned int x = 1, y = 1, z = 1;
};

// Lets `fn` use up to `bytes` of dynamic shared memory (above the default 48 KiB needs this opt-in).
void set_max_dynamic_shared(CUfunction fn, int bytes, const char* name);
// Launches `fn` on `stream` (null: the context's default stream); `params` points at each argument's value.
// Errors name the kernel `name` and the launch shape.
void launch(CUfunction fn, Dim3 grid, Dim3 block, unsigned int shared_bytes, CUstream stream, void** params,
            const char* name);

// A stream of the current context (non-blocking: it does not wait for the default stream); destroyed with it.
class Stream {
 public:
  Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();
  CUstream get() const { return stream_; }
  void synchronize() const;

 private:
  CUstream stream_ = nullptr;
};

// An event of the current context, with timing unless `timing` is false; destroyed with it.
class Event {
 public:
  explicit Event(bool timing = true);
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();
  CUevent get() const { return event_; }
  void record(CUstream stream) const;
  void synchronize() const;
  // Milliseconds from `start` to this event (both recorded and complete).
  float elapsed_ms_since(const Event& start) const;

 private:
  CUevent event_ = nullptr;
};

}  // namespace sinter::cuda::driver
