// The host prelude of a simulated CUDA unit: C++ text that, put above CUDA kernels, lets the host compiler build
// them into a shared object that runtime/cuda_sim.h runs on the CPU. It defines the CUDA keywords, built-in
// variables, vector types, warp intrinsics, atomics and device math (over __builtin_*, no standard header),
// SINTER_CUDA_SIM, and exports `sn_sim_bind`, through which the runtime hands the unit its sn_sim_api.
//
// What the generator emits after it, per kernel: the `__global__` function, then
//   extern "C" void NAME__sim(void** params) { NAME(*(T0*)params[0], *(T1*)params[1], ...); }
// (the cuLaunchKernel layout). Dynamic shared memory must be declared `extern __shared__ T smem[];` or
// `extern __shared__ T smem_[];` (any T and __align__ up to 128): the prelude defines those two names, as one
// per-OS-thread buffer of SN_SIM_MAX_DYNAMIC_SHARED bytes; another name is an undefined symbol at load time.
// Several units of one shared object may each start with the prelude.
#pragma once
#include <string_view>

namespace sinter::codegen::cuda {

std::string_view sim_prelude();

}  // namespace sinter::codegen::cuda
