// The CUDA simulator end to end: small CUDA kernels written as the generator writes them, put after
// sim_prelude(), built by the host toolchain into one shared object (two units, both with the prelude), bound
// with sn_sim_bind(api()) and launched by runtime::sim::launch; results are compared with plain C++ references.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cpp/kernel_cache.h"
#include "codegen/cuda/sim_prelude.h"
#include "runtime/cuda_sim.h"
#include "sinter/error.h"
#include "support/cache_files.h"

namespace sinter::runtime::sim {
namespace {

constexpr char kKernelsA[] = R"CUDA(
__global__ void pointwise(const float* __restrict__ x, float* __restrict__ y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = fmaf(x[i], 2.0f, 1.0f) + sqrtf(fabsf(x[i])) + expf(-x[i] * x[i]);
}
extern "C" void pointwise__sim(void** p) { pointwise(*(const float**)p[0], *(float**)p[1], *(int*)p[2]); }

// Lanes past the end of the block do not exist: what a shuffle reads from them is discarded.
__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) {
    float o = __shfl_down_sync(0xffffffffu, v, off);
    if (threadIdx.x + off < blockDim.x) v += o;
  }
  return v;
}
__global__ void __launch_bounds__(128) block_sum(const float* x, float* partial, float* total, int* count, int n) {
  __shared__ __align__(16) float warp_sums[32];
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) v += x[i];
  v = warp_sum(v);
  unsigned lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x + 31) / 32 ? warp_sums[lane] : 0.0f;
    v = warp_sum(v);
    if (lane == 0) {
      partial[blockIdx.x] = v;
      atomicAdd(total, v);
      atomicAdd(count, 1);
    }
  }
}
extern "C" void block_sum__sim(void** p) {
  block_sum(*(const float**)p[0], *(float**)p[1], *(float**)p[2], *(int**)p[3], *(int*)p[4]);
}

__global__ void reverse_dynamic(const float* x, float* y) {
  extern __shared__ float smem[];
  unsigned base = blockIdx.x * blockDim.x;
  smem[threadIdx.x] = x[base + threadIdx.x];
  __syncthreads();
  y[base + threadIdx.x] = smem[blockDim.x - 1 - threadIdx.x];
}
extern "C" void reverse_dynamic__sim(void** p) { reverse_dynamic(*(const float**)p[0], *(float**)p[1]); }

__global__ void shuffles(const int* x, int* sum, double* maxv, long long* sum8, unsigned* scan, float* bcast) {
  unsigned t = threadIdx.x, lane = t % 32;
  int v = x[t];
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  sum[t] = v;
  double d = (double)x[t];
  for (int m = 1; m < 32; m <<= 1) d = fmax(d, __shfl_xor_sync(0xffffffffu, d, m));
  maxv[t] = d;
  long long l = x[t];
  for (int m = 4; m > 0; m >>= 1) l += __shfl_xor_sync(0xffffffffu, l, m, 8);
  sum8[t] = l;
  unsigned s = (unsigned)x[t];
  for (unsigned off = 1; off < 32; off <<= 1) {
    unsigned o = __shfl_up_sync(0xffffffffu, s, off);
    if (lane >= off) s += o;
  }
  scan[t] = s;
  bcast[t] = __shfl_sync(0xffffffffu, (float)x[t] * 0.5f, 3);
}
extern "C" void shuffles__sim(void** p) {
  shuffles(*(const int**)p[0], *(int**)p[1], *(double**)p[2], *(long long**)p[3], *(unsigned**)p[4],
           *(float**)p[5]);
}

