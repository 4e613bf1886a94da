#include "codegen/cuda/sim_prelude.h"

#include <fmt/format.h>

#include <string>

#include "support/cuda_sim_abi.h"

namespace sinter::codegen::cuda {
namespace {

// Notes on the choices below:
// - `__shared__` is `thread_local`: every thread of a block runs as a fiber on one OS thread, so they see one
//   copy, and blocks run on other OS threads get their own. At block scope thread_local implies static.
// - `extern __shared__ T smem[]` is an extern declaration, which needs a definition of that exact name; the
//   definitions are written in assembly (a TLS buffer in a COMDAT group, so several units of one object share
//   one) because assembly has no types: the same symbol serves every element type.
// - The built-in variables read the running fiber's sn_sim_thread. sn_sim_self_ is `const`: within one call of
//   a kernel (one fiber) it always returns the same pointer, so the compiler may keep it across barriers.
// - Shuffles compute the source lane here (width, up/down/xor rules) and let the runtime move the bits.
constexpr char kBody[] = R"PRELUDE(
#define SN_SIM_STRINGIFY_(...) #__VA_ARGS__
#define SN_SIM_STRINGIFY(...) SN_SIM_STRINGIFY_(__VA_ARGS__)
#define SN_SIM_INLINE static inline __attribute__((always_inline))
#define SN_SIM_EXPORT extern "C" __attribute__((visibility("default")))

inline __attribute__((visibility("hidden"))) const sn_sim_api* sn_sim_api_ = 0;
extern "C" __attribute__((weak, visibility("default"))) void sn_sim_bind(const sn_sim_api* api) { sn_sim_api_ = api; }
static __attribute__((const, noinline)) const sn_sim_thread* sn_sim_self_() { return sn_sim_api_->self(); }

__asm__(".pushsection .tbss.sn_sim_dynamic_shared,\"awTG\",%nobits,sn_sim_dynamic_shared,comdat\n"
        ".balign 128\n"
        ".weak smem\n.hidden smem\n.type smem,%tls_object\n.size smem," SN_SIM_STRINGIFY(SN_SIM_MAX_DYNAMIC_SHARED) "\n"
        ".weak smem_\n.hidden smem_\n.type smem_,%tls_object\n.size smem_," SN_SIM_STRINGIFY(SN_SIM_MAX_DYNAMIC_SHARED) "\n"
        "smem:\nsmem_:\n.zero " SN_SIM_STRINGIFY(SN_SIM_MAX_DYNAMIC_SHARED) "\n.popsection\n");

// ---- keywords ----
#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ thread_local

// ---- built-in variables and types ----
typedef sn_sim_uint3 uint3;
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
  dim3(sn_sim_uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
#define threadIdx (sn_sim_self_()->thread_idx)
#define blockIdx (sn_sim_self_()->block_idx)
#define blockDim (sn_sim_self_()->block_dim)
#define gridDim (sn_sim_self_()->grid_dim)
static constexpr int warpSize = 32;
SN_SIM_INLINE uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return uint3{x, y, z}; }

#define SN_SIM_VEC2(T, N, A) \
  struct __attribute__((aligned(A))) N { T x, y; }; \
  SN_SIM_INLINE N make_##N(T x, T y) { return N{x, y}; }
#define SN_SIM_VEC3(T, N) \
  struct N { T x, y, z; }; \
  SN_SIM_INLINE N make_##N(T x, T y, T z) { return N{x, y, z}; }
#define SN_SIM_VEC4(T, N, A) \
  struct __attribute__((aligned(A))) N { T x, y, z, w; }; \
  SN_SIM_INLINE N make_##N(T x, T y, T z, T w) { return N{x, y, z, w}; }
SN_SIM_VEC2(float, float2, 8) SN_SIM_VEC3(float, float3) SN_SIM_VEC4(float, float4, 16)
SN_SIM_VEC2(int, int2, 8) SN_SIM_VEC3(int, int3) SN_SIM_VEC4(int, int4, 16)
SN_SIM_VEC2(unsigned, uint2, 8) SN_SIM_VEC4(unsigned, uint4, 16)
SN_SIM_VEC2(unsigned short, ushort2, 4) SN_SIM_VEC4(unsigned short, ushort4, 8)
SN_SIM_VEC4(unsigned char, uchar4, 4) SN_SIM_VEC2(long long, longlong2, 16) SN_SIM_VEC2(double, double2, 16)

// ---- barriers, warp intrinsics ----
SN_SIM_INLINE void __syncthreads() { sn_sim_api_->syncthreads(); }
SN_SIM_INLINE void __syncwarp(unsigned mask = 0xffffffffu) { sn_sim_api_->syncwarp(mask); }
SN_SIM_INLINE unsigned __activemask() { return sn_sim_api_->activemask(); }
SN_SIM_INLINE unsigned __ballot_sync(unsigned mask, int p) { return sn_sim_api_->vote(mask, p, 0); }
SN_SIM_INLINE int __any_sync(unsigned mask, int p) { return (int)sn_sim_api_->vote(mask, p, 1); }
SN_SIM_INLINE int __all_sync(unsigned mask, int p) { return (int)sn_sim_api_->vote(mask, p, 2); }
template <class T>
SN_SIM_INLINE T sn_sim_shfl_(unsigned mask, T v, unsigned src) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "the simulator shuffles 4- and 8-byte values");
  unsigned long long bits = 0;
  __builtin_memcpy(&bits, &v, sizeof(T));
  bits = sn_sim_api_->shfl(mask, bits, src);
  T out;
  __builtin_memcpy(&out, &bits, sizeof(T));
  return out;
}
template <class T>
SN_SIM_INLINE T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  unsigned w = (unsigned)width, lane = sn_sim_self_()->lane;
  return sn_sim_shfl_(mask, v, (lane & ~(w - 1)) + ((unsigned)src & (w - 1)));
}
template <class T>
SN_SIM_INLINE T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  unsigned w = (unsigned)width, lane = sn_sim_self_()->lane;
  return sn_sim_shfl_(mask, v, (lane & (w - 1)) >= delta ? lane - delta : lane);
}
template <class T>
SN_SIM_INLINE T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  unsigned w = (unsigned)width, lane = sn_sim_self_()->lane;
  return sn_sim_shfl_(mask, v, (lane & (w - 1)) + delta < w ? lane + delta : lane);
}
template <class T>
SN_SIM_INLINE T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  unsigned w = (unsigned)width, lane = sn_sim_self_()->lane, src = lane ^ (unsigned)lane_mask;
  return sn_sim_shfl_(mask, v, src < (lane & ~(w - 1)) + w ? src : lane);
}
SN_SIM_INLINE void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
SN_SIM_INLINE void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
SN_SIM_INLINE void __trap() { sn_sim_api_->fail("__trap() called"); __builtin_unreachable(); }
#ifndef assert
#define assert(e) ((e) ? (void)0 : sn_sim_api_->fail("assertion failed: " #e))
#endif
extern "C" int printf(const char*, ...);
template <class T>
SN_SIM_INLINE T __ldg(const T* p) { return *p; }

