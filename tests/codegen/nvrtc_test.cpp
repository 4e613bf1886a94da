// NVRTC at run time: kernels of the shapes the CUDA generator prints (grid-stride pointwise on float4, a block
// reduction through warp shuffles and shared memory, bfloat16 as raw bits, dynamic shared memory) compile to sm_90
// cubin with no #include, and a compile error names the kernel, the arch and the log line. Built with the toolkit
// (SINTER_CUDA_TOOLKIT) these tests must run; without it they skip. With a GPU the cubin is also loaded and run.
#include <gtest/gtest.h>

#include <chrono>
#include <type_traits>
#include <vector>

#include "codegen/cuda/nvrtc.h"
#include "sinter/error.h"
#include "tensor/cuda_driver.h"
#include "testing.h"

#ifdef SINTER_CUDA_TOOLKIT
#include <nvrtc.h>
#endif

namespace sinter {
namespace {

using codegen::cuda::compile_cuda;
using codegen::cuda::NvrtcResult;
namespace driver = cuda::driver;

#ifdef SINTER_CUDA_TOOLKIT
#define REQUIRE_NVRTC() ASSERT_TRUE(codegen::cuda::nvrtc_available()) << codegen::cuda::nvrtc_unavailable_reason()
#else
#define REQUIRE_NVRTC() GTEST_SKIP() << "built without the CUDA toolkit (SINTER_CUDA=OFF, or none found by CMake)"
#endif

// y = x * alpha + 1 over n floats: float4 loads for the body, scalar for the tail.
const char* kPointwise = R"(
extern "C" __global__ void pointwise(const float* __restrict__ x, float* __restrict__ y, long long n, float alpha) {
  long long n4 = n / 4;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 v = reinterpret_cast<const float4*>(x)[i];
    v.x = fmaf(v.x, alpha, 1.0f); v.y = fmaf(v.y, alpha, 1.0f); v.z = fmaf(v.z, alpha, 1.0f); v.w = fmaf(v.w, alpha, 1.0f);
    reinterpret_cast<float4*>(y)[i] = v;
  }
  for (long long i = n4 * 4 + (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = fmaf(x[i], alpha, 1.0f);
}
)";

// out[0] += sum(x): warp shuffles, one partial per warp in shared memory, then the first warp.
const char* kBlockReduce = R"(
extern "C" __global__ void block_sum(const float* __restrict__ x, float* __restrict__ out, int n) {
  __shared__ float partial[32];
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < (blockDim.x >> 5) ? partial[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) atomicAdd(out, v);
  }
}
)";

// bfloat16 kept as unsigned short: widen by shifting, narrow with round-to-nearest-even, NaN kept quiet.
const char* kBf16 = R"(
__device__ __forceinline__ float bf16_to_float(unsigned short b) { return __uint_as_float((unsigned int)b << 16); }
__device__ __forceinline__ unsigned short float_to_bf16(float f) {
  unsigned int u = __float_as_uint(f);
  if (isnan(f)) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
extern "C" __global__ void bf16_gelu(const unsigned short* __restrict__ x, unsigned short* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = bf16_to_float(x[i]);
    y[i] = float_to_bf16(0.5f * v * (1.0f + erff(v * 0.70710678118654752f)));
  }
}
)";

// Reverses each block's slice through dynamic shared memory.
const char* kDynamicShared = R"(
extern "C" __global__ void reverse_blocks(float* __restrict__ y) {
  extern __shared__ float tile[];
  unsigned int base = blockIdx.x * blockDim.x;
  tile[threadIdx.x] = y[base + threadIdx.x];
  __syncthreads();
  y[base + threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}
)";

// What the generator may use without including anything (the findings of compiling with NVRTC 13 for sm_90).
const char* kBuiltins = R"(
extern "C" __global__ void builtins(float* __restrict__ y, double* __restrict__ d, unsigned long long* __restrict__ u) {
  float x = y[threadIdx.x];
  float a = expf(x) + __expf(x) + expm1f(x) + exp2f(x) + logf(fabsf(x) + 1.0f) + log1pf(fabsf(x)) + log2f(2.0f);
  float b = tanhf(x) + erff(x) + erfcf(x) + erfinvf(0.5f) + lgammaf(2.0f) + sqrtf(2.0f) + rsqrtf(2.0f) + cbrtf(x);
  float c = sinf(x) + cosf(x) + tanf(x) + atan2f(x, 1.0f) + powf(2.0f, x) + hypotf(x, 1.0f) + normcdff(x);
  float e = fmaxf(x, 0.0f) + fminf(x, 0.0f) + copysignf(1.0f, x) + truncf(x) + roundf(x) + rintf(x) + floorf(x) +
            ceilf(x) + fmodf(x, 3.0f) + remainderf(x, 3.0f) + ldexpf(x, 2) + __fdividef(x, 3.0f) + __frcp_rn(3.0f);
  float f = (isnan(x) || isinf(x) || !isfinite(x)) ? nanf("") : __int_as_float(0x7f800000);
  float4 v = make_float4(a, b, c, e);
  v = __ldg(reinterpret_cast<const float4*>(y) + threadIdx.x);
  float w = v.x + __shfl_xor_sync(0xffffffffu, f, 1) + __shfl_down_sync(__activemask(), x, 1);
  unsigned int ballot = __ballot_sync(0xffffffffu, w > 0.0f) + __popc(1u) + __clz(1) + __reduce_add_sync(~0u, 1u);
  atomicAdd(y, w);
  atomicAdd(d, (double)ballot + exp(1.0) + tanh(1.0));
  atomicMax(u, (unsigned long long)clock64());
  __syncwarp();
  __stcs(y + threadIdx.x, __ldcs(y + threadIdx.x) + (float)min(1, 2) + (float)max(3u, 2u) + (float)warpSize);
}
)";

