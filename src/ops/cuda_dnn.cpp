#include "ops/cuda_dnn.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ops/copy.h"
#include "ops/cuda_blas.h"
#include "ops/linalg_util.h"
#include "sinter/cuda.h"
#include "sinter/error.h"
#include "support/dynamic_symbols.h"
#include "support/log.h"
#include "tensor/cuda_driver.h"
#include "tensor/cuda_graph.h"

namespace sinter::cuda {

namespace {

// The few cuDNN declarations used (the legacy convolution API of cuDNN 8 and 9), with the values of
// cudnn_graph.h and cudnn_cnn.h.
using Handle = void*;
using Desc = void*;
using Status = int;
enum DataType : int { kDataFloat = 0, kDataDouble = 1, kDataHalf = 2, kDataBFloat16 = 9 };
enum Format : int { kNCHW = 0, kNHWC = 1 };
enum Math : int { kDefaultMath = 0, kTensorOpMath = 1, kFmaMath = 3 };
constexpr int kCrossCorrelation = 1;
// cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionBwdDataAlgoPerf_t and cudnnConvolutionBwdFilterAlgoPerf_t share
// this layout.
struct AlgoPerf {
  int algo;
  Status status;
  float time;
  size_t memory;
  int determinism;
  int math;
  int reserved[3];
};

struct Api {
  size_t (*cudnnGetVersion)() = nullptr;
  Status (*cudnnCreate)(Handle*) = nullptr;
  Status (*cudnnSetStream)(Handle, void*) = nullptr;
  const char* (*cudnnGetErrorString)(Status) = nullptr;
  Status (*cudnnCreateTensorDescriptor)(Desc*) = nullptr;
  Status (*cudnnSetTensorNdDescriptor)(Desc, int, int, const int*, const int*) = nullptr;
  Status (*cudnnCreateFilterDescriptor)(Desc*) = nullptr;
  Status (*cudnnSetFilterNdDescriptor)(Desc, int, int, int, const int*) = nullptr;
  Status (*cudnnCreateConvolutionDescriptor)(Desc*) = nullptr;
  Status (*cudnnSetConvolutionNdDescriptor)(Desc, int, const int*, const int*, const int*, int, int) = nullptr;
  Status (*cudnnSetConvolutionGroupCount)(Desc, int) = nullptr;
  Status (*cudnnSetConvolutionMathType)(Desc, int) = nullptr;
  Status (*cudnnGetConvolutionForwardAlgorithmMaxCount)(Handle, int*) = nullptr;
  Status (*cudnnGetConvolutionForwardAlgorithm_v7)(Handle, Desc, Desc, Desc, Desc, int, int*, AlgoPerf*) = nullptr;
  Status (*cudnnConvolutionForward)(Handle, const void*, Desc, const void*, Desc, const void*, Desc, int, void*,
                                    size_t, const void*, Desc, void*) = nullptr;
  Status (*cudnnGetConvolutionBackwardDataAlgorithmMaxCount)(Handle, int*) = nullptr;
  Status (*cudnnGetConvolutionBackwardDataAlgorithm_v7)(Handle, Desc, Desc, Desc, Desc, int, int*,
                                                        AlgoPerf*) = nullptr;
  Status (*cudnnConvolutionBackwardData)(Handle, const void*, Desc, const void*, Desc, const void*, Desc, int,
                                         void*, size_t, const void*, Desc, void*) = nullptr;
  Status (*cudnnGetConvolutionBackwardFilterAlgorithmMaxCount)(Handle, int*) = nullptr;
  Status (*cudnnGetConvolutionBackwardFilterAlgorithm_v7)(Handle, Desc, Desc, Desc, Desc, int, int*,
                                                          AlgoPerf*) = nullptr;
  Status (*cudnnConvolutionBackwardFilter)(Handle, const void*, Desc, const void*, Desc, const void*, Desc, int,
                                           void*, size_t, const void*, Desc, void*) = nullptr;
};

struct Loaded {
  Api api;
  bool ok = false;
  std::string reason;
};

const Loaded& loaded() {
  // Loaded at most once per process (a magic static is thread-safe) and never unloaded.
  static const Loaded* state = [] {
    auto* s = new Loaded();
    std::vector<std::string> paths;
    if (const char* env = std::getenv("SINTER_CUDNN"); env != nullptr && *env != '\0') {
      if (std::strcmp(env, "off") == 0 || std::strcmp(env, "0") == 0) {
        s->reason = "cuDNN is switched off (SINTER_CUDNN=off)";
        return s;
      }
      paths.push_back(env);
    }
    for (const char* n : {"libcudnn.so.9", "libcudnn.so", "/usr/local/cuda/lib64/libcudnn.so.9",
                          "/usr/local/cuda/lib/libcudnn.so.9", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9"})
      paths.push_back(n);
    std::string tried;
    void* lib = support::open_first(paths, tried);
    if (lib == nullptr) {
      s->reason = "cuDNN could not be loaded (set SINTER_CUDNN to the path of libcudnn.so.9); tried:" + tried;
      return s;
    }
    std::string missing;
    Api& a = s->api;
#define SINTER_RESOLVE(name) support::resolve_symbol(lib, #name, a.name, missing)
    SINTER_RESOLVE(cudnnGetVersion);
    SINTER_RESOLVE(cudnnCreate);
    SINTER_RESOLVE(cudnnSetStream);
    SINTER_RESOLVE(cudnnGetErrorString);
    SINTER_RESOLVE(cudnnCreateTensorDescriptor);
    SINTER_RESOLVE(cudnnSetTensorNdDescriptor);
    SINTER_RESOLVE(cudnnCreateFilterDescriptor);
    SINTER_RESOLVE(cudnnSetFilterNdDescriptor);
    SINTER_RESOLVE(cudnnCreateConvolutionDescriptor);
    SINTER_RESOLVE(cudnnSetConvolutionNdDescriptor);
    SINTER_RESOLVE(cudnnSetConvolutionGroupCount);
    SINTER_RESOLVE(cudnnSetConvolutionMathType);
    SINTER_RESOLVE(cudnnGetConvolutionForwardAlgorithmMaxCount);
    SINTER_RESOLVE(cudnnGetConvolutionForwardAlgorithm_v7);
    SINTER_RESOLVE(cudnnConvolutionForward);
    SINTER_RESOLVE(cudnnGetConvolutionBackwardDataAlgorithmMaxCount);
    SINTER_RESOLVE(cudnnGetConvolutionBackwardDataAlgorithm_v7);
    SINTER_RESOLVE(cudnnConvolutionBackwardData);
    SINTER_RESOLVE(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount);
    SINTER_RESOLVE(cudnnGetConvolutionBackwardFilterAlgorithm_v7);
    SINTER_RESOLVE(cudnnConvolutionBackwardFilter);
#undef SINTER_RESOLVE
    if (!missing.empty()) {
      s->reason = "cuDNN lacks " + missing;
      return s;
    }
    if (size_t v = a.cudnnGetVersion(); v < 8000) {
      s->reason = fmt::format("cuDNN {} is older than 8.0", v);
      return s;
    }
    s->ok = true;
    return s;
  }();
  return *state;
}

void check(Status status, const char* call, const std::string& what) {
  if (status == 0) return;
  const char* text = loaded().api.cudnnGetErrorString ? loaded().api.cudnnGetErrorString(status) : "";
  throw Error(fmt::format("{} failed: {} (status {}) for {}", call, text ? text : "", status, what));
}

// The descriptors and the algorithm of one geometry. Descriptors are made once per geometry and kept for the
// process, as the handle is.
struct Plan {
  Desc x = nullptr, w = nullptr, y = nullptr, conv = nullptr;  // backward data: x is dy, y is dx; filter: y is dy
  int algo = -1;
  size_t workspace = 0;
  bool ok = false;
};

// One handle per device, created on first use; calls through it, and its plans, are used under its mutex.
struct DeviceHandle {
  std::mutex mutex;
  Handle handle = nullptr;
  std::unordered_map<std::string, Plan> plans;
};

DeviceHandle& handle_for(int device) {
  static std::mutex mutex;
  static std::unordered_map<int, DeviceHandle*> handles;  // never freed: cuDNN is used until the process exits
  std::lock_guard<std::mutex> lock(mutex);
  DeviceHandle*& h = handles[device];
  if (h == nullptr) {
    driver::use_device(device);
    auto* fresh = new DeviceHandle();
    check(loaded().api.cudnnCreate(&fresh->handle), "cudnnCreate", fmt::format("cuda:{}", device));
    h = fresh;
  }
  return *h;
}

std::atomic<int64_t>& calls_counter() {
  static std::atomic<int64_t> calls{0};
  return calls;
}

// The largest workspace an algorithm may ask for.
constexpr size_t kWorkspaceBudget = size_t{1} << 30;

enum class Kind { kForward, kBackwardData, kBackwardFilter };

// The operands of one call as cuDNN sees them: `a` is read (x, or dy), `b` written (y, or dx), `w` the filter;
// the backward filter reads a (x) and b (dy) and writes w (dw).
struct Call {
  Kind kind;
  Tensor a, w, b;
  Format format = kNCHW;
  int pad[2] = {}, stride[2] = {}, dilation[2] = {};
  int groups = 1;
};

bool fits_int(const std::vector<int64_t>& v) {
  for (int64_t x : v)
    if (x > INT_MAX) return false;
  return true;
}

std::vector<int> ints(const std::vector<int64_t>& v) { return std::vector<int>(v.begin(), v.end()); }

bool aligned(const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; }

int data_type(DType dt) {
  return dt == kFloat32 ? kDataFloat : dt == kFloat64 ? kDataDouble : dt == kBFloat16 ? kDataBFloat16 : kDataHalf;
}

// The math the call asks for: no TF32 for float32 unless allowed (as PyTorch's default), tensor cores for the
// half types.
int math_type(DType dt) {
  if (dt == kFloat32) return matmul_allow_tf32() ? kDefaultMath : kFmaMath;
  return dt == kFloat64 ? kDefaultMath : kTensorOpMath;
}

std::string describe(const Call& c) {
  return fmt::format("{} x {} w {} -> {} ({}, stride [{}, {}], padding [{}, {}], dilation [{}, {}], groups {})",
                     c.kind == Kind::kForward        ? "conv2d"
                     : c.kind == Kind::kBackwardData ? "conv_transpose2d"
                                                     : "conv2d_weight_grad (dy as the last)",
                     c.a.sizes().str(), c.w.sizes().str(),
                     c.b.sizes().str(), dtype_name(c.b.dtype()), c.stride[0], c.stride[1], c.pad[0], c.pad[1],
                     c.dilation[0], c.dilation[1], c.groups);
}

std::string key_of(const Call& c) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{},{},{},{},{},{},{}|{}", static_cast<int>(c.kind),
                     static_cast<int>(c.b.dtype()), fmt::join(sizes_of(c.a), ","), fmt::join(strides_of(c.a), ","),
                     fmt::join(sizes_of(c.w), ","), static_cast<int>(c.format), fmt::join(sizes_of(c.b), ","),
                     fmt::join(strides_of(c.b), ","), c.pad[0], c.pad[1], c.stride[0], c.stride[1], c.dilation[0],
                     c.dilation[1], c.groups, math_type(c.b.dtype()));
}

// Builds the descriptors and asks cuDNN's heuristics for an algorithm; a plan without one is kept too (not ok),
// so the next call of that geometry takes the caller's path at once.
Plan make_plan(Handle handle, const Call& c, const std::string& what) {
  const Api& api = loaded().api;
  Plan p;
  int dt = data_type(c.b.dtype());
  auto tensor = [&](Desc& d, const Tensor& t) {
    check(api.cudnnCreateTensorDescriptor(&d), "cudnnCreateTensorDescriptor", what);
    std::vector<int> sizes = ints(sizes_of(t)), strides = ints(strides_of(t));
    return api.cudnnSetTensorNdDescriptor(d, dt, 4, sizes.data(), strides.data());
  };
  check(api.cudnnCreateFilterDescriptor(&p.w), "cudnnCreateFilterDescriptor", what);
  check(api.cudnnCreateConvolutionDescriptor(&p.conv), "cudnnCreateConvolutionDescriptor", what);
  std::vector<int> filter = ints(sizes_of(c.w));
  int compute = c.b.dtype() == kFloat64 ? kDataDouble : kDataFloat;
  // A geometry the descriptors refuse (strides cuDNN does not take) is a plan without an algorithm.
  if (tensor(p.x, c.a) != 0 || tensor(p.y, c.b) != 0 ||
      api.cudnnSetFilterNdDescriptor(p.w, dt, c.format, 4, filter.data()) != 0 ||
      api.cudnnSetConvolutionNdDescriptor(p.conv, 2, c.pad, c.stride, c.dilation, kCrossCorrelation, compute) != 0 ||
      api.cudnnSetConvolutionGroupCount(p.conv, c.groups) != 0)
    return p;
  const int math = math_type(c.b.dtype());
  check(api.cudnnSetConvolutionMathType(p.conv, math), "cudnnSetConvolutionMathType", what);
  int count = 0, returned = 0;
  std::vector<AlgoPerf> perf;
  if (c.kind == Kind::kForward) {
    check(api.cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count), "cudnnGetConvolutionForwardAlgorithmMaxCount",
          what);
    perf.resize(static_cast<size_t>(std::max(count, 1)));
    if (api.cudnnGetConvolutionForwardAlgorithm_v7(handle, p.x, p.w, p.conv, p.y, count, &returned, perf.data()) != 0)
      return p;
  } else if (c.kind == Kind::kBackwardFilter) {
    check(api.cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &count),
          "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount", what);
    perf.resize(static_cast<size_t>(std::max(count, 1)));
    if (api.cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, p.x, p.y, p.conv, p.w, count, &returned,
                                                          perf.data()) != 0)
      return p;
  } else {
    check(api.cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &count),
          "cudnnGetConvolutionBackwardDataAlgorithmMaxCount", what);
    perf.resize(static_cast<size_t>(std::max(count, 1)));
    if (api.cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, p.w, p.x, p.conv, p.y, count, &returned,
                                                        perf.data()) != 0)
      return p;
  }
  for (int i = 0; i < returned; ++i) {
    const AlgoPerf& r = perf[static_cast<size_t>(i)];
    if (r.status != 0 || r.memory > kWorkspaceBudget) continue;
    if (math == kFmaMath && r.math != kFmaMath) continue;  // float32 without TF32
    check(api.cudnnSetConvolutionMathType(p.conv, r.math), "cudnnSetConvolutionMathType", what);
    p.algo = r.algo, p.workspace = r.memory, p.ok = true;
    break;
  }
  SINTER_LOG(kPerfHints, "cudnn: {}: {}", what,
             p.ok ? fmt::format("algorithm {}, workspace {} bytes", p.algo, p.workspace)
                  : std::string("no algorithm; the caller's own path runs"));
  return p;
}

