#include "tensor/cuda_device.h"

#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>

#include "sinter/cuda.h"
#include "tensor/cuda_driver.h"
#include "tensor/element_span.h"
#include "tensor/cuda_graph.h"

namespace sinter::cuda {

namespace {

constexpr int kMaxDevices = 16;
constexpr size_t kAlignment = 256;  // cudaMalloc's alignment, which 16-byte vector loads rely on

std::string mib(size_t bytes) { return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1 << 20)); }

// One device's allocator, or a private pool of one (`parent` set: a CUDA graph's memory, cuda_graph.h), which
// keeps itself alive while any of its blocks is, and counts its blocks in the parent's statistics too.
class CachingAllocator final : public Allocator {
 public:
  explicit CachingAllocator(int index, CachingAllocator* parent = nullptr) : index_(index), parent_(parent) {}
  ~CachingAllocator() override {  // only pools are destroyed; at process exit the driver may be gone already
    try {
      empty_cache();
    } catch (const std::exception&) {
    }
  }
  void set_self(const std::shared_ptr<CachingAllocator>& self) { self_ = self; }

  DataPtr allocate(size_t nbytes) override {
    if (parent_ == nullptr)
      if (Allocator* pool = capture_pool(index_)) return pool->allocate(nbytes);
    size_t bytes = size_class(nbytes);
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(bytes);
      if (it != free_.end()) {
        p = it->second;
        free_.erase(it);
        cached_ -= bytes;
      }
    }
    if (p == nullptr) p = fresh(nbytes, bytes);
    account(static_cast<int64_t>(bytes), 0);
    return {p, [this, keep = self_.lock(), bytes](void* q) { release(q, bytes); }};
  }

  MemoryStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }
  void reset_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.peak = stats_.allocated;
  }
  void empty_cache() {
    std::multimap<size_t, void*> blocks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks.swap(free_);
      cached_ = 0;
    }
    int64_t returned = 0;
    for (auto& block : blocks) returned += static_cast<int64_t>(block.first);
    account(0, -returned);
    // A cached block may still be the source or destination of a queued copy or kernel: wait for them first.
    if (!blocks.empty() && !is_simulated()) {
      driver::use_device(index_);
      driver::check(driver::require().cuCtxSynchronize(), "cuCtxSynchronize");
    }
    for (auto& [bytes, p] : blocks) backing_free(p);
  }

 private:
  // A new block from the device (or the host when simulated); on failure the cache is returned and the
  // allocation tried once more before the error.
  void* fresh(size_t nbytes, size_t bytes) {
    void* p = backing_alloc(bytes);
    if (p == nullptr) {
      empty_cache();
      p = backing_alloc(bytes);
    }
    if (p == nullptr) {
      MemoryStats s = stats();
      std::string free_text = "the host is out of memory";
      if (!is_simulated()) {
        size_t free = 0, total = 0;
        driver::use_device(index_);
        if (driver::require().cuMemGetInfo(&free, &total) == driver::kSuccess)
          free_text = fmt::format("{} free of {}", mib(free), mib(total));
      }
      throw Error(fmt::format("CUDA out of memory: tried to allocate {} on cuda:{}; {}; sinter holds {} allocated "
                              "and {} reserved (cuda::empty_cache() returns cached blocks)",
                              mib(nbytes), index_, free_text, mib(static_cast<size_t>(s.allocated)),
                              mib(static_cast<size_t>(s.reserved))));
    }
    account(0, static_cast<int64_t>(bytes));
    return p;
  }

  void release(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      free_.emplace(bytes, p);
      cached_ += bytes;
    }
    account(-static_cast<int64_t>(bytes), 0);
  }

  // Bytes handed out and held from the backing allocator change by these amounts (here and in the parent's).
  void account(int64_t allocated, int64_t reserved) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.allocated += allocated;
      stats_.reserved += reserved;
      stats_.peak = std::max(stats_.peak, stats_.allocated);
    }
    if (parent_ != nullptr) parent_->account(allocated, reserved);
  }

  void* backing_alloc(size_t bytes) {
    if (is_simulated()) {
      // The simulated device's memory is the host's: a request beyond it fails as cuMemAlloc would (rather than
      // asking malloc for petabytes). aligned_alloc's size must be a multiple of the alignment.
      static const uint64_t host_bytes = uint64_t(::sysconf(_SC_PHYS_PAGES)) * uint64_t(::sysconf(_SC_PAGESIZE));
      if (bytes > host_bytes) return nullptr;
      return std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    }
    driver::use_device(index_);
    driver::CUdeviceptr d = 0;
    if (driver::require().cuMemAlloc(&d, bytes) != driver::kSuccess) return nullptr;
    return reinterpret_cast<void*>(d);
  }
  void backing_free(void* p) {
    if (is_simulated()) return std::free(p);
    driver::use_device(index_);
    driver::require().cuMemFree(reinterpret_cast<driver::CUdeviceptr>(p));
  }

  int index_;
  CachingAllocator* parent_;              // a pool's device allocator (never destroyed); null for that allocator
  std::weak_ptr<CachingAllocator> self_;  // a pool's own handle, held by each block it hands out
  std::mutex mutex_;
  std::multimap<size_t, void*> free_;  // cached blocks by size class
  size_t cached_ = 0;
  MemoryStats stats_;
};

void check_index(int index) {
  int count = device_count();
  if (count == 0) throw Error(fmt::format("cuda:{} cannot be used: {}", index, unavailable_reason()));
  if (index < 0 || index >= count)
    throw Error(fmt::format("cuda:{} does not exist: this machine has {} CUDA device(s)", index, count));
}

