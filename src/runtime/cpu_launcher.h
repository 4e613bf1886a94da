// The CPU launcher: generated loop kernels split over the thread pool, and the library calls of the CPU target
// (sinter's row-blocked GEMM and implicit-GEMM convolution, each running its epilogue kernel on finished tiles
// while they are in cache). A generated kernel is `void fn(void* args, int64_t begin, int64_t end)` over
// iterations [begin, end), its args the buffers in the kernel plan's order, the symbol values and an error flag
// (see codegen/cpp/cpp_codegen.h).
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "runtime/executor.h"

namespace sinter::blas {
struct PackedB;
struct TiledGemm;
}  // namespace sinter::blas

namespace sinter::runtime {

using KernelFn = void (*)(void* args, int64_t begin, int64_t end);

class CpuLauncher final : public Launcher {
 public:
  // `fns[k]`: the function of loop kernel k (null for externs); `code` keeps the object that holds them loaded.
  CpuLauncher(std::shared_ptr<const CompiledGraphParts> parts, std::vector<KernelFn> fns,
              std::shared_ptr<const void> code);
  Tensor allocate(const TensorMeta& meta) const override;
  void run_loops(RunState& r, int k) const override;
  bool run_library(RunState& r, int k) const override;
  // The group's iterations laid end to end and split over the pool as one range (one dispatch, and the small
  // kernels share threads instead of each waking every thread).
  void run_combined(RunState& r, const std::vector<int>& kernels) const override;

 private:
  struct Call;  // one launch's arguments
  void run_gemm(RunState& r, int k) const;
  bool run_conv(RunState& r, int k) const;
  // Whether extern n's i-th tensor argument is a view of a constant of the graph (a frozen weight).
  bool constant_operand(const inductor::LoopNode& n, int i) const;
  // Kernel k's B (a GEMM's or a conv's weight), a constant of the graph, packed for g when first used (float32
  // and bfloat16 apart).
  std::shared_ptr<const blas::PackedB> packed_weight(int k, const blas::TiledGemm& g) const;
  // GEMM kernel k's B, a constant of the graph stored [K, N], as a [K, N] view of an [N, K] copy made when first
  // used: the layout thin products (a few rows of A) read as dot products.
  Tensor transposed_weight(int k, const Tensor& b) const;

  std::shared_ptr<const CompiledGraphParts> parts_;
  std::vector<KernelFn> fns_;
  std::shared_ptr<const void> code_;
  mutable std::mutex packed_mutex_;
  mutable std::map<std::pair<int, bool>, std::shared_ptr<const blas::PackedB>> packed_;
  mutable std::map<int, Tensor> transposed_;
};

}  // namespace sinter::runtime
