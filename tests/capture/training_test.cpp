// Compiled training: a compiled function's outputs differentiated outside it (the joint graph, its partition, the
// compiled backward), and training steps compiled whole (backward and optimiser step inside), against eager.
#include <fmt/format.h>

#include <functional>
#include <tuple>

#include "sinter/compile.h"
#include "sinter/library.h"
#include "scoped_env.h"
#include "sinter/optim.h"
#include "support/log.h"
#include "testing.h"

using namespace sinter;
namespace st = sinter::testing;

namespace {

struct Mlp : nn::Module {
  nn::Linear fc1{6, 12}, fc2{12, 3};
  Mlp() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override { return fc2(gelu(fc1(x))); }
};

// Every parameter's .grad() of `a` against `b`'s: equal (exact) or within the float32 tolerance.
void expect_same_grads(nn::Module& a, nn::Module& b, bool exact) {
  auto pa = a.named_parameters(), pb = b.named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    Tensor ga = pa[i].second.grad(), gb = pb[i].second.grad();
    ASSERT_TRUE(ga.defined() && gb.defined()) << pa[i].first;
    if (exact)
      EXPECT_TENSOR_EQ(gb, ga) << pa[i].first;
    else
      EXPECT_CLOSE(gb, ga, 1e-5) << pa[i].first;
  }
}

}  // namespace

// compile(model), then loss.backward() outside: the outputs carry the compiled backward's node, and the gradients
// of parameters and inputs equal eager's (exactly under aot_eager, which runs the same formulas op by op).
TEST(CompiledTraining, BackwardOutsideTheCompiledFunctionMatchesEager) {
  for (const char* backend : {"aot_eager", "inductor"}) {
    SCOPED_TRACE(backend);
    manual_seed(3);
    Mlp eager, compiled;
    compiled.load_state_dict(eager.state_dict());
    auto f = compile(compiled, {.backend = backend});
    for (int step = 0; step < 3; ++step) {
      Tensor x = st::random({5, 6}, kFloat32, 10 + step);
      Tensor xa = x.clone().requires_grad_(), xb = x.clone().requires_grad_();
      Tensor y = st::random({5, 3}, kFloat32, 20 + step);
      Tensor want = eager(xa), got = f(xb);
      ASSERT_TRUE(got.grad_fn());
      EXPECT_EQ(got.grad_fn()->name(), "CompiledFunctionBackward");
      mse_loss(want, y).backward();
      mse_loss(got, y).backward();
      const bool exact = std::string(backend) == "aot_eager";
      expect_same_grads(eager, compiled, exact);
      if (exact) EXPECT_TENSOR_EQ(xb.grad(), xa.grad());
      else EXPECT_CLOSE(xb.grad(), xa.grad(), 1e-5);
      eager.zero_grad();
      compiled.zero_grad();
    }
    EXPECT_EQ(f.stats().compiles, 1);
  }
}

// Gradients accumulate into .grad() across backward calls, through the compiled backward as eagerly.
// A Linear with no input features, or an input with no rows: the weight's gradient is an empty or zero matrix, not
// an error from an ambiguous reshape(-1, 0) in the derivative (sinter fuzz, seed 2026120701 case 5297).
TEST(CompiledTraining, LinearGradientsOfEmptyShapes) {
  for (auto [in, out, rows] : {std::tuple<int64_t, int64_t, int64_t>{0, 5, 3}, {4, 0, 3}, {4, 5, 0}}) {
    for (const char* backend : {"aot_eager", "inductor"}) {
      SCOPED_TRACE(fmt::format("{} in {} out {} rows {}", backend, in, out, rows));
      manual_seed(4);
      nn::Linear eager(in, out), compiled(in, out);
      compiled.load_state_dict(eager.state_dict());
      auto f = compile(compiled, {.backend = backend});
      Tensor x = st::random({2, rows, in}, kFloat32, 5);
      Tensor want = eager(x), got;
      ASSERT_NO_THROW(got = f(x));
      EXPECT_TENSOR_EQ(got, want);
      want.sum().backward();
      got.sum().backward();
      EXPECT_TENSOR_EQ(compiled.weight.grad(), eager.weight.grad());
      EXPECT_TENSOR_EQ(compiled.bias.grad(), eager.bias.grad());
    }
  }
}

