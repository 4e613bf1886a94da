// The CPU allocator (64-byte aligned, so vector loads of any width start aligned) and the per-device lookup.
#include <algorithm>
#include <cstdlib>
#include <new>

#include "sinter/tensor.h"
#include "support/check.h"

namespace sinter {
namespace {

class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    size_t rounded = (std::max<size_t>(nbytes, 1) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw Error(fmt::format("out of memory: could not allocate {} bytes on the CPU", nbytes));
    return {p, [](void* q) { std::free(q); }};
  }
};

}  // namespace

Allocator& cpu_allocator() {
  static CpuAllocator a;
  return a;
}

Allocator& allocator_for(Device device) {
  if (device.is_cpu()) return cpu_allocator();
  throw Error(fmt::format("device {} is not available in this build of sinter (CUDA support comes with the CUDA "
                          "backend)",
                          device.str()));
}

}  // namespace sinter
