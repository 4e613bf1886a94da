// The core family: copies and conversions (copy_, clone, _to_copy), fills, and the view ops' rules.
#include "ops/copy.h"
#include "ops/dispatch.h"
#include "ops/shape_util.h"
#include "ops/view_ops.h"
#include "support/check.h"

namespace sinter {
namespace {

ShapeResult copy_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  const Tensor& src = a[1].tensor();
  SymIntList b = broadcast_shapes(self.sizes(), src.sizes());
  SINTER_CHECK(b.hints() == self.sizes().hints(), "the source of shape {} cannot be broadcast to the destination's "
               "shape {}", src.sizes().str(), self.sizes().str());
  return self.meta();
}
// copy_(self, src, non_blocking) and _to_copy(self, ..., non_blocking): copy_strided serves every pair of devices
// itself, so these are the CUDA kernels too (rather than the fallback, which would stage the host operand again).
// non_blocking is read only when given: passes run these kernels on arguments without the defaults filled in.
bool given_flag(const Args& a, size_t i) { return i < a.size() && a[i].to_bool(); }
void copy_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  copy_strided(outs[0], a[1].tensor(), given_flag(a, 2));
}
void to_copy_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  copy_strided(outs[0], a[0].tensor(), given_flag(a, 4));
}

// A copy keeps the input's layout when it is dense (memory_format=preserve), as PyTorch's clone and to do.
TensorMeta copy_meta(const Tensor& self, DType dtype, Device device, const Value& format) {
  MemoryFormat f = format.is_none() ? MemoryFormat::kPreserve : format.memory_format();
  if (f == MemoryFormat::kPreserve) {
    TensorMeta m = dense_meta_like(self.sizes(), dtype, self);
    m.device = device;
    return m;
  }
  SINTER_CHECK(f != MemoryFormat::kChannelsLast || self.dim() == 4,
               "channels_last memory format needs a 4-d tensor, got rank {}", self.dim());
  return dense_meta(self.sizes(), dtype, device, f);
}

ShapeResult clone_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  return copy_meta(self, self.dtype(), self.device(), a[1]);
}

ShapeResult to_copy_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  DType dtype = a[1].is_none() ? self.dtype() : a[1].dtype();
  Device device = a[2].is_none() ? self.device() : a[2].device();
  return copy_meta(self, dtype, device, a[3]);
}

void clone_kernel(OpId, const Args& a, std::vector<Tensor>& outs) { copy_strided(outs[0], a[0].tensor()); }

// as_strided_scatter(self, src, size, stride, offset): a copy of self (same layout, offset 0) with src written
// into the (size, stride, offset) view of the copy. self must be dense so that the view means the same positions.
ShapeResult as_strided_scatter_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  const Tensor& src = a[1].tensor();
  const SymIntList& size = a[2].int_list();
  const SymIntList& stride = a[3].int_list();
  SINTER_CHECK(size.size() == stride.size(), "size {} and stride {} differ in length", size.str(), stride.str());
  SINTER_CHECK(src.sizes().hints() == size.hints(), "src of shape {} does not match the view's size {}",
               src.sizes().str(), size.str());
  TensorMeta m = dense_meta_like(self.sizes(), self.dtype(), self);
  // The stride of a dim of size 1 never moves an address, so only the other dims must agree.
  bool same_layout = true;
  for (size_t d = 0; d < m.strides.size(); ++d)
    same_layout = same_layout && (self.sizes()[d].hint() == 1 || m.strides[d].hint() == self.strides()[d].hint());
  // An empty self has no positions the view could mean differently.
  SINTER_CHECK(self.is_contiguous() || same_layout || self.numel().hint() == 0, "self must be dense (non-overlapping), got strides {}",
               self.strides().str());
  int64_t offset = a[4].is_none() ? 0 : a[4].sym_int().hint();
  int64_t last = offset, capacity = 1;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d].hint() == 0) return m;
    last += (size[d].hint() - 1) * stride[d].hint();
  }
  for (const SymInt& s : self.sizes()) capacity *= s.hint();
  SINTER_CHECK(offset >= 0 && last < capacity, "the view (size {}, stride {}, offset {}) reaches past self's {} "
               "elements", size.str(), stride.str(), offset, capacity);
  return m;
}

void as_strided_scatter_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  copy_strided(outs[0], a[0].tensor());
  int64_t offset = a[4].is_none() ? 0 : a[4].sym_int().hint();
  TensorMeta view{a[2].int_list(), a[3].int_list(), outs[0].storage_offset() + offset, outs[0].dtype(),
                  outs[0].device()};
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = outs[0].storage();
  impl->meta = std::move(view);
  copy_strided(Tensor(std::move(impl)), a[1].tensor());
}

// batch_norm_functional: batch_norm on copies of the running stats, returning the copies (functionalization's form
// of batch_norm in training, which writes its running stats in place).
ShapeResult batch_norm_functional_rule(OpId, const Args& a) {
  Args inner = a;
  ShapeResult r = op_def(OpId::batch_norm).shape(OpId::batch_norm, inner);
  for (int i : {3, 4}) {
    const Value& v = a[i];
    r.outputs.push_back(v.is_none() ? dense_meta({0}, a[0].tensor().dtype(), a[0].tensor().device())
                                    : dense_meta_like(v.tensor().sizes(), v.tensor().dtype(), v.tensor()));
  }
  return r;
}

void batch_norm_functional_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  Args inner = a;
  for (int i : {3, 4}) {
    if (a[i].is_none()) continue;
    copy_strided(outs[i - 2], a[i].tensor());
    inner[i] = Value(outs[i - 2]);
  }
  std::vector<Tensor> result = run_eager(OpId::batch_norm, inner, current_op_call() ? current_op_call()->loc : Loc());
  // Into the output given (a compiled graph's buffer, a host copy staged for a device tensor), not in its place.
  copy_strided(outs[0], result[0]);
}

ShapeResult self_rule(OpId, const Args& a) { return a[0].tensor().meta(); }
void fill_kernel(OpId, const Args& a, std::vector<Tensor>& outs) { fill_strided(outs[0], a[1].scalar()); }
void zero_kernel(OpId, const Args&, std::vector<Tensor>& outs) { fill_strided(outs[0], Scalar(0)); }

}  // namespace

void register_core_ops(OpTable& t) {
  register_view_ops(t);
  t.set(OpId::copy_, copy_rule, copy_kernel);
  t.set(OpId::clone, clone_rule, clone_kernel);
  t.set(OpId::to_copy, to_copy_rule, to_copy_kernel);
  t.set(OpId::as_strided_scatter, as_strided_scatter_rule, as_strided_scatter_kernel);
  // Copies serve CUDA tensors as they are: copy_strided moves the data between or within devices.
  t.set_kernel(OpId::copy_, kCUDA, copy_kernel);
  t.set_kernel(OpId::clone, kCUDA, clone_kernel);
  t.set_kernel(OpId::to_copy, kCUDA, to_copy_kernel);
  t.set_kernel(OpId::as_strided_scatter, kCUDA, as_strided_scatter_kernel);
  t.set(OpId::batch_norm_functional, batch_norm_functional_rule, batch_norm_functional_kernel);
  t.set(OpId::fill__Scalar, self_rule, fill_kernel);
  t.set(OpId::zero_, self_rule, zero_kernel);
}

}  // namespace sinter