// cumprod's derivative traces into the joint graph (no host read of the zeros) and is right where the input
// has zeros; found by sinter fuzz as an internal error (its derivative read the data, a break inside the joint
// graph's backward trace).
TEST(CompiledTraining, CumprodGradientsWithZeros) {
  for (const char* backend : {"aot_eager", "inductor"}) {
    SCOPED_TRACE(backend);
    manual_seed(6);
    nn::Linear eager(4, 4, false), compiled(4, 4, false);
    compiled.load_state_dict(eager.state_dict());
    auto step = [](nn::Linear& m, const Tensor& x) { return std::vector<Tensor>{cumprod(m(x), 1), x}; };
    auto f = compile([&](const Tensor& x) { return step(compiled, x); }, {.backend = backend});
    Tensor x = st::random({3, 4}, kFloat32, 7);
    {  // a zero row of the weight makes a zero in every row of m(x)
      NoGradGuard no_grad;
      eager.weight.narrow(0, 2, 1).zero_();
      compiled.weight.narrow(0, 2, 1).zero_();
    }
    std::vector<Tensor> want = step(eager, x), got;
    ASSERT_NO_THROW(got = f(x));
    EXPECT_TENSOR_EQ(got[0], want[0]);
    Tensor v = st::random({3, 4}, kFloat32, 8);
    sum(want[0] * v).backward();
    sum(got[0] * v).backward();
    EXPECT_CLOSE(compiled.weight.grad(), eager.weight.grad());
    EXPECT_EQ(f.stats().graph_breaks, 0);
    EXPECT_EQ(f.stats().eager_fallbacks, 0);
  }
}

// A derivative that reads tensor data on the host (here a custom op's backward) cannot be traced into the joint
// graph: the compiled function gives the joint graph up and runs eagerly with eager autograd, with right gradients
// and a warning, instead of an internal error.
TEST(CompiledTraining, ABackwardThatReadsDataRunsEagerly) {
  static const library::Op scaled = library::define("training_test::host_read_scale(Tensor x) -> Tensor", {
      .shape = [](const library::OpArgs& a) { return std::vector<TensorMeta>{library::dense_meta(a.tensor("x"))}; },
      .cpu = [](const library::OpArgs& a) { return std::vector<Tensor>{a.tensor("x") * 3.0}; },
      .backward = [](const std::vector<Tensor>& grads, const library::OpArgs&) {
        const double scale = grads[0].abs().amax().item<double>() >= 0 ? 3.0 : 0.0;  // a read on the host
        return std::vector<Tensor>{grads[0] * scale};
      }});
  for (const char* backend : {"aot_eager", "inductor"}) {
    SCOPED_TRACE(backend);
    Tensor x0 = st::random({4, 3}, kFloat32, 9);
    Tensor xe = x0.clone().requires_grad_(true), xc = x0.clone().requires_grad_(true);
    auto f = compile([](const Tensor& x) { return scaled(sin(x)); }, {.backend = backend});
    Tensor want = scaled(sin(xe)), got;
    ASSERT_NO_THROW(got = f(xc));
    EXPECT_CLOSE(got, want);
    sum(want).backward();
    sum(got).backward();
    EXPECT_CLOSE(xc.grad(), xe.grad());
    EXPECT_GE(f.stats().compiles, 1);
  }
}

TEST(CompiledTraining, GradientsAccumulateAcrossBackwards) {
  manual_seed(4);
  Mlp eager, compiled;
  compiled.load_state_dict(eager.state_dict());
  auto f = compile(compiled, {.backend = "aot_eager"});
  for (int i = 0; i < 2; ++i) {
    Tensor x = st::random({2, 6}, kFloat32, 30 + i);
    sum(eager(x)).backward();
    sum(f(x)).backward();
  }
  expect_same_grads(eager, compiled, true);
}

