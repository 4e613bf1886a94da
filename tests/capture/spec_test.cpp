// Items of the capture specification (issue 3) that the other capture tests do not cover on their own: a
// plain function and a functor compiled, std::pair results, shape rules on symbols (conv and pool output
// sizes, view(-1), split into a symbolic number of pieces specialising), the graph_breaks log channel, and
// the umbrella header's compile(). Results are compared exactly, so the backend is aot_eager (capture is
// what is tested here, not a backend's numerics).
#include <cstdlib>

#include "sinter/sinter.h"  // compile() comes with the umbrella header
#include "support/log.h"
#include "testing.h"

using namespace sinter;
namespace st = sinter::testing;

namespace {

Tensor rnd(const SymIntList& sizes, uint64_t seed) { return st::random(sizes, kFloat32, seed); }

Tensor plain_function(const Tensor& x, const Tensor& y) { return (x * y).relu().sum({-1}); }

struct Functor {
  double scale = 3.0;
  std::pair<Tensor, Tensor> operator()(const Tensor& x) const { return {x * scale, x.exp()}; }
};

}  // namespace

TEST(CaptureSpec, PlainFunctionAndFunctorCompile) {
  auto f = compile(plain_function, {.backend = "aot_eager"});
  auto g = compile(&plain_function, {.backend = "aot_eager"});
  Tensor x = rnd({3, 4}, 1), y = rnd({3, 4}, 2);
  EXPECT_TRUE(st::equal(f(x, y), plain_function(x, y)));
  EXPECT_TRUE(st::equal(g(x, y), plain_function(x, y)));
  EXPECT_TRUE(st::equal(f(x, y), plain_function(x, y)));
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(f.stats().guard_hits, 1);
  auto h = compile(Functor{}, {.backend = "aot_eager"});
  auto [a, b] = h(x);
  EXPECT_TRUE(st::equal(a, x * 3.0));
  EXPECT_TRUE(st::equal(b, x.exp()));
}

TEST(CaptureSpec, ConvAndPoolOutputSizesStaySymbolic) {
  Tensor w = rnd({4, 3, 3, 3}, 1);
  auto f = [&w](const Tensor& x) {
    Tensor y = relu(conv2d(x, w, Tensor(), {2, 2}, {1, 1}));
    return max_pool2d(y, {2, 2}, {2, 2}).flatten(1).sum({1});
  };
  auto c = compile(f, {.backend = "aot_eager", .dynamic = Dynamic::kAlways});
  for (int64_t hw : {16, 17, 23, 32, 9}) {
    Tensor x = rnd({2, 3, hw, hw + 3}, hw);
    EXPECT_TRUE(st::equal(c(x), f(x))) << hw;
  }
  EXPECT_EQ(c.stats().compiles, 1) << c.stats().str();
  std::string graph = c.explain(rnd({2, 3, 16, 19}, 1)).graphs.at(0);
  EXPECT_NE(graph.find("%arg0: f32[s"), std::string::npos) << graph;
}

TEST(CaptureSpec, ViewMinusOneOnSymbolicSizes) {
  auto f = [](const Tensor& x) { return x.view({-1}).softmax(0).view({x.size(0), -1}); };
  auto c = compile(f, {.backend = "aot_eager", .dynamic = Dynamic::kAlways});
  for (int64_t n : {3, 8, 5}) {
    Tensor x = rnd({n, 6}, n);
    EXPECT_TRUE(st::equal(c(x), f(x))) << n;
  }
  EXPECT_EQ(c.stats().compiles, 1);
}

TEST(CaptureSpec, SplitIntoASymbolicNumberOfPiecesSpecialises) {
  auto f = [](const Tensor& x) {
    std::vector<Tensor> parts = x.split(2, 0);
    std::vector<Tensor> out;
    for (const Tensor& p : parts) out.push_back(p.sum({0}));
    return out;
  };
  auto c = compile(f, {.backend = "aot_eager", .dynamic = Dynamic::kAlways});
  for (int64_t n : {6, 8, 6, 7, 8}) {
    Tensor x = rnd({n, 3}, n);
    std::vector<Tensor> got = c(x), want = f(x);
    ASSERT_EQ(got.size(), want.size()) << n;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(st::equal(got[i], want[i])) << n << " part " << i;
  }
  // Sizes 6, 8 and 7 give 3, 4 and 4 pieces: each piece count (and the ragged last piece) is its own entry,
  // and repeating a size hits its entry.
  EXPECT_EQ(c.stats().compiles, 3) << c.stats().str();
  EXPECT_EQ(c.stats().guard_hits, 2);
}

TEST(CaptureSpec, GraphBreaksLogChannel) {
  auto f = [](const Tensor& x) {
    double s = x.sum().item<double>();
    return x * s;
  };
  auto c = compile(f, {.backend = "aot_eager"});
  setenv("SINTER_LOGS", "graph_breaks", 1);
  reload_log_settings();
  ::testing::internal::CaptureStderr();
  c(rnd({4}, 1));
  std::string text = ::testing::internal::GetCapturedStderr();
  unsetenv("SINTER_LOGS");
  reload_log_settings();
  EXPECT_NE(text.find("[sinter:graph_breaks] graph break: item()"), std::string::npos) << text;
  EXPECT_NE(text.find("spec_test.cpp"), std::string::npos) << text;
}
