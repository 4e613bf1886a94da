// Compiled pointwise ops on IEEE special values (signed zeros, infinities, NaN) give eager's bits: pow with the
// exponents eager special-cases (pow(-0.0, -0.5) is -inf in eager and PyTorch, +inf through std::pow; found by
// sinter fuzz), and -0.0 kept apart from 0.0 wherever constants are shared (one kernel's constants, the graph's
// common subexpressions).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sinter/sinter.h"
#include "testing.h"

namespace sinter {
namespace {

const std::vector<float> kSpecials = {-0.0f, 0.0f, std::numeric_limits<float>::infinity(),
                                      -std::numeric_limits<float>::infinity(), std::nanf(""), -2.0f, 3.0f, 0.25f};

TEST(SpecialValues, PowOfSpecialValuesAsEager) {
  for (double e : {-0.5, -2.0, -1.0, 0.5, 2.0, 3.0, 0.0, 1.0, 1.5, -3.0}) {
    SCOPED_TRACE(e);
    auto f = [e](const Tensor& x) { return pow(x * 1, e); };
    Tensor x = from_vector(kSpecials, {static_cast<int64_t>(kSpecials.size())});
    Tensor want = f(x), got = compile(f, {.backend = "inductor"})(x);
    std::vector<float> w = want.to_vector<float>(), g = got.to_vector<float>();
    for (size_t i = 0; i < w.size(); ++i) {
      if (std::isnan(w[i])) {
        EXPECT_TRUE(std::isnan(g[i])) << "x = " << kSpecials[i];
      } else {
        EXPECT_EQ(g[i], w[i]) << "x = " << kSpecials[i];
        EXPECT_EQ(std::signbit(g[i]), std::signbit(w[i])) << "x = " << kSpecials[i];
      }
    }
  }
}

// sinter fuzz, seed 310 case 3489: x / -0.0 in a kernel that also compares with 0 came out as x / 0.0 (the two
// constants were one), and two divisions by 0.0 and -0.0 must stay two nodes of the graph.
TEST(SpecialValues, NegativeZeroIsNotZero) {
  auto f = [](const Tensor& x) -> std::vector<Tensor> { return {div(x, -0.0), gt(x, 0.0), div(x, 0.0), x + -0.0, x * 1 + 0.0}; };
  Tensor x = from_vector(kSpecials, {static_cast<int64_t>(kSpecials.size())});
  for (const std::string backend : {"inductor", "aot_eager"}) {
    SCOPED_TRACE(backend);
    std::vector<Tensor> want = f(x), got = compile(f, {.backend = backend})(x);
    for (size_t k = 0; k < want.size(); ++k) {
      if (want[k].dtype() == kBool) {
        EXPECT_TENSOR_EQ(got[k], want[k]);
        continue;
      }
      std::vector<float> w = want[k].to_vector<float>(), g = got[k].to_vector<float>();
      for (size_t i = 0; i < w.size(); ++i) {
        EXPECT_EQ(std::isnan(g[i]), std::isnan(w[i])) << "output " << k << ", x = " << kSpecials[i];
        if (std::isnan(w[i])) continue;
        EXPECT_EQ(g[i], w[i]) << "output " << k << ", x = " << kSpecials[i];
        EXPECT_EQ(std::signbit(g[i]), std::signbit(w[i])) << "output " << k << ", x = " << kSpecials[i];
      }
    }
  }
}

// sinter fuzz, seed 801 case 1768: where x equals a clamp bound the bound is taken, as in eager (and PyTorch's
// vectorised clamp): clamp(-0.0, min=-0.0, max=0) is +0.0, and atan2 of it with itself is 0, not -pi. The bounds
// are every special value against every x, as tensors and as numbers.
TEST(SpecialValues, ClampTakesTheBoundWhereXEqualsIt) {
  const int64_t n = static_cast<int64_t>(kSpecials.size());
  std::vector<float> xs, bounds;
  for (float x : kSpecials)
    for (float b : kSpecials) xs.push_back(x), bounds.push_back(b);
  Tensor x = from_vector(xs, {n * n}), b = from_vector(bounds, {n * n});
  Tensor zeros = from_vector(std::vector<int32_t>(static_cast<size_t>(n * n), 0), {n * n});
  auto f = [](const Tensor& x, const Tensor& b, const Tensor& z) -> std::vector<Tensor> {
    Tensor c = clamp(x, x, z);
    return {clamp(x * 1, b, {}), clamp(x * 1, {}, b), clamp(x * 1, b, b), c, atan2(c, c), clamp(x * 1, -0.0, 0.0)};
  };
  std::vector<Tensor> want = f(x, b, zeros), got = compile(f, {.backend = "inductor"})(x, b, zeros);
  for (size_t k = 0; k < want.size(); ++k) {
    std::vector<float> w = want[k].to_vector<float>(), g = got[k].to_vector<float>();
    for (size_t i = 0; i < w.size(); ++i) {
      const std::string at = fmt::format("output {}, x = {}, bound {}", k, xs[i], bounds[i]);
      EXPECT_EQ(std::isnan(g[i]), std::isnan(w[i])) << at;
      if (std::isnan(w[i])) continue;
      EXPECT_EQ(g[i], w[i]) << at;
      EXPECT_EQ(std::signbit(g[i]), std::signbit(w[i])) << at;
    }
  }
}

// sinter fuzz, seed 2026120804 cases 3407 and 3798: a conv of few input channels whose weight holds inf, its
// padding taps included: 0 * inf is NaN there, as in eager's NCHW kernels and PyTorch. The compiled (channels-last)
// kernel skipped the padding and gave a number.
TEST(SpecialValues, ConvPaddingTimesAnInfiniteWeightIsNaN) {
  Tensor w = testing::random({3, 2, 3, 3}, kFloat32, 4);
  std::vector<float> wv = w.to_vector<float>();
  wv[0] = std::numeric_limits<float>::infinity();  // output channel 0, input channel 0, tap (0, 0)
  w = from_vector(wv, {3, 2, 3, 3});
  Tensor b = testing::random({3}, kFloat32, 5);
  auto f = [&](const Tensor& x) { return conv2d(x, w, b, {1}, {1}); };
  Tensor x = testing::random({2, 2, 4, 5}, kFloat32, 6);
  Tensor want = f(x), got = compile(f, {.backend = "inductor", .freeze = true})(x);
  EXPECT_TRUE(std::isnan(want.select(0, 0).select(0, 0).select(0, 0).select(0, 0).item<float>()));  // a padded tap
  std::vector<float> wo = want.contiguous().to_vector<float>(), go = got.contiguous().to_vector<float>();
  ASSERT_EQ(wo.size(), go.size());
  for (size_t i = 0; i < wo.size(); ++i) {
    EXPECT_EQ(std::isnan(go[i]), std::isnan(wo[i])) << i;
    if (std::isnan(wo[i])) continue;
    if (std::isinf(wo[i])) EXPECT_EQ(go[i], wo[i]) << i;
    else EXPECT_NEAR(go[i], wo[i], 1e-4 * (1 + std::fabs(wo[i]))) << i;
  }
}

}  // namespace
}  // namespace sinter
