// The public factory and random functions of ops.h. TensorOptions becomes the rows' dtype and device
// arguments. The *_like functions, arange(end) and randint(high, size) have no row of their own and are
// written over the factory rows; *_like keeps the input's memory layout as PyTorch's preserve_format does.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "ops/dispatch.h"
#include "ops/index_loop.h"  // strides_like_channels_last
#include "sinter/ops.h"
#include "support/check.h"

namespace sinter {

namespace {

Tensor with_grad(Tensor t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
  return t;
}

// The dtype argument of a factory row: None without one (the row infers it, as LibTorch's factories do).
Value dtype_arg(const TensorOptions& options) { return options.has_dtype() ? Value(options.dtype()) : Value(); }

// A factory row's result, in pinned host memory when the options ask for it. Under capture the factory is traced
// and its result pinned by pin_memory(), a graph break.
Tensor made(OpId op, Args args, const TensorOptions& options, const Loc& loc) {
  if (!options.pinned_memory()) return with_grad(dispatch1(op, std::move(args), loc), options.requires_grad());
  SINTER_CHECK_AT(loc, options.device().is_cpu(), "only dense CPU tensors can be pinned (the options ask for a {} "
                  "tensor in pinned memory)", options.device().str());
  Tensor t = current_hook() ? dispatch1(op, std::move(args), loc).pin_memory(loc)
                            : run_pinned(op, std::move(args), loc);
  return with_grad(t, options.requires_grad());
}

// A factory row called with sizes and options: (size, <extra args>, dtype, device).
Tensor factory(OpId op, Args args, const TensorOptions& options, const Loc& loc) {
  args.push_back(dtype_arg(options));
  args.push_back(options.device());
  return made(op, std::move(args), options, loc);
}

// The order of self's dims from outermost to innermost in memory, as PyTorch's preserve_format picks it: the
// exact order when self fills a dense block (a transposed or channels-last tensor), else channels-last when
// the strides look like it, else the natural order. Decided on the example's strides (no guards).
std::vector<int64_t> memory_order(const Tensor& self) {
  int64_t n = self.dim();
  std::vector<int64_t> natural(static_cast<size_t>(n));
  std::iota(natural.begin(), natural.end(), 0);
  if (n < 2 || self.is_contiguous()) return natural;
  std::vector<int64_t> sizes = self.sizes().hints(), strides = self.strides().hints();
  // Innermost first; dims of size < 2 last, since their strides mean nothing (PyTorch's
  // non-overlapping-and-dense test).
  std::vector<int64_t> perm = natural;
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  int64_t expected = 1;
  bool dense = true;
  for (int64_t d : perm) {
    if (sizes[d] < 2) break;
    if (strides[d] != expected) {
      dense = false;
      break;
    }
    expected *= sizes[d];
  }
  if (dense) return std::vector<int64_t>(perm.rbegin(), perm.rend());
  if (strides_like_channels_last(self)) return {0, 2, 3, 1};
  return natural;
}

// A *_like result: `make(sizes)` builds a contiguous tensor of the given sizes, which is then permuted so
// that its dims have self's memory order.
template <class Make>
Tensor like(const Tensor& self, const Loc& loc, Make make) {
  std::vector<int64_t> order = memory_order(self);
  bool natural = true;
  for (size_t i = 0; i < order.size(); ++i) natural = natural && order[i] == static_cast<int64_t>(i);
  if (natural) return make(self.sizes());
  SymIntList sizes;
  for (int64_t d : order) sizes.push_back(self.sizes()[d]);
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[order[i]] = static_cast<int64_t>(i);
  return permute(make(sizes), DimList(inverse), loc);
}

}  // namespace

// ---- factories ----
Tensor empty(const SymIntList& size, const TensorOptions& options, Loc loc) {
  return factory(OpId::empty, {size}, options, loc);
}
Tensor empty(const SymIntList& size, const TensorOptions& options, MemoryFormat memory_format, Loc loc) {
  Args args{size, dtype_arg(options), options.device(), memory_format};
  return made(OpId::empty, std::move(args), options, loc);
}
Tensor zeros(const SymIntList& size, const TensorOptions& options, Loc loc) {
  return factory(OpId::zeros, {size}, options, loc);
}
Tensor ones(const SymIntList& size, const TensorOptions& options, Loc loc) {
  return factory(OpId::ones, {size}, options, loc);
}
// Without options the dtype follows fill_value (int64, bool or float32), as torch.full.
Tensor full(const SymIntList& size, const Scalar& fill_value, Loc loc) {
  return dispatch1(OpId::full, {size, fill_value, std::nullopt, std::nullopt}, loc);
}
Tensor full(const SymIntList& size, const Scalar& fill_value, const TensorOptions& options, Loc loc) {
  return factory(OpId::full, {size, fill_value}, options, loc);
}
// arange(end) -> arange(0, end, 1); without options the dtype is inferred from the bounds.
Tensor arange(const Scalar& end, Loc loc) { return arange(Scalar(0), end, Scalar(1), loc); }
Tensor arange(const Scalar& end, const TensorOptions& options, Loc loc) {
  return arange(Scalar(0), end, Scalar(1), options, loc);
}
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, Loc loc) {
  return dispatch1(OpId::arange, {start, end, step, std::nullopt, std::nullopt}, loc);
}
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& options,
              Loc loc) {
  return factory(OpId::arange, {start, end, step}, options, loc);
}
// SymInt bounds reach the row as SymInt values, which arange's row keeps symbolic (kSymScalars).
Tensor arange_symint(const SymInt& start, const SymInt& end, const SymInt& step, const TensorOptions* options,
                     Loc loc) {
  if (!options) return dispatch1(OpId::arange, {start, end, step, std::nullopt, std::nullopt}, loc);
  return factory(OpId::arange, {start, end, step}, *options, loc);
}
Tensor linspace(const Scalar& start, const Scalar& end, const SymInt& steps, const TensorOptions& options,
                Loc loc) {
  return factory(OpId::linspace, {start, end, steps}, options, loc);
}
Tensor eye(const SymInt& n, std::optional<SymInt> m, const TensorOptions& options, Loc loc) {
  return factory(OpId::eye, {n, m.value_or(n)}, options, loc);
}

