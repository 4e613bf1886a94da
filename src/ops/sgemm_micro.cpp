// The micro-kernels of sinter's float32 GEMM (sgemm_micro.h says what they compute).
#include "ops/sgemm_micro.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SINTER_SGEMM_X86 1
#endif

namespace sinter::blas {
namespace {

#ifdef SINTER_SGEMM_X86
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
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_setzero_ps();
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
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      float* q = c + i * ldc + 16 * j;
      _mm512_storeu_ps(q, accumulate ? _mm512_add_ps(_mm512_loadu_ps(q), acc[i][j]) : acc[i][j]);
    }
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
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    out.push_back({6, 16, "6x16", micro_avx2<6, 2, false, false>, micro_avx2<6, 2, false, true>});
    out.push_back({6, 16, "6x16+pf", micro_avx2<6, 2, true, false>});
  }
#endif
  return out;
}

}  // namespace

const std::vector<Micro>& micros() {
  static const std::vector<Micro> m = list_micros();  // a property of the CPU, fixed for the process
  return m;
}

const Micro& micro() {
  static const Micro none;
  return micros().empty() ? none : micros()[0];
}

}  // namespace sinter::blas
