// The CUDA launcher: runs generated kernels on the GPU (through the driver, one launch per kernel on the current
// context's default stream) or on the simulated device (runtime/cuda_sim.h), with the same arguments: the
// kernel's buffers in the plan's order, every symbol's value, and an error flag for kernels that divide integers.
// Library calls (GEMM, convolution) and other externs run as eager ops on the CUDA tensors.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
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

// A launch of a kernel other than the default rule's (run_loops): 0 keeps the default for that field. Every
// configuration computes the same values (each element, or row, is computed by one thread or group whatever the
// grid; a flat kernel reads blockDim), so tuning only changes the time.
struct LaunchConfig {
  unsigned block = 0;           // threads per block (flat kernels: at most the kernel's __launch_bounds__)
  int64_t blocks_per_sm = 0;    // the grid's cap per multiprocessor (on the simulator: the grid's cap)
  std::string str() const;      // "128 threads, 32 blocks per SM"
};

// max-autotune: a kernel's best configuration, measured on its first launch (or read from the disk cache).
struct TunedLaunch {
  std::mutex mutex;           // held while measuring
  std::atomic<bool> done{false};
  LaunchConfig best;          // set once, before `done`
};

// Where max-autotune keeps what it measured (the backend's disk cache) and what its progress lines name.
struct AutotuneStore {
  std::string graph;  // "graph_3"
  std::function<std::optional<std::string>(const std::string& key)> load;
  std::function<void(const std::string& key, const std::string& value)> store;
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
  // max-autotune: set for a kernel that may be launched again on the same buffers (it loads nothing it stores,
  // and is not split: a split's parts would change how its sums round); the key names its source and device.
  std::shared_ptr<TunedLaunch> tuned;
  std::string tune_key;
};

class CudaLauncher final : public Launcher {
 public:
  // `kernels[k]`: loop kernel k (empty name for externs); `code` keeps the module or object that holds them.
  // `autotune` (max-autotune): where tuned configurations are kept; null in the other modes.
  // `combined[g]`: the kernel that runs combined group g (Schedule::combined) in one launch.
  CudaLauncher(std::shared_ptr<const CompiledGraphParts> parts, std::vector<CudaKernelEntry> kernels,
               std::vector<CudaKernelEntry> combined, std::shared_ptr<const void> code, Device device,
               int multiprocessors, std::shared_ptr<const AutotuneStore> autotune = nullptr);
  Tensor allocate(const TensorMeta& meta) const override;
  void run_loops(RunState& r, int k) const override;
  // GEMM externs: cuBLAS on a GPU (the CPU's GEMM on the simulated device), then the kernel's epilogue if any.
  bool run_library(RunState& r, int k) const override;
  void run_combined(RunState& r, const std::vector<int>& kernels) const override;
  void wait() const override;

 private:
  void launch(RunState& r, int k, const LaunchConfig& config) const;
  void fire(const std::string& name, void (*entry)(void**), void* fn, std::vector<void*>& params, unsigned grid,
            unsigned block) const;
  void check_flag(const Tensor& flag, const std::string& kernel) const;
  int64_t grid_cap(bool rows, int blocks_per_sm) const;
  bool vector_path(const RunState& r, const CudaKernelEntry& e, void* const* ptrs) const;
  // The configuration kernel k launches with: tuned on its first launch under max-autotune (cuda_autotune.cpp).
  LaunchConfig config_for(RunState& r, int k) const;
  LaunchConfig tune(RunState& r, int k) const;

  std::shared_ptr<const CompiledGraphParts> parts_;
  std::vector<CudaKernelEntry> kernels_;
  std::vector<CudaKernelEntry> combined_;
  std::shared_ptr<const void> code_;
  Device device_;
  int multiprocessors_;
  std::shared_ptr<const AutotuneStore> autotune_;
};

}  // namespace sinter::runtime
