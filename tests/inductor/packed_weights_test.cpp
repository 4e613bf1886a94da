// GEMMs against weights frozen into the graph (packed once, when first used) and the float32 matmul precision
// setting (bfloat16 products on a CPU with AVX512-BF16), eager and compiled.
#include <gtest/gtest.h>

#include "ops/blas.h"
#include "ops/sgemm.h"
#include "sinter/compile.h"
#include "sinter/cuda.h"
#include "sinter/nn_functional.h"
#include "sinter/ops.h"
#include "sinter/precision.h"
#include "testing.h"

namespace sinter {
namespace {

// Puts the process setting back whatever a test does.
struct PrecisionScope {
  std::string was = get_float32_matmul_precision();
  ~PrecisionScope() { set_float32_matmul_precision(was); }
};

// A linear layer (weight read transposed), a product with a row-major weight, an epilogue, and a bias.
struct Mlp {
  Tensor w1 = randn({300, 200}), b1 = randn({300}), w2 = randn({300, 97});
  std::vector<Tensor> operator()(const Tensor& x) const {
    return {matmul(gelu(nn::functional::linear(x, w1, b1)), w2)};
  }
};

TEST(PackedWeights, FrozenWeightsMatchEagerOnEveryCallAndSize) {
  Mlp mlp;
  auto fast = compile(mlp, {.dynamic = Dynamic::kAlways, .freeze = true});
  for (int64_t n : {2, 3, 2, 5}) {
    Tensor x = randn({n, 33, 200});
    EXPECT_CLOSE(fast(x)[0], mlp(x)[0], 1e-5) << "batch " << n;
  }
}

// A few rows against a weight stored [K, N] (its [N, K] copy is made once for the dot products of thin
// products) and against one stored [N, K].
TEST(PackedWeights, ThinProductsAgainstFrozenWeightsOfEitherLayout) {
  Tensor w_kn = randn({300, 97}), w_nk = randn({97, 300});
  auto heads = [&](const Tensor& x) { return std::vector<Tensor>{matmul(x, w_kn), nn::functional::linear(x, w_nk)}; };
  auto fast = compile(heads, {.dynamic = Dynamic::kAlways, .freeze = true});
  for (int64_t m : {1, 3, 8, 3, 12}) {
    Tensor x = randn({m, 300});
    std::vector<Tensor> want = heads(x), got = fast(x);
    EXPECT_CLOSE(got[0], want[0], 1e-5) << m << " rows";
    EXPECT_CLOSE(got[1], want[1], 1e-5) << m << " rows";
  }
}

// Conv weights frozen into the graph are packed once too; at "medium" the compiled implicit GEMMs of deep convs
// (here the 3x3 one, 288 deep) are bfloat16's (eager's conv of a contiguous input may stay in float32: medium
// allows bfloat16, it does not require it).
TEST(PackedWeights, FrozenConvWeightsMatchEagerAtEveryPrecision) {
  PrecisionScope scope;
  Tensor w1 = randn({32, 32, 3, 3}), b1 = randn({32}), w2 = randn({64, 32, 1, 1});
  auto net = [&](const Tensor& x) {
    return std::vector<Tensor>{conv2d(relu(conv2d(x, w1, b1, {1}, {1})), w2)};
  };
  auto fast = compile(net, {.freeze = true});
  Tensor x = randn({2, 32, 12, 12});
  Tensor full = fast(x)[0];
  EXPECT_CLOSE(full, net(x)[0], 1e-5);
  set_float32_matmul_precision("medium");
  Tensor medium = fast(x)[0];
  EXPECT_CLOSE(medium, net(x)[0], 2e-2);
  if (blas::sgemm_bf16_pays()) EXPECT_FALSE(testing::close(medium, full, 1e-5)) << "medium computed in float32";
  set_float32_matmul_precision("highest");
  for (int64_t n : {1, 2}) {
    Tensor y = randn({n, 32, 12, 12});
    EXPECT_CLOSE(fast(y)[0], net(y)[0], 1e-5) << "batch " << n;
  }
}

TEST(MatmulPrecision, NamesAreTorchsAndHighAllowsTf32) {
  PrecisionScope scope;
  EXPECT_EQ(get_float32_matmul_precision(), "highest");
  EXPECT_THROW(set_float32_matmul_precision("low"), Error);
  set_float32_matmul_precision("high");
  EXPECT_EQ(get_float32_matmul_precision(), "high");
  EXPECT_TRUE(cuda::matmul_allow_tf32());
  set_float32_matmul_precision("highest");
  EXPECT_FALSE(cuda::matmul_allow_tf32());
}

// "medium": eager and compiled products round both operands to bfloat16 and sum in float32 (the same sums as
// float32 products of the rounded operands); back at "highest" the same compiled function computes in float32
// again, without a recompile.
TEST(MatmulPrecision, MediumRoundsOperandsToBFloat16EagerAndCompiled) {
  PrecisionScope scope;
  Mlp mlp;
  Tensor x = randn({2, 40, 200});
  auto fast = compile(mlp, {.freeze = true});
  std::vector<Tensor> full = mlp(x);
  EXPECT_CLOSE(fast(x)[0], full[0], 1e-5);
  auto rounded = [](const Tensor& t) { return t.to(kBFloat16).to(kFloat32); };
  Tensor a = randn({64, 300}), b = randn({300, 130});
  Tensor want = mm(rounded(a), rounded(b));
  set_float32_matmul_precision("medium");
  if (!blas::sgemm_bf16_pays()) {  // medium allows bfloat16, it does not require it
    EXPECT_CLOSE(fast(x)[0], full[0], 1e-5);
    GTEST_SKIP() << "bfloat16 products are not faster on this CPU (or it has no AVX512-BF16): float32 at every "
                    "precision";
  }
  Tensor got = mm(a, b);
  EXPECT_CLOSE(got, want, 1e-5);
  set_float32_matmul_precision("highest");
  EXPECT_FALSE(testing::close(got, mm(a, b), 1e-5)) << "a medium-precision product came out in float32";
  set_float32_matmul_precision("medium");
  std::vector<Tensor> eager_medium = mlp(x);
  EXPECT_CLOSE(fast(x)[0], eager_medium[0], 1e-5);
  EXPECT_CLOSE(eager_medium[0], full[0], 3e-2);
  set_float32_matmul_precision("highest");
  EXPECT_CLOSE(fast(x)[0], full[0], 1e-5);
}

// Products of bfloat16 tensors (autocast's on the CPU) take the bfloat16 micro-kernels at every precision: their
// operands are bfloat16 values already, so only the float32 sums' order differs from a float32 product's.
TEST(MatmulPrecision, BFloat16TensorsMatchTheirFloat64ProductRounded) {
  Tensor a = randn({2, 70, 300}).to(kBFloat16), b = randn({300, 130}).to(kBFloat16);
  Tensor c = randn({3, 40, 64}).to(kBFloat16), d = randn({3, 64, 90}).to(kBFloat16);
  for (auto [x, y] : {std::pair{a, b}, std::pair{c, d}}) {
    Tensor want = matmul(x.to(kFloat64), y.to(kFloat64)), got = matmul(x, y);
    ASSERT_EQ(got.dtype(), kBFloat16);
    double err = (got.to(kFloat64) - want).abs().max().item<double>() / want.abs().max().item<double>();
    EXPECT_LT(err, 8e-3) << "bfloat16 output rounding is 2^-8 relative at most";
  }
}

}  // namespace
}  // namespace sinter
