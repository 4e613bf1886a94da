// The CPU allocator's live-bytes and peak counters, which the benchmark reads to compare eager and compiled
// peak memory.
#include "tensor/allocator.h"

#include "testing.h"

namespace sinter {
namespace {

TEST(AllocatorStats, PeakCountsLiveBlocksAndResets) {
  reset_cpu_peak_memory();
  size_t base = cpu_memory_stats().allocated;
  {
    Tensor big = empty({1 << 20});  // 4 MiB: the cached path
    Tensor small = empty({100});    // malloc's path
    EXPECT_GE(cpu_memory_stats().allocated, base + 4 * (1 << 20) + 400);
  }
  EXPECT_EQ(cpu_memory_stats().allocated, base);  // freed blocks, cached or not, are not live
  EXPECT_GE(cpu_memory_stats().peak, base + 4 * (1 << 20) + 400);
  reset_cpu_peak_memory();
  EXPECT_EQ(cpu_memory_stats().peak, cpu_memory_stats().allocated);
}

TEST(AllocatorStats, ReusedCachedBlockIsCountedAgain) {
  { Tensor warm = empty({1 << 20}); }  // leaves a block in the cache
  reset_cpu_peak_memory();
  size_t base = cpu_memory_stats().allocated;
  Tensor again = empty({1 << 20});
  EXPECT_GE(cpu_memory_stats().allocated - base, 4u * (1 << 20));
}

// A freed block goes to the next request that fits it, the most recently freed first (the one likeliest still in
// cache), also a request up to a third smaller than it; a block more than 1.5 times the request stays cached.
TEST(AllocatorStats, TheMostRecentlyFreedFittingBlockComesBackFirst) {
  Tensor a = empty({1 << 20}), b = empty({(1 << 20) + (1 << 18)}), c = empty({1 << 22});
  const void* pa = a.data_ptr();
  const void* pb = b.data_ptr();
  const void* pc = c.data_ptr();
  c = Tensor();  // 16 MiB: too large for the requests below
  a = Tensor();
  b = Tensor();  // freed last, 1.25 times the requests below
  Tensor first = empty({1 << 20}), second = empty({1 << 20});
  EXPECT_EQ(first.data_ptr(), pb);
  EXPECT_EQ(second.data_ptr(), pa);
  Tensor third = empty({1 << 20});
  EXPECT_NE(third.data_ptr(), pc);
}

}  // namespace
}  // namespace sinter
