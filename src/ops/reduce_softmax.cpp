// softmax and log_softmax along one dim, stable (shifted by the max). Rows along a contiguous dim are done
// one at a time in cache (max, exp + sum, scale); other dims keep per-column max and sum across the rows of a
// tile. float16/bfloat16 rows are converted to float once, computed, and rounded once when written.
#include <cmath>

#include "ops/loops.h"
#include "ops/reduce_engine.h"
#include "ops/reduce_internal.h"
#include "ops/vec_math.h"

namespace sinter {

namespace {

using namespace reduce;

ShapeResult softmax_shape(OpId op, const Args& a) {
  const Tensor& self = a[0].tensor();
  reduce_wrap_dim(a[1].to_int(), self.dim());
  const DType out = a[2].is_none() ? self.dtype() : a[2].dtype();
  SINTER_CHECK(is_floating(out), "{} needs a floating input or dtype, got {}",
               op == OpId::softmax_int ? "softmax" : "log_softmax", dtype_name(out));
  return dense_meta(self.sizes(), out, self.device());
}

// The sum of exp(x[i] - m) over a row, also written to y when kStore: AVX-512 kernel for float where the CPU
// has it (one pass that computes, stores and sums, with vscalefps and no selects), else reduce::exp_sum.
template <bool kStore, class C>
[[gnu::always_inline]] inline double row_exp_sum(const C* x, C* y, int64_t n, C m) {
  if constexpr (std::is_same_v<C, float>) {
    if (vec::available()) return vec::exp_shift_sum(x, kStore ? y : nullptr, n, m);
  }
  return exp_sum<kStore>(x, y, n, m);
}

// y = exp(x - max(x)) over one contiguous row; returns 1 / sum(y), the factor that makes y the softmax (the
// same sum as exp_sum's: blocks of kPairwiseBlock in lanes, added in double). Prefetches `next` meanwhile.
// (The portable half of vec::softmax_row.)
template <class C>
SINTER_CLONES C softmax_exps(const C* x, C* y, int64_t n, const char* next, int64_t next_bytes) {
  const C m = lane_max_shift(x, n, lowest<C>());
  map_row_prefetch(x, y, n, next, next_bytes, [m](C v) { return exp_fast(v - m); });
  double total = 0;
  for (int64_t b = 0; b < n; b += kPairwiseBlock)
    total += lane_sum_leaf<C>(y + b, std::min(n - b, kPairwiseBlock), [](C v) { return v; });
  return static_cast<C>(1.0 / total);
}

// y = softmax(x) or log_softmax(x) over one contiguous row (x and y may be the same buffer).
template <bool kLog, class C>
SINTER_CLONES void softmax_row(const C* x, C* y, int64_t n) {
  if constexpr (!kLog && std::is_same_v<C, float>) {
    if (vec::available() && x != y) return vec::softmax_row(x, y, y, n, false, nullptr, 0);  // as streamed rows
  }
  const C m = lane_max_shift(x, n, lowest<C>());
  if constexpr (kLog) {
    // (x - m) - log(s), not x - (m + log(s)): x - m is exact, so large inputs keep their precision.
    const C log_s = static_cast<C>(std::log(row_exp_sum<false>(x, y, n, m)));
    map_row(x, y, n, [m, log_s](C v) { return (v - m) - log_s; });
  } else {
    const C inv = static_cast<C>(1.0 / row_exp_sum<true>(x, y, n, m));
    map_row(y, y, n, [inv](C v) { return v * inv; });
  }
}

template <class C>
struct Columns {
  const char* src;
  char* dst;
  int64_t src_row, dst_row, n, w;
  LoadFn<C> load;
  StoreFn<C> store;
  C *xbuf, *ybuf, *m, *s;
};

template <bool kLog, class C>
SINTER_CLONES void softmax_columns(const Columns<C>& c) {
  const int64_t w = c.w;
  C *m = c.m, *s = c.s;
  auto row = [&](int64_t r) {
    const char* p = c.src + r * c.src_row;
    if (!c.load) return reinterpret_cast<const C*>(p);
    c.load(p, c.xbuf, w);
    return static_cast<const C*>(c.xbuf);
  };
  for (int64_t j = 0; j < w; ++j) m[j] = lowest<C>(), s[j] = 0;
  for (int64_t r = 0; r < c.n; ++r) {
    const C* x = row(r);
    for (int64_t j = 0; j < w; ++j) m[j] = max_nan(m[j], x[j]);
  }
  // softmax writes exp(x - m) on the way (when the output is C) and rescales it after: one exp per element.
  const bool keep_exp = !kLog && !c.store;
  for (int64_t r = 0; r < c.n; ++r) {
    const C* x = row(r);
    if (keep_exp) {
      C* y = reinterpret_cast<C*>(c.dst + r * c.dst_row);
      for (int64_t j = 0; j < w; ++j) s[j] += (y[j] = exp_fast(x[j] - m[j]));
    } else {
      for (int64_t j = 0; j < w; ++j) s[j] += exp_fast(x[j] - m[j]);
    }
  }
  for (int64_t j = 0; j < w; ++j) s[j] = kLog ? std::log(s[j]) : C(1) / s[j];
  for (int64_t r = 0; r < c.n; ++r) {
    char* dst = c.dst + r * c.dst_row;
    if (keep_exp) {
      C* y = reinterpret_cast<C*>(dst);
      for (int64_t j = 0; j < w; ++j) y[j] *= s[j];
      continue;
    }
    const C* x = row(r);
    C* y = c.store ? c.ybuf : reinterpret_cast<C*>(dst);
    for (int64_t j = 0; j < w; ++j) y[j] = kLog ? (x[j] - m[j]) - s[j] : exp_fast(x[j] - m[j]) * s[j];
    if (c.store) c.store(c.ybuf, dst, w);
  }
}

template <bool kLog, class C>
void softmax_plan(const ReducePlan& plan, const Tensor& out) {
  const int64_t O = plan.O, N = plan.R, I = plan.I;
  if (O * N * I == 0) return;
  const int64_t esz = static_cast<int64_t>(element_size(plan.dtype)),
                osz = static_cast<int64_t>(out.element_size());
  const LoadFn<C> load = load_fn<C>(plan.dtype);
  const StoreFn<C> store = store_fn<C>(out.dtype());
  char* obase = static_cast<char*>(out.data_ptr());

  if (I == 1 && N < kShort) {
    // Many short rows: a block of them transposed into columns, softmaxed column-wise, transposed back.
    const int64_t B = std::max<int64_t>(1, kBlockElems / N);
    parallel_for(0, (O + B - 1) / B, std::max<int64_t>(1, kGrainElementwise / kBlockElems),
                 [&](int64_t b, int64_t e) {
                   const size_t sz = static_cast<size_t>(B * N);
                   std::vector<C> tmp(load ? sz : 0), xt(sz), yt(sz), y(sz), m(static_cast<size_t>(B)),
                       s(static_cast<size_t>(B));
                   for (int64_t blk = b; blk < e; ++blk) {
                     const int64_t o0 = blk * B, nb = std::min(B, O - o0);
                     load_transposed(plan.data + o0 * N * esz, nb, N, load, tmp.data(), xt.data());
                     const int64_t row = nb * static_cast<int64_t>(sizeof(C));
                     Columns<C> c{};  // C elements both ways: no conversions
                     c.src = reinterpret_cast<const char*>(xt.data());
                     c.dst = reinterpret_cast<char*>(yt.data());
                     c.src_row = c.dst_row = row;
                     c.n = N;
                     c.w = nb;
                     c.m = m.data();
                     c.s = s.data();
                     softmax_columns<kLog>(c);
                     char* dst = obase + o0 * N * osz;
                     C* yr = store ? y.data() : reinterpret_cast<C*>(dst);
                     for (int64_t i = 0; i < nb; ++i)
                       for (int64_t r = 0; r < N; ++r) yr[i * N + r] = yt[r * nb + i];
                     if (store) store(y.data(), dst, nb * N);
                   }
                 });
    return;
  }
  if (I == 1) {
    // A large output is computed row by row in cache and streamed out (loops::kStreamMinBytes says why).
    const bool stream = loops::stream_output(O * N * osz);
    parallel_for(0, O, std::max<int64_t>(1, kGrainElementwise / N), [&](int64_t b, int64_t e) {
      std::vector<C> storage(load || store || stream ? static_cast<size_t>(N) : 0);
      // Rows read in place fill the buffer: it sits half a page from them (loops::staggered_buffer).
      C* buf = stream && !load ? loops::staggered_buffer(storage, plan.data + b * N * esz, N) : storage.data();
      std::vector<char> obuf(store && stream ? static_cast<size_t>(N * osz) : 0);
      for (int64_t o = b; o < e; ++o) {
        const char* src = plan.data + o * N * esz;
        char* dst = obase + o * N * osz;
        const C* x = reinterpret_cast<const C*>(src);
        if (load) {
          load(src, buf, N);
          x = buf;
        }
        C* y = store || stream ? buf : reinterpret_cast<C*>(dst);
        if constexpr (!kLog && std::is_same_v<C, float>) {
          if (stream && !store) {  // the scaling pass writes the output: one pass over the row fewer
            const char* next = o + 1 < e ? src + N * esz : nullptr;
            if (vec::available())
              vec::softmax_row(x, y, reinterpret_cast<float*>(dst), N, true, next, N * esz);
            else
              loops::stream_scale(reinterpret_cast<float*>(dst), y, N, softmax_exps(x, y, N, next, N * esz));
            continue;
          }
        }
        softmax_row<kLog>(x, y, N);
        write_row(dst, y, N, osz, store, stream, obuf.data());
      }
      if (stream) loops::stream_fence();
    });
    return;
  }
  // Along a strided dim: tiles of columns, each column its own softmax over the N rows.
  const int64_t ntile = (I + kTile - 1) / kTile;
  parallel_for(0, O * ntile, std::max<int64_t>(1, kGrainElementwise / (N * std::min(I, kTile))),
               [&](int64_t b, int64_t e) {
                 const size_t tw = static_cast<size_t>(std::min(I, kTile));
                 std::vector<C> xbuf(load ? tw : 0), ybuf(store ? tw : 0), m(tw), s(tw);
                 Columns<C> c{};
                 c.src_row = I * esz;
                 c.dst_row = I * osz;
                 c.n = N;
                 c.load = load;
                 c.store = store;
                 c.xbuf = xbuf.data();
                 c.ybuf = ybuf.data();
                 c.m = m.data();
                 c.s = s.data();
                 for (int64_t t = b; t < e; ++t) {
                   const int64_t o = t / ntile, i0 = (t % ntile) * kTile;
                   c.src = plan.data + (o * N * I + i0) * esz;
                   c.dst = obase + (o * N * I + i0) * osz;
                   c.w = std::min(kTile, I - i0);
                   softmax_columns<kLog>(c);
                 }
               });
}

void softmax_kernel(OpId op, const Args& a, std::vector<Tensor>& outs) {
  Tensor self = a[0].tensor();
  // A dtype argument casts the input first, as in PyTorch.
  if (self.dtype() != outs[0].dtype()) self = self.to(outs[0].dtype());
  ReducePlan plan = make_dim_plan(self, reduce_wrap_dim(a[1].to_int(), self.dim()));
  const bool log = op == OpId::log_softmax_int;
  visit_float_compute(self.dtype(), [&]<class C>() {
    if (log)
      softmax_plan<true, C>(plan, outs[0]);
    else
      softmax_plan<false, C>(plan, outs[0]);
  });
}

}  // namespace

void register_softmax_ops(OpTable& t) {
  t.set(OpId::softmax_int, softmax_shape, softmax_kernel);
  t.set(OpId::log_softmax_int, softmax_shape, softmax_kernel);
}

}  // namespace sinter
