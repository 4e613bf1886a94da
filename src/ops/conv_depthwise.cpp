// Depthwise convolutions on the CPU (see conv_depthwise.h).
#include "ops/conv_depthwise.h"


#include <algorithm>
#include <cmath>
#include <type_traits>

#include "ops/vec_avx512.h"
#include "tensor/thread_pool.h"

namespace sinter::conv {
namespace {

// One input channel per group: direct loops, one output plane per task (vectorised along a row for stride 1).
// Planes [t0, t1) of the N * O; always inlined, so each vector clone below gets its own vectorised copy.
template <class T>
[[gnu::always_inline]] inline void depthwise_nchw_planes(const T* x, const T* w, const T* bias, T* y, const Geo& g,
                                                         int64_t t0, int64_t t1) {
  const int64_t P = g.OH * g.OW;
  for (int64_t t = t0; t < t1; ++t) {
    int64_t n = t / g.O, o = t % g.O;
    const T* plane = x + (n * g.C + o / g.Og) * g.H * g.W;
    const T* wo = w + o * g.kh * g.kw;
    T* yp = y + t * P;
    std::fill(yp, yp + P, bias ? bias[o] : T(0));
    for (int64_t kj = 0; kj < g.kw; ++kj) {
      int64_t off = kj * g.dw - g.pw, lo, hi;
      valid_range(off, g.sw, g.W, g.OW, lo, hi);
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        T* yr = yp + oh * g.OW;
        for (int64_t ki = 0; ki < g.kh; ++ki) {
          int64_t ih = oh * g.sh - g.ph + ki * g.dh;
          if (ih < 0 || ih >= g.H) continue;
          const T* row = plane + ih * g.W;
          T wv = wo[ki * g.kw + kj];
          if (g.sw == 1) {
            for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * row[ow + off];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * row[ow * g.sw + off];
          }
        }
      }
    }
  }
}

// float32 compiled for AVX-512, AVX2 and the baseline; the loader picks the CPU's.
__attribute__((target_clones("avx512f", "avx2", "default"))) void depthwise_nchw_f32(
    const float* x, const float* w, const float* bias, float* y, const Geo& g, int64_t t0, int64_t t1) {
  depthwise_nchw_planes(x, w, bias, y, g, t0, t1);
}

// float32 depthwise on channels-last data with the CPU's vector units (the library is built for baseline x86-64,
// whose 4-wide SSE the generic loop gets). FMA rounds each tap once (the generic loop twice).
using vec::avx512::first_lanes;

// AVX-512, one output row of one image. Its interior columns (every tap inside the image) go in blocks of up to
// 8 pixels: each 16 channels of a block accumulate in one register per pixel (independent chains, so the FMA
// latency overlaps, and one weight load serves the block). The few columns at the row's ends, whose taps run
// off the image, go a pixel at a time over the taps that lie inside, 64 channels at once.

// Pixels [ow, ow + P) of row (n, oh), all of whose taps lie inside the image.
template <int P>
__attribute__((target("avx512f"))) void depthwise_block_avx512(const float* x, const float* wt, const float* bias,
                                                                float* y, const Geo& g, int64_t n, int64_t oh,
                                                                int64_t ow) {
  // The geometry in locals, and each tap's pixels addressed from one pointer: left to g's fields, the compiler
  // reloaded them and recomputed every pixel's column per tap, and the integer work outweighed the FMAs.
  const int64_t C = g.C, kw = g.kw, step = g.sw * C, col0 = ow * g.sw - g.pw;
  float* yr = y + ((n * g.OH + oh) * g.OW + ow) * C;
  for (int64_t c0 = 0; c0 < C; c0 += 16) {
    const __mmask16 m = first_lanes(C - c0);
    const __m512 b = bias ? _mm512_maskz_loadu_ps(m, bias + c0) : _mm512_setzero_ps();
    __m512 acc[P];
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) acc[p] = b;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      const int64_t ih = oh * g.sh - g.ph + ki * g.dh;
      if (ih < 0 || ih >= g.H) continue;
      const float* xr = x + ((n * g.H + ih) * g.W + col0) * C + c0;
      const float* wr = wt + ki * kw * C + c0;
      for (int64_t kj = 0; kj < kw; ++kj) {
        const __m512 w = _mm512_maskz_loadu_ps(m, wr + kj * C);
        const float* xp = xr + kj * g.dw * C;
#pragma GCC unroll 8
        for (int p = 0; p < P; ++p) acc[p] = _mm512_fmadd_ps(w, _mm512_maskz_loadu_ps(m, xp + p * step), acc[p]);
      }
    }
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) _mm512_mask_storeu_ps(yr + p * C + c0, m, acc[p]);
  }
}

