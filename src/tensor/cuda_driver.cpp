#include "tensor/cuda_driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <mutex>
#include <vector>

#include "sinter/cuda.h"
#include "sinter/error.h"

namespace sinter::cuda::driver {

namespace {

struct Loaded {
  Api api;
  bool ok = false;
  std::string reason;
  std::mutex mutex;                    // guards contexts
  std::vector<CUcontext> contexts;     // primary context per device, retained on first use
};

template <class F>
bool resolve(void* lib, const char* name, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  return fn != nullptr;
}

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
    resolve(lib, "cuInit", a.cuInit, missing);
    resolve(lib, "cuDriverGetVersion", a.cuDriverGetVersion, missing);
    resolve(lib, "cuDeviceGetCount", a.cuDeviceGetCount, missing);
    resolve(lib, "cuDeviceGet", a.cuDeviceGet, missing);
    resolve(lib, "cuDeviceGetName", a.cuDeviceGetName, missing);
    resolve(lib, "cuDeviceGetAttribute", a.cuDeviceGetAttribute, missing);
    resolve(lib, "cuDeviceTotalMem_v2", a.cuDeviceTotalMem, missing);
    resolve(lib, "cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain, missing);
    resolve(lib, "cuCtxSetCurrent", a.cuCtxSetCurrent, missing);
    resolve(lib, "cuCtxSynchronize", a.cuCtxSynchronize, missing);
    resolve(lib, "cuMemGetInfo_v2", a.cuMemGetInfo, missing);
    resolve(lib, "cuMemAlloc_v2", a.cuMemAlloc, missing);
    resolve(lib, "cuMemFree_v2", a.cuMemFree, missing);
    resolve(lib, "cuMemcpyHtoD_v2", a.cuMemcpyHtoD, missing);
    resolve(lib, "cuMemcpyDtoH_v2", a.cuMemcpyDtoH, missing);
    resolve(lib, "cuGetErrorName", a.cuGetErrorName, missing);
    resolve(lib, "cuGetErrorString", a.cuGetErrorString, missing);
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

}  // namespace sinter::cuda::driver

namespace sinter::cuda {

bool is_available() { return driver::api() != nullptr; }

int device_count() {
  const driver::Api* a = driver::api();
  if (a == nullptr) return 0;
  int count = 0;
  return a->cuDeviceGetCount(&count) == driver::kSuccess ? count : 0;
}

std::string unavailable_reason() { return driver::reason(); }

DeviceProperties get_device_properties(int device) {
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
  driver::use_device(device);
  driver::check(driver::require().cuCtxSynchronize(), "cuCtxSynchronize");
}

}  // namespace sinter::cuda
