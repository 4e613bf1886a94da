// The pinned host allocator: page-locked memory from cuMemHostAlloc (portable: usable from every device's
// context), cached by size class as the device allocator caches device memory. A block freed while a copy
// queued on a device stream still reads or writes it (record_pinned_use) waits on a list until the event
// recorded after the copy has completed; only then is it handed out again or returned to the driver. On the
// simulated device blocks are ordinary aligned host memory marked pinned, and copies are done when they return.
#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sinter/cuda.h"
#include "sinter/error.h"
#include "tensor/cuda_device.h"
#include "tensor/cuda_driver.h"

namespace sinter::cuda {
namespace {

constexpr size_t kAlignment = 4096;  // page-aligned, as cuMemHostAlloc's blocks

class PinnedAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    if (!is_simulated() && driver::api() == nullptr)
      throw Error(fmt::format("pinned host memory needs a CUDA device, and none can be used: {}", driver::reason()));
    size_t bytes = size_class(nbytes);
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      collect_completed();
      auto it = free_.find(bytes);
      if (it != free_.end()) {
        p = it->second;
        free_.erase(it);
      }
    }
    if (p == nullptr) p = fresh(nbytes, bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    live_[p] = {};
    stats_.allocated += static_cast<int64_t>(bytes);
    stats_.peak = std::max(stats_.peak, stats_.allocated);
    return {p, [this, bytes](void* q) { release(q, bytes); }, /*pinned=*/true};
  }

  void record_use(const void* block, int index) {
    if (is_simulated()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(const_cast<void*>(block));
    if (it == live_.end()) return;  // not one of this allocator's blocks
    std::vector<Use>& uses = it->second;
    Use* use = nullptr;
    for (Use& u : uses)
      if (u.device == index) use = &u;  // one stream per device: the latest record covers the earlier work
    driver::use_device(index);
    if (use == nullptr) use = &uses.emplace_back(Use{index, event(index)});
    driver::check(driver::require().cuEventRecord(use->event, nullptr), "cuEventRecord");
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
      collect_completed();
      blocks.swap(free_);
      for (auto& [bytes, p] : blocks) stats_.reserved -= static_cast<int64_t>(bytes);
    }
    for (auto& [bytes, p] : blocks) backing_free(p);
  }

 private:
  struct Use {
    int device;
    driver::CUevent event;  // recorded on the device's stream after the last copy that used the block
  };
  struct Pending {
    void* block;
    size_t bytes;
    std::vector<Use> uses;
  };

  void* fresh(size_t nbytes, size_t bytes) {
    void* p = backing_alloc(bytes);
    if (p == nullptr) {
      empty_cache();
      p = backing_alloc(bytes);
    }
    if (p == nullptr)
      throw Error(fmt::format("out of pinned host memory: cuMemHostAlloc could not allocate {} bytes (sinter holds "
                              "{} bytes of pinned memory; cuda::host_empty_cache() returns the cached blocks)",
                              nbytes, stats().reserved));
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.reserved += static_cast<int64_t>(bytes);
    return p;
  }

  // Called from a storage's destructor: never throws, never calls the driver.
  void release(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.allocated -= static_cast<int64_t>(bytes);
    auto it = live_.find(p);
    std::vector<Use> uses = std::move(it->second);
    live_.erase(it);
    if (uses.empty()) free_.emplace(bytes, p);
    else pending_.push_back({p, bytes, std::move(uses)});
  }

  // Moves the pending blocks whose copies have all completed to the free lists (mutex_ held).
  void collect_completed() {
    for (size_t i = 0; i < pending_.size();) {
      Pending& b = pending_[i];
      while (!b.uses.empty()) {
        driver::CUresult r = driver::require().cuEventQuery(b.uses.back().event);
        if (r == driver::kNotReady) break;
        driver::check(r, "cuEventQuery");
        events_[b.uses.back().device].push_back(b.uses.back().event);
        b.uses.pop_back();
      }
      if (!b.uses.empty()) {
        ++i;
        continue;
      }
      free_.emplace(b.bytes, b.block);
      pending_[i] = std::move(pending_.back());
      pending_.pop_back();
    }
  }

  // An event of cuda:<index>'s context (current), from the pool (mutex_ held).
  driver::CUevent event(int index) {
    std::vector<driver::CUevent>& pool = events_[index];
    if (!pool.empty()) {
      driver::CUevent e = pool.back();
      pool.pop_back();
      return e;
    }
    driver::CUevent e = nullptr;
    driver::check(driver::require().cuEventCreate(&e, driver::kEventDisableTiming), "cuEventCreate");
    return e;
  }

  void* backing_alloc(size_t bytes) {
    // aligned_alloc's size must be a multiple of the alignment.
    if (is_simulated()) return std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    driver::use_device(0);  // cuMemHostAlloc needs a current context; portable memory serves every device
    void* p = nullptr;
    driver::CUresult r = driver::require().cuMemHostAlloc(&p, bytes, driver::kMemHostAllocPortable);
    if (r == driver::kSuccess) return p;
    if (r != driver::kOutOfMemory) driver::check(r, "cuMemHostAlloc");  // out of memory: the caller says how much
    return nullptr;
  }
  void backing_free(void* p) {
    if (is_simulated()) return std::free(p);
    driver::check(driver::require().cuMemFreeHost(p), "cuMemFreeHost");
  }

  std::mutex mutex_;
  std::multimap<size_t, void*> free_;                  // cached blocks by size class
  std::unordered_map<void*, std::vector<Use>> live_;   // blocks in tensors, with the copies that used them
  std::vector<Pending> pending_;                       // freed blocks whose copies may still be running
  std::map<int, std::vector<driver::CUevent>> events_;  // completed events for reuse, by device
  MemoryStats stats_;
};

PinnedAllocator& pinned() {
  // Never destroyed, as the other allocators: tensors in static objects may be freed after static destruction.
  static auto* a = new PinnedAllocator();
  return *a;
}

}  // namespace

Allocator& pinned_allocator() { return pinned(); }
void record_pinned_use(const void* block, int index) { pinned().record_use(block, index); }

MemoryStats host_memory_stats() { return pinned().stats(); }
void reset_peak_host_memory_stats() { pinned().reset_peak(); }
void host_empty_cache() { pinned().empty_cache(); }

}  // namespace sinter::cuda
