// The micro-kernels of sinter's float32 GEMM (sgemm_micro.h says what they compute).
#include "ops/sgemm_micro.h"

#include "ops/loops.h"
#include "ops/vec_avx512.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SINTER_SGEMM_X86 1
#endif

namespace sinter::blas {
namespace {

#ifdef SINTER_SGEMM_X86
// The AVX-512 micro-kernels' accumulators: zeroed, and added into (or stored as) C at the end.
template <int MR, int NV>
__attribute__((target("avx512f"), always_inline)) inline void zero_tile(__m512 (&acc)[MR][NV]) {
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_setzero_ps();
}
template <int MR, int NV>
__attribute__((target("avx512f"), always_inline)) inline void store_tile(const __m512 (&acc)[MR][NV], float* c,
                                                                          int64_t ldc, bool accumulate) {
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      float* q = c + i * ldc + 16 * j;
      _mm512_storeu_ps(q, accumulate ? _mm512_add_ps(_mm512_loadu_ps(q), acc[i][j]) : acc[i][j]);
    }
}

// PF: touch C's lines first, so that the stores at the end do not wait for them. STRIDED: the direct form.
template <int MR, int NV, bool PF, bool STRIDED>
__attribute__((target("avx512f"))) void micro_avx512(int64_t kc, const float* __restrict a, int64_t a_rs,
                                                     int64_t a_ps, const float* __restrict b, int64_t b_ps,
                                                     float* __restrict c, int64_t ldc, bool accumulate) {
  const int64_t ars = STRIDED ? a_rs : 1, aps = STRIDED ? a_ps : MR, bps = STRIDED ? b_ps : 16 * NV;
  if constexpr (PF)
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NV; ++j) _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 16 * j), _MM_HINT_T0);
  __m512 acc[MR][NV];
  zero_tile<MR, NV>(acc);
  for (int64_t p = 0; p < kc; ++p) {
    __m512 bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) bv[j] = STRIDED ? _mm512_loadu_ps(b + 16 * j) : _mm512_load_ps(b + 16 * j);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      __m512 ai = _mm512_set1_ps(a[i * ars]);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_fmadd_ps(ai, bv[j], acc[i][j]);
    }
    a += aps;
    b += bps;
  }
  store_tile<MR, NV>(acc, c, ldc, accumulate);
}

template <int MR, int NV, bool PF, bool STRIDED>
__attribute__((target("avx2,fma"))) void micro_avx2(int64_t kc, const float* __restrict a, int64_t a_rs,
                                                    int64_t a_ps, const float* __restrict b, int64_t b_ps,
                                                    float* __restrict c, int64_t ldc, bool accumulate) {
  const int64_t ars = STRIDED ? a_rs : 1, aps = STRIDED ? a_ps : MR, bps = STRIDED ? b_ps : 8 * NV;
  if constexpr (PF)
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NV; ++j) _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 8 * j), _MM_HINT_T0);
  __m256 acc[MR][NV];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[i][j] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    __m256 bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) bv[j] = STRIDED ? _mm256_loadu_ps(b + 8 * j) : _mm256_load_ps(b + 8 * j);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      __m256 ai = _mm256_broadcast_ss(a + i * ars);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm256_fmadd_ps(ai, bv[j], acc[i][j]);
    }
    a += aps;
    b += bps;
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      float* q = c + i * ldc + 8 * j;
      _mm256_storeu_ps(q, accumulate ? _mm256_add_ps(_mm256_loadu_ps(q), acc[i][j]) : acc[i][j]);
    }
}

// bfloat16 products (AVX512-BF16): each 32-bit word of a and b holds the k steps 2q and 2q + 1 of one row of A or
// one column of B; one dot-product instruction multiplies both pairs and adds them into a float32 lane. B is
// always packed; STRIDED reads A's word (i, q) at a[i * a_rs + q * a_ps] (a bfloat16 copy of a row-major A).
template <int MR, int NV, bool STRIDED>
__attribute__((target("avx512f,avx512bf16"))) void micro_bf16(int64_t kc, const float* __restrict a, int64_t a_rs,
                                                              int64_t a_ps, const float* __restrict b, int64_t,
                                                              float* __restrict c, int64_t ldc, bool accumulate) {
  const int64_t ars = STRIDED ? a_rs : 1, aps = STRIDED ? a_ps : MR;
  __m512 acc[MR][NV];
  zero_tile<MR, NV>(acc);
  for (int64_t q = 0; q < kc; q += 2) {
    __m512bh bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) bv[j] = (__m512bh)_mm512_load_ps(b + 16 * j);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      __m512bh ai = (__m512bh)_mm512_set1_ps(a[i * ars]);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], ai, bv[j]);
    }
    a += aps;
    b += 16 * NV;
  }
  store_tile<MR, NV>(acc, c, ldc, accumulate);
}

