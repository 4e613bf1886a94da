// The public view and copy functions of ops.h. The view rows dispatch directly; reshape, flatten, unflatten,
// t, narrow, squeeze(), movedim, contiguous and broadcast_tensors have no row of their own and are written
// over rows, as PyTorch's CompositeImplicit ops are, so capture records only the rows they reach.
#include <algorithm>

#include "ops/dispatch.h"
#include "ops/shape_util.h"
#include "sinter/ops.h"
#include "support/check.h"

namespace sinter {

namespace {

// Wraps a possibly negative dim of a composite op. A 0-dim tensor accepts dims -1 and 0, as in PyTorch.
int64_t wrap(const char* op, int64_t dim, int64_t ndim, const Loc& loc) {
  int64_t n = std::max<int64_t>(ndim, 1);
  SINTER_CHECK_AT(loc, dim >= -n && dim < n,
                  "{}: dim {} is out of range for a tensor of rank {} (expected in [{}, {}])", op, dim, ndim,
                  -n, n - 1);
  return dim < 0 ? dim + n : dim;
}

// Resolves one -1 entry of `shape` so that its product is `numel` (PyTorch's infer_size). Errors name both
// shapes.
SymIntList infer_reshape_size(const SymIntList& shape, const Tensor& self, const Loc& loc) {
  SymInt numel = self.numel();
  SymInt known = 1;
  std::optional<size_t> infer_dim;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      SINTER_CHECK_AT(loc, !infer_dim, "reshape: only one dimension can be inferred, got shape {}",
                      shape.str());
      infer_dim = i;
    } else {
      SINTER_CHECK_AT(loc, shape[i] >= 0, "reshape: invalid shape dimension {} in shape {}", shape[i].str(),
                      shape.str());
      known *= shape[i];
    }
  }
  if (numel == known || (infer_dim && known > 0 && numel % known == 0)) {
    SymIntList result = shape;
    if (infer_dim) {
      // empty.view(-1, 0) has no single answer; NumPy refuses it too.
      SINTER_CHECK_AT(loc, known != 0,
                      "reshape: cannot reshape a tensor of 0 elements into shape {} because the unspecified "
                      "dimension size -1 can be any value and is ambiguous",
                      shape.str());
      result[*infer_dim] = numel / known;
    }
    return result;
  }
  SINTER_CHECK_AT(loc, false, "reshape: shape {} is invalid for input of shape {} ({} elements)", shape.str(),
                  self.sizes().str(), numel.str());
  return {};
}

}  // namespace

// ---- copies ----
Tensor clone(const Tensor& self, std::optional<MemoryFormat> memory_format, Loc loc) {
  return dispatch1(OpId::clone, {self, memory_format}, loc);
}
Tensor to_copy(const Tensor& self, OptDType dtype, std::optional<Device> device,
               std::optional<MemoryFormat> memory_format, Loc loc) {
  return dispatch1(OpId::to_copy, {self, dtype, device, memory_format}, loc);
}

// contiguous(x, f) -> x when x is already laid out as f, else clone(x, memory_format=f).
namespace {

// Tensor::is_contiguous decided through SymInt comparisons: on symbolic sizes each answer is recorded as a guard,
// so that a program which returns the tensor itself (or a copy) is reused only for sizes that answer the same
// (a slice of size s0 // 2 is contiguous at s0 = 2 whatever its stride, and not at s0 = 4).
bool contiguous_guarded(const TensorMeta& m, MemoryFormat format) {
  std::vector<size_t> order;
  if (format == MemoryFormat::kChannelsLast) {
    if (m.sizes.size() != 4) return false;
    order = {1, 3, 2, 0};  // innermost first: C, W, H, N
  } else {
    for (size_t d = m.sizes.size(); d-- > 0;) order.push_back(d);
  }
  // The same walk as Tensor::is_contiguous, innermost first.
  SymInt expected(1);
  for (size_t d : order) {
    if (m.sizes[d] == 0) return true;
    if (m.sizes[d] != 1 && m.strides[d] != expected) return false;
    expected = expected * m.sizes[d];
  }
  return true;
}

}  // namespace

