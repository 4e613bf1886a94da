// The intra-op pool: N-1 workers plus the calling thread. One parallel region runs at a time; a caller that finds
// the pool busy (another user thread's region) runs its loop inline instead of waiting or adding threads, so the
// process never runs more compute threads than the pool size.
#include "tensor/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "support/check.h"

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

// Read once: glibc answers hardware_concurrency() by reading /sys/devices/system/cpu/online, 5.7 us a call on the
// dev VM, and cores_for() asked it on every GEMM and attention call.
int hardware_threads() {
  static const int n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return n;
}

// The pool size from SINTER_NUM_THREADS (else OMP_NUM_THREADS), else the number of cores; a bad setting is
// replaced with one message on stderr, never fatal.
int default_threads() {
  for (const char* var : {"SINTER_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    std::string message;
    int n = parse_thread_count(var, v, hardware_threads(), message);
    if (!message.empty()) {
      static std::once_flag once;
      std::call_once(once, [&] { std::fprintf(stderr, "sinter: %s\n", message.c_str()); });
    }
    return n;
  }
  return std::min(hardware_threads(), kMaxThreads);
}

// Each worker has its own slot: the caller publishes a job by storing its generation into the `go` flag of each
// worker it needs, and a worker reports the end of its part in its `done` flag. A worker that has not taken the
// job up by the time the caller's own share is done is withdrawn from it, so a caller never waits for a sleeping
// thread to wake only to find nothing left. Nothing on that path takes a lock. (Workers used to take one mutex in turn to pick up a job; on the 16-core VM host the losers of that race
// slept in the kernel and were woken one after another, so the last of 15 began its chunk hundreds of
// microseconds late: a kernel on this pool ran 1.3-1.4x slower than the same kernel on OpenMP's threads,
// bench/rowpass_probe.cpp.) Tasks are still handed out from one counter, so a worker that starts late, or whose
// core the VM lends elsewhere, leaves its tasks to the others.
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
    // The job is written while no worker reads it: every worker signaled for the previous job reported done.
    job_ = {begin, end, (n + tasks - 1) / tasks, tasks, fn, ctx};
    next_task_.store(0);
    error_ = nullptr;
    const uint64_t gen = ++generation_;
    const int helpers = static_cast<int>(std::min<int64_t>(tasks - 1, static_cast<int64_t>(workers_.size())));
    for (int i = 0; i < helpers; ++i) slots_[i].go.store(gen);  // seq_cst: ordered before the sleepers_ check
    if (sleepers_.load() > 0) {
      { std::lock_guard<std::mutex> lock(mutex_); }  // a worker between its check and its wait sees gen
      wake_.notify_all();
    }
    work(job_);  // the caller takes tasks too
    for (int i = 0; i < helpers; ++i) {
      Slot& slot = slots_[i];
      if (claim(slot, gen)) continue;  // the worker has not taken the job up: withdrawn, no need to wait for it
      if (spin_until([&] { return slot.done.load(std::memory_order_acquire) == gen; })) continue;
      std::unique_lock<std::mutex> lock(mutex_);
      caller_waiting_.store(true);
      done_.wait(lock, [&] { return slot.done.load() == gen; });
      caller_waiting_.store(false);
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
  // One cache line per worker. go: the last job offered to it; taken: the last job it took up, or that the
  // caller withdrew from it (whichever side moves `taken` to a job first decides); done: the last job it finished.
  struct alignas(64) Slot {
    std::atomic<uint64_t> go{0}, taken{0}, done{0};
  };

  // Moves slot.taken to `gen` unless it is there already: true for the side that moved it.
  static bool claim(Slot& slot, uint64_t gen) {
    uint64_t t = slot.taken.load();
    while (t < gen)
      if (slot.taken.compare_exchange_weak(t, gen)) return true;
    return false;
  }

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
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
      }
    }
    tls_in_region = was;
  }

  void worker_loop(Slot& slot) {
    uint64_t seen = 0;  // slots start at 0 and generations at 1
    auto signaled = [&] { return slot.go.load() != seen || stopping_.load(); };
    for (;;) {
      if (!spin_until(signaled)) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, signaled);
        sleepers_.fetch_sub(1);
      }
      if (stopping_.load()) return;
      seen = slot.go.load();
      if (!claim(slot, seen)) continue;  // the caller finished this job without us: job_ may be the next one
      work(job_);
      slot.done.store(seen);  // seq_cst: ordered before the caller_waiting_ check
      if (caller_waiting_.load()) {
        { std::lock_guard<std::mutex> lock(mutex_); }
        done_.notify_all();
      }
    }
  }

  void start_workers(int n) {
    if (static_cast<int>(workers_.size()) == n) return;
    stop_workers();
    slots_ = std::make_unique<Slot[]>(static_cast<size_t>(n));
    workers_.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      try {
        workers_.emplace_back([this, i] { worker_loop(slots_[i]); });
      } catch (const std::system_error& e) {
        // The system refuses more threads (a container's limit): the pool keeps the ones it has.
        std::fprintf(stderr, "sinter: could not start thread %d of the pool (%s); it runs with %d threads\n", i + 2,
                     e.what(), i + 1);
        size_.store(i + 1);
        break;
      }
    }
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
  std::mutex mutex_;         // only for sleeping and waking
  std::mutex error_mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  std::unique_ptr<Slot[]> slots_;
  Job job_;
  uint64_t generation_ = 0;  // the caller's, under region_mutex_
  std::atomic<int64_t> next_task_{0};
  std::exception_ptr error_;
  std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_waiting_{false}, stopping_{false};
};

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: workers may outlive static destruction order
  return *p;
}

}  // namespace

int parse_thread_count(const std::string& var, const std::string& value, int fallback, std::string& message) {
  // OMP_NUM_THREADS may list one count per nesting level ("4,2"): the first is the pool's.
  const std::string text = var == "OMP_NUM_THREADS" ? value.substr(0, value.find(',')) : value;
  size_t used = 0;
  long long n = 0;
  bool number = !text.empty() && text.find_first_not_of("+-0123456789") == std::string::npos;
  try {
    if (number) n = std::stoll(text, &used);
  } catch (const std::out_of_range&) {
    n = text.find('-') == std::string::npos ? LLONG_MAX : LLONG_MIN;
    used = text.size();
  } catch (const std::invalid_argument&) {
    number = false;
  }
  number = number && used == text.size();
  message.clear();
  if (number && n >= 1 && n <= kMaxThreads) return static_cast<int>(n);
  int chosen = number && n > kMaxThreads ? kMaxThreads : std::clamp(fallback, 1, kMaxThreads);
  const char* why = !number ? "is not a whole number" : n < 1 ? "is below 1" : "is above the limit";
  message = fmt::format("{}='{}' {} (a thread count from 1 to {}); the thread pool uses {} threads instead", var,
                        value, why, kMaxThreads, chosen);
  return chosen;
}

void set_num_threads(int n) {
  SINTER_CHECK(n >= 0 && n <= kMaxThreads,
               "set_num_threads: {} threads is out of range (1 to {}, or 0 for the default: SINTER_NUM_THREADS, "
               "else the number of cores)",
               n, kMaxThreads);
  pool().resize(n > 0 ? n : default_threads());
}
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
  int cores = std::max(1, hardware_threads() / threads_per_core());
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
