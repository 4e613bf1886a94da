// CompileOptions::tiered (src/capture/tiered.cpp): the first call runs on aot_eager at once while the inductor
// compiles in the background (here with a host compiler made slow by a wrapper that sleeps), later calls switch
// to the compiled code, results are right on both tiers, and a background failure keeps aot_eager or, with
// fallback = false, is thrown.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cache_dir_fixture.h"
#include "scoped_env.h"
#include "sinter/compile.h"
#include "sinter/ops.h"
#include "testing.h"

namespace sinter {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

class Tiered : public testing::CacheDirFixture {
 protected:
  Tiered() : CacheDirFixture("tiered") {}
  // A host compiler wrapper: `body` runs for each compile (not for --version).
  std::string compiler(const std::string& body) {
    fs::path script = fs::path(dir_) / "c++";
    std::ofstream(script) << "#!/bin/sh\ncase \"$*\" in *-shared*) " << body << " ;; esac\nexec g++ \"$@\"\n";
    fs::permissions(script, fs::perms::owner_all);
    return script.string();
  }
};

Tensor fn(const Tensor& x) { return softmax(x * 1.5, -1) + gelu(x); }

// Calls `f` until its stats say that `switches` graphs switched (at most 120 s), checking every result.
template <class F>
void call_until_switched(F& f, const Tensor& x, int switches) {
  auto deadline = Clock::now() + std::chrono::seconds(120);
  while (f.stats().tier_switches < switches && Clock::now() < deadline) {
    EXPECT_CLOSE(f(x), fn(x));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(f.stats().tier_switches, switches) << f.stats().str();
}

TEST_F(Tiered, FirstCallRunsAtOnceThenTheCompiledCodeTakesOver) {
  testing::ScopedEnv cxx("SINTER_CXX", compiler("sleep 2"));
  auto f = compile(fn, {.tiered = true});
  Tensor x = testing::random({16, 40}, kFloat32, 1);
  auto start = Clock::now();
  EXPECT_CLOSE(f(x), fn(x));
  double first_s = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LT(first_s, 1.5) << "the first call waited for the compiler";
  EXPECT_EQ(f.stats().tier_switches, 0);
  call_until_switched(f, x, 1);
  CompileStats s = f.stats();
  EXPECT_GE(s.first_tier_calls, 1);
  EXPECT_EQ(s.kernels_per_call, 1);
  EXPECT_NE(s.str().find("graph(s) switched to the backend's code"), std::string::npos) << s.str();
  EXPECT_CLOSE(f(x), fn(x));
  // A recompile (another rank) is tiered too.
  Tensor y = testing::random({3, 5, 8}, kFloat32, 2);
  EXPECT_CLOSE(f(y), fn(y));
  call_until_switched(f, y, 2);
  EXPECT_EQ(f.stats().compiles, 2);
}

// Calls from many threads while the switch happens all get right results.
TEST_F(Tiered, ConcurrentCallsAcrossTheSwitch) {
  testing::ScopedEnv cxx("SINTER_CXX", compiler("sleep 1"));
  auto f = compile(fn, {.tiered = true});
  Tensor x = testing::random({8, 33}, kFloat32, 3);
  Tensor want = fn(x);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      auto deadline = Clock::now() + std::chrono::seconds(120);
      while (f.stats().tier_switches < 1 && Clock::now() < deadline)
        if (!testing::close(f(x), want)) ++wrong;
      for (int i = 0; i < 20; ++i)
        if (!testing::close(f(x), want)) ++wrong;
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(f.stats().tier_switches, 1);
  EXPECT_EQ(f.stats().compiles, 1);
}

// A compiler that fails in the background: the graph keeps running on aot_eager and it is said on stderr; with
// fallback = false the failure reaches the caller.
TEST_F(Tiered, ABackgroundFailureKeepsAotEagerOrThrows) {
  testing::ScopedEnv cxx("SINTER_CXX", compiler("echo 'injected failure' >&2; exit 1"));
  Tensor x = testing::random({4, 9}, kFloat32, 4);
  ::testing::internal::CaptureStderr();
  {
    auto f = compile(fn, {.tiered = true});
    EXPECT_CLOSE(f(x), fn(x));
  }  // waits for the background compile
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("tiered: backend 'inductor' failed to compile a graph in the background; it keeps running on "
                     "aot_eager"),
            std::string::npos)
      << err;
  auto strict = compile(fn, {.fallback = false, .tiered = true});
  ::testing::internal::CaptureStderr();
  EXPECT_CLOSE(strict(x), fn(x));  // the first call does not wait
  bool thrown = false;
  auto deadline = Clock::now() + std::chrono::seconds(120);
  while (!thrown && Clock::now() < deadline) {
    try {
      strict(x);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } catch (const CompilerError& e) {
      thrown = true;
      EXPECT_NE(std::string(e.what()).find("injected failure"), std::string::npos) << e.what();
    }
  }
  ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(thrown);
}

}  // namespace
}  // namespace sinter
