// What eager kernels share: dtype dispatch, element types, index helpers.
#pragma once
#include <cstdint>

#include "ops/op_table.h"
#include "tensor/dims.h"
#include "support/check.h"
#include "tensor/dtype_dispatch.h"
#include "tensor/thread_pool.h"

namespace sinter {


// Element offset of linear index `i` (row-major over sizes) under `strides`.
inline int64_t offset_of(int64_t i, const int64_t* sizes, const int64_t* strides, int64_t ndim) {
  int64_t off = 0;
  for (int64_t d = ndim - 1; d >= 0; --d) {
    int64_t s = sizes[d];
    off += (i % s) * strides[d];
    i /= s;
  }
  return off;
}

}  // namespace sinter
