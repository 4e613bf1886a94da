// The index family's loop planning and whole-tensor helpers: strided copies (with dtype conversion), fills,
// index bounds checks and layout tests. The per-element work is in index_loop.h's templates.
#include "ops/index_loop.h"

#include <atomic>
#include <climits>
#include <cstdlib>

#include "ops/shape_util.h"

namespace sinter {

LoopPlan plan_loop(const IndexLoop& loop) {
  LoopPlan p;
  const size_t nops = 2 + loop.indices.size();
  auto stride_of = [&](size_t op, size_t d) -> int64_t {
    if (op == 0) return loop.dst_strides[d];
    if (op == 1) return loop.src_strides[d];
    return loop.indices[op - 2].strides[d];
  };
  auto is_serial = [&](size_t d) -> uint8_t { return loop.serial.empty() ? 0 : loop.serial[d]; };

  p.numel = 1;
  for (int64_t s : loop.sizes) p.numel *= s;
  if (p.numel == 0) return p;

  // Drop size-1 dims and merge neighbours that step through memory as one dim would (for every operand), so a
  // contiguous copy becomes one long row. Serial and parallel dims never merge.
  p.strides.assign(nops, {});
  std::vector<uint8_t> serial;
  for (size_t d = 0; d < loop.sizes.size(); ++d) {
    const int64_t size = loop.sizes[d];
    if (size == 1) continue;
    bool merge = !p.sizes.empty() && serial.back() == is_serial(d);
    for (size_t op = 0; merge && op < nops; ++op) merge = p.strides[op].back() == stride_of(op, d) * size;
    if (merge) {
      p.sizes.back() *= size;
      for (size_t op = 0; op < nops; ++op) p.strides[op].back() = stride_of(op, d);
    } else {
      p.sizes.push_back(size);
      serial.push_back(is_serial(d));
      for (size_t op = 0; op < nops; ++op) p.strides[op].push_back(stride_of(op, d));
    }
  }
  if (p.sizes.empty()) {
    p.sizes.push_back(1);
    serial.push_back(0);
    for (auto& s : p.strides) s.push_back(0);
  }
  const int64_t nd = p.ndim = static_cast<int64_t>(p.sizes.size());

  // Units split only the leading parallel dims (and the innermost dim when it is parallel): everything a unit
  // does to one dst element then happens on one thread, in row-major order.
  bool any_serial = false;
  for (uint8_t s : serial) any_serial |= s != 0;
  p.lead = 0;
  if (!any_serial) {
    p.lead = nd - 1;
  } else {
    while (p.lead < nd - 1 && !serial[p.lead]) ++p.lead;
  }
  int64_t outer = 1;
  for (int64_t d = 0; d < p.lead; ++d) outer *= p.sizes[d];
  p.middle = 1;
  for (int64_t d = p.lead; d < nd - 1; ++d) p.middle *= p.sizes[d];
  p.inner = p.sizes[nd - 1];
  if (serial[nd - 1]) {
    p.chunk = p.inner;
  } else {
    // Enough units to keep every thread busy, each a run of at least 512 elements (or of 16 per row when a unit
    // walks many rows, as the columns of a scatter_add over dim 0 do).
    const int64_t want = 4 * static_cast<int64_t>(get_num_threads());
    const int64_t pieces = std::max<int64_t>(1, (want + outer - 1) / outer);
    const int64_t min_chunk = std::max<int64_t>(16, 512 / p.middle);
    p.chunk = std::clamp<int64_t>((p.inner + pieces - 1) / pieces, min_chunk, 16384);
    p.chunk = std::min(p.chunk, p.inner);
  }
  p.chunks = (p.inner + p.chunk - 1) / p.chunk;
  p.units = outer * p.chunks;
  p.grain = std::max<int64_t>(1, loop.grain / std::max<int64_t>(1, p.middle * p.chunk));
  for (size_t k = 0; k < loop.indices.size(); ++k) p.indices_vary_inner |= p.strides[2 + k][nd - 1] != 0;
  return p;
}

void LoopCursor::start_unit(int64_t outer, int64_t inner_begin) {
  const int64_t nd = plan_.ndim;
  for (int64_t d = plan_.lead - 1; d >= 0; --d) {
    coords_[d] = outer % plan_.sizes[d];
    outer /= plan_.sizes[d];
  }
  for (int64_t d = plan_.lead; d < nd; ++d) coords_[d] = 0;
  for (size_t op = 0; op < offsets_.size(); ++op) {
    const std::vector<int64_t>& st = plan_.strides[op];
    int64_t off = inner_begin * st[nd - 1];
    for (int64_t d = 0; d < plan_.lead; ++d) off += coords_[d] * st[d];
    base_[op] = offsets_[op] = off;
  }
}

void LoopCursor::next_unit() {
  for (int64_t d = plan_.lead - 1; d >= 0; --d) {
    ++coords_[d];
    for (size_t op = 0; op < base_.size(); ++op) base_[op] += plan_.strides[op][d];
    if (coords_[d] < plan_.sizes[d]) break;
    coords_[d] = 0;
    for (size_t op = 0; op < base_.size(); ++op) base_[op] -= plan_.strides[op][d] * plan_.sizes[d];
  }
  for (int64_t d = plan_.lead; d < plan_.ndim; ++d) coords_[d] = 0;
  offsets_ = base_;
}

void LoopCursor::next_row() {
  for (int64_t d = plan_.ndim - 2; d >= plan_.lead; --d) {
    ++coords_[d];
    for (size_t op = 0; op < offsets_.size(); ++op) offsets_[op] += plan_.strides[op][d];
    if (coords_[d] < plan_.sizes[d]) return;
    coords_[d] = 0;
    for (size_t op = 0; op < offsets_.size(); ++op) offsets_[op] -= plan_.strides[op][d] * plan_.sizes[d];
  }
}

std::vector<int64_t> size_hints(const Tensor& t) {
  std::vector<int64_t> out;
  out.reserve(t.dim());
  for (const SymInt& s : t.sizes()) out.push_back(s.hint());
  return out;
}

StridedRef strided_ref(const Tensor& t) {
  StridedRef r;
  r.dtype = t.dtype();
  r.sizes = size_hints(t);
  const int64_t es = static_cast<int64_t>(t.element_size());
  for (const SymInt& s : t.strides()) r.strides.push_back(s.hint() * es);
  r.data = static_cast<char*>(t.data_ptr());
  return r;
}

StridedRef nonempty_ref(const Tensor& t) {
  StridedRef r = strided_ref(t);
  if (r.sizes.empty()) {
    r.sizes = {1};
    r.strides = {0};
  }
  return r;
}

IndexOperand index_operand(const Tensor& index, int64_t step, int64_t size, bool allow_negative) {
  IndexOperand op;
  op.data = index.data_ptr();
  op.is_int32 = index.dtype() == kInt32;
  for (const SymInt& s : index.strides()) op.strides.push_back(s.hint());
  if (op.strides.empty()) op.strides.push_back(0);
  op.step = step;
  op.size = size;
  op.allow_negative = allow_negative;
  return op;
}

namespace {

// A copy whose src is contiguous along some dim k while dst's innermost dim reads src with a large stride (a
// transposed input) would touch a new src cache line per element. Cut into 32 x 32 tiles of (k, innermost), the
// 32 src lines of a tile stay in cache while the tile is written. Returns the loops to run (full tiles, then the
// two remainder slabs), or nothing when the copy does not look like that.
std::vector<IndexLoop> tile_transposed(const IndexLoop& loop, int64_t dst_es, int64_t src_es) {
  constexpr int64_t kTile = 32;
  const int64_t nd = static_cast<int64_t>(loop.sizes.size());
  const std::vector<int64_t>&sz = loop.sizes, &ds = loop.dst_strides, &ss = loop.src_strides;
  int64_t i = nd - 1;
  while (i >= 0 && sz[i] == 1) --i;
  if (i < 0 || sz[i] < kTile || std::abs(ds[i]) != dst_es || std::abs(ss[i]) < 16 * src_es) return {};
  int64_t k = -1;
  for (int64_t d = 0; d < nd && k < 0; ++d)
    if (d != i && sz[d] >= kTile && std::abs(ss[d]) == src_es) k = d;
  if (k < 0) return {};
  const int64_t fk = sz[k] / kTile * kTile, fi = sz[i] / kTile * kTile;
  std::vector<IndexLoop> out;
  IndexLoop tiles;
  tiles.dst = loop.dst;
  tiles.src = loop.src;
  auto add = [&](int64_t size, int64_t dstride, int64_t sstride) {
    tiles.sizes.push_back(size);
    tiles.dst_strides.push_back(dstride);
    tiles.src_strides.push_back(sstride);
  };
  for (int64_t d = 0; d < nd; ++d)
    if (d != k && d != i) add(sz[d], ds[d], ss[d]);
  add(fk / kTile, kTile * ds[k], kTile * ss[k]);
  add(fi / kTile, kTile * ds[i], kTile * ss[i]);
  add(kTile, ds[k], ss[k]);
  add(kTile, ds[i], ss[i]);
  out.push_back(std::move(tiles));
  if (fk < sz[k]) {  // the last rows of k, every column
    IndexLoop r = loop;
    r.sizes[k] = sz[k] - fk;
    r.dst += fk * ds[k];
    r.src += fk * ss[k];
    out.push_back(std::move(r));
  }
  if (fi < sz[i]) {  // the last columns, for the tiled rows
    IndexLoop r = loop;
    r.sizes[k] = fk;
    r.sizes[i] = sz[i] - fi;
    r.dst += fi * ds[i];
    r.src += fi * ss[i];
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

IndexLoop copy_loop(const CopyJob& job) {
  SINTER_INTERNAL_ASSERT(job.dst.sizes == job.src.sizes, "copy_refs: sizes differ");
  IndexLoop loop;
  loop.sizes = job.dst.sizes;
  loop.dst = job.dst.data;
  loop.dst_strides = job.dst.strides;
  loop.src = job.src.data;
  loop.src_strides = job.src.strides;
  return loop;
}

void copy_refs(const std::vector<CopyJob>& jobs) {
  std::vector<bool> done(jobs.size(), false);
  for (size_t first = 0; first < jobs.size(); ++first) {
    if (done[first]) continue;
    // Jobs of one (dst, src) dtype pair share a row functor and so one parallel region.
    const DType to = jobs[first].dst.dtype, from = jobs[first].src.dtype;
    std::vector<IndexLoop> loops;
    for (size_t j = first; j < jobs.size(); ++j) {
      if (done[j] || jobs[j].dst.dtype != to || jobs[j].src.dtype != from) continue;
      done[j] = true;
      IndexLoop loop = copy_loop(jobs[j]);
      std::vector<IndexLoop> tiles = tile_transposed(loop, static_cast<int64_t>(element_size(to)),
                                                     static_cast<int64_t>(element_size(from)));
      if (tiles.empty()) loops.push_back(std::move(loop));
      for (IndexLoop& t : tiles) loops.push_back(std::move(t));
    }
    if (to == from) {
      visit_element_size(element_size(to), [&]<class E>() { run_index_loops(loops.data(), loops.size(), CopyRow<E>{}); });
    } else {
      // A mixed-dtype copy (cat of promoted inputs) converts row by row.
      run_index_loops(loops.data(), loops.size(), [to, from](char* d, int64_t ds, const char* s, int64_t ss, int64_t n) {
        loops::convert(s, ss, from, d, ds, to, n);
      });
    }
  }
}

void fill_ref(const StridedRef& dst, const void* value) {
  StridedRef src{static_cast<char*>(const_cast<void*>(value)), dst.sizes, std::vector<int64_t>(dst.sizes.size(), 0),
                 dst.dtype};
  copy_refs({{dst, src}});
}

ElementBytes scalar_to_element(const Scalar& value, DType dtype) {
  ElementBytes out;
  visit_dtype(dtype, [&]<class T>() {
    T v;
    if (value.is_floating()) v = cast_to<T>(value.to_double());
    else if (value.is_bool()) v = cast_to<T>(value.to_bool());
    else v = cast_to<T>(value.to_int());
    std::memcpy(out.bytes, &v, sizeof(T));
  });
  return out;
}

void check_index_values(const Tensor& index, int64_t size, int64_t dim, bool allow_negative) {
  const int64_t lo = allow_negative ? -size : 0, hi = size;
  StridedRef r = strided_ref(index);
  IndexLoop loop;
  loop.sizes = r.sizes;
  loop.src = r.data;
  loop.src_strides = r.strides;
  loop.dst_strides.assign(r.sizes.size(), 0);
  loop.grain = 1 << 18;  // a min/max pass is cheap: waking the pool only pays off for long indices
  auto scan = [&]<class I>() {
    // A parallel min/max pass finds whether anything is out of range; only then a serial pass finds the first
    // bad value in row-major order, so the message does not depend on thread timing.
    std::atomic<bool> bad{false};
    run_index_loop(loop, [&](char*, int64_t, const char* s, int64_t ss, int64_t n) {
      int64_t mn = INT64_MAX, mx = INT64_MIN;
      if (ss == sizeof(I)) {
        const I* p = reinterpret_cast<const I*>(s);
        for (int64_t i = 0; i < n; ++i) {
          mn = std::min<int64_t>(mn, p[i]);
          mx = std::max<int64_t>(mx, p[i]);
        }
      } else {
        for (int64_t i = 0; i < n; ++i) {
          const int64_t v = *reinterpret_cast<const I*>(s + i * ss);
          mn = std::min(mn, v);
          mx = std::max(mx, v);
        }
      }
      if (mn < lo || mx >= hi) bad.store(true, std::memory_order_relaxed);
    });
    if (!bad.load()) return;
    const int64_t nd = static_cast<int64_t>(r.sizes.size()), es = sizeof(I);
    std::vector<int64_t> elem_strides;
    int64_t numel = 1;
    for (int64_t d = 0; d < nd; ++d) {
      elem_strides.push_back(r.strides[d] / es);
      numel *= r.sizes[d];
    }
    const I* base = reinterpret_cast<const I*>(r.data);
    for (int64_t i = 0; i < numel; ++i) {
      const int64_t v = base[offset_of(i, r.sizes.data(), elem_strides.data(), nd)];
      SINTER_CHECK(v >= lo && v < hi, "index {} is out of bounds for dimension {} with size {}", v, dim, size);
    }
  };
  if (index.dtype() == kInt32) scan.template operator()<int32_t>();
  else scan.template operator()<int64_t>();
}

void check_no_internal_overlap(const Tensor& self) {
  if (self.numel().hint() == 0) return;  // no elements, nothing shared
  for (int64_t d = 0; d < self.dim(); ++d) {
    SINTER_CHECK(self.sizes()[d].hint() <= 1 || self.strides()[d].hint() != 0,
                 "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                 "location. Please clone() the tensor before performing the operation.");
  }
}

Tensor contiguous_copy(const Tensor& t) {
  Tensor out = empty_from_meta(dense_meta(t.sizes(), t.dtype(), t.device()));
  copy_tensor(out, t);
  return out;
}

bool strides_like_channels_last(const Tensor& t) {
  if (t.dim() != 4) return false;
  const std::vector<int64_t> sizes = size_hints(t);
  std::vector<int64_t> strides;
  for (const SymInt& s : t.strides()) strides.push_back(s.hint());
  if (strides[1] == 0) return false;  // a trivial C dim: default to NCHW
  int64_t min = 0;
  for (int d : {1, 3, 2, 0}) {
    if (sizes[d] == 0) return false;
    if (strides[d] < min) return false;
    // N111 tensors (or N11W sliced on W) are ambiguous; PyTorch calls them contiguous.
    if (d == 0 && min == strides[1]) return false;
    min = strides[d];
    if (sizes[d] > 1) min *= sizes[d];
  }
  return true;
}

}  // namespace sinter
