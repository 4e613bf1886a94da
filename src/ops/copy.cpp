// Copies and fills over arbitrary strides. Dims are coalesced first, so most copies become one or two loops; the
// innermost loop is a plain pointer walk that the compiler vectorises when both strides are 1.
#include "ops/copy.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "ops/cuda_fallback.h"
#include "ops/kernel_util.h"
#include "ops/shape_util.h"
#include "tensor/allocator.h"
#include "tensor/cuda_device.h"
#include "tensor/cuda_graph.h"
#include "tensor/element_span.h"

namespace sinter {
namespace {

struct Layout {
  std::vector<int64_t> sizes, dst_strides, src_strides;  // in elements
};

// Merges adjacent dims that are contiguous in both operands and drops size-1 dims.
Layout coalesce(const std::vector<int64_t>& sizes, std::vector<int64_t> ds, std::vector<int64_t> ss) {
  Layout l;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    if (!l.sizes.empty() && l.dst_strides.back() == ds[d] * sizes[d] && l.src_strides.back() == ss[d] * sizes[d]) {
      l.sizes.back() *= sizes[d];
      l.dst_strides.back() = ds[d];
      l.src_strides.back() = ss[d];
    } else {
      l.sizes.push_back(sizes[d]);
      l.dst_strides.push_back(ds[d]);
      l.src_strides.push_back(ss[d]);
    }
  }
  if (l.sizes.empty()) {
    l.sizes = {1};
    l.dst_strides = {1};
    l.src_strides = {1};
  }
  return l;
}

// Source strides after broadcasting src to dst's sizes (0 for broadcast dims).
std::vector<int64_t> broadcast_strides(const Tensor& src, const SymIntList& sizes) {
  std::vector<int64_t> out(sizes.size(), 0);
  int64_t offset = static_cast<int64_t>(sizes.size()) - src.dim();
  for (int64_t d = 0; d < src.dim(); ++d)
    out[d + offset] = src.sizes()[d].hint() == 1 ? 0 : src.strides()[d].hint();
  return out;
}

template <class D, class S>
void copy_loop(D* dst, const S* src, const Layout& l, int64_t begin, int64_t end) {
  // Rows: all dims but the last; each row is one inner loop.
  int64_t ndim = static_cast<int64_t>(l.sizes.size());
  int64_t inner = l.sizes.back(), dsi = l.dst_strides.back(), ssi = l.src_strides.back();
  for (int64_t row = begin; row < end; ++row) {
    int64_t doff = 0, soff = 0, r = row;
    for (int64_t d = ndim - 2; d >= 0; --d) {
      int64_t i = r % l.sizes[d];
      r /= l.sizes[d];
      doff += i * l.dst_strides[d];
      soff += i * l.src_strides[d];
    }
    D* dp = dst + doff;
    const S* sp = src + soff;
    if (dsi == 1 && ssi == 1) {
      for (int64_t i = 0; i < inner; ++i) dp[i] = cast_to<D>(sp[i]);
    } else if (dsi == 1 && ssi == 0) {
      D v = cast_to<D>(sp[0]);
      for (int64_t i = 0; i < inner; ++i) dp[i] = v;
    } else {
      for (int64_t i = 0; i < inner; ++i) dp[i * dsi] = cast_to<D>(sp[i * ssi]);
    }
  }
}

}  // namespace

bool may_overlap(const Tensor& a, const Tensor& b) {
  if (!a.has_storage() || !b.has_storage() || a.storage() != b.storage()) return false;
  auto range = [](const Tensor& t) {
    int64_t lo = t.storage_offset().hint(), hi = lo;
    for (int64_t d = 0; d < t.dim(); ++d) {
      int64_t extent = (t.sizes()[d].hint() - 1) * t.strides()[d].hint();
      if (t.sizes()[d].hint() == 0) return std::pair<int64_t, int64_t>{0, -1};
      (extent < 0 ? lo : hi) += extent;
    }
    return std::pair<int64_t, int64_t>{lo * static_cast<int64_t>(t.element_size()),
                                       (hi + 1) * static_cast<int64_t>(t.element_size())};
  };
  auto [alo, ahi] = range(a);
  auto [blo, bhi] = range(b);
  return alo < bhi && blo < ahi;
}

