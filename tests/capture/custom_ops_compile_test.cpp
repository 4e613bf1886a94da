// Custom ops (sinter/library.h) under compile(): captured like built-ins, run as an extern by the inductor with the
// element-wise ops around them fused, or lowered from their decomposition; symbolic sizes through the user's shape
// rule; and training, with the backward formula inside the joint graph or a compiled training step.
#include <gtest/gtest.h>

#include "ops/custom_ops_testing.h"
#include "scoped_env.h"
#include "sinter/autograd.h"
#include "sinter/compile.h"
#include "sinter/nn.h"
#include "sinter/optim.h"
#include "testing.h"

using namespace sinter;
namespace st = sinter::testing;

namespace {

Tensor rms_gate(const Tensor& x, const Tensor& w) { return library::call1("testlib::rms_gate", {x, w}); }

// add + relu before the op and after it: each side is one fused kernel, the op one extern.
const auto gate_block = [](const Tensor& x, const Tensor& b, const Tensor& w) {
  return relu(rms_gate(relu(x + b), w) + b);
};

}  // namespace

TEST(CustomOpsCompiled, AotEagerAndEagerBackendsEqualEagerExactly) {
  st::define_test_ops();
  Tensor x = st::random({4, 8}), b = st::random({8}, kFloat32, 1), w = st::random({8}, kFloat32, 2);
  Tensor want = gate_block(x, b, w);
  for (const char* backend : {"aot_eager", "eager"}) {
    auto f = compile(gate_block, {.backend = backend});
    for (int call = 0; call < 2; ++call) EXPECT_TENSOR_EQ(f(x, b, w), want) << backend << " call " << call;
    EXPECT_EQ(f.stats().compiles, std::string(backend) == "eager" ? 0 : 1) << backend;
  }
}

TEST(CustomOpsCompiled, InductorRunsTheOpAsAnExternWithItsNeighboursFused) {
  st::define_test_ops();
  Tensor x = st::random({6, 16}), b = st::random({16}, kFloat32, 1), w = st::random({16}, kFloat32, 2);
  Tensor want = gate_block(x, b, w);
  auto f = compile(gate_block, {.backend = "inductor"});
  int before = st::rms_gate_kernel_calls;
  EXPECT_CLOSE(f(x, b, w), want);
  EXPECT_CLOSE(f(x, b, w), want);
  EXPECT_EQ(st::rms_gate_kernel_calls, before + 2) << "the op's own kernel runs once per call";
  // relu(x + b) is one kernel, the op one extern, relu(. + b) one kernel.
  EXPECT_EQ(f.stats().kernels_per_call, 3);
  EXPECT_EQ(f.stats().compiles, 1);
}

TEST(CustomOpsCompiled, SymbolicSizesGoThroughTheShapeRuleWithoutRecompiling) {
  st::define_test_ops();
  for (const char* backend : {"aot_eager", "inductor"}) {
    SCOPED_TRACE(backend);
    auto f = compile(gate_block, {.backend = backend, .dynamic = Dynamic::kAlways});
    for (int64_t rows : {3, 7, 5}) {
      Tensor x = st::random({rows, 8}, kFloat32, rows), b = st::random({8}, kFloat32, 1);
      Tensor w = st::random({8}, kFloat32, 2);
      EXPECT_CLOSE(f(x, b, w), gate_block(x, b, w)) << rows << " rows";
    }
    EXPECT_EQ(f.stats().compiles, 1);
    EXPECT_EQ(f.stats().recompiles, 0);
    // A w that does not match x is the shape rule's error, as eagerly.
    EXPECT_ERROR(f(st::random({3, 8}), st::random({8}), st::random({4})), "x must be [..., D]");
  }
}

// With a decomposition the inductor compiles the decomposition: the op's kernel never runs, and the reduction
// fuses with the relu before it and the add after it.
TEST(CustomOpsCompiled, ADecompositionLowersToGeneratedKernels) {
  st::define_test_ops();
  auto fn = [](const Tensor& x, const Tensor& w) {
    return library::call1("testlib::rms_gate_decomposed", {relu(x), w}, {{"eps", 1e-3}}) + 1;
  };
  Tensor x = st::random({5, 32}), w = st::random({32}, kFloat32, 3);
  Tensor want = st::rms_gate_reference(relu(x), w, 1e-3) + 1;
  int before = st::rms_gate_decomposed_kernel_calls;
  auto f = compile(fn, {.backend = "inductor"});
  EXPECT_CLOSE(f(x, w), want);
  EXPECT_CLOSE(f(x, w), want);
  EXPECT_EQ(st::rms_gate_decomposed_kernel_calls, before) << "compiled code calls no extern";
  EXPECT_EQ(f.stats().kernels_per_call, 1);
  // Without the decompose pass the op is an extern again, between the relu and the add.
  st::ScopedEnv off("SINTER_DISABLE_PASSES", "decompose");
  auto g = compile(fn, {.backend = "inductor"});
  EXPECT_CLOSE(g(x, w), want);
  EXPECT_EQ(st::rms_gate_decomposed_kernel_calls, before + 1);
  EXPECT_EQ(g.stats().kernels_per_call, 3);
}

TEST(CustomOpsCompiled, ADecompositionWorksUnderSymbolicSizes) {
  st::define_test_ops();
  auto fn = [](const Tensor& x, const Tensor& w) { return library::call1("testlib::rms_gate_decomposed", {x, w}); };
  auto f = compile(fn, {.backend = "inductor", .dynamic = Dynamic::kAlways});
  int before = st::rms_gate_decomposed_kernel_calls;
  for (int64_t rows : {4, 9}) {
    Tensor x = st::random({rows, 6}, kFloat32, rows), w = st::random({6}, kFloat32, 4);
    EXPECT_CLOSE(f(x, w), st::rms_gate_reference(x, w, 1e-6));
  }
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(st::rms_gate_decomposed_kernel_calls, before);
}

