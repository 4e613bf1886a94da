// The reduction engine: every dim reduction is brought to one canonical form, a contiguous block [O, R, I]
// reduced over R (I == 1: rows reduced along their contiguous length; I > 1: rows of I accumulated
// elementwise; very short rows or narrow columns are transposed in blocks first), then run in parallel over
// outputs, or over slices of R when outputs are few. Ops plug in as small structs (SumOp, ProdOp, ExtremeOp
// below).
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops/kernel_util.h"
#include "ops/loops.h"
#include "ops/reduce_math.h"
#include "ops/vec_math.h"
#include "sinter/tensor.h"

namespace sinter::reduce {

// Converts n elements of some dtype to the compute type C (null: the data already is C).
template <class C>
using LoadFn = void (*)(const void* src, C* dst, int64_t n);
// The dtype whose elements are C (uint8_t: kUInt8).
template <class C>
constexpr DType compute_dtype() {
  if constexpr (std::is_same_v<C, float>)
    return kFloat32;
  else if constexpr (std::is_same_v<C, double>)
    return kFloat64;
  else if constexpr (std::is_same_v<C, int64_t>)
    return kInt64;
  else
    return kUInt8;
}
// Compute types: float, double, int64_t, and uint8_t for truth values (all/any; bool and uint8 load directly,
// other dtypes as "nonzero").
template <class C>
LoadFn<C> load_fn(DType from);
// Converts n compute-type values to dtype `to` (null: `to` is V's own dtype, copy directly). V: float,
// double, int64_t.
template <class V>
using StoreFn = void (*)(const V* src, void* dst, int64_t n);
template <class V>
StoreFn<V> store_fn(DType to);

// Writes one row `y` of `len` computed values to `dst` (elements of `osz` bytes): converted by `store` when set,
// and with streaming stores when `stream` (through `obuf`, len * osz bytes, when also converting).
template <class V>
void write_row(void* dst, const V* y, int64_t len, int64_t osz, StoreFn<V> store, bool stream, char* obuf) {
  if (!stream) {
    if (store) store(y, dst, len);
    return;
  }
  const void* out = y;
  if (store) {
    store(y, obuf, len);
    out = obuf;
  }
  loops::stream_copy(dst, out, len * osz);
}

// The canonical form of one reduction. `data` points at a contiguous [O, R, I] block (the input itself when
// its layout allows, else a copy that `owner` keeps alive). Output q = o * I + i is produced in plan order;
// out_sizes/out_strides say where it lands in the dense output tensor.
struct ReducePlan {
  Tensor owner;
  const char* data = nullptr;
  DType dtype = kFloat32;
  int64_t O = 1, R = 1, I = 1;
  std::vector<int64_t> out_sizes, out_strides;
  bool out_identity = true;
  int64_t num_outputs() const { return O * I; }
};
// `mask[d]`: dim d is reduced. A 0-dim input is one element (R = 1).
ReducePlan make_plan(const Tensor& self, const std::vector<bool>& mask);
// The plan of a single-dim reduction that keeps index order along `dim` (arg reductions, scans, softmax):
// input made contiguous, O = sizes before dim, R = size of dim, I = sizes after; output identical in layout.
ReducePlan make_dim_plan(const Tensor& self, int64_t dim);

// Writes plan-ordered values into `out` (dense, any dtype), converting each element once.
template <class V>
void store_results(const V* vals, const ReducePlan& plan, const Tensor& out);

inline constexpr int64_t kChunk = 1024;  // elements converted at a time into a stack buffer
// Columns of I per task in the outer form: long contiguous segments of each row keep the hardware prefetcher
// streaming (short segments of rows far apart leave every load waiting on memory).
inline constexpr int64_t kTile = 8192;
inline constexpr int64_t kBlockRows = 64;   // rows summed into a partial before it joins the total (accuracy)
inline constexpr int64_t kSplit = 65536;    // reduced elements per task when there are too few outputs
inline constexpr int64_t kFewOutputs = 32;  // below this many tasks, slices of R run in parallel too
inline constexpr int64_t kSliceTasks = 64;  // slices of R aim at this many tasks in all (enough for 16+ threads)
inline constexpr int64_t kMinSliceRows = 16;  // partials stay at most 1/16 of the input (their traffic)
// Whether a reduction splits R depends only on shapes, so results do not change with the thread count.

// An op is a struct with: using C (compute element), Acc (accumulator); identity(); row(p, n, q): the
// reduction of a contiguous run for output q; rows(acc, p, n, q0): acc[j] (+)= f(p[j]) for outputs q0 + j;
// merge(a, b).
template <class Op>
typename Op::Acc reduce_run(const Op& op, const char* p, int64_t n, int64_t q, LoadFn<typename Op::C> load,
                            int64_t esz) {
  using C = typename Op::C;
  if (!load) return op.row(reinterpret_cast<const C*>(p), n, q);
  C buf[kChunk];
  typename Op::Acc acc = op.identity();
  for (int64_t k = 0; k < n; k += kChunk) {
    int64_t m = std::min(kChunk, n - k);
    load(p + k * esz, buf, m);
    acc = op.merge(acc, op.row(buf, m, q));
  }
  return acc;
}

// Ops whose rows4(acc, a, b, c, d, n, q0) folds four rows into acc at once (acc[j] (+)= (a[j] (+) b[j]) (+)
// (c[j] (+) d[j])): each accumulator is then loaded and stored once per four rows instead of once per row,
// which is what bounded a column sum (its loop was load/store bound, not memory bound). Only SumOp has it: the
// same for ExtremeOp measured slower (amax over dim 0 of [8192, 4096]: 5.1 -> 6.5 ms on one thread).
template <class Op>
concept HasRows4 = requires(const Op& op, typename Op::Acc* acc, const typename Op::C* p) {
  op.rows4(acc, p, p, p, p, int64_t{0}, int64_t{0});
};

// dst[0, w) (+)= rows [r0, r1) of width w starting at `first` (row stride in bytes), in blocks of kBlockRows.
template <class Op>
void accumulate_rows(const Op& op, typename Op::Acc* dst, const char* first, int64_t row_bytes, int64_t r0,
                     int64_t r1, int64_t w, int64_t q0, LoadFn<typename Op::C> load) {
  using C = typename Op::C;
  using Acc = typename Op::Acc;
  std::vector<Acc> part_buf(static_cast<size_t>(w));
  std::vector<C> conv(load ? static_cast<size_t>(w) : 0);
  Acc* part = part_buf.data();
  for (int64_t rb = r0; rb < r1; rb += kBlockRows) {
    int64_t re = std::min(r1, rb + kBlockRows);
    for (int64_t j = 0; j < w; ++j) part[j] = op.identity();
    int64_t r = rb;
    if constexpr (HasRows4<Op>) {
      if (!load) {
        for (; r + 4 <= re; r += 4) {
          const char* p = first + r * row_bytes;
          op.rows4(part, reinterpret_cast<const C*>(p), reinterpret_cast<const C*>(p + row_bytes),
                   reinterpret_cast<const C*>(p + 2 * row_bytes), reinterpret_cast<const C*>(p + 3 * row_bytes), w,
                   q0);
        }
      }
    }
    for (; r < re; ++r) {
      const char* p = first + r * row_bytes;
      if (load) {
        load(p, conv.data(), w);
        op.rows(part, conv.data(), w, q0);
      } else {
        op.rows(part, reinterpret_cast<const C*>(p), w, q0);
      }
    }
    for (int64_t j = 0; j < w; ++j) dst[j] = op.merge(dst[j], part[j]);
  }
}

// Copies a contiguous block of `rows` x `cols` elements (of the plan's dtype) into dst as C, transposed:
// dst[c * rows + r] = src[r * cols + c]. Lets very short rows be reduced as long columns and the reverse.
// `tmp` (rows * cols) holds the converted block when `load` is given.
template <class C>
void load_transposed(const char* src, int64_t rows, int64_t cols, LoadFn<C> load, C* tmp, C* dst) {
  const C* x = reinterpret_cast<const C*>(src);
  if (load) {
    load(src, tmp, rows * cols);
    x = tmp;
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = x[r * cols + c];
}

// Reductions whose contiguous extent (R when I == 1, I otherwise) is below this are transposed in blocks of
// about kBlockElems elements, so the work per call of op.row/op.rows is long instead of a few elements.
inline constexpr int64_t kShort = 32;
inline constexpr int64_t kBlockElems = 8192;

// Runs `op` over the plan into res[0, O * I), one accumulator per output in plan order.
template <class Op>
void run_into(const Op& op, const ReducePlan& plan, typename Op::Acc* res) {
  using C = typename Op::C;
  using Acc = typename Op::Acc;
  const int64_t O = plan.O, R = plan.R, I = plan.I, nout = O * I;
  std::fill_n(res, nout, op.identity());
  if (nout == 0 || R == 0) return;
  const LoadFn<C> load = load_fn<C>(plan.dtype);
  const int64_t esz = static_cast<int64_t>(element_size(plan.dtype));
  const char* base = plan.data;

  if (I == 1 && R < kShort) {
    // Many short rows: blocks of B rows become R rows of B, accumulated elementwise.
    const int64_t B = std::max<int64_t>(1, kBlockElems / R), nblocks = (O + B - 1) / B;
    parallel_for(0, nblocks, std::max<int64_t>(1, kGrainElementwise / kBlockElems),
                 [&](int64_t b, int64_t e) {
                   std::vector<C> tmp(load ? static_cast<size_t>(B * R) : 0), buf(static_cast<size_t>(B * R));
                   for (int64_t blk = b; blk < e; ++blk) {
                     const int64_t o0 = blk * B, nb = std::min(B, O - o0);
                     load_transposed(base + o0 * R * esz, nb, R, load, tmp.data(), buf.data());
                     for (int64_t r = 0; r < R; ++r) op.rows(res + o0, buf.data() + r * nb, nb, o0);
                   }
                 });
    return;
  }
  if (I == 1) {
    if (O >= kFewOutputs || R <= kSplit) {
      int64_t grain = std::max<int64_t>(1, kGrainElementwise / R);
      parallel_for(0, O, grain, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) res[o] = reduce_run(op, base + o * R * esz, R, o, load, esz);
      });
      return;
    }
    const int64_t nc = (R + kSplit - 1) / kSplit;
    std::vector<Acc> part(static_cast<size_t>(O * nc));
    parallel_for(0, O * nc, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t o = t / nc, r0 = (t % nc) * kSplit, r1 = std::min(R, r0 + kSplit);
        part[t] = reduce_run(op, base + (o * R + r0) * esz, r1 - r0, o, load, esz);
      }
    });
    for (int64_t o = 0; o < O; ++o)
      for (int64_t c = 0; c < nc; ++c) res[o] = op.merge(res[o], part[o * nc + c]);
    return;
  }

  // Rows of I: tiles of columns accumulate rows elementwise. Narrow rows (I < kShort) are transposed a block
  // of rows at a time instead, so each column is reduced as one contiguous run.
  const bool narrow = I < kShort;
  const int64_t ntile = narrow ? 1 : (I + kTile - 1) / kTile, tasks = O * ntile, row_bytes = I * esz;
  auto task = [&](Acc* dst, int64_t t, int64_t r0, int64_t r1) {
    const int64_t o = t / ntile;
    if (!narrow) {
      const int64_t i0 = (t % ntile) * kTile, w = std::min(kTile, I - i0);
      accumulate_rows(op, dst + o * I + i0, base + (o * R * I + i0) * esz, row_bytes, r0, r1, w, o * I + i0,
                      load);
      return;
    }
    const int64_t rb = std::max<int64_t>(1, kBlockElems / I);
    std::vector<C> tmp(load ? static_cast<size_t>(rb * I) : 0), buf(static_cast<size_t>(rb * I));
    for (int64_t r = r0; r < r1; r += rb) {
      const int64_t nr = std::min(rb, r1 - r);
      load_transposed(base + (o * R + r) * row_bytes, nr, I, load, tmp.data(), buf.data());
      for (int64_t i = 0; i < I; ++i)
        dst[o * I + i] = op.merge(dst[o * I + i], op.row(buf.data() + i * nr, nr, o * I + i));
    }
  };
  const int64_t max_slices = std::min({(int64_t{1} << 22) / nout, (kSliceTasks + tasks - 1) / tasks,
                                       R / kMinSliceRows});
  if (tasks >= kFewOutputs || R * I <= 2 * kSplit || max_slices < 2) {
    int64_t grain = std::max<int64_t>(1, kGrainElementwise / (R * std::min(I, kTile)));
    parallel_for(0, tasks, grain, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) task(res, t, 0, R);
    });
    return;
  }
  // Few outputs (a column sum of a tall matrix): R is cut into nc slices, each task accumulates its slice into
  // a private partial, and the partials are merged in slice order. The cut depends only on the shape, so the
  // result is the same for any thread count. Slices hold at least kSplit elements, at most 4M partial
  // accumulators exist in all, and about kSliceTasks tasks run.
  const int64_t rows_per = std::max(kSplit / std::min(I, kTile), (R + max_slices - 1) / max_slices);
  const int64_t nc = (R + rows_per - 1) / rows_per;
  // Not value-initialized: each task sets its own part (in parallel) before accumulating into it.
  std::unique_ptr<Acc[]> part(new Acc[static_cast<size_t>(nc * nout)]);
  parallel_for(0, nc * tasks, 1, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t c = u / tasks, t = u % tasks, r0 = c * rows_per, o = t / ntile;
      const int64_t i0 = narrow ? 0 : (t % ntile) * kTile, w = narrow ? I : std::min(kTile, I - i0);
      Acc* dst = part.get() + c * nout;
      std::fill_n(dst + o * I + i0, w, op.identity());
      task(dst, t, r0, std::min(R, r0 + rows_per));
    }
  });
  parallel_for(0, nout, std::max<int64_t>(1, kGrainElementwise / nc), [&](int64_t b, int64_t e) {
    for (int64_t c = 0; c < nc; ++c)
      for (int64_t q = b; q < e; ++q) res[q] = op.merge(res[q], part[c * nout + q]);
  });
}

