// Depthwise convolutions (one input and one output channel per group) on the CPU: direct loops over NCHW planes
// or over channels-last pixels, the latter with the CPU's vector units and, for the inductor, a callback on each
// finished output row while it is in cache (the conv's fused epilogue).
#pragma once
#include "ops/conv_geo.h"
#include "ops/sgemm.h"

namespace sinter::conv {

// NCHW: y [N, O, OH, OW] from x [N, C, H, W] and w [O, 1, kh, kw] (contiguous), bias [O] or null. Float and
// double.
template <class T>
void depthwise_nchw(const T* x, const T* w, const T* bias, T* y, const Geo& g);

// Channels-last: y [N, OH, OW, C] from x [N, H, W, C] and wt [kh, kw, C], bias [C] or null. Float and double.
template <class T>
void depthwise_nhwc(const T* x, const T* wt, const T* bias, T* y, const Geo& g);

// The float32 channels-last depthwise with AVX-512 or AVX2 + FMA; tile_done, when given, runs on each finished
// output row of an image (pixels [r * OW, (r + 1) * OW) in channels-last order, channels [0, C), bias added).
// Returns false, having done nothing, on a CPU with neither.
bool depthwise_nhwc_simd(const float* x, const float* wt, const float* bias, float* y, const Geo& g,
                         blas::TileFn tile_done = nullptr, void* ctx = nullptr);

}  // namespace sinter::conv
