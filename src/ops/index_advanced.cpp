// Advanced indexing: index.Tensor (x[i, :, j]) and index_put / index_put_ (x[i, :, j] = v, or += with
// accumulate). Boolean/uint8 masks become their nonzero coordinates (one index per masked dim), integer indices
// broadcast together, and the broadcast dims go where PyTorch puts them: in place of the indexed dims when those
// are adjacent, else at the front.
#include <fmt/format.h>

#include <optional>

#include "ops/copy.h"
#include "ops/index_loop.h"
#include "ops/index_ops.h"
#include "ops/shape_util.h"

namespace sinter {
namespace {

bool is_mask(DType t) { return t == kBool || t == kUInt8; }

void check_index_dtype(const Tensor& t) {
  SINTER_CHECK(t.dtype() == kInt64 || t.dtype() == kInt32 || is_mask(t.dtype()),
               "tensors used as indices must be long, int, byte or bool tensors, got {}", dtype_name(t.dtype()));
}

// Where the result's dims come from: self dims that are not indexed, and the broadcast shape of the indices.
struct IndexLayout {
  SymIntList sizes;               // the indexing result's sizes
  int64_t bstart = 0, brank = 0;  // the broadcast index dims are result dims [bstart, bstart + brank)
  std::vector<int64_t> self_dim;  // per result dim: the self dim it walks, -1 inside the broadcast block
};

// shapes: one entry per leading self dim, the shape of its integer index or null for a full slice.
IndexLayout index_layout(const SymIntList& self_sizes, const std::vector<const SymIntList*>& shapes) {
  const int64_t nd = static_cast<int64_t>(self_sizes.size()), n = static_cast<int64_t>(shapes.size());
  int64_t first = -1, last = -1;
  bool adjacent = true;
  size_t brank = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!shapes[i]) continue;
    if (first >= 0 && last != i - 1) adjacent = false;
    if (first < 0) first = i;
    last = i;
    brank = std::max(brank, shapes[i]->size());
  }
  IndexLayout out;
  auto add_self = [&](int64_t d) {
    out.sizes.push_back(self_sizes[d]);
    out.self_dim.push_back(d);
  };
  if (first < 0) {
    for (int64_t d = 0; d < nd; ++d) add_self(d);
    return out;
  }
  SymIntList b(brank, SymInt(1));
  for (const SymIntList* s : shapes) {
    if (!s) continue;
    for (size_t j = 0; j < s->size(); ++j) {
      const size_t pos = brank - s->size() + j;
      if ((*s)[j] == 1) continue;
      if (b[pos] == 1) {
        b[pos] = (*s)[j];
        continue;
      }
      if (b[pos] == (*s)[j]) continue;
      std::string all;
      for (const SymIntList* t : shapes)
        if (t) all += (all.empty() ? "" : ", ") + t->str();
      SINTER_CHECK(false, "shape mismatch: indexing tensors could not be broadcast together with shapes {}", all);
    }
  }
  out.brank = static_cast<int64_t>(brank);
  auto add_block = [&] {
    out.bstart = static_cast<int64_t>(out.sizes.size());
    for (const SymInt& s : b) {
      out.sizes.push_back(s);
      out.self_dim.push_back(-1);
    }
  };
  if (adjacent) {
    for (int64_t d = 0; d < first; ++d) add_self(d);
    add_block();
    for (int64_t d = last + 1; d < nd; ++d) add_self(d);
  } else {
    add_block();
    for (int64_t d = 0; d < nd; ++d)
      if (d >= n || !shapes[d]) add_self(d);
  }
  return out;
}

// Checks the index list without data; returns whether any index is a mask (whose result size needs data).
bool check_index_list(const Tensor& self, const std::vector<Tensor>& indices) {
  bool any_mask = false;
  int64_t consumed = 0;
  for (const Tensor& t : indices) {
    if (t.defined()) {
      check_index_dtype(t);
      any_mask |= is_mask(t.dtype());
    }
    consumed += t.defined() && is_mask(t.dtype()) ? t.dim() : 1;
  }
  SINTER_CHECK(consumed <= self.dim(), "too many indices for tensor of dimension {} (got {})", self.dim(), consumed);
  return any_mask;
}

IndexLayout static_layout(const Tensor& self, const std::vector<Tensor>& indices) {
  std::vector<const SymIntList*> shapes;
  for (const Tensor& t : indices) shapes.push_back(t.defined() ? &t.sizes() : nullptr);
  return index_layout(self.sizes(), shapes);
}

void check_values_broadcast(const SymIntList& values, const SymIntList& result) {
  const int64_t vr = static_cast<int64_t>(values.size()), rr = static_cast<int64_t>(result.size());
  bool ok = true;
  for (int64_t j = 0; j < vr; ++j) {
    const int64_t r = rr - vr + j;
    ok = ok && (values[j] == 1 || (r >= 0 && values[j] == result[r]));
  }
  SINTER_CHECK(ok, "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
               values.str(), result.str());
}