__global__ void votes(const int* x, unsigned* ballot, int* any, int* all, unsigned* active, unsigned* half) {
  unsigned act = __activemask();  // before any lane exits: lanes do not run in lockstep
  unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int p = x[threadIdx.x] > 0;
  unsigned b = __ballot_sync(0xffffffffu, p);
  int a = __any_sync(0xffffffffu, p), l = __all_sync(0xffffffffu, p);
  unsigned h = 0;
  if (lane < 16) h = __ballot_sync(0x0000ffffu, p);
  __syncwarp();
  if (lane == 0) {
    ballot[warp] = b;
    any[warp] = a;
    all[warp] = l;
    active[warp] = act;
    half[warp] = h;
  }
}
extern "C" void votes__sim(void** p) {
  votes(*(const int**)p[0], *(unsigned**)p[1], *(int**)p[2], *(int**)p[3], *(unsigned**)p[4], *(unsigned**)p[5]);
}
)CUDA";

constexpr char kKernelsB[] = R"CUDA(
__global__ void atomics(int* imax, unsigned* umin, long long* llmax, unsigned long long* count, double* dsum, int* cas) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  atomicMax(imax, i * 7 % 1000);
  atomicMin(umin, 1000u + (unsigned)i);
  atomicMax(llmax, (long long)i << 33);
  atomicAdd(count, 1ull);
  atomicAdd(dsum, 0.5);
  atomicCAS(cas, -1, i);
}
extern "C" void atomics__sim(void** p) {
  atomics(*(int**)p[0], *(unsigned**)p[1], *(long long**)p[2], *(unsigned long long**)p[3], *(double**)p[4],
          *(int**)p[5]);
}

__global__ void indexing(unsigned* out) {
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned* o = out + 4 * (block * blockDim.x * blockDim.y * blockDim.z + thread);
  o[0] = threadIdx.x | threadIdx.y << 8 | threadIdx.z << 16;
  o[1] = blockIdx.x | blockIdx.y << 8 | blockIdx.z << 16;
  dim3 bd = blockDim;
  o[2] = bd.x | bd.y << 8 | bd.z << 16;
  o[3] = gridDim.x | gridDim.y << 8 | gridDim.z << 16;
}
extern "C" void indexing__sim(void** p) { indexing(*(unsigned**)p[0]); }

// The other spelling of dynamic shared memory; the last byte of a large allocation is reachable.
__global__ void dynamic_bytes(unsigned* out, unsigned bytes) {
  extern __shared__ __align__(16) unsigned char smem_[];
  float4* v = reinterpret_cast<float4*>(smem_);
  v[threadIdx.x] = make_float4(threadIdx.x, 1.0f, 2.0f, 3.0f);
  if (threadIdx.x == 0) smem_[bytes - 1] = 42;
  __syncthreads();
  out[threadIdx.x] = (unsigned)v[(threadIdx.x + 1) % blockDim.x].x + smem_[bytes - 1];
}
extern "C" void dynamic_bytes__sim(void** p) { dynamic_bytes(*(unsigned**)p[0], *(unsigned*)p[1]); }

__global__ void early_return(float* y) {
  __shared__ float s[64];
  if (threadIdx.x == 5) return;
  s[threadIdx.x] = 1.0f;
  __syncthreads();
  y[threadIdx.x] = s[63 - threadIdx.x];
}
extern "C" void early_return__sim(void** p) { early_return(*(float**)p[0]); }

__global__ void exit_before_shuffle(float* y) {
  if (threadIdx.x == 9) return;
  y[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}
extern "C" void exit_before_shuffle__sim(void** p) { exit_before_shuffle(*(float**)p[0]); }

__global__ void lane_outside_mask(float* y) { y[threadIdx.x] = __shfl_sync(0x1u, 1.0f, 0); }
extern "C" void lane_outside_mask__sim(void** p) { lane_outside_mask(*(float**)p[0]); }

__global__ void mixed_warp_ops(unsigned* y) {
  if (threadIdx.x % 32 < 16) __syncwarp();
  else y[threadIdx.x] = __ballot_sync(0xffffffffu, 1);
}
extern "C" void mixed_warp_ops__sim(void** p) { mixed_warp_ops(*(unsigned**)p[0]); }

__global__ void trapping(int* count) {
  if (blockIdx.x == 2 && threadIdx.x == 3) __trap();
  atomicAdd(count, 1);
}
extern "C" void trapping__sim(void** p) { trapping(*(int**)p[0]); }

__global__ void throwing(int* count) {
  __syncthreads();
  if (threadIdx.x == 7) throw 42;
  atomicAdd(count, 1);
}
extern "C" void throwing__sim(void** p) { throwing(*(int**)p[0]); }
)CUDA";