// Pixel ow of row (n, oh), over the taps inside the image; four registers of 16 channels accumulate at once.
__attribute__((target("avx512f"))) void depthwise_pixel_avx512(const float* x, const float* wt, const float* bias,
                                                                float* y, const Geo& g, int64_t n, int64_t oh,
                                                                int64_t ow) {
  const int64_t C = g.C, col = ow * g.sw - g.pw;
  int64_t kj_lo = 0, kj_hi = g.kw;
  while (kj_lo < kj_hi && col + kj_lo * g.dw < 0) ++kj_lo;
  while (kj_hi > kj_lo && col + (kj_hi - 1) * g.dw >= g.W) --kj_hi;
  float* yp = y + ((n * g.OH + oh) * g.OW + ow) * C;
  for (int64_t c0 = 0; c0 < C; c0 += 64) {
    __mmask16 m[4];
    __m512 acc[4];
    for (int q = 0; q < 4; ++q) {
      m[q] = c0 + 16 * q < C ? first_lanes(C - c0 - 16 * q) : __mmask16(0);
      acc[q] = bias ? _mm512_maskz_loadu_ps(m[q], bias + c0 + 16 * q) : _mm512_setzero_ps();
    }
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      const int64_t ih = oh * g.sh - g.ph + ki * g.dh;
      if (ih < 0 || ih >= g.H) continue;
      const float* xr = x + ((n * g.H + ih) * g.W + col) * C + c0;
      const float* wr = wt + ki * g.kw * C + c0;
      for (int64_t kj = kj_lo; kj < kj_hi; ++kj)
        for (int q = 0; q < 4; ++q)  // masked-off lanes never touch memory, so no load runs past the row's end
          acc[q] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m[q], wr + kj * C + 16 * q),
                                   _mm512_maskz_loadu_ps(m[q], xr + kj * g.dw * C + 16 * q), acc[q]);
    }
    for (int q = 0; q < 4; ++q) _mm512_mask_storeu_ps(yp + c0 + 16 * q, m[q], acc[q]);
  }
}

void depthwise_row_avx512(const float* x, const float* wt, const float* bias, float* y, const Geo& g, int64_t t) {
  const int64_t n = t / g.OH, oh = t % g.OH;
  int64_t lo, hi;
  interior_columns(g, lo, hi);
  for (int64_t ow = 0; ow < lo; ++ow) depthwise_pixel_avx512(x, wt, bias, y, g, n, oh, ow);
  for_each_column_block(hi - lo, [&](auto block, int64_t i) {
    depthwise_block_avx512<decltype(block)::value>(x, wt, bias, y, g, n, oh, lo + i);
  });
  for (int64_t ow = hi; ow < g.OW; ++ow) depthwise_pixel_avx512(x, wt, bias, y, g, n, oh, ow);
}

