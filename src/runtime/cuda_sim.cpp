#include "runtime/cuda_sim.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <vector>

#include "sinter/threads.h"
#include "support/check.h"
#include "tensor/thread_pool.h"

#if defined(__SANITIZE_ADDRESS__)
#define SN_SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SN_SIM_ASAN 1
#endif
#endif
#ifdef SN_SIM_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace sinter::runtime::sim {
namespace {

// ---- contexts: a hand-written switch on x86-64 (swapcontext makes a sigprocmask system call per switch) ----
#if defined(__x86_64__)
// Pushes the callee-saved registers, MXCSR and the x87 control word, stores the stack pointer in *from, loads
// `to` and pops the same from there.
extern "C" void sinter_sim_switch(void** from, void* to);
__asm__(R"(
.pushsection .text
.globl sinter_sim_switch
.hidden sinter_sim_switch
.type sinter_sim_switch,@function
sinter_sim_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size sinter_sim_switch,.-sinter_sim_switch
.popsection
)");
struct Context {
  void* sp = nullptr;
};
void make_context(Context& c, char* stack, size_t size, void (*fn)()) {
  auto* top = reinterpret_cast<uintptr_t*>(stack + size);  // 16-byte aligned
  top[-1] = 0;                                             // fn's return address: ends backtraces
  top[-2] = reinterpret_cast<uintptr_t>(fn);               // where the first switch returns to
  for (int i = 3; i <= 8; ++i) top[-i] = 0;                // rbp, rbx, r12-r15
  auto* control = reinterpret_cast<uint32_t*>(&top[-9]);
  control[0] = __builtin_ia32_stmxcsr();
  unsigned short x87;
  __asm__ volatile("fnstcw %0" : "=m"(x87));
  control[1] = x87;
  c.sp = &top[-9];
}
void switch_context(Context& from, Context& to) { sinter_sim_switch(&from.sp, to.sp); }
#else
struct Context {
  ucontext_t uc;
};
void make_context(Context& c, char* stack, size_t size, void (*fn)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = size;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, fn, 0);
}
void switch_context(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#endif

#ifdef SN_SIM_ASAN
constexpr size_t kStackSize = 256 << 10;  // instrumented frames are larger
#else
constexpr size_t kStackSize = 64 << 10;
#endif

enum class State : uint8_t { kReady, kAtBlockBarrier, kAtWarpOp, kDone };
enum class WarpOp : uint8_t { kSyncwarp, kShfl, kVote };

const char* op_name(WarpOp op) {
  switch (op) {
    case WarpOp::kSyncwarp: return "__syncwarp";
    case WarpOp::kShfl: return "a shuffle (__shfl*_sync)";
    case WarpOp::kVote: return "a vote (__ballot_sync/__any_sync/__all_sync)";
  }
  return "?";
}

struct Fiber {  // one thread of the block
  Context context;
  sn_sim_thread info{};
  State state = State::kReady;
  WarpOp op = WarpOp::kSyncwarp;  // at a warp operation: which, with what
  int mode = 0;
  unsigned mask = 0, src = 0;  // mask: the lanes that take part (the mask given, less absent lanes)
  unsigned long long value = 0, result = 0;
  void* fake_stack = nullptr;  // AddressSanitizer's, for use-after-return detection
};

struct Launch {
  Entry entry;
  void** params;
  Dim3 grid, block;
};

// Everything one OS thread needs to run blocks; the stacks are mapped once and reused by every block.
struct Worker {
  std::vector<Fiber> fibers;
  std::vector<char*> stacks;
  std::vector<unsigned> at_warp_op;  // per warp: the lanes waiting at a warp operation
  Context scheduler;
  Fiber* current = nullptr;
  const Launch* launch = nullptr;
  unsigned threads = 0, at_block_barrier = 0, done = 0;
  bool failed = false;
  std::string error;
  const void* scheduler_stack = nullptr;  // AddressSanitizer's view of the scheduler's stack
  size_t scheduler_stack_size = 0;
  void* scheduler_fake_stack = nullptr;

  ~Worker() {
    size_t page = sysconf(_SC_PAGESIZE);
    for (char* s : stacks) munmap(s - page, kStackSize + page);
  }
};
thread_local Worker t_worker;

char* map_stack() {
  size_t page = sysconf(_SC_PAGESIZE);
  void* p = mmap(nullptr, kStackSize + page, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  SINTER_CHECK(p != MAP_FAILED, "CUDA simulator: cannot map a fiber stack of {} KiB", kStackSize >> 10);
  mprotect(p, page, PROT_NONE);  // a guard page: an overflow faults instead of writing into the next stack
  return static_cast<char*>(p) + page;
}

std::string thread_name(const Fiber& f) {
  return fmt::format("thread ({},{},{})", f.info.thread_idx.x, f.info.thread_idx.y, f.info.thread_idx.z);
}

Fiber& current(Worker& w) {
  SINTER_CHECK(w.current != nullptr, "CUDA simulator: a simulated kernel ran outside runtime::sim::launch");
  return *w.current;
}

// From a fiber back to the scheduler. `final`: the fiber will not be resumed.
void yield_to_scheduler(Worker& w, Fiber& f, bool final) {
#ifdef SN_SIM_ASAN
  __sanitizer_start_switch_fiber(final ? nullptr : &f.fake_stack, w.scheduler_stack, w.scheduler_stack_size);
#endif
  switch_context(f.context, w.scheduler);
#ifdef SN_SIM_ASAN
  __sanitizer_finish_switch_fiber(f.fake_stack, nullptr, nullptr);
#endif
}

void resume(Worker& w, Fiber& f, char* stack) {
  w.current = &f;
#ifdef SN_SIM_ASAN
  __sanitizer_start_switch_fiber(&w.scheduler_fake_stack, stack, kStackSize);
#endif
  switch_context(w.scheduler, f.context);
#ifdef SN_SIM_ASAN
  __sanitizer_finish_switch_fiber(w.scheduler_fake_stack, nullptr, nullptr);
#endif
}

void record_error(Worker& w, const Fiber& f, const std::string& message) {
  if (!w.failed) w.error = fmt::format("{}: {}", thread_name(f), message);
  w.failed = true;
}

// Ends the block from inside a fiber: the error is recorded and the fiber is never resumed (nothing unwinds
// across the fiber's stack; the frames left on it hold no resources).
[[noreturn]] void fail_here(Worker& w, std::string message) {
  Fiber& f = current(w);
  record_error(w, f, message);
  std::string().swap(message);
  f.state = State::kDone;
  yield_to_scheduler(w, f, true);
  std::abort();  // a failed fiber is never resumed
}

void fiber_main() {
  Worker& w = t_worker;
  Fiber& f = *w.current;
#ifdef SN_SIM_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &w.scheduler_stack, &w.scheduler_stack_size);
#endif
  try {
    w.launch->entry(w.launch->params);
  } catch (const std::exception& e) {
    record_error(w, f, fmt::format("the kernel raised an exception: {}", e.what()));
  } catch (...) {
    record_error(w, f, "the kernel raised an exception");
  }
  f.state = State::kDone;
  ++w.done;
  yield_to_scheduler(w, f, true);
  std::abort();  // a finished fiber is never resumed
}

// What a shuffle reads from a lane that does not take part in it (absent, or outside the mask): all bits set, a NaN
// for float and double, so a kernel that uses such a value shows it in its results.
constexpr unsigned long long kPoison = ~0ull;

unsigned present_lanes(const Worker& w, unsigned warp_base) {
  unsigned n = w.threads - warp_base;
  return n >= 32 ? ~0u : (1u << n) - 1;
}

// A warp barrier: returns once every present lane of `mask` has arrived at the same operation with the same mask;
// the last lane to arrive computes every lane's result (so no lane can overwrite a value another still reads).
unsigned long long warp_op(WarpOp op, unsigned mask, unsigned long long value, unsigned src, int mode) {
  Worker& w = t_worker;
  Fiber& f = current(w);
  unsigned index = static_cast<unsigned>(&f - w.fibers.data()), lane = index % 32, base = index - lane;
  unsigned present = present_lanes(w, base), group = mask & present;
  if (!((mask >> lane) & 1))
    fail_here(w, fmt::format("{} with mask {:#010x}, which does not name the calling lane {}", op_name(op), mask, lane));
  f.op = op;
  f.mask = group;
  f.value = value;
  f.src = src;
  f.mode = mode;
  unsigned& waiting = w.at_warp_op[base / 32];
  if (((waiting | (1u << lane)) & group) != group) {
    waiting |= 1u << lane;
    f.state = State::kAtWarpOp;
    yield_to_scheduler(w, f, false);
    return f.result;
  }
  waiting &= ~group;
  unsigned ballot = 0;
  for (unsigned m = group; m != 0; m &= m - 1) {
    unsigned l = __builtin_ctz(m);
    const Fiber& g = w.fibers[base + l];
    if (g.op != op || g.mask != group || g.mode != mode)
      fail_here(w, fmt::format("lanes {} and {} of warp {} meet at different warp operations or masks: {} with lanes "
                               "{:#010x} and {} with lanes {:#010x}",
                               lane, l, base / 32, op_name(op), group, op_name(g.op), g.mask));
    ballot |= (g.value != 0 ? 1u : 0u) << l;
  }
  for (unsigned m = group; m != 0; m &= m - 1) {
    unsigned l = __builtin_ctz(m);
    Fiber& g = w.fibers[base + l];
    if (op == WarpOp::kShfl) {  // a lane that takes no part has no value to give (undefined in CUDA)
      g.result = g.src < 32 && ((group >> g.src) & 1) ? w.fibers[base + g.src].value : kPoison;
    } else if (op == WarpOp::kVote) {
      g.result = mode == 0 ? ballot : mode == 1 ? (ballot != 0) : (ballot == group);
    }
    if (&g != &f) g.state = State::kReady;
  }
  return f.result;
}

const sn_sim_thread* api_self() { return &current(t_worker).info; }

void api_syncthreads() {
  Worker& w = t_worker;
  Fiber& f = current(w);
  if (++w.at_block_barrier == w.threads) {
    w.at_block_barrier = 0;
    for (unsigned i = 0; i < w.threads; ++i)
      if (w.fibers[i].state == State::kAtBlockBarrier) w.fibers[i].state = State::kReady;
    return;
  }
  f.state = State::kAtBlockBarrier;
  yield_to_scheduler(w, f, false);
}

void api_syncwarp(unsigned mask) { warp_op(WarpOp::kSyncwarp, mask, 0, 0, 0); }
unsigned long long api_shfl(unsigned mask, unsigned long long value, unsigned src) {
  return warp_op(WarpOp::kShfl, mask, value, src, 0);
}
unsigned api_vote(unsigned mask, int predicate, int mode) {
  return static_cast<unsigned>(warp_op(WarpOp::kVote, mask, predicate != 0, 0, mode));
}
unsigned api_activemask() {
  Worker& w = t_worker;
  unsigned index = static_cast<unsigned>(&current(w) - w.fibers.data()), base = index - index % 32, active = 0;
  for (unsigned l = 0; l < 32 && base + l < w.threads; ++l)
    if (w.fibers[base + l].state != State::kDone) active |= 1u << l;
  return active;
}
void api_fail(const char* message) { fail_here(t_worker, message ? message : "the kernel failed"); }

const sn_sim_api kApi = {SN_SIM_ABI_VERSION, api_self,  api_syncthreads, api_syncwarp,
                         api_shfl,           api_vote,  api_activemask,  api_fail};

// Why no fiber can run although some have not finished.
std::string deadlock_message(const Worker& w) {
  const Fiber* fibers = w.fibers.data();
  for (unsigned i = 0; i < w.threads; ++i) {
    const Fiber& f = fibers[i];
    if (f.state == State::kAtBlockBarrier) {
      for (unsigned j = 0; j < w.threads; ++j)
        if (fibers[j].state == State::kDone)
          return fmt::format("{} waits at __syncthreads, which {} never reaches: it has exited (deadlock)",
                             thread_name(f), thread_name(fibers[j]));
      for (unsigned j = 0; j < w.threads; ++j)
        if (fibers[j].state == State::kAtWarpOp)
          return fmt::format("{} waits at __syncthreads while {} waits at {} (deadlock)", thread_name(f),
                             thread_name(fibers[j]), op_name(fibers[j].op));
    } else if (f.state == State::kAtWarpOp) {
      unsigned base = i - i % 32;
      for (unsigned m = f.mask; m != 0; m &= m - 1) {
        const Fiber& g = fibers[base + __builtin_ctz(m)];
        std::string what = fmt::format("{} waits at {} with lanes {:#010x}", thread_name(f), op_name(f.op), f.mask);
        if (g.state == State::kDone)
          return fmt::format("{}, which {} never reaches: it has exited (deadlock)", what, thread_name(g));
        if (g.state == State::kAtBlockBarrier)
          return fmt::format("{}, while {} waits at __syncthreads (deadlock)", what, thread_name(g));
        if (g.op != f.op || g.mask != f.mask)
          return fmt::format("{}, while {} waits at {} with lanes {:#010x} (deadlock)", what, thread_name(g),
                             op_name(g.op), g.mask);
      }
    }
  }
  return "no thread of the block can run (deadlock)";
}

// Runs block `linear` of the launch on this OS thread; returns its error, or an empty string.
std::string run_block(Worker& w, const Launch& l, uint64_t linear) {
  unsigned n = l.block.x * l.block.y * l.block.z;
  while (w.stacks.size() < n) w.stacks.push_back(map_stack());
  if (w.fibers.size() < n) w.fibers.resize(n);
  w.at_warp_op.assign((n + 31) / 32, 0);
  sn_sim_uint3 block_idx = {static_cast<unsigned>(linear % l.grid.x),
                            static_cast<unsigned>(linear / l.grid.x % l.grid.y),
                            static_cast<unsigned>(linear / (uint64_t(l.grid.x) * l.grid.y))};
  for (unsigned i = 0; i < n; ++i) {
    Fiber& f = w.fibers[i];
    f = Fiber{};
    f.info.thread_idx = {i % l.block.x, i / l.block.x % l.block.y, i / (l.block.x * l.block.y)};
    f.info.block_idx = block_idx;
    f.info.block_dim = {l.block.x, l.block.y, l.block.z};
    f.info.grid_dim = {l.grid.x, l.grid.y, l.grid.z};
    f.info.lane = i % 32;
#ifdef SN_SIM_ASAN
    __asan_unpoison_memory_region(w.stacks[i], kStackSize);  // frames left poisoned by an abandoned fiber
#endif
    make_context(f.context, w.stacks[i], kStackSize, fiber_main);
  }
  w.launch = &l;
  w.threads = n;
  w.at_block_barrier = 0;
  w.done = 0;
  w.failed = false;
  w.error.clear();
  while (w.done < n && !w.failed) {
    bool ran = false;
    for (unsigned i = 0; i < n && !w.failed; ++i) {
      if (w.fibers[i].state != State::kReady) continue;
      resume(w, w.fibers[i], w.stacks[i]);
      ran = true;
    }
    if (!ran && !w.failed) {
      w.error = deadlock_message(w);
      w.failed = true;
    }
  }
  w.current = nullptr;
  return w.failed ? std::move(w.error) : std::string();
}

}  // namespace

const sn_sim_api* api() { return &kApi; }

void launch(const std::string& name, Entry entry, void** params, Dim3 grid, Dim3 block, size_t dynamic_shared) {
  uint64_t threads = uint64_t(block.x) * block.y * block.z, blocks = uint64_t(grid.x) * grid.y * grid.z;
  std::string config = fmt::format("grid ({},{},{}) block ({},{},{})", grid.x, grid.y, grid.z, block.x, block.y,
                                   block.z);
  SINTER_CHECK(threads > 0 && blocks > 0, "CUDA simulator: kernel '{}': empty launch, {}", name, config);
  SINTER_CHECK(threads <= 1024 && block.z <= 64, "CUDA simulator: kernel '{}': a block of {} threads ({}); the most "
               "is 1024, with block.z at most 64", name, threads, config);
  SINTER_CHECK(grid.x <= 0x7fffffffu && grid.y <= 65535 && grid.z <= 65535,
               "CUDA simulator: kernel '{}': {} exceeds the grid limits (2^31-1, 65535, 65535)", name, config);
  SINTER_CHECK(dynamic_shared <= SN_SIM_MAX_DYNAMIC_SHARED,
               "CUDA simulator: kernel '{}': {} bytes of dynamic shared memory; the most is {}", name,
               dynamic_shared, SN_SIM_MAX_DYNAMIC_SHARED);
  SINTER_CHECK(entry != nullptr, "CUDA simulator: kernel '{}' has no entry point", name);
  Launch l{entry, params, grid, block};
  std::mutex mu;
  std::atomic<bool> failed{false};
  uint64_t failed_block = UINT64_MAX;
  std::string error;
  auto run = [&](uint64_t b) {
    if (failed.load(std::memory_order_relaxed)) return;
    std::string e;
    try {
      e = run_block(t_worker, l, b);
    } catch (const std::exception& ex) {  // only mapping a stack can throw here
      e = ex.what();
    }
    if (e.empty()) return;
    std::lock_guard<std::mutex> lock(mu);
    failed = true;
    if (b < failed_block) {
      failed_block = b;
      error = fmt::format("block ({},{},{}), {}", b % grid.x, b / grid.x % grid.y, b / (uint64_t(grid.x) * grid.y), e);
    }
  };
  if (blocks == 1 || get_num_threads() == 1) {
    for (uint64_t b = 0; b < blocks && !failed; ++b) run(b);
  } else {
    parallel_for_dynamic(static_cast<int64_t>(blocks), get_num_threads(), [&](int64_t b, int64_t) { run(b); });
  }
  if (failed) detail::throw_user_error(fmt::format("CUDA simulator: kernel '{}', {}", name, error));
}

}  // namespace sinter::runtime::sim