bool is_elf(const std::string& image) { return image.size() > 64 && image.compare(0, 4, "\177ELF") == 0; }

NvrtcResult compile_timed(const char* source, const char* name) {
  auto start = std::chrono::steady_clock::now();
  NvrtcResult r = compile_cuda(source, name, "sm_90");
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ::testing::Test::RecordProperty(std::string(name) + "_ms", static_cast<int>(ms));
  return r;
}

TEST(Nvrtc, LoadsWhenBuiltWithTheToolkit) {
  REQUIRE_NVRTC();
  EXPECT_GE(codegen::cuda::nvrtc_version(), 12000);
  EXPECT_TRUE(codegen::cuda::nvrtc_unavailable_reason().empty());
  EXPECT_FALSE(codegen::cuda::nvrtc::loaded_from().empty());
  RecordProperty("nvrtc", codegen::cuda::nvrtc::loaded_from());
}

TEST(Nvrtc, GeneratedKernelShapesCompileToSm90CubinWithoutIncludes) {
  REQUIRE_NVRTC();
  const std::pair<const char*, const char*> kernels[] = {{kPointwise, "pointwise"},
                                                         {kBlockReduce, "block_sum"},
                                                         {kBf16, "bf16_gelu"},
                                                         {kDynamicShared, "reverse_blocks"},
                                                         {kBuiltins, "builtins"}};
  for (const auto& [source, name] : kernels) {
    NvrtcResult r = compile_timed(source, name);
    EXPECT_TRUE(is_elf(r.cubin)) << name << ": " << r.cubin.size() << " bytes\n" << r.log;
    EXPECT_TRUE(r.ptx.empty()) << name;
    // The kernel's extern "C" name is in the ELF's symbol table.
    EXPECT_NE(r.cubin.find(name), std::string::npos) << name;
  }
}

TEST(Nvrtc, OptionsAndVirtualArchsGiveLineInfoAndPtx) {
  REQUIRE_NVRTC();
  NvrtcResult r = compile_cuda(kPointwise, "pointwise", "compute_90", {"-lineinfo"});
  EXPECT_TRUE(r.cubin.empty());
  EXPECT_NE(r.ptx.find(".target sm_90"), std::string::npos) << r.ptx.substr(0, 400);
  EXPECT_NE(r.ptx.find(".loc"), std::string::npos) << "no line info";
  EXPECT_NE(r.ptx.find(".entry pointwise"), std::string::npos);
}

TEST(Nvrtc, ACompileErrorNamesTheKernelTheArchAndTheLogLine) {
  REQUIRE_NVRTC();
  const char* broken = "extern \"C\" __global__ void broken(float* y) {\n  y[0] = 1.0f + ;\n}\n";
  EXPECT_ERROR(compile_cuda(broken, "broken_kernel", "sm_90"), "broken_kernel", "sm_90", "NVRTC_ERROR_COMPILATION",
               "broken_kernel(2): error: expected an expression", "y[0] = 1.0f + ;");
  // Toolkit headers are not on NVRTC's path: generated code must not need them.
  EXPECT_ERROR(compile_cuda("#include <cuda_fp16.h>\n", "with_include", "sm_90"), "with_include", "cuda_fp16.h");
  EXPECT_ERROR(compile_cuda(kPointwise, "pointwise", "sm_1"), "pointwise", "sm_1");
}

