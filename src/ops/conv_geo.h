// The geometry of one conv2d call as the CPU kernels (conv_kernels.cpp, conv_depthwise.cpp) walk it: sizes,
// strides, dilation, padding and groups as plain integers.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ops/conv_kernels.h"
#include "ops/linalg_util.h"

namespace sinter::conv {

struct Geo {
  int64_t N, C, H, W, O, OH, OW, kh, kw, sh, sw, dh, dw, ph, pw, G, Cg, Og;
  bool pointwise;  // 1x1, stride 1, no padding: the input itself is the GEMM operand
};

inline Geo geometry(const Tensor& x, const Tensor& w, const Tensor& y, const Conv2dParams& p, bool transposed) {
  std::vector<int64_t> xs = sizes_of(x), ws = sizes_of(w), ys = sizes_of(y);
  Geo g{};
  g.N = xs[0], g.C = xs[1], g.H = xs[2], g.W = xs[3];
  g.O = ys[1], g.OH = ys[2], g.OW = ys[3];
  g.kh = ws[2], g.kw = ws[3];
  g.sh = p.stride[0], g.sw = p.stride[1], g.dh = p.dilation[0], g.dw = p.dilation[1];
  g.ph = p.pad_before[0], g.pw = p.pad_before[1];
  g.G = p.groups, g.Cg = g.C / g.G, g.Og = g.O / g.G;
  g.pointwise = !transposed && g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 &&
                g.OH == g.H && g.OW == g.W;
  return g;
}

// The output columns o in [lo, hi) whose input column o * s + off lies in [0, size); o < count.
inline void valid_range(int64_t off, int64_t s, int64_t size, int64_t count, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : ceil_div(-off, s);
  hi = size - 1 - off < 0 ? 0 : std::min(count, (size - 1 - off) / s + 1);
  lo = std::min(lo, hi);
}

// The interior [lo, hi) of the output columns: those whose first and last taps both lie inside the image.
inline void interior_columns(const Geo& g, int64_t& lo, int64_t& hi) {
  int64_t lo0, hi0, lo1, hi1;
  valid_range(-g.pw, g.sw, g.W, g.OW, lo0, hi0);
  valid_range((g.kw - 1) * g.dw - g.pw, g.sw, g.W, g.OW, lo1, hi1);
  lo = std::max(lo0, lo1), hi = std::max(lo, std::min(hi0, hi1));
}

// Output columns [0, OW) in blocks of 8, then one block each of 4, 2 and 1 as the rest needs:
// f(std::integral_constant<int, P>{}, ow) for the block [ow, ow + P).
template <class F>
void for_each_column_block(int64_t OW, F&& f) {
  int64_t ow = 0;
  for (; ow + 8 <= OW; ow += 8) f(std::integral_constant<int, 8>{}, ow);
  if (ow + 4 <= OW) f(std::integral_constant<int, 4>{}, ow), ow += 4;
  if (ow + 2 <= OW) f(std::integral_constant<int, 2>{}, ow), ow += 2;
  if (ow < OW) f(std::integral_constant<int, 1>{}, ow);
}

}  // namespace sinter::conv
