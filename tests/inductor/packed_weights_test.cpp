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
  if (!blas::sgemm_bf16_available()) {  // medium allows bfloat16, it does not require it
    EXPECT_TENSOR_EQ(mm(a, b), mm(a, b));
    EXPECT_CLOSE(fast(x)[0], full[0], 1e-5);
    GTEST_SKIP() << "no AVX512-BF16 on this CPU: float32 products at every precision";
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

}  // namespace
}  // namespace sinter
