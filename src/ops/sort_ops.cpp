// sort, argsort and topk along one dim. Sorting is stable (equal values keep their order, in both directions)
// and NaN sorts as the largest value, as in PyTorch. Each line along the dim is gathered into (value, index)
// pairs, sorted (or partially sorted for topk) and written back; lines run in parallel.
#include <algorithm>

#include "ops/reduce_engine.h"
#include "ops/reduce_internal.h"

namespace sinter {

namespace {

using namespace reduce;

template <class C>
struct Item {
  C value;
  int64_t index;
};

// Whether a goes before b: ascending puts NaN last, descending puts it first.
template <class C>
inline bool before(C a, C b, bool descending) {
  if (descending) return !is_nan(b) && (is_nan(a) || a > b);
  return !is_nan(a) && (is_nan(b) || a < b);
}

// For each line along the plan's R dim: gather its items, let `arrange` reorder them (returning how many to
// keep), then write the kept values (if `values` is given) and indices to the outputs, whose dim has `out_n`
// entries.
template <class C, class F>
void sort_lines(const ReducePlan& plan, const Tensor* values, const Tensor& indices, int64_t out_n,
                F arrange) {
  const int64_t O = plan.O, N = plan.R, I = plan.I, esz = static_cast<int64_t>(element_size(plan.dtype));
  if (O * I == 0 || out_n == 0) return;
  const LoadFn<C> load = load_fn<C>(plan.dtype);
  const StoreFn<C> store = values ? store_fn<C>(values->dtype()) : nullptr;
  const int64_t vsz = values ? static_cast<int64_t>(values->element_size()) : 0;
  char* vbase = values ? static_cast<char*>(values->data_ptr()) : nullptr;
  int64_t* ibase = indices.data_ptr<int64_t>();
  const int64_t grain = std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(1, N * 8));
  parallel_for(0, O * I, grain, [&](int64_t b, int64_t e) {
    std::vector<Item<C>> items(static_cast<size_t>(N));
    for (int64_t line = b; line < e; ++line) {
      const int64_t o = line / I, i = line % I;
      for (int64_t r = 0; r < N; ++r) {
        const char* src = plan.data + ((o * N + r) * I + i) * esz;
        C v;
        if (load)
          load(src, &v, 1);
        else
          v = *reinterpret_cast<const C*>(src);
        items[r] = {v, r};
      }
      const int64_t keep = arrange(items);
      for (int64_t r = 0; r < keep; ++r) {
        const int64_t off = (o * out_n + r) * I + i;
        ibase[off] = items[r].index;
        if (!vbase) continue;
        if (store)
          store(&items[r].value, vbase + off * vsz, 1);
        else
          reinterpret_cast<C*>(vbase)[off] = items[r].value;
      }
    }
  });
}

// ---- sort (self, dim, descending) -> (values, indices); argsort (self, dim, descending) -> indices ----

ShapeResult sort_shape(OpId op, const Args& a) {
  const Tensor& self = a[0].tensor();
  reduce_wrap_dim(a[1].to_int(), self.dim());
  TensorMeta idx = dense_meta(self.sizes(), kInt64, self.device());
  if (op == OpId::argsort) return idx;
  return std::vector<TensorMeta>{dense_meta(self.sizes(), self.dtype(), self.device()), idx};
}

void sort_kernel(OpId op, const Args& a, std::vector<Tensor>& outs) {
  const Tensor& self = a[0].tensor();
  const bool descending = a[2].to_bool();
  ReducePlan plan = make_dim_plan(self, reduce_wrap_dim(a[1].to_int(), self.dim()));
  const bool has_values = op == OpId::sort;
  visit_compute(self.dtype(), [&]<class C>() {
    sort_lines<C>(plan, has_values ? &outs[0] : nullptr, outs[has_values ? 1 : 0], plan.R,
                  [&](std::vector<Item<C>>& items) {
                    std::stable_sort(items.begin(), items.end(), [&](const Item<C>& x, const Item<C>& y) {
                      return before(x.value, y.value, descending);
                    });
                    return static_cast<int64_t>(items.size());
                  });
  });
}

// ---- topk (self, k, dim, largest, sorted) -> (values, indices) ----

ShapeResult topk_shape(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  const int64_t dim = reduce_wrap_dim(a[2].to_int(), self.dim());
  const SymInt n = self.dim() == 0 ? SymInt(1) : self.sizes()[dim];
  const SymInt& k = a[1].sym_int();
  SINTER_CHECK(k >= 0 && k <= n, "k={} is out of range for dim {} of size {} (expected 0 <= k <= {})",
               k.str(), dim, n.str(), n.str());
  SymIntList sizes = self.sizes();
  if (self.dim() > 0) sizes[dim] = k;
  return std::vector<TensorMeta>{dense_meta(sizes, self.dtype(), self.device()),
                                 dense_meta(sizes, kInt64, self.device())};
}

void topk_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  const Tensor& self = a[0].tensor();
  // A 0-dim input is copied whatever k (0 or 1) is, as in PyTorch: its outputs keep the input's sizes (there is
  // no dim to shrink to k), so they hold one element, which must be written.
  const int64_t k = self.dim() == 0 ? 1 : a[1].to_int();
  const bool largest = a[3].to_bool();
  ReducePlan plan = make_dim_plan(self, reduce_wrap_dim(a[2].to_int(), self.dim()));
  // The result is always sorted (sorted=false allows any order); ties keep the lower index first.
  visit_compute(self.dtype(), [&]<class C>() {
    sort_lines<C>(plan, &outs[0], outs[1], k, [&](std::vector<Item<C>>& items) {
      std::partial_sort(items.begin(), items.begin() + k, items.end(),
                        [&](const Item<C>& x, const Item<C>& y) {
                          if (before(x.value, y.value, largest)) return true;
                          if (before(y.value, x.value, largest)) return false;
                          return x.index < y.index;
                        });
      return k;
    });
  });
}

}  // namespace

void register_sort_ops(OpTable& t) {
  t.set(OpId::sort, sort_shape, sort_kernel);
  t.set(OpId::argsort, sort_shape, sort_kernel);
  t.set(OpId::topk, topk_shape, topk_kernel);
}

}  // namespace sinter