// ---- random ----
Tensor rand(const SymIntList& size, const TensorOptions& options, Loc loc) {
  return factory(OpId::rand, {size}, options, loc);
}
Tensor randn(const SymIntList& size, const TensorOptions& options, Loc loc) {
  return factory(OpId::randn, {size}, options, loc);
}
Tensor randint(const SymInt& low, const SymInt& high, const SymIntList& size, const TensorOptions& options,
               Loc loc) {
  return factory(OpId::randint, {low, high, size}, options, loc);
}
// randint(high, size) -> randint(0, high, size).
Tensor randint(const SymInt& high, const SymIntList& size, const TensorOptions& options, Loc loc) {
  return randint(SymInt(0), high, size, options, loc);
}
Tensor normal(double mean, double std, const SymIntList& size, const TensorOptions& options, Loc loc) {
  return factory(OpId::normal, {mean, std, size}, options, loc);
}
Tensor bernoulli(const Tensor& self, double p, Loc loc) {
  return dispatch1(OpId::bernoulli_p, {self, p}, loc);
}

// ---- *_like: the factory rows at self's sizes, dtype (unless given) and device ----
Tensor empty_like(const Tensor& self, std::optional<DType> dtype, Loc loc) {
  return like(self, loc, [&](const SymIntList& s) {
    return dispatch1(OpId::empty, {s, dtype.value_or(self.dtype()), self.device(), std::nullopt}, loc);
  });
}
Tensor zeros_like(const Tensor& self, std::optional<DType> dtype, Loc loc) {
  return like(self, loc, [&](const SymIntList& s) {
    return dispatch1(OpId::zeros, {s, dtype.value_or(self.dtype()), self.device()}, loc);
  });
}
Tensor ones_like(const Tensor& self, std::optional<DType> dtype, Loc loc) {
  return like(self, loc, [&](const SymIntList& s) {
    return dispatch1(OpId::ones, {s, dtype.value_or(self.dtype()), self.device()}, loc);
  });
}
Tensor full_like(const Tensor& self, const Scalar& fill_value, std::optional<DType> dtype, Loc loc) {
  return like(self, loc, [&](const SymIntList& s) {
    return dispatch1(OpId::full, {s, fill_value, dtype.value_or(self.dtype()), self.device()}, loc);
  });
}
Tensor rand_like(const Tensor& self, std::optional<DType> dtype, Loc loc) {
  return like(self, loc, [&](const SymIntList& s) {
    return dispatch1(OpId::rand, {s, dtype.value_or(self.dtype()), self.device()}, loc);
  });
}
Tensor randn_like(const Tensor& self, std::optional<DType> dtype, Loc loc) {
  return like(self, loc, [&](const SymIntList& s) {
    return dispatch1(OpId::randn, {s, dtype.value_or(self.dtype()), self.device()}, loc);
  });
}

TensorData::TensorData(std::initializer_list<TensorData> items) {
  sizes_ = {static_cast<int64_t>(items.size())};
  const TensorData* first = items.size() ? items.begin() : nullptr;
  if (first) sizes_.insert(sizes_.end(), first->sizes_.begin(), first->sizes_.end());
  kind_ = first ? 0 : 2;
  int64_t index = 0;
  for (const TensorData& item : items) {
    if (error_.empty() && !item.error_.empty()) error_ = item.error_;
    if (error_.empty() && item.sizes_ != first->sizes_)
      error_ = fmt::format("expected every sub-list to have sizes [{}] (as the first), got [{}] at index {}",
                           fmt::join(first->sizes_, ", "), fmt::join(item.sizes_, ", "), index);
    values_.insert(values_.end(), item.values_.begin(), item.values_.end());
    kind_ = std::max(kind_, item.kind_);
    ++index;
  }
}

Tensor tensor(const TensorData& data, const TensorOptions& options, Loc loc) {
  SINTER_CHECK_AT(loc, data.error().empty(), "tensor(): {}", data.error());
  SymIntList sizes(std::vector<int64_t>(data.sizes()));
  Tensor t;
  if (data.dtype() == kFloat32) {
    std::vector<double> v;
    for (const Scalar& s : data.values()) v.push_back(s.to_double());
    t = from_vector(v, sizes);
  } else {
    std::vector<int64_t> v;
    for (const Scalar& s : data.values()) v.push_back(s.to_int());
    t = from_vector(v, sizes);
  }
  if (data.sizes().empty()) t = t.view(SymIntList(), loc);  // from_vector makes a 1-d tensor of no sizes
  t = t.to(options.device(), options.has_dtype() ? options.dtype() : data.dtype(), loc);
  if (options.pinned_memory()) {
    SINTER_CHECK_AT(loc, options.device().is_cpu(), "only dense CPU tensors can be pinned (the options ask for a {} "
                    "tensor in pinned memory)", options.device().str());
    t = t.pin_memory(loc);
  }
  return with_grad(t, options.requires_grad());
}

Tensor scalar_tensor(const Scalar& value, std::optional<DType> dtype, Device device) {
  return full({}, value, TensorOptions{dtype.value_or(value.default_dtype()), device});
}

}  // namespace sinter
