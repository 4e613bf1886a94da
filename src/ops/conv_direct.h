// Convolutions of few input channels (an RGB or RGBA stem) into channels-last float32 output: direct loops over
// the output pixels, vectorised over the output channels with AVX-512. An implicit GEMM over such a conv packs
// every panel of an im2col only 27 values deep; the NCHW kernel writes planes that the channels-last layers
// after it must transpose.
#pragma once
#include "ops/conv_geo.h"
#include "ops/sgemm.h"

namespace sinter::conv {

// The most input channels (per group; one group) the direct kernel takes.
constexpr int64_t kFewChannels = 4;

// Whether this CPU runs the direct kernel (AVX-512F).
bool few_channels_available();

// y [N, OH, OW, O] channels-last from x, read through its strides `xs` (of N, C, H, W: any layout), and wt
// [kh, kw, C, O] (contiguous), bias [O] or null; one group, C <= kFewChannels. tile_done, when given, runs on each
// finished output row of an image (pixels [r * OW, (r + 1) * OW), channels [0, O), bias added). Returns false,
// having done nothing, where the CPU lacks AVX-512F or the conv has more channels or groups.
bool conv_few_channels(const float* x, const int64_t* xs, const float* wt, const float* bias, float* y, const Geo& g,
                       blas::TileFn tile_done = nullptr, void* ctx = nullptr);

}  // namespace sinter::conv
