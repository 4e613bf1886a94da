// The CPU allocator and the per-device lookup. Blocks are 64-byte aligned (vector loads of any width start
// aligned). Blocks from 64 KiB up are cached after use and handed out again, the most recently freed first, for
// requests of their size class or up to a third smaller: glibc serves such sizes from mmap (or trims them back
// to the OS), so a fresh block faults on every page at first touch, which costs more than the kernel writing it
// (a compiled program's 768 KB intermediates did, per call), and a recently freed block is still in cache.
// Blocks from 2 MiB up are 2 MiB-aligned and marked MADV_HUGEPAGE, so that where transparent huge pages are
// "madvise" (Ubuntu's and Debian's default) they get them: a kernel streaming several arrays then stops taking
// a TLB miss every 4 KiB of each. (The hint needs a page-aligned address: on malloc's own 64-byte-aligned blocks
// it failed, and no block had huge pages.) SINTER_HUGE_PAGES=0 leaves them out, to compare.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string_view>

#include "sinter/tensor.h"
#include "support/check.h"
#include "tensor/allocator.h"
#include "tensor/cuda_device.h"

namespace sinter {
namespace {

constexpr size_t kCacheMinBytes = size_t{1} << 16;      // smaller blocks go straight to malloc's own pools
constexpr size_t kCacheLimitBytes = size_t{2} << 30;    // never hold more than this much unused memory
constexpr size_t kColorMinBytes = size_t{1} << 20;      // blocks this large start at page offset 0 or 2048
constexpr size_t kHugePageBytes = size_t{2} << 20;      // blocks this large are aligned to it and marked

bool huge_pages_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("SINTER_HUGE_PAGES");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return enabled;
}

// Size classes: 1/8 steps between powers of two, so a reused block wastes at most 12.5%.
size_t size_class(size_t nbytes) {
  size_t rounded = (std::max<size_t>(nbytes, 1) + 63) / 64 * 64;
  if (rounded < kCacheMinBytes) return rounded;
  size_t power = size_t{1} << (63 - __builtin_clzll(rounded));
  size_t step = power / 8;
  return (rounded + step - 1) / step * step;
}

class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    size_t bytes = size_class(nbytes);
    if (bytes >= kCacheMinBytes) {
      std::lock_guard<std::mutex> lock(mutex_);
      // The most recently freed block of this size class or of one up to 1.5 times it: the one likeliest still
      // in cache. A compiled CNN's intermediates change size from layer to layer; taking only the class's own
      // oldest block, mobilenet_v3_small at batch 2 ran 8% slower on the 2-core dev VM.
      auto best = free_.end();
      for (auto it = free_.lower_bound(bytes); it != free_.end() && it->first <= bytes + bytes / 2; ++it)
        if (best == free_.end() || it->second.seq > best->second.seq) best = it;
      if (best != free_.end()) {
        Block b = best->second;
        size_t held = best->first;
        free_.erase(best);
        cached_ -= held;
        count(held);
        return {b.data, [this, held, b](void*) { release(b, held); }};
      }
    }
    // Where a large block starts within its first page. A load waits on an older store whose address has the
    // same low 12 bits (the store-to-load check compares only those) until the store leaves the store buffer;
    // for a kernel streaming x into y, the distance d = (y - x) mod 4096 decides how often. With y a few lines
    // after x, every load of x meets a recent store to y. Measured on the 16-core Xeon host (sigmoid over 2^25
    // floats, bench/rowpass_probe.cpp Y_SKEW): d = 64 ran at 28% of the copy bandwidth, d = 192 at 57%, and
    // d = 0, 2048+320 or -64 at 82%. (Colors 64 bytes apart, as before, put consecutive blocks at d = 64.) So
    // consecutive large blocks alternate between page offsets 0 and 2048: any two are 0 or half a page apart.
    size_t offset = bytes >= kColorMinBytes ? 2048 * (color_.fetch_add(1, std::memory_order_relaxed) % 2) : 0;
    size_t total = bytes + (offset ? 4096 : 0);
    const bool huge = total >= kHugePageBytes && huge_pages_enabled();
    const size_t align = huge ? kHugePageBytes : 64;
    if (huge) total = (total + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;  // a multiple, as required
    void* base = std::aligned_alloc(align, total);
    if (!base) {
      trim();
      base = std::aligned_alloc(align, total);
    }
    if (!base) throw Error(fmt::format("out of memory: could not allocate {} bytes on the CPU", nbytes));
    count(bytes);
    if (bytes >= kCacheMinBytes) {
      if (huge) madvise(base, total, MADV_HUGEPAGE);  // a hint only: where the kernel declines, nothing changes
      Block b{static_cast<char*>(base) + offset, offset};
      return {b.data, [this, bytes, b](void*) { release(b, bytes); }};
    }
    return {base, [this, bytes](void* q) {
              allocated_.fetch_sub(bytes, std::memory_order_relaxed);
              std::free(q);
            }};
  }

  CpuMemoryStats stats() const { return {allocated_.load(), peak_.load()}; }
  void reset_peak() { peak_.store(allocated_.load()); }

 private:
  void count(size_t bytes) {
    size_t now = allocated_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    size_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }

  struct Block {
    void* data;       // what the tensor sees
    size_t offset;    // from the start of the allocation
    uint64_t seq = 0;  // when it was last freed
    void free() const { std::free(static_cast<char*>(data) - offset); }
  };

  void release(const Block& b, size_t bytes) {
    allocated_.fetch_sub(bytes, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_ + bytes > kCacheLimitBytes) {
      b.free();
      return;
    }
    Block freed = b;
    freed.seq = ++seq_;
    free_.emplace(bytes, freed);
    cached_ += bytes;
  }

  void trim() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [bytes, b] : free_) b.free();
    free_.clear();
    cached_ = 0;
  }

  std::mutex mutex_;
  std::multimap<size_t, Block> free_;
  std::atomic<size_t> color_{0};  // even: the next large block starts at page offset 0, odd: at 2048
  size_t cached_ = 0;
  uint64_t seq_ = 0;  // counts releases, under mutex_
  std::atomic<size_t> allocated_{0}, peak_{0};  // live bytes, for the benchmark's peak-memory report
};

}  // namespace

Allocator& cpu_allocator() {
  // Never destroyed: tensors held in static objects may be freed after static destruction begins.
  static CpuAllocator* a = new CpuAllocator();
  return *a;
}

CpuMemoryStats cpu_memory_stats() { return static_cast<CpuAllocator&>(cpu_allocator()).stats(); }
void reset_cpu_peak_memory() { static_cast<CpuAllocator&>(cpu_allocator()).reset_peak(); }

Allocator& allocator_for(Device device) {
  if (device.is_cpu()) return cpu_allocator();
  if (device.is_cuda()) return cuda::device_allocator(device.index);
  throw Error(fmt::format("device {} is not available in this build of sinter (CUDA support comes with the CUDA "
                          "backend)",
                          device.str()));
}

}  // namespace sinter
