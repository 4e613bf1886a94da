// Autocast (include/sinter/amp.h): PyTorch's lists per device, the casts recorded for autograd and capture, the
// backward in the forward's dtypes, nesting, and compiled functions guarding the state.
#include "sinter/amp.h"
#include "sinter/compile.h"
#include "testing.h"

namespace sinter::testing {
namespace {

TEST(Autocast, MatrixProductsRunInBFloat16OnTheCpu) {
  Tensor a = random({4, 8}, kFloat32, 1), b = random({8, 3}, kFloat32, 2);
  EXPECT_FALSE(is_autocast_enabled(DeviceType::kCPU));
  {
    AutocastGuard autocast(DeviceType::kCPU);
    EXPECT_TRUE(is_autocast_enabled(DeviceType::kCPU));
    EXPECT_EQ(autocast_dtype(DeviceType::kCPU), kBFloat16);
    Tensor c = mm(a, b);
    EXPECT_EQ(c.dtype(), kBFloat16);
    EXPECT_CLOSE(c, mm(a.to(kBFloat16), b.to(kBFloat16)));
    EXPECT_EQ(linear(a, b.t()).dtype(), kBFloat16);
    EXPECT_EQ(matmul(a, b).dtype(), kBFloat16);
    // Not on the lists: the inputs' dtype.
    EXPECT_EQ(relu(a).dtype(), kFloat32);
    EXPECT_EQ(exp(a).dtype(), kFloat32);
    // Mixed dtypes after a low-precision op: the usual promotion.
    EXPECT_EQ((c + a.narrow(1, 0, 3)).dtype(), kFloat32);
  }
  EXPECT_FALSE(is_autocast_enabled(DeviceType::kCPU));
  EXPECT_EQ(mm(a, b).dtype(), kFloat32);
}

TEST(Autocast, LossesRunInFloat32) {
  AutocastGuard autocast(DeviceType::kCPU);
  Tensor logits = random({4, 5}, kFloat32, 3).to(kBFloat16);
  Tensor target = randint(0, 5, {4});
  EXPECT_EQ(cross_entropy(logits, target).dtype(), kFloat32);
  EXPECT_EQ(mse_loss(logits, logits * 0.5).dtype(), kFloat32);
}

// The float32 list of CUDA (exp, log, softmax, layer_norm, sums ...) applies to CUDA tensors only; float64 is never
// cast, nor are in-place ops, nor a call that names its dtype.
TEST(Autocast, ListsArePerDeviceAndFloat64AndInPlaceAreLeftAlone) {
  AutocastGuard autocast(DeviceType::kCPU, kFloat16);
  Tensor h = random({3, 4}, kFloat32, 4).to(kFloat16);
  EXPECT_EQ(softmax(h, -1).dtype(), kFloat16);  // the CPU list keeps softmax in low precision
  Tensor d = random({3, 4}, kFloat64, 5);
  EXPECT_EQ(mm(d, d.t()).dtype(), kFloat64);
  Tensor f = random({3, 4}, kFloat32, 6);
  Tensor g = f.clone();
  g.add_(f);
  EXPECT_EQ(g.dtype(), kFloat32);
  EXPECT_EQ(autocast_dtype(DeviceType::kCPU), kFloat16);
}

TEST(Autocast, GuardsNestAndRestore) {
  {
    AutocastGuard outer(DeviceType::kCPU);
    {
      AutocastGuard off(DeviceType::kCPU, std::nullopt, /*enabled=*/false);
      EXPECT_FALSE(is_autocast_enabled(DeviceType::kCPU));
      EXPECT_EQ(mm(random({2, 2}), random({2, 2})).dtype(), kFloat32);
    }
    EXPECT_TRUE(is_autocast_enabled(DeviceType::kCPU));
  }
  EXPECT_FALSE(is_autocast_enabled(DeviceType::kCPU));
  EXPECT_ERROR(AutocastGuard(DeviceType::kCPU, kFloat32), "autocast", "float16 or bfloat16", "float32");
}

// The casts are ops: gradients flow back through them to float32 parameters, in the dtypes the forward used,
// also when backward runs outside the autocast scope.
TEST(Autocast, GradientsReachFloat32Leaves) {
  Tensor w = random({3, 4}, kFloat32, 7).requires_grad_();
  Tensor x = random({2, 4}, kFloat32, 8);
  Tensor loss;
  {
    AutocastGuard autocast(DeviceType::kCPU);
    loss = mse_loss(linear(x, w), zeros({2, 3}));
    EXPECT_EQ(loss.dtype(), kFloat32);
  }
  loss.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  // Against the same computation written with explicit casts.
  Tensor w2 = w.detach().clone().requires_grad_();
  mse_loss(linear(x.to(kBFloat16), w2.to(kBFloat16)).to(kFloat32), zeros({2, 3})).backward();
  EXPECT_TENSOR_EQ(w.grad(), w2.grad());
}

// A compiled function records the casts autocast made, and guards the autocast state.
TEST(Autocast, CompiledFunctionsRecordTheCastsAndGuardTheState) {
  auto f = compile([](const Tensor& a, const Tensor& b) { return mm(a, b) * 2.0; }, {.backend = "aot_eager"});
  Tensor a = random({4, 8}, kFloat32, 9), b = random({8, 3}, kFloat32, 10);
  EXPECT_EQ(f(a, b).dtype(), kFloat32);
  {
    AutocastGuard autocast(DeviceType::kCPU);
    Tensor y = f(a, b);
    EXPECT_EQ(y.dtype(), kBFloat16);
    EXPECT_TENSOR_EQ(y, mm(a, b) * 2.0);
  }
  EXPECT_EQ(f(a, b).dtype(), kFloat32);
  EXPECT_EQ(f.stats().compiles, 2);
  EXPECT_NE(f.stats().recompile_reasons.at(0).reason.find("autocast"), std::string::npos)
      << f.stats().recompile_reasons.at(0).reason;
  // The inductor computes the same numbers.
  auto g = compile([](const Tensor& a, const Tensor& b) { return relu(mm(a, b)); });
  AutocastGuard autocast(DeviceType::kCPU);
  EXPECT_CLOSE(g(a, b), relu(mm(a, b)));
  EXPECT_EQ(g(a, b).dtype(), kBFloat16);
}

}  // namespace
}  // namespace sinter::testing
