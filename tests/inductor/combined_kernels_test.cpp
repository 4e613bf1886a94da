// Combined kernels: consecutive flat element-wise kernels that share no buffer one of them writes run as one
// launch on the CPU (an optimiser's update of each parameter); kernels that depend on each other do not. And the
// scheduler's rule that keeps a large element-wise node out of a full reduction's one row.
#include <gtest/gtest.h>

#include "sinter/compile.h"
#include "sinter/nn.h"
#include "sinter/ops.h"
#include "sinter/optim.h"
#include "testing.h"

namespace sinter {
namespace {

TEST(CombinedKernels, IndependentKernelsOfDifferentShapesRunAsOneLaunch) {
  auto f = [](const Tensor& a, const Tensor& b, const Tensor& c) {
    return std::vector<Tensor>{a * 2 + 1, exp(b), sigmoid(c) * c};
  };
  Tensor a = testing::random({7}, kFloat32, 1), b = testing::random({3, 5}, kFloat32, 2),
         c = testing::random({64, 1000}, kFloat32, 3);  // large enough to split over threads
  auto g = compile(f);
  std::vector<Tensor> got = g(a, b, c), want = f(a, b, c);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_CLOSE(got[i], want[i]);
  EXPECT_EQ(g.stats().kernels_per_call, 1);
}

TEST(CombinedKernels, AKernelReadingAnotherOnesOutputIsNotCombinedWithIt) {
  auto f = [](const Tensor& a, const Tensor& c) {
    Tensor x = a + 1;
    return std::vector<Tensor>{x, x.unsqueeze(1) * c};
  };
  Tensor a = testing::random({3}, kFloat32, 4), c = testing::random({3, 7}, kFloat32, 5);
  auto g = compile(f);
  std::vector<Tensor> got = g(a, c), want = f(a, c);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TENSOR_EQ(got[i], want[i]);
  EXPECT_EQ(g.stats().kernels_per_call, 2);
}

// A value written back into an input (computed in the input's memory where that is safe) and another kernel of
// the same launch reading that input's old values: the write must not reach the reader.
TEST(CombinedKernels, AWriteBackIsNotComputedIntoAnInputAnotherKernelOfTheLaunchReads) {
  auto f = [](Tensor a, const Tensor& b) {
    Tensor out = b * a;
    a.add_(1.0);
    return out;
  };
  Tensor a0 = testing::random({256}, kFloat32, 6), b = testing::random({300, 256}, kFloat32, 7);
  Tensor a1 = a0.clone(), a2 = a0.clone();
  Tensor want = f(a1, b);
  Tensor got = compile(f)(a2, b);
  EXPECT_TENSOR_EQ(got, want);
  EXPECT_TENSOR_EQ(a2, a1);
}

// The whole AdamW step over parameters of several shapes: their updates share launches, and the parameters
// and the optimiser's state end as eager's.
struct Net : nn::Module {
  nn::Linear fc1{8, 16}, fc2{16, 4};
  nn::LayerNorm norm{4};
  Net() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_module("norm", norm);
  }
  Tensor forward(const Tensor& x) override { return norm(fc2(gelu(fc1(x)))); }
};

Tensor train_step(Net& m, optim::AdamW& opt, const Tensor& x) {
  opt.zero_grad();
  Tensor out = m(x);
  Tensor loss = mean(out * out);
  loss.backward();
  opt.step();
  return loss.detach();
}

TEST(CombinedKernels, AnOptimiserStepUpdatesItsParametersInFewLaunches) {
  manual_seed(8);
  Net eager, compiled;
  compiled.load_state_dict(eager.state_dict());
  optim::AdamW eager_opt(eager.parameters(), optim::AdamWOptions(1e-2));
  optim::AdamW compiled_opt(compiled.parameters(), optim::AdamWOptions(1e-2));
  auto f = compile([&](const Tensor& x) { return train_step(compiled, compiled_opt, x); });
  for (int k = 0; k < 3; ++k) {
    Tensor x = testing::random({5, 8}, kFloat32, 20 + k);
    Tensor want = train_step(eager, eager_opt, x), got = f(x);
    EXPECT_CLOSE(got, want) << "step " << k;
  }
  std::vector<Tensor> pe = eager.parameters(), pc = compiled.parameters();
  ASSERT_EQ(pe.size(), pc.size());
  for (size_t i = 0; i < pe.size(); ++i) EXPECT_CLOSE(pc[i], pe[i]) << "parameter " << i;
  // Six parameters of four shapes: their six updates are one combined launch or a few.
  EXPECT_GT(f.stats().kernels_per_call, 0);
  EXPECT_LE(f.stats().kernels_per_call, 16);
}

// A large element-wise node after a full reduction (a loss's mean and its gradient) runs as a kernel of its own,
// in parallel, instead of inside the reduction's one row; a small one still joins it.
TEST(CombinedKernels, ALargeElementWiseNodeAfterAFullReductionIsNotSerialisedIntoItsRow) {
  auto f = [](const Tensor& x) { return x * mean(x); };
  for (auto [n, kernels] : {std::pair<int64_t, int>{1000, 1}, {300000, 2}}) {
    SCOPED_TRACE(n);
    Tensor x = testing::random({n}, kFloat32, 9);
    auto g = compile(f);
    EXPECT_CLOSE(g(x), f(x));
    EXPECT_EQ(g.stats().kernels_per_call, kernels);
  }
}

}  // namespace
}  // namespace sinter
