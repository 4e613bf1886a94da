// Convolution kernels. Work is cut into tasks of (image, group, block of output rows) over the pool; each
// task builds its own column buffer (about 1 MB, so it stays in cache while the single-threaded GEMM reads
// it) and writes a disjoint part of the output. Contiguous inputs use an NCHW im2col ([C*kh*kw, pixels],
// weight on the left), channels-last ones an NHWC im2col ([pixels, kh*kw*C], weight on the right) so that
// output rows are contiguous channel vectors. Stride-1 convs (vertically) copy only the width taps, kw-fold
// instead of kh*kw-fold, and run one GEMM per height tap, accumulating into the output. Computation is in
// float (float32/16/bf16) or double, rounded once into the output.
#include "ops/conv_kernels.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "ops/blas.h"
#include "ops/conv_depthwise.h"
#include "ops/conv_direct.h"
#include "ops/sgemm.h"
#include "ops/linalg_util.h"

namespace sinter {
namespace {

using conv::Geo;
using conv::geometry;
using conv::valid_range;
using conv::depthwise_nchw;
using conv::depthwise_nhwc;
using conv::depthwise_nhwc_simd;

// Output rows per task. `row_elems` is the buffer a task needs per output row and `halo_elems` its fixed part;
// the buffer stays within about 1 MB (so it is still in cache when the single-threaded GEMM reads it). Among
// those sizes, the one whose busiest thread does the fewest rows: tasks go out in rounds of `threads`, so
// 56 rows of 8 images on 16 threads are better cut 14 + 14 + 14 + 14 (2 rounds of 14) than into 7 blocks of 9
// (4 rounds of 9). Each task also costs about one row of overhead (GEMM setup, the halo it copies).
int64_t rows_per_block(const Geo& g, int64_t row_elems, int64_t halo_elems, int64_t outer) {
  int64_t OH = std::max<int64_t>(g.OH, 1), threads = get_num_threads();
  int64_t budget = std::max<int64_t>(1 << 18, row_elems + halo_elems);
  int64_t max_rows = std::clamp<int64_t>((budget - halo_elems) / std::max<int64_t>(row_elems, 1), 1, OH);
  int64_t best = 1, best_cost = INT64_MAX;
  for (int64_t r = 1; r <= max_rows; ++r) {
    int64_t blocks = ceil_div(OH, r);
    int64_t cost = ceil_div(outer * blocks, threads) * (r + 1);
    if (cost <= best_cost) best = r, best_cost = cost;
  }
  return best;
}

// How a conv's tasks are cut and which im2col they build. Stride-1 convs take the width-only im2col (copying
// rows + halo input rows per task) unless the blocks come out no taller than the vertical dilation: then the
// halo, (kh - 1) * dh rows, costs more than the kh-fold copy of the full im2col.
struct RowPlan {
  int64_t rows = 1, buffer = 0;  // output rows per task; column buffer elements per task
  int64_t halo = 0;              // extra input rows of the width-only im2col
  bool by_taps = false;          // width-only im2col and one GEMM per height tap
};

RowPlan plan_rows(const Geo& g) {
  RowPlan r;
  int64_t K = g.Cg * g.kh * g.kw, Kw = g.Cg * g.kw;
  if (g.pointwise) {
    r.rows = rows_per_block(g, 0, 0, g.N * g.G);
    return r;
  }
  if (g.sh == 1) {
    r.halo = (g.kh - 1) * g.dh;
    r.rows = rows_per_block(g, Kw * g.OW, r.halo * Kw * g.OW, g.N * g.G);
    r.by_taps = g.kh == 1 || r.rows > g.dh;
  }
  if (!r.by_taps) {
    r.halo = 0;
    r.rows = rows_per_block(g, K * g.OW, 0, g.N * g.G);
  }
  r.buffer = (r.rows + r.halo) * (r.by_taps ? Kw : K) * g.OW;
  return r;
}

// col[(c, ki, kj), pixel] for output rows [oh0, oh1) of one image's group (x points at its first channel).
template <class T>
void im2col_nchw(const T* x, T* col, const Geo& g, int64_t oh0, int64_t oh1) {
  int64_t pb = (oh1 - oh0) * g.OW;
  for (int64_t c = 0; c < g.Cg; ++c)
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        T* dst = col + ((c * g.kh + ki) * g.kw + kj) * pb;
        const T* plane = x + c * g.H * g.W;
        int64_t off = kj * g.dw - g.pw, lo, hi;
        valid_range(off, g.sw, g.W, g.OW, lo, hi);
        for (int64_t oh = oh0; oh < oh1; ++oh, dst += g.OW) {
          int64_t ih = oh * g.sh - g.ph + ki * g.dh;
          if (ih < 0 || ih >= g.H) {
            std::fill(dst, dst + g.OW, T(0));
            continue;
          }
          const T* row = plane + ih * g.W;
          std::fill(dst, dst + lo, T(0));
          if (g.sw == 1) {
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = row[ow + off];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = row[ow * g.sw + off];
          }
          std::fill(dst + hi, dst + g.OW, T(0));
        }
      }
}

// xw[(c, kj), r, ow] = x[c, oh0 - ph + r, ow * sw - pw + kj * dw] for the `R` input rows that output rows
// [oh0, oh1) of a stride-1 conv read (zeros outside the image): the NCHW im2col of the width taps only. For
// height tap ki, the columns (r = oh - oh0 + ki * dh) of each (c, kj) row form the GEMM operand directly.
template <class T>
void width_im2col_nchw(const T* x, T* xw, const Geo& g, int64_t oh0, int64_t R) {
  for (int64_t c = 0; c < g.Cg; ++c)
    for (int64_t kj = 0; kj < g.kw; ++kj) {
      T* dst = xw + (c * g.kw + kj) * R * g.OW;
      const T* plane = x + c * g.H * g.W;
      int64_t off = kj * g.dw - g.pw, lo, hi;
      valid_range(off, g.sw, g.W, g.OW, lo, hi);
      for (int64_t r = 0; r < R; ++r, dst += g.OW) {
        int64_t ih = oh0 - g.ph + r;
        if (ih < 0 || ih >= g.H) {
          std::fill(dst, dst + g.OW, T(0));
          continue;
        }
        const T* row = plane + ih * g.W;
        std::fill(dst, dst + lo, T(0));
        if (g.sw == 1) {
          std::copy(row + lo + off, row + hi + off, dst + lo);
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = row[ow * g.sw + off];
        }
        std::fill(dst + hi, dst + g.OW, T(0));
      }
    }
}

// w is [O, Cg, kh, kw]; wk the same weight as [G, kh, Og, Cg, kw] (for the per-height-tap GEMMs of stride-1
// convs, which use the width-only im2col; other strides use the full im2col and one GEMM).
template <class T>
void conv_nchw(const T* x, const T* w, const T* wk, const T* bias, T* y, const Geo& g) {
  int64_t K = g.Cg * g.kh * g.kw, Kw = g.Cg * g.kw, P = g.OH * g.OW;
  RowPlan plan = plan_rows(g);
  int64_t rows = plan.rows, blocks = ceil_div(g.OH, rows), halo = plan.halo;
  bool by_taps = plan.by_taps;
  parallel_for(0, g.N * g.G * blocks, 1, [&](int64_t begin, int64_t end) {
    // Not zero-filled: the im2col writes every element (zeros included) before the GEMM reads it.
    auto col = std::make_unique_for_overwrite<T[]>(plan.buffer);
    for (int64_t t = begin; t < end; ++t) {
      int64_t n = t / (g.G * blocks), gi = (t / blocks) % g.G, oh0 = (t % blocks) * rows;
      int64_t oh1 = std::min(g.OH, oh0 + rows), pb = (oh1 - oh0) * g.OW;
      const T* xg = x + (n * g.C + gi * g.Cg) * g.H * g.W;
      T* yc = y + (n * g.O + gi * g.Og) * P + oh0 * g.OW;
      T beta = 0;
      if (bias) {  // start from the bias and accumulate onto it
        for (int64_t o = 0; o < g.Og; ++o) std::fill(yc + o * P, yc + o * P + pb, bias[gi * g.Og + o]);
        beta = 1;
      }
      if (by_taps) {
        int64_t R = oh1 - oh0 + halo;
        width_im2col_nchw(xg, col.get(), g, oh0, R);
        for (int64_t ki = 0; ki < g.kh; ++ki)
          blas::gemm_serial(false, false, g.Og, pb, Kw, T(1), wk + (gi * g.kh + ki) * g.Og * Kw, Kw,
                            col.get() + ki * g.dh * g.OW, R * g.OW, ki == 0 ? beta : T(1), yc, P);
        continue;
      }
      const T* b = xg + oh0 * g.W;
      int64_t ldb = P;
      if (!g.pointwise) {
        im2col_nchw(xg, col.get(), g, oh0, oh1);
        b = col.get(), ldb = pb;
      }
      blas::gemm_serial(false, false, g.Og, pb, K, T(1), w + gi * g.Og * K, K, b, ldb, beta, yc, P);
    }
  });
}

// col[pixel, (ki, kj, c)] for output rows [oh0, oh1) of one image (x points at its [H, W, C] data).
template <class T>
void im2col_nhwc(const T* x, T* col, const Geo& g, int64_t gi, int64_t oh0, int64_t oh1) {
  T* d = col;
  for (int64_t oh = oh0; oh < oh1; ++oh)
    for (int64_t ow = 0; ow < g.OW; ++ow)
      for (int64_t ki = 0; ki < g.kh; ++ki) {
        int64_t ih = oh * g.sh - g.ph + ki * g.dh;
        for (int64_t kj = 0; kj < g.kw; ++kj, d += g.Cg) {
          int64_t iw = ow * g.sw - g.pw + kj * g.dw;
          if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) {
            std::fill(d, d + g.Cg, T(0));
          } else {
            const T* src = x + (ih * g.W + iw) * g.C + gi * g.Cg;
            std::copy(src, src + g.Cg, d);
          }
        }
      }
}

