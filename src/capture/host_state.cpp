// Host state inside compiled functions (compile.h): is_compiling, CaptureSuspended, host_scalar and
// guard_host_state, each handed to the tracer recording on this thread.
#include "capture/tracer.h"
#include "sinter/compile.h"
#include "sinter/ops.h"

namespace sinter {

namespace {

capture::Tracer* current_tracer() { return dynamic_cast<capture::Tracer*>(current_hook()); }

}  // namespace

bool is_compiling() { return current_tracer() != nullptr; }

CaptureSuspended::CaptureSuspended() : previous_(exchange_hook(nullptr)) {}
CaptureSuspended::~CaptureSuspended() { exchange_hook(static_cast<DispatchHook*>(previous_)); }

Tensor host_scalar(std::function<double()> read, TensorOptions options) {
  SINTER_CHECK(static_cast<bool>(read), "host_scalar: the read function is empty");
  if (capture::Tracer* t = current_tracer()) return t->host_scalar(std::move(read), options);
  return full({}, read(), options);
}

void guard_host_state(std::function<bool()> holds, std::string what) {
  SINTER_CHECK(static_cast<bool>(holds), "guard_host_state: the guard function is empty");
  if (capture::Tracer* t = current_tracer()) t->guard_host_state(std::move(holds), std::move(what));
}

}  // namespace sinter
