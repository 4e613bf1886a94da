#include "tensor/cuda_driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <mutex>
#include <utility>
#include <vector>

#include "sinter/cuda.h"
#include "sinter/error.h"
#include "support/dynamic_symbols.h"

namespace sinter::cuda::driver {

namespace {

struct Loaded {
  Api api;
  bool ok = false;
  std::string reason;
  std::mutex mutex;                    // guards contexts
  std::vector<CUcontext> contexts;     // primary context per device, retained on first use
};

using support::resolve_symbol;

Loaded& loaded() {
  // Process-wide: the driver is one per process (docs/ARCHITECTURE.md, process-wide state).
  static Loaded* state = [] {
    auto* s = new Loaded();
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* e = dlerror();
      s->reason = fmt::format("no CUDA driver: libcuda.so.1 could not be loaded ({})", e ? e : "unknown error");
      return s;
    }
    Api& a = s->api;
    std::string missing;
    resolve_symbol(lib, "cuInit", a.cuInit, missing);
    resolve_symbol(lib, "cuDriverGetVersion", a.cuDriverGetVersion, missing);
    resolve_symbol(lib, "cuDeviceGetCount", a.cuDeviceGetCount, missing);
    resolve_symbol(lib, "cuDeviceGet", a.cuDeviceGet, missing);
    resolve_symbol(lib, "cuDeviceGetName", a.cuDeviceGetName, missing);
    resolve_symbol(lib, "cuDeviceGetAttribute", a.cuDeviceGetAttribute, missing);
    resolve_symbol(lib, "cuDeviceTotalMem_v2", a.cuDeviceTotalMem, missing);
    resolve_symbol(lib, "cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain, missing);
    resolve_symbol(lib, "cuCtxSetCurrent", a.cuCtxSetCurrent, missing);
    resolve_symbol(lib, "cuCtxSynchronize", a.cuCtxSynchronize, missing);
    resolve_symbol(lib, "cuMemGetInfo_v2", a.cuMemGetInfo, missing);
    resolve_symbol(lib, "cuMemAlloc_v2", a.cuMemAlloc, missing);
    resolve_symbol(lib, "cuMemFree_v2", a.cuMemFree, missing);
    resolve_symbol(lib, "cuMemcpyHtoD_v2", a.cuMemcpyHtoD, missing);
    resolve_symbol(lib, "cuMemcpyDtoH_v2", a.cuMemcpyDtoH, missing);
    resolve_symbol(lib, "cuGetErrorName", a.cuGetErrorName, missing);
    resolve_symbol(lib, "cuGetErrorString", a.cuGetErrorString, missing);
    resolve_symbol(lib, "cuModuleLoadData", a.cuModuleLoadData, missing);
    resolve_symbol(lib, "cuModuleUnload", a.cuModuleUnload, missing);
    resolve_symbol(lib, "cuModuleGetFunction", a.cuModuleGetFunction, missing);
    resolve_symbol(lib, "cuFuncSetAttribute", a.cuFuncSetAttribute, missing);
    resolve_symbol(lib, "cuLaunchKernel", a.cuLaunchKernel, missing);
    resolve_symbol(lib, "cuStreamCreate", a.cuStreamCreate, missing);
    resolve_symbol(lib, "cuStreamDestroy_v2", a.cuStreamDestroy, missing);
    resolve_symbol(lib, "cuStreamSynchronize", a.cuStreamSynchronize, missing);
    resolve_symbol(lib, "cuStreamWaitEvent", a.cuStreamWaitEvent, missing);
    resolve_symbol(lib, "cuStreamQuery", a.cuStreamQuery, missing);
    resolve_symbol(lib, "cuEventCreate", a.cuEventCreate, missing);
    resolve_symbol(lib, "cuEventRecord", a.cuEventRecord, missing);
    resolve_symbol(lib, "cuEventQuery", a.cuEventQuery, missing);
    resolve_symbol(lib, "cuEventSynchronize", a.cuEventSynchronize, missing);
    // cuda.h 12.8+ maps cuEventElapsedTime to _v2 (same signature); drivers before it have only the first.
    if (dlsym(lib, "cuEventElapsedTime_v2") != nullptr)
      resolve_symbol(lib, "cuEventElapsedTime_v2", a.cuEventElapsedTime, missing);
    else
      resolve_symbol(lib, "cuEventElapsedTime", a.cuEventElapsedTime, missing);
    resolve_symbol(lib, "cuEventDestroy_v2", a.cuEventDestroy, missing);
    resolve_symbol(lib, "cuMemcpyHtoDAsync_v2", a.cuMemcpyHtoDAsync, missing);
    resolve_symbol(lib, "cuMemcpyDtoHAsync_v2", a.cuMemcpyDtoHAsync, missing);
    resolve_symbol(lib, "cuMemcpyDtoD_v2", a.cuMemcpyDtoD, missing);
    resolve_symbol(lib, "cuMemcpyDtoDAsync_v2", a.cuMemcpyDtoDAsync, missing);
    resolve_symbol(lib, "cuMemsetD8_v2", a.cuMemsetD8, missing);
    resolve_symbol(lib, "cuMemsetD8Async", a.cuMemsetD8Async, missing);
    resolve_symbol(lib, "cuMemHostAlloc", a.cuMemHostAlloc, missing);
    resolve_symbol(lib, "cuMemFreeHost", a.cuMemFreeHost, missing);
    resolve_symbol(lib, "cuStreamBeginCapture_v2", a.cuStreamBeginCapture, missing);
    resolve_symbol(lib, "cuStreamEndCapture", a.cuStreamEndCapture, missing);
    resolve_symbol(lib, "cuGraphInstantiateWithFlags", a.cuGraphInstantiate, missing);
    resolve_symbol(lib, "cuGraphLaunch", a.cuGraphLaunch, missing);
    resolve_symbol(lib, "cuGraphExecDestroy", a.cuGraphExecDestroy, missing);
    resolve_symbol(lib, "cuGraphDestroy", a.cuGraphDestroy, missing);
    std::string optional;
    resolve_symbol(lib, "cuPointerGetAttribute", a.cuPointerGetAttribute, optional);
    if (!missing.empty()) {
      s->reason = fmt::format("the CUDA driver in libcuda.so.1 lacks {} (too old a driver)", missing);
      return s;
    }
    if (CUresult r = a.cuInit(0); r != kSuccess) {
      s->reason = "cuInit: " + error_text(r);
      return s;
    }
    int count = 0;
    if (CUresult r = a.cuDeviceGetCount(&count); r != kSuccess || count == 0) {
      s->reason = r != kSuccess ? "cuDeviceGetCount: " + error_text(r) : "the CUDA driver reports no device";
      return s;
    }
    s->contexts.assign(static_cast<size_t>(count), nullptr);
    s->ok = true;
    return s;
  }();
  return *state;
}

}  // namespace

const Api* api() { return loaded().ok ? &loaded().api : nullptr; }
const std::string& reason() { return loaded().reason; }

std::string error_text(CUresult r) {
  const Api& a = loaded().api;
  const char* name = nullptr;
  const char* text = nullptr;
  if (a.cuGetErrorName) a.cuGetErrorName(r, &name);
  if (a.cuGetErrorString) a.cuGetErrorString(r, &text);
  return fmt::format("{} ({})", name ? name : fmt::format("CUDA error {}", r), text ? text : "no description");
}

void check(CUresult r, const char* call) {
  if (r != kSuccess) throw Error(fmt::format("{}: {}", call, error_text(r)));
}

const Api& require() {
  const Api* a = api();
  if (a == nullptr) throw Error(fmt::format("CUDA is not available: {}", reason()));
  return *a;
}

void use_device(int device) {
  const Api& a = require();
  Loaded& s = loaded();
  if (device < 0 || device >= static_cast<int>(s.contexts.size()))
    throw Error(fmt::format("cuda:{} does not exist: this machine has {} CUDA device(s)", device, s.contexts.size()));
  CUcontext ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.contexts[device] == nullptr) {
      CUdevice dev = 0;
      check(a.cuDeviceGet(&dev, device), "cuDeviceGet");
      check(a.cuDevicePrimaryCtxRetain(&s.contexts[device], dev), "cuDevicePrimaryCtxRetain");
    }
    ctx = s.contexts[device];
  }
  check(a.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

Module::Module(const std::string& image, std::string name) : name_(std::move(name)) {
  // A cubin is an ELF read by size from its header; PTX must end in NUL, which std::string's data() provides.
  if (CUresult r = require().cuModuleLoadData(&module_, image.c_str()); r != kSuccess)
    throw Error(fmt::format("cuModuleLoadData({}, {} bytes): {}", name_, image.size(), error_text(r)));
}

Module::Module(Module&& other) noexcept : module_(other.module_), name_(std::move(other.name_)) {
  other.module_ = nullptr;
}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    std::swap(module_, other.module_);
    std::swap(name_, other.name_);
  }
  return *this;
}