// Inference under NoGradGuard and training are separate entries: grad mode is guarded.
TEST(CompiledTraining, GradModeIsGuarded) {
  manual_seed(5);
  Mlp m;
  auto f = compile(m, {.backend = "aot_eager"});
  Tensor x = st::random({2, 6}, kFloat32, 40);
  {
    NoGradGuard no_grad;
    Tensor y = f(x);
    EXPECT_FALSE(y.requires_grad());
  }
  Tensor y = f(x);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_EQ(f.stats().compiles, 2);
  EXPECT_NE(f.stats().recompile_reasons.at(0).reason.find("grad mode was off (NoGradGuard), now on"),
            std::string::npos)
      << f.stats().recompile_reasons.at(0).reason;
}

// The values the forward kept are freed by the backward; a second backward needs retain_graph, as eagerly.
TEST(CompiledTraining, SecondBackwardNeedsRetainGraph) {
  manual_seed(6);
  Mlp m;
  auto f = compile(m, {.backend = "aot_eager"});
  Tensor x = st::random({2, 6}, kFloat32, 41);
  Tensor loss = sum(f(x));
  loss.backward(Tensor(), /*retain_graph=*/true);
  Tensor once = m.fc1.weight.grad().clone();
  loss.backward();
  EXPECT_CLOSE(m.fc1.weight.grad(), once * 2.0);
  EXPECT_ERROR(loss.backward(), "backward through the graph a second time", "retain_graph=true");
}

// A kept output changed in place before the backward is the error eager autograd gives. (softmax is not
// recomputed, so the forward keeps its output for the backward.)
TEST(CompiledTraining, AKeptValueModifiedInPlaceIsAnError) {
  auto f = compile([](const Tensor& x) { return softmax(x, 0); }, {.backend = "aot_eager"});
  Tensor x = st::random({4}, kFloat32, 42).requires_grad_();
  Tensor y = f(x);
  {
    NoGradGuard no_grad;
    y.mul_(2.0);
  }
  EXPECT_ERROR(sum(y).backward(), "modified by an in-place operation", "expected version");
}

// The backward node keeps aliases of the forward's values, not the outputs themselves: an output that is also kept
// (softmax's) would hold its own node through grad_fn, and both would leak when no backward runs or one throws
// (found by LeakSanitizer after the test above).
TEST(CompiledTraining, OutputsDroppedWithoutABackwardFreeTheirNode) {
  auto f = compile([](const Tensor& x) { return softmax(x, 0); }, {.backend = "aot_eager"});
  Tensor x = st::random({4}, kFloat32, 42).requires_grad_();
  std::weak_ptr<autograd::Node> node;
  {
    Tensor y = f(x);
    node = y.grad_fn();
    ASSERT_FALSE(node.expired());
  }
  EXPECT_TRUE(node.expired());
  {
    Tensor y = f(x);
    node = y.grad_fn();
    {
      NoGradGuard no_grad;
      y.mul_(2.0);
    }
    EXPECT_ERROR(sum(y).backward(), "modified by an in-place operation");
  }
  EXPECT_TRUE(node.expired());
}

// create_graph through a compiled backward is refused with a clear message.
TEST(CompiledTraining, DoubleBackwardThroughACompiledFunctionIsRefused) {
  auto f = compile([](const Tensor& x) { return x * x * x; }, {.backend = "aot_eager"});
  Tensor x = st::random({3}, kFloat32, 43).requires_grad_();
  EXPECT_ERROR(autograd::grad({sum(f(x))}, {x}, {}, {}, /*create_graph=*/true), "cannot itself be differentiated",
               "create_graph");
}

