// Calls of one compiled function from many threads at once: concurrent callers of one missing entry share a
// single compile (the others wait for it and run the entry it made), a compile failure reaches every waiter,
// and sequential calls of the same shapes compile once.
#include <atomic>
#include <chrono>
#include <latch>
#include <mutex>
#include <thread>

#include "sinter/compile.h"
#include "testing.h"

using namespace sinter;
namespace st = sinter::testing;

namespace {

Tensor fn(const Tensor& x) { return (x * 2 + 1).relu().sum({1}); }

// Runs body(t) on `n` threads released together.
template <class F>
void on_threads(int n, F body) {
  std::latch start(n);
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      body(t);
    });
  for (std::thread& th : threads) th.join();
}

}  // namespace

TEST(ConcurrentCalls, SequentialCallsOfOneShapeCompileOnce) {
  for (const char* backend : {"aot_eager", "inductor"}) {
    for (Dynamic d : {Dynamic::kAuto, Dynamic::kAlways, Dynamic::kNever}) {
      auto c = compile(fn, {.backend = backend, .dynamic = d});
      for (int i = 0; i < 4; ++i) {
        Tensor x = st::random({6, 5}, kFloat32, i);  // a new tensor of the same shape each call
        EXPECT_CLOSE(c(x), fn(x));
      }
      EXPECT_EQ(c.stats().compiles, 1) << backend << " " << c.stats().str();
      EXPECT_EQ(c.stats().guard_hits, 3) << backend;
    }
  }
}

TEST(ConcurrentCalls, EightThreadsOnAColdFunctionCompileOnce) {
  for (const char* backend : {"aot_eager", "inductor"}) {
    auto c = compile(fn, {.backend = backend});
    std::vector<Tensor> xs, refs;
    for (int t = 0; t < 8; ++t) {
      xs.push_back(st::random({6, 5}, kFloat32, 10 + t));
      refs.push_back(fn(xs.back()));
    }
    std::vector<int> failures(8, 0);
    on_threads(8, [&](int t) {
      if (!st::close(c(xs[t]), refs[t])) ++failures[t];
    });
    for (int t = 0; t < 8; ++t) EXPECT_EQ(failures[t], 0) << backend << " thread " << t;
    CompileStats s = c.stats();
    EXPECT_EQ(s.compiles, 1) << backend << " " << s.str();
    EXPECT_EQ(s.guard_hits, 7) << backend;
    EXPECT_EQ(s.eager_fallbacks, 0) << backend;
    EXPECT_EQ(s.recompiles, 0) << backend;
  }
}

TEST(ConcurrentCalls, DistinctShapesShareOneSymbolicEntryUnderAuto) {
  // Eight threads, eight batch sizes, all at once: one static entry, then one symbolic entry that the
  // automatic dynamic policy makes on the first miss serves every other size.
  auto c = compile(fn, {.backend = "aot_eager"});
  std::vector<int> failures(8, 0);
  on_threads(8, [&](int t) {
    for (int i = 0; i < 5; ++i) {
      Tensor x = st::random({2 + t, 5}, kFloat32, 100 * t + i);
      if (!st::equal(c(x), fn(x))) ++failures[t];
    }
  });
  for (int t = 0; t < 8; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  CompileStats s = c.stats();
  EXPECT_EQ(s.compiles, 2) << s.str();
  EXPECT_EQ(s.eager_fallbacks, 0) << s.str();
  EXPECT_EQ(s.compiles + s.guard_hits, 40) << s.str();
}

TEST(ConcurrentCalls, EachDistinctStaticShapeCompilesOnce) {
  // kNever: every shape needs its own entry; the threads calling one shape share its compile.
  auto c = compile(fn, {.backend = "inductor", .dynamic = Dynamic::kNever, .recompile_limit = 64});
  std::vector<int> failures(8, 0);
  on_threads(8, [&](int t) {
    for (int i = 0; i < 6; ++i) {
      Tensor x = st::random({2 + (t + i) % 4, 3}, kFloat32, 100 * t + i);
      if (!st::close(c(x), fn(x))) ++failures[t];
    }
  });
  for (int t = 0; t < 8; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  CompileStats s = c.stats();
  EXPECT_EQ(s.compiles, 4) << s.str();
  EXPECT_EQ(s.compiles + s.guard_hits, 48) << s.str();
}

TEST(ConcurrentCalls, ACompileFailureReachesEveryWaiter) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  register_backend("test_slow_failing",
                   [calls](const Graph&, const std::vector<Tensor>&) -> CompiledGraph {
                     ++*calls;
                     // Long enough for every thread to be waiting on this compile.
                     std::this_thread::sleep_for(std::chrono::milliseconds(300));
                     throw Error("test_slow_failing cannot compile this graph");
                   });
  auto c = compile(fn, {.backend = "test_slow_failing"});
  Tensor x = st::random({4, 3}, kFloat32, 1);
  std::vector<int> saw_error(8, 0);
  on_threads(8, [&](int t) {
    try {
      c(x);
    } catch (const Error& e) {
      saw_error[t] = std::string(e.what()).find("cannot compile this graph") != std::string::npos;
    }
  });
  for (int t = 0; t < 8; ++t) EXPECT_EQ(saw_error[t], 1) << "thread " << t;
  EXPECT_EQ(calls->load(), 1);
  EXPECT_EQ(c.stats().compiles, 0);
}

TEST(ConcurrentCalls, SegmentsOfAFunctionWithBreaksCompileOnce) {
  auto f = [](const Tensor& x) {
    double s = x.sum().item<double>();
    return x * s + 1;
  };
  auto c = compile(f, {.backend = "aot_eager"});
  Tensor warm = st::random({3}, kFloat32, 1);
  EXPECT_TRUE(st::equal(c(warm), f(warm)));  // the first call finds the break
  const int before = c.stats().compiles;
  std::vector<int> failures(8, 0);
  on_threads(8, [&](int t) {
    Tensor x = st::random({5}, kFloat32, 20 + t);
    if (!st::equal(c(x), f(x))) ++failures[t];
  });
  for (int t = 0; t < 8; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  // A new size: each of the two segments compiles once more, whatever the number of threads.
  EXPECT_LE(c.stats().compiles - before, 2) << c.stats().str();
}