Module::~Module() {
  // Not checked: a destructor cannot throw, and at process exit the driver may already be shut down.
  if (module_ != nullptr) loaded().api.cuModuleUnload(module_);
}

CUfunction Module::function(const std::string& kernel) const {
  CUfunction fn = nullptr;
  if (CUresult r = require().cuModuleGetFunction(&fn, module_, kernel.c_str()); r != kSuccess)
    throw Error(fmt::format("cuModuleGetFunction({} in {}): {}", kernel, name_, error_text(r)));
  return fn;
}

void set_max_dynamic_shared(CUfunction fn, int bytes, const char* name) {
  if (CUresult r = require().cuFuncSetAttribute(fn, kFuncAttributeMaxDynamicSharedSizeBytes, bytes); r != kSuccess)
    throw Error(fmt::format("cuFuncSetAttribute({}, MAX_DYNAMIC_SHARED_SIZE_BYTES = {}): {}", name, bytes,
                            error_text(r)));
}

void launch(CUfunction fn, Dim3 grid, Dim3 block, unsigned int shared_bytes, CUstream stream, void** params,
            const char* name) {
  CUresult r = require().cuLaunchKernel(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes, stream,
                                        params, nullptr);
  if (r != kSuccess)
    throw Error(fmt::format("cuLaunchKernel({}, grid ({}, {}, {}), block ({}, {}, {}), {} bytes shared): {}", name,
                            grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes, error_text(r)));
}