CachingAllocator& allocator(int index) {
  check_index(index);
  // Never destroyed, as the CPU allocator: tensors in static objects may be freed after static destruction.
  static auto* table = new std::array<std::unique_ptr<CachingAllocator>, kMaxDevices>();
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = (*table).at(static_cast<size_t>(index));
  if (!slot) slot = std::make_unique<CachingAllocator>(index);
  return *slot;
}

}  // namespace

size_t size_class(size_t nbytes) {
  size_t rounded = (std::max<size_t>(nbytes, 1) + 511) / 512 * 512;
  if (rounded < (size_t{1} << 20)) return rounded;
  size_t power = size_t{1} << (63 - __builtin_clzll(rounded));
  size_t step = power / 8;
  return (rounded + step - 1) / step * step;
}

bool is_simulated() {
  static const bool sim = [] {
    const char* v = std::getenv("SINTER_CUDA_SIM");
    return v != nullptr && std::string_view(v) != "0" && std::string_view(v) != "";
  }();
  return sim;
}
Allocator& device_allocator(int index) { return allocator(index); }

std::shared_ptr<Allocator> new_memory_pool(int index) {
  auto pool = std::make_shared<CachingAllocator>(index, &allocator(index));
  pool->set_self(pool);
  return pool;
}

namespace {

driver::CUdeviceptr dptr(const void* p) { return reinterpret_cast<driver::CUdeviceptr>(p); }

// One memory operation of `bytes` on cuda:<index>: `simulated` on the simulated device (host memory; recorded
// for the replays while capturing), else the driver call `gpu` makes on the stream this thread's work goes on
// (checked, named `call` in its error).
template <class Sim, class Gpu>
void memory_op(size_t bytes, int index, const char* call, Sim simulated, Gpu gpu) {
  if (bytes == 0) return;
  if (is_simulated()) {
    if (!record_simulated(index, simulated)) simulated();
    return;
  }
  driver::use_device(index);
  driver::check(gpu(driver::require(), work_stream(index)), call);
}

}  // namespace

void copy_to_device(void* device_dst, const void* host_src, size_t bytes, int index) {
  if (bytes != 0 && capturing(index)) {  // a constant of the graph: these bytes, copied again at every replay
    auto block = std::make_shared<DataPtr>(pinned_allocator().allocate(bytes));
    std::memcpy(block->data, host_src, bytes);
    keep_with_graph(index, std::shared_ptr<const void>(block, block->data));
    return copy_to_device_async(device_dst, block->data, bytes, index);
  }
  memory_op(bytes, index, "cuMemcpyHtoD", [=] { std::memcpy(device_dst, host_src, bytes); },
            [&](const driver::Api& a, driver::CUstream) { return a.cuMemcpyHtoD(dptr(device_dst), host_src, bytes); });
}

void copy_on_device(void* device_dst, const void* device_src, size_t bytes, int index) {
  memory_op(bytes, index, "cuMemcpyDtoDAsync", [=] { std::memmove(device_dst, device_src, bytes); },
            [&](const driver::Api& a, driver::CUstream s) {
              return a.cuMemcpyDtoDAsync(dptr(device_dst), dptr(device_src), bytes, s);
            });
}

void zero_async(void* device_dst, size_t bytes, int index) {
  memory_op(bytes, index, "cuMemsetD8Async", [=] { std::memset(device_dst, 0, bytes); },
            [&](const driver::Api& a, driver::CUstream s) { return a.cuMemsetD8Async(dptr(device_dst), 0, bytes, s); });
}

void copy_to_host(void* host_dst, const void* device_src, size_t bytes, int index) {
  if (bytes != 0) require_not_capturing(index, "a read of device memory by the host (item(), printing, a copy to the CPU)");
  memory_op(bytes, index, "cuMemcpyDtoH", [=] { std::memcpy(host_dst, device_src, bytes); },
            [&](const driver::Api& a, driver::CUstream) { return a.cuMemcpyDtoH(host_dst, dptr(device_src), bytes); });
}

void copy_to_device_async(void* device_dst, const void* host_src, size_t bytes, int index) {
  memory_op(bytes, index, "cuMemcpyHtoDAsync", [=] { std::memcpy(device_dst, host_src, bytes); },
            [&](const driver::Api& a, driver::CUstream s) {
              return a.cuMemcpyHtoDAsync(dptr(device_dst), host_src, bytes, s);
            });
}

void copy_to_host_async(void* host_dst, const void* device_src, size_t bytes, int index) {
  memory_op(bytes, index, "cuMemcpyDtoHAsync", [=] { std::memcpy(host_dst, device_src, bytes); },
            [&](const driver::Api& a, driver::CUstream s) {
              return a.cuMemcpyDtoHAsync(host_dst, dptr(device_src), bytes, s);
            });
}

Tensor host_mirror(const Tensor& t, bool fetch, bool pinned) {
  Tensor host = span_buffer(t, kCPU, pinned);
  ElementSpan span = element_span(t);
  if (fetch && span.count > 0)
    cuda::copy_to_host(host.storage()->data(),
                       static_cast<const char*>(t.storage()->data()) + span.first * t.element_size(),
                       static_cast<size_t>(span.count) * t.element_size(), t.device().index);
  return host;
}

Tensor host_values(const Tensor& t) { return host_mirror(t, true, false); }

MemoryStats memory_stats(int device) { return allocator(device).stats(); }
int64_t memory_allocated(int device) { return memory_stats(device).allocated; }
int64_t memory_reserved(int device) { return memory_stats(device).reserved; }
int64_t max_memory_allocated(int device) { return memory_stats(device).peak; }
void reset_peak_memory_stats(int device) { allocator(device).reset_peak(); }
void empty_cache() {
  for (int d = 0; d < device_count(); ++d) allocator(d).empty_cache();
}

}  // namespace sinter::cuda
