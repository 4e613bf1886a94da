// Shape rules of the view ops: each returns the view's sizes, strides and offset into the input's storage.
// The dispatcher turns them into tensors that share the input's storage. All arithmetic is on SymInt.
#include "ops/view_ops.h"

#include <algorithm>
#include <limits>

#include "ops/shape_util.h"
#include "support/check.h"

namespace sinter {
namespace {

ShapeResult view_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  SymIntList sizes = infer_size(a[1].int_list(), self.numel());
  std::optional<SymIntList> strides = compute_view_strides(self.sizes(), self.strides(), sizes);
  SINTER_CHECK(strides.has_value(),
               "view size {} is not compatible with the input's sizes {} and strides {} (at least one dimension "
               "spans across two contiguous subspaces); use reshape(...) instead",
               sizes.str(), self.sizes().str(), self.strides().str());
  return view_meta(self, sizes, *strides, self.storage_offset());
}

ShapeResult permute_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  std::vector<int64_t> dims = a[1].to_int_list();
  int64_t n = self.dim();
  SINTER_CHECK(static_cast<int64_t>(dims.size()) == n, "number of dims {} does not match the tensor's rank {}",
               dims.size(), n);
  std::vector<bool> seen(n, false);
  SymIntList sizes, strides;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, n);
    SINTER_CHECK(!seen[w], "dim {} appears more than once in the permutation", w);
    seen[w] = true;
    sizes.push_back(self.sizes()[w]);
    strides.push_back(self.strides()[w]);
  }
  return view_meta(self, sizes, strides, self.storage_offset());
}

ShapeResult transpose_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  int64_t d0 = wrap_dim(a[1].to_int(), self.dim()), d1 = wrap_dim(a[2].to_int(), self.dim());
  SymIntList sizes = self.sizes(), strides = self.strides();
  if (self.dim() > 0) {
    std::swap(sizes[d0], sizes[d1]);
    std::swap(strides[d0], strides[d1]);
  }
  return view_meta(self, sizes, strides, self.storage_offset());
}

ShapeResult expand_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  const SymIntList& want = a[1].int_list();
  int64_t n = static_cast<int64_t>(want.size()), extra = n - self.dim();
  SINTER_CHECK(extra >= 0, "the number of sizes given ({}) must be at least the tensor's rank ({})", n, self.dim());
  SymIntList sizes(n, SymInt(0)), strides(n, SymInt(0));
  for (int64_t d = n - 1; d >= 0; --d) {
    int64_t sd = d - extra;
    if (sd < 0) {
      SINTER_CHECK(want[d] >= 0, "the expanded size {} is not allowed in a leading, new dimension", want[d].str());
      sizes[d] = want[d];
      strides[d] = 0;
      continue;
    }
    const SymInt& have = self.sizes()[sd];
    if (want[d] == -1 || want[d] == have) {
      sizes[d] = have;
      strides[d] = self.strides()[sd];
    } else {
      SINTER_CHECK(have == 1, "the expanded size {} must match the existing size {} at non-singleton dim {} "
                   "(target sizes {}, tensor sizes {})", want[d].str(), have.str(), d, want.str(), self.sizes().str());
      sizes[d] = want[d];
      strides[d] = 0;
    }
  }
  return view_meta(self, sizes, strides, self.storage_offset());
}

ShapeResult squeeze_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  std::vector<int64_t> dims = a[1].to_int_list();
  std::vector<bool> drop(self.dim(), false);
  if (dims.empty()) {
    for (int64_t d = 0; d < self.dim(); ++d) drop[d] = self.sizes()[d] == 1;
  } else {
    for (int64_t d : dims) {
      int64_t w = wrap_dim(d, self.dim());
      if (self.dim() > 0) drop[w] = self.sizes()[w] == 1;
    }
  }
  SymIntList sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (drop[d]) continue;
    sizes.push_back(self.sizes()[d]);
    strides.push_back(self.strides()[d]);
  }
  return view_meta(self, sizes, strides, self.storage_offset());
}

ShapeResult unsqueeze_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  int64_t d = wrap_dim(a[1].to_int(), self.dim() + 1);
  SymIntList sizes = self.sizes(), strides = self.strides();
  SymInt stride = d >= self.dim() ? SymInt(1) : sizes[d] * strides[d];
  sizes.insert(sizes.begin() + d, SymInt(1));
  strides.insert(strides.begin() + d, stride);
  return view_meta(self, sizes, strides, self.storage_offset());
}

