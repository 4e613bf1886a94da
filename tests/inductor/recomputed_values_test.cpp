// A value that the inductor computes in two places (a reduction's input and the pointwise kernel after it) has
// the same bits in both, as in eager, where it is computed once: generated code does not contract a * b + c into
// an FMA in one place and round it in the other. Found by sinter fuzz: a one-element LayerNorm of
// leaky_relu(x) gave 8e-6 instead of 0, and remainder by it gave a number where eager gives NaN.
#include <gtest/gtest.h>

#include "sinter/sinter.h"
#include "testing.h"

namespace sinter {
namespace {

TEST(RecomputedValues, OneElementLayerNormIsExactlyItsBias) {
  nn::LayerNorm m(1, 1e-5, true);
  auto f = [&](const Tensor& x) { return m(leaky_relu(x, 0.2)); };
  auto g = [&](const Tensor& x) { return remainder(x, m(leaky_relu(x, 0.2))); };
  auto cf = compile(f, {.backend = "inductor"});
  auto cg = compile(g, {.backend = "inductor"});
  for (float v : {-3.2f, 0.7f, -0.0821f, 123.4f, -77.7f}) {
    Tensor x = from_vector(std::vector<float>{v}, {1});
    EXPECT_EQ(cf(x).item<float>(), 0.0f) << v;
    EXPECT_TRUE(std::isnan(cg(x).item<float>())) << v;
    EXPECT_TRUE(std::isnan(g(x).item<float>())) << v;
  }
}

// x * s + b feeding both a mean over one element and the subtraction of that mean: exactly 0, as in eager.
TEST(RecomputedValues, CentringOverOneElementGivesZeros) {
  auto f = [](const Tensor& x, const Tensor& s) {
    Tensor y = x * s + 0.1;
    return y - y.mean(-1, true);
  };
  Tensor x = testing::random({4, 1}, kFloat32, 1), s = testing::random({1}, kFloat32, 2);
  Tensor got = compile(f, {.backend = "inductor"})(x, s);
  EXPECT_TENSOR_EQ(got, f(x, s));
  EXPECT_EQ(got.abs().max().item<float>(), 0.0f);
}

}  // namespace
}  // namespace sinter
