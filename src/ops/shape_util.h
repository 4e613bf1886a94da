// Helpers for shape rules: broadcasting, type promotion, dims, metas. All work on SymInt, so they serve capture.
#pragma once
#include <optional>
#include <span>
#include <vector>

#include "ops/op_table.h"
#include "tensor/dims.h"

namespace sinter {

// Broadcasts sizes as PyTorch does; throws Error naming both shapes when they do not broadcast.
SymIntList broadcast_shapes(const SymIntList& a, const SymIntList& b);
// Whether two sizes are the same without a guard: equal constants, or the same expression.
bool same_size(const SymInt& a, const SymInt& b);
SymIntList broadcast_all(const std::vector<const SymIntList*>& shapes);

// PyTorch's type promotion. promote_types is the lattice; result_type applies the priority of dimensioned
// tensors over zero-dim tensors over (weak) scalars, category by category (bool < integer < floating).
DType promote_types(DType a, DType b);
struct PromotionOperand {
  DType dtype;
  enum Kind : uint8_t { kDimTensor, kZeroDimTensor, kScalar } kind;
};
DType result_type(const std::vector<PromotionOperand>& operands);
// Operands of `args` that are tensors (rank > 0 or 0) or Scalars, in order.
DType result_type_of(const Args& args, std::initializer_list<int> arg_indices);
inline PromotionOperand operand_of(const Tensor& t) {
  if (t.impl()->wrapped_number)
    return {is_floating(t.dtype()) ? kFloat32 : t.dtype(), PromotionOperand::kScalar};
  return {t.dtype(), t.dim() == 0 ? PromotionOperand::kZeroDimTensor : PromotionOperand::kDimTensor};
}
inline PromotionOperand operand_of(const Scalar& s) { return {s.default_dtype(), PromotionOperand::kScalar}; }
// Whether a value of dtype `from` may be written into a tensor of dtype `to` by an in-place op.
bool can_cast(DType from, DType to);

// A fresh, dense output: contiguous strides (or channels-last).
TensorMeta dense_meta(const SymIntList& sizes, DType dtype, Device device,
                      MemoryFormat format = MemoryFormat::kContiguous);
// A fresh, dense output of an elementwise op over `operands` (broadcast to `sizes`), laid out as PyTorch's
// TensorIterator lays it out: contiguous, channels-last or the one dense layout when every operand has it, else
// the dims ordered by the operands' strides, the first operand that tells two dims apart deciding. So a
// transposed, channels-last or strided (non-dense) input gives an output of the same dimension order.
TensorMeta layout_of_operands(const SymIntList& sizes, DType dtype, Device device,
                              std::span<const Tensor* const> operands);
// layout_of_operands of `like` alone when it has `sizes` (empty_like's preserve_format), else contiguous.
TensorMeta dense_meta_like(const SymIntList& sizes, DType dtype, const Tensor& like);
// A view of `base` with new sizes/strides/offset.
TensorMeta view_meta(const Tensor& base, SymIntList sizes, SymIntList strides, SymInt offset);

// The common device of the tensor arguments; throws Error when they differ (0-dim CPU tensors may mix, as in PyTorch).
Device common_device(const Args& args);
// "float32[2, 3]"
std::string describe(const Tensor& t);

}  // namespace sinter

namespace sinter {
// Replaces one -1 in `shape` by the size that makes it hold `numel` elements; checks the count matches.
SymIntList infer_size(const SymIntList& shape, const SymInt& numel);
// Strides that view a tensor of (sizes, strides) as `new_sizes` without copying, or nullopt when the layout
// does not allow it (PyTorch's computeStride).
std::optional<SymIntList> compute_view_strides(const SymIntList& sizes, const SymIntList& strides,
                                               const SymIntList& new_sizes);
}  // namespace sinter