class CudaSim : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char templ[] = "/tmp/sinter-cuda-sim-test-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = new std::string(templ);
    setenv("SINTER_CACHE_DIR", dir_->c_str(), 1);
    std::string prelude(codegen::cuda::sim_prelude());
    obj_ = new codegen::cpp::CompiledObject(
        codegen::cpp::compile_and_load({prelude + kKernelsA, prelude + kKernelsB}, "cuda_sim_test"));
    auto bind = reinterpret_cast<void (*)(const sn_sim_api*)>(obj_->library->symbol("sn_sim_bind"));
    bind(api());
  }
  static void TearDownTestSuite() {
    delete obj_;
    codegen::cpp::clear_memory_cache();
    support::remove_tree(*dir_);
    unsetenv("SINTER_CACHE_DIR");
    delete dir_;
  }
  template <class... A>
  static void run(const std::string& kernel, Dim3 grid, Dim3 block, size_t dynamic_shared, A... args) {
    void* params[] = {&args...};
    auto entry = reinterpret_cast<Entry>(obj_->library->symbol(kernel + "__sim"));
    launch(kernel, entry, params, grid, block, dynamic_shared);
  }
  // The message of the Error the launch throws ("" when it does not throw).
  template <class... A>
  static std::string error_of(const std::string& kernel, Dim3 grid, Dim3 block, size_t dynamic_shared, A... args) {
    try {
      run(kernel, grid, block, dynamic_shared, args...);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  static inline std::string* dir_ = nullptr;
  static inline codegen::cpp::CompiledObject* obj_ = nullptr;
};

TEST_F(CudaSim, GridStridePointwiseMatchesReference) {
  int n = 10000;
  std::vector<float> x(n), y(n, -1.0f);
  for (int i = 0; i < n; ++i) x[i] = std::sin(0.01f * i) * 3.0f;
  run("pointwise", {7}, {128}, 0, x.data(), y.data(), n);
  for (int i = 0; i < n; ++i) {
    float ref = std::fma(x[i], 2.0f, 1.0f) + std::sqrt(std::fabs(x[i])) + std::exp(-x[i] * x[i]);
    ASSERT_NEAR(y[i], ref, 1e-5f * std::fabs(ref)) << i;
  }
}

TEST_F(CudaSim, BlockReductionOverManyBlocksOfPartialWarps) {
  int n = 50000, blocks = 37, threads = 100;  // 100 threads: the last warp has 4 lanes
  std::vector<float> x(n), partial(blocks, 0.0f);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i % 17) - 8.0f + 0.25f;
  float total = 0.0f;
  int count = 0;
  run("block_sum", {unsigned(blocks)}, {unsigned(threads)}, 0, x.data(), partial.data(), &total, &count, n);
  double all = 0;
  for (int b = 0; b < blocks; ++b) {
    double ref = 0;
    for (int i = b * threads; i < n; i += blocks * threads)
      for (int t = 0; t < threads && i + t < n; ++t) ref += x[i + t];
    EXPECT_NEAR(partial[b], ref, 1e-3) << "block " << b;
    all += ref;
  }
  EXPECT_NEAR(total, all, 1e-2);
  EXPECT_EQ(count, blocks);
}

