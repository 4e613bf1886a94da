// What the pointwise family's files share: output metas for broadcast ops, the generic in-place rule and
// kernel (an in-place row runs its functional row's rule and kernel with self as the output), operand helpers
// and the checks PyTorch makes on dtypes.
#pragma once
#include <string_view>
#include <vector>

#include "ops/loops.h"
#include "ops/shape_util.h"

namespace sinter::pointwise {

// Broadcast sizes of the tensor arguments at `indices` (non-tensors are skipped).
SymIntList broadcast_args(const Args& args, std::initializer_list<int> indices);
// A fresh output of `sizes`, laid out from the tensor arguments at `indices` as TensorIterator does
// (layout_of_operands; host numbers take no part).
TensorMeta output_meta(const Args& args, std::initializer_list<int> indices, const SymIntList& sizes, DType dtype);
// Both of the above for the common case.
inline ShapeResult pointwise_result(const Args& args, std::initializer_list<int> indices, DType dtype) {
  return output_meta(args, indices, broadcast_args(args, indices), dtype);
}

// Adds argument `v` (a tensor or a Scalar) to `loop` as an input of an op writing `out`.
void add_operand(loops::Loop& loop, const Tensor& out, const Value& v);

// The functional row of an in-place row (add__Tensor -> add_Tensor); the op itself when it has none.
OpId functional_of(OpId op);
// In-place rows: the functional row's rule must give self's sizes and a dtype that casts to self's; self may not
// have elements that share memory. Returns self's meta.
ShapeResult inplace_shape(OpId op, const Args& args);
// Runs the functional row's CPU kernel with outs = {self}.
void inplace_kernel(OpId op, const Args& args, std::vector<Tensor>& outs);

// "{op} is not supported for {dtype} tensors" as a user error.
[[noreturn]] void unsupported_dtype(OpId op, DType dtype, std::string_view wanted = {});
std::string_view base_name(OpId op);  // "add" for add.Tensor

// A Scalar in compute type C.
template <class C>
C scalar_as(const Scalar& s) {
  return s.is_floating() ? cast_to<C>(s.to_double()) : cast_to<C>(s.to_int());
}

// The family's parts (pointwise_unary.cpp, pointwise_binary.cpp, pointwise_ternary.cpp).
void register_pointwise_unary(OpTable& t);
void register_pointwise_binary(OpTable& t);
void register_pointwise_ternary(OpTable& t);

// Whether any element of `t` (or the Scalar) is zero: integer division checks its divisor before the loop runs.
bool has_zero(const Value& v);

}  // namespace sinter::pointwise