// xw[r, ow, (kj, c)] = x[oh0 - ph + r, ow * sw - pw + kj * dw, group channel c] for the `R` input rows that
// output rows [oh0, oh1) of a stride-1 conv read (zeros outside the image): the im2col of the width taps only.
// For each height tap ki, the rows (oh - oh0 + ki * dh) of this buffer are then exactly the GEMM operand of
// output rows [oh0, oh1) and taps (ki, *, *), without the kh-fold copy of a full im2col.
template <class T>
void width_im2col_nhwc(const T* x, T* xw, const Geo& g, int64_t gi, int64_t oh0, int64_t R) {
  T* d = xw;
  for (int64_t r = 0; r < R; ++r) {
    int64_t ih = oh0 - g.ph + r;
    if (ih < 0 || ih >= g.H) {
      std::fill(d, d + g.OW * g.kw * g.Cg, T(0));
      d += g.OW * g.kw * g.Cg;
      continue;
    }
    const T* row = x + ih * g.W * g.C + gi * g.Cg;
    for (int64_t ow = 0; ow < g.OW; ++ow)
      for (int64_t kj = 0; kj < g.kw; ++kj, d += g.Cg) {
        int64_t iw = ow * g.sw - g.pw + kj * g.dw;
        if (iw < 0 || iw >= g.W)
          std::fill(d, d + g.Cg, T(0));
        else
          std::copy(row + iw * g.C, row + iw * g.C + g.Cg, d);
      }
  }
}