TEST_F(CudaSim, DynamicSharedMemoryInBothSpellings) {
  int blocks = 5, threads = 96;
  std::vector<float> x(blocks * threads), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
  run("reverse_dynamic", {unsigned(blocks)}, {unsigned(threads)}, threads * sizeof(float), x.data(), y.data());
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < threads; ++t) ASSERT_EQ(y[b * threads + t], x[b * threads + threads - 1 - t]);
  unsigned bytes = 200 << 10;
  std::vector<unsigned> out(64);
  run("dynamic_bytes", {3}, {64}, bytes, out.data(), bytes);
  for (unsigned t = 0; t < 64; ++t) EXPECT_EQ(out[t], (t + 1) % 64 + 42);
}

TEST_F(CudaSim, ShufflesXorUpAndBroadcastWithWidths) {
  int threads = 64;
  std::vector<int> x(threads), sum(threads);
  for (int i = 0; i < threads; ++i) x[i] = (i * 37) % 23 - 5;
  std::vector<double> maxv(threads);
  std::vector<long long> sum8(threads);
  std::vector<unsigned> scan(threads);
  std::vector<float> bcast(threads);
  run("shuffles", {1}, {unsigned(threads)}, 0, x.data(), sum.data(), maxv.data(), sum8.data(), scan.data(),
      bcast.data());
  for (int t = 0; t < threads; ++t) {
    int w = t / 32 * 32, g = t / 8 * 8, s = 0, m = x[w], s8 = 0;
    unsigned prefix = 0;
    for (int l = w; l < w + 32; ++l) s += x[l], m = std::max(m, x[l]);
    for (int l = g; l < g + 8; ++l) s8 += x[l];
    for (int l = w; l <= t; ++l) prefix += unsigned(x[l]);
    EXPECT_EQ(sum[t], s) << t;
    EXPECT_EQ(maxv[t], double(m)) << t;
    EXPECT_EQ(sum8[t], s8) << t;
    EXPECT_EQ(scan[t], prefix) << t;
    EXPECT_EQ(bcast[t], x[w + 3] * 0.5f) << t;
  }
}

TEST_F(CudaSim, BallotAnyAllAndActiveMaskOnAPartialWarp) {
  int threads = 72;  // warps of 32, 32 and 8 lanes
  std::vector<int> x(threads, 0);
  for (int t = 0; t < 32; ++t) x[t] = t % 3 == 0;
  for (int t = 32; t < 64; ++t) x[t] = 1;
  std::vector<unsigned> ballot(3), active(3), half(3);
  std::vector<int> any(3), all(3);
  run("votes", {1}, {unsigned(threads)}, 0, x.data(), ballot.data(), any.data(), all.data(), active.data(),
      half.data());
  unsigned b0 = 0;
  for (int t = 0; t < 32; ++t) b0 |= unsigned(x[t]) << t;
  EXPECT_EQ(ballot[0], b0);
  EXPECT_EQ(half[0], b0 & 0xffffu);
  EXPECT_EQ(ballot[1], 0xffffffffu);
  EXPECT_EQ(ballot[2], 0u);
  EXPECT_EQ(any[0], 1);
  EXPECT_EQ(all[0], 0);
  EXPECT_EQ(all[1], 1);
  EXPECT_EQ(any[2], 0);
  EXPECT_EQ(active[0], 0xffffffffu);
  EXPECT_EQ(active[2], 0xffu);
}

TEST_F(CudaSim, AtomicsAcrossBlocks) {
  int imax = -1, cas = -1;
  unsigned umin = ~0u;
  long long llmax = 0;
  unsigned long long count = 0;
  double dsum = 0;
  run("atomics", {16}, {64}, 0, &imax, &umin, &llmax, &count, &dsum, &cas);
  int ref_max = 0;
  for (int i = 0; i < 1024; ++i) ref_max = std::max(ref_max, i * 7 % 1000);
  EXPECT_EQ(imax, ref_max);
  EXPECT_EQ(umin, 1000u);
  EXPECT_EQ(llmax, 1023ll << 33);
  EXPECT_EQ(count, 1024u);
  EXPECT_EQ(dsum, 512.0);
  EXPECT_TRUE(cas >= 0 && cas < 1024) << cas;
}

