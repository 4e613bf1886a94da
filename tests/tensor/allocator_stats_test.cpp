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

}  // namespace
}  // namespace sinter