// compile(fn), then backward outside: the joint graph differentiates the op through its backward formula.
TEST(CustomOpsCompiled, BackwardOutsideTheCompiledFunctionMatchesEager) {
  st::define_test_ops();
  for (const char* backend : {"aot_eager", "inductor"}) {
    SCOPED_TRACE(backend);
    auto f = compile(gate_block, {.backend = backend});
    for (int step = 0; step < 2; ++step) {
      Tensor x = st::random({4, 8}, kFloat32, 10 + step), b = st::random({8}, kFloat32, 20 + step);
      Tensor w = st::random({8}, kFloat32, 30 + step);
      Tensor xa = x.clone().requires_grad_(), ba = b.clone().requires_grad_(), wa = w.clone().requires_grad_();
      Tensor xb = x.clone().requires_grad_(), bb = b.clone().requires_grad_(), wb = w.clone().requires_grad_();
      gate_block(xa, ba, wa).square().sum().backward();
      Tensor got = f(xb, bb, wb);
      ASSERT_TRUE(got.grad_fn());
      EXPECT_EQ(got.grad_fn()->name(), "CompiledFunctionBackward");
      got.square().sum().backward();
      if (std::string(backend) == "aot_eager") {
        EXPECT_TENSOR_EQ(xb.grad(), xa.grad());
        EXPECT_TENSOR_EQ(bb.grad(), ba.grad());
        EXPECT_TENSOR_EQ(wb.grad(), wa.grad());
      } else {
        EXPECT_CLOSE(xb.grad(), xa.grad(), 1e-5);
        EXPECT_CLOSE(bb.grad(), ba.grad(), 1e-5);
        EXPECT_CLOSE(wb.grad(), wa.grad(), 1e-5);
      }
    }
    EXPECT_EQ(f.stats().compiles, 1);
  }
}

namespace {

struct GateNet : nn::Module {
  nn::Linear fc{8, 8};
  Tensor w;
  GateNet() {
    register_module("fc", fc);
    w = st::random({8}, kFloat32, 5) + 1;
    register_parameter("w", &w);
  }
  Tensor forward(const Tensor& x) override { return rms_gate(fc(x), w); }
};

Tensor train_step(GateNet& m, optim::Optimizer& opt, const Tensor& x, const Tensor& y) {
  opt.zero_grad();
  Tensor loss = mse_loss(m(x), y);
  loss.backward();
  opt.step();
  return loss.detach();
}

}  // namespace

// compile(train_step): forward, backward (through the formula) and the optimiser step in one graph.
TEST(CustomOpsCompiled, CompiledTrainingStepMatchesEager) {
  st::define_test_ops();
  for (const char* backend : {"aot_eager", "inductor"}) {
    SCOPED_TRACE(backend);
    manual_seed(7);
    GateNet a, b;
    b.load_state_dict(a.state_dict());
    optim::SGD opt_a(a.parameters(), optim::SGDOptions(0.1)), opt_b(b.parameters(), optim::SGDOptions(0.1));
    auto step = compile([&](const Tensor& x, const Tensor& y) { return train_step(b, opt_b, x, y); },
                        {.backend = backend});
    const bool exact = std::string(backend) == "aot_eager";
    for (int k = 0; k < 3; ++k) {
      Tensor x = st::random({5, 8}, kFloat32, 40 + k), y = st::random({5, 8}, kFloat32, 50 + k);
      Tensor want = train_step(a, opt_a, x, y), got = step(x, y);
      if (exact) {
        EXPECT_TENSOR_EQ(got, want) << "step " << k;
        EXPECT_TENSOR_EQ(b.w, a.w) << "step " << k;
        EXPECT_TENSOR_EQ(b.fc.weight, a.fc.weight) << "step " << k;
      } else {
        EXPECT_CLOSE(got, want, 1e-5) << "step " << k;
        EXPECT_CLOSE(b.w, a.w, 1e-5) << "step " << k;
        EXPECT_CLOSE(b.fc.weight, a.fc.weight, 1e-5) << "step " << k;
      }
    }
    EXPECT_EQ(step.stats().compiles, 1);
    EXPECT_EQ(step.stats().graph_breaks, 0);
  }
}

// An op without a backward formula compiles for inference; the missing gradient is an error when one is needed.
TEST(CustomOpsCompiled, MissingBackwardIsAnErrorOnlyWhenAGradientIsNeeded) {
  st::define_test_ops();
  auto fn = [](const Tensor& x) { return library::call1("testlib::scale_shift", {x}, {{"scale", 2.0}}); };
  auto f = compile(fn, {.backend = "aot_eager"});
  Tensor x = st::random({3, 4});
  EXPECT_TENSOR_EQ(f(x), x * 2.0);
  Tensor xg = x.clone().requires_grad_();
  EXPECT_ERROR(f(xg).sum().backward(), "the derivative of testlib::scale_shift is not implemented");
}

// The graph a capture records names the custom op, as the printer writes it.
TEST(CustomOpsCompiled, ExplainShowsTheOp) {
  st::define_test_ops();
  Tensor x = st::random({4, 8}), b = st::random({8}), w = st::random({8});
  ExplainOutput e = explain(gate_block, x, b, w);
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_NE(e.str().find("testlib::rms_gate("), std::string::npos) << e.str();
}
