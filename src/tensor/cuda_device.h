// The CUDA device as the rest of sinter sees it: real (the driver, device memory) or simulated
// (SINTER_CUDA_SIM=1: device memory is host memory, copies are memcpy, kernels run on the CPU through the
// simulator in src/runtime/cuda_sim.h). Both hand out memory through one caching allocator per device: freed
// blocks are kept by size class and reused, `empty_cache` returns them, and running out of memory says how much
// was asked for and how much is free. Work is issued on one stream per device (the legacy default stream) today,
// so a block freed by one kernel can be reused by the next in stream order without waiting, and a device block
// an asynchronous copy reads or writes is safe to hand out again the same way. Pinned host blocks are not: the
// host may touch them at once, so the pinned allocator waits on an event recorded after the copy.
#pragma once
#include <cstddef>
#include <cstdint>

#include "sinter/cuda.h"
#include "sinter/tensor.h"

namespace sinter::cuda {

// The allocator of cuda:<index>; throws Error when the device cannot be used (no driver, no such device).
Allocator& device_allocator(int index);
// The size class a request of `nbytes` is served from by the device and pinned allocators: 512-byte granules
// below 1 MiB, then 1/8 steps between powers of two (a reused block wastes at most 12.5%).
size_t size_class(size_t nbytes);

// Copies `bytes` between host and device memory of the current mode (memcpy when simulated). Synchronous.
void copy_to_device(void* device_dst, const void* host_src, size_t bytes, int index);
void copy_to_host(void* host_dst, const void* device_src, size_t bytes, int index);
// Copies `bytes` between two places of one device's memory, in stream order on the default stream.
void copy_on_device(void* device_dst, const void* device_src, size_t bytes, int index);
// The same copies queued on cuda:<index>'s stream: they return at once when the host memory is pinned (and the
// host must not touch it until the copy completes), and behave as the synchronous ones from pageable memory.
void copy_to_device_async(void* device_dst, const void* host_src, size_t bytes, int index);
void copy_to_host_async(void* host_dst, const void* device_src, size_t bytes, int index);
// A CPU tensor with a CUDA tensor's sizes, strides and values: the storage span its elements lie in, copied
// (waiting for the device, as PyTorch's item() does). Made without dispatch, so that host reads under capture
// (item, bool, to_vector, printing) record nothing.
Tensor host_values(const Tensor& t);
// The same over a host copy of the span (in pinned memory when `pinned`), its values fetched only when `fetch`.
Tensor host_mirror(const Tensor& t, bool fetch, bool pinned);
// Zeroes `bytes` of device memory, in stream order on the default stream (memset when simulated).
void zero_async(void* device_dst, size_t bytes, int index);

// Pinned host memory (cuda_host.cpp): the caching allocator behind Tensor::pin_memory(). Throws Error on
// allocating without a CUDA device; on the simulated device its blocks are ordinary host memory marked pinned.
Allocator& pinned_allocator();
// Work queued on cuda:<index>'s stream until now uses the pinned block that starts at `block` (a storage's data
// pointer): once freed, the block is not handed out again before that work has completed. No effect on other
// memory, or on the simulated device (whose copies are done when they return).
void record_pinned_use(const void* block, int index);

}  // namespace sinter::cuda