// wt is the weight reordered to [G, kh, kw, Cg, Og]. Stride-1 convs use the width-only im2col and one GEMM per
// height tap (accumulating into the output); other strides a full im2col and one GEMM.
template <class T>
void conv_nhwc(const T* x, const T* wt, const T* bias, T* y, const Geo& g) {
  int64_t K = g.kh * g.kw * g.Cg, Kw = g.kw * g.Cg;
  RowPlan plan = plan_rows(g);
  int64_t rows = plan.rows, blocks = ceil_div(g.OH, rows), halo = plan.halo;
  bool by_taps = plan.by_taps;
  parallel_for(0, g.N * g.G * blocks, 1, [&](int64_t begin, int64_t end) {
    // Not zero-filled: the im2col writes every element (zeros included) before the GEMM reads it.
    auto col = std::make_unique_for_overwrite<T[]>(plan.buffer);
    for (int64_t t = begin; t < end; ++t) {
      int64_t n = t / (g.G * blocks), gi = (t / blocks) % g.G, oh0 = (t % blocks) * rows;
      int64_t oh1 = std::min(g.OH, oh0 + rows), pb = (oh1 - oh0) * g.OW;
      const T* xn = x + n * g.H * g.W * g.C;
      T* yc = y + ((n * g.OH + oh0) * g.OW) * g.O + gi * g.Og;
      T beta = 0;
      if (bias) {
        for (int64_t p = 0; p < pb; ++p) std::copy(bias + gi * g.Og, bias + (gi + 1) * g.Og, yc + p * g.O);
        beta = 1;
      }
      const T* wg = wt + gi * K * g.Og;
      if (by_taps) {
        width_im2col_nhwc(xn, col.get(), g, gi, oh0, oh1 - oh0 + halo);
        for (int64_t ki = 0; ki < g.kh; ++ki)
          blas::gemm_serial(false, false, pb, g.Og, Kw, T(1), col.get() + ki * g.dh * g.OW * Kw, Kw,
                            wg + ki * Kw * g.Og, g.Og, ki == 0 ? beta : T(1), yc, g.O);
        continue;
      }
      const T* a = xn + oh0 * g.W * g.C + gi * g.Cg;
      int64_t lda = g.C;
      if (!g.pointwise) {
        im2col_nhwc(xn, col.get(), g, gi, oh0, oh1);
        a = col.get(), lda = K;
      }
      blas::gemm_serial(false, false, pb, g.Og, K, T(1), a, lda, wg, g.Og, beta, yc, g.O);
    }
  });
}