// Outputs that do not depend on what requires grad, integer outputs and an input returned as it is keep eager's
// autograd identity.
TEST(CompiledTraining, OnlyDifferentiableOutputsGetTheNode) {
  auto f = compile(
      [](const Tensor& x, const Tensor& c) {
        return std::vector<Tensor>{x * 2.0, c + 1.0, argmax(x, 0), x};
      },
      {.backend = "aot_eager"});
  Tensor x = st::random({4}, kFloat32, 44).requires_grad_();
  Tensor c = st::random({4}, kFloat32, 45);
  std::vector<Tensor> out = f(x, c);
  EXPECT_TRUE(out[0].requires_grad());
  EXPECT_FALSE(out[1].requires_grad());
  EXPECT_FALSE(out[2].requires_grad());
  EXPECT_TRUE(out[3].is_same(x));
  sum(out[0] + out[3]).backward();
  EXPECT_CLOSE(x.grad(), full({4}, 3.0));
}

// The joint graph, the partition and both graphs are logged on SINTER_LOGS=aot.
TEST(CompiledTraining, LogsTheJointGraphAndThePartition) {
  st::ScopedEnv logs("SINTER_LOGS", "aot");
  reload_log_settings();
  manual_seed(7);
  Mlp m;
  auto f = compile(m, {.backend = "aot_eager"});
  ::testing::internal::CaptureStderr();
  sum(f(st::random({2, 6}, kFloat32, 46))).backward();
  std::string log = ::testing::internal::GetCapturedStderr();
  reload_log_settings();
  for (const char* part : {"joint forward and backward graph", "partition: kept", "recomputed", "forward graph:",
                           "backward graph:", "tangent0"})
    EXPECT_NE(log.find(part), std::string::npos) << part << "\n" << log;
}

// A batch norm in training mode updates its running statistics once per compiled forward, and the gradients of its
// affine parameters equal eager's.
TEST(CompiledTraining, BatchNormRunningStatsAndAffineGradients) {
  struct Net : nn::Module {
    nn::Conv2d conv{2, 4, 3, 1, 1};
    nn::BatchNorm2d bn{4};
    Net() {
      register_module("conv", conv);
      register_module("bn", bn);
    }
    Tensor forward(const Tensor& x) override { return relu(bn(conv(x))); }
  };
  manual_seed(8);
  Net eager, compiled;
  compiled.load_state_dict(eager.state_dict());
  auto f = compile(compiled, {.backend = "aot_eager"});
  for (int i = 0; i < 2; ++i) {
    Tensor x = st::random({2, 2, 5, 5}, kFloat32, 50 + i);
    sum(eager(x)).backward();
    sum(f(x)).backward();
  }
  expect_same_grads(eager, compiled, true);
  EXPECT_TENSOR_EQ(compiled.bn.running_mean, eager.bn.running_mean);
  EXPECT_TENSOR_EQ(compiled.bn.running_var, eager.bn.running_var);
}

// Under Dynamic::kAlways an MLP trains on several batch sizes with one compiled forward and backward.
TEST(CompiledTraining, SymbolicBatchSizeCompilesOnce) {
  manual_seed(9);
  Mlp eager, compiled;
  compiled.load_state_dict(eager.state_dict());
  auto f = compile(compiled, {.backend = "inductor", .dynamic = Dynamic::kAlways});
  for (int64_t batch : {3, 8, 5}) {
    Tensor x = st::random({batch, 6}, kFloat32, 60 + batch);
    Tensor y = st::random({batch, 3}, kFloat32, 70 + batch);
    mse_loss(eager(x), y).backward();
    mse_loss(f(x), y).backward();
    expect_same_grads(eager, compiled, false);
    eager.zero_grad();
    compiled.zero_grad();
  }
  EXPECT_EQ(f.stats().compiles, 1);
}

// ---- training steps compiled whole: forward, loss, backward and the optimiser step in one graph ----

