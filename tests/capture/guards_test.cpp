// Guards and recompiles: which calls reuse an entry, which recompile and why, automatic dynamic shapes,
// mark_dynamic, specialised arguments, the recompile limit, and the logs that say so.
#include <cstdlib>

#include "sinter/compile.h"
#include "support/log.h"
#include "testing.h"

using namespace sinter;
namespace st = sinter::testing;

namespace {

Tensor rnd(const SymIntList& sizes, uint64_t seed, DType dtype = kFloat32) {
  return st::random(sizes, dtype, seed);
}

struct Mlp {
  Tensor w1 = st::random({32, 16}, kFloat32, 1), b1 = st::random({32}, kFloat32, 2);
  Tensor w2 = st::random({4, 32}, kFloat32, 3);
  Tensor operator()(const Tensor& x) const { return linear(relu(linear(x, w1, b1)), w2); }
};

const std::vector<int64_t> kBatches = {1, 7, 33, 64, 100, 257, 512, 999, 2048, 3};

// Runs `body` with SINTER_LOGS=channels and returns what it printed on stderr.
template <class F>
std::string logs_of(const char* channels, F&& body) {
  setenv("SINTER_LOGS", channels, 1);
  reload_log_settings();
  ::testing::internal::CaptureStderr();
  body();
  std::string out = ::testing::internal::GetCapturedStderr();
  unsetenv("SINTER_LOGS");
  reload_log_settings();
  return out;
}

}  // namespace

TEST(CaptureGuards, MlpBatchSizesCompileAtMostTwiceUnderAuto) {
  Mlp mlp;
  auto c = compile(mlp, {.backend = "aot_eager"});
  for (int64_t b : kBatches) {
    Tensor x = rnd({b, 16}, b);
    EXPECT_TRUE(st::equal(c(x), mlp(x))) << b;
  }
  EXPECT_LE(c.stats().compiles, 2);
  EXPECT_EQ(c.stats().guard_hits, static_cast<int>(kBatches.size()) - c.stats().compiles);
}

TEST(CaptureGuards, MlpBatchSizesCompileOnceUnderAlways) {
  Mlp mlp;
  auto c = compile(mlp, {.backend = "aot_eager", .dynamic = Dynamic::kAlways});
  for (size_t i = 1; i < kBatches.size(); ++i) {
    Tensor x = rnd({kBatches[i], 16}, i);
    EXPECT_TRUE(st::equal(c(x), mlp(x))) << kBatches[i];
  }
  EXPECT_EQ(c.stats().compiles, 1);
  // Size 1 is always specialised (broadcasting behaves differently there), so it gets an entry of its own.
  Tensor one = rnd({1, 16}, 99);
  EXPECT_TRUE(st::equal(c(one), mlp(one)));
  EXPECT_EQ(c.stats().compiles, 2);
}

TEST(CaptureGuards, NeverStaysStaticAndHitsTheLimit) {
  Mlp mlp;
  auto c = compile(mlp, {.dynamic = Dynamic::kNever, .recompile_limit = 3});
  for (int64_t b : {2, 3, 4, 5, 6, 2}) {
    Tensor x = rnd({b, 16}, b);
    EXPECT_TRUE(st::equal(c(x), mlp(x))) << b;
  }
  CompileStats s = c.stats();
  EXPECT_EQ(s.compiles, 3);
  EXPECT_EQ(s.eager_fallbacks, 2);  // batch 5 and 6 ran eagerly
  EXPECT_EQ(s.guard_hits, 1);       // the last call (batch 2) still reuses its entry
  EXPECT_EQ(s.recompiles, 2);
  ASSERT_EQ(s.recompile_reasons.size(), 2u);
  EXPECT_NE(s.recompile_reasons[0].reason.find("arg0.size(0) was 2, now 3"), std::string::npos)
      << s.recompile_reasons[0].reason;
}

TEST(CaptureGuards, SlicedInputDoesNotReuseContiguousEntry) {
  for (Dynamic d : {Dynamic::kAuto, Dynamic::kAlways}) {
    auto f = [](const Tensor& x) { return x * 2 + 1; };
    auto c = compile(f, {.dynamic = d});
    Tensor a = rnd({6, 8}, 1);
    Tensor base = rnd({6, 16}, 2);
    Tensor sliced = base.slice(1, 0, 16, 2);  // [6, 8] with strides [16, 2]
    EXPECT_TRUE(st::equal(c(a), f(a)));
    EXPECT_TRUE(st::equal(c(sliced), f(sliced)));
    EXPECT_EQ(c.stats().compiles, 2);
    EXPECT_NE(c.stats().recompile_reasons.at(0).reason.find("arg0"), std::string::npos);
    EXPECT_TRUE(st::equal(c(a), f(a)));
    EXPECT_EQ(c.stats().compiles, 2);
  }
}