// Implicit-GEMM conv (float32, channels-last, one group) on sinter's own GEMM: all output pixels of all images at
// once, A the im2col built row by row while the GEMM packs it (never stored), B the weight as [kh * kw * C, O],
// the bias added to each finished tile while it is in cache.
struct ImplicitConv {
  const float* x;
  const Geo* g;
  const float* bias;
  float* y;
};

void pack_im2col(const void* ctx, int64_t i0, int rows, int mr, int64_t k0, int64_t kc, float* out) {
  const ImplicitConv& c = *static_cast<const ImplicitConv*>(ctx);
  const Geo& g = *c.g;
  constexpr int kMaxRows = blas::kMaxMicroRows;
  SINTER_INTERNAL_ASSERT(mr <= kMaxRows, "conv im2col packing: {} rows per micro-tile", mr);
  int64_t n[kMaxRows], oh[kMaxRows], ow[kMaxRows];
  for (int i = 0; i < rows; ++i) {
    int64_t pix = i0 + i, plane = g.OH * g.OW;
    n[i] = pix / plane, oh[i] = pix % plane / g.OW, ow[i] = pix % g.OW;
  }
  const float* r[kMaxRows];
  for (int64_t p = k0; p < k0 + kc;) {
    int64_t tap = p / g.C, c0 = p % g.C, len = std::min(g.C - c0, k0 + kc - p);
    int64_t ki = tap / g.kw, kj = tap % g.kw;
    for (int i = 0; i < mr; ++i) {
      r[i] = nullptr;
      if (i >= rows) continue;
      int64_t ih = oh[i] * g.sh - g.ph + ki * g.dh, iw = ow[i] * g.sw - g.pw + kj * g.dw;
      if (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) r[i] = c.x + ((n[i] * g.H + ih) * g.W + iw) * g.C + c0;
    }
    blas::pack_rows(r, mr, len, out + (p - k0) * mr);
    p += len;
  }
}

