// The one intra-op thread pool. Eager kernels (and later generated kernels, through a C interface) split loops
// over it. A parallel_for issued while the pool is busy (from another user thread, or nested inside a worker)
// runs inline on the calling thread, so nothing ever oversubscribes the cores.
#pragma once
#include <cstdint>
#include <utility>

namespace sinter {

void set_num_threads(int n);  // 0 restores the default (SINTER_NUM_THREADS, else the number of cores)
int get_num_threads();
bool in_parallel_region();

using RangeFn = void (*)(void* ctx, int64_t begin, int64_t end);
void parallel_for_raw(int64_t begin, int64_t end, int64_t grain, RangeFn fn, void* ctx);

// Calls f(begin, end) on disjoint chunks of [begin, end), each at least `grain` long (except the last).
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& f) {
  if (end <= begin) return;
  if (end - begin <= grain || get_num_threads() == 1 || in_parallel_region()) {
    f(begin, end);
    return;
  }
  using Fn = std::remove_reference_t<F>;
  parallel_for_raw(begin, end, grain, [](void* ctx, int64_t b, int64_t e) { (*static_cast<Fn*>(ctx))(b, e); },
                   const_cast<void*>(static_cast<const void*>(&f)));
}

// A grain that gives each task about 32K elements of simple work.
inline constexpr int64_t kGrainElementwise = 32768;

}  // namespace sinter