ShapeResult index_shape(OpId, const Args& args) {
  const Tensor& self = args[0].tensor();
  const std::vector<Tensor>& indices = args[1].tensor_list();
  if (check_index_list(self, indices)) return ShapeResult::unknown();
  return dense_meta(static_layout(self, indices).sizes, self.dtype(), self.device());
}

ShapeResult index_put_shape(OpId op, const Args& args) {
  const Tensor& self = args[0].tensor();
  const std::vector<Tensor>& indices = args[1].tensor_list();
  const Tensor& values = args[2].tensor();
  common_device(args);
  SINTER_CHECK(values.dtype() == self.dtype(),
               "Index put requires the source and destination dtypes match, got {} for the destination and {} for "
               "the source.",
               dtype_name(self.dtype()), dtype_name(values.dtype()));
  if (!check_index_list(self, indices)) check_values_broadcast(values.sizes(), static_layout(self, indices).sizes);
  if (op == OpId::index_put_) return self.meta();
  return dense_meta_like(self.sizes(), self.dtype(), self);
}

// ---- kernels ----

// One index per leading self dim after masks became coordinates.
struct DimIndex {
  const void* data = nullptr;
  bool is_int32 = false;
  SymIntList sizes;
  std::vector<int64_t> strides;  // elements
  Tensor source;                 // the user's tensor, to bounds-check (mask coordinates are valid by construction)
};

struct ExpandedIndices {
  std::vector<std::optional<DimIndex>> dims;
  std::vector<std::vector<int64_t>> coords;  // owns the mask coordinates the DimIndex entries point into
};

ExpandedIndices expand_indices(const Tensor& self, const std::vector<Tensor>& indices) {
  check_index_list(self, indices);
  ExpandedIndices ex;
  int64_t pos = 0;
  for (const Tensor& t : indices) {
    if (!t.defined()) {
      ex.dims.emplace_back();
      ++pos;
      continue;
    }
    if (!is_mask(t.dtype())) {
      DimIndex di;
      di.data = t.data_ptr();
      di.is_int32 = t.dtype() == kInt32;
      di.sizes = t.sizes();
      for (const SymInt& s : t.strides()) di.strides.push_back(s.hint());
      di.source = t;
      ex.dims.push_back(std::move(di));
      ++pos;
      continue;
    }
    SINTER_CHECK(t.dim() > 0, "indexing with a 0-dim boolean tensor is not supported");
    for (int64_t j = 0; j < t.dim(); ++j) {
      SINTER_CHECK(t.size(j) == self.size(pos + j),
                   "The shape of the mask {} at index {} does not match the shape of the indexed tensor {} at index {}",
                   t.sizes().str(), j, self.sizes().str(), pos + j);
    }
    int64_t n = 0;
    ex.coords.push_back(nonzero_coords(t, &n));
    const int64_t k = t.dim();
    for (int64_t j = 0; j < k; ++j) {
      DimIndex di;
      di.data = n > 0 ? ex.coords.back().data() + j : nullptr;
      di.sizes = {n};
      di.strides = {k};
      ex.dims.push_back(std::move(di));
    }
    pos += k;
  }
  return ex;
}

// The loop over the indexing result: `target` restrided over it (stride 0 along the broadcast block) and one
// index operand per indexed dim, broadcast over the block.
struct ResultLoop {
  IndexLayout layout;
  std::vector<int64_t> sizes;
  std::vector<int64_t> target_strides;  // bytes
  std::vector<IndexOperand> ops;
};

ResultLoop make_result_loop(const Tensor& target, const ExpandedIndices& ex) {
  ResultLoop rl;
  std::vector<const SymIntList*> shapes;
  for (const auto& di : ex.dims) shapes.push_back(di ? &di->sizes : nullptr);
  rl.layout = index_layout(target.sizes(), shapes);
  rl.sizes = rl.layout.sizes.hints();
  const StridedRef t = strided_ref(target);
  const int64_t rank = static_cast<int64_t>(rl.sizes.size());
  for (int64_t r = 0; r < rank; ++r) rl.target_strides.push_back(rl.layout.self_dim[r] >= 0 ? t.strides[rl.layout.self_dim[r]] : 0);
  for (size_t d = 0; d < ex.dims.size(); ++d) {
    if (!ex.dims[d]) continue;
    const DimIndex& di = *ex.dims[d];
    IndexOperand op;
    op.data = di.data;
    op.is_int32 = di.is_int32;
    op.step = t.strides[d];
    op.size = t.sizes[d];
    op.strides.assign(rank, 0);
    const int64_t ir = static_cast<int64_t>(di.sizes.size());
    for (int64_t j = 0; j < ir; ++j)
      if (di.sizes[j].hint() != 1) op.strides[rl.layout.bstart + rl.layout.brank - ir + j] = di.strides[j];
    rl.ops.push_back(std::move(op));
  }
  return rl;
}

