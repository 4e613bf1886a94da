#include "ops/cuda_blas.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ops/shape_util.h"
#include "sinter/cuda.h"
#include "sinter/error.h"
#include "support/check.h"
#include "support/dynamic_symbols.h"
#include "support/log.h"
#include "tensor/cuda_driver.h"
#include "tensor/cuda_graph.h"

namespace sinter::cuda {

namespace {

// The few cuBLAS declarations used, with the values of cublas_api.h and library_types.h (CUDA 12 and 13).
using Handle = void*;
using Status = int;
enum Operation : int { kOpN = 0, kOpT = 1 };
enum DataType : int { kR32F = 0, kR64F = 1, kR16F = 2, kR16BF = 14 };
enum ComputeType : int { kCompute32F = 68, kCompute32FFastTF32 = 77, kCompute64F = 70 };
constexpr int kGemmDefault = -1;

struct Api {
  Status (*cublasCreate_v2)(Handle*) = nullptr;
  Status (*cublasSetStream_v2)(Handle, void*) = nullptr;
  Status (*cublasSetWorkspace_v2)(Handle, void*, size_t) = nullptr;
  Status (*cublasGemmStridedBatchedEx)(Handle, int, int, int, int, int, const void*, const void*, int, int,
                                       long long, const void*, int, int, long long, const void*, void*, int, int,
                                       long long, int, int, int) = nullptr;
  const char* (*cublasGetStatusString)(Status) = nullptr;
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
    if (const char* env = std::getenv("SINTER_CUBLAS"); env != nullptr && *env != '\0') paths.push_back(env);
    for (const char* n : {"libcublas.so.13", "libcublas.so.12", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so.13",
                          "/usr/local/cuda/lib64/libcublas.so.12"})
      paths.push_back(n);
    std::string tried;
    void* lib = support::open_first(paths, tried);
    if (lib == nullptr) {
      s->reason = "cuBLAS could not be loaded (set SINTER_CUBLAS to the path of libcublas.so); tried:" + tried;
      return s;
    }
    std::string missing;
    Api& a = s->api;
    support::resolve_symbol(lib, "cublasCreate_v2", a.cublasCreate_v2, missing);
    support::resolve_symbol(lib, "cublasSetStream_v2", a.cublasSetStream_v2, missing);
    std::string optional;  // without it, handles keep cuBLAS's default workspace
    support::resolve_symbol(lib, "cublasSetWorkspace_v2", a.cublasSetWorkspace_v2, optional);
    support::resolve_symbol(lib, "cublasGemmStridedBatchedEx", a.cublasGemmStridedBatchedEx, missing);
    support::resolve_symbol(lib, "cublasGetStatusString", a.cublasGetStatusString, missing);
    if (!missing.empty()) {
      s->reason = "cuBLAS lacks " + missing;
      return s;
    }
    s->ok = true;
    return s;
  }();
  return *state;
}

void check(Status status, const char* call, const std::string& what) {
  if (status == 0) return;
  const char* text = loaded().api.cublasGetStatusString ? loaded().api.cublasGetStatusString(status) : "";
  throw Error(fmt::format("{} failed: {} (status {}) for {}", call, text ? text : "", status, what));
}

// One handle per device, created on first use; calls through it are issued under its mutex.
struct DeviceHandle {
  std::mutex mutex;
  Handle handle = nullptr;
  Tensor workspace;  // the handle's own, kept as long as the handle (the process)
};

// The workspace each handle gets: NVIDIA recommends 32 MiB on Hopper (and 4 MiB before); without one set, cuBLAS
// picks among fewer kernels. SINTER_CUBLAS_WORKSPACE_MB sets it (0: none, cuBLAS's own default).
size_t workspace_bytes() {
  static const size_t bytes = [] {
    const char* v = std::getenv("SINTER_CUBLAS_WORKSPACE_MB");
    long mb = v && *v ? std::strtol(v, nullptr, 10) : 32;
    return static_cast<size_t>(std::clamp<long>(mb, 0, 1024)) << 20;
  }();
  return bytes;
}

DeviceHandle& handle_for(int device) {
  static std::mutex mutex;
  static std::unordered_map<int, DeviceHandle*> handles;  // never freed: cuBLAS is used until the process exits
  std::lock_guard<std::mutex> lock(mutex);
  DeviceHandle*& h = handles[device];
  if (h == nullptr) {
    driver::use_device(device);
    auto* fresh = new DeviceHandle();
    check(loaded().api.cublasCreate_v2(&fresh->handle), "cublasCreate", fmt::format("cuda:{}", device));
    check(loaded().api.cublasSetStream_v2(fresh->handle, nullptr), "cublasSetStream", "the default stream");
    // Every GEMM through the handle runs in stream order on the default stream (a CUDA graph's replays too), so
    // one workspace serves them all. Not allocated while capturing (it would come from the graph's pool).
    // A refusal is not an error: cuBLAS then keeps its own default workspace, as before.
    if (workspace_bytes() > 0 && loaded().api.cublasSetWorkspace_v2 && !capturing(device)) {
      fresh->workspace = empty_from_meta(
          dense_meta(SymIntList({static_cast<int64_t>(workspace_bytes())}), kUInt8, Device(DeviceType::kCUDA, device)));
      Status status =
          loaded().api.cublasSetWorkspace_v2(fresh->handle, fresh->workspace.data_ptr(), workspace_bytes());
      if (status != 0) {
        SINTER_LOG(kPerfHints, "cuBLAS refused a {}-byte workspace on cuda:{} (status {}); it keeps its default",
                   workspace_bytes(), device, status);
        fresh->workspace = Tensor();
      }
    }
    h = fresh;
  }
  return *h;
}

std::atomic<bool>& allow_tf32_flag() {
  static std::atomic<bool> allow{false};
  return allow;
}

// A matrix (the last two dims) as cuBLAS reads it in column-major terms: C^T = B^T A^T, so a row-major operand
// is read as is (kOpN, ld its row stride) and a column-major one transposed (kOpT, ld its column stride).
struct Operand {
  int op = kOpN;
  int64_t ld = 0;
};

std::optional<Operand> as_operand(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (cs == 1 || cols == 1) {
    int64_t ld = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
    if (ld >= std::max<int64_t>(cols, 1)) return Operand{kOpN, ld};
  }
  if (rs == 1 || rows == 1) {
    int64_t ld = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
    if (ld >= std::max<int64_t>(rows, 1)) return Operand{kOpT, ld};
  }
  return std::nullopt;
}

int to_int(int64_t v, const char* what, const std::string& shapes) {
  if (v > INT_MAX) throw Error(fmt::format("matmul on CUDA: {} {} exceeds cuBLAS's int range for {}", what, v, shapes));
  return static_cast<int>(v);
}

}  // namespace

