// Statistics of the CPU allocator, read by the benchmark to compare the peak memory of eager and compiled
// runs (as torch.cuda.max_memory_allocated / reset_peak_memory_stats), and tensors from a chosen allocator.
// Internal to src/ and tools/.
#pragma once
#include <cstddef>

#include "sinter/tensor.h"

namespace sinter {

struct CpuMemoryStats {
  size_t allocated = 0;  // bytes in live blocks (rounded to their size class); cached free blocks not counted
  size_t peak = 0;       // the most `allocated` has been since the last reset_cpu_peak_memory()
};
CpuMemoryStats cpu_memory_stats();
void reset_cpu_peak_memory();  // peak = allocated now

// empty_from_meta with the storage from `allocator` (which must serve meta.device).
Tensor empty_with_allocator(const TensorMeta& meta, Allocator& allocator);
// A CPU tensor of `meta`'s sizes, strides and dtype in pinned host memory (cuda::pinned_allocator()); throws
// Error for another device, as PyTorch ("only dense CPU tensors can be pinned"), and without a CUDA device.
Tensor empty_pinned(const TensorMeta& meta);

}  // namespace sinter
