// Host code reading a tensor's data (item(), to_vector(), bool(tensor), printing) while capture is active: the
// capture's hook turns the read into a graph break. The tensor layer sees only this interface; the op
// dispatcher's hook (ops/dispatch.h) is one, and its scope installs both.
#pragma once
#include <string_view>

#include "sinter/tensor.h"

namespace sinter {

class ReadHook {
 public:
  virtual ~ReadHook() = default;
  // Host code is about to read `t`'s data (`what`: "item()", "to_vector()", "bool(tensor)", "printing").
  // Returning a real tensor with the same values lets the read go on (a graph break).
  virtual Tensor materialize(const Tensor& t, std::string_view what, const Loc& loc) = 0;
  // Host code reads or replaces the .grad() of a real tensor (a parameter) while capture is active: a capture
  // makes the gradient a graph input of its own and the final one a graph output, applied after every call.
  virtual Tensor read_grad(const Tensor& owner) { return owner.impl()->grad ? Tensor(owner.impl()->grad) : Tensor(); }
  virtual void write_grad(const Tensor& owner, const Tensor& grad) { owner.impl()->grad = grad.impl_ptr(); }
};

// The .grad() of `owner` as host code sees it: through the capture's hook for a real tensor while one is active.
Tensor read_grad_field(const Tensor& owner);
void write_grad_field(const Tensor& owner, const Tensor& grad);

// The hook of the capture running on this thread, or null.
ReadHook* current_read_hook();
void set_current_read_hook(ReadHook* hook);

}  // namespace sinter
