// The calling convention between the CUDA simulator's runtime (runtime/cuda_sim.h) and the simulated units it
// runs (codegen/cuda/sim_prelude.h). The declarations are written once, as the body of SN_SIM_ABI_DECLS: this
// header compiles them into the runtime, and the prelude puts the same text, stringified, into every unit.
// Plain C declarations only: the unit is compiled without any header.
#pragma once

// Bump when a field below changes. A unit's text embeds the declarations, so the kernel cache key changes too.
#define SN_SIM_ABI_VERSION 1
// Dynamic shared memory per block, in bytes (228 KiB, the most an sm_90 block may ask for).
#define SN_SIM_MAX_DYNAMIC_SHARED 233472

// sn_sim_thread: what the built-in variables of the running thread read. sn_sim_api: the runtime's entry points;
// every call except self() and activemask() may switch to another thread of the block before it returns.
// - shfl: every lane of `mask` offers `value` and receives the value offered by its `src_lane`.
// - vote: mode 0 returns the ballot of `predicate` over the lanes of `mask`, 1 any (0 or 1), 2 all (0 or 1).
// - fail: ends the launch with an error carrying `message` (__trap, assert); does not return.
#define SN_SIM_ABI_DECLS                                                                       \
  typedef struct sn_sim_uint3 {                                                               \
    unsigned x, y, z;                                                                         \
  } sn_sim_uint3;                                                                             \
  typedef struct sn_sim_thread {                                                              \
    sn_sim_uint3 thread_idx, block_idx, block_dim, grid_dim;                                  \
    unsigned lane;                                                                            \
  } sn_sim_thread;                                                                            \
  typedef struct sn_sim_api {                                                                 \
    unsigned version;                                                                         \
    const sn_sim_thread* (*self)(void);                                                       \
    void (*syncthreads)(void);                                                                \
    void (*syncwarp)(unsigned mask);                                                          \
    unsigned long long (*shfl)(unsigned mask, unsigned long long value, unsigned src_lane);   \
    unsigned (*vote)(unsigned mask, int predicate, int mode);                                 \
    unsigned (*activemask)(void);                                                             \
    void (*fail)(const char* message);                                                        \
  } sn_sim_api;

#define SN_SIM_STRINGIFY_(...) #__VA_ARGS__
#define SN_SIM_STRINGIFY(...) SN_SIM_STRINGIFY_(__VA_ARGS__)

extern "C" {
SN_SIM_ABI_DECLS
}
