// gelu's float path (a rational erf, see pmath::gelu_erf_f): accuracy against float64 over the whole range,
// special values, and agreement of float32 with float64 inputs.
#include <cmath>
#include <limits>

#include "testing.h"

namespace sinter {
namespace {

TEST(PointwiseGelu, FloatMatchesFloat64AcrossTheRange) {
  std::vector<double> xs;
  for (double x = -12; x <= 12; x += 0.003) xs.push_back(x);
  Tensor x64 = from_vector(xs, {static_cast<int64_t>(xs.size())});
  std::vector<double> ref;
  for (double x : xs) ref.push_back(0.5 * x * (1 + std::erf(x / std::sqrt(2.0))));
  Tensor want = from_vector(ref, {static_cast<int64_t>(ref.size())});
  EXPECT_CLOSE(gelu(x64.to(kFloat32)), want.to(kFloat32));
  EXPECT_CLOSE(gelu(x64), want);
  // Pointwise: within 3e-7 * max(1, |x|) (the rational's error and the rounding of h + h * erf, scaled by |x|),
  // plus float rounding of the result.
  std::vector<float> got = gelu(x64.to(kFloat32)).to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_NEAR(got[i], ref[i], 3e-7 * std::max(1.0, std::fabs(xs[i])) + 2e-7 * std::fabs(ref[i])) << xs[i];
  // Where gelu is not small, the error is relative too.
  for (size_t i = 0; i < xs.size(); ++i)
    if (std::fabs(ref[i]) > 0.05) EXPECT_NEAR(got[i], ref[i], 4e-6 * std::fabs(ref[i])) << xs[i];
}

TEST(PointwiseGelu, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> v = gelu(from_vector(std::vector<float>{inf, -inf, nan, 0.f, -30.f, 30.f}, {6})).to_vector<float>();
  EXPECT_EQ(v[0], inf);
  EXPECT_TRUE(std::isnan(v[1]));  // 0.5 * -inf * (1 + erf(-inf)) = -inf * 0
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_EQ(v[3], 0.f);
  EXPECT_EQ(v[4], 0.f);
  EXPECT_EQ(v[5], 30.f);
  // Past the rational's range erf is exactly +-1: large negative inputs give exactly 0, large positive ones x.
  std::vector<float> tails = gelu(from_vector(std::vector<float>{-5.6f, -7.f, -1e30f, 5.6f, 1e30f}, {5})).to_vector<float>();
  EXPECT_EQ(tails[0], 0.f);
  EXPECT_EQ(tails[1], 0.f);
  EXPECT_EQ(tails[2], 0.f);
  EXPECT_EQ(tails[3], 5.6f);
  EXPECT_EQ(tails[4], 1e30f);
  // bf16 and f16 compute in float and round once.
  Tensor x = testing::random({257}, kFloat32, 3) * 4;
  EXPECT_CLOSE(gelu(x.to(kBFloat16)), gelu(x).to(kBFloat16), 1e-2);
  EXPECT_CLOSE(gelu(x.to(kFloat16)), gelu(x).to(kFloat16), 1e-2);
}

}  // namespace
}  // namespace sinter
