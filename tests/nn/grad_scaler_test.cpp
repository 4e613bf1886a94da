// GradScaler (include/sinter/amp.h) against torch.amp.GradScaler's rules: scaled loss, unscaled gradients,
// skipped steps on inf/NaN, the scale's backoff and growth.
#include <cmath>
#include <limits>

#include "sinter/amp.h"
#include "testing.h"

namespace sinter::testing {
namespace {

TEST(GradScaler, ScalesTheLossAndUnscalesBeforeTheStep) {
  Tensor w = full({3}, 1.0).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  GradScaler scaler(GradScaler::Options{.init_scale = 1024.0});
  Tensor loss = sum(w * w);
  Tensor scaled = scaler.scale(loss);
  EXPECT_CLOSE(scaled, loss * 1024.0);
  scaled.backward();
  EXPECT_CLOSE(w.grad(), full({3}, 2048.0));
  EXPECT_TRUE(scaler.step(opt));
  EXPECT_CLOSE(w.grad(), full({3}, 2.0));  // unscaled in place
  EXPECT_CLOSE(w, full({3}, 0.8));         // 1 - 0.1 * 2
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1024.0);
}

TEST(GradScaler, AnInfGradientSkipsTheStepAndHalvesTheScale) {
  Tensor w = full({2}, 1.0).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  GradScaler scaler(GradScaler::Options{.init_scale = 8.0});
  w.set_grad(tensor({1.0, std::numeric_limits<double>::infinity()}, kFloat32));
  EXPECT_FALSE(scaler.step(opt));
  EXPECT_CLOSE(w, full({2}, 1.0));  // not stepped
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 4.0);
}

TEST(GradScaler, GrowsAfterTheIntervalWithoutOverflow) {
  Tensor w = full({2}, 1.0).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.0));
  GradScaler scaler(GradScaler::Options{.init_scale = 2.0, .growth_interval = 3});
  for (int i = 0; i < 3; ++i) {
    w.set_grad(full({2}, 1.0));
    scaler.step(opt);
    scaler.update();
  }
  EXPECT_EQ(scaler.get_scale(), 4.0);
}

TEST(GradScaler, UnscaleForClippingThenStep) {
  Tensor w = full({2}, 1.0).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(1.0));
  GradScaler scaler(GradScaler::Options{.init_scale = 4.0});
  w.set_grad(full({2}, 40.0));
  scaler.unscale_(opt);
  EXPECT_CLOSE(w.grad(), full({2}, 10.0));
  EXPECT_ERROR(scaler.unscale_(opt), "GradScaler", "already");
  EXPECT_TRUE(scaler.step(opt));  // does not unscale again
  EXPECT_CLOSE(w, full({2}, -9.0));
  scaler.update();
}

TEST(GradScaler, DisabledIsAPassThroughAndErrorsAreClear) {
  Tensor w = full({2}, 1.0).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.5));
  GradScaler off(GradScaler::Options{.enabled = false});
  Tensor loss = sum(w);
  EXPECT_TRUE(off.scale(loss).is_same(loss));
  loss.backward();
  EXPECT_TRUE(off.step(opt));
  EXPECT_CLOSE(w, full({2}, 0.5));
  GradScaler on;
  EXPECT_ERROR(on.update(), "GradScaler", "update() with no step()");
  EXPECT_ERROR(GradScaler(GradScaler::Options{.backoff_factor = 2.0}), "GradScaler", "backoff_factor");
}

}  // namespace
}  // namespace sinter::testing
