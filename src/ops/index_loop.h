// The strided loop behind the index family's kernels: copy elements from src to dst over a loop shape, where
// index tensors may move the src pointer (gather, index_select, x[idx], pad's reflect tables) or the dst pointer
// (scatter, index_put). Plain strided copies (cat, flip, repeat) are the case with no index tensors.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/kernel_util.h"
#include "ops/loops.h"

namespace sinter {

// One index tensor of a loop: its value at each loop position times `step` moves the indexed pointer.
struct IndexOperand {
  const void* data = nullptr;    // int64_t or int32_t elements
  bool is_int32 = false;
  std::vector<int64_t> strides;  // in index elements, one per loop dim (0 where the index is broadcast)
  int64_t step = 0;              // bytes one index unit moves in the indexed tensor
  int64_t size = 0;              // extent of the indexed dim: values must lie in [0, size)
  bool allow_negative = true;    // negatives wrap by size (advanced indexing) rather than being out of range
};

struct IndexLoop {
  std::vector<int64_t> sizes;        // the loop shape
  char* dst = nullptr;
  std::vector<int64_t> dst_strides;  // bytes
  const char* src = nullptr;
  std::vector<int64_t> src_strides;  // bytes
  std::vector<IndexOperand> indices;
  bool index_dst = false;            // indices move dst (scatter) instead of src (gather)
  // Per loop dim: 1 when iterations that differ only in such dims may write the same dst element. Those dims
  // run in row-major order on one thread, which makes duplicate writes and accumulation deterministic.
  std::vector<uint8_t> serial;
  int64_t grain = kGrainElementwise;  // elements per parallel task, at least
};

// How a loop is split into units of work (built once per call, out of line).
struct LoopPlan {
  int64_t ndim = 0;
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides;  // [operand][dim]: dst, src, then each index
  int64_t lead = 0;                           // dims [0, lead) are split across units
  int64_t middle = 1;                         // rows per unit: the product of dims [lead, ndim - 1)
  int64_t inner = 1, chunk = 1, chunks = 1;   // the innermost dim, cut into chunks when it may be
  int64_t units = 0, grain = 1, numel = 0;
  bool indices_vary_inner = false;
};
LoopPlan plan_loop(const IndexLoop& loop);

// Where one unit's current row starts, per operand; advanced row by row over the middle dims.
class LoopCursor {
 public:
  explicit LoopCursor(const LoopPlan& plan)
      : plan_(plan), coords_(plan.ndim, 0), base_(plan.strides.size(), 0), offsets_(plan.strides.size(), 0) {}
  void start_unit(int64_t outer, int64_t inner_begin);
  // The next outer position after the current one (units whose inner chunk is the whole innermost dim).
  void next_unit();
  void next_row();
  int64_t offset(size_t operand) const { return offsets_[operand]; }