void set_matmul_allow_tf32(bool allow) { allow_tf32_flag() = allow; }
bool matmul_allow_tf32() { return allow_tf32_flag(); }

bool gemm_supported(DType dtype) {
  if (is_simulated()) return false;
  if (dtype != kFloat32 && dtype != kFloat64 && dtype != kBFloat16 && dtype != kFloat16) return false;
  return loaded().ok;
}

void gemm(const Tensor& a0, const Tensor& b0, const Tensor& out, double alpha, double beta) {
  const int64_t r = out.dim();
  const std::string shapes =
      fmt::format("{} @ {} -> {} ({})", a0.sizes().str(), b0.sizes().str(), out.sizes().str(), dtype_name(out.dtype()));
  SINTER_CHECK(loaded().ok, "matmul on CUDA: {}", loaded().reason);
  const int64_t m = out.sizes()[r - 2].hint(), n = out.sizes()[r - 1].hint(), k = a0.sizes()[r - 1].hint();
  if (m == 0 || n == 0) return;
  auto strides = [](const Tensor& t) { return t.strides().hints(); };
  Tensor a = a0, b = b0;
  auto operand = [&](Tensor& t, int64_t rows, int64_t cols) {
    std::vector<int64_t> s = strides(t);
    auto o = as_operand(rows, cols, s[r - 2], s[r - 1]);
    if (o) return *o;
    t = t.contiguous();
    return *as_operand(rows, cols, cols, 1);
  };
  Operand oa = operand(a, m, k), ob = operand(b, k, n);
  // Batch dims: broadcast ones read with stride 0; the innermost run that every operand walks with one stride is
  // one strided-batched call, the dims outside it a loop of calls.
  std::vector<int64_t> sizes, sa, sb, sc;
  {
    std::vector<int64_t> ta = strides(a), tb = strides(b), tc = strides(out);
    for (int64_t d = 0; d < r - 2; ++d) {
      int64_t size = out.sizes()[d].hint();
      if (size == 1) continue;
      sizes.push_back(size);
      sa.push_back(a.sizes()[d].hint() == 1 ? 0 : ta[d]);
      sb.push_back(b.sizes()[d].hint() == 1 ? 0 : tb[d]);
      sc.push_back(tc[d]);
    }
  }
  size_t inner = sizes.size();  // batch dims [inner, end) collapse into one
  int64_t count = 1;
  if (!sizes.empty()) {
    inner = sizes.size() - 1;
    count = sizes.back();
    while (inner > 0) {
      size_t d = inner - 1;
      int64_t s = sizes[inner];
      if (sa[d] != sa[inner] * s || sb[d] != sb[inner] * s || sc[d] != sc[inner] * s) break;
      count *= sizes[d];  // the run's strides stay those of its innermost dim
      inner = d;
    }
  }
  const int64_t stride_a = sizes.empty() ? 0 : sa.back(), stride_b = sizes.empty() ? 0 : sb.back();
  const int64_t stride_c = sizes.empty() ? m * n : sc.back();
  const DType dt = out.dtype();
  const int type = dt == kFloat32 ? kR32F : dt == kFloat64 ? kR64F : dt == kBFloat16 ? kR16BF : kR16F;
  const int compute = dt == kFloat64 ? kCompute64F
                      : dt == kFloat32 && matmul_allow_tf32() ? kCompute32FFastTF32
                                                              : kCompute32F;
  const float alpha_f = static_cast<float>(alpha), beta_f = static_cast<float>(beta);
  const void* alpha_p = dt == kFloat64 ? static_cast<const void*>(&alpha) : &alpha_f;
  const void* beta_p = dt == kFloat64 ? static_cast<const void*>(&beta) : &beta_f;
  const size_t es = out.element_size();
  const int im = to_int(m, "m", shapes), in = to_int(n, "n", shapes), ik = to_int(k, "k", shapes);
  const int lda = to_int(ob.ld, "a leading dim", shapes), ldb = to_int(oa.ld, "a leading dim", shapes);
  const int icount = to_int(count, "batch", shapes);
  // The outer batch dims, walked as a multi-index.
  std::vector<int64_t> outer(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(inner));
  std::vector<int64_t> index(outer.size(), 0);
  DeviceHandle& h = handle_for(out.device().index);
  std::lock_guard<std::mutex> lock(h.mutex);
  driver::use_device(out.device().index);
  // On the stream this thread's work goes on: a CUDA graph's capture stream while capturing.
  check(loaded().api.cublasSetStream_v2(h.handle, work_stream(out.device().index)), "cublasSetStream", shapes);
  while (true) {
    int64_t oa_off = 0, ob_off = 0, oc_off = 0;
    for (size_t d = 0; d < outer.size(); ++d) oa_off += index[d] * sa[d], ob_off += index[d] * sb[d], oc_off += index[d] * sc[d];
    const char* pa = static_cast<const char*>(a.data_ptr()) + oa_off * static_cast<int64_t>(es);
    const char* pb = static_cast<const char*>(b.data_ptr()) + ob_off * static_cast<int64_t>(es);
    char* pc = static_cast<char*>(out.data_ptr()) + oc_off * static_cast<int64_t>(es);
    // Column-major: C^T [n x m] = op(B^T) [n x k] * op(A^T) [k x m].
    check(loaded().api.cublasGemmStridedBatchedEx(h.handle, ob.op, oa.op, in, im, ik, alpha_p, pb, type, lda, stride_b,
                                                  pa, type, ldb, stride_a, beta_p, pc, type, in, stride_c, icount,
                                                  compute, kGemmDefault),
          "cublasGemmStridedBatchedEx", shapes);
    size_t d = outer.size();
    while (d > 0 && ++index[d - 1] == outer[d - 1]) index[--d] = 0;
    if (d == 0) break;
  }
}

}  // namespace sinter::cuda
