// CUDA C++ for the scheduler's loop kernels, printed from the same kernel plans as the C++ printer and with the
// same op spellings (codegen/cpp/cpp_ops.h) over the same prelude, whose math compiles for the GPU too. Each loop
// kernel becomes
//   extern "C" __global__ void kernelN(T0* __restrict__ b0, ..., sn_i64 s0, sn_i64 s1, ..., int* err_)
// with the kernel's buffers in KernelPlan::buffers order and every symbol's value (sizes are arguments, so one
// kernel serves every admitted shape); beside it, under SINTER_CUDA_SIM, `kernelN__sim(void** params)` with the
// params layout cuLaunchKernel takes, which the simulator calls.
// - A flat kernel is a grid-stride loop over its elements: any grid size is correct, the launcher picks it.
// - A row kernel gives each row to a group of `group` threads: groups of 4..32 lanes inside a warp (several rows
//   per 256-thread block) reduce with warp shuffles; a group of 256 or 1024 threads is the whole block and reduces
//   through shared memory. Blocks walk rows grid-stride. Stages of a row are separated by a barrier of the group,
//   so values one thread stored (kept per-element values) are visible to the next stage's threads.
// The source is readable: the graph nodes of each loop are comments.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "inductor/kernel_plan.h"

namespace sinter::codegen::cuda {

// How to launch one generated kernel.
struct LaunchShape {
  unsigned block = 256;          // threads per block
  unsigned rows_per_block = 0;   // row kernels: rows one block handles at a time (0: a flat kernel)
  unsigned group = 0;            // row kernels: threads per row
  unsigned vector = 1;           // consecutive elements per thread and step
  bool split = false;            // row kernels: each row split across blocks (see split_values)
};

struct CudaKernel {
  std::string name;    // the __global__ function (and name + "__sim" for the simulator's entry)
  std::string source;  // the kernel's own text, without the prelude
  LaunchShape shape;
  bool error_flag = false;  // raises `*err_` (integer division by zero); a parameter either way
  // Split row kernels: values reduced per row. After err_ they take `char* ws_` (split_values * rows * parts_
  // partial results of 8 bytes at most), `unsigned* count_` (one zeroed counter per row) and `sn_i64 parts_`.
  int split_values = 0;
  // A kernel whose vector accesses need what the addresses or sizes may not give: `source` is the vector path
  // alone, launched where every check holds; `scalar_source` (kernel `scalar_name`, the same parameters) takes
  // one element at a time for the other calls. On a GPU the launcher compiles it on first need (views that are
  // misaligned are rare, and the vector path alone compiles in about half the time of both).
  std::vector<inductor::VectorCheck> vector_checks;
  std::string scalar_name, scalar_source;
  // What a combined kernel needs of a flat kernel: its buffers' element types (parameter order), the program's
  // symbol count, and the bodies of its vector and scalar paths over the blocks `bid_` of `nb_`.
  std::vector<std::string> buffer_types;
  int num_symbols = 0;
  std::string part_body, part_scalar_body;
};

// One entry per plan kernel; externs (no loops) have an empty name.
std::vector<CudaKernel> generate(const inductor::LoopProgram& program, const inductor::ProgramPlan& plan);

// One kernel `name` that runs flat kernels `parts` (of one combined group) in one launch: its parameters are each
// part's buffers in turn, the symbols, the error flag, then per part the range [fromI, toI) of the grid's blocks
// it runs on and whether it takes its vector path (vecI); every parameter is 8 bytes. `shape` and `error_flag` as
// for any kernel.
CudaKernel combine(const std::vector<const CudaKernel*>& parts, const std::string& name);

// The text every CUDA unit starts with: sinter's prelude (its math is the CPU's) and the CUDA helpers.
std::string unit_header();

}  // namespace sinter::codegen::cuda
