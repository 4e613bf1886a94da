// The one dispatch point every op passes through. Eagerly it checks the arguments against the schema, runs the
// shape rule, allocates outputs (or makes views, or writes in place) and calls the device's kernel. While capture is
// active (a thread-local hook, set with HookScope) the hook records the op instead of running it.
#pragma once
#include <string_view>
#include <vector>

#include "ops/op_table.h"
#include "support/check.h"
#include "tensor/read_hook.h"

namespace sinter {

// The capture's hook: sees every op instead of running it, and (as a ReadHook) every read of tensor data.
class DispatchHook : public ReadHook {
 public:
  // Called instead of running `op`; returns the op's outputs (data-less tensors, usually).
  virtual std::vector<Tensor> call(OpId op, const Args& args, const Loc& loc) = 0;
};

DispatchHook* current_hook();
// Installs `hook` (null: none) as this thread's hook, the read hook with it, and returns the previous one
// (HookScope does this for a scope; CaptureSuspended through this).
DispatchHook* exchange_hook(DispatchHook* hook);
class HookScope {
 public:
  explicit HookScope(DispatchHook* hook);
  ~HookScope();
  HookScope(const HookScope&) = delete;
  HookScope& operator=(const HookScope&) = delete;

 private:
  DispatchHook* previous_;
};

// Autograd's entry (src/autograd installs it when libsinter loads). dispatch() calls it first when some tensor
// argument requires grad; it runs the op through dispatch_below_autograd and records its backward node.
using AutogradFn = std::vector<Tensor> (*)(OpId op, const Args& args, const Loc& loc);
void set_autograd_fn(AutogradFn fn);

// Runs `op` through autograd where an input requires grad, then through the hook if one is active (capture),
// else eagerly.
std::vector<Tensor> dispatch(OpId op, Args args, const Loc& loc);
// The layers below autograd: the hook if one is active, else eagerly (args already normalized).
std::vector<Tensor> dispatch_below_autograd(OpId op, const Args& args, const Loc& loc);
inline Tensor dispatch1(OpId op, Args args, const Loc& loc) { return dispatch(op, std::move(args), loc)[0]; }
// Runs `op` eagerly whatever hook is active (the interpreter and the hooks themselves use this).
std::vector<Tensor> run_eager(OpId op, const Args& args, const Loc& loc);
// Runs only the shape rule: outputs are data-less tensors.
std::vector<Tensor> run_meta(OpId op, const Args& args);
// run_eager without the shape rule: the kernel writes `outs`, which the caller allocated from output metas it
// already knows (the interpreter replaying a graph's concrete recorded metas). Not for views, in-place ops or
// data-dependent ops.
void run_kernel_into(OpId op, const Args& args, std::vector<Tensor>& outs, const Loc& loc);
// Runs `op` (one output, not a view, not in place) eagerly whatever hook is active, with its output in pinned host
// memory: factories with pinned_memory(true), non-blocking copies to the host. Throws Error unless the output is
// a CPU tensor ("only dense CPU tensors can be pinned").
Tensor run_pinned(OpId op, Args args, const Loc& loc);
// Fills in defaults and checks each argument's kind against the schema; throws Error on a mismatch.
void normalize_args(const OpDef& def, Args& args);

// The op being run on this thread, for error messages (set by dispatch; the outermost call's location wins).
struct OpCallContext final : detail::ErrorContext {
  OpCallContext(OpId o, const Args* a, const Loc& l) : op(o), args(a), loc(l) {}
  OpId op;
  const Args* args;
  Loc loc;
  // "add.Tensor: <message>\n  operands: ...\n  called from file:line"
  std::string describe(const std::string& message) const override;
};
const OpCallContext* current_op_call();
// "self: float32[2, 3], other: float32[4]"
std::string describe_operands(const OpDef& def, const Args& args);

}  // namespace sinter
