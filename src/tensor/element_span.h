// The part of its storage a tensor's elements lie in, and fresh memory laid out like a tensor over just that part:
// what copies between host and device, CUDA graphs' static buffers and host reads of device tensors move.
#pragma once
#include <cstdint>

#include "sinter/tensor.h"

namespace sinter {

// The first element of the storage a tensor's elements lie in and how many there are from it to the last (a view
// with gaps counts them; 0 for an empty tensor).
struct ElementSpan {
  int64_t first = 0, count = 0;
};
ElementSpan element_span(const Tensor& t);

// A tensor with `t`'s sizes, strides and dtype on `device` over fresh memory covering just its span (pinned host
// memory when `pinned`), made without dispatch; its values are not set.
Tensor span_buffer(const Tensor& t, Device device, bool pinned = false);

}  // namespace sinter
