// Broadcasting, type promotion and layout helpers shared by every shape rule.
#include "ops/shape_util.h"

#include <algorithm>
#include <numeric>

#include "support/check.h"

namespace sinter {

bool same_size(const SymInt& a, const SymInt& b) {
  return a.is_symbolic() == b.is_symbolic() && (a.is_symbolic() ? a.expr() == b.expr() : a.hint() == b.hint());
}

// A dim broadcasts when its size is 1. For a symbolic size (s0, or an expression such as s0//2 that can be 1)
// the comparison records `size == 1` or `size != 1`, as PyTorch's broadcasting does, so the compiled code's choice
// (index 0, or the output's index) stays right for every size the guards admit. Two dims with the same
// expression need no decision: the result is that size whatever its value.
SymIntList broadcast_shapes(const SymIntList& a, const SymIntList& b) {
  size_t n = std::max(a.size(), b.size());
  SymIntList out(n, SymInt(1));
  for (size_t i = 0; i < n; ++i) {
    const SymInt* da = i < n - a.size() ? nullptr : &a[i - (n - a.size())];
    const SymInt* db = i < n - b.size() ? nullptr : &b[i - (n - b.size())];
    if (!da) {
      out[i] = *db;
    } else if (!db || same_size(*da, *db)) {
      out[i] = *da;
    } else if (*da == 1) {
      out[i] = *db;
    } else if (*db == 1 || *da == *db) {
      out[i] = *da;
    } else {
      detail::throw_user_error(fmt::format("shapes {} and {} cannot be broadcast together (dim {}: {} vs {})", a.str(),
                                           b.str(), i, da->str(), db->str()));
    }
  }
  return out;
}

SymIntList broadcast_all(const std::vector<const SymIntList*>& shapes) {
  SymIntList out;
  for (const SymIntList* s : shapes) out = broadcast_shapes(out, *s);
  return out;
}

namespace {
int category(DType t) { return t == kBool ? 0 : is_floating(t) ? 2 : 1; }
int int_rank(DType t) {
  switch (t) {
    case DType::kUInt8: return 0;
    case DType::kInt8: return 1;
    case DType::kInt32: return 3;
    case DType::kInt64: return 4;
    default: return -1;
  }
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == kBool) return b;
  if (b == kBool) return a;
  bool fa = is_floating(a), fb = is_floating(b);
  if (fa && !fb) return a;
  if (fb && !fa) return b;
  if (fa && fb) {
    if (a == kFloat64 || b == kFloat64) return kFloat64;
    return kFloat32;  // f16+bf16, f16+f32, bf16+f32
  }
  // Both integers. PyTorch gives int16 for uint8 + int8; sinter has no int16, so int32 holds every value instead.
  if ((a == kUInt8 && b == kInt8) || (a == kInt8 && b == kUInt8)) return kInt32;
  return int_rank(a) > int_rank(b) ? a : b;
}

namespace {
// PyTorch's combine_categories: the higher-priority class wins unless the lower one is of a higher category.
DType combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower.value_or(kFloat32);
  if (!lower) return *higher;
  if (is_floating(*higher)) return *higher;
  if (*higher == kBool || is_floating(*lower)) return promote_types(*higher, *lower);
  return *higher;
}
}  // namespace

DType result_type(const std::vector<PromotionOperand>& operands) {
  std::optional<DType> dim, zero, scalar;
  for (const PromotionOperand& o : operands) {
    std::optional<DType>& slot =
        o.kind == PromotionOperand::kDimTensor ? dim : o.kind == PromotionOperand::kZeroDimTensor ? zero : scalar;
    slot = slot ? promote_types(*slot, o.dtype) : o.dtype;
  }
  if (!dim && !zero && !scalar) return kFloat32;
  std::optional<DType> low = (zero || scalar) ? std::optional<DType>(combine(zero, scalar)) : std::nullopt;
  return combine(dim, low);
}

DType result_type_of(const Args& args, std::initializer_list<int> arg_indices) {
  std::vector<PromotionOperand> ops;
  for (int i : arg_indices) {
    const Value& v = args[i];
    if (v.is_tensor()) ops.push_back(operand_of(v.tensor()));
    else if (v.is_scalar()) ops.push_back(operand_of(v.scalar()));
  }
  return result_type(ops);
}