// Clamps a possibly negative, possibly None bound into [0, size], as PyTorch's slice does (a negative bound counts
// from the end; past either end it stops there). A concrete bound is compared with the size before any arithmetic:
// x[1::2] ends at INT64_MAX, and size + INT64_MIN or an expression holding INT64_MAX would overflow, or put that
// constant into guards. `size <= INT64_MAX` is known for every size, so such a bound records no guard.
SymInt clamp_bound(const Value& v, const SymInt& fallback, const SymInt& size) {
  if (v.is_none()) return fallback;
  SymInt b = v.sym_int();
  if (!b.is_symbolic() && b.hint() < 0) {
    int64_t back = b.hint() == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -b.hint();
    if (size <= back) return 0;
    return size - back;
  }
  if (b < 0) {
    b = b + size;
    return b < 0 ? SymInt(0) : b;
  }
  if (size <= b) return size;
  return b;
}

ShapeResult slice_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  SINTER_CHECK(self.dim() > 0, "slice() cannot be applied to a 0-dim tensor");
  int64_t d = wrap_dim(a[1].to_int(), self.dim());
  const SymInt& size = self.sizes()[d];
  SymInt step = a[4].sym_int();
  SINTER_CHECK(step > 0, "slice step must be positive, got {}", step.str());
  SymInt start = clamp_bound(a[2], 0, size);
  SymInt end = clamp_bound(a[3], size, size);
  if (end < start) end = start;
  SymIntList sizes = self.sizes(), strides = self.strides();
  // ceil(length / step) for length >= 0, written so that no intermediate exceeds length (a huge step cannot
  // overflow): floor division makes (0 - 1) // step + 1 == 0.
  sizes[d] = (end - start - 1) / step + 1;
  // stride * step overflows only for a step past the storage (x[::INT64_MAX]), which leaves at most one element;
  // that dim is never stepped over, so it keeps its stride (guarded: the size stays at most 1).
  int64_t product = 0;
  if (__builtin_mul_overflow(strides[d].hint(), step.hint(), &product)) {
    SINTER_CHECK(sizes[d] <= 1, "slice step {} times stride {} overflows int64", step.str(), strides[d].str());
  } else {
    strides[d] = strides[d] * step;
  }
  return view_meta(self, sizes, strides, self.storage_offset() + start * self.strides()[d]);
}

ShapeResult select_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  SINTER_CHECK(self.dim() > 0, "select() cannot be applied to a 0-dim tensor");
  int64_t d = wrap_dim(a[1].to_int(), self.dim());
  const SymInt& size = self.sizes()[d];
  SymInt index = a[2].sym_int();
  SINTER_CHECK(index >= -size && index < size, "index {} is out of range for dimension {} of size {}", index.str(),
               d, size.str());
  if (index < 0) index = index + size;
  SymIntList sizes = self.sizes(), strides = self.strides();
  SymInt offset = self.storage_offset() + index * strides[d];
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return view_meta(self, sizes, strides, offset);
}

ShapeResult as_strided_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  const SymIntList& sizes = a[1].int_list();
  const SymIntList& strides = a[2].int_list();
  SINTER_CHECK(sizes.size() == strides.size(), "sizes {} and strides {} must have the same length", sizes.str(),
               strides.str());
  SymInt offset = a[3].is_none() ? self.storage_offset() : a[3].sym_int();
  SINTER_CHECK(offset >= 0, "negative storage offset {}", offset.str());
  int64_t last = offset.hint();
  bool empty = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    SINTER_CHECK(sizes[d] >= 0 && strides[d] >= 0, "as_strided needs non-negative sizes and strides, got {} and {}",
                 sizes.str(), strides.str());
    if (sizes[d].hint() == 0) empty = true;
    else last += (sizes[d].hint() - 1) * strides[d].hint();
  }
  if (self.has_storage() && !empty) {
    int64_t capacity = static_cast<int64_t>(self.storage()->nbytes() / self.element_size());
    SINTER_CHECK(last < capacity, "as_strided: sizes {} and strides {} at offset {} reach element {}, beyond the "
                 "storage's {} elements", sizes.str(), strides.str(), offset.str(), last, capacity);
  }
  return view_meta(self, sizes, strides, offset);
}

std::vector<TensorMeta> split_metas(const Tensor& self, int64_t d, const std::vector<SymInt>& pieces) {
  std::vector<TensorMeta> out;
  SymInt start = 0;
  for (const SymInt& len : pieces) {
    SymIntList sizes = self.sizes();
    sizes[d] = len;
    out.push_back(view_meta(self, sizes, self.strides(), self.storage_offset() + start * self.strides()[d]));
    start = start + len;
  }
  return out;
}