TEST(CaptureGuards, SymbolicEntryKeepsLayoutClass) {
  auto f = [](const Tensor& x) { return x.sum({1}); };
  auto c = compile(f, {.dynamic = Dynamic::kAlways});
  EXPECT_TRUE(st::equal(c(rnd({5, 3}, 1)), f(rnd({5, 3}, 1))));
  EXPECT_TRUE(st::equal(c(rnd({9, 4}, 2)), f(rnd({9, 4}, 2))));  // contiguous again: hit
  EXPECT_EQ(c.stats().compiles, 1);
  Tensor t = rnd({4, 9}, 3).t();  // a transpose: another layout class
  EXPECT_TRUE(st::equal(c(t), f(t)));
  EXPECT_EQ(c.stats().compiles, 2);
  Tensor t2 = rnd({6, 11}, 4).t();
  EXPECT_TRUE(st::equal(c(t2), f(t2)));
  EXPECT_EQ(c.stats().compiles, 2);
}

TEST(CaptureGuards, DtypeRequiresGradAndAliasingRecompile) {
  auto f = [](const Tensor& a, const Tensor& b) { return a * b; };
  auto c = compile(f);
  Tensor x = rnd({4}, 1), y = rnd({4}, 2);
  c(x, y);
  c(x.to(kFloat64), y);
  EXPECT_NE(c.stats().recompile_reasons.back().reason.find("arg0.dtype was float32, now float64"),
            std::string::npos);
  Tensor g = rnd({4}, 3);
  g.requires_grad_();
  c(g, y);
  EXPECT_NE(c.stats().recompile_reasons.back().reason.find("requires_grad"), std::string::npos);
  EXPECT_TRUE(st::equal(c(x, x), f(x, x)));
  EXPECT_NE(c.stats().recompile_reasons.back().reason.find("shares storage with arg0"), std::string::npos)
      << c.stats().recompile_reasons.back().reason;
  EXPECT_EQ(c.stats().compiles, 4);
  c(y, y);  // the same aliasing pattern: a hit
  EXPECT_EQ(c.stats().compiles, 4);
}

TEST(CaptureGuards, DoublesAndBoolsAreSpecialised) {
  auto f = [](const Tensor& x, double a, bool neg) { return neg ? -(x * a) : x * a; };
  auto c = compile(f);
  Tensor x = rnd({3}, 1);
  EXPECT_TRUE(st::equal(c(x, 0.5, false), f(x, 0.5, false)));
  EXPECT_TRUE(st::equal(c(x, 0.5, false), f(x, 0.5, false)));
  EXPECT_TRUE(st::equal(c(x, 0.25, false), f(x, 0.25, false)));
  EXPECT_NE(c.stats().recompile_reasons.back().reason.find("arg1 (double) was 0.5, now 0.25"),
            std::string::npos);
  EXPECT_TRUE(st::equal(c(x, 0.25, true), f(x, 0.25, true)));
  EXPECT_EQ(c.stats().compiles, 3);
}

TEST(CaptureGuards, IntegersBecomeSymbolicAfterTheyChange) {
  auto f = [](const Tensor& x, SymInt n) { return x.narrow(0, 0, n) * 2; };
  auto c = compile(f);
  Tensor x = rnd({12, 2}, 1);
  for (int64_t n : {3, 4, 5, 11, 4}) EXPECT_TRUE(st::equal(c(x, n), f(x, SymInt(n)))) << n;
  EXPECT_EQ(c.stats().compiles, 2);
  // A plain integer parameter specialises: each value is a guard.
  auto g = [](const Tensor& t, int64_t n) { return t.narrow(0, 0, n) * 2; };
  auto cg = compile(g);
  for (int64_t n : {3, 4, 5}) EXPECT_TRUE(st::equal(cg(x, n), g(x, n)));
  EXPECT_EQ(cg.stats().compiles, 3);
}