Tensor contiguous(const Tensor& self, MemoryFormat memory_format, Loc loc) {
  SINTER_CHECK_AT(loc, memory_format != MemoryFormat::kPreserve,
                  "contiguous(): preserve memory format is unsupported by the contiguous operator");
  SINTER_CHECK_AT(loc, memory_format != MemoryFormat::kChannelsLast || self.dim() == 4,
                  "contiguous(): channels_last format needs a rank 4 tensor, got rank {}", self.dim());
  if (contiguous_guarded(self.meta(), memory_format)) return self;
  return clone(self, memory_format, loc);
}

// ---- view rows ----
Tensor view(const Tensor& self, const SymIntList& size, Loc loc) {
  return dispatch1(OpId::view, {self, size}, loc);
}
Tensor permute(const Tensor& self, const DimList& dims, Loc loc) {
  return dispatch1(OpId::permute, {self, dims}, loc);
}
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1, Loc loc) {
  return dispatch1(OpId::transpose_int, {self, dim0, dim1}, loc);
}
Tensor expand(const Tensor& self, const SymIntList& size, Loc loc) {
  return dispatch1(OpId::expand, {self, size, false}, loc);
}
Tensor squeeze(const Tensor& self, const DimList& dims, Loc loc) {
  return dispatch1(OpId::squeeze_dims, {self, dims}, loc);
}
Tensor unsqueeze(const Tensor& self, int64_t dim, Loc loc) {
  return dispatch1(OpId::unsqueeze, {self, dim}, loc);
}
Tensor slice(const Tensor& self, int64_t dim, std::optional<SymInt> start, std::optional<SymInt> end,
             const SymInt& step, Loc loc) {
  return dispatch1(OpId::slice_Tensor, {self, dim, start, end, step}, loc);
}
Tensor select(const Tensor& self, int64_t dim, const SymInt& index, Loc loc) {
  return dispatch1(OpId::select_int, {self, dim, index}, loc);
}
Tensor as_strided(const Tensor& self, const SymIntList& size, const SymIntList& stride,
                  std::optional<SymInt> storage_offset, Loc loc) {
  return dispatch1(OpId::as_strided, {self, size, stride, storage_offset}, loc);
}
std::vector<Tensor> split(const Tensor& self, const SymInt& split_size, int64_t dim, Loc loc) {
  return dispatch(OpId::split_Tensor, {self, split_size, dim}, loc);
}
std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim, Loc loc) {
  return split(self, SymInt(split_size), dim, loc);
}
std::vector<Tensor> split(const Tensor& self, const SymIntList& split_sizes, int64_t dim, Loc loc) {
  return dispatch(OpId::split_with_sizes, {self, split_sizes, dim}, loc);
}
std::vector<Tensor> split(const Tensor& self, std::initializer_list<SymInt> split_sizes, int64_t dim, Loc loc) {
  return split(self, SymIntList(split_sizes), dim, loc);
}
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim, Loc loc) {
  return dispatch(OpId::chunk, {self, chunks, dim}, loc);
}
std::vector<Tensor> unbind(const Tensor& self, int64_t dim, Loc loc) {
  return dispatch(OpId::unbind_int, {self, dim}, loc);
}

// ---- composite views ----

// reshape(x, s) -> view(x, s) when x's strides allow it, else view(clone(x, contiguous), s).
Tensor reshape(const Tensor& self, const SymIntList& shape, Loc loc) {
  SymIntList sizes = infer_reshape_size(shape, self, loc);
  // compute_view_strides is PyTorch's computeStride, the same test the view row applies.
  if (compute_view_strides(self.sizes(), self.strides(), sizes)) return view(self, sizes, loc);
  return view(clone(self, MemoryFormat::kContiguous, loc), sizes, loc);
}