// Where an im2col panel lies in the input, if it does: one tap's channels [c0, c0 + kc) for mr consecutive
// output pixels of one output row whose input pixels are all inside the image (no padding) are the input's
// channels at a fixed pixel stride. Panels across a row end, a tap boundary or the padding are packed.
const float* locate_im2col(const void* ctx, int64_t i0, int mr, int64_t k0, int64_t kc, int64_t* row_stride) {
  const ImplicitConv& c = *static_cast<const ImplicitConv*>(ctx);
  const Geo& g = *c.g;
  const int64_t tap = k0 / g.C, c0 = k0 % g.C;
  if (c0 + kc > g.C) return nullptr;
  const int64_t plane = g.OH * g.OW, n = i0 / plane, oh = i0 % plane / g.OW, ow = i0 % g.OW;
  if (ow + mr > g.OW) return nullptr;
  const int64_t ih = oh * g.sh - g.ph + tap / g.kw * g.dh, iw = ow * g.sw - g.pw + tap % g.kw * g.dw;
  if (ih < 0 || ih >= g.H || iw < 0 || iw + (mr - 1) * g.sw >= g.W) return nullptr;
  *row_stride = g.sw * g.C;
  return c.x + ((n * g.H + ih) * g.W + iw) * g.C + c0;
}

struct TileChain {  // the bias, then the caller's callback, on each finished tile
  const ImplicitConv* conv;
  blas::TileFn next;
  void* next_ctx;
};

// wt: the weight as [kh * kw * C, O] (row-major), or, with `transposed`, as [O, kh * kw * C].
// Under set_float32_matmul_precision("medium") (and AVX512-BF16) the products of deep convs are bfloat16's.
void conv_nhwc_implicit(const float* x, const float* wt, const float* bias, float* y, const Geo& g, bool transposed,
                        blas::TileFn tile_done, void* ctx, const WeightPacker& packer) {
  ImplicitConv c{x, &g, bias, y};
  TileChain chain{&c, tile_done, ctx};
  blas::TiledGemm gm;
  gm.m = g.N * g.OH * g.OW, gm.n = g.O, gm.k = g.kh * g.kw * g.C;
  if (g.pointwise) {  // the input itself is A
    gm.a = x, gm.a_rs = g.C, gm.a_cs = 1;
  } else {
    gm.pack_a = pack_im2col, gm.pack_ctx = &c;
    if (g.C % 16 == 0 && g.C >= 32 && g.C <= 512) {  // blocks of one tap's channels, most read in place
      gm.locate_a = locate_im2col;
      gm.k_block = g.C;
    }
  }
  gm.b = wt, gm.b_rs = transposed ? 1 : g.O, gm.b_cs = transposed ? gm.k : 1;
  gm.c = y, gm.c_rs = g.O;
  // bfloat16 where the product is deep enough to gain from it: A (the input itself for a pointwise conv, else
  // the im2col) is rounded every call, where float32 reads most of it in place. On the dev VM (2026-12-07) a
  // pointwise conv 64 channels deep ran 1.5x faster, one 32 deep 1.1x.
  gm.bf16 = blas::matmul_bf16() && gm.k >= (g.pointwise ? 64 : 256);
  if (packer.pack) gm.packed_b = packer.pack(packer.ctx, gm);
  if (bias || tile_done) {
    gm.ctx = &chain;
    gm.tile_done = [](void* ctx, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
      const TileChain& t = *static_cast<const TileChain*>(ctx);
      const ImplicitConv& cv = *t.conv;
      if (cv.bias) blas::add_to_rows(cv.y + i0 * cv.g->O + j0, cv.g->O, i1 - i0, cv.bias + j0, j1 - j0);
      if (t.next) t.next(t.next_ctx, i0, i1, j0, j1);
    };
  }
  blas::sgemm_tiled(gm);
}

