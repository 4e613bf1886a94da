// Where upsample_nearest2d and upsample_bilinear2d read their input along one axis, with PyTorch's index rules
// (compute_scales_value, nearest_idx, the bilinear source index and weights in the forward's precision `A`):
// shared by the eager kernels (pool_upsample.cpp) and their derivatives (autograd/derivatives_nn.cpp), so that a
// gradient goes exactly where the forward read.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "sinter/value.h"

namespace sinter {

// The given scale's reciprocal, else in / out.
template <class A>
A upsample_scale(const Value& scale, int64_t in, int64_t out) {
  if (!scale.is_none() && scale.to_double() > 0) return static_cast<A>(1.0 / scale.to_double());
  return static_cast<A>(in) / static_cast<A>(out);
}

// upsample_nearest2d: the source index of each output index, computed in float as PyTorch does.
inline std::vector<int64_t> nearest_taps(int64_t in, int64_t out, const Value& scale) {
  std::vector<int64_t> idx(static_cast<size_t>(out));
  const float s = upsample_scale<float>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    if (out == in)
      idx[o] = o;
    else if (out == 2 * in)
      idx[o] = o >> 1;
    else
      idx[o] = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
  }
  return idx;
}

// upsample_bilinear2d: out[o] = l0 * in[i0] + l1 * in[i1].
template <class A>
struct LinearTap {
  int64_t i0, i1;
  A l0, l1;
};

template <class A>
std::vector<LinearTap<A>> linear_taps(int64_t in, int64_t out, bool align_corners, const Value& scale) {
  std::vector<LinearTap<A>> taps(static_cast<size_t>(out));
  const A ratio = align_corners ? (out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0))
                                : upsample_scale<A>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    if (in == out) {
      taps[o] = {o, o, A(1), A(0)};
      continue;
    }
    A src = align_corners ? ratio * static_cast<A>(o) : ratio * (static_cast<A>(o) + A(0.5)) - A(0.5);
    if (!align_corners && src < A(0)) src = A(0);
    const int64_t i0 = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
    const A l1 = std::min(std::max(src - static_cast<A>(i0), A(0)), A(1));
    taps[o] = {i0, i0 + (i0 < in - 1 ? 1 : 0), A(1) - l1, l1};
  }
  return taps;
}

}  // namespace sinter
