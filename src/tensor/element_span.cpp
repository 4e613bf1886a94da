#include "tensor/element_span.h"

#include <algorithm>
#include <memory>

#include "tensor/allocator.h"

namespace sinter {

ElementSpan element_span(const Tensor& t) {
  int64_t lo = t.storage_offset().hint(), hi = lo;
  if (t.numel().hint() == 0) return {lo, 0};
  for (int64_t d = 0; d < t.dim(); ++d) {
    int64_t extent = (t.sizes()[d].hint() - 1) * t.strides()[d].hint();
    (extent < 0 ? lo : hi) += extent;
  }
  return {lo, hi - lo + 1};
}

Tensor span_buffer(const Tensor& t, Device device, bool pinned) {
  ElementSpan span = element_span(t);
  TensorMeta flat{{std::max<int64_t>(span.count, 1)}, {1}, 0, t.dtype(), device};
  Tensor buf = pinned ? empty_pinned(flat) : empty_from_meta(flat);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = buf.storage();
  impl->meta = t.meta();
  impl->meta.device = device;
  impl->meta.offset = SymInt(t.storage_offset().hint() - span.first);
  return Tensor(std::move(impl));
}

}  // namespace sinter
