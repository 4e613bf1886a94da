// The autocast layer of dispatch() (include/sinter/amp.h): the thread's autocast state, each op's policy from
// PyTorch's lists, and the casts. dispatch() applies it before autograd, as PyTorch's Autocast dispatch keys sit
// above Autograd, so the casts are recorded (and differentiated, and captured) like any op.
#pragma once
#include <cstdint>

#include "ops/op_table.h"

namespace sinter {

// Casts `args` of `op` as the autocast state of this thread says, and returns true when the op is autocast (the
// caller then runs the rest of its dispatch with autocast excluded, so ops inside its kernels are not cast again).
bool apply_autocast(OpId op, Args& args);
bool autocast_active();  // some device has autocast on and this thread is not inside an autocast op

// Excludes autocast on this thread for its scope (the op's own kernels; the autograd engine's backward).
class AutocastExcluded {
 public:
  AutocastExcluded();
  ~AutocastExcluded();
  AutocastExcluded(const AutocastExcluded&) = delete;
  AutocastExcluded& operator=(const AutocastExcluded&) = delete;

 private:
  bool previous_;
};

// The state as one number, for compiled functions' guards (0: autocast off everywhere).
uint32_t autocast_state_key();

}  // namespace sinter
