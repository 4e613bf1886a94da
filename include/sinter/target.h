// The device a compilation generates code for: its shape (cores or multiprocessors, vector width, warp size,
// shared memory, L2) and its capabilities (which library calls it provides, for which dtypes, and which epilogue
// shapes each accepts). Lowering and the fusion scheduler ask the target instead of assuming a CPU; every fusion
// refused for lack of a capability names it on SINTER_LOGS=fusion. docs/ARCHITECTURE.md, section 5.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sinter/types.h"

namespace sinter {

enum class TargetKind : uint8_t { kCpu, kCuda };

// The library calls ("externs") a target may provide instead of generated loops.
enum class ExternKind : uint8_t { kGemm, kConv, kAttention };
const char* extern_kind_name(ExternKind kind);  // "gemm", "conv", "attention"

// How an element-wise kernel after a library call may be fused into it.
enum class EpilogueShape : uint8_t {
  kTile,  // element-wise over each output tile right after the call computed it, in the output's memory order
  kRows,  // a kernel over whole rows of the output (a row reduction: softmax or layer_norm after a linear)
  kMenu,  // a fixed menu inside the library call (bias, relu, gelu, an auxiliary output), as cuBLASLt has
};
const char* epilogue_shape_name(EpilogueShape shape);  // "tile", "rows", "menu"

struct ExternCapability {
  ExternKind kind = ExternKind::kGemm;
  std::vector<DType> dtypes;            // empty: the target does not provide this call
  std::vector<EpilogueShape> epilogues;  // what may fuse into it
  std::vector<std::string> menu;        // for kMenu: the epilogues the call itself applies
};

struct Target {
  TargetKind kind = TargetKind::kCpu;
  std::string name;               // "cpu (x86-64-v4, 16 threads)", "cuda sm_90 (H200)"
  int cores = 1;                  // CPU threads the runtime uses, or streaming multiprocessors
  int vector_width_floats = 4;    // floats per SIMD vector the code generator targets (CPU)
  int warp_size = 1;              // threads that execute in lockstep (1 on a CPU)
  int64_t shared_memory_per_block = 0;  // bytes (0 on a CPU)
  int64_t l2_bytes = 0;
  // The scheduler keeps a whole-tensor reduction out of a pointwise kernel larger than this, which would
  // otherwise run on one core (or one block).
  int64_t parallel_min_elements = 65536;
  // Whether independent flat element-wise kernels that run one after another (an optimiser's update of each
  // parameter) may run as one launch, a combined kernel (the scheduler groups them, the launcher runs a group
  // over one parallel range).
  bool combined_kernels = false;
  std::vector<ExternCapability> externs;

  // Whether code for this target runs on tensors of `device`.
  bool runs_on(const Device& device) const;
  // Whether the target provides the library call for this dtype.
  bool provides(ExternKind extern_kind, DType dtype) const;
  // Whether the library call accepts an epilogue of this shape.
  bool accepts(ExternKind extern_kind, EpilogueShape shape) const;
  // "the cpu target's conv takes no rows epilogue" and the like: why a fusion was refused.
  std::string missing(ExternKind extern_kind, EpilogueShape shape) const;
  std::string str() const;  // every field, one line each (sinter explain prints it)
};

// This machine's CPU: the runtime's thread count, the vector width the code generator targets, sgemm (float32)
// with tile and row epilogues, conv2d (float32, channels-last) with tile epilogues.
Target host_cpu_target();
// An NVIDIA GPU of compute capability `sm` (90: H100/H200), as a description: cuBLASLt-style GEMM with a menu
// of epilogues and element-wise kernels after, no row epilogues; cuDNN convolution; flash attention. This build
// generates no CUDA code yet; the description lets the scheduler's capability queries be tested.
Target cuda_target(int sm);

}  // namespace sinter
