// The public API's overloads where C++ could pick the wrong one or none: braced dim lists for functions whose
// dim is optional (free and member forms), split by one size versus a braced list of sizes, the var/std
// argument order (dim, correction, keepdim) shared by the free and member forms, and elu's scale arguments.
#include <cmath>

#include "testing.h"

namespace sinter {
namespace {

using testing::random;

std::vector<int64_t> shape(const Tensor& t) { return t.sizes().hints(); }

TEST(ApiBraces, BracedDimListsCompileForEveryReduction) {
  Tensor x = random({2, 3, 4}, kFloat32, 1);
  const OptDims d01 = DimList{0, 1};
  EXPECT_TENSOR_EQ(sum(x, {0, 1}), sum(x, d01));
  EXPECT_TENSOR_EQ(sum(x, {0, 1}, true), sum(x, d01, true));
  EXPECT_EQ(sum(x, {0, 1}, false, kFloat64).dtype(), kFloat64);
  EXPECT_TENSOR_EQ(sum(x, {-1}), sum(x, OptDims(DimList{2})));
  EXPECT_TENSOR_EQ(sum(x, {}), sum(x));  // {} is every dim, as an empty list in PyTorch
  EXPECT_TENSOR_EQ(mean(x, {0, 1}), mean(x, d01));
  EXPECT_TENSOR_EQ(mean(x, {2}, true), mean(x, OptDims(DimList{2}), true));
  EXPECT_TENSOR_EQ(var(x, {0, 1}), var(x, d01));
  EXPECT_TENSOR_EQ(var(x, {0, 1}, 0, true), var(x, d01, 0, true));
  EXPECT_TENSOR_EQ(std(x, {1, 2}), std(x, OptDims(DimList{1, 2})));
  EXPECT_TENSOR_EQ(std(x, {1}, 0), std(x, OptDims(DimList{1}), 0));
  EXPECT_EQ(shape(amax(x, {0, 1})), (std::vector<int64_t>{4}));
  EXPECT_EQ(shape(amin(x, {0, 2}, true)), (std::vector<int64_t>{1, 3, 1}));
  EXPECT_EQ(shape(logsumexp(x, {1, 2})), (std::vector<int64_t>{2}));
  EXPECT_EQ(shape(norm(x, 2, {0, 1})), (std::vector<int64_t>{4}));
  EXPECT_EQ(shape(all(x > 0, {0, 1})), (std::vector<int64_t>{4}));
  EXPECT_EQ(shape(any(x > 0, {1, 2}, true)), (std::vector<int64_t>{2, 1, 1}));
  // Member forms.
  EXPECT_TENSOR_EQ(x.sum({0, 1}), sum(x, d01));
  EXPECT_TENSOR_EQ(x.mean({0, 1}, true), mean(x, d01, true));
  EXPECT_TENSOR_EQ(x.amax({0, 1}), amax(x, {0, 1}));
  EXPECT_TENSOR_EQ(x.amin({1, 2}), amin(x, {1, 2}));
  EXPECT_TENSOR_EQ(x.var({0, 1}), var(x, d01));
  EXPECT_TENSOR_EQ(x.std({0, 1}), std(x, d01));
  // A single dim still works everywhere.
  EXPECT_TENSOR_EQ(sum(x, 1), x.sum(1));
  EXPECT_TENSOR_EQ(mean(x, -1, true), x.mean(-1, true));
}

TEST(ApiBraces, VarAndStdTakeDimCorrectionKeepdimInBothForms) {
  Tensor x = random({3, 5}, kFloat64, 2);
  std::vector<double> v = x.to_vector<double>();
  // Row 0's population variance, by hand.
  double m = 0, ss = 0;
  for (int j = 0; j < 5; ++j) m += v[j] / 5;
  for (int j = 0; j < 5; ++j) ss += (v[j] - m) * (v[j] - m);
  Tensor pop = x.var({1}, 0, true);  // (dim, correction, keepdim) as torch.var
  EXPECT_EQ(shape(pop), (std::vector<int64_t>{3, 1}));
  EXPECT_NEAR(pop.to_vector<double>()[0], ss / 5, 1e-12);
  EXPECT_NEAR(x.var({1}).to_vector<double>()[0], ss / 4, 1e-12);  // Bessel's by default
  EXPECT_NEAR(x.std({1}, 0).to_vector<double>()[0], std::sqrt(ss / 5), 1e-12);
  EXPECT_TENSOR_EQ(x.var({1}, 0, true), var(x, {1}, 0, true));
  EXPECT_TENSOR_EQ(x.std({0}, 2, false), std(x, {0}, 2, false));
  EXPECT_TENSOR_EQ(x.var(), var(x));
  // A bool in the correction slot reads as PyTorch's `unbiased`.
  EXPECT_TENSOR_EQ(x.var({1}, false), x.var({1}, 0));
  EXPECT_TENSOR_EQ(x.var({1}, true), x.var({1}, 1));
}

TEST(ApiBraces, SplitBySizeOrByBracedSizes) {
  Tensor x = random({5, 4}, kFloat32, 3);
  std::vector<Tensor> by_two = split(x, 2);
  ASSERT_EQ(by_two.size(), 3u);
  EXPECT_EQ(shape(by_two[2]), (std::vector<int64_t>{1, 4}));
  std::vector<Tensor> sized = split(x, {2, 3});
  ASSERT_EQ(sized.size(), 2u);
  EXPECT_EQ(shape(sized[1]), (std::vector<int64_t>{3, 4}));
  std::vector<Tensor> one = split(x, {5});  // a list of one size, not a split size of 5
  ASSERT_EQ(one.size(), 1u);
  std::vector<Tensor> with_zero = split(x, {0, 5});
  ASSERT_EQ(with_zero.size(), 2u);
  EXPECT_EQ(shape(with_zero[0]), (std::vector<int64_t>{0, 4}));
  std::vector<Tensor> cols = split(x, {1, 3}, 1);
  EXPECT_EQ(shape(cols[1]), (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(x.split({2, 3}).size(), 2u);
  EXPECT_EQ(x.split({1, 1, 2}, -1).size(), 3u);
  EXPECT_EQ(x.split(2).size(), 3u);
  EXPECT_EQ(x.split({5}).size(), 1u);
  EXPECT_ERROR(split(x, {2, 2}), "split sizes [2, 2] sum to 4");
}

TEST(ApiBraces, EluTakesScaleAndInputScale) {
  Tensor x = random({64}, kFloat64, 4);
  std::vector<double> v = x.to_vector<double>();
  const double alpha = 1.5, scale = 2.0, input_scale = 0.5;
  std::vector<double> ref;
  for (double e : v) ref.push_back(scale * (e > 0 ? e : alpha * (std::exp(e * input_scale) - 1)));
  EXPECT_CLOSE(elu(x, alpha, scale, input_scale), from_vector(ref, {64}));
  EXPECT_CLOSE(elu(x.to(kFloat32), alpha, scale, input_scale), from_vector(ref, {64}).to(kFloat32));
  // selu is elu with PyTorch's constants.
  const double a = 1.6732632423543772848170429916717, s = 1.0507009873554804934193349852946;
  EXPECT_CLOSE(elu(x, a, s), selu(x));
  EXPECT_CLOSE(elu(x), elu(x, 1, 1, 1));
}

}  // namespace
}  // namespace sinter
