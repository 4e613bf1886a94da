// What a user must hear without any setting: a compiled function that hit its recompile limit, or whose
// backend failed and was replaced by aot_eager, says so once on stderr (per compiled function, not per call);
// graph-break log lines appear once per distinct break, not on every call.
#include "sinter/compile.h"
#include "support/log.h"
#include "testing.h"

using namespace sinter;
namespace st = sinter::testing;

namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(FallbackWarnings, RecompileLimitIsSaidOnceWithoutLogs) {
  unsetenv("SINTER_LOGS");
  reload_log_settings();
  auto f = [](const Tensor& x, double k) { return x * k; };  // doubles are specialised: one entry per value
  ::testing::internal::CaptureStderr();
  auto c = compile(f, {.backend = "aot_eager", .recompile_limit = 2});
  Tensor x = st::random({3}, kFloat32, 1);
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(st::equal(c(x, 1.0 + i), f(x, 1.0 + i)));
  auto other = compile(f, {.backend = "aot_eager", .recompile_limit = 1});
  for (int i = 0; i < 3; ++i) other(x, 1.0 + i);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "[sinter:warning] recompile limit (2) reached"), 1u) << err;
  EXPECT_EQ(count(err, "[sinter:warning] recompile limit (1) reached"), 1u) << err;
  EXPECT_EQ(c.stats().eager_fallbacks, 4);
}

TEST(FallbackWarnings, BackendFallbackIsSaidOnceWithoutLogs) {
  unsetenv("SINTER_LOGS");
  reload_log_settings();
  register_backend("test_always_failing",
                   [](const Graph&, const std::vector<Tensor>&) -> CompiledGraph {
                     throw Error("test_always_failing refuses every graph");
                   });
  auto f = [](const Tensor& x) { return x.exp(); };
  ::testing::internal::CaptureStderr();
  auto c = compile(f, {.backend = "test_always_failing", .fallback = true});
  for (int64_t n : {3, 4, 5, 6}) {  // new sizes: new entries, each one falling back
    Tensor x = st::random({n}, kFloat32, n);
    EXPECT_TRUE(st::equal(c(x), f(x)));
    EXPECT_TRUE(st::equal(c(x), f(x)));
  }
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "[sinter:warning] backend 'test_always_failing' failed"), 1u) << err;
  EXPECT_EQ(count(err, "test_always_failing refuses every graph"), 1u) << err;
}

TEST(FallbackWarnings, EachGraphBreakIsLoggedOncePerCompiledFunction) {
  setenv("SINTER_LOGS", "graph_breaks", 1);
  reload_log_settings();
  auto f = [](const Tensor& x) {
    double s = x.sum().item<double>();
    Tensor y = x * s;
    double m = y.max().item<double>();
    return y - m;
  };
  ::testing::internal::CaptureStderr();
  auto c = compile(f, {.backend = "aot_eager"});
  for (int i = 0; i < 5; ++i) {
    Tensor x = st::random({4}, kFloat32, i);
    EXPECT_TRUE(st::equal(c(x), f(x)));
  }
  std::string err = ::testing::internal::GetCapturedStderr();
  unsetenv("SINTER_LOGS");
  reload_log_settings();
  EXPECT_EQ(count(err, "[sinter:graph_breaks] graph break: item()"), 2u) << err;  // two distinct reads
  EXPECT_EQ(c.stats().graph_breaks, 2) << c.stats().str();
}
