// Eager autograd's semantics, as PyTorch's: leaves and non-leaves, accumulation, retain_graph, create_graph,
// grad mode, the in-place checks, autograd::grad.
#include "sinter/autograd.h"
#include "sinter/library.h"
#include "testing.h"

namespace sinter::testing {
namespace {

Tensor leaf(std::vector<double> values) {
  Tensor t = tensor(values, kFloat64);
  t.requires_grad_(true);
  return t;
}

TEST(Autograd, BackwardAccumulatesIntoLeaves) {
  Tensor x = leaf({1, 2, 3});
  Tensor y = (x * x).sum();
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(y.requires_grad());
  EXPECT_EQ(y.grad_fn()->name(), "SumBackward0");
  y.backward();
  EXPECT_TENSOR_EQ(x.grad(), tensor({2.0, 4.0, 6.0}, kFloat64));
  (x * 3.0).sum().backward();
  EXPECT_TENSOR_EQ(x.grad(), tensor({5.0, 7.0, 9.0}, kFloat64));
  x.set_grad(Tensor());
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, OneLeafUsedTwiceSumsItsGradients) {
  Tensor x = leaf({2});
  Tensor y = x * x * x + x;  // 3x^2 + 1 = 13
  y.backward();
  EXPECT_TENSOR_EQ(x.grad(), tensor({13.0}, kFloat64));
}

TEST(Autograd, NonLeafGradOnlyWithRetainGrad) {
  Tensor x = leaf({1, 2});
  Tensor h = x * 2.0;
  Tensor k = x * 3.0;
  k.retain_grad();
  EXPECT_TRUE(k.retains_grad());
  ((h + k) * k).sum().backward();
  EXPECT_FALSE(h.grad().defined());
  EXPECT_TENSOR_EQ(k.grad(), (h + 2.0 * k).detach());
}

TEST(Autograd, SecondBackwardNeedsRetainGraph) {
  Tensor x = leaf({1, 2});
  Tensor y = (x.exp()).sum();
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  EXPECT_CLOSE(x.grad(), 2.0 * x.detach().exp());
  EXPECT_ERROR(y.backward(), "backward through the graph a second time", "retain_graph");
}

TEST(Autograd, ModifiedSavedTensorIsAnError) {
  Tensor x = leaf({1, 2});
  Tensor a = x * 1.0;
  Tensor y = a * a;  // saves a
  a.add_(1.0);
  EXPECT_ERROR(y.sum().backward(), "modified by an in-place operation", "MulBackward0", "version");
}

TEST(Autograd, InPlaceOnALeafThatRequiresGradIsAnError) {
  Tensor x = leaf({1, 2});
  EXPECT_ERROR(x.add_(1.0), "leaf tensor that requires grad", "in-place");
  {
    NoGradGuard no_grad;
    x.add_(1.0);  // allowed: an optimiser's update
  }
  EXPECT_TENSOR_EQ(x.detach(), tensor({2.0, 3.0}, kFloat64));
}

TEST(Autograd, InPlaceOnANonLeafRewritesItsHistory) {
  Tensor x = leaf({1, 2});
  Tensor y = x * 2.0;
  y.mul_(x);  // y = 2x^2
  y.sum().backward();
  EXPECT_TENSOR_EQ(x.grad(), tensor({4.0, 8.0}, kFloat64));
}

TEST(Autograd, GradModeGuards) {
  Tensor x = leaf({1, 2});
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(GradMode::is_enabled());
    EXPECT_FALSE((x * 2.0).requires_grad());
    AutoGradMode on(true);
    EXPECT_TRUE((x * 2.0).requires_grad());
  }
  EXPECT_TRUE(GradMode::is_enabled());
  {
    InferenceMode inference;
    EXPECT_FALSE((x * 2.0).requires_grad());
  }
  EXPECT_TRUE((x * 2.0).requires_grad());
}

TEST(Autograd, DetachCutsTheGraph) {
  Tensor x = leaf({1, 2});
  Tensor d = (x * 2.0).detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  Tensor y = (x * d).sum();
  y.backward();
  EXPECT_TENSOR_EQ(x.grad(), tensor({2.0, 4.0}, kFloat64));
  Tensor z = x * 2.0;
  EXPECT_ERROR(z.requires_grad_(false), "leaf");
}

TEST(Autograd, GradOfSeveralInputsAndAllowUnused) {
  Tensor x = leaf({1, 2}), w = leaf({3, 4}), unused = leaf({0});
  Tensor y = (x * w).sum();
  std::vector<Tensor> g = autograd::grad({y}, {x, w}, {}, true);
  EXPECT_TENSOR_EQ(g[0], w.detach());
  EXPECT_TENSOR_EQ(g[1], x.detach());
  EXPECT_FALSE(x.grad().defined());  // grad() does not accumulate
  EXPECT_ERROR(autograd::grad({y}, {unused}, {}, true), "not to have been used", "allow_unused");
  std::vector<Tensor> u = autograd::grad({y}, {x, unused}, {}, {}, false, true);
  EXPECT_FALSE(u[1].defined());
}

TEST(Autograd, CreateGraphGivesHigherDerivatives) {
  Tensor x = leaf({2});
  Tensor y = x * x * x;
  Tensor dy = autograd::grad({y}, {x}, {}, {}, /*create_graph=*/true)[0];
  EXPECT_TENSOR_EQ(dy.detach(), tensor({12.0}, kFloat64));
  EXPECT_TRUE(dy.requires_grad());
  Tensor d2 = autograd::grad({dy}, {x}, {}, {}, true)[0];
  EXPECT_TENSOR_EQ(d2.detach(), tensor({12.0}, kFloat64));  // 6x
  Tensor d3 = autograd::grad({d2}, {x})[0];
  EXPECT_TENSOR_EQ(d3, tensor({6.0}, kFloat64));
}

TEST(Autograd, NonScalarRootsNeedAGradient) {
  Tensor x = leaf({1, 2});
  Tensor y = x * 3.0;
  EXPECT_ERROR(y.backward(), "only for one-element outputs");
  y.backward(tensor({1.0, 10.0}, kFloat64));
  EXPECT_TENSOR_EQ(x.grad(), tensor({3.0, 30.0}, kFloat64));
  EXPECT_ERROR(tensor({1.0}).backward(), "does not require grad");
}

TEST(Autograd, BackwardInputsLimitsWhereGradientsAccumulate) {
  Tensor x = leaf({1}), w = leaf({2});
  (x * w).sum().backward(Tensor(), {}, false, {w});
  EXPECT_FALSE(x.grad().defined());
  EXPECT_TENSOR_EQ(w.grad(), tensor({1.0}, kFloat64));
}

TEST(Autograd, IntegerResultsDoNotRequireGrad) {
  Tensor x = leaf({1, 3, 2});
  EXPECT_FALSE(argmax(x).requires_grad());
  EXPECT_FALSE((x > 1.0).requires_grad());
}

TEST(Autograd, AnOpWithoutARowSaysSoAtBackward) {
  static const library::Op op = library::define("autograd_test::no_backward(Tensor x) -> Tensor", {
      .shape = [](const library::OpArgs& a) { return std::vector<TensorMeta>{library::dense_meta(a.tensor("x"))}; },
      .cpu = [](const library::OpArgs& a) { return std::vector<Tensor>{a.tensor("x") + 1.0}; }});
  Tensor x = leaf({1.5});
  Tensor y = op(x);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_ERROR(y.sum().backward(), "derivative of autograd_test::no_backward is not implemented");
}

TEST(Autograd, MixedDtypesGetGradientsOfTheirOwnDtype) {
  Tensor x = randn({3}, kFloat32);
  x.requires_grad_(true);
  Tensor w = leaf({1, 2, 3});
  (x * w).sum().backward();
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  EXPECT_EQ(w.grad().dtype(), kFloat64);
  EXPECT_CLOSE(x.grad(), tensor({1.0f, 2.0f, 3.0f}));
}

}  // namespace
}  // namespace sinter::testing

