// Statistics of the CPU allocator, read by the benchmark to compare the peak memory of eager and compiled
// runs (as torch.cuda.max_memory_allocated / reset_peak_memory_stats). Internal to src/ and tools/.
#pragma once
#include <cstddef>

namespace sinter {

struct CpuMemoryStats {
  size_t allocated = 0;  // bytes in live blocks (rounded to their size class); cached free blocks not counted
  size_t peak = 0;       // the most `allocated` has been since the last reset_cpu_peak_memory()
};
CpuMemoryStats cpu_memory_stats();
void reset_cpu_peak_memory();  // peak = allocated now

}  // namespace sinter