// flatten(x, a, b) -> reshape(x, sizes with dims a..b merged); a 0-dim tensor becomes 1-D.
Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim, Loc loc) {
  int64_t start = wrap("flatten", start_dim, self.dim(), loc),
          end = wrap("flatten", end_dim, self.dim(), loc);
  SINTER_CHECK_AT(loc, start <= end, "flatten(): start_dim ({}) cannot come after end_dim ({})", start_dim,
                  end_dim);
  if (self.dim() == 0) return reshape(self, {1}, loc);
  if (start == end) return self;
  SymIntList sizes(self.sizes().begin(), self.sizes().begin() + start);
  SymInt merged = 1;
  for (int64_t d = start; d <= end; ++d) merged *= self.sizes()[d];
  sizes.push_back(merged);
  sizes.insert(sizes.end(), self.sizes().begin() + end + 1, self.sizes().end());
  return reshape(self, sizes, loc);
}

// unflatten(x, d, s) -> view(x, sizes with dim d replaced by s); s may hold one -1.
Tensor unflatten(const Tensor& self, int64_t dim, const SymIntList& sizes, Loc loc) {
  SINTER_CHECK_AT(loc, self.dim() > 0, "unflatten(): cannot unflatten a 0-dim tensor");
  int64_t d = wrap("unflatten", dim, self.dim(), loc);
  SINTER_CHECK_AT(loc, !sizes.empty(), "unflatten(): sizes must be non-empty");
  SymIntList inner = sizes;
  SymInt known = 1;
  std::optional<size_t> infer_dim;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      SINTER_CHECK_AT(loc, !infer_dim, "unflatten(): only one dimension can be inferred, got sizes {}",
                      sizes.str());
      infer_dim = i;
    } else {
      SINTER_CHECK_AT(loc, sizes[i] >= 0, "unflatten(): invalid size {} in sizes {}", sizes[i].str(),
                      sizes.str());
      known *= sizes[i];
    }
  }
  const SymInt& dim_size = self.sizes()[d];
  bool ok =
      infer_dim ? (known > 0 && dim_size % known == 0) || (known == 0 && dim_size == 0) : known == dim_size;
  SINTER_CHECK_AT(
      loc, ok, "unflatten(): sizes {} don't multiply up to the size of dim {} ({}) of the input of shape {}",
      sizes.str(), dim, dim_size.str(), self.sizes().str());
  if (infer_dim) {
    SINTER_CHECK_AT(loc, known != 0, "unflatten(): the size -1 in sizes {} is ambiguous for a dim of size 0",
                    sizes.str());
    inner[*infer_dim] = dim_size / known;
  }
  SymIntList shape(self.sizes().begin(), self.sizes().begin() + d);
  shape.insert(shape.end(), inner.begin(), inner.end());
  shape.insert(shape.end(), self.sizes().begin() + d + 1, self.sizes().end());
  return view(self, shape, loc);
}

// t(x) -> transpose(x, 0, 1) for a matrix; a vector or 0-dim tensor is its own transpose (still a view).
Tensor t(const Tensor& self, Loc loc) {
  SINTER_CHECK_AT(loc, self.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is {}D",
                  self.dim());
  if (self.dim() == 2) return transpose(self, 0, 1, loc);
  if (self.dim() == 1) return transpose(self, 0, 0, loc);
  return view(self, self.sizes(), loc);
}

