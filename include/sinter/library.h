// Custom ops: an op the user registers at run time from its schema in PyTorch's notation, with a shape rule over
// SymInt, a kernel per device, and optionally a backward formula and a decomposition. The op joins the op table:
// argument checks, the graph printer and parser, capture, guards, autograd and the ONNX importer treat it as a
// built-in. The inductor runs it as an opaque library call (its eager kernel) unless it has a decomposition.
//
//   auto rms_gate = library::define("mylib::rms_gate(Tensor x, Tensor w, float eps=1e-6) -> Tensor", {
//       .shape = [](const library::OpArgs& a) { return std::vector{library::dense_meta(a.tensor("x"))}; },
//       .cpu = [](const library::OpArgs& a) { ... return std::vector{result}; },
//       .backward = [](const std::vector<Tensor>& grads, const library::OpArgs& a) { ... return {gx, gw}; }});
//   Tensor y = rms_gate(x, w);                                  // or library::call1("mylib::rms_gate", {x, w})
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sinter/tensor.h"
#include "sinter/value.h"

namespace sinter {

enum class OpId : uint16_t;  // a row of the op table

namespace library {

// The arguments of one call, in schema order with defaults filled in, read by schema name. A view of the call's
// values: valid during the call of the function it is handed to.
class OpArgs {
 public:
  OpArgs(OpId op, const Args& values) : op_(op), values_(values) {}
  // Throws Error naming the op when its schema has no argument of that name.
  const Value& operator[](std::string_view name) const;
  const Tensor& tensor(std::string_view name) const;  // an Error unless the argument is a defined tensor
  const Value& at(size_t i) const { return values_.at(i); }
  size_t size() const { return values_.size(); }
  const Args& values() const { return values_; }
  OpId op() const { return op_; }
  std::string_view op_name() const;  // "mylib::rms_gate"

 private:
  OpId op_;
  const Args& values_;
};

// The outputs' metas (sizes over SymInt, dtype, device; empty strides mean dense ones), one per return. Runs on
// data-less tensors under capture, so it must not read data: comparing sizes is fine (a guard when symbolic).
using ShapeRule = std::function<std::vector<TensorMeta>(const OpArgs& args)>;
// Computes the outputs with sinter ops or on raw data; each must have the sizes, dtype and device the shape rule
// gave (an Error naming the op otherwise). Runs eagerly with grad mode off, even inside a compiled graph.
using Kernel = std::function<std::vector<Tensor>(const OpArgs& args)>;
// The gradient of each Tensor argument, in schema order (undefined where there is none), from the gradients of the
// outputs (zeros where none arrived) and the call's arguments (tensors saved at the call). Written with sinter ops,
// so it is itself recorded under capture and differentiable again.
using Backward = std::function<std::vector<Tensor>(const std::vector<Tensor>& grads, const OpArgs& args)>;
// The op in sinter ops (one tensor per output): the inductor compiles this instead of calling the kernel, so what
// it computes fuses with its neighbours. It may use its arguments and factories (full, zeros), not other tensors.
using Decomposition = std::function<std::vector<Tensor>(const OpArgs& args)>;

struct OpFunctions {
  ShapeRule shape;                // required
  Kernel cpu;                     // at least one kernel
  Kernel cuda;                    // optional: CUDA tensors run the CPU kernel on host copies without it
  Backward backward;              // optional: without it, a gradient through the op is an Error
  Decomposition decomposition;    // optional: without it, compiled code calls the kernel (an extern)
};

using Kwargs = std::vector<std::pair<std::string, Value>>;

// A registered op, callable like a built-in: positional arguments in schema order, then keywords by name.
class Op {
 public:
  explicit Op(OpId id) : id_(id) {}
  std::vector<Tensor> call(Args args, const Kwargs& kwargs = {}, const Loc& loc = Loc::current()) const;
  // For an op with one output (an Error otherwise).
  Tensor call1(Args args, const Kwargs& kwargs = {}, const Loc& loc = Loc::current()) const;
  template <class... Ts>
  Tensor operator()(Ts&&... args) const {
    return call1(Args{Value(std::forward<Ts>(args))...}, {}, Loc());  // a template has no caller's line
  }
  OpId id() const { return id_; }
  std::string_view name() const;

 private:
  OpId id_;
};

// Registers an op. The name needs a namespace (`mylib::name`, optionally `.overload`); arguments may be of any
// schema type, returns are Tensors, and alias annotations (views, in-place writes) are not allowed. Throws Error
// for a malformed schema, a name already taken, or a missing shape rule or kernel. Thread-safe.
Op define(std::string_view schema, OpFunctions functions);
// The registered op of that name ("mylib::rms_gate"); Error when there is none.
Op find(std::string_view name);
bool exists(std::string_view name);
std::vector<Tensor> call(std::string_view name, Args args, const Kwargs& kwargs = {}, const Loc& loc = Loc::current());
Tensor call1(std::string_view name, Args args, const Kwargs& kwargs = {}, const Loc& loc = Loc::current());

// A dense (contiguous) meta, for shape rules: the sizes, dtype and device of `like`, or given ones.
TensorMeta dense_meta(const Tensor& like);
TensorMeta dense_meta(SymIntList sizes, DType dtype, Device device);

}  // namespace library
}  // namespace sinter