namespace {

// Where a view's elements start and how many bytes their span has, when they cover it densely.
std::optional<std::pair<char*, size_t>> dense_span(const Tensor& t) {
  ElementSpan span = element_span(t);
  if (span.count != t.numel().hint()) return std::nullopt;
  return std::pair{static_cast<char*>(t.storage()->data()) + span.first * static_cast<int64_t>(t.element_size()),
                   static_cast<size_t>(span.count) * t.element_size()};
}

// Whether a copy between host and device can move the bytes as they are: one dtype, one layout, no broadcast,
// both dense (each element of the span is one of the tensor's).
bool same_bytes(const Tensor& dst, const Tensor& src) {
  if (dst.dtype() != src.dtype() || dst.sizes().hints() != src.sizes().hints()) return false;
  for (int64_t d = 0; d < dst.dim(); ++d)
    if (dst.sizes()[d].hint() > 1 && dst.strides()[d].hint() != src.strides()[d].hint()) return false;
  return dense_span(dst) && dense_span(src);
}

// Copies with a real GPU on one side (or both): through host mirrors of the device views. A destination whose
// elements do not cover its span densely is fetched first, so the bytes between its elements survive. With
// `non_blocking`, a copy between pinned host memory and the device is queued on the device's stream (ordered
// with the work sinter queues there) and the pinned block is marked in use until it has completed; one that
// must convert on the way to the device is converted into a pinned mirror, which is then queued the same way.
void copy_through_host(const Tensor& dst, const Tensor& src, bool non_blocking) {
  if (!dst.is_cuda()) {
    if (non_blocking && dst.is_pinned() && same_bytes(dst, src)) {
      auto [to, bytes] = *dense_span(dst);
      cuda::copy_to_host_async(to, dense_span(src)->first, bytes, src.device().index);
      cuda::record_pinned_use(dst.storage()->data(), src.device().index);
      return;
    }
    return copy_strided(dst, cuda::host_mirror(src, true, false));
  }
  int index = dst.device().index;
  bool queued = non_blocking && src.is_cpu() && src.is_pinned();
  if (queued && same_bytes(dst, src)) {
    auto [from, bytes] = *dense_span(src);
    cuda::copy_to_device_async(dense_span(dst)->first, from, bytes, index);
    cuda::record_pinned_use(src.storage()->data(), index);
    return;
  }
  Tensor s = src.is_cuda() ? cuda::host_mirror(src, true, false) : src;
  ElementSpan span = element_span(dst);
  bool dense = span.count == dst.numel().hint();
  Tensor d = cuda::host_mirror(dst, !dense, queued);
  copy_strided(d, s);
  void* to = static_cast<char*>(dst.storage()->data()) + span.first * dst.element_size();
  const void* from = d.storage()->data();
  size_t bytes = static_cast<size_t>(span.count) * dst.element_size();
  if (!queued) return cuda::copy_to_device(to, from, bytes, index);
  cuda::copy_to_device_async(to, from, bytes, index);
  cuda::record_pinned_use(from, index);
}

}  // namespace

namespace {

// A copy between two tensors of one CUDA device: one memcpy when both have one dense layout and dtype, else the
// generated copy kernel (ops/cuda_fallback.h); a destination that is not dense (a window of a larger tensor, as
// a cache written at one position) is split along its outermost dim into at most `budget` such copies. False
// when none of these serves.
bool copy_on_device(const Tensor& dst, const Tensor& src, int64_t budget = 64) {
  if (dst.dtype() == src.dtype() && dst.sizes().hints() == src.sizes().hints() &&
      dst.strides().hints() == src.strides().hints() && !may_overlap(dst, src)) {
    ElementSpan span = element_span(dst);
    if (span.count == dst.numel().hint()) {
      int64_t shift = (span.first - dst.storage_offset().hint()) * static_cast<int64_t>(dst.element_size());
      cuda::copy_on_device(static_cast<char*>(dst.data_ptr()) + shift, static_cast<const char*>(src.data_ptr()) + shift,
                           static_cast<size_t>(span.count) * dst.element_size(), dst.device().index);
      return true;
    }
  }
  std::vector<Tensor> outs{dst};
  if (run_cuda_generated(OpId::copy_, {dst, src, false}, outs)) return true;
  int64_t outer = -1;
  for (int64_t d = 0; d < dst.dim(); ++d)
    if (dst.size(d).hint() > 1 && (outer < 0 || dst.stride(d).hint() > dst.stride(outer).hint())) outer = d;
  if (outer < 0 || dst.size(outer).hint() > budget || may_overlap(dst, src)) return false;
  if (element_span(dst).count == dst.numel().hint()) return false;  // dense: the generated copy declined for another reason
  Tensor from = src.sizes().hints() == dst.sizes().hints() ? src : src.expand(dst.sizes());
  int64_t n = dst.size(outer).hint();
  for (int64_t i = 0; i < n; ++i)
    if (!copy_on_device(dst.select(outer, i), from.select(outer, i), budget / n)) {
      SINTER_INTERNAL_ASSERT(i == 0, "a copy on the device failed after {} of its {} slices", i, n);
      return false;
    }
  return true;
}

}  // namespace