// Runs `op` over the plan; returns one accumulator per output, in plan order.
template <class Op>
std::vector<typename Op::Acc> run(const Op& op, const ReducePlan& plan) {
  std::vector<typename Op::Acc> out(static_cast<size_t>(plan.num_outputs()));
  run_into(op, plan, out.data());
  return out;
}

// Runs `op` and writes finish(acc, q) to `out`: in place in out's memory when it already holds accumulators
// in plan order (the common float32 case: no buffer, no second pass over a large output), else through a
// buffer.
template <class Op, class Finish>
void reduce_to(const Op& op, const ReducePlan& plan, const Tensor& out, Finish finish) {
  using Acc = typename Op::Acc;
  using V = decltype(finish(std::declval<Acc>(), int64_t{0}));
  const int64_t n = plan.num_outputs();
  if constexpr (std::is_same_v<Acc, V>) {
    if (plan.out_identity && out.dtype() == compute_dtype<V>()) {
      V* p = out.data_ptr<V>();
      run_into(op, plan, p);
      parallel_for(0, n, kGrainElementwise, [&](int64_t b, int64_t e) {
        for (int64_t q = b; q < e; ++q) p[q] = finish(p[q], q);
      });
      return;
    }
  }
  std::vector<Acc> acc = run(op, plan);
  std::vector<V> vals(static_cast<size_t>(n));
  parallel_for(0, n, kGrainElementwise, [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q) vals[q] = finish(acc[q], q);
  });
  store_results(vals.data(), plan, out);
}

