// The target-neutral half of running a compiled graph: binds the symbols from the inputs' sizes and strides,
// plans buffer lifetimes (each intermediate allocated before the kernel that first writes it and freed after its
// last use, so the caching allocator hands the memory to the next one), walks the schedule's kernels in order,
// binds extern arguments to buffers, and returns the outputs as views of their buffers. What runs a kernel on a
// device is a Launcher (runtime/cpu_launcher.h for the CPU). Immutable after construction, so one instance
// serves calls from any number of threads.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "inductor/kernel_plan.h"
#include "inductor/loop_ir.h"
#include "inductor/scheduler.h"

namespace sinter::runtime {

// What the compiler made of one graph: the loop program, its schedule and the plan of each loop kernel.
struct CompiledGraphParts {
  std::shared_ptr<const inductor::LoopProgram> program;
  inductor::Schedule schedule;
  inductor::ProgramPlan plan;  // its pool lives over program->pool
};

// The state of one call: symbol values and the buffers alive.
struct RunState {
  std::vector<int64_t> syms;
  std::vector<Tensor> bufs;
  int64_t ev(const ExprPtr& e) const { return sym::evaluate(*e, syms); }
  SymIntList evs(const std::vector<ExprPtr>& es) const;
  Tensor view(const inductor::BufferView& v) const;  // a view of a live buffer
};

// An extern's arguments with its tensors bound to views of the buffers and its symbolic ints evaluated.
Args bind_extern_args(const RunState& r, const inductor::LoopNode& n);

// Runs kernels on one kind of device (it holds the compiled parts it launches from).
class Launcher {
 public:
  virtual ~Launcher() = default;
  // A buffer of `meta`'s sizes, strides and dtype on the launcher's device.
  virtual Tensor allocate(const TensorMeta& meta) const = 0;
  // Loop kernel `k`, over all its iterations.
  virtual void run_loops(RunState& r, int k) const = 0;
  // Extern kernel `k` that the launcher computes itself (a GEMM or convolution with its epilogue kernel, if the
  // schedule gave it one); false when it leaves the kernel to the op's eager implementation.
  virtual bool run_library(RunState& r, int k) const = 0;
  // A combined group of independent flat loop kernels (Schedule::combined), as one launch where the launcher can;
  // by default one after another.
  virtual void run_combined(RunState& r, const std::vector<int>& kernels) const {
    for (int k : kernels) run_loops(r, k);
  }
  // Waits until the device has finished the work launched so far (profiling times kernels, not launches).
  virtual void wait() const {}
};

class Executor {
 public:
  Executor(std::shared_ptr<const CompiledGraphParts> parts, std::unique_ptr<Launcher> launcher);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  // As run, with output i written into `into[i]` where that is defined (same sizes and dtype, on the device):
  // the kernel that computes it writes there directly when `into[i]` has the strides of its buffer and
  // aliasing allows it, and otherwise the output is copied into it. Returns `into`, with the missing outputs
  // filled in.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, std::vector<Tensor> into) const;
  // As run, owning the inputs: each is dropped after the last kernel that reads it.
  std::vector<Tensor> run_consuming(std::vector<Tensor> inputs) const;
  int launches() const { return parts_->schedule.launches(); }
  const CompiledGraphParts& parts() const { return *parts_; }
  // "kernel3 loops: %5 = gelu(%4) ..." / "kernel1 gemm 256x2304x768 + epilogue kernel2" / "kernel4 extern conv2d"
  std::string describe(int kernel) const;

 private:
  struct Binding {  // symbol `symbol` is size (or stride) `dim` of input `input`
    int input, dim;
    bool stride;
    int64_t symbol;
  };
  struct Profile;  // SINTER_LOGS=profile: time per kernel, summed over calls
  void bind_symbols();
  void plan_lifetimes();
  void run_extern(RunState& r, int k) const;
  void allocate(RunState& r, int buffer) const;
  // Whether output `output` may be computed straight into `into`; `overwritten` gets the graph input that is
  // `into`, or -1.
  bool writes_directly(const RunState& r, int output, const Tensor& into, const std::vector<Tensor>& inputs,
                       int* overwritten) const;
  bool may_overwrite_input(int output, int input) const;
  std::vector<std::vector<int>> waves(const std::vector<int>& group, const std::vector<int>& overwrites) const;
  // The body of run; with `owned` (the inputs themselves, owned by the call) inputs are dropped after their last use.
  std::vector<Tensor> execute(const std::vector<Tensor>& inputs, std::vector<Tensor> into,
                              std::vector<Tensor>* owned) const;

  std::shared_ptr<const CompiledGraphParts> parts_;
  std::unique_ptr<Launcher> launcher_;
  std::vector<Binding> bindings_;
  std::vector<std::vector<int>> frees_;   // per kernel: buffers whose last use it is
  std::vector<std::vector<int>> allocs_;  // per kernel: buffers to allocate before it runs
  std::vector<int> last_read_in_order_;   // per buffer: the last kernel that reads it, in schedule order
  std::vector<std::vector<int>> reads_inputs_;  // per kernel: the graph inputs it reads
  std::vector<std::vector<int>> input_frees_;  // per kernel: graph inputs whose last read it is (run_consuming)
  std::vector<int> written_at_;           // per buffer: the kernel of the loop node that writes it (-1: none)
  std::unique_ptr<Profile> profile_;      // null unless the profile log channel was on at construction
};

}  // namespace sinter::runtime
