// State across calls: mutated arguments and aliasing outputs, module parameters and buffers (updated in
// place, frozen, batch norm's running stats), training flags, and random ops reproducing eager's numbers.
#include "sinter/compile.h"
#include "testing.h"

using namespace sinter;
namespace st = sinter::testing;

namespace {

Tensor rnd(const SymIntList& sizes, uint64_t seed, DType dtype = kFloat32) {
  return st::random(sizes, dtype, seed);
}

// Runs f eagerly and compiled (aot_eager) on separate copies of the same argument, three calls in a row, and
// expects the same results and the same final argument values.
template <class F>
void expect_same_mutation(F f, const Tensor& start) {
  Tensor a = start.clone(), b = start.clone();
  auto c = compile(f);
  for (int call = 0; call < 3; ++call) {
    Tensor want = f(a);
    Tensor got = c(b);
    EXPECT_TRUE(st::equal(got, want)) << "call " << call;
    EXPECT_TRUE(st::equal(b, a)) << "argument after call " << call;
  }
  EXPECT_EQ(c.stats().compiles, 1);
}

}  // namespace

// ---- mutation and aliasing ----

TEST(CaptureState, AddInPlaceOnArgument) {
  expect_same_mutation(
      [](const Tensor& x) {
        Tensor y = x;
        y.add_(1);
        return y * 2;
      },
      rnd({3, 4}, 1));
}

TEST(CaptureState, WriteThroughAView) {
  expect_same_mutation(
      [](const Tensor& x) {
        Tensor row = x.select(0, 1);
        row.mul_(3);
        x.narrow(1, 0, 2).fill_(0.5);
        return x.sum({1});
      },
      rnd({3, 4}, 2));
}

TEST(CaptureState, ReturningTheMutatedInputReturnsTheInput) {
  auto f = [](const Tensor& x) {
    Tensor y = x;
    return y.mul_(2);
  };
  Tensor x = rnd({5}, 1), ref = x.clone();
  auto c = compile(f);
  Tensor out = c(x);
  EXPECT_TRUE(out.is_same(x) || out.storage() == x.storage());
  EXPECT_TRUE(st::equal(x, ref * 2));
  out = c(x);
  EXPECT_TRUE(st::equal(x, ref * 4));
  EXPECT_EQ(out.storage(), x.storage());
}

TEST(CaptureState, ViewOutputsAliasInputs) {
  auto c = compile([](const Tensor& x) { return std::make_tuple(x.t(), x.view({-1}), x + 0); });
  Tensor x = rnd({2, 3}, 1);
  auto [t, flat, copy] = c(x);
  EXPECT_EQ(t.storage(), x.storage());
  EXPECT_EQ(flat.storage(), x.storage());
  EXPECT_NE(copy.storage(), x.storage());
}

// ---- modules ----

