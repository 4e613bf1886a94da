// Factories with sizes read from tensors stay symbolic under capture: a generation loop whose sequence grows
// by one each step compiles twice (static, then symbolic), not once per step. A size that a conversion to
// int64_t specialises says where in the user's code that happened.
#include <cmath>

#include "sinter/compile.h"
#include "support/log.h"
#include "testing.h"

using namespace sinter;
namespace st = sinter::testing;

namespace {

// One attention step of a small GPT over the whole sequence: token embeddings [1, T, C] plus positions from
// arange(T), a causal mask from tril(ones({T, T})), and a projection to the vocabulary of the last position.
struct TinyGpt {
  static constexpr int64_t kC = 8, kVocab = 11, kMaxT = 64;
  Tensor wte = st::random({kVocab, kC}, kFloat32, 1);
  Tensor wpe = st::random({kMaxT, kC}, kFloat32, 2);
  Tensor wq = st::random({kC, kC}, kFloat32, 3), wk = st::random({kC, kC}, kFloat32, 4);
  Tensor head = st::random({kC, kVocab}, kFloat32, 5);

  Tensor forward(const Tensor& tokens) const {  // int64 [1, T]
    SymInt t = tokens.size(1);
    Tensor h = embedding(wte, tokens) + embedding(wpe, arange(t)).unsqueeze(0);  // [1, T, C]
    Tensor q = matmul(h, wq), k = matmul(h, wk);
    Tensor att = matmul(q, k.transpose(1, 2)) * (1.0 / std::sqrt(double(kC)));
    Tensor causal = tril(ones({t, t}));
    att = softmax(masked_fill(att, eq(causal, 0), -1e9), -1);
    Tensor y = matmul(att, h);                                // [1, T, C]
    return matmul(y.select(1, -1), head);                     // [1, vocab]
  }
};

}  // namespace

TEST(SymbolicFactories, GenerationLoopCompilesAtMostTwice) {
  TinyGpt gpt;
  auto step = [&gpt](const Tensor& tokens) { return gpt.forward(tokens); };
  for (const char* backend : {"aot_eager", "inductor"}) {
    auto c = compile(step, {.backend = backend});
    Tensor tokens = from_vector(std::vector<int64_t>{1, 4, 2, 7}, {1, 4});
    for (int i = 0; i < 20; ++i) {
      Tensor want = step(tokens), got = c(tokens);
      if (std::string(backend) == "aot_eager") ASSERT_TRUE(st::equal(got, want)) << "step " << i;
      else ASSERT_TRUE(st::close(got, want, 1e-4)) << "step " << i;
      Tensor next = argmax(want, -1, true);  // [1, 1]
      tokens = cat({tokens, next}, 1);
    }
    CompileStats s = c.stats();
    EXPECT_LE(s.compiles, 2) << backend << " " << s.str();
    EXPECT_EQ(s.eager_fallbacks, 0) << backend << " " << s.str();
    EXPECT_EQ(s.guard_hits, 20 - s.compiles) << backend;
  }
}

TEST(SymbolicFactories, ArangeOfASymbolicSizeStaysSymbolic) {
  auto f = [](const Tensor& x) { return x + arange(x.size(0), TensorOptions(kFloat32)).unsqueeze(1); };
  auto c = compile(f, {.backend = "aot_eager", .dynamic = Dynamic::kAlways});
  ExplainOutput e = c.explain(st::random({5, 3}, kFloat32, 1));
  EXPECT_NE(e.graphs[0].find("arange.start_step(0, s0, 1"), std::string::npos) << e.graphs[0];  // no specialisation
  for (int64_t n : {2, 5, 9}) {
    Tensor x = st::random({n, 3}, kFloat32, n);
    EXPECT_TRUE(st::equal(c(x), f(x))) << n;
  }
  EXPECT_EQ(c.stats().compiles, 1) << c.stats().str();
}

TEST(SymbolicFactories, ArangeWithSymbolicBoundsAndStep) {
  // start and end symbolic, a concrete step of 2 or -1: the length is an expression of the bounds.
  auto up = [](const Tensor& x, const Tensor& y) { return arange(y.size(0), x.size(0) * 3, 2); };
  auto down = [](const Tensor& x) { return arange(x.size(0), 0, -1); };
  auto cu = compile(up, {.backend = "aot_eager", .dynamic = Dynamic::kAlways});
  auto cd = compile(down, {.backend = "inductor", .dynamic = Dynamic::kAlways});
  for (int64_t n : {2, 3, 7}) {
    Tensor x = st::random({n}, kFloat32, n), y = st::random({n + 1}, kFloat32, n);
    EXPECT_TRUE(st::equal(cu(x, y), up(x, y))) << n;
    EXPECT_TRUE(st::equal(cd(x), down(x))) << n;
  }
  EXPECT_EQ(cu.stats().compiles, 1) << cu.stats().str();
  EXPECT_EQ(cd.stats().compiles, 1) << cd.stats().str();
}

TEST(SymbolicFactories, SizedFactoriesAndMasksStaySymbolic) {
  auto f = [](const Tensor& x) {
    SymInt n = x.size(0), m = x.size(1);
    Tensor a = zeros({n, m}) + ones({n, m}) * 2 + full({n, m}, 0.5) + zeros_like(x) + ones_like(x);
    Tensor mask = triu(ones({n, n}), 1) + tril(ones({n, n})) + eye(n);
    Tensor r = rand({n, m}) * 0 + randn({n, m}) * 0 + randint(0, 3, {n, m}) * 0;
    Tensor lin = linspace(0.0, 1.0, m).unsqueeze(0);
    return matmul(mask, x * a + r + lin) + empty({n, m}).zero_();
  };
  auto c = compile(f, {.backend = "aot_eager", .dynamic = Dynamic::kAlways});
  for (int64_t n : {3, 4, 6}) {
    Tensor x = st::random({n, n + 1}, kFloat32, n);
    EXPECT_CLOSE(c(x), f(x));
  }
  EXPECT_EQ(c.stats().compiles, 1) << c.stats().str();
}

TEST(SymbolicFactories, ASpecialisingConversionNamesTheUserLine) {
  auto f = [](const Tensor& x) {
    Tensor y = relu(x);
    int64_t n = y.size(0);  // specialises s0
    return y * static_cast<double>(n);
  };
  const std::string file = __FILE__;
  ExplainOutput e = compile(f, {.dynamic = Dynamic::kAlways}).explain(st::random({7, 3}, kFloat32, 1));
  std::string guard;
  for (const std::string& g : e.guards)
    if (g.find("s0 == 7") != std::string::npos) guard = g;
  ASSERT_FALSE(guard.empty()) << e.str();
  EXPECT_NE(guard.find("specialised by int64_t(SymInt)"), std::string::npos) << guard;
  EXPECT_NE(guard.find("after relu at " + file + ":"), std::string::npos) << guard;

  // SINTER_LOGS=dynamic says so when it happens.
  setenv("SINTER_LOGS", "dynamic", 1);
  reload_log_settings();
  ::testing::internal::CaptureStderr();
  compile(f, {.backend = "aot_eager", .dynamic = Dynamic::kAlways})(st::random({5, 3}, kFloat32, 2));
  std::string err = ::testing::internal::GetCapturedStderr();
  unsetenv("SINTER_LOGS");
  reload_log_settings();
  EXPECT_NE(err.find("[sinter:dynamic] s0 == 5 (specialised by int64_t(SymInt) in host code after relu at " + file),
            std::string::npos)
      << err;
}