// Transposed conv: per (image, group, block of output channels) a GEMM col = W^T x, then col2im adds each
// column into the output; blocks own disjoint output channels, so tasks never write the same element.
template <class T>
void conv_transpose_nchw(const T* x, const T* w, const T* bias, T* y, const Geo& g) {
  // Here C/Cg are the input channels and O/Og the output channels.
  int64_t HW = g.H * g.W, P = g.OH * g.OW, kk = g.kh * g.kw, wrow = g.Og * kk;
  int64_t threads = get_num_threads();
  int64_t cb = std::max<int64_t>(1, std::min(g.Og, (1 << 18) / std::max<int64_t>(kk * HW, 1)));
  while (cb > 1 && g.N * g.G * ceil_div(g.Og, cb) < 2 * threads) cb = ceil_div(cb, 2);
  int64_t blocks = ceil_div(g.Og, cb);
  parallel_for(0, g.N * g.G * blocks, 1, [&](int64_t begin, int64_t end) {
    auto col = std::make_unique_for_overwrite<T[]>(cb * kk * HW);  // the GEMM writes it (beta 0)
    for (int64_t t = begin; t < end; ++t) {
      int64_t n = t / (g.G * blocks), gi = (t / blocks) % g.G, co0 = (t % blocks) * cb;
      int64_t co1 = std::min(g.Og, co0 + cb);
      const T* a = w + gi * g.Cg * wrow + co0 * kk;  // W[g]^T rows (co, ki, kj) for co in the block
      const T* b = x + (n * g.C + gi * g.Cg) * HW;
      blas::gemm_serial(true, false, (co1 - co0) * kk, HW, g.Cg, T(1), a, wrow, b, HW, T(0), col.get(), HW);
      for (int64_t co = co0; co < co1; ++co) {
        int64_t oc = gi * g.Og + co;
        T* yp = y + (n * g.O + oc) * P;
        std::fill(yp, yp + P, bias ? bias[oc] : T(0));
        for (int64_t ki = 0; ki < g.kh; ++ki)
          for (int64_t kj = 0; kj < g.kw; ++kj) {
            const T* c = col.get() + (((co - co0) * g.kh + ki) * g.kw + kj) * HW;
            int64_t off = kj * g.dw - g.pw, lo, hi;
            valid_range(off, g.sw, g.OW, g.W, lo, hi);
            for (int64_t ih = 0; ih < g.H; ++ih) {
              int64_t oh = ih * g.sh - g.ph + ki * g.dh;
              if (oh < 0 || oh >= g.OH) continue;
              T* yr = yp + oh * g.OW;
              const T* cr = c + ih * g.W;
              for (int64_t iw = lo; iw < hi; ++iw) yr[iw * g.sw + off] += cr[iw];
            }
          }
      }
    }
  });
}

MemoryFormat layout_of(const Tensor& out) {
  return out.is_contiguous() ? MemoryFormat::kContiguous : MemoryFormat::kChannelsLast;
}

bool implicit_applies(const Geo& g, const Tensor& out) {
  return out.dtype() == kFloat32 && g.G == 1 && layout_of(out) == MemoryFormat::kChannelsLast &&
         blas::sgemm_suits(g.N * g.OH * g.OW, g.O, g.kh * g.kw * g.C);
}

// A one-group conv's weight [O, C, kh, kw] as [kh, kw, C, O] in float32 (no copy where it is laid out so).
Tensor taps_first_weight(const Tensor& weight, const Geo& g) {
  std::vector<int64_t> ws = strides_of(weight);
  return contiguous_as(strided_view(weight, {g.kh, g.kw, g.Cg, g.Og}, {ws[2], ws[3], ws[1], ws[0]}), kFloat32);
}

