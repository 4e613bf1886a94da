// The reduction engine's non-template half: bringing any input layout to the [O, R, I] form (without a copy
// when the input is a permutation of a dense block), element conversion at load, and writing results out.
#include "ops/reduce_engine.h"

#include <numeric>

namespace sinter::reduce {

namespace {

template <class C, class T>
void load_as(const void* src, C* dst, int64_t n) {
  const T* s = static_cast<const T*>(src);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<C, uint8_t>)
      dst[i] = cast_to<bool>(s[i]);
    else
      dst[i] = cast_to<C>(s[i]);
  }
}

template <class V, class T>
void store_as(const V* src, void* dst, int64_t n) {
  T* d = static_cast<T*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = cast_to<T>(src[i]);
}

struct Dim {
  int64_t size, stride, index;
  bool reduced;
};

bool is_dense(const std::vector<Dim>& dims) {
  int64_t expected = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    if (dims[k].stride != expected) return false;
    expected *= dims[k].size;
  }
  return true;
}

// O, R, I when the dims (outermost first, dense) have at most one run of reduced dims; false otherwise.
bool three_groups(const std::vector<Dim>& dims, int64_t& O, int64_t& R, int64_t& I) {
  O = R = I = 1;
  int phase = 0;  // 0: before the reduced run, 1: inside it, 2: after
  for (const Dim& d : dims) {
    if (d.reduced) {
      if (phase == 2) return false;
      phase = 1;
      R *= d.size;
    } else {
      if (phase == 1) phase = 2;
      (phase == 0 ? O : I) *= d.size;
    }
  }
  return true;
}

}  // namespace

template <class C>
LoadFn<C> load_fn(DType from) {
  if (from == compute_dtype<C>()) return nullptr;
  if (std::is_same_v<C, uint8_t> && from == kBool) return nullptr;  // bools are bytes of 0 or 1
  return visit_dtype(from, [&]<class T>() -> LoadFn<C> { return &load_as<C, T>; });
}
template LoadFn<float> load_fn<float>(DType);
template LoadFn<double> load_fn<double>(DType);
template LoadFn<int64_t> load_fn<int64_t>(DType);
template LoadFn<uint8_t> load_fn<uint8_t>(DType);

template <class V>
StoreFn<V> store_fn(DType to) {
  if (to == compute_dtype<V>()) return nullptr;
  return visit_dtype(to, [&]<class T>() -> StoreFn<V> { return &store_as<V, T>; });
}
template StoreFn<float> store_fn<float>(DType);
template StoreFn<double> store_fn<double>(DType);
template StoreFn<int64_t> store_fn<int64_t>(DType);

ReducePlan make_plan(const Tensor& self, const std::vector<bool>& mask) {
  ReducePlan plan;
  plan.dtype = self.dtype();
  const int64_t nd = self.dim();
  std::vector<int64_t> sizes = self.sizes().hints(), strides(static_cast<size_t>(nd));
  for (int64_t d = 0; d < nd; ++d) strides[d] = self.strides()[d].hint();

  // Strides of the dense output over the kept dims (reduced dims have size 1 there or are dropped).
  std::vector<int64_t> out_stride(static_cast<size_t>(nd), 0);
  int64_t acc = 1;
  for (int64_t d = nd - 1; d >= 0; --d) {
    if (mask[d]) continue;
    out_stride[d] = acc;
    acc *= sizes[d];
  }

  // Size-1 dims affect neither the data order nor the output; zero sizes leave nothing to read.
  std::vector<Dim> dims;
  bool empty = false;
  for (int64_t d = 0; d < nd; ++d) {
    if (sizes[d] == 0) empty = true;
    if (sizes[d] != 1) dims.push_back({sizes[d], strides[d], d, static_cast<bool>(mask[d])});
  }
  auto finish_outputs = [&](const std::vector<Dim>& order) {
    plan.out_sizes.clear();
    plan.out_strides.clear();
    int64_t expected = 1;
    for (size_t k = order.size(); k-- > 0;) {
      if (order[k].reduced) continue;
      plan.out_sizes.insert(plan.out_sizes.begin(), order[k].size);
      plan.out_strides.insert(plan.out_strides.begin(), out_stride[order[k].index]);
      if (out_stride[order[k].index] != expected) plan.out_identity = false;
      expected *= order[k].size;
    }
  };
  if (empty) {
    for (const Dim& d : dims) (d.reduced ? plan.R : plan.O) *= d.size;
    finish_outputs(dims);
    return plan;
  }

  // A permutation of a dense block (a transpose, channels-last) is read in memory order, without a copy.
  std::vector<Dim> order = dims;
  std::stable_sort(order.begin(), order.end(),
                   [](const Dim& a, const Dim& b) { return a.stride > b.stride; });
  Tensor src = self;
  if (!is_dense(order)) {
    src = self.contiguous();
    order = dims;
    int64_t expected = 1;
    for (size_t k = order.size(); k-- > 0;) {
      order[k].stride = expected;
      expected *= order[k].size;
    }
  }
  if (three_groups(order, plan.O, plan.R, plan.I)) {
    plan.owner = src;
    plan.data = static_cast<const char*>(src.data_ptr());
    finish_outputs(order);
    return plan;
  }
  // Reduced dims interleaved with kept ones: copy with the reduced dims moved last, then rows reduce.
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < nd; ++d)
    if (!mask[d]) perm.push_back(d);
  for (int64_t d = 0; d < nd; ++d)
    if (mask[d]) perm.push_back(d);
  plan.owner = self.permute(DimList(perm)).contiguous();
  plan.data = static_cast<const char*>(plan.owner.data_ptr());
  plan.O = plan.R = plan.I = 1;
  for (const Dim& d : dims) (d.reduced ? plan.R : plan.O) *= d.size;
  plan.out_identity = true;
  plan.out_sizes.clear();
  plan.out_strides.clear();
  return plan;
}

ReducePlan make_dim_plan(const Tensor& self, int64_t dim) {
  ReducePlan plan;
  plan.dtype = self.dtype();
  plan.owner = self.contiguous();
  plan.data = static_cast<const char*>(plan.owner.data_ptr());
  std::vector<int64_t> sizes = self.sizes().hints();
  for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d)
    (d < dim ? plan.O : d == dim ? plan.R : plan.I) *= sizes[d];
  return plan;
}

template <class V>
void store_results(const V* vals, const ReducePlan& plan, const Tensor& out) {
  const int64_t n = plan.num_outputs();
  if (n == 0) return;
  visit_dtype(out.dtype(), [&]<class T>() {
    T* o = out.data_ptr<T>();
    const int64_t nd = static_cast<int64_t>(plan.out_sizes.size());
    const int64_t* sz = plan.out_sizes.data();
    const int64_t* st = plan.out_strides.data();
    parallel_for(0, n, kGrainElementwise, [&](int64_t b, int64_t e) {
      if (plan.out_identity) {
        for (int64_t q = b; q < e; ++q) o[q] = cast_to<T>(vals[q]);
      } else {
        for (int64_t q = b; q < e; ++q) o[offset_of(q, sz, st, nd)] = cast_to<T>(vals[q]);
      }
    });
  });
}
template void store_results<float>(const float*, const ReducePlan&, const Tensor&);
template void store_results<double>(const double*, const ReducePlan&, const Tensor&);
template void store_results<int64_t>(const int64_t*, const ReducePlan&, const Tensor&);
template void store_results<uint8_t>(const uint8_t*, const ReducePlan&, const Tensor&);

}  // namespace sinter::reduce