// ---- atomics (relaxed, like CUDA's; blocks may run on several OS threads) ----
template <class T, class F>
SN_SIM_INLINE T sn_sim_atomic_update_(T* p, F f) {
  T old;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  for (;;) {
    T next = f(old);
    if (__atomic_compare_exchange(p, &old, &next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return old;
  }
}
#define SN_SIM_RMW(NAME, OP, T) \
  SN_SIM_INLINE T NAME(T* p, T v) { return __atomic_##OP(p, v, __ATOMIC_RELAXED); }
#define SN_SIM_RMW_INTS(NAME, OP) SN_SIM_RMW(NAME, OP, int) SN_SIM_RMW(NAME, OP, unsigned) \
  SN_SIM_RMW(NAME, OP, unsigned long long)
SN_SIM_RMW_INTS(atomicAdd, fetch_add) SN_SIM_RMW_INTS(atomicAnd, fetch_and) SN_SIM_RMW_INTS(atomicOr, fetch_or)
SN_SIM_RMW_INTS(atomicXor, fetch_xor) SN_SIM_RMW_INTS(atomicExch, exchange_n)
SN_SIM_RMW(atomicSub, fetch_sub, int) SN_SIM_RMW(atomicSub, fetch_sub, unsigned)
SN_SIM_INLINE float atomicAdd(float* p, float v) { return sn_sim_atomic_update_(p, [v](float o) { return o + v; }); }
SN_SIM_INLINE double atomicAdd(double* p, double v) {
  return sn_sim_atomic_update_(p, [v](double o) { return o + v; });
}
SN_SIM_INLINE float atomicExch(float* p, float v) {
  float old;
  __atomic_exchange(p, &v, &old, __ATOMIC_RELAXED);
  return old;
}
#define SN_SIM_MINMAX(T) \
  SN_SIM_INLINE T atomicMax(T* p, T v) { return sn_sim_atomic_update_(p, [v](T o) { return o < v ? v : o; }); } \
  SN_SIM_INLINE T atomicMin(T* p, T v) { return sn_sim_atomic_update_(p, [v](T o) { return v < o ? v : o; }); }
SN_SIM_MINMAX(int) SN_SIM_MINMAX(unsigned) SN_SIM_MINMAX(long long) SN_SIM_MINMAX(unsigned long long)
#define SN_SIM_CAS(T) \
  SN_SIM_INLINE T atomicCAS(T* p, T compare, T v) { \
    __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED); \
    return compare; \
  }
SN_SIM_CAS(int) SN_SIM_CAS(unsigned) SN_SIM_CAS(unsigned long long)

// ---- bits ----
SN_SIM_INLINE unsigned __float_as_uint(float x) { return __builtin_bit_cast(unsigned, x); }
SN_SIM_INLINE float __uint_as_float(unsigned x) { return __builtin_bit_cast(float, x); }
SN_SIM_INLINE int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
SN_SIM_INLINE float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
SN_SIM_INLINE long long __double_as_longlong(double x) { return __builtin_bit_cast(long long, x); }
SN_SIM_INLINE double __longlong_as_double(long long x) { return __builtin_bit_cast(double, x); }
SN_SIM_INLINE int __popc(unsigned x) { return __builtin_popcount(x); }
SN_SIM_INLINE int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
SN_SIM_INLINE int __ffs(int x) { return __builtin_ffs(x); }
SN_SIM_INLINE int __ffsll(long long x) { return __builtin_ffsll(x); }
SN_SIM_INLINE int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
SN_SIM_INLINE int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }

// ---- integer and float min/max/abs ----
#define SN_SIM_MINMAX2(A, B, R) \
  SN_SIM_INLINE R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; } \
  SN_SIM_INLINE R max(A a, B b) { return (R)a < (R)b ? (R)b : (R)a; }
