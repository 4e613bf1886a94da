// Compiled var/std give eager's numbers: the variance of a constant is exactly 0, one element with correction
// 1 is 0/0 = NaN (not inf), correction >= N divides by 0 (NaN for a zero sum of squares, inf otherwise), as
// eager and PyTorch; ordinary inputs agree with a float64 reference.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "inductor/inductor_ops_cases.h"
#include "testing.h"

namespace sinter {
namespace {

using inductor_ops::Case;
using inductor_ops::Inputs;

TEST(VarianceCompiled, ConstantIsZeroAndOneElementIsNaN) {
  auto f = [](const Tensor& t) { return var(t * 1); };
  Tensor c = full({12}, 0.1);
  EXPECT_EQ(f(c).item<double>(), 0.0);
  EXPECT_EQ(compile(f)(c).item<double>(), 0.0);
  auto g = [](const Tensor& t) { return var(pow(t, 3), {0}, 1); };
  auto cg = compile(g);
  for (float v : {3.5f, 1.7f, -2.3f, 0.37f}) {
    Tensor one = from_vector<float>({v}, {1});
    EXPECT_TRUE(std::isnan(g(one).item<double>())) << v;
    EXPECT_TRUE(std::isnan(cg(one).item<double>())) << v;
  }
}

std::vector<Case> variance_cases() {
  std::vector<Case> cases;
  for (double corr : {0.0, 1.0, 2.0}) {
    for (bool keep : {false, true}) {
      const std::string tag = fmt::format(" correction {}{}", corr, keep ? " keepdim" : "");
      cases.push_back(
          {"var all" + tag, [corr, keep](const Inputs& i) { return var(i[0] * 1, OptDims{}, corr, keep); }});
      cases.push_back(
          {"var dim 1" + tag, [corr, keep](const Inputs& i) { return var(i[0], {1}, corr, keep); }});
      cases.push_back(
          {"std dim 0" + tag, [corr, keep](const Inputs& i) { return std(exp(i[0]), {0}, corr, keep); }});
      cases.push_back({"std dims 0, 1" + tag, [corr, keep](const Inputs& i) {
                         return std(i[0] + 1, {0, 1}, corr, keep);
                       }});
      // A mean of the same input beside it (var_mean's pair).
      cases.push_back({"var + mean dim 1" + tag, [corr, keep](const Inputs& i) {
                         return var(i[0], {1}, corr, keep) + mean(i[0], {1}, keep);
                       }});
    }
  }
  return cases;
}

TEST(VarianceCompiled, MatchesEagerOnOrdinaryConstantAndDegenerateInputs) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    // [5, 7] random, a constant, a single row and column (N = 1 along dim 0 or 1), and N = 2 (correction 2
    // divides by 0).
    inductor_ops::check_cases(variance_cases(), {testing::random({5, 7}, dt, 1)});
    inductor_ops::check_cases(variance_cases(), {full({5, 7}, 0.1, TensorOptions(dt))});
    inductor_ops::check_cases(variance_cases(), {testing::random({1, 7}, dt, 2)});
    inductor_ops::check_cases(variance_cases(), {testing::random({5, 1}, dt, 3)});
    inductor_ops::check_cases(variance_cases(), {testing::random({2, 2}, dt, 4)});
  }
}

// Against float64 arithmetic done here: sum((x - mean)^2) / max(0, N - correction).
TEST(VarianceCompiled, AgreesWithAFloat64Reference) {
  Tensor x = testing::random({6, 50}, kFloat32, 5) * 3 + 100;  // an offset that punishes E[x^2] - E[x]^2
  std::vector<double> v = x.to(kFloat64).contiguous().to_vector<double>();
  for (double corr : {0.0, 1.0, 2.0}) {
    auto f = [corr](const Tensor& t) { return std::vector<Tensor>{var(t, {1}, corr), std(t, {1}, corr)}; };
    std::vector<Tensor> got = compile(f)(x);
    std::vector<double> want_var, want_std;
    for (int r = 0; r < 6; ++r) {
      double m = 0, ss = 0;
      for (int j = 0; j < 50; ++j) m += v[r * 50 + j];
      m /= 50;
      for (int j = 0; j < 50; ++j) ss += (v[r * 50 + j] - m) * (v[r * 50 + j] - m);
      want_var.push_back(ss / std::max(0.0, 50 - corr));
      want_std.push_back(std::sqrt(want_var.back()));
    }
    EXPECT_CLOSE(got[0], from_vector<double>(want_var, {6}).to(kFloat32), 1e-5) << corr;
    EXPECT_CLOSE(got[1], from_vector<double>(want_std, {6}).to(kFloat32), 1e-5) << corr;
  }
  // Correction beyond N: inf for a nonzero sum of squares, NaN for a zero one.
  auto h = [](const Tensor& t) { return var(t, {1}, 3); };
  Tensor two = from_vector<float>({1, 2, 5, 5}, {2, 2});
  Tensor got = compile(h)(two);
  std::vector<float> out = got.to_vector<float>();
  EXPECT_TRUE(std::isinf(out[0]) && out[0] > 0);
  EXPECT_TRUE(std::isnan(out[1]));
}

}  // namespace
}  // namespace sinter
