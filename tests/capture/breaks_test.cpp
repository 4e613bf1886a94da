// Graph breaks: reads of tensor data (item, to_vector, bool, printing) and data-dependent ops split a
// compiled function into segments with host code between them; results equal eager's whatever branch the data
// picks, host values fed back into ops do not recompile, and fullgraph turns a break into an error naming the
// read.
#include <fmt/format.h>

#include <sstream>

#include "function_cases.h"
#include "sinter/compile.h"
#include "testing.h"

using namespace sinter;
namespace st = sinter::testing;

namespace {

Tensor rnd(const SymIntList& sizes, uint64_t seed, DType dtype = kFloat32) {
  return st::random(sizes, dtype, seed);
}

}  // namespace

TEST(CaptureBreaks, ItemFedBackDoesNotRecompilePerValue) {
  corpus::BreakCase f = corpus::named(corpus::break_cases(), "item fed back");
  auto c = compile(f.fn, {.backend = "aot_eager"});
  for (uint64_t i = 0; i < 10; ++i) {
    corpus::Ts x = f.seeded(kFloat32, i);
    EXPECT_TRUE(st::equal(c(x)[0], f.fn(x)[0])) << i;
  }
  CompileStats s = c.stats();
  EXPECT_EQ(s.graph_breaks, 1);
  EXPECT_LE(s.compiles, f.max_compiles) << s.str();
  EXPECT_EQ(s.eager_fallbacks, 0);
}

TEST(CaptureBreaks, BranchOnDataFollowsEachCall) {
  corpus::BreakCase f = corpus::named(corpus::break_cases(), "branch on data");
  auto c = compile(f.fn, {.backend = "aot_eager"});
  for (uint64_t i = 0; i < 12; ++i) {
    corpus::Ts x = f.seeded(kFloat32, i);
    EXPECT_TRUE(st::equal(c(x)[0], f.fn(x)[0])) << i;
  }
  EXPECT_LE(c.stats().compiles, f.max_compiles);
}

TEST(CaptureBreaks, ToVectorAndLoopOnHostValues) {
  auto f = [](const Tensor& x) {
    std::vector<int64_t> counts = (x > 0).sum({1}).to_vector<int64_t>();
    Tensor out = x.clone();
    for (size_t i = 0; i < counts.size(); ++i) out = out + static_cast<double>(counts[i]);
    return out;
  };
  auto c = compile(f);
  for (uint64_t i = 0; i < 4; ++i) {
    Tensor x = rnd({3, 4}, i + 1);
    EXPECT_TRUE(st::equal(c(x), f(x)));
  }
}

TEST(CaptureBreaks, PrintingInsideTheFunction) {
  std::ostringstream eager_log, compiled_log;
  auto make = [](std::ostringstream& log) {
    return [&log](const Tensor& x) {
      Tensor y = x.abs();
      log << y << "\n";
      return y + 1;
    };
  };
  Tensor x = rnd({3}, 1);
  Tensor want = make(eager_log)(x);
  auto c = compile(make(compiled_log));
  EXPECT_TRUE(st::equal(c(x), want));
  EXPECT_TRUE(st::equal(c(x), want));
  EXPECT_EQ(compiled_log.str(),
            eager_log.str() + eager_log.str());  // a function with breaks re-runs host code
  EXPECT_EQ(c.stats().graph_breaks, 1);
}

TEST(CaptureBreaks, NonzeroAndBoolMaskBreak) {
  auto f = [](const Tensor& x) {
    Tensor idx = nonzero(x > 0.5);
    Tensor picked = masked_select(x, x < 0);
    return std::make_tuple(idx * 2, picked.sum() + x.sum(), index(x, {x > 0}) + 1);
  };
  auto c = compile(f);
  for (uint64_t i = 0; i < 3; ++i) {
    Tensor x = rnd({6}, i + 1);
    auto [a, b, d] = c(x);
    auto [ea, eb, ed] = f(x);
    EXPECT_TRUE(st::equal(a, ea));
    EXPECT_TRUE(st::equal(b, eb));
    EXPECT_TRUE(st::equal(d, ed));
  }
  ExplainOutput e = explain(f, rnd({6}, 9));
  ASSERT_GE(e.breaks.size(), 1u);
  EXPECT_EQ(e.breaks[0].reason, "nonzero (data-dependent output)");
  EXPECT_NE(e.breaks[0].location.find("breaks_test.cpp"), std::string::npos) << e.breaks[0].location;
}

TEST(CaptureBreaks, FullgraphNamesTheReadAndLine) {
  constexpr int kItemLine = __LINE__ + 2;
  auto f = [](const Tensor& x) {
    double s = x.sum().item<double>();
    return x * s;
  };
  Tensor x = rnd({3}, 1);
  auto c = compile(f, {.fullgraph = true});
  try {
    c(x);
    ADD_FAILURE() << "no GraphBreakError";
  } catch (const GraphBreakError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("item()"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fmt::format("breaks_test.cpp:{}", kItemLine)), std::string::npos) << msg;
  }
  auto g = compile([](const Tensor& y) { return bool(y.sum() > 0) ? y : -y; }, {.fullgraph = true});
  EXPECT_ERROR(g(x), "bool(tensor)", "unknown location");
  auto h = compile([](const Tensor& y) { return nonzero(y); }, {.fullgraph = true});
  EXPECT_ERROR(h(x), "nonzero (data-dependent output)", "breaks_test.cpp");
}