bool can_cast(DType from, DType to) {
  if (is_floating(from) && is_integral(to, true)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

TensorMeta dense_meta(const SymIntList& sizes, DType dtype, Device device, MemoryFormat format) {
  return TensorMeta{sizes, contiguous_strides(sizes, format), 0, dtype, device};
}

namespace {

// The layout checks below compare sizes and strides as SymInts, so that what they find for the example (a size-1
// dim whose stride does not matter, a stride equal to a product of sizes) is guarded to hold for every call.

// Whether t's dims, taken from the innermost in `order`, are laid out densely in that order (size-1 dims may have
// any stride, as in PyTorch).
bool dense_in_order(const Tensor& t, const std::vector<int64_t>& order) {
  SymInt expected = 1;
  for (int64_t d : order) {
    const SymInt& size = t.sizes()[d];
    if (size == 0) return true;
    if (size == 1) continue;
    if (t.strides()[d] != expected) return false;
    expected = expected * size;
  }
  return true;
}

// Whether t is laid out contiguously in `format`.
bool contiguous_in(const Tensor& t, MemoryFormat format) {
  if (format == MemoryFormat::kChannelsLast) return t.dim() == 4 && dense_in_order(t, {1, 3, 2, 0});  // C, W, H, N
  std::vector<int64_t> order;
  for (int64_t d = t.dim() - 1; d >= 0; --d) order.push_back(d);
  return dense_in_order(t, order);
}

// Whether t's elements fill a block of memory with no gaps or repeats, in some order of its dims.
bool non_overlapping_and_dense(const Tensor& t) {
  std::vector<int64_t> perm(t.dim());
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int64_t a, int64_t b) { return t.strides()[a].hint() < t.strides()[b].hint(); });
  return dense_in_order(t, perm);
}

}  // namespace

TensorMeta layout_of_operands(const SymIntList& sizes, DType dtype, Device device,
                              std::span<const Tensor* const> operands) {
  const int64_t n = static_cast<int64_t>(sizes.size());
  if (n == 0 || operands.empty()) return dense_meta(sizes, dtype, device);
  // Every eager op comes here: no allocation and no symbolic arithmetic on the concrete path.
  bool same_shape = true, symbolic = sizes.any_symbolic();
  for (const Tensor* t : operands) {
    symbolic = symbolic || t->sizes().any_symbolic() || t->strides().any_symbolic();
    same_shape = same_shape && t->dim() == n;
    for (int64_t d = 0; same_shape && d < n; ++d) same_shape = t->sizes()[d].hint() == sizes[d].hint();
  }
  if (same_shape) {
    // TensorIterator's fast setups: all contiguous, all channels-last, or all of one dense layout.
    auto all = [&](auto pred) { return std::all_of(operands.begin(), operands.end(), pred); };
    auto contiguous = [&](const Tensor* t, MemoryFormat f) {
      return symbolic ? contiguous_in(*t, f) : t->is_contiguous(f);
    };
    if (all([&](const Tensor* t) { return contiguous(t, MemoryFormat::kContiguous); }))
      return dense_meta(sizes, dtype, device);
    if (all([&](const Tensor* t) { return contiguous(t, MemoryFormat::kChannelsLast); }))
      return dense_meta(sizes, dtype, device, MemoryFormat::kChannelsLast);
    const Tensor& first = *operands.front();
    auto same_strides = [&](const Tensor* t) {
      for (int64_t d = 0; d < n; ++d)
        if (t->strides()[d] != first.strides()[d]) return false;
      return true;
    };
    if (all([&](const Tensor* t) { return non_overlapping_and_dense(*t) && same_strides(t); }))
      return TensorMeta{sizes, first.strides(), 0, dtype, device};
  }
  // The general rule: order the dims by the operands' strides, the first operand whose strides for two dims
  // differ deciding (a broadcast dim, stride 0, decides nothing; equal strides order by size), as
  // TensorIterator's reorder_dimensions does. perm[0] is the fastest-moving dim. Symbolic sizes and strides are
  // compared as SymInts, so the layout this gives for the example is guarded to be the layout for every call.
  auto stride_of = [&](const Tensor* t, int64_t d) -> SymInt {
    int64_t k = d - (n - t->dim());  // operands align to the right
    if (k < 0) return 0;
    if (t->sizes()[k] == 1 && sizes[d] != 1) return 0;  // broadcast
    return t->strides()[k];
  };
  auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const Tensor* t : operands) {
      SymInt s0 = stride_of(t, d0), s1 = stride_of(t, d1);
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s1 < s0) return 1;
      if (sizes[d1] < sizes[d0]) return 1;
    }
    return 0;
  };
  std::vector<int64_t> perm(n);
  for (int64_t i = 0; i < n; ++i) perm[i] = n - 1 - i;
  for (int64_t i = 1; i < n; ++i) {
    int64_t d1 = i;
    for (int64_t d0 = i - 1; d0 >= 0; --d0) {
      int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  SymIntList strides(n, SymInt(1));
  SymInt s = 1;
  for (int64_t i = 0; i < n; ++i) {
    strides[perm[i]] = s;
    s = s * sym_max(sizes[perm[i]], 1);
  }
  return TensorMeta{sizes, strides, 0, dtype, device};
}

TensorMeta dense_meta_like(const SymIntList& sizes, DType dtype, const Tensor& like) {
  bool same = like.dim() == static_cast<int64_t>(sizes.size());
  for (size_t d = 0; same && d < sizes.size(); ++d) same = like.sizes()[d].hint() == sizes[d].hint();
  if (!same) return dense_meta(sizes, dtype, like.device());
  const Tensor* operand = &like;
  return layout_of_operands(sizes, dtype, like.device(), std::span<const Tensor* const>(&operand, 1));
}

TensorMeta view_meta(const Tensor& base, SymIntList sizes, SymIntList strides, SymInt offset) {
  return TensorMeta{std::move(sizes), std::move(strides), std::move(offset), base.dtype(), base.device()};
}

Device common_device(const Args& args) {
  std::optional<Device> device;
  bool only_scalars = true;
  auto see = [&](const Tensor& t) {
    if (!t.defined()) return;
    bool cpu_scalar = t.is_cpu() && t.dim() == 0;
    if (!device || (only_scalars && !cpu_scalar)) {
      if (device && !cpu_scalar && *device != t.device() && !only_scalars)
        detail::throw_user_error("expected all tensors on one device");
      device = t.device();
      if (!cpu_scalar) only_scalars = false;
      return;
    }
    if (t.device() != *device && !cpu_scalar)
      detail::throw_user_error(fmt::format("expected all tensors to be on the same device, but found {} and {}",
                                           device->str(), t.device().str()));
  };
  for (const Value& v : args) {
    if (v.is_tensor()) see(v.tensor());
    else if (v.is_tensor_list())
      for (const Tensor& t : v.tensor_list()) see(t);
    else if (v.is_device()) device = device.value_or(v.device());
  }
  return device.value_or(kCPU);
}

std::string describe(const Tensor& t) {
  std::string s = fmt::format("{}{}", dtype_name(t.dtype()), t.sizes().str());
  if (!t.is_cpu()) s += " on " + t.device().str();
  return s;
}

}  // namespace sinter

