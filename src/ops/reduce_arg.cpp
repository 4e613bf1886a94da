// Reductions that return where the extreme is: max.dim/min.dim (values and indices), argmax/argmin (one dim,
// or the flattened tensor). The first index of the extreme wins; NaN counts as the extreme (its first index).
#include "ops/reduce_engine.h"
#include "ops/reduce_internal.h"

namespace sinter {

namespace {

using namespace reduce;

template <class C>
struct Best {
  C value;
  int64_t index;
};

// Whether x at a later index replaces the current best: strictly better, or the first NaN.
template <bool kMax, class C>
inline bool replaces(C best, C x) {
  if (is_nan(best)) return false;
  return is_nan(x) || (kMax ? x > best : x < best);
}

// The extreme of row elements [r0, r1) (at least one), reading through a conversion buffer when needed. Each
// chunk's extreme is found with vectorized code; its position is searched only when it beats the best so far.
template <bool kMax, class C>
Best<C> scan_row(const char* row, int64_t r0, int64_t r1, LoadFn<C> load, int64_t esz) {
  C buf[kChunk];
  Best<C> best{C(0), -1};
  for (int64_t k = r0; k < r1; k += kChunk) {
    const int64_t m = std::min(kChunk, r1 - k);
    const C* p = reinterpret_cast<const C*>(row + k * esz);
    if (load) {
      load(row + k * esz, buf, m);
      p = buf;
    }
    const C ext = lane_extreme<kMax>(p, m, kMax ? lowest<C>() : highest<C>(), [](C v) { return v; });
    if (best.index >= 0 && !replaces<kMax>(best.value, ext)) continue;
    int64_t j = 0;
    if (is_nan(ext)) {
      while (!is_nan(p[j])) ++j;
    } else {
      while (p[j] != ext) ++j;
    }
    best = {ext, k + j};
    if (is_nan(ext)) break;
  }
  return best;
}

// Row r of w independent columns: each column's best so far (value, index) takes the row's element if better.
template <bool kMax, class C>
void update_columns(C* best, int64_t* idx, const C* p, int64_t w, int64_t r) {
  if (r == 0) {
    for (int64_t j = 0; j < w; ++j) best[j] = p[j], idx[j] = 0;
    return;
  }
  for (int64_t j = 0; j < w; ++j) {
    bool take = replaces<kMax>(best[j], p[j]);
    best[j] = take ? p[j] : best[j];
    idx[j] = take ? r : idx[j];
  }
}

template <bool kMax, class C>
void arg_reduce(const ReducePlan& plan, C* values, int64_t* indices) {
  const int64_t O = plan.O, R = plan.R, I = plan.I, esz = static_cast<int64_t>(element_size(plan.dtype));
  const LoadFn<C> load = load_fn<C>(plan.dtype);
  if (O * I == 0) return;
  SINTER_INTERNAL_ASSERT(R > 0, "arg reduction over an empty dim reached the kernel");
  if (I == 1 && R < kShort) {
    // Many short rows: blocks of them transposed, so the rows become columns updated a whole block at a time.
    const int64_t B = std::max<int64_t>(1, kBlockElems / R);
    parallel_for(0, (O + B - 1) / B, std::max<int64_t>(1, kGrainElementwise / kBlockElems),
                 [&](int64_t b, int64_t e) {
                   std::vector<C> tmp(load ? static_cast<size_t>(B * R) : 0), buf(static_cast<size_t>(B * R));
                   for (int64_t blk = b; blk < e; ++blk) {
                     const int64_t o0 = blk * B, nb = std::min(B, O - o0);
                     load_transposed(plan.data + o0 * R * esz, nb, R, load, tmp.data(), buf.data());
                     for (int64_t r = 0; r < R; ++r)
                       update_columns<kMax>(values + o0, indices + o0, buf.data() + r * nb, nb, r);
                   }
                 });
    return;
  }
  if (I == 1) {
    if (O >= kFewOutputs || R <= kSplit) {
      parallel_for(0, O, std::max<int64_t>(1, kGrainElementwise / R), [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          Best<C> best = scan_row<kMax, C>(plan.data + o * R * esz, 0, R, load, esz);
          values[o] = best.value;
          indices[o] = best.index;
        }
      });
      return;
    }
    // Few long rows: slices of each row in parallel, merged in index order so the first extreme still wins.
    const int64_t nc = (R + kSplit - 1) / kSplit;
    std::vector<Best<C>> part(static_cast<size_t>(O * nc));
    parallel_for(0, O * nc, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t o = t / nc, r0 = (t % nc) * kSplit;
        part[t] = scan_row<kMax, C>(plan.data + o * R * esz, r0, std::min(R, r0 + kSplit), load, esz);
      }
    });
    for (int64_t o = 0; o < O; ++o) {
      Best<C> best = part[o * nc];
      for (int64_t c = 1; c < nc; ++c)
        if (replaces<kMax>(best.value, part[o * nc + c].value)) best = part[o * nc + c];
      values[o] = best.value;
      indices[o] = best.index;
    }
    return;
  }
  // Rows of I elements: keep a running best per column.
  const int64_t ntile = (I + kTile - 1) / kTile;
  parallel_for(0, O * ntile, std::max<int64_t>(1, kGrainElementwise / (R * std::min(I, kTile))),
               [&](int64_t b, int64_t e) {
                 std::vector<C> buf(load ? static_cast<size_t>(std::min(I, kTile)) : 0);
                 for (int64_t t = b; t < e; ++t) {
                   int64_t o = t / ntile, i0 = (t % ntile) * kTile, w = std::min(kTile, I - i0);
                   for (int64_t r = 0; r < R; ++r) {
                     const char* src = plan.data + ((o * R + r) * I + i0) * esz;
                     const C* p = reinterpret_cast<const C*>(src);
                     if (load) {
                       load(src, buf.data(), w);
                       p = buf.data();
                     }
                     update_columns<kMax>(values + o * I + i0, indices + o * I + i0, p, w, r);
                   }
                 }
               });
}

