// Strided copy with dtype conversion: the kernel behind copy_, clone, _to_copy and contiguous.
#pragma once
#include "sinter/tensor.h"

namespace sinter {

// dst[i] = cast(src[i]) for every element; src is broadcast to dst's sizes. Any strides, any dtypes, CPU and
// CUDA. Handles src overlapping dst by copying through a temporary. `non_blocking`: as copy_'s (sinter/tensor.h).
void copy_strided(const Tensor& dst, const Tensor& src, bool non_blocking = false);
// Writes `value` into every element of dst (any strides).
void fill_strided(const Tensor& dst, const Scalar& value);
// Whether two tensors' memory ranges may overlap (same storage and intersecting byte ranges).
bool may_overlap(const Tensor& a, const Tensor& b);

}  // namespace sinter
