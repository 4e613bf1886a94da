// Runs a compiled graph on the CPU: binds the symbols from the inputs' sizes, allocates the buffers the schedule
// keeps (each freed after its last use, so the caching allocator hands the memory to the next one), launches
// generated kernels over the thread pool, runs externs (row-blocked GEMMs with their epilogue per block, or the
// eager kernel), and returns the outputs as views of their buffers. Immutable after construction, so one
// instance serves calls from any number of threads.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "codegen/cpp/cpp_codegen.h"
#include "inductor/loop_ir.h"
#include "inductor/scheduler.h"
#include "runtime/kernel_cache.h"

namespace sinter::runtime {

class CompiledProgram {
 public:
  CompiledProgram(inductor::LoopProgram program, inductor::Schedule schedule, codegen::cpp::GeneratedCode code,
                  std::shared_ptr<SharedLibrary> library);
  ~CompiledProgram();
  CompiledProgram(const CompiledProgram&) = delete;
  CompiledProgram& operator=(const CompiledProgram&) = delete;
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  int launches() const { return schedule_.launches(); }
  // "kernel3 loops: %5 = gelu(%4) ..." / "kernel1 gemm 256x2304x768 + epilogue kernel2" / "kernel4 extern conv2d"
  std::string describe(int kernel) const;

 private:
  using KernelFn = void (*)(void* args, int64_t begin, int64_t end);
  struct Binding {  // symbol `symbol` is size (or stride) `dim` of input `input`
    int input, dim;
    bool stride;
    int64_t symbol;
  };
  struct Run;         // the state of one call
  struct KernelCall;  // one launch's arguments
  struct Profile;     // SINTER_LOGS=profile: time per kernel, summed over calls
  void bind_symbols();
  void plan_lifetimes();
  void run_loops(Run& r, int k) const;
  void run_gemm(Run& r, int k) const;
  void run_extern(Run& r, int k) const;
  void run_conv(Run& r, int k) const;
  Args extern_args(Run& r, const inductor::LoopNode& n) const;  // the op's arguments, tensors bound to buffers
  void allocate(Run& r, int buffer) const;

  inductor::LoopProgram program_;
  inductor::Schedule schedule_;
  codegen::cpp::GeneratedCode code_;
  std::shared_ptr<SharedLibrary> library_;
  std::vector<KernelFn> fns_;                   // per kernel (null for externs)
  std::vector<Binding> bindings_;
  std::vector<std::vector<int>> frees_;         // per kernel: buffers whose last use it is
  std::vector<std::vector<int>> allocs_;        // per kernel: buffers to allocate before it runs
  std::unique_ptr<Profile> profile_;            // null unless the profile log channel was on at construction
};

}  // namespace sinter::runtime
