// Custom ops the tests register once per process (tests/ops, tests/capture, tests/frontends/onnx use them).
//   testlib::rms_gate(Tensor x, Tensor w, float eps=1e-6) -> Tensor
//       x * rsqrt(mean(x^2 over the last dim) + eps) * w: a CPU kernel of plain loops (float32, float64), a
//       backward formula, no decomposition, so compiled code runs it as an extern.
//   testlib::rms_gate_decomposed(...): the same with a decomposition (and no backward).
//   testlib::scale_shift(Tensor x, *, float scale=1.0, int shift=0) -> Tensor
//       x * scale + shift, for keyword arguments, and no backward.
#pragma once
#include <atomic>

#include "sinter/library.h"
#include "sinter/ops.h"

namespace sinter::testing {

void define_test_ops();
// The formula in sinter ops, as a reference (computed in the inputs' dtype).
Tensor rms_gate_reference(const Tensor& x, const Tensor& w, double eps);
// How often each op's CPU kernel has run.
extern std::atomic<int> rms_gate_kernel_calls;
extern std::atomic<int> rms_gate_decomposed_kernel_calls;

}  // namespace sinter::testing
