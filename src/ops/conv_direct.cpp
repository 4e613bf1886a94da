// Direct convolutions of few input channels (see conv_direct.h).
#include "ops/conv_direct.h"


#include "ops/vec_avx512.h"
#include "tensor/thread_pool.h"

namespace sinter::conv {
namespace {

using vec::avx512::first_lanes;

// Pixels [ow, ow + P) of output row (n, oh), output channels [o0, o0 + 16 * OC): one accumulator per pixel and
// 16 channels (independent chains); per tap and input channel OC weight loads and P broadcast input values,
// which are zero outside the image where Edge.
template <int P, int OC, bool Edge>
__attribute__((target("avx512f"))) void few_block(const float* x, const int64_t* xs, const float* wt,
                                                  const float* bias, float* y, const Geo& g, int64_t n, int64_t oh,
                                                  int64_t ow, int64_t o0) {
  // The geometry in locals and each tap's pixels addressed from one pointer (as in conv_depthwise.cpp): read
  // through g on every tap, the index arithmetic outweighed the FMAs.
  const int64_t C = g.C, O = g.O, W = g.W, kw = g.kw, sw = g.sw, step = sw * xs[3];
  float* yr = y + ((n * g.OH + oh) * g.OW + ow) * O + o0;
  __mmask16 m[OC];
  __m512 acc[P][OC];
#pragma GCC unroll 4
  for (int j = 0; j < OC; ++j) {
    m[j] = first_lanes(O - o0 - 16 * j);
    const __m512 b = bias ? _mm512_maskz_loadu_ps(m[j], bias + o0 + 16 * j) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) acc[p][j] = b;
  }
  for (int64_t ki = 0; ki < g.kh; ++ki) {
    const int64_t ih = oh * g.sh - g.ph + ki * g.dh;
    if (ih < 0 || ih >= g.H) continue;
    const float* xrow = x + n * xs[0] + ih * xs[2];
    for (int64_t kj = 0; kj < kw; ++kj) {
      const int64_t iw0 = ow * sw - g.pw + kj * g.dw;  // pixel 0's input column
      const float* wr = wt + (ki * kw + kj) * C * O + o0;
      for (int64_t c = 0; c < C; ++c, wr += O) {
        const int64_t at = c * xs[1] + iw0 * xs[3];  // an index, not a pointer: it may lie before the row
        __m512 w[OC];
#pragma GCC unroll 4
        for (int j = 0; j < OC; ++j) w[j] = _mm512_maskz_loadu_ps(m[j], wr + 16 * j);
#pragma GCC unroll 8
        for (int p = 0; p < P; ++p) {
          __m512 v;
          if constexpr (Edge) {
            const int64_t iw = iw0 + p * sw;
            v = _mm512_set1_ps(iw >= 0 && iw < W ? xrow[at + p * step] : 0.0f);
          } else {
            v = _mm512_set1_ps(xrow[at + p * step]);
          }
#pragma GCC unroll 4
          for (int j = 0; j < OC; ++j) acc[p][j] = _mm512_fmadd_ps(w[j], v, acc[p][j]);
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
    for (int j = 0; j < OC; ++j) _mm512_mask_storeu_ps(yr + p * g.O + 16 * j, m[j], acc[p][j]);
}

// Pixels [ow, ow + P): all output channels, up to 32 at a time; the unchecked form where every tap lies inside
// the image (columns [lo, hi)).
template <int P>
__attribute__((target("avx512f"))) void few_span(const float* x, const int64_t* xs, const float* wt,
                                                 const float* bias, float* y, const Geo& g, int64_t n, int64_t oh,
                                                 int64_t ow, int64_t lo, int64_t hi) {
  const bool inside = ow >= lo && ow + P <= hi;
  for (int64_t o0 = 0; o0 < g.O; o0 += 32) {
    if (g.O - o0 > 16) {
      if (inside) few_block<P, 2, false>(x, xs, wt, bias, y, g, n, oh, ow, o0);
      else few_block<P, 2, true>(x, xs, wt, bias, y, g, n, oh, ow, o0);
    } else {
      if (inside) few_block<P, 1, false>(x, xs, wt, bias, y, g, n, oh, ow, o0);
      else few_block<P, 1, true>(x, xs, wt, bias, y, g, n, oh, ow, o0);
    }
  }
}

void few_row(const float* x, const int64_t* xs, const float* wt, const float* bias, float* y, const Geo& g,
             int64_t t) {
  const int64_t n = t / g.OH, oh = t % g.OH;
  int64_t lo, hi;
  interior_columns(g, lo, hi);
  for_each_column_block(g.OW, [&](auto block, int64_t ow) {
    few_span<decltype(block)::value>(x, xs, wt, bias, y, g, n, oh, ow, lo, hi);
  });
}

}  // namespace

bool few_channels_available() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

bool conv_few_channels(const float* x, const int64_t* xs, const float* wt, const float* bias, float* y, const Geo& g,
                       blas::TileFn tile_done, void* ctx) {
  if (!few_channels_available() || g.G != 1 || g.C > kFewChannels) return false;
  parallel_for(0, g.N * g.OH, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      few_row(x, xs, wt, bias, y, g, t);
      if (tile_done) tile_done(ctx, t * g.OW, (t + 1) * g.OW, 0, g.O);
    }
  });
  return true;
}

}  // namespace sinter::conv
