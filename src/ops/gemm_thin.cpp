// Thin float32 products (see gemm_thin.h).
#include "ops/gemm_thin.h"

#include <algorithm>
#include <utility>

#include "ops/vec_avx512.h"
#include "tensor/thread_pool.h"

namespace sinter::blas {
namespace {

struct Thin {
  int64_t n, k;
  float alpha;
  const float* a;
  int64_t lda;
  const float* w;
  int64_t ldw;
  float beta;
  float* c;
  int64_t ldc;
};

// The output from its accumulator: the 16 lanes summed, scaled, plus beta * the old value.
SINTER_AVX512_INLINE float finish(const Thin& t, __m512 acc, const float* out) {
  const float v = t.alpha * _mm512_reduce_add_ps(acc);
  return t.beta == 0.0f ? v : v + t.beta * *out;
}

// Outputs [j0, j1) of M rows: J rows of the weight at a time, M x J accumulators of 16 lanes, K in steps of 16
// (the last one masked).
template <int M, int J>
__attribute__((target("avx512f"))) void thin_block(const Thin& t, int64_t j) {
  __m512 acc[M][J];
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
    for (int q = 0; q < J; ++q) acc[i][q] = _mm512_setzero_ps();
  for (int64_t p = 0; p < t.k; p += 16) {
    const __mmask16 m = vec::avx512::first_lanes(t.k - p);
    __m512 av[M];
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) av[i] = _mm512_maskz_loadu_ps(m, t.a + i * t.lda + p);
#pragma GCC unroll 4
    for (int q = 0; q < J; ++q) {
      const __m512 wv = _mm512_maskz_loadu_ps(m, t.w + (j + q) * t.ldw + p);
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) acc[i][q] = _mm512_fmadd_ps(av[i], wv, acc[i][q]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
    for (int q = 0; q < J; ++q) {
      float* out = t.c + i * t.ldc + j + q;
      *out = finish(t, acc[i][q], out);
    }
}

// Blocks of J weight rows: 4 for up to 4 rows of A, 2 beyond (M x J accumulators stay within 16 registers).
template <int M>
void thin_range(const Thin& t, int64_t j0, int64_t j1) {
  constexpr int J = M <= 4 ? 4 : 2;
  int64_t j = j0;
  for (; j + J <= j1; j += J) thin_block<M, J>(t, j);
  for (; j < j1; ++j) thin_block<M, 1>(t, j);
}

template <int... Ms>
void thin_rows(int64_t m, const Thin& t, int64_t j0, int64_t j1, std::integer_sequence<int, Ms...>) {
  ((m == Ms + 1 ? thin_range<Ms + 1>(t, j0, j1) : void()), ...);
}

bool avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

}  // namespace

bool thin_suits(int64_t m, int64_t k, int64_t a_cs, int64_t b_rs) {
  return avx512() && m >= 1 && m <= kThinRows && (a_cs == 1 || k == 1) && (b_rs == 1 || k == 1);
}

bool gemm_thin(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* w, int64_t ldw,
               float beta, float* c, int64_t ldc) {
  if (!avx512() || m < 1 || m > kThinRows || n <= 0 || k <= 0) return false;
  const Thin t{n, k, alpha, a, lda, w, ldw, beta, c, ldc};
  // Tasks of at least about 64 KB of the weight, in whole blocks of 4 of its rows.
  const int64_t rows = std::max<int64_t>(4, (16384 / std::max<int64_t>(k, 1) + 3) / 4 * 4);
  parallel_for(0, (n + rows - 1) / rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t j0 = task * rows, j1 = std::min(n, j0 + rows);
      thin_rows(m, t, j0, j1, std::make_integer_sequence<int, kThinRows>{});
    }
  });
  return true;
}

}  // namespace sinter::blas
