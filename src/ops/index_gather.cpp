// gather, scatter (src / value / add, functional and in place) and index_select: index tensors along one dim.
// Checks follow PyTorch's ScatterGatherChecks (a 0-dim tensor counts as 1-D); index values must lie in
// [0, size) as in PyTorch: checked as they are read, or before anything is written for the in-place forms.
#include <fmt/format.h>

#include "ops/copy.h"
#include "ops/index_loop.h"
#include "ops/index_ops.h"
#include "ops/shape_util.h"

namespace sinter {
namespace {

int64_t nonempty_dim(const Tensor& t) { return std::max<int64_t>(t.dim(), 1); }
SymInt nonempty_size(const Tensor& t, int64_t d) { return t.dim() == 0 ? SymInt(1) : t.size(d); }

void check_index_dtype(const char* name, const Tensor& index) {
  SINTER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, "{}(): Expected dtype int32/int64 for index, got {}",
               name, dtype_name(index.dtype()));
}

const char* scatter_name(OpId op) {
  return op == OpId::scatter_add || op == OpId::scatter_add_ ? "scatter_add" : "scatter";
}

// ---- gather ----

ShapeResult gather_shape(OpId, const Args& args) {
  const Tensor& self = args[0].tensor();
  const Tensor& index = args[2].tensor();
  common_device(args);
  const int64_t nd = nonempty_dim(self), dim = wrap_dim(args[1].to_int(), nd);
  if (index.numel() != 0) {
    check_index_dtype("gather", index);
    SINTER_CHECK(nonempty_dim(index) == nd, "Index tensor must have the same number of dimensions as input tensor");
    for (int64_t d = 0; d < nd; ++d) {
      SINTER_CHECK(d == dim || nonempty_size(index, d) <= nonempty_size(self, d),
                   "Size does not match at dimension {} expected index {} to be smaller than self {} apart from "
                   "dimension {}",
                   d, index.sizes().str(), self.sizes().str(), dim);
    }
  }
  return dense_meta(index.sizes(), self.dtype(), self.device());
}

void gather_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& self = args[0].tensor();
  const Tensor& index = args[2].tensor();
  const Tensor& out = outs[0];
  if (out.numel().hint() == 0) return;
  const int64_t dim = wrap_dim(args[1].to_int(), nonempty_dim(self));
  const StridedRef s = nonempty_ref(self), o = nonempty_ref(out);
  // out[i][j][k] = self[index[i][j][k]][j][k] (dim 0): the index replaces self's stride along dim. Index values
  // are checked as they are read; a bad one is reported after the loop.
  IndexLoop loop;
  loop.sizes = o.sizes;
  loop.dst = o.data;
  loop.dst_strides = o.strides;
  loop.src = s.data;
  loop.src_strides = s.strides;
  loop.src_strides[dim] = 0;
  loop.indices.push_back(index_operand(index, s.strides[dim], s.sizes[dim], /*allow_negative=*/false));
  const bool ok = visit_element_size(self.element_size(), [&]<class E>() { return run_index_loop(loop, CopyRow<E>{}); });
  if (!ok) {
    check_index_values(index, s.sizes[dim], dim, /*allow_negative=*/false);
    SINTER_INTERNAL_ASSERT(false, "an index was out of range, but the index tensor holds no bad value");
  }
}

// ---- scatter ----

bool scatter_inplace(OpId op) { return op == OpId::scatter__src || op == OpId::scatter_add_; }

ShapeResult scatter_shape(OpId op, const Args& args) {
  const Tensor& self = args[0].tensor();
  const Tensor& index = args[2].tensor();
  const char* name = scatter_name(op);
  common_device(args);
  const int64_t nd = nonempty_dim(self), dim = wrap_dim(args[1].to_int(), nd);
  const Tensor* src = args[3].is_tensor() ? &args[3].tensor() : nullptr;
  if (src) {
    SINTER_CHECK(self.dtype() == src->dtype(), "{}(): Expected self.dtype to be equal to src.dtype, got {} and {}",
                 name, dtype_name(self.dtype()), dtype_name(src->dtype()));
  }
  if (index.numel() != 0) {
    check_index_dtype(name, index);
    SINTER_CHECK(nonempty_dim(index) == nd, "Index tensor must have the same number of dimensions as self tensor");
    if (src)
      SINTER_CHECK(nonempty_dim(*src) == nd, "Index tensor must have the same number of dimensions as src tensor");
    for (int64_t d = 0; d < nd; ++d) {
      const bool fits_self = d == dim || nonempty_size(index, d) <= nonempty_size(self, d);
      const bool fits_src = !src || nonempty_size(index, d) <= nonempty_size(*src, d);
      SINTER_CHECK(fits_self && fits_src,
                   "Expected index {} to be smaller than self {} apart from dimension {}{}", index.sizes().str(),
                   self.sizes().str(), dim,
                   src ? fmt::format(" and to be smaller size than src {}", src->sizes().str()) : std::string());
    }
  }
  if (scatter_inplace(op)) return self.meta();
  return dense_meta_like(self.sizes(), self.dtype(), self);
}