TEST(Nvrtc, OnAGpuTheCubinLoadsAndRuns) {
  REQUIRE_NVRTC();
  if (driver::api() == nullptr) GTEST_SKIP() << driver::reason();
  const driver::Api& a = driver::require();
  driver::use_device(0);
  driver::Module pointwise(compile_cuda(kPointwise, "pointwise", "sm_90").cubin, "pointwise");
  driver::Module reverse(compile_cuda(kDynamicShared, "reverse_blocks", "sm_90").cubin, "reverse_blocks");
  EXPECT_ERROR(pointwise.function("absent"), "absent", "pointwise", "cuModuleGetFunction");

  const long long n = (1 << 20) + 3;  // a tail after the float4 body
  std::vector<float> x(n), y(n);
  for (long long i = 0; i < n; ++i) x[i] = static_cast<float>(i % 1000) * 0.25f;
  driver::CUdeviceptr dx = 0, dy = 0;
  driver::check(a.cuMemAlloc(&dx, n * sizeof(float)), "cuMemAlloc");
  driver::check(a.cuMemAlloc(&dy, n * sizeof(float)), "cuMemAlloc");
  driver::Stream stream;
  driver::Event start, stop;
  driver::check(a.cuMemcpyHtoDAsync(dx, x.data(), n * sizeof(float), stream.get()), "cuMemcpyHtoDAsync");
  driver::check(a.cuMemsetD8Async(dy, 0, n * sizeof(float), stream.get()), "cuMemsetD8Async");
  float alpha = 3.0f;
  void* params[] = {&dx, &dy, const_cast<long long*>(&n), &alpha};
  start.record(stream.get());
  driver::launch(pointwise.function("pointwise"), {264}, {256}, 0, stream.get(), params, "pointwise");
  stop.record(stream.get());
  driver::check(a.cuMemcpyDtoHAsync(y.data(), dy, n * sizeof(float), stream.get()), "cuMemcpyDtoHAsync");
  stream.synchronize();
  EXPECT_GE(stop.elapsed_ms_since(start), 0.0f);
  for (long long i = 0; i < n; ++i)
    if (y[i] != x[i] * alpha + 1.0f) FAIL() << "y[" << i << "] = " << y[i] << ", want " << x[i] * alpha + 1.0f;

  // 64 KiB of dynamic shared memory needs the opt-in; without it the launch fails and says which kernel.
  const unsigned int block = 1024, blocks = 4, shared = 64 * 1024;
  driver::CUfunction rev = reverse.function("reverse_blocks");
  void* rparams[] = {&dx};
  EXPECT_ERROR(driver::launch(rev, {blocks}, {block}, shared, nullptr, rparams, "reverse_blocks"), "cuLaunchKernel",
               "reverse_blocks");
  driver::set_max_dynamic_shared(rev, shared, "reverse_blocks");
  driver::launch(rev, {blocks}, {block}, shared, nullptr, rparams, "reverse_blocks");
  driver::check(a.cuCtxSynchronize(), "cuCtxSynchronize");
  std::vector<float> r(blocks * block);
  driver::check(a.cuMemcpyDtoH(r.data(), dx, r.size() * sizeof(float)), "cuMemcpyDtoH");
  for (unsigned int b = 0; b < blocks; ++b)
    for (unsigned int t = 0; t < block; ++t) ASSERT_EQ(r[b * block + t], x[b * block + block - 1 - t]);
  driver::check(a.cuMemFree(dx), "cuMemFree");
  driver::check(a.cuMemFree(dy), "cuMemFree");
}

#ifdef SINTER_CUDA_TOOLKIT
// nvrtc.h's types spelled as sinter declares them: enums as int, the program handle as sinter's.
template <class T>
struct Ours {
  using type = std::conditional_t<std::is_enum_v<T>, int, T>;
};
template <class T>
struct Ours<T*> {
  using type = typename Ours<T>::type*;
};
template <class T>
struct Ours<const T> {
  using type = const typename Ours<T>::type;
};
template <>
struct Ours<_nvrtcProgram> {
  using type = std::remove_pointer_t<codegen::cuda::nvrtc::nvrtcProgram>;
};
template <class R, class... A>
struct Ours<R(A...)> {
  using type = typename Ours<R>::type(typename Ours<A>::type...);
};
#define SINTER_EXPECT_NVRTC_ABI(fn)                                                                   \
  static_assert(std::is_same_v<Ours<decltype(&::fn)>::type, decltype(codegen::cuda::nvrtc::Api::fn)>, \
                #fn " is declared otherwise in nvrtc.h")

TEST(Nvrtc, DeclaredAbiMatchesNvrtcH) {
  static_assert(sizeof(nvrtcResult) == sizeof(int) && codegen::cuda::nvrtc::kSuccess == NVRTC_SUCCESS);
  SINTER_EXPECT_NVRTC_ABI(nvrtcVersion);
  SINTER_EXPECT_NVRTC_ABI(nvrtcCreateProgram);
  SINTER_EXPECT_NVRTC_ABI(nvrtcCompileProgram);
  SINTER_EXPECT_NVRTC_ABI(nvrtcGetProgramLogSize);
  SINTER_EXPECT_NVRTC_ABI(nvrtcGetProgramLog);
  SINTER_EXPECT_NVRTC_ABI(nvrtcGetCUBINSize);
  SINTER_EXPECT_NVRTC_ABI(nvrtcGetCUBIN);
  SINTER_EXPECT_NVRTC_ABI(nvrtcGetPTXSize);
  SINTER_EXPECT_NVRTC_ABI(nvrtcGetPTX);
  SINTER_EXPECT_NVRTC_ABI(nvrtcDestroyProgram);
  SINTER_EXPECT_NVRTC_ABI(nvrtcGetErrorString);
}
#endif

}  // namespace
}  // namespace sinter