 private:
  const LoopPlan& plan_;
  std::vector<int64_t> coords_;
  std::vector<int64_t> base_;     // per operand: where the unit starts
  std::vector<int64_t> offsets_;  // per operand: where the current row starts
};

namespace detail {

// An index value at `pos`, wrapped when negatives are allowed; false when it is out of range.
inline bool load_index(const IndexOperand& op, int64_t pos, int64_t& v) {
  v = op.is_int32 ? static_cast<const int32_t*>(op.data)[pos] : static_cast<const int64_t*>(op.data)[pos];
  if (v < 0 && op.allow_negative) v += op.size;
  return static_cast<uint64_t>(v) < static_cast<uint64_t>(op.size);
}

// One element: the row functor's `one` when it has one (no stride checks), else a row of length 1.
template <class Row>
inline void one_element(Row& row, char* d, const char* s) {
  if constexpr (requires { row.one(d, s); }) row.one(d, s);
  else row(d, 0, s, 0, 1);
}

// A row along which the (single) index varies, as gather along its last dim or x[:, idx] has: typed on the
// index and on which pointer it moves, so the loop has no per-element branches besides the range check.
template <bool kIndexDst, class Idx, class Row>
bool single_index_row(const Idx* ip, int64_t istep, const IndexOperand& op, char* d, int64_t ds, const char* s,
                      int64_t ss, int64_t len, Row& row) {
  const int64_t size = op.size, step = op.step;
  const bool wrap = op.allow_negative;
  bool ok = true;
  for (int64_t j = 0; j < len; ++j) {
    int64_t v = ip[j * istep];
    if (v < 0 && wrap) v += size;
    if (static_cast<uint64_t>(v) >= static_cast<uint64_t>(size)) [[unlikely]] {
      ok = false;
      continue;
    }
    if constexpr (kIndexDst) one_element(row, d + j * ds + v * step, s + j * ss);
    else one_element(row, d + j * ds, s + j * ss + v * step);
  }
  return ok;
}

// Where the cursor's row starts once its indices are applied; false when an index is out of range.
inline bool locate_row(const IndexLoop& loop, const LoopCursor& cur, char*& d, const char*& s) {
  d = loop.dst + cur.offset(0);
  s = loop.src + cur.offset(1);
  int64_t add = 0, v = 0;
  for (size_t k = 0; k < loop.indices.size(); ++k) {
    if (!load_index(loop.indices[k], cur.offset(2 + k), v)) return false;
    add += v * loop.indices[k].step;
  }
  if (loop.index_dst) d += add; else s += add;
  return true;
}

// Whole rows picked by an index, one per unit (index_select, x[idx], embedding lookups): each row's address is
// found one row ahead and its first cache lines prefetched, so the random read overlaps the current row's copy.
template <class Row>
bool gathered_rows(const LoopPlan& plan, const IndexLoop& loop, int64_t ub, int64_t ue, Row& row) {
  const int64_t nd = plan.ndim, len = plan.inner;
  const int64_t dst_step = plan.strides[0][nd - 1], src_step = plan.strides[1][nd - 1];
  const int64_t read_step = loop.index_dst ? dst_step : src_step;
  const int64_t prefetch_bytes = read_step > 0 ? std::min<int64_t>(512, len * read_step) : 0;
  bool ok = true;
  LoopCursor cur(plan);
  cur.start_unit(ub, 0);
  char* d;
  const char* s;
  bool have = locate_row(loop, cur, d, s);
  for (int64_t u = ub; u < ue; ++u) {
    char* next_d = nullptr;
    const char* next_s = nullptr;
    bool next_have = false;
    if (u + 1 < ue) {
      cur.next_unit();
      next_have = locate_row(loop, cur, next_d, next_s);
      const char* p = loop.index_dst ? next_d : next_s;
      if (next_have)
        for (int64_t b = 0; b < prefetch_bytes; b += 64) __builtin_prefetch(p + b);
    }
    if (have) row(d, dst_step, s, src_step, len);
    else ok = false;
    d = next_d;
    s = next_s;
    have = next_have;
  }
  return ok;
}

// Units [ub, ue) of one planned loop; false when some index was out of range (those elements are skipped).
template <class Row>
bool run_units(const LoopPlan& plan, const IndexLoop& loop, int64_t ub, int64_t ue, Row& row) {
  const int64_t nd = plan.ndim, k_count = static_cast<int64_t>(loop.indices.size());
  if (k_count > 0 && !plan.indices_vary_inner && plan.middle == 1 && plan.chunks == 1)
    return gathered_rows(plan, loop, ub, ue, row);
  const int64_t dst_step = plan.strides[0][nd - 1], src_step = plan.strides[1][nd - 1];
  bool ok = true;
  LoopCursor cur(plan);
  for (int64_t u = ub; u < ue; ++u) {
    const int64_t c = u % plan.chunks, i0 = c * plan.chunk, len = std::min(plan.chunk, plan.inner - i0);
    // Consecutive whole-row units step their coordinates instead of dividing them out again.
    if (u > ub && plan.chunks == 1) cur.next_unit();
    else cur.start_unit(u / plan.chunks, i0);
    for (int64_t r = 0; r < plan.middle; ++r) {
      if (r > 0) cur.next_row();
      char* d = loop.dst + cur.offset(0);
      const char* s = loop.src + cur.offset(1);
      if (!plan.indices_vary_inner) {
        if (!locate_row(loop, cur, d, s)) [[unlikely]] {
          ok = false;
          continue;
        }
        row(d, dst_step, s, src_step, len);
      } else if (k_count == 1) {
        const IndexOperand& op = loop.indices[0];
        const int64_t istep = plan.strides[2][nd - 1], at = cur.offset(2);
        auto run = [&]<class Idx>(const Idx* ip) {
          return loop.index_dst ? single_index_row<true>(ip + at, istep, op, d, dst_step, s, src_step, len, row)
                                : single_index_row<false>(ip + at, istep, op, d, dst_step, s, src_step, len, row);
        };
        ok &= op.is_int32 ? run(static_cast<const int32_t*>(op.data)) : run(static_cast<const int64_t*>(op.data));
      } else {
        for (int64_t j = 0; j < len; ++j) {
          int64_t add = 0, v = 0;
          bool elem_ok = true;
          for (int64_t k = 0; k < k_count; ++k) {
            elem_ok = elem_ok && load_index(loop.indices[k], cur.offset(2 + k) + j * plan.strides[2 + k][nd - 1], v);
            add += v * loop.indices[k].step;
          }
          if (!elem_ok) [[unlikely]] {
            ok = false;
            continue;
          }
          char* dj = d + j * dst_step;
          const char* sj = s + j * src_step;
          if (loop.index_dst) dj += add; else sj += add;
          one_element(row, dj, sj);
        }
      }
    }
  }
  return ok;
}

}  // namespace detail

// Runs `row(dst, dst_step, src, src_step, n)` over every row segment of each loop, all in one parallel region
// (splitting only where run_units may). Steps are in bytes. Rows whose index values vary along the innermost dim
// go element by element (through `row.one(dst, src)` when the functor has it). Elements whose index is out of
// range are skipped and the result is false: callers that did not check the indices first then report them
// with check_index_values, whose message names the first bad value in row-major order.
template <class Row>
bool run_index_loops(const IndexLoop* loops, size_t count, Row&& row) {
  std::vector<LoopPlan> plans;
  std::vector<int64_t> first_unit{0};
  int64_t numel = 0;
  for (size_t i = 0; i < count; ++i) {
    plans.push_back(plan_loop(loops[i]));
    first_unit.push_back(first_unit.back() + plans.back().units);
    numel += plans.back().numel;
  }
  const int64_t units = first_unit.back();
  if (units == 0) return true;
  const int64_t per_unit = std::max<int64_t>(1, numel / units);
  const int64_t grain = count == 1 ? plans[0].grain : std::max<int64_t>(1, loops[0].grain / per_unit);
  std::atomic<bool> ok{true};
  parallel_for(0, units, grain, [&](int64_t ub, int64_t ue) {
    bool local = true;
    for (size_t i = 0; i < count; ++i) {
      const int64_t b = std::max(ub, first_unit[i]), e = std::min(ue, first_unit[i + 1]);
      if (b < e) local &= detail::run_units(plans[i], loops[i], b - first_unit[i], e - first_unit[i], row);
    }
    if (!local) ok.store(false, std::memory_order_relaxed);
  });
  return ok.load();
}
template <class Row>
bool run_index_loop(const IndexLoop& loop, Row&& row) {
  return run_index_loops(&loop, 1, row);
}

// ---- row functors ----

// Moves elements of E's size without looking at them (every dtype's copy is a byte copy). Steps are whole
// elements (byte strides of tensors of this element size), so typed loops that g++ vectorizes do the work.
template <class E>
struct CopyRow {
  void operator()(char* d, int64_t ds, const char* s, int64_t ss, int64_t n) const {
    constexpr int64_t es = sizeof(E);
    if (ds == es && ss == es) {
      std::memcpy(d, s, n * es);
      return;
    }
    E* dp = reinterpret_cast<E*>(d);
    const E* sp = reinterpret_cast<const E*>(s);
    const int64_t dst = ds / es, sst = ss / es;
    if (sst == 0) {
      const E v = *sp;
      if (dst == 1) for (int64_t i = 0; i < n; ++i) dp[i] = v;
      else for (int64_t i = 0; i < n; ++i) dp[i * dst] = v;
    } else if (dst == 1) {
      for (int64_t i = 0; i < n; ++i) dp[i] = sp[i * sst];
    } else {
      for (int64_t i = 0; i < n; ++i) dp[i * dst] = sp[i * sst];
    }
  }
  void one(char* d, const char* s) const { std::memcpy(d, s, sizeof(E)); }
};

// dst += src in T's op-math type, rounded once per write (scatter_add, index_put with accumulate).
template <class T>
struct AddRow {
  using M = opmath_t<T>;
  void operator()(char* d, int64_t ds, const char* s, int64_t ss, int64_t n) const {
    T* dp = reinterpret_cast<T*>(d);
    const T* sp = reinterpret_cast<const T*>(s);
    constexpr int64_t es = sizeof(T);
    if (ds == es && ss == es) {
      for (int64_t i = 0; i < n; ++i) dp[i] = cast_to<T>(static_cast<M>(dp[i]) + static_cast<M>(sp[i]));
      return;
    }
    const int64_t dst = ds / es, sst = ss / es;
    for (int64_t i = 0; i < n; ++i) dp[i * dst] = cast_to<T>(static_cast<M>(dp[i * dst]) + static_cast<M>(sp[i * sst]));
  }
  void one(char* d, const char* s) const {
    T* dp = reinterpret_cast<T*>(d);
    *dp = cast_to<T>(static_cast<M>(*dp) + static_cast<M>(*reinterpret_cast<const T*>(s)));
  }
};

// Calls f.template operator()<E>() with E an unsigned integer type of `size` bytes.
template <class F>
decltype(auto) visit_element_size(size_t size, F&& f) {
  switch (size) {
    case 1: return f.template operator()<uint8_t>();
    case 2: return f.template operator()<uint16_t>();
    case 4: return f.template operator()<uint32_t>();
    case 8: return f.template operator()<uint64_t>();
  }
  throw InternalError("visit_element_size: bad size");
}

// ---- whole-tensor helpers ----

// A tensor's data as the loops see it: a byte pointer, sizes and byte strides.
struct StridedRef {
  char* data = nullptr;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // bytes
  DType dtype = kFloat32;
};
StridedRef strided_ref(const Tensor& t);
// The same, with a 0-dim tensor seen as [1] (PyTorch's ensure_nonempty_dim for gather/scatter/index_select).
StridedRef nonempty_ref(const Tensor& t);
std::vector<int64_t> size_hints(const Tensor& t);
// An int64/int32 index tensor as a loop operand over its own (nonempty) shape; `step` and `size` describe the
// indexed dim of the tensor it moves through.
IndexOperand index_operand(const Tensor& index, int64_t step, int64_t size, bool allow_negative);

// dst = src (same sizes), converting the dtype when they differ. A src with zero strides fills dst.
struct CopyJob {
  StridedRef dst, src;
};
// Runs all the copies in one parallel region (per pair of dtypes), so many small pieces cost one wake-up.
void copy_refs(const std::vector<CopyJob>& jobs);
inline void copy_ref(const StridedRef& dst, const StridedRef& src) { copy_refs({{dst, src}}); }
inline void copy_tensor(const Tensor& dst, const Tensor& src) { copy_ref(strided_ref(dst), strided_ref(src)); }
// Every element of dst = `value`, one element of dst's dtype in memory.
void fill_ref(const StridedRef& dst, const void* value);
// One element of `dtype` holding `value` (as PyTorch converts a Python number when it fills a tensor).
struct ElementBytes {
  alignas(8) char bytes[8] = {};
};
ElementBytes scalar_to_element(const Scalar& value, DType dtype);

// Throws "index 7 is out of bounds for dimension 0 with size 5" for the first value (row-major) outside
// [-size, size), or outside [0, size) when negatives are not allowed. `index` is int64 or int32.
void check_index_values(const Tensor& index, int64_t size, int64_t dim, bool allow_negative);
// In-place writes need distinct memory per element: PyTorch's error for an expanded (stride 0) self.
void check_no_internal_overlap(const Tensor& self);
// A dense, contiguous copy of `t` (for inputs that alias the tensor being written).
Tensor contiguous_copy(const Tensor& t);

// PyTorch's is_channels_last_strides_2d: whether a rank-4 tensor's strides order C fastest (so outputs keep
// channels-last, as cat and constant pad do in PyTorch).
bool strides_like_channels_last(const Tensor& t);

}  // namespace sinter