// AVX2 + FMA, one output row, a pixel at a time, 8 channels per register.
__attribute__((target("avx2,fma"))) void depthwise_row_avx2(const float* x, const float* wt, const float* bias,
                                                             float* y, const Geo& g, int64_t t) {
  const int64_t full = g.C / 8 * 8;
  const int64_t n = t / g.OH, oh = t % g.OH;
  for (int64_t ow = 0; ow < g.OW; ++ow) {
    float* yr = y + (t * g.OW + ow) * g.C;
    for (int64_t c0 = 0; c0 < g.C; c0 += 8) {
      const bool tail = c0 >= full;
      float acc_tail[8] = {};
      __m256 acc = _mm256_setzero_ps();
      if (bias && !tail) acc = _mm256_loadu_ps(bias + c0);
      for (int64_t c = c0; tail && c < g.C; ++c) acc_tail[c - c0] = bias ? bias[c] : 0.0f;
      for (int64_t ki = 0; ki < g.kh; ++ki) {
        const int64_t ih = oh * g.sh - g.ph + ki * g.dh;
        if (ih < 0 || ih >= g.H) continue;
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          const int64_t iw = ow * g.sw - g.pw + kj * g.dw;
          if (iw < 0 || iw >= g.W) continue;
          const float* xr = x + ((n * g.H + ih) * g.W + iw) * g.C + c0;
          const float* wr = wt + (ki * g.kw + kj) * g.C + c0;
          if (!tail)
            acc = _mm256_fmadd_ps(_mm256_loadu_ps(wr), _mm256_loadu_ps(xr), acc);
          else
            for (int64_t c = 0; c0 + c < g.C; ++c) acc_tail[c] = std::fma(wr[c], xr[c], acc_tail[c]);
        }
      }
      if (!tail)
        _mm256_storeu_ps(yr + c0, acc);
      else
        for (int64_t c = 0; c0 + c < g.C; ++c) yr[c0 + c] = acc_tail[c];
    }
  }
}

}  // namespace

// Depthwise on channels-last data (one output channel per input channel); wt is [kh, kw, C]. Vectorised over
// C.
template <class T>
void depthwise_nhwc(const T* x, const T* wt, const T* bias, T* y, const Geo& g) {
  parallel_for(0, g.N * g.OH, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t n = t / g.OH, oh = t % g.OH;
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        T* yr = y + (t * g.OW + ow) * g.C;
        for (int64_t c = 0; c < g.C; ++c) yr[c] = bias ? bias[c] : T(0);
        for (int64_t ki = 0; ki < g.kh; ++ki) {
          int64_t ih = oh * g.sh - g.ph + ki * g.dh;
          if (ih < 0 || ih >= g.H) continue;
          for (int64_t kj = 0; kj < g.kw; ++kj) {
            int64_t iw = ow * g.sw - g.pw + kj * g.dw;
            if (iw < 0 || iw >= g.W) continue;
            const T* xr = x + ((n * g.H + ih) * g.W + iw) * g.C;
            const T* wr = wt + (ki * g.kw + kj) * g.C;
            for (int64_t c = 0; c < g.C; ++c) yr[c] += wr[c] * xr[c];
          }
        }
      }
    }
  });
}

template <class T>
void depthwise_nchw(const T* x, const T* w, const T* bias, T* y, const Geo& g) {
  int64_t P = g.OH * g.OW;
  parallel_for(0, g.N * g.O, std::max<int64_t>(1, 4096 / std::max<int64_t>(P, 1)), [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>)
      depthwise_nchw_f32(x, w, bias, y, g, begin, end);
    else
      depthwise_nchw_planes(x, w, bias, y, g, begin, end);
  });
}
template void depthwise_nchw<float>(const float*, const float*, const float*, float*, const Geo&);
template void depthwise_nchw<double>(const double*, const double*, const double*, double*, const Geo&);

template void depthwise_nhwc<float>(const float*, const float*, const float*, float*, const Geo&);
template void depthwise_nhwc<double>(const double*, const double*, const double*, double*, const Geo&);

bool depthwise_nhwc_simd(const float* x, const float* wt, const float* bias, float* y, const Geo& g,
                         blas::TileFn tile_done, void* ctx) {
  static const int level = __builtin_cpu_supports("avx512f")                                   ? 2
                           : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1
                                                                                              : 0;
  if (level == 0) return false;
  parallel_for(0, g.N * g.OH, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      if (level == 2)
        depthwise_row_avx512(x, wt, bias, y, g, t);
      else
        depthwise_row_avx2(x, wt, bias, y, g, t);
      if (tile_done) tile_done(ctx, t * g.OW, (t + 1) * g.OW, 0, g.C);
    }
  });
  return true;
}

}  // namespace sinter::conv
