// The CUDA simulator: runs kernels compiled for the host against codegen/cuda/sim_prelude.h, so CUDA code
// generation is tested on machines without a GPU (the role TRITON_INTERPRET=1 plays for Triton).
//
// What it models: the grid/block/thread index space and its limits; each thread of a block is a fiber on one OS
// thread, switched only at __syncthreads, __syncwarp, shuffles and votes, which are real barriers (every live
// thread of the block, or every lane of the mask, must arrive; lanes past the end of a partial last warp do not
// exist and are left out of every mask, as on hardware); __shared__ memory per block (per OS
// thread; blocks run in parallel on the thread pool, one block per OS thread at a time); dynamic shared memory up
// to SN_SIM_MAX_DYNAMIC_SHARED; atomics as host atomics. Errors end the launch with sinter::Error naming the
// kernel, block and thread: a block above 1024 threads, too much dynamic shared memory, a barrier some thread
// can never reach (it exited, or waits at another barrier: deadlock), a lane outside its own mask, lanes of one
// warp at different warp operations or with different masks, __trap()/assert, and any C++ exception raised in
// the kernel. A shuffle that reads a lane taking no part in it (absent, or outside the mask; undefined in CUDA)
// gets all bits set, a NaN for float and double, so a kernel that uses the value shows it in its results.
//
// What it does not model: timing and occupancy; tensor-core instructions (mma, wgmma), async copies (cp.async,
// TMA), clusters, cooperative groups, __syncthreads_count/and/or; memory races between threads (a thread runs
// until it reaches a barrier, so a kernel that needs a barrier it lacks may still pass); warp-synchronous code
// without __syncwarp (lanes of a warp do not run in lockstep, so __activemask() returns the lanes that exist and
// have not exited yet, not the lanes converged at the call); blocks that wait for each other (spin on flags set
// by other blocks: blocks may run one after another); the precision of CUDA's fast math (__expf is
// expf); memory spaces (device, shared, local are all host memory, so a bad address is a host fault).
#pragma once
#include <cstddef>
#include <string>

#include "support/cuda_sim_abi.h"

namespace sinter::runtime::sim {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};
using Entry = void (*)(void** params);

// The table to pass to a unit's sn_sim_bind (static; valid for the life of the process).
const sn_sim_api* api();

// Runs `entry` (a unit's NAME__sim) over `grid` x `block` threads; returns when every block is done. `params` is
// the cuLaunchKernel layout: one pointer per kernel parameter. Throws sinter::Error naming `name`, the block and
// the thread for the errors listed above; when several blocks fail, the lowest block's error is reported.
void launch(const std::string& name, Entry entry, void** params, Dim3 grid, Dim3 block, size_t dynamic_shared);

}  // namespace sinter::runtime::sim