namespace sinter::testing {
namespace {

TEST(AutogradViews, InPlaceThroughAViewReachesTheBase) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, kFloat64);
  x.requires_grad_(true);
  Tensor y = x * 1.0;
  Tensor v = y.slice(0, 1, 3);
  v.mul_(10.0);  // y = [x0, 10 x1, 10 x2, x3]
  EXPECT_EQ(y.grad_fn()->name(), "CopySlices");
  (y * y).sum().backward();
  EXPECT_TENSOR_EQ(x.grad(), tensor({2.0, 400.0, 600.0, 8.0}, kFloat64));
}

TEST(AutogradViews, WritingAParameterIntoABufferThatNeedsNoGrad) {
  Tensor w = tensor({3.0, 5.0}, kFloat64);
  w.requires_grad_(true);
  Tensor out = zeros({4}, kFloat64);
  out.slice(0, 1, 3).copy_(w * 2.0);
  EXPECT_TRUE(out.requires_grad());
  (out * tensor({1.0, 2.0, 3.0, 4.0}, kFloat64)).sum().backward();
  EXPECT_TENSOR_EQ(w.grad(), tensor({4.0, 6.0}, kFloat64));
}

TEST(AutogradViews, TheWrittenViewKeepsAHistoryToo) {
  Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64);
  x.requires_grad_(true);
  Tensor y = x * 1.0;
  Tensor v = y.select(0, 0);
  v.mul_(x.select(0, 2));  // v = x0 * x2
  v.backward();
  EXPECT_TENSOR_EQ(x.grad(), tensor({3.0, 0.0, 1.0}, kFloat64));
}

TEST(AutogradViews, InPlaceOnAViewOfALeafIsAnError) {
  Tensor x = tensor({1.0, 2.0}, kFloat64);
  x.requires_grad_(true);
  EXPECT_ERROR(x.slice(0, 0, 1).mul_(2.0), "view of a leaf tensor that requires grad");
  EXPECT_TENSOR_EQ(x.detach(), tensor({1.0, 2.0}, kFloat64));
}

}  // namespace
}  // namespace sinter::testing