__attribute__((target("avx512f"))) void row_avx512(const float* src, int64_t n, uint16_t* dst) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j),
                        _mm512_cvtepi32_epi16(vec::avx512::bf16_bits(_mm512_loadu_ps(src + j))));
  for (; j < n; ++j) dst[j] = loops::f32_to_bf16(src[j]);
}

__attribute__((target("avx512f"))) void pairs_avx512(const float* src, int64_t kc, int64_t w, float* dst) {
  uint32_t* out = reinterpret_cast<uint32_t*>(dst);
  for (int64_t q = 0; q < kc; q += 2) {
    const float* r0 = src + q * w;
    const float* r1 = q + 1 < kc ? r0 + w : nullptr;
    int64_t j = 0;
    for (; j + 16 <= w; j += 16) {
      __m512i lo = vec::avx512::bf16_bits(_mm512_loadu_ps(r0 + j));
      __m512i hi = r1 ? _mm512_slli_epi32(vec::avx512::bf16_bits(_mm512_loadu_ps(r1 + j)), 16) : _mm512_setzero_si512();
      _mm512_storeu_si512(out + (q / 2) * w + j, _mm512_or_si512(lo, hi));
    }
    for (; j < w; ++j) out[(q / 2) * w + j] = bf16_pair(r0[j], r1 ? r1[j] : 0.0f);
  }
}
#endif

// The micro-kernels this CPU can run, in order of preference (measured on the 16-core Xeon host with
// bench/sgemm_probe.cpp --sweep: 8x48 led on most transformer shapes, 6x64 on products 64 columns wide).
std::vector<Micro> list_micros() {
  std::vector<Micro> out;
#ifdef SINTER_SGEMM_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    out.push_back({8, 48, "8x48", micro_avx512<8, 3, false, false>, micro_avx512<8, 3, false, true>});
    out.push_back({6, 64, "6x64", micro_avx512<6, 4, false, false>, micro_avx512<6, 4, false, true>});
    out.push_back({6, 64, "6x64+pf", micro_avx512<6, 4, true, false>});
    out.push_back({14, 32, "14x32", micro_avx512<14, 2, false, false>, micro_avx512<14, 2, false, true>});
    out.push_back({14, 32, "14x32+pf", micro_avx512<14, 2, true, false>});
    // One register wide: for products of at most 16 columns (a pointwise conv into 16 channels), which the
    // others pad to 32 or 48 and finish through their edge path; on the dev VM's EPYC a 6272x16x16 product took
    // 0.036 ms against 14x32's 0.053, but a 6272x72x16 one 0.160 against 8x48's 0.127.
    out.push_back({28, 16, "28x16", micro_avx512<28, 1, false, false>, micro_avx512<28, 1, false, true>, 16});
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    out.push_back({6, 16, "6x16", micro_avx2<6, 2, false, false>, micro_avx2<6, 2, false, true>});
    out.push_back({6, 16, "6x16+pf", micro_avx2<6, 2, true, false>});
  }
#endif
  return out;
}

std::vector<Micro> list_micros_bf16() {
  std::vector<Micro> out;
#ifdef SINTER_SGEMM_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16")) {
    out.push_back({8, 48, "bf16 8x48", micro_bf16<8, 3, false>, micro_bf16<8, 3, true>});
    out.push_back({6, 64, "bf16 6x64", micro_bf16<6, 4, false>, micro_bf16<6, 4, true>});
    out.push_back({14, 32, "bf16 14x32", micro_bf16<14, 2, false>, micro_bf16<14, 2, true>});
  }
#endif
  return out;
}

}  // namespace

uint32_t bf16_pair(float lo, float hi) {
  return loops::f32_to_bf16(lo) | static_cast<uint32_t>(loops::f32_to_bf16(hi)) << 16;
}

void to_bf16_pairs(const float* src, int64_t kc, int64_t w, float* dst) {
#ifdef SINTER_SGEMM_X86
  if (__builtin_cpu_supports("avx512f")) return pairs_avx512(src, kc, w, dst);
#endif
  uint32_t* out = reinterpret_cast<uint32_t*>(dst);
  for (int64_t q = 0; q < kc; q += 2)
    for (int64_t j = 0; j < w; ++j)
      out[(q / 2) * w + j] = bf16_pair(src[q * w + j], q + 1 < kc ? src[(q + 1) * w + j] : 0.0f);
}

void to_bf16_row(const float* src, int64_t n, uint16_t* dst) {
#ifdef SINTER_SGEMM_X86
  if (__builtin_cpu_supports("avx512f")) return row_avx512(src, n, dst);
#endif
  for (int64_t j = 0; j < n; ++j) dst[j] = loops::f32_to_bf16(src[j]);
}

const std::vector<Micro>& micros_bf16() {
  static const std::vector<Micro> m = list_micros_bf16();  // a property of the CPU, fixed for the process
  return m;
}

const std::vector<Micro>& micros() {
  static const std::vector<Micro> m = list_micros();  // a property of the CPU, fixed for the process
  return m;
}

const Micro& micro() {
  static const Micro none;
  return micros().empty() ? none : micros()[0];
}

}  // namespace sinter::blas
