// Gradient checks in float64: autograd's gradients against central finite differences.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "autograd/derivatives.h"
#include "testing.h"

namespace sinter::testing {

using GradFn = std::function<Tensor(const std::vector<Tensor>&)>;

// One call of an op for the gradient check: inputs of a floating dtype are differentiated (made float64 leaves);
// the others (indices, masks) are passed as they are.
struct GradSample {
  OpId op;
  std::string what;
  GradFn fn;
  std::vector<Tensor> inputs;
  bool second_order = false;  // also check the gradient of the gradient (create_graph)
  double eps = 1e-6;          // the finite differences' step (larger where the function rounds to float32)
};

// The analytic gradients of sum(fn(inputs) * v), v a fixed random tensor, against central differences with step
// `eps`, and again with every input laid out non-contiguously. Passes when |analytic - numeric| <= atol + rtol *
// |numeric| everywhere.
::testing::AssertionResult gradcheck(const GradFn& fn, const std::vector<Tensor>& inputs, double eps = 1e-6,
                                     double atol = 1e-5, double rtol = 1e-3);
// gradcheck of the function that maps the inputs to their gradients (created with create_graph).
::testing::AssertionResult gradgradcheck(const GradFn& fn, const std::vector<Tensor>& inputs);

// gradcheck (and gradgradcheck where asked) of every sample; a sample that throws fails naming itself.
void check_samples(const std::vector<GradSample>& samples);

// The samples of each family of rows (tests/autograd/*_grad_test.cpp); every row has at least one.
std::vector<GradSample> pointwise_samples();
std::vector<GradSample> reduction_samples();
std::vector<GradSample> shape_samples();
std::vector<GradSample> nn_samples();

// Random float64 data: values in +-[0.2, 1.2] (away from 0, the kink of abs, relu, ...), or positive in [lo, hi].
Tensor away_from_zero(const SymIntList& sizes, uint64_t seed);
Tensor positive(const SymIntList& sizes, uint64_t seed, double lo = 0.5, double hi = 2.0);

}  // namespace sinter::testing
