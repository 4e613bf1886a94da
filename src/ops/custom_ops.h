// Custom ops inside the op table (sinter/library.h is the user's side). A custom row's shape rule and kernels are
// fixed trampolines that find the user's functions through OpDef::custom, so the dispatcher, the interpreter and
// compiled externs call them as they call a built-in's. Autograd, the decompose pass and the ONNX importer read
// the rest (backward, decomposition) from here.
#pragma once
#include "ops/op_table.h"
#include "sinter/library.h"

namespace sinter {

struct CustomOp {
  library::ShapeRule shape;
  library::Kernel kernels[kNumDeviceTypes];
  library::Backward backward;
  library::Decomposition decomposition;
};

// The user's functions of a custom row; null for a built-in.
inline const CustomOp* custom_op(OpId op) { return is_custom_op(op) ? op_def(op).custom.get() : nullptr; }

// Runs the backward formula of `op` and checks what it returns: one gradient per Tensor argument, each undefined
// or of its argument's sizes (`arg_sizes`, per schema argument; empty for non-tensors). Error naming the op.
std::vector<Tensor> run_custom_backward(OpId op, const std::vector<Tensor>& grads, const Args& args);

}  // namespace sinter