namespace {

using Step = std::function<Tensor(Mlp&, optim::Optimizer&, const Tensor&, const Tensor&)>;

Tensor sgd_like_step(Mlp& m, optim::Optimizer& opt, const Tensor& x, const Tensor& y) {
  opt.zero_grad();
  Tensor loss = cross_entropy(m(x), y);
  loss.backward();
  opt.step();
  return loss.detach();
}

// Trains two copies of one model for `steps` steps, one eagerly and one with `step` compiled: losses and
// parameters equal at every step (exactly under aot_eager).
template <class Opt, class Options>
void train_side_by_side(const std::string& backend, Options options, int steps, int expected_compiles) {
  SCOPED_TRACE(backend);
  manual_seed(11);
  Mlp a, b;
  b.load_state_dict(a.state_dict());
  Opt opt_a(a.parameters(), options), opt_b(b.parameters(), options);
  auto compiled = compile([&](const Tensor& x, const Tensor& y) { return sgd_like_step(b, opt_b, x, y); },
                          {.backend = backend});
  const bool exact = backend == "aot_eager";
  for (int k = 0; k < steps; ++k) {
    Tensor x = st::random({5, 6}, kFloat32, 100 + k);
    Tensor y = randint(0, 3, {5});
    Tensor want = sgd_like_step(a, opt_a, x, y), got = compiled(x, y);
    if (exact) {
      EXPECT_TENSOR_EQ(got, want) << "step " << k;
      EXPECT_TENSOR_EQ(b.fc1.weight, a.fc1.weight) << "step " << k;
    } else {
      EXPECT_CLOSE(got, want, 1e-5) << "step " << k;
      EXPECT_CLOSE(b.fc1.weight, a.fc1.weight, 1e-5) << "step " << k;
    }
  }
  EXPECT_EQ(compiled.stats().compiles, expected_compiles);
  EXPECT_EQ(compiled.stats().graph_breaks, 0);
}

}  // namespace

TEST(CompiledTrainingStep, AdamWStepMatchesEager) {
  for (const char* backend : {"aot_eager", "inductor"})
    train_side_by_side<optim::AdamW>(backend, optim::AdamWOptions(1e-2), 8, 1);
}

TEST(CompiledTrainingStep, AdamWithAmsgradAndWeightDecayMatchesEager) {
  train_side_by_side<optim::Adam>("aot_eager", optim::AdamOptions(1e-2).weight_decay(0.1).amsgrad(true), 5, 1);
}

// SGD's first step with momentum copies the gradient into the buffer: the step compiles once for it and once for
// every later step.
TEST(CompiledTrainingStep, SgdMomentumCompilesForTheFirstAndTheLaterSteps) {
  for (const char* backend : {"aot_eager", "inductor"})
    train_side_by_side<optim::SGD>(backend, optim::SGDOptions(0.1).momentum(0.9).nesterov(true), 6, 2);
}

// A scheduler changing the learning rate between calls needs no recompile: the compiled step reads it each call.
TEST(CompiledTrainingStep, SchedulerChangesTheLrWithoutRecompiling) {
  manual_seed(12);
  Mlp a, b;
  b.load_state_dict(a.state_dict());
  optim::SGD opt_a(a.parameters(), optim::SGDOptions(0.5)), opt_b(b.parameters(), optim::SGDOptions(0.5));
  optim::StepLR sched_a(opt_a, 1, 0.5), sched_b(opt_b, 1, 0.5);
  auto compiled = compile([&](const Tensor& x, const Tensor& y) { return sgd_like_step(b, opt_b, x, y); },
                          {.backend = "aot_eager"});
  for (int k = 0; k < 4; ++k) {
    Tensor x = st::random({5, 6}, kFloat32, 120 + k);
    Tensor y = randint(0, 3, {5});
    EXPECT_TENSOR_EQ(compiled(x, y), sgd_like_step(a, opt_a, x, y)) << k;
    EXPECT_TENSOR_EQ(b.fc2.weight, a.fc2.weight) << k;
    sched_a.step();
    sched_b.step();
  }
  EXPECT_EQ(compiled.stats().compiles, 1);
}