// Reports the first out-of-range value (row-major, first indexed dim first) of the user's index tensors.
void check_all_indices(const Tensor& target, const ExpandedIndices& ex) {
  for (size_t d = 0; d < ex.dims.size(); ++d)
    if (ex.dims[d] && ex.dims[d]->source.defined())
      check_index_values(ex.dims[d]->source, target.size(d).hint(), static_cast<int64_t>(d), /*allow_negative=*/true);
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

void index_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& self = args[0].tensor();
  const ExpandedIndices ex = expand_indices(self, args[1].tensor_list());
  ResultLoop rl = make_result_loop(self, ex);
  if (outs.empty()) outs.push_back(empty_from_meta(dense_meta(rl.layout.sizes, self.dtype(), self.device())));
  const Tensor& out = outs[0];
  if (product(rl.sizes) == 0) {
    check_all_indices(self, ex);  // nothing to read, but PyTorch still rejects bad indices
    return;
  }
  const StridedRef o = strided_ref(out);
  IndexLoop loop;
  loop.sizes = rl.sizes;
  loop.dst = o.data;
  loop.dst_strides = o.strides;
  loop.src = static_cast<const char*>(self.data_ptr());
  loop.src_strides = rl.target_strides;
  loop.indices = std::move(rl.ops);
  // Index values are checked as they are read; a bad one is reported after the loop.
  const bool ok = visit_element_size(self.element_size(), [&]<class E>() { return run_index_loop(loop, CopyRow<E>{}); });
  if (!ok) {
    check_all_indices(self, ex);
    SINTER_INTERNAL_ASSERT(false, "an index was out of range, but none of the index tensors holds a bad value");
  }
}

void index_put_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& self = args[0].tensor();
  std::vector<Tensor> indices = args[1].tensor_list();
  Tensor values = args[2].tensor();
  const bool accumulate = args[3].to_bool();
  const Tensor& target = outs[0];
  if (op == OpId::index_put_) {
    check_no_internal_overlap(target);
    // Inputs that share memory with the tensor being written are read from a copy.
    if (may_overlap(values, target)) values = contiguous_copy(values);
    for (Tensor& t : indices)
      if (t.defined() && may_overlap(t, target)) t = contiguous_copy(t);
  } else {
    copy_tensor(target, self);
  }
  const ExpandedIndices ex = expand_indices(target, indices);
  ResultLoop rl = make_result_loop(target, ex);
  check_values_broadcast(values.sizes(), rl.layout.sizes);
  // In place, the indices are checked before anything is written, so a bad one leaves self unchanged; a fresh
  // output is checked as the loop reads them.
  const bool inplace = op == OpId::index_put_;
  if (inplace || product(rl.sizes) == 0) check_all_indices(target, ex);
  if (product(rl.sizes) == 0) return;
  const int64_t rank = static_cast<int64_t>(rl.sizes.size()), vr = values.dim();
  IndexLoop loop;
  loop.sizes = rl.sizes;
  loop.dst = static_cast<char*>(target.data_ptr());
  loop.dst_strides = rl.target_strides;
  loop.src = static_cast<const char*>(values.data_ptr());
  loop.src_strides.assign(rank, 0);
  for (int64_t j = 0; j < vr; ++j) {
    const int64_t r = rank - vr + j;
    if (r >= 0 && values.size(j).hint() != 1)
      loop.src_strides[r] = values.stride(j).hint() * static_cast<int64_t>(values.element_size());
  }
  loop.indices = std::move(rl.ops);
  loop.index_dst = true;
  // Result positions that differ only in the broadcast block may name the same element (duplicate indices):
  // that block runs in order on one thread, so the last write wins and accumulation is deterministic.
  loop.serial.assign(rank, 0);
  for (int64_t r = rl.layout.bstart; r < rl.layout.bstart + rl.layout.brank; ++r) loop.serial[r] = 1;
  bool ok;
  if (accumulate) {
    ok = visit_dtype(target.dtype(), [&]<class T>() { return run_index_loop(loop, AddRow<T>{}); });
  } else {
    ok = visit_element_size(target.element_size(), [&]<class E>() { return run_index_loop(loop, CopyRow<E>{}); });
  }
  if (!ok) {
    check_all_indices(target, ex);
    SINTER_INTERNAL_ASSERT(false, "an index was out of range, but none of the index tensors holds a bad value");
  }
}

}  // namespace

void register_advanced_ops(OpTable& t) {
  t.set(OpId::index_Tensor, index_shape, index_kernel);
  t.set(OpId::index_put, index_put_shape, index_put_kernel);
  t.set(OpId::index_put_, index_put_shape, index_put_kernel);
}

}  // namespace sinter