// Finish functions: the accumulator as it is.
struct AsIs {
  template <class A>
  A operator()(A a, int64_t) const {
    return a;
  }
};

// Transforms applied to each element before it is reduced; `q` is the output index (for per-output
// parameters).
struct Identity {
  template <class C>
  C operator()(C x, int64_t) const {
    return x;
  }
};

// (x - mean[q])^2, for second passes of variances.
template <class C>
struct SquaredDeviation {
  const C* mean;
  C operator()(C x, int64_t q) const { return (x - mean[q]) * (x - mean[q]); }
};

// Sum of f(x): pairwise-accurate for floats, wrapping for int64.
template <class CT, class F = Identity>
struct SumOp {
  using C = CT;
  using Acc = CT;
  F f{};
  Acc identity() const { return 0; }
  Acc row(const C* p, int64_t n, int64_t q) const {
    if constexpr (std::is_same_v<C, float> && std::is_same_v<F, Identity>) {
      if (vec::available()) return lane_sum<Acc>(p, n, [](C x) { return x; }, &vec::lane_sum);
    }
    return lane_sum<Acc>(p, n, [&](C x) { return f(x, q); });
  }
  void rows(Acc* __restrict acc, const C* __restrict p, int64_t n, int64_t q0) const {
    for (int64_t j = 0; j < n; ++j) acc[j] = add<Acc>(acc[j], f(p[j], q0 + j));
  }
  // Pairs first, then the pair sums: as accurate as four single adds or better. Wide vectors pay here: with
  // fewer loads and stores per element, the baseline build's narrow adds become a limit.
  SINTER_CLONES void rows4(Acc* __restrict acc, const C* __restrict a, const C* __restrict b, const C* __restrict c,
                           const C* __restrict d, int64_t n, int64_t q0) const {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t q = q0 + j;
      acc[j] = add<Acc>(acc[j], add<Acc>(add<Acc>(f(a[j], q), f(b[j], q)), add<Acc>(f(c[j], q), f(d[j], q))));
    }
  }
  Acc merge(Acc a, Acc b) const { return add<Acc>(a, b); }
};

