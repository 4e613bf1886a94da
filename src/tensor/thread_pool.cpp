// The intra-op pool: N-1 workers plus the calling thread. One parallel region runs at a time; a caller that finds
// the pool busy (another user thread's region) runs its loop inline instead of waiting or adding threads, so the
// process never runs more compute threads than the pool size.
#include "tensor/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "sinter/sinter.h"

namespace sinter {
namespace {

thread_local bool tls_in_region = false;

// A worker that finished a job keeps polling for the next one this long before it sleeps, and a caller polls
// this long for its workers to finish: a compiled program runs kernel after kernel, and waking a sleeping
// thread (a futex wake, an inter-processor interrupt on a VM) costs tens of microseconds per region.
constexpr auto kSpin = std::chrono::microseconds(100);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls `ready` until it holds or kSpin has passed; returns whether it holds.
template <class F>
bool spin_until(F&& ready) {
  auto start = std::chrono::steady_clock::now();
  for (int i = 0;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() - start > kSpin) return ready();
  }
}

int default_threads() {
  for (const char* var : {"SINTER_NUM_THREADS", "OMP_NUM_THREADS"}) {
    if (const char* v = std::getenv(var)) {
      int n = std::atoi(v);
      if (n > 0) return n;
    }
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

class Pool {
 public:
  ~Pool() { stop_workers(); }

  int size() const { return size_.load(std::memory_order_relaxed); }

  void resize(int n) {
    std::lock_guard<std::mutex> region(region_mutex_);
    stop_workers();
    size_.store(std::max(1, n));
  }

  // Returns false when the pool is busy (the caller then runs inline).
  bool run(int64_t begin, int64_t end, int64_t grain, RangeFn fn, void* ctx) {
    std::unique_lock<std::mutex> region(region_mutex_, std::try_to_lock);
    if (!region.owns_lock()) return false;
    int threads = size();
    int64_t n = end - begin;
    int64_t tasks = std::min<int64_t>(threads, (n + grain - 1) / grain);
    if (tasks <= 1) return false;
    start_workers(threads - 1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = {begin, end, (n + tasks - 1) / tasks, tasks, fn, ctx};
      next_task_.store(0);
      pending_.store(tasks);
      error_ = nullptr;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    work(job_);  // the caller takes tasks too
    spin_until([&] { return pending_.load() == 0 && active_.load() == 0; });
    {
      // Wait for every task and for every worker to leave the job, so none touches it once we return.
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [&] { return pending_.load() == 0 && active_.load() == 0; });
    }
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  struct Job {
    int64_t begin = 0, end = 0, chunk = 0, tasks = 0;
    RangeFn fn = nullptr;
    void* ctx = nullptr;
  };

  void work(const Job& job) {
    bool was = tls_in_region;
    tls_in_region = true;
    for (;;) {
      int64_t t = next_task_.fetch_add(1);
      if (t >= job.tasks) break;
      int64_t b = job.begin + t * job.chunk, e = std::min(job.end, b + job.chunk);
      try {
        if (b < e) job.fn(job.ctx, b, e);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
      if (pending_.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_all();
      }
    }
    tls_in_region = was;
  }

  // `seen` starts at the generation current when the worker was made, so a new worker never picks up an older,
  // finished job (whose function and context are gone).
  void worker_loop(uint64_t seen) {
    for (;;) {
      Job job;
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen || stopping_.load(); });
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_.load() || generation_.load() != seen; });
        if (stopping_.load()) return;
        seen = generation_.load();
        if (pending_.load() == 0) continue;  // that job finished before this worker woke: never run it late
        job = job_;
        ++active_;
      }
      work(job);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (active_.fetch_sub(1) == 1) done_.notify_all();
      }
    }
  }

  void start_workers(int n) {
    if (static_cast<int>(workers_.size()) == n) return;
    stop_workers();
    uint64_t generation;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = false;
      generation = generation_.load();
    }
    for (int i = 0; i < n; ++i) workers_.emplace_back([this, generation] { worker_loop(generation); });
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    stopping_ = false;
  }

  std::atomic<int> size_{default_threads()};
  std::mutex region_mutex_;  // held for a whole parallel region
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  Job job_;
  std::atomic<int64_t> next_task_{0}, pending_{0};
  std::exception_ptr error_;
  std::atomic<uint64_t> generation_{0};  // changed under mutex_, polled without it by spinning workers
  std::atomic<int> active_{0};           // workers inside a job
  std::atomic<bool> stopping_{false};
};

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: workers may outlive static destruction order
  return *p;
}

}  // namespace

void set_num_threads(int n) { pool().resize(n > 0 ? n : default_threads()); }
int get_num_threads() { return pool().size(); }

namespace {
// Logical CPUs of cpu0's core ("0,8", "0-1" or "0" in sysfs); 1 where sysfs does not say.
int read_threads_per_core() {
  std::FILE* f = std::fopen("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "r");
  if (!f) return 1;
  char buf[64] = {};
  size_t len = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  int count = 0;
  for (char* p = buf; p < buf + len && *p >= '0' && *p <= '9';) {
    char* end = nullptr;
    long first = std::strtol(p, &end, 10), last = first;
    if (*end == '-') last = std::strtol(end + 1, &end, 10);
    count += static_cast<int>(std::max(0L, last - first + 1));
    if (*end != ',') break;
    p = end + 1;
  }
  return std::clamp(count, 1, 8);
}
}  // namespace

int threads_per_core() {
  static const int n = read_threads_per_core();  // a property of the machine
  return n;
}

int cores_for(int threads) {
  int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / threads_per_core());
  return std::max(1, std::min(threads, cores));
}
bool in_parallel_region() { return tls_in_region; }

void parallel_for_raw(int64_t begin, int64_t end, int64_t grain, RangeFn fn, void* ctx) {
  if (!pool().run(begin, end, std::max<int64_t>(grain, 1), fn, ctx)) {
    bool was = tls_in_region;
    tls_in_region = true;  // nested loops inside run inline
    try {
      fn(ctx, begin, end);
    } catch (...) {
      tls_in_region = was;
      throw;
    }
    tls_in_region = was;
  }
}

}  // namespace sinter