SN_SIM_MINMAX2(int, int, int) SN_SIM_MINMAX2(unsigned, unsigned, unsigned) SN_SIM_MINMAX2(int, unsigned, unsigned)
SN_SIM_MINMAX2(unsigned, int, unsigned) SN_SIM_MINMAX2(long long, long long, long long)
SN_SIM_MINMAX2(unsigned long long, unsigned long long, unsigned long long)
SN_SIM_INLINE float min(float a, float b) { return __builtin_fminf(a, b); }
SN_SIM_INLINE float max(float a, float b) { return __builtin_fmaxf(a, b); }
SN_SIM_INLINE double min(double a, double b) { return __builtin_fmin(a, b); }
SN_SIM_INLINE double max(double a, double b) { return __builtin_fmax(a, b); }
SN_SIM_INLINE int abs(int x) { return x < 0 ? -x : x; }
SN_SIM_INLINE long long abs(long long x) { return x < 0 ? -x : x; }

// ---- math: NAMEf(float), NAME(double), and NAME(float) as CUDA's C++ overloads ----
#define SN_SIM_MATH1(F) \
  SN_SIM_INLINE float F##f(float x) { return __builtin_##F##f(x); } \
  SN_SIM_INLINE double F(double x) { return __builtin_##F(x); } \
  SN_SIM_INLINE float F(float x) { return __builtin_##F##f(x); }
#define SN_SIM_MATH2(F) \
  SN_SIM_INLINE float F##f(float x, float y) { return __builtin_##F##f(x, y); } \
  SN_SIM_INLINE double F(double x, double y) { return __builtin_##F(x, y); } \
  SN_SIM_INLINE float F(float x, float y) { return __builtin_##F##f(x, y); }
SN_SIM_MATH1(sqrt) SN_SIM_MATH1(fabs) SN_SIM_MATH1(floor) SN_SIM_MATH1(ceil) SN_SIM_MATH1(trunc) SN_SIM_MATH1(rint)
SN_SIM_MATH1(round) SN_SIM_MATH1(exp) SN_SIM_MATH1(exp2) SN_SIM_MATH1(expm1) SN_SIM_MATH1(log) SN_SIM_MATH1(log2)
SN_SIM_MATH1(log10) SN_SIM_MATH1(log1p) SN_SIM_MATH1(sin) SN_SIM_MATH1(cos) SN_SIM_MATH1(tan) SN_SIM_MATH1(tanh)
SN_SIM_MATH1(erf) SN_SIM_MATH1(erfc) SN_SIM_MATH1(asin) SN_SIM_MATH1(acos) SN_SIM_MATH1(atan)
SN_SIM_MATH2(pow) SN_SIM_MATH2(fmax) SN_SIM_MATH2(fmin) SN_SIM_MATH2(fmod) SN_SIM_MATH2(atan2)
SN_SIM_MATH2(copysign)
SN_SIM_INLINE float fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
SN_SIM_INLINE double fma(double a, double b, double c) { return __builtin_fma(a, b, c); }
SN_SIM_INLINE float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
SN_SIM_INLINE float rsqrtf(float x) { return 1.0f / __builtin_sqrtf(x); }
SN_SIM_INLINE double rsqrt(double x) { return 1.0 / __builtin_sqrt(x); }
SN_SIM_INLINE float rsqrt(float x) { return 1.0f / __builtin_sqrtf(x); }
SN_SIM_INLINE float __expf(float x) { return __builtin_expf(x); }
SN_SIM_INLINE float __logf(float x) { return __builtin_logf(x); }
SN_SIM_INLINE float __sinf(float x) { return __builtin_sinf(x); }
SN_SIM_INLINE float __cosf(float x) { return __builtin_cosf(x); }
SN_SIM_INLINE float __powf(float x, float y) { return __builtin_powf(x, y); }
SN_SIM_INLINE float __fdividef(float x, float y) { return x / y; }
SN_SIM_INLINE bool isnan(float x) { return __builtin_isnan(x); }
SN_SIM_INLINE bool isnan(double x) { return __builtin_isnan(x); }
SN_SIM_INLINE bool isinf(float x) { return __builtin_isinf(x); }
SN_SIM_INLINE bool isinf(double x) { return __builtin_isinf(x); }
SN_SIM_INLINE bool isfinite(float x) { return __builtin_isfinite(x); }
SN_SIM_INLINE bool isfinite(double x) { return __builtin_isfinite(x); }
// ---- end of the simulator prelude ----
)PRELUDE";

std::string build() {
  return fmt::format(
      "// ---- sinter CUDA simulator prelude: CUDA built-ins on the host (runtime/cuda_sim.h runs the kernels) ----\n"
      "#define SINTER_CUDA_SIM 1\n#define SN_SIM_ABI_VERSION {}\n#define SN_SIM_MAX_DYNAMIC_SHARED {}\n"
      "extern \"C\" {{\n{}\n}}\n{}",
      SN_SIM_ABI_VERSION, SN_SIM_MAX_DYNAMIC_SHARED, SN_SIM_STRINGIFY(SN_SIM_ABI_DECLS), kBody);
}

}  // namespace

std::string_view sim_prelude() {
  static const std::string text = build();
  return text;
}

}  // namespace sinter::codegen::cuda
