// The core family: copies and conversions (copy_, clone, _to_copy), fills, and the view ops' rules.
#include "ops/copy.h"
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
void copy_kernel(OpId, const Args& a, std::vector<Tensor>& outs) { copy_strided(outs[0], a[1].tensor()); }

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

ShapeResult self_rule(OpId, const Args& a) { return a[0].tensor().meta(); }
void fill_kernel(OpId, const Args& a, std::vector<Tensor>& outs) { fill_strided(outs[0], a[1].scalar()); }
void zero_kernel(OpId, const Args&, std::vector<Tensor>& outs) { fill_strided(outs[0], Scalar(0)); }

}  // namespace

void register_core_ops(OpTable& t) {
  register_view_ops(t);
  t.set(OpId::copy_, copy_rule, copy_kernel);
  t.set(OpId::clone, clone_rule, clone_kernel);
  t.set(OpId::to_copy, to_copy_rule, clone_kernel);
  t.set(OpId::fill__Scalar, self_rule, fill_kernel);
  t.set(OpId::zero_, self_rule, zero_kernel);
}

}  // namespace sinter