MemoryFormat memory_format(Format format) {
  return format == kNHWC ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous;
}

// `t` dense in `format`: itself when it already is, else a dense copy (linalg_util's contiguous_as).
Tensor in_format(const Tensor& t, Format format) { return contiguous_as(t, t.dtype(), memory_format(format)); }

bool run(Call c, const Tensor& bias) {
  if (!dnn_supported(c.b.dtype()) || c.b.numel().hint() == 0 || c.a.numel().hint() == 0) return false;
  for (const Tensor* t : {&c.a, &c.w, &c.b})
    if (!fits_int(sizes_of(*t)) || !fits_int(strides_of(*t)) || t->numel().hint() > INT_MAX) return false;
  // NHWC when the written tensor (for the backward filter, dy) is channels-last (and not also contiguous). Every
  // other operand is made dense in that format: cuDNN's engines for mixed layouts are few and slow, and tensor
  // cores want NHWC throughout. A filter written in another layout is computed into a buffer and copied.
  c.format = !c.b.is_contiguous() && c.b.is_contiguous(MemoryFormat::kChannelsLast) ? kNHWC : kNCHW;
  c.a = in_format(c.a, c.format);
  Tensor written_filter;
  if (c.kind != Kind::kBackwardFilter) {
    c.w = in_format(c.w, c.format);
  } else if (!c.w.is_contiguous(memory_format(c.format))) {
    written_filter = c.w;
    c.w = empty_from_meta(dense_meta(c.w.sizes(), c.w.dtype(), c.w.device(), memory_format(c.format)));
  }
  if (!aligned(c.a) || !aligned(c.w) || !aligned(c.b)) return false;
  const std::string what = describe(c);
  DeviceHandle& h = handle_for(c.b.device().index);
  Plan plan;
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    driver::use_device(c.b.device().index);
    std::string key = key_of(c);
    auto it = h.plans.find(key);
    if (it == h.plans.end()) it = h.plans.emplace(key, make_plan(h.handle, c, what)).first;
    plan = it->second;
  }
  if (!plan.ok) return false;
  double beta = 0;
  if (bias.defined()) {  // [C] of the written tensor, broadcast over images and pixels; accumulated onto
    std::vector<int64_t> s = sizes_of(c.b);
    copy_strided(c.b, strided_view(bias, s, {0, bias.strides()[0].hint(), 0, 0}));
    beta = 1;
  }
  Tensor workspace;
  if (plan.workspace > 0)
    workspace = empty_from_meta(dense_meta(SymIntList({static_cast<int64_t>(plan.workspace)}), kUInt8,
                                           c.b.device()));
  const bool f64 = c.b.dtype() == kFloat64;
  const double one = 1;
  const float one_f = 1, beta_f = static_cast<float>(beta);
  const void* alpha_p = f64 ? static_cast<const void*>(&one) : &one_f;
  const void* beta_p = f64 ? static_cast<const void*>(&beta) : &beta_f;
  void* ws = workspace.defined() ? workspace.data_ptr() : nullptr;
  const Api& api = loaded().api;
  std::lock_guard<std::mutex> lock(h.mutex);
  driver::use_device(c.b.device().index);
  // On the stream this thread's work goes on: a CUDA graph's capture stream while capturing.
  check(api.cudnnSetStream(h.handle, work_stream(c.b.device().index)), "cudnnSetStream", what);
  if (c.kind == Kind::kForward)
    check(api.cudnnConvolutionForward(h.handle, alpha_p, plan.x, c.a.data_ptr(), plan.w, c.w.data_ptr(), plan.conv,
                                      plan.algo, ws, plan.workspace, beta_p, plan.y, c.b.data_ptr()),
          "cudnnConvolutionForward", what);
  else if (c.kind == Kind::kBackwardFilter)
    check(api.cudnnConvolutionBackwardFilter(h.handle, alpha_p, plan.x, c.a.data_ptr(), plan.y, c.b.data_ptr(),
                                             plan.conv, plan.algo, ws, plan.workspace, beta_p, plan.w,
                                             c.w.data_ptr()),
          "cudnnConvolutionBackwardFilter", what);
  else
    check(api.cudnnConvolutionBackwardData(h.handle, alpha_p, plan.w, c.w.data_ptr(), plan.x, c.a.data_ptr(),
                                           plan.conv, plan.algo, ws, plan.workspace, beta_p, plan.y,
                                           c.b.data_ptr()),
          "cudnnConvolutionBackwardData", what);
  if (written_filter.defined()) copy_strided(written_filter, c.w);
  ++calls_counter();
  return true;
}

