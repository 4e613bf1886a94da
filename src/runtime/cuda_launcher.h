// The CUDA launcher: runs generated kernels on the GPU (through the driver, one launch per kernel on the current
// context's default stream) or on the simulated device (runtime/cuda_sim.h), with the same arguments: the
// kernel's buffers in the plan's order, every symbol's value, and an error flag for kernels that divide integers.
// Library calls (GEMM, convolution) and other externs run as eager ops on the CUDA tensors.
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/executor.h"

namespace sinter::runtime {

// A kernel compiled on its first launch (on a GPU, the scalar path of a vector kernel); thread-safe.
class LazyKernel {
 public:
  explicit LazyKernel(std::function<void*()> make) : make_(std::move(make)) {}
  void* get();  // the CUfunction; a failure throws to the caller, and the next launch tries again

 private:
  std::mutex mutex_;
  std::function<void*()> make_;
  void* function_ = nullptr;
};

// How to launch one generated kernel (what codegen/cuda decided), and the loaded entry point.
struct CudaKernelEntry {
  std::string name;
  unsigned block = 256;          // threads per block
  unsigned rows_per_block = 0;   // row kernels: rows per block at a time; 0 for a flat kernel
  unsigned vector = 1;           // elements per thread and step
  int split_values = 0;          // > 0: a row kernel whose rows are split across blocks, with this many results
  bool error_flag = false;       // the kernel raises an error flag (integer division by zero)
  void (*sim)(void**) = nullptr; // the simulated device's entry
  void* function = nullptr;      // the driver's CUfunction on a GPU
  // Where the kernel is the vector path alone: it runs where these hold, else kernel `scalar_name` does.
  std::vector<inductor::VectorCheck> vector_checks;
  std::string scalar_name;
  void (*scalar_sim)(void**) = nullptr;
  std::shared_ptr<LazyKernel> scalar;  // on a GPU
};

class CudaLauncher final : public Launcher {
 public:
  // `kernels[k]`: loop kernel k (empty name for externs); `code` keeps the module or object that holds them.
  CudaLauncher(std::shared_ptr<const CompiledGraphParts> parts, std::vector<CudaKernelEntry> kernels,
               std::shared_ptr<const void> code, Device device, int multiprocessors);
  Tensor allocate(const TensorMeta& meta) const override;
  void run_loops(RunState& r, int k) const override;
  // GEMM externs: cuBLAS on a GPU (the CPU's GEMM on the simulated device), then the kernel's epilogue if any.
  bool run_library(RunState& r, int k) const override;

 private:
  std::shared_ptr<const CompiledGraphParts> parts_;
  std::vector<CudaKernelEntry> kernels_;
  std::shared_ptr<const void> code_;
  Device device_;
  int multiprocessors_;
};

}  // namespace sinter::runtime