bool is_max(OpId op) { return op == OpId::max_dim || op == OpId::argmax; }

// ---- max.dim / min.dim (self, dim, keepdim) -> (values, indices) ----

ShapeResult minmax_dim_shape(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  std::vector<bool> mask = reduce_dim_mask(std::vector<int64_t>{a[1].to_int()}, self.dim());
  check_nonempty_dims(self, mask);
  SymIntList sizes = reduced_sizes(self.sizes(), mask, a[2].to_bool());
  return std::vector<TensorMeta>{dense_meta(sizes, self.dtype(), self.device()),
                                 dense_meta(sizes, kInt64, self.device())};
}

template <class C>
void run_arg(OpId op, const ReducePlan& plan, C* values, int64_t* indices) {
  if (is_max(op))
    arg_reduce<true, C>(plan, values, indices);
  else
    arg_reduce<false, C>(plan, values, indices);
}

void minmax_dim_kernel(OpId op, const Args& a, std::vector<Tensor>& outs) {
  const Tensor& self = a[0].tensor();
  ReducePlan plan = make_dim_plan(self, reduce_wrap_dim(a[1].to_int(), self.dim()));
  visit_compute(self.dtype(), [&]<class C>() {
    std::vector<C> values(static_cast<size_t>(plan.num_outputs()));
    std::vector<int64_t> indices(values.size());
    run_arg<C>(op, plan, values.data(), indices.data());
    store_results(values.data(), plan, outs[0]);
    store_results(indices.data(), plan, outs[1]);
  });
}

// ---- argmax / argmin (self, dim?, keepdim): no dim means the flattened tensor ----

ShapeResult argminmax_shape(OpId op, const Args& a) {
  const Tensor& self = a[0].tensor();
  const bool keepdim = a[2].to_bool();
  if (a[1].is_none()) {
    SINTER_CHECK(self.numel() != 0, "cannot take {} of an empty tensor without a dim (it has no identity)",
                 is_max(op) ? "argmax" : "argmin");
    return dense_meta(keepdim ? SymIntList(static_cast<size_t>(self.dim()), SymInt(1)) : SymIntList{}, kInt64,
                      self.device());
  }
  std::vector<bool> mask = reduce_dim_mask(std::vector<int64_t>{a[1].to_int()}, self.dim());
  check_nonempty_dims(self, mask);
  return dense_meta(reduced_sizes(self.sizes(), mask, keepdim), kInt64, self.device());
}

void argminmax_kernel(OpId op, const Args& a, std::vector<Tensor>& outs) {
  const Tensor& self = a[0].tensor();
  ReducePlan plan;
  if (a[1].is_none()) {
    plan.owner = self.contiguous();
    plan.data = static_cast<const char*>(plan.owner.data_ptr());
    plan.dtype = self.dtype();
    plan.R = self.numel().hint();
  } else {
    plan = make_dim_plan(self, reduce_wrap_dim(a[1].to_int(), self.dim()));
  }
  visit_compute(self.dtype(), [&]<class C>() {
    std::vector<C> values(static_cast<size_t>(plan.num_outputs()));
    std::vector<int64_t> indices(values.size());
    run_arg<C>(op, plan, values.data(), indices.data());
    store_results(indices.data(), plan, outs[0]);
  });
}

}  // namespace

void register_reduce_arg(OpTable& t) {
  t.set(OpId::max_dim, minmax_dim_shape, minmax_dim_kernel);
  t.set(OpId::min_dim, minmax_dim_shape, minmax_dim_kernel);
  t.set(OpId::argmax, argminmax_shape, argminmax_kernel);
  t.set(OpId::argmin, argminmax_shape, argminmax_kernel);
}

}  // namespace sinter
