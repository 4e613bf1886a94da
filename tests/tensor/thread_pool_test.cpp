// The intra-op pool: covers every index once, runs nested and concurrent loops inline, propagates exceptions.
#include <atomic>
#include <chrono>
#include <thread>

#include "tensor/thread_pool.h"
#include "testing.h"

namespace sinter {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  std::vector<std::atomic<int>> hits(100000);
  parallel_for(0, 100000, 1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i]++;
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(ThreadPool, NestedLoopsRunInline) {
  std::atomic<int64_t> total{0};
  parallel_for(0, 64, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      EXPECT_TRUE(in_parallel_region());
      parallel_for(0, 100, 1, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
    }
  });
  EXPECT_EQ(total.load(), 6400);
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
  EXPECT_THROW(parallel_for(0, 1000, 1, [](int64_t b, int64_t) {
                 if (b == 0) throw Error("boom");
               }),
               Error);
}

TEST(ThreadPool, ManyUserThreadsAtOnceGetCorrectResults) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        Tensor x = full({50000}, t + 1, TensorOptions(kFloat64));
        Tensor y = x.clone();
        if (y.to_vector<double>()[49999] != t + 1) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ThreadPool, SetNumThreads) {
  int before = get_num_threads();
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
  std::atomic<int64_t> n{0};
  parallel_for(0, 1000, 10, [&](int64_t b, int64_t e) { n += e - b; });
  EXPECT_EQ(n.load(), 1000);
  set_num_threads(before);
}

// Regions of every size back to back and after pauses long enough for the workers to sleep (a worker that has
// not taken a job up by the time the caller's share is done is withdrawn from it): every index exactly once,
// also with a worker count above and below the task count.
TEST(ThreadPool, RegionsBackToBackAndAfterPausesCoverEveryIndex) {
  const int before = get_num_threads();
  for (int threads : {4, 7}) {
    set_num_threads(threads);
    for (int rep = 0; rep < 300; ++rep) {
      const int64_t n = 1 + (rep * 7919) % 3000, grain = 1 + rep % 97;
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << rep << " " << i;
      if (rep % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  set_num_threads(before);
}

}  // namespace
}  // namespace sinter
