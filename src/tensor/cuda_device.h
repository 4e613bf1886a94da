// The CUDA device as the rest of sinter sees it: real (the driver, device memory) or simulated
// (SINTER_CUDA_SIM=1: device memory is host memory, copies are memcpy, kernels run on the CPU through the
// simulator in src/runtime/cuda_sim.h). Both hand out memory through one caching allocator per device: freed
// blocks are kept by size class and reused, `empty_cache` returns them, and running out of memory says how much
// was asked for and how much is free. Work is issued on one stream per device (the legacy default stream) today,
// so a block freed by one kernel can be reused by the next in stream order without waiting.
#pragma once
#include <cstddef>
#include <cstdint>

#include "sinter/cuda.h"
#include "sinter/tensor.h"

namespace sinter::cuda {

// The allocator of cuda:<index>; throws Error when the device cannot be used (no driver, no such device).
Allocator& device_allocator(int index);

// Copies `bytes` between host and device memory of the current mode (memcpy when simulated). Synchronous.
void copy_to_device(void* device_dst, const void* host_src, size_t bytes, int index);
void copy_to_host(void* host_dst, const void* device_src, size_t bytes, int index);
// Copies `bytes` between two places of one device's memory, in stream order on the default stream.
void copy_on_device(void* device_dst, const void* device_src, size_t bytes, int index);
// Zeroes `bytes` of device memory, in stream order on the default stream (memset when simulated).
void zero_async(void* device_dst, size_t bytes, int index);

}  // namespace sinter::cuda