// narrow(x, d, start, length) -> slice(x, d, start, start + length); a negative start counts from the end.
Tensor narrow(const Tensor& self, int64_t dim, const SymInt& start, const SymInt& length, Loc loc) {
  SINTER_CHECK_AT(loc, self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor");
  SINTER_CHECK_AT(loc, length >= 0, "narrow(): length must be non-negative, got {}", length.str());
  int64_t d = wrap("narrow", dim, self.dim(), loc);
  const SymInt& size = self.sizes()[d];
  SINTER_CHECK_AT(loc, start >= -size && start <= size,
                  "narrow(): start {} is out of range for dim {} of size {} (expected in [{}, {}])",
                  start.str(), dim, size.str(), (-size).str(), size.str());
  SymInt begin = start < 0 ? start + size : start;
  SINTER_CHECK_AT(loc, begin <= size - length,
                  "narrow(): start ({}) + length ({}) exceeds dimension size ({})", begin.str(), length.str(),
                  size.str());
  return slice(self, d, begin, begin + length, 1, loc);
}

// squeeze(x) -> squeeze(x, every dim of size 1).
Tensor squeeze(const Tensor& self, Loc loc) {
  DimList dims;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (self.sizes()[d] == 1) dims.push_back(d);
  return squeeze(self, dims, loc);
}

// movedim(x, src, dst) -> permute(x, order) where src[i] lands at dst[i] and the other dims keep their order.
Tensor movedim(const Tensor& self, const DimList& source, const DimList& destination, Loc loc) {
  SINTER_CHECK_AT(
      loc, source.size() == destination.size(),
      "movedim: source ({} dims) and destination ({} dims) should contain the same number of dims",
      source.size(), destination.size());
  int64_t n = self.dim();
  if (n == 0) {  // dims 0/-1 of a 0-dim tensor move nothing; the result is still a view
    for (size_t i = 0; i < source.size(); ++i) {
      wrap("movedim", source[i], 0, loc);
      wrap("movedim", destination[i], 0, loc);
    }
    return view(self, self.sizes(), loc);
  }
  std::vector<int64_t> order(static_cast<size_t>(n), -1);
  std::vector<bool> src_used(static_cast<size_t>(n), false);
  for (size_t i = 0; i < source.size(); ++i) {
    int64_t s = wrap("movedim", source[i], n, loc), t = wrap("movedim", destination[i], n, loc);
    SINTER_CHECK_AT(loc, !src_used[s], "movedim: repeated dim {} in source", source[i]);
    SINTER_CHECK_AT(loc, order[t] == -1, "movedim: repeated dim {} in destination", destination[i]);
    src_used[s] = true;
    order[t] = s;
  }
  int64_t next_src = 0;
  for (int64_t d = 0; d < n; ++d) {
    if (order[d] != -1) continue;
    while (src_used[next_src]) ++next_src;
    order[d] = next_src++;
  }
  return permute(self, DimList(order), loc);
}

// broadcast_tensors(ts) -> expand(t, broadcast shape) for each t.
std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors, Loc loc) {
  SymIntList shape;
  for (const Tensor& t : tensors) {
    SINTER_CHECK_AT(loc, t.defined(), "broadcast_tensors(): got an undefined tensor");
    const SymIntList& s = t.sizes();
    SymIntList out(std::max(shape.size(), s.size()), SymInt(1));
    for (size_t i = 0; i < out.size(); ++i) {
      // Align from the last dim; a missing or size-1 dim takes the other's size.
      const SymInt* a = i < shape.size() ? &shape[shape.size() - 1 - i] : nullptr;
      const SymInt* b = i < s.size() ? &s[s.size() - 1 - i] : nullptr;
      SymInt& o = out[out.size() - 1 - i];
      if (a && b && same_size(*a, *b)) {
        o = *a;
      } else if (!a || *a == 1) {
        o = b ? *b : SymInt(1);
      } else if (!b || *b == 1 || *b == *a) {
        o = *a;
      } else {
        SINTER_CHECK_AT(loc, false,
                        "broadcast_tensors(): shapes {} and {} cannot be broadcast (dim {} from the end: {} vs {})",
                        shape.str(), s.str(), i, a->str(), b->str());
      }
    }
    shape = std::move(out);
  }
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) out.push_back(expand(t, shape, loc));
  return out;
}

}  // namespace sinter