namespace {
struct Net : nn::Module {
  nn::Linear fc1{8, 16}, fc2{16, 4};
  nn::Dropout drop{0.5};
  Net() {
    register_module("fc1", fc1);
    register_module("drop", drop);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override { return fc2(drop(relu(fc1(x)))); }
};
}  // namespace

TEST(CaptureState, ChangingAWeightInPlaceNeedsNoRecompile) {
  manual_seed(1);
  Net net;
  net.eval();
  auto c = compile(net);
  Tensor x = rnd({3, 8}, 2);
  EXPECT_TRUE(st::equal(c(x), net(x)));
  {
    NoGradGuard no_grad;        // as an optimiser updates parameters
    net.fc1.weight.mul_(-0.5);  // an optimiser step would do this
    net.fc2.bias.fill_(3.0);
  }
  EXPECT_TRUE(st::equal(c(x), net(x)));
  EXPECT_EQ(c.stats().compiles, 1);
  EXPECT_EQ(c.stats().guard_hits, 1);
}

TEST(CaptureState, FreezeMakesParametersConstants) {
  manual_seed(1);
  Net net;
  net.eval();
  auto c = compile(net, {.freeze = true});
  Tensor x = rnd({3, 8}, 2);
  EXPECT_TRUE(st::equal(c(x), net(x)));
  ExplainOutput e = c.explain(x);
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_NE(e.graphs[0].find("%fc1.weight = constant()"), std::string::npos) << e.graphs[0];
  EXPECT_EQ(e.graphs[0].find("%fc1.weight: "), std::string::npos) << e.graphs[0];
  ExplainOutput unfrozen = explain(net, x);
  EXPECT_NE(unfrozen.graphs[0].find("%fc1.weight: f32[16, 8]"), std::string::npos) << unfrozen.graphs[0];
}

TEST(CaptureState, TrainingFlagIsGuarded) {
  manual_seed(1);
  Net net;
  net.eval();
  auto c = compile(net);
  Tensor x = rnd({3, 8}, 2);
  EXPECT_TRUE(st::equal(c(x), net(x)));
  net.train();
  manual_seed(7);
  Tensor want = net(x);
  manual_seed(7);
  EXPECT_TRUE(st::equal(c(x), want));  // dropout active: recompiled, same random numbers
  EXPECT_EQ(c.stats().compiles, 2);
  EXPECT_NE(c.stats().recompile_reasons.at(0).reason.find("training flag was false, now true"),
            std::string::npos)
      << c.stats().recompile_reasons.at(0).reason;
  net.eval();
  EXPECT_TRUE(st::equal(c(x), net(x)));
  EXPECT_EQ(c.stats().compiles, 2);
}

TEST(CaptureState, BatchNormTrainingUpdatesRunningStats) {
  nn::BatchNorm1d eager_bn(4), compiled_bn(4);
  auto c = compile(compiled_bn);
  for (int call = 0; call < 3; ++call) {
    Tensor x = rnd({6, 4}, call + 1);
    EXPECT_CLOSE(c(x), eager_bn(x), 1e-5) << call;  // the inductor's batch statistics: rounding apart
    EXPECT_CLOSE(compiled_bn.running_mean, eager_bn.running_mean, 1e-5) << call;
    EXPECT_CLOSE(compiled_bn.running_var, eager_bn.running_var, 1e-5) << call;
    EXPECT_TRUE(st::equal(compiled_bn.num_batches_tracked, eager_bn.num_batches_tracked)) << call;
  }
  EXPECT_EQ(c.stats().compiles, 1);
}

TEST(CaptureState, LambdaCapturedTensorIsLiftedByIdentity) {
  Tensor w = rnd({4}, 1);
  auto f = [&w](const Tensor& x) { return x * w; };
  auto c = compile(f);
  Tensor x = rnd({4}, 2);
  EXPECT_TRUE(st::equal(c(x), f(x)));
  w.add_(1);  // in place: the same tensor, new values
  EXPECT_TRUE(st::equal(c(x), f(x)));
  EXPECT_EQ(c.stats().compiles, 1);
  ExplainOutput e = c.explain(x);
  EXPECT_NE(e.graphs[0].find("%lifted0: f32[4]"), std::string::npos) << e.graphs[0];
  bool identity_guard = false;
  for (const std::string& g : e.guards)
    identity_guard |= g.find("the same tensor as captured") != std::string::npos;
  EXPECT_TRUE(identity_guard);
}

// ---- randomness ----

TEST(CaptureState, RandomOpsReproduceEagerAfterManualSeed) {
  auto f = [](const Tensor& x) { return dropout(x, 0.3, true) + rand_like(x) * randn({x.size(1)}); };
  Tensor x = rnd({4, 5}, 1);
  auto c = compile(f, {.backend = "aot_eager"});
  manual_seed(42);
  Tensor e1 = f(x), e2 = f(x);
  manual_seed(42);
  Tensor c1 = c(x), c2 = c(x);
  EXPECT_TRUE(st::equal(c1, e1));
  EXPECT_TRUE(st::equal(c2, e2));  // each call draws fresh numbers, as eager does
  EXPECT_FALSE(st::equal(c1, c2));
  EXPECT_EQ(get_rng_state().offset, [&] {
    manual_seed(42);
    f(x);
    f(x);
    return get_rng_state().offset;
  }());
}

TEST(CaptureState, UnusedRandomDrawStillAdvancesTheGenerator) {
  auto f = [](const Tensor& x) {
    rand({16});
    return x + 1;
  };
  Tensor x = rnd({3}, 1);
  auto c = compile(f);
  manual_seed(5);
  f(x);
  GeneratorState eager = get_rng_state();
  manual_seed(5);
  c(x);
  EXPECT_EQ(get_rng_state().offset, eager.offset);
}

TEST(CaptureState, AliasedInputsSeeEachOthersWrites) {
  auto f = [](Tensor a, const Tensor& b) {
    a.add_(1);
    return b * 2;  // b shares a's memory: eager sees the write
  };
  Tensor x = rnd({4}, 1), y = x.clone();
  auto c = compile(f);
  Tensor got = c(x, x.view({2, 2}).view({4}));
  Tensor want = f(y, y.view({2, 2}).view({4}));
  EXPECT_TRUE(st::equal(got, want));
  EXPECT_TRUE(st::equal(x, y));
  Tensor p = rnd({4}, 2), q = rnd({4}, 3);  // no aliasing: another entry, functional as usual
  Tensor p2 = p.clone();
  EXPECT_TRUE(st::equal(c(p, q), f(p2, q)));
  EXPECT_TRUE(st::equal(p, p2));
  EXPECT_EQ(c.stats().compiles, 2);
}