// Hyper-parameters other than the lr are guarded: changing one recompiles (and takes effect).
TEST(CompiledTrainingStep, ChangingMomentumRecompiles) {
  manual_seed(13);
  Mlp b;
  optim::SGD opt(b.parameters(), optim::SGDOptions(0.1).momentum(0.5));
  auto compiled = compile([&](const Tensor& x, const Tensor& y) { return sgd_like_step(b, opt, x, y); },
                          {.backend = "aot_eager"});
  Tensor x = st::random({5, 6}, kFloat32, 130);
  Tensor y = randint(0, 3, {5});
  for (int k = 0; k < 3; ++k) compiled(x, y);
  EXPECT_EQ(compiled.stats().compiles, 2);  // the first step, then the others
  static_cast<optim::SGDOptions&>(opt.param_groups()[0].options()).momentum(0.9);
  compiled(x, y);
  EXPECT_EQ(compiled.stats().compiles, 3);
  EXPECT_NE(compiled.stats().recompile_reasons.back().reason.find("hyper-parameters other than lr"),
            std::string::npos)
      << compiled.stats().recompile_reasons.back().reason;
}

// Gradients made inside a compiled step are visible after it, as eagerly; without zero_grad they accumulate.
TEST(CompiledTrainingStep, GradientsSetInsideAreVisibleAndAccumulate) {
  manual_seed(14);
  Mlp a, b;
  b.load_state_dict(a.state_dict());
  auto step = [](Mlp& m, const Tensor& x) {
    Tensor loss = sum(m(x));
    loss.backward();
    return loss.detach();
  };
  auto compiled = compile([&](const Tensor& x) { return step(b, x); }, {.backend = "aot_eager"});
  for (int k = 0; k < 3; ++k) {
    Tensor x = st::random({2, 6}, kFloat32, 140 + k);
    EXPECT_TENSOR_EQ(compiled(x), step(a, x));
    expect_same_grads(a, b, true);
  }
  EXPECT_EQ(compiled.stats().compiles, 2);  // no gradient at the first call, one at the others
}

// is_compiling, CaptureSuspended and host_scalar behave as documented.
TEST(CompiledTrainingStep, HostStateHelpers) {
  EXPECT_FALSE(is_compiling());
  double value = 2.0;
  Tensor kept;
  auto f = compile(
      [&](const Tensor& x) {
        EXPECT_TRUE(is_compiling());
        if (!kept.defined()) {
          CaptureSuspended eager;
          kept = zeros({3});  // a real tensor, kept across calls
        }
        kept.add_(x);
        return x * host_scalar([&value] { return value; });
      },
      {.backend = "aot_eager"});
  Tensor x = st::random({3}, kFloat32, 150);
  EXPECT_CLOSE(f(x), x * 2.0);
  value = 5.0;
  EXPECT_CLOSE(f(x), x * 5.0);
  EXPECT_CLOSE(kept, x * 2.0);
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_CLOSE(host_scalar([] { return 1.5; }), full({}, 1.5, TensorOptions(kFloat64)));
}

// explain() shows the joint graph, the partition and both graphs it made.
TEST(CompiledTraining, ExplainShowsThePartition) {
  manual_seed(15);
  Mlp m;
  ExplainOutput e = explain(m, st::random({2, 6}, kFloat32, 160));
  EXPECT_NE(e.partition.find("kept"), std::string::npos) << e;
  EXPECT_NE(e.graphs.at(0).find("tangent0"), std::string::npos) << e;
  EXPECT_NE(e.backward_graph.find("tangent0"), std::string::npos) << e;
  EXPECT_EQ(e.forward_graph.find("tangent0"), std::string::npos) << e;
  EXPECT_NE(e.str().find("Partition (compiled training)"), std::string::npos) << e;
  NoGradGuard no_grad;  // inference: no backward, no partition
  EXPECT_TRUE(explain(m, st::random({2, 6}, kFloat32, 161)).partition.empty());
}