// The implicit GEMM from float32 channels-last X into float32 channels-last Y (the weight reordered to
// [kh, kw, C, O], the GEMM's B).
void run_implicit(const Tensor& X, const Tensor& weight, const Tensor& B, const Geo& g, const Tensor& Y,
                  blas::TileFn tile_done, void* ctx, const WeightPacker& packer = {}) {
  // A channels-last weight ([O][kh][kw][C] in memory) is the GEMM's B as it is, read transposed; others are
  // reordered to [kh, kw, C, O] first.
  const bool direct = weight.dtype() == kFloat32 && weight.is_contiguous(MemoryFormat::kChannelsLast);
  Tensor wt = direct ? weight : taps_first_weight(weight, g);
  conv_nhwc_implicit(X.data_ptr<float>(), wt.data_ptr<float>(), B.defined() ? B.data_ptr<float>() : nullptr,
                     Y.data_ptr<float>(), g, direct, tile_done, ctx, packer);
}

// A depthwise conv's weight [O, 1, kh, kw] as the channels-last kernels read it: [kh, kw, O], in `dtype`.
Tensor depthwise_weight(const Tensor& weight, const Geo& g, DType dtype) {
  std::vector<int64_t> ws = strides_of(weight);
  return contiguous_as(strided_view(weight, {g.kh, g.kw, g.O}, {ws[2], ws[3], ws[0]}), dtype);
}

// The direct kernel of few input channels (conv_direct.h), where it applies: float32 input, weight and
// channels-last Y, one group, at most kFewChannels input channels, a CPU with AVX-512. The input is read in its
// own layout.
bool run_few_channels(const Tensor& input, const Tensor& weight, const Tensor& B, const Geo& g, const Tensor& Y,
                      blas::TileFn tile_done, void* ctx) {
  if (Y.dtype() != kFloat32 || input.dtype() != kFloat32 || weight.dtype() != kFloat32 ||
      layout_of(Y) != MemoryFormat::kChannelsLast || g.G != 1 || g.C > conv::kFewChannels ||
      !conv::few_channels_available())
    return false;
  std::vector<int64_t> xs = strides_of(input);
  Tensor wt = taps_first_weight(weight, g);
  // The kernel skips the taps that fall in the zero padding. With an infinite or NaN weight they are 0 * w = NaN,
  // as in PyTorch and the im2col paths: such a weight takes those paths (found by sinter fuzz, seed 2026120804).
  const float* w = wt.data_ptr<float>();
  for (int64_t i = 0, n = wt.numel().hint(); i < n; ++i)
    if (!std::isfinite(w[i])) return false;
  return conv::conv_few_channels(input.data_ptr<float>(), xs.data(), wt.data_ptr<float>(),
                                 B.defined() ? B.data_ptr<float>() : nullptr, Y.data_ptr<float>(), g, tile_done, ctx);
}

}  // namespace