namespace sinter {

SymIntList infer_size(const SymIntList& shape, const SymInt& numel) {
  SymInt known = 1;
  int infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      SINTER_CHECK(infer < 0, "only one dimension can be inferred (-1) in shape {}", shape.str());
      infer = static_cast<int>(i);
    } else {
      SINTER_CHECK(shape[i] >= 0, "invalid size {} in shape {}", shape[i].str(), shape.str());
      known = known * shape[i];
    }
  }
  SymIntList out = shape;
  if (infer >= 0) {
    SINTER_CHECK(known != 0, "cannot infer the -1 in shape {} for a tensor of {} elements: the other sizes multiply to 0",
                 shape.str(), numel.str());
    SINTER_CHECK(numel % known == 0, "shape {} is invalid for a tensor of {} elements", shape.str(), numel.str());
    out[infer] = numel / known;
  } else {
    SINTER_CHECK(known == numel, "shape {} is invalid for a tensor of {} elements", shape.str(), numel.str());
  }
  return out;
}

std::optional<SymIntList> compute_view_strides(const SymIntList& sizes, const SymIntList& strides,
                                               const SymIntList& new_sizes) {
  SymIntList out(new_sizes.size(), SymInt(1));
  if (sizes.empty()) return out;  // a 0-dim tensor views as all-ones sizes with unit strides
  SymInt numel = sym_product(sizes);
  if (numel == 0) {
    if (sizes.hints() == new_sizes.hints()) return strides;
    return contiguous_strides(new_sizes);
  }
  // Walk old dims from the back, grouping runs that are contiguous among themselves ("chunks"); each chunk
  // must be produced exactly by a run of new dims.
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  SymInt chunk_base_stride = strides.back();
  SymInt tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel = tensor_numel * sizes[d];
    bool chunk_end = d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride);
    if (chunk_end) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel = view_numel * new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

}  // namespace sinter