TEST(CaptureGuards, MarkDynamicDeclaresARange) {
  auto f = [](const Tensor& x) { return x.softmax(0); };
  auto c = compile(f, {.backend = "aot_eager", .dynamic = Dynamic::kAuto});
  Tensor x = rnd({16, 3}, 1);
  mark_dynamic(x, 0, {.min = 2, .max = 64});
  EXPECT_TRUE(st::equal(c(x), f(x)));
  Tensor y = rnd({40, 3}, 2);
  EXPECT_TRUE(st::equal(c(y), f(y)));
  EXPECT_EQ(c.stats().compiles, 1);
  Tensor z = rnd({100, 3}, 3);  // outside the declared range: a guard failure
  EXPECT_TRUE(st::equal(c(z), f(z)));
  EXPECT_EQ(c.stats().compiles, 2);
  EXPECT_NE(c.stats().recompile_reasons.at(0).reason.find("64"), std::string::npos)
      << c.stats().recompile_reasons.at(0).reason;
  EXPECT_ERROR(mark_dynamic(x, 5), "out of range");
  Tensor w = rnd({100, 3}, 4);
  mark_dynamic(w, 0, {.min = 2, .max = 64});
  EXPECT_ERROR(compile(f)(w), "100");  // the example itself breaks the declared range
}

TEST(CaptureGuards, EqualSizesAreNotAssumedEqual) {
  auto f = [](const Tensor& a, const Tensor& b) { return a.sum() + b.sum(); };
  auto c = compile(f, {.backend = "aot_eager", .dynamic = Dynamic::kAlways});
  c(rnd({4}, 1), rnd({4}, 2));
  Tensor a = rnd({5}, 3), b = rnd({9}, 4);
  EXPECT_TRUE(st::equal(c(a, b), f(a, b)));
  EXPECT_EQ(c.stats().compiles, 1);
  // Broadcasting a + b does compare them: the guard s0 == s1 is recorded.
  auto g = [](const Tensor& a2, const Tensor& b2) { return a2 + b2; };
  auto cg = compile(g, {.backend = "aot_eager", .dynamic = Dynamic::kAlways});
  cg(rnd({4}, 1), rnd({4}, 2));
  cg(rnd({6}, 1), rnd({6}, 2));
  EXPECT_EQ(cg.stats().compiles, 1);
  Tensor one = rnd({1}, 5);
  EXPECT_TRUE(st::equal(cg(a, one), g(a, one)));
  EXPECT_EQ(cg.stats().compiles, 2);
}

TEST(CaptureGuards, LogsNameTheFailedGuardWithOldAndNewValue) {
  auto f = [](const Tensor& x) { return x.exp(); };
  auto c = compile(f);
  std::string text = logs_of("recompiles,guards,graph,dynamic", [&] {
    c(rnd({4, 2}, 1));
    c(rnd({8, 2}, 2));
  });
  EXPECT_NE(text.find("[sinter:graph]"), std::string::npos) << text;
  EXPECT_NE(text.find("exp(%arg0)"), std::string::npos) << text;
  EXPECT_NE(text.find("[sinter:guards]"), std::string::npos);
  EXPECT_NE(text.find("[sinter:recompiles] recompiling (entry 2 of at most 8): arg0.size(0) was 4, now 8"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[sinter:dynamic]"), std::string::npos);
  // Nothing is printed on a guard hit, and nothing at all with the channels off.
  EXPECT_EQ(logs_of("recompiles,guards,graph,dynamic", [&] { c(rnd({5, 2}, 3)); }), "");
  EXPECT_EQ(logs_of("", [&] { c(rnd({5, 3}, 3)); }), "");
}

TEST(CaptureGuards, RecompileLimitIsLoggedOnce) {
  auto f = [](const Tensor& x) { return x + 1; };
  auto c = compile(f, {.dynamic = Dynamic::kNever, .recompile_limit = 1});
  std::string text = logs_of("recompiles", [&] {
    for (int64_t n : {2, 3, 4, 5}) EXPECT_TRUE(st::equal(c(rnd({n}, n)), f(rnd({n}, n))));
  });
  size_t first = text.find("recompile limit (1) reached");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find("recompile limit", first + 1), std::string::npos) << text;
  EXPECT_EQ(c.stats().eager_fallbacks, 3);
}

TEST(CaptureGuards, ResetForgetsEntries) {
  auto f = [](const Tensor& x) { return x * 3; };
  auto c = compile(f);
  c(rnd({3}, 1));
  c.reset();
  c(rnd({3}, 1));
  EXPECT_EQ(c.stats().compiles, 2);
  EXPECT_EQ(c.stats().recompiles, 0);
}