void conv2d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv2dParams& p,
                    const Tensor& out) {
  if (out.numel().hint() == 0) return;
  Geo g = geometry(input, weight, out, p, false);
  MemoryFormat fmt = layout_of(out);
  bool cl = fmt == MemoryFormat::kChannelsLast;
  DType cd = compute_dtype(out.dtype());
  Tensor B = bias.defined() ? contiguous_as(bias, cd) : Tensor();
  if (run_few_channels(input, weight, B, g, out, nullptr, nullptr)) return;
  Tensor X = contiguous_as(input, cd, fmt);
  Tensor Y = out.dtype() == cd ? out : empty_from_meta(dense_meta(out.sizes(), cd, kCPU, fmt));
  if (cd == kFloat32 && implicit_applies(g, Y)) {
    run_implicit(X, weight, B, g, Y, nullptr, nullptr);
    write_into(out, Y);
    return;
  }
  std::vector<int64_t> ws = strides_of(weight);
  visit_floating(cd, [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* bp = B.defined() ? B.data_ptr<T>() : nullptr;
      const T* xp = X.data_ptr<T>();
      T* yp = Y.data_ptr<T>();
      if (!cl && g.Cg == 1) {
        depthwise_nchw(xp, contiguous_as(weight, cd).data_ptr<T>(), bp, yp, g);
      } else if (!cl) {
        Tensor wk = contiguous_as(
            strided_view(weight, {g.G, g.kh, g.Og, g.Cg, g.kw}, {g.Og * ws[0], ws[2], ws[0], ws[1], ws[3]}), cd);
        conv_nchw(xp, contiguous_as(weight, cd).data_ptr<T>(), wk.data_ptr<T>(), bp, yp, g);
      } else if (g.Cg == 1 && g.Og == 1) {
        Tensor wt = depthwise_weight(weight, g, cd);
        if constexpr (std::is_same_v<T, float>) {
          if (depthwise_nhwc_simd(xp, wt.data_ptr<T>(), bp, yp, g)) return;
        }
        depthwise_nhwc(xp, wt.data_ptr<T>(), bp, yp, g);
      } else {
        Tensor wt = contiguous_as(
            strided_view(weight, {g.G, g.kh, g.kw, g.Cg, g.Og}, {g.Og * ws[0], ws[2], ws[3], ws[1], ws[0]}),
            cd);
        conv_nhwc(xp, wt.data_ptr<T>(), bp, yp, g);
      }
    }
  });
  write_into(out, Y);
}

bool conv2d_forward_tiled(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv2dParams& p,
                          const Tensor& out, blas::TileFn tile_done, void* ctx, const WeightPacker& packer) {
  if (out.numel().hint() == 0 || out.dim() != 4 || input.dtype() != kFloat32 || weight.dtype() != kFloat32 ||
      (bias.defined() && bias.dtype() != kFloat32) || !out.is_contiguous(MemoryFormat::kChannelsLast))
    return false;
  Geo g = geometry(input, weight, out, p, false);
  Tensor B = bias.defined() ? contiguous_as(bias, kFloat32) : Tensor();
  if (run_few_channels(input, weight, B, g, out, tile_done, ctx)) return true;
  const bool depthwise = g.Cg == 1 && g.Og == 1;
  if (!depthwise && !implicit_applies(g, out)) return false;
  Tensor X = contiguous_as(input, kFloat32, MemoryFormat::kChannelsLast);
  if (depthwise) {
    Tensor wt = depthwise_weight(weight, g, kFloat32);
    return depthwise_nhwc_simd(X.data_ptr<float>(), wt.data_ptr<float>(), B.defined() ? B.data_ptr<float>() : nullptr,
                               out.data_ptr<float>(), g, tile_done, ctx);
  }
  run_implicit(X, weight, B, g, out, tile_done, ctx, packer);
  return true;
}

void conv_transpose2d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                              const Conv2dParams& p, const Tensor& out) {
  if (out.numel().hint() == 0) return;
  Geo g = geometry(input, weight, out, p, true);
  g.Og = g.O / g.G;
  DType cd = compute_dtype(out.dtype());
  Tensor X = contiguous_as(input, cd);
  Tensor W = contiguous_as(weight, cd);
  bool direct = out.dtype() == cd && out.is_contiguous();
  Tensor Y = direct ? out : empty_from_meta(dense_meta(out.sizes(), cd, kCPU));
  Tensor B = bias.defined() ? contiguous_as(bias, cd) : Tensor();
  visit_floating(cd, [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      conv_transpose_nchw(X.data_ptr<T>(), W.data_ptr<T>(), B.defined() ? B.data_ptr<T>() : nullptr,
                          Y.data_ptr<T>(), g);
    }
  });
  write_into(out, Y);
}

}  // namespace sinter