ShapeResult split_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  SINTER_CHECK(self.dim() > 0, "split() cannot be applied to a 0-dim tensor");
  int64_t d = wrap_dim(a[2].to_int(), self.dim());
  // The number of pieces is a Python-level count, so a symbolic size specialises here.
  int64_t size = static_cast<int64_t>(self.sizes()[d]);
  int64_t split = a[1].to_int();
  SINTER_CHECK(split > 0 || (split == 0 && size == 0), "split_size must be positive, got {} (dim {} has size {})",
               split, d, size);
  std::vector<SymInt> pieces;
  if (split == 0) pieces.push_back(0);
  for (int64_t s = 0; s < size; s += split) pieces.push_back(std::min(split, size - s));
  if (pieces.empty()) pieces.push_back(0);
  return split_metas(self, d, pieces);
}

ShapeResult split_with_sizes_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  SINTER_CHECK(self.dim() > 0, "split_with_sizes() cannot be applied to a 0-dim tensor");
  int64_t d = wrap_dim(a[2].to_int(), self.dim());
  const SymIntList& sizes = a[1].int_list();
  SymInt total = 0;
  for (const SymInt& s : sizes) {
    SINTER_CHECK(s >= 0, "split sizes must be non-negative, got {}", sizes.str());
    total = total + s;
  }
  SINTER_CHECK(total == self.sizes()[d], "split sizes {} sum to {}, but dim {} has size {}", sizes.str(), total.str(),
               d, self.sizes()[d].str());
  return split_metas(self, d, std::vector<SymInt>(sizes.begin(), sizes.end()));
}

ShapeResult chunk_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  SINTER_CHECK(self.dim() > 0, "chunk() cannot be applied to a 0-dim tensor");
  int64_t chunks = a[1].to_int();
  SINTER_CHECK(chunks > 0, "chunk expects a positive number of chunks, got {}", chunks);
  int64_t d = wrap_dim(a[2].to_int(), self.dim());
  // A symbolic size stays symbolic where the pieces are equal: one chunk, or a size that divides evenly (the
  // guard `size % chunks == 0` records which); else the count of pieces specialises the size.
  const SymInt& symbolic = self.sizes()[d];
  if (symbolic.is_symbolic() && symbolic != 0 && (chunks == 1 || symbolic % chunks == 0))
    return split_metas(self, d, std::vector<SymInt>(chunks, symbolic / chunks));
  int64_t size = static_cast<int64_t>(symbolic);
  int64_t split = size == 0 ? 0 : (size - 1) / chunks + 1;  // ceil(size / chunks), safe for a huge `chunks`
  std::vector<SymInt> pieces;
  if (split == 0) {
    pieces.assign(chunks, SymInt(0));
  } else {
    for (int64_t s = 0; s < size; s += split) pieces.push_back(std::min(split, size - s));
  }
  return split_metas(self, d, pieces);
}

ShapeResult unbind_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  SINTER_CHECK(self.dim() > 0, "unbind() cannot be applied to a 0-dim tensor");
  int64_t d = wrap_dim(a[1].to_int(), self.dim());
  int64_t size = static_cast<int64_t>(self.sizes()[d]);
  std::vector<TensorMeta> out;
  SymIntList sizes = self.sizes(), strides = self.strides();
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  for (int64_t i = 0; i < size; ++i)
    out.push_back(view_meta(self, sizes, strides, self.storage_offset() + self.strides()[d] * i));
  return out;
}

}  // namespace

void register_view_ops(OpTable& t) {
  t.set(OpId::view, view_rule, nullptr);
  t.set(OpId::permute, permute_rule, nullptr);
  t.set(OpId::transpose_int, transpose_rule, nullptr);
  t.set(OpId::expand, expand_rule, nullptr);
  t.set(OpId::squeeze_dims, squeeze_rule, nullptr);
  t.set(OpId::unsqueeze, unsqueeze_rule, nullptr);
  t.set(OpId::slice_Tensor, slice_rule, nullptr);
  t.set(OpId::select_int, select_rule, nullptr);
  t.set(OpId::as_strided, as_strided_rule, nullptr);
  t.set(OpId::split_Tensor, split_rule, nullptr);
  t.set(OpId::split_with_sizes, split_with_sizes_rule, nullptr);
  t.set(OpId::chunk, chunk_rule, nullptr);
  t.set(OpId::unbind_int, unbind_rule, nullptr);
}

}  // namespace sinter
