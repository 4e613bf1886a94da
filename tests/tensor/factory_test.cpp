// Factories and the Philox generator: dtypes, values, reproducibility from (seed, offset).
#include <cmath>

#include "tensor/generator.h"
#include "testing.h"

namespace sinter {
namespace {

TEST(Factory, DefaultDTypesFollowPyTorch) {
  EXPECT_EQ(zeros({2}).dtype(), kFloat32);
  EXPECT_EQ(full({2}, 1).dtype(), kInt64);
  EXPECT_EQ(full({2}, 1.0).dtype(), kFloat32);
  EXPECT_EQ(full({2}, true).dtype(), kBool);
  EXPECT_EQ(arange(5).dtype(), kInt64);
  EXPECT_EQ(arange(0, 1, 0.25).dtype(), kFloat32);
  EXPECT_EQ(randint(0, 5, {3}).dtype(), kInt64);
}

TEST(Factory, ArangeLinspaceEyeValues) {
  EXPECT_EQ(arange(0, 1, 0.25).to_vector<double>(), (std::vector<double>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(arange(10, 0, -3).to_vector<int64_t>(), (std::vector<int64_t>{10, 7, 4, 1}));
  EXPECT_ERROR(arange(0, 5, 0), "arange step must be nonzero");
  EXPECT_ERROR(arange(5, 0, 1), "inconsistent");
  std::vector<double> l = linspace(0, 1, 5, TensorOptions(kFloat64)).to_vector<double>();
  EXPECT_EQ(l, (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(eye(2, 3).to_vector<float>(), (std::vector<float>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(eye(3).sizes().hints(), (std::vector<int64_t>{3, 3}));
}

// The generator is Philox 4x32-10 itself: Random123's known-answer vectors (counter words c0..c3, key k0, k1).
TEST(Random, PhiloxMatchesRandom123KnownAnswers) {
  struct Case {
    uint32_t c[4], k[2], out[4];
  };
  const Case cases[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  auto join = [](uint32_t lo, uint32_t hi) { return static_cast<uint64_t>(hi) << 32 | lo; };
  for (const Case& c : cases) {
    const Philox4x32 p = Philox4x32::compute(join(c.c[0], c.c[1]), join(c.k[0], c.k[1]), join(c.c[2], c.c[3]));
    for (int i = 0; i < 4; ++i) EXPECT_EQ(p.out[i], c.out[i]) << std::hex << c.c[0] << " word " << i;
  }
  // Element i of a draw at (seed, offset) is block offset + i under key seed.
  EXPECT_EQ(philox_uniform(7, 12), static_cast<float>(Philox4x32::compute(12, 7).out[0] >> 8) / 16777216.0f);
}

TEST(Random, SeedReproducesAndStateAdvances) {
  manual_seed(42);
  Tensor a = randn({1000});
  GeneratorState after = get_rng_state();
  EXPECT_EQ(after.offset, 1000u);
  manual_seed(42);
  EXPECT_TENSOR_EQ(randn({1000}), a);
  Tensor b = randn({1000});
  EXPECT_GT(testing::rel_error(b, a), 0.5);
  // Restoring a state replays the same draw.
  set_rng_state(after);
  EXPECT_TENSOR_EQ(randn({1000}), b);
}

TEST(Random, DistributionsHaveTheRightMoments) {
  manual_seed(1);
  std::vector<double> n = randn({200000}, TensorOptions(kFloat64)).to_vector<double>();
  double mean = 0, var = 0;
  for (double v : n) mean += v;
  mean /= n.size();
  for (double v : n) var += (v - mean) * (v - mean);
  var /= n.size();
  EXPECT_NEAR(mean, 0, 0.01);
  EXPECT_NEAR(var, 1, 0.01);
  std::vector<float> u = rand({100000}).to_vector<float>();
  double umean = 0;
  for (float v : u) {
    ASSERT_GE(v, 0.0f);
    ASSERT_LT(v, 1.0f);
    umean += v;
  }
  EXPECT_NEAR(umean / u.size(), 0.5, 0.01);
  std::vector<int64_t> r = randint(-3, 4, {10000}).to_vector<int64_t>();
  std::vector<int> counts(7, 0);
  for (int64_t v : r) {
    ASSERT_GE(v, -3);
    ASSERT_LT(v, 4);
    counts[v + 3]++;
  }
  for (int c : counts) EXPECT_GT(c, 1200);
  Tensor nm = normal(5.0, 2.0, {100000}, TensorOptions(kFloat64));
  EXPECT_NEAR(nm.mean().item<double>(), 5.0, 0.05);
}

TEST(Random, InPlaceFillsThroughViews) {
  manual_seed(3);
  Tensor x = zeros({4, 6});
  Tensor col = x.select(1, 2);
  col.uniform_(2, 3);
  std::vector<float> v = x.to_vector<float>();
  for (int i = 0; i < 4; ++i) {
    EXPECT_GE(v[i * 6 + 2], 2.0f);
    EXPECT_EQ(v[i * 6 + 1], 0.0f);
  }
  EXPECT_ERROR(zeros({2}, TensorOptions(kInt64)).normal_(), "normal_ needs a floating tensor");
  EXPECT_ERROR(randn({2}, TensorOptions(kInt64)), "randn needs a floating dtype");
}

}  // namespace
}  // namespace sinter