template <class CT>
struct ProdOp {
  using C = CT;
  using Acc = CT;
  Acc identity() const { return 1; }
  Acc row(const C* p, int64_t n, int64_t) const {
    Acc acc[kLanes];
    for (int j = 0; j < kLanes; ++j) acc[j] = 1;
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j) acc[j] = mul<Acc>(acc[j], p[i + j]);
    Acc r = 1;
    for (; i < n; ++i) r = mul<Acc>(r, p[i]);
    for (int j = 0; j < kLanes; ++j) r = mul<Acc>(r, acc[j]);
    return r;
  }
  void rows(Acc* __restrict acc, const C* __restrict p, int64_t n, int64_t) const {
    for (int64_t j = 0; j < n; ++j) acc[j] = mul<Acc>(acc[j], p[j]);
  }
  Acc merge(Acc a, Acc b) const { return mul<Acc>(a, b); }
};

// NaN-propagating max (kMax) or min of f(x).
template <class CT, bool kMax, class F = Identity>
struct ExtremeOp {
  using C = CT;
  using Acc = CT;
  F f{};
  Acc identity() const { return kMax ? lowest<C>() : highest<C>(); }
  // Compare-and-select is the whole cost of an amax row: worth the AVX2 clone (twice the lanes). A float max
  // row goes to vec::row_max where the CPU has AVX-512 (the same value, NaN included; on the Zen 5 development
  // machine, one thread, [8192, 4096] rows: 3.2 ms against 5.6 ms).
  SINTER_CLONES Acc row(const C* p, int64_t n, int64_t q) const {
    if constexpr (std::is_same_v<C, float> && kMax && std::is_same_v<F, Identity>) {
      if (vec::available()) return vec::row_max(p, n);
    }
    return lane_extreme<kMax>(p, n, identity(), [&](C x) { return f(x, q); });
  }
  SINTER_CLONES void rows(Acc* __restrict acc, const C* __restrict p, int64_t n, int64_t q0) const {
    for (int64_t j = 0; j < n; ++j) acc[j] = merge(acc[j], f(p[j], q0 + j));
  }
  Acc merge(Acc a, Acc b) const { return kMax ? max_nan(a, b) : min_nan(a, b); }
};

// All of t's elements, in order, as C (for weights, biases and running statistics).
template <class C>
std::vector<C> read_values(const Tensor& t) {
  Tensor c = t.contiguous();
  const int64_t n = c.numel().hint();
  std::vector<C> v(static_cast<size_t>(n));
  if (n == 0) return v;
  if (LoadFn<C> load = load_fn<C>(c.dtype()))
    load(c.data_ptr(), v.data(), n);
  else
    std::copy_n(static_cast<const C*>(c.data_ptr()), n, v.data());
  return v;
}

// The compute type of a dtype: float for float32/float16/bfloat16, double, int64 for integers and bool.
template <class F>
decltype(auto) visit_compute(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16:
      return f.template operator()<float>();
    case DType::kFloat64:
      return f.template operator()<double>();
    default:
      return f.template operator()<int64_t>();
  }
}

// The compute type of a floating dtype: double for float64, else float.
template <class F>
decltype(auto) visit_float_compute(DType dtype, F&& f) {
  if (dtype == kFloat64) return f.template operator()<double>();
  return f.template operator()<float>();
}

}  // namespace sinter::reduce