TEST(CaptureBreaks, MutationAcrossABreak) {
  auto f = [](Tensor x) {
    x.add_(1);
    double m = x.max().item<double>();
    x.mul_(0.5);
    return x * m;
  };
  for (int call = 0; call < 3; ++call) {
    Tensor base = rnd({2, 3}, call + 1);
    Tensor a = base.clone(), b = base.clone();
    auto c = compile(f);
    Tensor want = f(a);
    Tensor got = c(b);
    EXPECT_TRUE(st::equal(got, want));
    EXPECT_TRUE(st::equal(b, a));  // the argument ends with eager's value
    Tensor got2 = c(b);
    Tensor want2 = f(a);
    EXPECT_TRUE(st::equal(got2, want2));
    EXPECT_TRUE(st::equal(b, a));
  }
}

TEST(CaptureBreaks, RandomOpsAcrossABreakMatchEager) {
  auto f = [](const Tensor& x) {
    Tensor noise = rand_like(x);
    double s = noise.sum().item<double>();
    return dropout(x, 0.25, true) * s + randn({3});
  };
  Tensor x = rnd({3}, 1);
  auto c = compile(f, {.backend = "aot_eager"});
  for (int i = 0; i < 3; ++i) {
    manual_seed(100 + i);
    Tensor want = f(x);
    manual_seed(100 + i);
    Tensor got = c(x);
    EXPECT_TRUE(st::equal(got, want)) << i;
  }
}

TEST(CaptureBreaks, ExplainReportsEachBreak) {
  auto f = [](const Tensor& x) {
    Tensor y = x.exp();
    double a = y.sum().item<double>();
    Tensor z = y * a;
    std::vector<float> v = z.to_vector<float>();
    return z + static_cast<double>(v[0]);
  };
  ExplainOutput e = explain(f, rnd({4}, 1));
  EXPECT_EQ(e.graph_break_count, 2);
  EXPECT_EQ(e.graph_count, 3);
  ASSERT_EQ(e.breaks.size(), 2u);
  EXPECT_EQ(e.breaks[0].reason, "item()");
  EXPECT_EQ(e.breaks[1].reason, "to_vector()");
  EXPECT_NE(e.breaks[0].location.find("breaks_test.cpp:"), std::string::npos);
  ASSERT_EQ(e.ops_per_graph.size(), 3u);
  EXPECT_EQ(e.ops_per_graph[0], 2);  // exp, sum
  std::string text = e.str();
  EXPECT_NE(text.find("Graph break count: 2"), std::string::npos) << text;
  EXPECT_NE(text.find("item() at "), std::string::npos) << text;
}

TEST(CaptureBreaks, ReadingAnArgumentsValuesBreaksOnce) {
  auto f = [](const Tensor& x, const Tensor& scale) { return x * scale.item<double>(); };
  auto c = compile(f);
  Tensor x = rnd({4}, 1);
  for (double s : {2.0, 3.0, -1.0}) {
    Tensor scale = scalar_tensor(s);
    EXPECT_TRUE(st::equal(c(x, scale), f(x, scale))) << s;
  }
  EXPECT_EQ(c.stats().graph_breaks, 1);
}

TEST(CaptureBreaks, EqualHostValuesShareAnInputDistinctOnesDoNot) {
  // Values read at a break become inputs of the next segment; equal ones share one. 0.0 and 2.0 must not.
  auto f = [](const Tensor& x, const Tensor& ab) {
    std::vector<double> v = ab.to_vector<double>();
    return x + v[0] + v[1] * 3;
  };
  auto c = compile(f);
  Tensor x = rnd({4}, 1);
  for (auto [a, b] : {std::pair{0.0, 2.0}, {2.0, 2.0}, {2.0, 0.0}, {0.0, 0.0}, {1.0, -1.0}}) {
    Tensor ab = from_vector<double>({a, b});
    EXPECT_TRUE(st::equal(c(x, ab), f(x, ab))) << a << ", " << b;
  }
}

TEST(CaptureBreaks, HostValuesInPowClampWhereMaskedFill) {
  corpus::BreakCase f = corpus::named(corpus::break_cases(), "host values in pow clamp where masked_fill");
  auto c = compile(f.fn);
  for (uint64_t i = 0; i < 6; ++i) {
    corpus::Ts x = f.seeded(kFloat32, i);
    EXPECT_TRUE(st::equal(c(x)[0], f.fn(x)[0])) << i;
  }
  EXPECT_LE(c.stats().compiles, f.max_compiles) << c.stats().str();
}
