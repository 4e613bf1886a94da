// The one intra-op thread pool. Eager kernels (and later generated kernels, through a C interface) split loops
// over it. A parallel_for issued while the pool is busy (from another user thread, or nested inside a worker)
// runs inline on the calling thread, so nothing ever oversubscribes the cores.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "sinter/threads.h"

namespace sinter {

// The most threads the pool runs (a larger request is an error for set_num_threads, and is clamped with a
// message for SINTER_NUM_THREADS): beyond it threads only cost memory and scheduling.
inline constexpr int kMaxThreads = 1024;
// The pool size that thread-count setting `var` (SINTER_NUM_THREADS, OMP_NUM_THREADS) with text `value` gives:
// the value when it is a whole number from 1 to kMaxThreads; else `fallback` (not a number, or below 1) or
// kMaxThreads (above it), with `message` saying what was replaced and why (empty for a valid value).
int parse_thread_count(const std::string& var, const std::string& value, int fallback, std::string& message);
// Hardware threads sharing one core's execution units (2 with hyperthreading), from sysfs; 1 if unknown.
int threads_per_core();
// How many cores `threads` threads of the pool spread over (at most the machine's): the unit to balance
// compute-bound work over, since two hyperthreads of a core share its FMA units.
int cores_for(int threads);
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

// Calls fn(task, worker) for every task in [0, tasks), handed out one at a time to whichever of up to `workers`
// threads is free, so tasks of uneven cost even out (parallel_for hands out fixed chunks). `worker` is distinct
// among the calls running at once and below min(workers, tasks) (it picks a scratch buffer); inside a parallel
// region, or when the pool is busy, one worker runs every task.
template <class F>
void parallel_for_dynamic(int64_t tasks, int64_t workers, F&& fn) {
  std::atomic<int64_t> next{0};
  parallel_for(0, std::max<int64_t>(1, std::min(workers, tasks)), 1, [&](int64_t w, int64_t) {
    for (int64_t t = next.fetch_add(1); t < tasks; t = next.fetch_add(1)) fn(t, w);
  });
}

// A grain that gives each task about 32K elements of simple work.
inline constexpr int64_t kGrainElementwise = 32768;

}  // namespace sinter
