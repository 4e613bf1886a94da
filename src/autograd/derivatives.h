// The derivative table: one row per differentiable op of the op table, in the manner of PyTorch's
// derivatives.yaml. A row names what the backward needs saved (PyTorch's notation: input names of the op's schema,
// and `result` / `result0`, `result1`... for its outputs) and gives the formula, written with sinter's public ops so
// that a backward can itself be recorded and differentiated again.
//
// A formula sets the gradient of each differentiable input it can (BackwardContext::set by schema name). It need not
// undo broadcasting or type promotion: the node sums each gradient to its input's sizes and casts it to the input's
// dtype. Inputs of integer or bool dtype never get a gradient. An in-place op with no row of its own uses the row of
// its functional form (add_.Tensor -> add.Tensor), with self saved before the write.
#pragma once
#include <string_view>
#include <vector>

#include "ops/op_table.h"
#include "sinter/autograd.h"

namespace sinter::autograd {

class OpBackward;

// What a formula reads and writes. Names are the op schema's argument names.
class BackwardContext {
 public:
  explicit BackwardContext(OpBackward& node, std::vector<Tensor> grads) : node_(node), grads_(std::move(grads)) {}

  // The gradient of forward output i; zeros of the output's shape when no gradient reached it.
  Tensor grad(int i = 0) const;
  bool grad_defined(int i = 0) const;
  int num_outputs() const;
  OpId op() const;  // the op being differentiated
  // A saved Tensor argument (undefined for None), or a saved list.
  Tensor t(std::string_view name) const;
  std::vector<Tensor> list(std::string_view name) const;
  // Any non-tensor argument (Scalars, ints, lists, strings), always kept.
  const Value& arg(std::string_view name) const;
  double f(std::string_view name) const { return arg(name).to_double(); }
  int64_t i(std::string_view name) const;
  bool b(std::string_view name) const { return arg(name).to_bool(); }
  // A saved output (the row saves `result`).
  Tensor result(int i = 0) const;
  // Sizes, dtype and device of a Tensor argument, saved or not (index k of a list argument).
  const GradMeta& meta(std::string_view name, size_t k = 0) const;
  size_t count(std::string_view name) const;  // how many tensors a list argument holds
  // Whether the gradient of this input is wanted (it requires grad and is of a floating dtype).
  bool needs(std::string_view name, size_t k = 0) const;
  // The gradient of a Tensor input (ignored unless needed), or of each element of a list input.
  void set(std::string_view name, Tensor grad);
  void set_list(std::string_view name, std::vector<Tensor> grads);

  std::vector<Tensor>& results() { return inputs_out_; }

 private:
  OpBackward& node_;
  std::vector<Tensor> grads_;
  std::vector<Tensor> inputs_out_;  // one per next edge
  friend class OpBackward;
};

using BackwardFormula = void (*)(BackwardContext& c);

struct DerivativeRow {
  OpId op;
  const char* saves;  // "self, other", "result", "" (nothing but the non-tensor arguments)
  BackwardFormula formula;
};

// The row of `op`, or null when the op has none (a custom op has one when it was given a backward formula) (then an input that requires grad gets a node that throws
// "the derivative of OP is not implemented" when backward reaches it).
const DerivativeRow* derivative_row(OpId op);
// Every row of the table (not the in-place ops that borrow their functional form's row).
const std::vector<DerivativeRow>& derivative_rows();
// Ops whose outputs never carry gradients (comparisons, argmax, integer results, random draws...).
bool not_differentiable(OpId op);

// The rows, by family (derivatives_*.cpp); derivative_row() gathers them once.
void add_pointwise_rows(std::vector<DerivativeRow>& rows);
void add_reduction_rows(std::vector<DerivativeRow>& rows);
void add_shape_rows(std::vector<DerivativeRow>& rows);
void add_nn_rows(std::vector<DerivativeRow>& rows);

// Helpers the formulas share.
// One past the last storage element a layout reaches (its offset when it has no elements).
int64_t storage_extent(const SymIntList& sizes, const SymIntList& strides, int64_t offset);
// Sums `grad` over the dims broadcasting added to reach `sizes` (leading dims, and dims of size 1).
Tensor sum_to(const Tensor& grad, const SymIntList& sizes);

}  // namespace sinter::autograd
