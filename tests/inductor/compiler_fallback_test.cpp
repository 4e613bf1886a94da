// When the host C++ compiler fails on generated code, the build is retried once at -O1, and when that fails
// too the graph runs on aot_eager (compile.h's fallback default), unless fallback is off. The compiler is a
// script (SINTER_CXX) that runs the real one, failing at -O3 or always; the results equal eager's either way.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "cache_dir_fixture.h"
#include "codegen/cpp/kernel_cache.h"
#include "sinter/compile.h"
#include "sinter/ops.h"
#include "support/log.h"
#include "testing.h"
#include "scoped_env.h"

namespace sinter {
namespace {

namespace fs = std::filesystem;

using sinter::testing::ScopedEnv;

Tensor program(const Tensor& x) { return tanh(x) * 2 + x.amax(DimList{1}, true) - sigmoid(x * 3); }

class CompilerFallback : public testing::CacheDirFixture {
 protected:
  CompilerFallback() : CacheDirFixture("compiler-fallback-test") {}
  void TearDown() override {
    cxx_.reset();
    CacheDirFixture::TearDown();
  }
  // A compiler script: it records each command line in calls.log, then `body` decides (it may run the real
  // one with `exec g++ "$@"`).
  void use_compiler(const std::string& body) {
    std::string script = dir_ + "/c++";
    std::ofstream(script) << "#!/bin/sh\n"
                             "if [ \"$1\" = \"--version\" ]; then echo 'wrapped-c++ 1.0'; exit 0; fi\n"
                             "echo \"$@\" >> '"
                          << dir_ << "/calls.log'\n"
                          << body;
    fs::permissions(script, fs::perms::owner_all);
    cxx_.emplace("SINTER_CXX", script);
  }
  std::string calls() const {
    std::ifstream in(dir_ + "/calls.log");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::optional<ScopedEnv> cxx_;
};

// An internal compiler error at -O3 only: the retry at -O1 builds the kernels, nothing falls back.
TEST_F(CompilerFallback, FailureAtO3IsRetriedAtO1) {
  use_compiler(
      "for a in \"$@\"; do\n"
      "  if [ \"$a\" = \"-O3\" ]; then echo 'internal compiler error: injected at -O3' >&2; exit 1; fi\n"
      "done\n"
      "exec g++ \"$@\"\n");
  auto f = compile([](const Tensor& x) { return program(x); }, {.backend = "inductor"});
  Tensor x = testing::random({8, 24}, kFloat32, 3);
  EXPECT_CLOSE(f(x), program(x));
  EXPECT_EQ(f.stats().eager_fallbacks, 0);
  EXPECT_GT(f.stats().kernels_per_call, 0) << "compiled by the inductor";
  std::string log = calls();
  EXPECT_NE(log.find("-O3"), std::string::npos) << log;
  const size_t retry = log.find("-O1");
  ASSERT_NE(retry, std::string::npos) << log;
  const std::string retry_line = log.substr(retry, log.find('\n', retry) - retry);
  EXPECT_LT(log.find("-fopenmp-simd"), retry) << "the first attempt forces vectorisation:\n" << log;
  EXPECT_EQ(retry_line.find("-fopenmp-simd"), std::string::npos) << "the retry does not:\n" << log;
}

// A compiler that always fails (here by crashing): by default the graph runs on aot_eager, with a log line
// under perf_hints naming the compiler's failure; fallback = false throws CompilerError; fallback = true runs
// aot_eager too.
TEST_F(CompilerFallback, FailureAtEveryLevelRunsAotEagerUnlessFallbackIsOff) {
  use_compiler("echo 'c++: fatal: injected crash' >&2\nkill -SEGV $$\n");
  Tensor x = testing::random({8, 24}, kFloat32, 4);
  {
    ScopedEnv logs("SINTER_LOGS", "perf_hints");
    reload_log_settings();
    ::testing::internal::CaptureStderr();
    auto f = compile([](const Tensor& x) { return program(x); }, {.backend = "inductor"});
    Tensor got = f(x);
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_TENSOR_EQ(got, program(x));  // aot_eager: eager's numbers exactly
    EXPECT_EQ(f.stats().eager_fallbacks, 1);
    EXPECT_NE(err.find("running aot_eager instead"), std::string::npos) << err;
    EXPECT_NE(err.find("injected crash"), std::string::npos) << err;
    EXPECT_NE(err.find("retried at -O1"), std::string::npos) << err;
    EXPECT_TENSOR_EQ(f(x), program(x));  // the entry keeps running aot_eager
  }
  reload_log_settings();
  auto strict =
      compile([](const Tensor& x) { return program(x); }, {.backend = "inductor", .fallback = false});
  try {
    strict(x);
    ADD_FAILURE() << "fallback = false did not throw";
  } catch (const CompilerError& e) {
    EXPECT_NE(std::string(e.what()).find("injected crash"), std::string::npos) << e.what();
  }
  auto lenient =
      compile([](const Tensor& x) { return program(x); }, {.backend = "inductor", .fallback = true});
  EXPECT_TENSOR_EQ(lenient(x), program(x));
  EXPECT_EQ(lenient.stats().eager_fallbacks, 1);
}

// A compiler that hangs (g++ 13 spun for minutes on a small kernel on the H200 host) is killed after
// SINTER_COMPILE_TIMEOUT seconds: hanging at -O3 only, the retry at -O1 builds the kernels; hanging always, the
// graph runs on aot_eager and the message says the compiler was killed.
TEST_F(CompilerFallback, AHangingCompilerIsKilledAndRetriedThenFallsBack) {
  ScopedEnv timeout("SINTER_COMPILE_TIMEOUT", "1");
  use_compiler(
      "for a in \"$@\"; do\n"
      "  if [ \"$a\" = \"-O3\" ]; then exec sleep 30; fi\n"
      "done\n"
      "exec g++ \"$@\"\n");
  Tensor x = testing::random({8, 24}, kFloat32, 6);
  auto f = compile([](const Tensor& x) { return program(x); }, {.backend = "inductor"});
  EXPECT_CLOSE(f(x), program(x));
  EXPECT_EQ(f.stats().eager_fallbacks, 0);
  EXPECT_NE(calls().find("-O1"), std::string::npos) << calls();
  use_compiler("exec sleep 30\n");
  auto strict = compile([](const Tensor& x) { return program(x) * 3; }, {.backend = "inductor", .fallback = false});
  EXPECT_ERROR(strict(x), "killed after running 1 s");
  auto g = compile([](const Tensor& x) { return program(x) * 3; }, {.backend = "inductor"});
  EXPECT_TENSOR_EQ(g(x), program(x) * 3);
  EXPECT_EQ(g.stats().eager_fallbacks, 1);
}

// g++ 12 crashed (an internal compiler error) on the vectorised __builtin_signbit of a float widened from
// bfloat16/float16; the generated code tests the sign bit with an integer shift instead. With fallback off, a
// compiler failure would throw here.
TEST(GeneratedCode, SignbitOfHalfAndBFloat16Compiles) {
  for (DType dt : {kBFloat16, kFloat16, kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dt));
    auto f = [](const Tensor& t) { return std::vector<Tensor>{signbit(t), signbit(t * 2 - 1), signbit(-t)}; };
    Tensor x = testing::random({7, 37}, dt, 5);
    x.view({-1}).narrow(0, 0, 2).copy_(from_vector<float>({0.0f, -0.0f}, {2}).to(dt));  // signed zeros
    auto c = compile(f, {.backend = "inductor", .fallback = false});
    std::vector<Tensor> got = c(x), want = f(x);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TENSOR_EQ(got[i], want[i]);
    EXPECT_GT(c.stats().kernels_per_call, 0);
  }
}

// Only a compiler failure falls back by default: a user's mistake found while compiling still throws.
TEST_F(CompilerFallback, OtherBackendErrorsStillThrowByDefault) {
  register_backend("fallback_test_broken", [](const Graph&, const std::vector<Tensor>&) -> CompiledGraph {
    throw Error("fallback_test_broken: refuses every graph");
  });
  auto f = compile([](const Tensor& x) { return x + 1; }, {.backend = "fallback_test_broken"});
  EXPECT_ERROR(f(testing::random({3})), "refuses every graph");
}

}  // namespace
}  // namespace sinter