void copy_strided(const Tensor& dst, const Tensor& src, bool non_blocking) {
  int64_t n = dst.numel().hint();
  if (n == 0) return;
  // Simulated device memory is host memory: the CPU loops below serve it directly (and are done when they return).
  bool one_device = dst.is_cuda() && src.is_cuda() && dst.device() == src.device();
  if (one_device && (!cuda::is_simulated() || cuda_eager_generated()) && copy_on_device(dst, src)) return;
  if ((dst.is_cuda() || src.is_cuda()) && !cuda::is_simulated()) return copy_through_host(dst, src, non_blocking);
  if ((dst.is_cuda() || src.is_cuda()) && cuda::capturing((dst.is_cuda() ? dst : src).device().index)) {
    // The simulated device, as copy_through_host on a GPU: host data is a constant of the graph (copied now, and
    // into the device at every replay); a read of device memory by the host cannot be captured.
    int index = (dst.is_cuda() ? dst : src).device().index;
    if (!src.is_cpu() || dst.is_cpu()) cuda::require_not_capturing(index, "a copy through the host");
    Tensor staged = empty_from_meta(dense_meta(src.sizes(), src.dtype(), kCPU));
    copy_strided(staged, src);
    cuda::record_simulated(index, [dst, staged] { copy_strided(dst, staged); });
    return;
  }
  if (may_overlap(dst, src) && !(dst.is_same(src))) {
    bool same_view = dst.storage_offset().hint() == src.storage_offset().hint() &&
                     dst.strides().hints() == src.strides().hints() && dst.sizes().hints() == src.sizes().hints() &&
                     dst.dtype() == src.dtype();
    if (same_view) return;
    Tensor tmp = empty_from_meta(dense_meta(src.sizes(), src.dtype(), src.device()));
    copy_strided(tmp, src);
    copy_strided(dst, tmp);
    return;
  }
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
      dst.sizes().hints() == src.sizes().hints()) {
    char* d = static_cast<char*>(dst.data_ptr());
    const char* s = static_cast<const char*>(src.data_ptr());
    int64_t bytes = n * static_cast<int64_t>(dst.element_size());
    parallel_for(0, bytes, 1 << 20, [&](int64_t b, int64_t e) { std::memcpy(d + b, s + b, e - b); });
    return;
  }
  Layout l = coalesce(dst.sizes().hints(), dst.strides().hints(), broadcast_strides(src, dst.sizes()));
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < l.sizes.size(); ++d) rows *= l.sizes[d];
  int64_t grain = std::max<int64_t>(1, kGrainElementwise / l.sizes.back());
  visit_dtype(dst.dtype(), [&]<class D>() {
    visit_dtype(src.dtype(), [&]<class S>() {
      D* d = dst.data_ptr<D>();
      const S* s = src.data_ptr<S>();
      parallel_for(0, rows, grain, [&](int64_t b, int64_t e) { copy_loop(d, s, l, b, e); });
    });
  });
}

void fill_strided(const Tensor& dst, const Scalar& value) {
  if (dst.numel().hint() == 0) return;
  Layout l = coalesce(dst.sizes().hints(), dst.strides().hints(), std::vector<int64_t>(dst.dim(), 0));
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < l.sizes.size(); ++d) rows *= l.sizes[d];
  int64_t grain = std::max<int64_t>(1, kGrainElementwise / l.sizes.back());
  visit_dtype(dst.dtype(), [&]<class D>() {
    D v = value.is_floating() ? cast_to<D>(value.to_double())
          : value.is_bool()   ? cast_to<D>(value.to_bool())
                              : cast_to<D>(value.to_int());
    D* d = dst.data_ptr<D>();
    parallel_for(0, rows, grain, [&](int64_t b, int64_t e) { copy_loop(d, &v, l, b, e); });
  });
}

}  // namespace sinter