// The call's padding, stride and dilation, when cuDNN can take them (symmetric padding, int sizes).
bool set_params(Call& c, const Conv2dParams& p, bool symmetric_only) {
  for (int i = 0; i < 2; ++i) {
    if (symmetric_only && p.pad_before[i] != p.pad_after[i]) return false;
    if (p.pad_before[i] > INT_MAX || p.stride[i] > INT_MAX || p.dilation[i] > INT_MAX) return false;
    c.pad[i] = static_cast<int>(p.pad_before[i]);
    c.stride[i] = static_cast<int>(p.stride[i]);
    c.dilation[i] = static_cast<int>(p.dilation[i]);
  }
  if (p.groups > INT_MAX) return false;
  c.groups = static_cast<int>(p.groups);
  return true;
}

}  // namespace

bool dnn_supported(DType dtype) {
  if (is_simulated()) return false;
  if (dtype != kFloat32 && dtype != kFloat64 && dtype != kBFloat16 && dtype != kFloat16) return false;
  return loaded().ok;
}

bool dnn_conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p, const Tensor& out) {
  Call c{Kind::kForward, x, w, out};
  if (!set_params(c, p, true)) return false;
  return run(c, bias);
}

bool dnn_conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p,
                          const Tensor& out) {
  Call c{Kind::kBackwardData, x, w, out};
  if (!set_params(c, p, false)) return false;
  // cuDNN takes dx's sizes as given and checks that the forward conv of them has dy's: an output padding of a
  // stride or more (allowed when the dilation is larger) has no such forward.
  for (int i = 0; i < 2; ++i) {
    int64_t in = x.sizes()[2 + i].hint(), o = out.sizes()[2 + i].hint(), k = w.sizes()[2 + i].hint();
    if ((o + 2 * p.pad_before[i] - p.dilation[i] * (k - 1) - 1) / p.stride[i] + 1 != in) return false;
  }
  return run(c, bias);
}

bool dnn_conv2d_weight_grad(const Tensor& x, const Tensor& dy, const Conv2dParams& p, const Tensor& dw) {
  Call c{Kind::kBackwardFilter, x, dw, dy};
  if (!set_params(c, p, true)) return false;
  return run(c, Tensor());
}

int64_t dnn_calls() { return calls_counter().load(); }

}  // namespace sinter::cuda