Stream::Stream() { check(require().cuStreamCreate(&stream_, kStreamNonBlocking), "cuStreamCreate"); }
Stream::~Stream() {
  if (stream_ != nullptr) loaded().api.cuStreamDestroy(stream_);
}
void Stream::synchronize() const { check(require().cuStreamSynchronize(stream_), "cuStreamSynchronize"); }

Event::Event(bool timing) {
  check(require().cuEventCreate(&event_, timing ? kEventDefault : kEventDisableTiming), "cuEventCreate");
}
Event::~Event() {
  if (event_ != nullptr) loaded().api.cuEventDestroy(event_);
}
void Event::record(CUstream stream) const { check(require().cuEventRecord(event_, stream), "cuEventRecord"); }
void Event::synchronize() const { check(require().cuEventSynchronize(event_), "cuEventSynchronize"); }
float Event::elapsed_ms_since(const Event& start) const {
  float ms = 0;
  check(require().cuEventElapsedTime(&ms, start.event_, event_), "cuEventElapsedTime");
  return ms;
}

}  // namespace sinter::cuda::driver

namespace sinter::cuda {

// The simulated device (SINTER_CUDA_SIM=1) is one sm_90 GPU shaped like an H200, whatever the driver says.
bool is_available() { return is_simulated() || driver::api() != nullptr; }

int device_count() {
  if (is_simulated()) return 1;
  const driver::Api* a = driver::api();
  if (a == nullptr) return 0;
  int count = 0;
  return a->cuDeviceGetCount(&count) == driver::kSuccess ? count : 0;
}

std::string unavailable_reason() { return is_simulated() ? "" : driver::reason(); }

DeviceProperties get_device_properties(int device) {
  if (is_simulated()) {
    if (device != 0) throw Error(fmt::format("cuda:{} does not exist: the simulated device is cuda:0", device));
    return {"sinter CUDA simulator (sm_90)", 9, 0, 132, int64_t{141} << 30, 32, 227 * 1024, 50 << 20};
  }
  const driver::Api& a = driver::require();
  int count = device_count();
  if (device < 0 || device >= count)
    throw Error(fmt::format("cuda:{} does not exist: this machine has {} CUDA device(s)", device, count));
  driver::CUdevice dev = 0;
  driver::check(a.cuDeviceGet(&dev, device), "cuDeviceGet");
  DeviceProperties p;
  char name[256] = {};
  driver::check(a.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  p.name = name;
  auto attr = [&](driver::Attribute at, const char* what) {
    int v = 0;
    driver::check(a.cuDeviceGetAttribute(&v, at, dev), what);
    return v;
  };
  p.major = attr(driver::kComputeCapabilityMajor, "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
  p.minor = attr(driver::kComputeCapabilityMinor, "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)");
  p.multiprocessors = attr(driver::kMultiprocessorCount, "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  p.warp_size = attr(driver::kWarpSize, "cuDeviceGetAttribute(WARP_SIZE)");
  p.max_shared_memory_per_block =
      attr(driver::kMaxSharedMemoryPerBlockOptin, "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
  p.l2_cache_size = attr(driver::kL2CacheSize, "cuDeviceGetAttribute(L2_CACHE_SIZE)");
  size_t bytes = 0;
  driver::check(a.cuDeviceTotalMem(&bytes, dev), "cuDeviceTotalMem");
  p.total_memory = static_cast<int64_t>(bytes);
  return p;
}

void synchronize(int device) {
  if (is_simulated()) {  // simulated kernels finish before their launch returns
    if (device != 0) throw Error(fmt::format("cuda:{} does not exist: the simulated device is cuda:0", device));
    return;
  }
  driver::use_device(device);
  driver::check(driver::require().cuCtxSynchronize(), "cuCtxSynchronize");
}

}  // namespace sinter::cuda