TEST_F(CudaSim, ThreeDimensionalGridAndBlockIndexing) {
  Dim3 grid{3, 2, 2}, block{4, 3, 2};
  std::vector<unsigned> out(4 * 12 * 24, ~0u);
  run("indexing", grid, block, 0, out.data());
  auto pack = [](unsigned x, unsigned y, unsigned z) { return x | y << 8 | z << 16; };
  size_t i = 0;
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 2; ++tz)
          for (unsigned ty = 0; ty < 3; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx, i += 4) {
              ASSERT_EQ(out[i], pack(tx, ty, tz));
              ASSERT_EQ(out[i + 1], pack(bx, by, bz));
              ASSERT_EQ(out[i + 2], pack(4, 3, 2));
              ASSERT_EQ(out[i + 3], pack(3, 2, 2));
            }
}

TEST_F(CudaSim, ThreadExitingBeforeSyncthreadsIsADeadlock) {
  std::vector<float> y(64);
  std::string e = error_of("early_return", {2}, {64}, 0, y.data());
  EXPECT_NE(e.find("__syncthreads"), std::string::npos) << e;
  EXPECT_NE(e.find("kernel 'early_return'"), std::string::npos) << e;
  EXPECT_NE(e.find("block (0,0,0)"), std::string::npos) << e;
  EXPECT_NE(e.find("thread (5,0,0)"), std::string::npos) << e;
  EXPECT_NE(e.find("deadlock"), std::string::npos) << e;
}

TEST_F(CudaSim, WarpOperationErrors) {
  std::vector<float> y(64);
  std::vector<unsigned> u(64);
  std::string e = error_of("exit_before_shuffle", {1}, {64}, 0, y.data());
  EXPECT_NE(e.find("thread (9,0,0) never reaches"), std::string::npos) << e;
  e = error_of("lane_outside_mask", {1}, {32}, 0, y.data());
  EXPECT_NE(e.find("does not name the calling lane"), std::string::npos) << e;
  e = error_of("mixed_warp_ops", {1}, {32}, 0, u.data());
  EXPECT_NE(e.find("different warp operations"), std::string::npos) << e;
}

TEST_F(CudaSim, LaunchLimitsAreErrors) {
  int count = 0;
  std::string e = error_of("trapping", {1}, {2048}, 0, &count);
  EXPECT_NE(e.find("2048 threads"), std::string::npos) << e;
  e = error_of("trapping", {1}, {32}, 229 << 10, &count);
  EXPECT_NE(e.find("dynamic shared memory"), std::string::npos) << e;
  e = error_of("trapping", {0}, {32}, 0, &count);
  EXPECT_NE(e.find("empty launch"), std::string::npos) << e;
  EXPECT_EQ(count, 0);
}

TEST_F(CudaSim, TrapAndExceptionsEndTheLaunchAndTheNextLaunchWorks) {
  int count = 0;
  std::string e = error_of("trapping", {4}, {64}, 0, &count);
  EXPECT_NE(e.find("__trap"), std::string::npos) << e;
  EXPECT_NE(e.find("block (2,0,0), thread (3,0,0)"), std::string::npos) << e;
  e = error_of("throwing", {1}, {32}, 0, &count);
  EXPECT_NE(e.find("raised an exception"), std::string::npos) << e;
  EXPECT_NE(e.find("thread (7,0,0)"), std::string::npos) << e;
  // Fibers abandoned at barriers leave nothing behind: the same stacks run a correct kernel again.
  std::vector<float> y(64);
  std::vector<int> x(64, 1), sum(64);
  std::vector<double> maxv(64);
  std::vector<long long> sum8(64);
  std::vector<unsigned> scan(64);
  run("shuffles", {1}, {64}, 0, x.data(), sum.data(), maxv.data(), sum8.data(), scan.data(), y.data());
  EXPECT_EQ(sum[0], 32);
  EXPECT_EQ(scan[63], 32u);
}

}  // namespace
}  // namespace sinter::runtime::sim
