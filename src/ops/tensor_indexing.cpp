// Tensor::index and index_put_ with LibTorch's TensorIndex lists, as PyTorch's Python indexing applies them:
// integers, slices, None, bools and Ellipsis first, as views (select, slice, unsqueeze); then the tensors, as one
// advanced index over the dims of that view. Assignment writes through the view: copy_ (or fill_) without
// tensors, index_put_ with them.
#include <fmt/format.h>

#include "sinter/indexing.h"
#include "sinter/ops.h"
#include "support/check.h"

namespace sinter {

using indexing::TensorIndex;
using Kind = TensorIndex::Kind;

namespace indexing {
TensorIndex::TensorIndex(const char* ellipsis) : kind_(Kind::kEllipsis) {
  SINTER_CHECK(std::string_view(ellipsis) == "...", "index: the only string an index takes is \"...\", got \"{}\"",
               ellipsis);
}
}  // namespace indexing

namespace {

// The view the basic indices select, and the tensor indices over its dims (undefined: `:`; none when empty).
struct Indexed {
  Tensor view;
  std::vector<Tensor> advanced;
};

bool is_mask(const Tensor& t) { return t.dtype() == kBool || t.dtype() == kUInt8; }

Indexed apply_basic(const Tensor& self, const TensorIndex* begin, const TensorIndex* end, const Loc& loc) {
  int64_t consumed = 0, ellipses = 0;
  for (const TensorIndex* i = begin; i != end; ++i) {
    switch (i->kind()) {
      case Kind::kInteger:
      case Kind::kSlice: ++consumed; break;
      case Kind::kTensor:
        consumed += i->tensor().defined() && is_mask(i->tensor()) ? i->tensor().dim() : 1;
        break;
      case Kind::kEllipsis: ++ellipses; break;
      default: break;
    }
  }
  SINTER_CHECK_AT(loc, ellipses <= 1, "index: an index can only have a single ellipsis ('...')");
  SINTER_CHECK_AT(loc, consumed <= self.dim(), "index: too many indices for tensor of dimension {} ({} given)",
                  self.dim(), consumed);
  Indexed r{self, {}};
  int64_t dim = 0;  // the dim of r.view the next index applies to
  bool any_tensor = false;
  for (const TensorIndex* i = begin; i != end; ++i) {
    switch (i->kind()) {
      case Kind::kNone:
        r.view = r.view.unsqueeze(dim, loc);
        r.advanced.emplace_back();
        ++dim;
        break;
      case Kind::kEllipsis:
        for (int64_t k = 0; k < self.dim() - consumed; ++k) r.advanced.emplace_back();
        dim += self.dim() - consumed;
        break;
      case Kind::kInteger: r.view = r.view.select(dim, i->integer(), loc); break;
      case Kind::kBool:  // x[True] adds a dim of 1, x[False] one of 0
        r.view = r.view.unsqueeze(dim, loc);
        if (!i->boolean()) r.view = r.view.narrow(dim, 0, 0, loc);
        r.advanced.emplace_back();
        ++dim;
        break;
      case Kind::kSlice: {
        const indexing::Slice& s = i->slice();
        SymInt step = s.step.value_or(SymInt(1));
        r.view = r.view.slice(dim, s.start, s.stop, step, loc);
        r.advanced.emplace_back();
        ++dim;
        break;
      }
      case Kind::kTensor: {
        const Tensor& t = i->tensor();
        any_tensor = any_tensor || t.defined();
        if (t.defined() && is_mask(t) && t.dim() == 0) {  // a 0-dim mask is a bool: a new dim, kept or emptied
          r.view = r.view.unsqueeze(dim, loc);
          r.advanced.push_back(t.unsqueeze(0, loc));
          ++dim;
        } else {
          r.advanced.push_back(t);
          dim += t.defined() && is_mask(t) ? t.dim() : 1;
        }
        break;
      }
    }
  }
  if (!any_tensor) r.advanced.clear();
  while (!r.advanced.empty() && !r.advanced.back().defined()) r.advanced.pop_back();
  return r;
}

// The value PyTorch assigns: its leading dims of size 1 dropped (so a [1, n] value fits an [n] target), then
// broadcast by the write.
Tensor assignable(Tensor value, const Loc& loc) {
  while (value.dim() > 0 && value.size(0) == 1) value = value.squeeze(DimList{0}, loc);
  return value;
}

}  // namespace

Tensor Tensor::index(std::initializer_list<TensorIndex> indices, Loc loc) const {
  Indexed r = apply_basic(*this, indices.begin(), indices.end(), loc);
  return r.advanced.empty() ? r.view : sinter::index(r.view, r.advanced, loc);
}
Tensor Tensor::index(const std::vector<TensorIndex>& indices, Loc loc) const {
  Indexed r = apply_basic(*this, indices.data(), indices.data() + indices.size(), loc);
  return r.advanced.empty() ? r.view : sinter::index(r.view, r.advanced, loc);
}
Tensor Tensor::index(const std::vector<Tensor>& indices, Loc loc) const { return sinter::index(*this, indices, loc); }

namespace {

void put(Tensor& self, const TensorIndex* begin, const TensorIndex* end, const Tensor& values, const Loc& loc) {
  Indexed r = apply_basic(self, begin, end, loc);
  if (r.advanced.empty()) {
    r.view.copy_(assignable(values, loc), loc);
    return;
  }
  r.view.index_put_(r.advanced, assignable(values, loc), false, loc);
}

}  // namespace

Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Tensor& values, Loc loc) {
  put(*this, indices.begin(), indices.end(), values, loc);
  return *this;
}
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Scalar& value, Loc loc) {
  put(*this, indices.begin(), indices.end(), full({}, value, TensorOptions(dtype(), device())), loc);
  return *this;
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& values, Loc loc) {
  put(*this, indices.data(), indices.data() + indices.size(), values, loc);
  return *this;
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Scalar& value, Loc loc) {
  put(*this, indices.data(), indices.data() + indices.size(), full({}, value, TensorOptions(dtype(), device())),
      loc);
  return *this;
}

}  // namespace sinter