void scatter_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& self = args[0].tensor();
  Tensor index = args[2].tensor();
  const Tensor& dst = outs[0];
  if (scatter_inplace(op)) {
    check_no_internal_overlap(dst);
  } else {
    copy_tensor(dst, self);
  }
  if (index.numel().hint() == 0 || dst.numel().hint() == 0) return;
  const int64_t dim = wrap_dim(args[1].to_int(), nonempty_dim(self));
  const StridedRef d = nonempty_ref(dst);
  // In place, the index is checked before anything is written, so a bad one leaves self unchanged; a fresh
  // output is checked as the loop reads the index.
  const bool inplace = scatter_inplace(op);
  if (inplace) check_index_values(index, d.sizes[dim], dim, /*allow_negative=*/false);
  // Inputs that share memory with the tensor being written are read from a copy.
  if (may_overlap(index, dst)) index = contiguous_copy(index);
  Tensor src;
  ElementBytes value;
  if (args[3].is_tensor()) {
    src = args[3].tensor();
    if (may_overlap(src, dst)) src = contiguous_copy(src);
  } else {
    value = scalar_to_element(args[3].scalar(), dst.dtype());
  }
  // self[index[i][j][k]][j][k] = src[i][j][k] (dim 0). Writes that differ only along dim may hit one element,
  // so dim is serial: duplicates resolve in row-major order (the last one wins, or all add up in order).
  IndexLoop loop;
  loop.sizes = nonempty_ref(index).sizes;
  loop.dst = d.data;
  loop.dst_strides = d.strides;
  loop.dst_strides[dim] = 0;
  if (src.defined()) {
    const StridedRef s = nonempty_ref(src);
    loop.src = s.data;
    loop.src_strides = s.strides;
  } else {
    loop.src = value.bytes;
    loop.src_strides.assign(loop.sizes.size(), 0);
  }
  loop.indices.push_back(index_operand(index, d.strides[dim], d.sizes[dim], /*allow_negative=*/false));
  loop.index_dst = true;
  loop.serial.assign(loop.sizes.size(), 0);
  loop.serial[dim] = 1;
  bool ok;
  if (op == OpId::scatter_add || op == OpId::scatter_add_) {
    ok = visit_dtype(dst.dtype(), [&]<class T>() { return run_index_loop(loop, AddRow<T>{}); });
  } else {
    ok = visit_element_size(dst.element_size(), [&]<class E>() { return run_index_loop(loop, CopyRow<E>{}); });
  }
  if (!ok) {
    check_index_values(index, d.sizes[dim], dim, /*allow_negative=*/false);
    SINTER_INTERNAL_ASSERT(false, "an index was out of range, but the index tensor holds no bad value");
  }
}

// ---- index_select ----

ShapeResult index_select_shape(OpId, const Args& args) {
  const Tensor& self = args[0].tensor();
  const Tensor& index = args[2].tensor();
  common_device(args);
  SINTER_CHECK(index.dim() <= 1, "index_select(): Index is supposed to be a vector, got {}", index.sizes().str());
  check_index_dtype("index_select", index);
  const int64_t dim = wrap_dim(args[1].to_int(), nonempty_dim(self));
  if (self.dim() == 0) {
    SINTER_CHECK(index.numel() == 1, "index_select(): Index to scalar can have only 1 value, got {} value(s)",
                 index.numel().str());
    return dense_meta({}, self.dtype(), self.device());
  }
  SymIntList sizes = self.sizes();
  sizes[dim] = index.numel();
  return dense_meta(sizes, self.dtype(), self.device());
}

void index_select_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& self = args[0].tensor();
  const Tensor& index = args[2].tensor();
  const Tensor& out = outs[0];
  if (out.numel().hint() == 0) return;
  const int64_t dim = wrap_dim(args[1].to_int(), nonempty_dim(self));
  const StridedRef s = nonempty_ref(self), o = nonempty_ref(out);
  // out[..., j, ...] = self[..., index[j], ...]: the index varies only along dim.
  IndexLoop loop;
  loop.sizes = o.sizes;
  loop.dst = o.data;
  loop.dst_strides = o.strides;
  loop.src = s.data;
  loop.src_strides = s.strides;
  loop.src_strides[dim] = 0;
  IndexOperand op = index_operand(index, s.strides[dim], s.sizes[dim], /*allow_negative=*/false);
  const int64_t index_stride = op.strides[0];
  op.strides.assign(o.sizes.size(), 0);
  op.strides[dim] = index_stride;
  loop.indices.push_back(std::move(op));
  const bool ok = visit_element_size(self.element_size(), [&]<class E>() { return run_index_loop(loop, CopyRow<E>{}); });
  if (!ok) {
    check_index_values(index, s.sizes[dim], dim, /*allow_negative=*/false);
    SINTER_INTERNAL_ASSERT(false, "an index was out of range, but the index tensor holds no bad value");
  }
}

}  // namespace

void register_gather_ops(OpTable& t) {
  t.set(OpId::gather, gather_shape, gather_kernel);
  for (OpId op : {OpId::scatter_src, OpId::scatter_value, OpId::scatter_add, OpId::scatter__src, OpId::scatter_add_})
    t.set(op, scatter_shape, scatter_kernel);
  t.set(OpId::index_select, index_select_shape, index_select_kernel);
}

}  // namespace sinter
