// The end-to-end corpus (tests/function_cases.h, and the symbolic table of tests/inductor/inductor_ops_cases.h)
// on CUDA tensors, compiled with eager, aot_eager and the inductor, each result against the same function run
// eagerly on CPU tensors (tolerance of the dtype: testing::close). On the GPU machine the kernels run on the GPU;
// in CI on the simulated device, where every compiled graph is a host shared object (most of the run time).
//
// What runs where:
//   eager, aot_eager: every inductor and capture case in float32, bfloat16 and float16 (integer, bool and mixed
//     cases once), and a small group again with SINTER_CUDA_EAGER=generated (the generated one-op kernels).
//   inductor: every case in float32, with the CPU's kernel counts where the CPU tests assert them; every third
//     case in bfloat16 and float16.
//   dynamic shapes, graph breaks and guards: float32, one function of each also in bfloat16 (the break cases
//     under eager and aot_eager in float16).
#include <gtest/gtest.h>

#include <cstring>

#include "function_cases.h"
#include "inductor/inductor_ops_cases.h"
#include "ops/cuda_fallback.h"
#include "scoped_env.h"
#include "sinter/compile.h"
#include "sinter/cuda.h"
#include "sinter/ops.h"
#include "testing.h"

namespace sinter::corpus {
namespace {

constexpr DType kHalfDTypes[] = {kBFloat16, kFloat16};
constexpr size_t kHalfStride = 3;  // the inductor runs every kHalfStride-th case in the half dtypes

Ts to_device(const Ts& in, Device d) {
  Ts out;
  for (const Tensor& t : in) out.push_back(t.to(d));
  return out;
}

// The inputs of `c` in `dt` (its own dtypes when they are fixed).
Ts inputs_of(const FunctionCase& c, DType dt) { return c.inputs(c.fixed_dtypes ? c.dtype : dt); }

// Compares outputs computed on CUDA with the CPU's: on the device, same dtypes and sizes, values within the
// dtype's tolerance.
void expect_like_cpu(const Ts& got, const Ts& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(got[i].is_cuda()) << what << ", output " << i;
    EXPECT_EQ(dtype_name(got[i].dtype()), dtype_name(want[i].dtype())) << what << ", output " << i;
    EXPECT_TRUE(testing::close(got[i].cpu(), want[i])) << what << ", output " << i;
  }
}

// Compiles `c` with `backend`, calls it twice (the capture, then a guard hit) on CUDA copies of its inputs in
// `dt`, and compares with eager on the CPU. Returns the stats of the compiled function.
CompileStats expect_case_like_cpu(const FunctionCase& c, DType dt, const char* backend) {
  std::string what = c.name + " (" + backend + ", " + std::string(dtype_name(c.fixed_dtypes ? c.dtype : dt)) + ")";
  Ts in = inputs_of(c, dt);
  Ts want = c.fn(in);
  Ts dev = to_device(in, kCUDA);
  auto compiled = compile(c.fn, {.backend = backend});
  try {
    for (int call = 0; call < 2; ++call) expect_like_cpu(compiled(dev), want, what + ", call " + std::to_string(call));
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << std::string(e.what()).substr(0, 2000);
  }
  CompileStats s = compiled.stats();
  EXPECT_EQ(s.eager_fallbacks, 0) << what;
  return s;
}

std::vector<FunctionCase> all_cases() {
  std::vector<FunctionCase> all = inductor_cases();
  for (FunctionCase& c : capture_cases()) all.push_back(std::move(c));
  return all;
}

// ---- eager and aot_eager ----

TEST(CudaCorpus, EveryCaseUnderEagerAndAotEagerInEveryFloatDtypeMatchesCpu) {
  for (const FunctionCase& c : all_cases())
    for (DType dt : {kFloat32, kBFloat16, kFloat16}) {
      if (c.fixed_dtypes && dt != kFloat32) continue;
      for (const char* backend : {"eager", "aot_eager"}) expect_case_like_cpu(c, dt, backend);
    }
}

// With SINTER_CUDA_EAGER=generated, eager CUDA ops run generated one-op kernels as on a GPU: a few cases (a
// normalisation, views, reductions, an integer function) under eager and aot_eager, each op's program compiled
// once and shared by both backends.
TEST(CudaCorpus, GeneratedEagerKernelsUnderEagerAndAotEagerMatchCpu) {
  testing::ScopedEnv generated{"SINTER_CUDA_EAGER", "generated"};
  std::vector<FunctionCase> inductor = inductor_cases(), capture = capture_cases();
  std::vector<FunctionCase> group = {named(inductor, "layer_norm gelu"), named(inductor, "amin keepdim + x"),
                                     named(capture, "slice narrow select"), named(inductor, "int where")};
  for (const FunctionCase& c : group)
    for (DType dt : {kFloat32, kBFloat16}) {
      if (c.fixed_dtypes && dt != kFloat32) continue;
      CudaEagerCounts before = cuda_eager_counts();
      for (const char* backend : {"eager", "aot_eager"}) expect_case_like_cpu(c, dt, backend);
      EXPECT_GT(cuda_eager_counts().generated, before.generated) << c.name;
    }
}

// ---- the inductor ----

// The CUDA graph launches the kernels the CPU inductor promises, except where a GEMM or convolution is involved:
// nothing fuses into a CUDA GEMM (its bias and activation are kernels of their own, docs/ARCHITECTURE.md), so
// there the count is at least the CPU's.
TEST(CudaCorpus, InductorCasesInFloat32MatchCpuWithItsKernelCounts) {
  for (const FunctionCase& c : inductor_cases()) {
    CompileStats s = expect_case_like_cpu(c, c.fixed_dtypes ? c.dtype : kFloat32, "inductor");
    EXPECT_EQ(s.compiles, 1) << c.name;
    if (c.kernels < 0 || c.dtype != kFloat32) continue;
    if (c.gemm) EXPECT_GE(s.kernels_per_call, c.kernels) << c.name;
    else if (c.at_most) EXPECT_LE(s.kernels_per_call, c.kernels) << c.name;
    else EXPECT_EQ(s.kernels_per_call, c.kernels) << c.name;
  }
}

TEST(CudaCorpus, CaptureCasesUnderInductorInFloat32MatchCpu) {
  for (const FunctionCase& c : capture_cases()) expect_case_like_cpu(c, kFloat32, "inductor");
}

TEST(CudaCorpus, EveryThirdCaseUnderInductorInHalfDtypesMatchesCpu) {
  std::vector<FunctionCase> all = all_cases();
  for (size_t k = 0; k < all.size(); k += kHalfStride) {
    if (all[k].fixed_dtypes) continue;
    for (DType dt : kHalfDTypes) expect_case_like_cpu(all[k], dt, "inductor");
  }
}

// ---- modes ----

// Bit for bit, so that NaNs compare too.
bool same_bits(const Tensor& a, const Tensor& b) {
  Tensor x = a.cpu().contiguous(), y = b.cpu().contiguous();
  return x.dtype() == y.dtype() && x.sizes().hints() == y.sizes().hints() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.numel().hint()) * x.element_size()) == 0;
}

// max-autotune (every candidate launch of every tunable kernel runs in the simulator and must store what the
// default launch stores) and reduce-overhead (the calls after the first replay a CUDA graph where the graph has
// enough launches) give the default mode's results bit for bit, on every inductor case in float32.
TEST(CudaCorpus, MaxAutotuneAndReduceOverheadGiveTheDefaultModesBits) {
  for (const FunctionCase& c : inductor_cases()) {
    Ts dev = to_device(inputs_of(c, kFloat32), kCUDA);
    auto plain = compile(c.fn);
    Ts want = plain(dev);
    for (Mode mode : {Mode::kMaxAutotune, Mode::kReduceOverhead}) {
      auto f = compile(c.fn, {.mode = mode});
      for (int call = 0; call < 3; ++call) {
        Ts got;
        try {
          got = f(dev);
        } catch (const std::exception& e) {
          ADD_FAILURE() << c.name << ": " << std::string(e.what()).substr(0, 2000);
          break;
        }
        ASSERT_EQ(got.size(), want.size()) << c.name;
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_TRUE(same_bits(got[i], want[i]))
              << c.name << ", output " << i << ", call " << call
              << (mode == Mode::kMaxAutotune ? " (max-autotune)" : " (reduce-overhead)");
      }
    }
  }
}

// ---- dynamic shapes ----

// Under Dynamic::kAlways one compile serves every size, as on the CPU; under kAuto the second size recompiles
// once with symbolic sizes and later ones hit.
TEST(CudaCorpus, DynamicShapesCompileOnceForEverySize) {
  for (const SizedCase& c : dynamic_cases())
    for (Dynamic dyn : {Dynamic::kAlways, Dynamic::kAuto}) {
      SCOPED_TRACE(c.name + (dyn == Dynamic::kAlways ? " kAlways" : " kAuto"));
      auto compiled = compile(c.fn, {.backend = "inductor", .dynamic = dyn});
      for (size_t k = 0; k < 3 && k < c.sizes.size(); ++k) {
        Ts in = c.sized(kFloat32, c.sizes[k]);
        expect_like_cpu(compiled(to_device(in, kCUDA)), c.fn(in), "size " + std::to_string(c.sizes[k]));
      }
      EXPECT_EQ(compiled.stats().compiles, dyn == Dynamic::kAlways ? 1 : 2);
      EXPECT_EQ(compiled.stats().eager_fallbacks, 0);
    }
}

// The symbolic op table (float32, bfloat16 and int64 values of symbolic [m, n]) as one graph for three shapes.
TEST(CudaCorpus, SymbolicOpTableIsOneGraphForThreeShapes) {
  inductor_ops::Probe probe;
  std::vector<inductor_ops::Case> cases = inductor_ops::symbolic_cases();
  auto all = [&cases](const Ts& in) { return inductor_ops::run_all(cases, in); };
  auto c = compile(all, {.backend = inductor_ops::kProbeBackend, .dynamic = Dynamic::kAlways});
  for (auto [m, n] : {std::pair<int64_t, int64_t>{3, 5}, {17, 9}, {64, 33}}) {
    SCOPED_TRACE("[" + std::to_string(m) + ", " + std::to_string(n) + "]");
    Ts in = {testing::random({m, n}, kFloat32, 1), testing::random({n}, kFloat32, 2),
             testing::random({m, n}, kBFloat16, 3), testing::random({m, n}, kInt64, 4)};
    Ts got = c(to_device(in, kCUDA));
    for (Tensor& t : got) t = t.cpu();
    inductor_ops::compare(cases, got, all(in));
  }
  EXPECT_EQ(*probe.graphs, 1);
}

// mark_dynamic declares a range: sizes inside it share the entry, a size outside recompiles (bfloat16).
TEST(CudaCorpus, MarkDynamicRangeServesSizesInsideIt) {
  auto f = [](const Tensor& x) { return x.softmax(0) * 2; };
  auto c = compile(f, {.backend = "inductor", .dynamic = Dynamic::kAuto});
  Tensor x = testing::random({16, 3}, kBFloat16, 1);
  Tensor dx = x.to(kCUDA);
  mark_dynamic(dx, 0, {.min = 2, .max = 64});
  expect_like_cpu({c(dx)}, {f(x)}, "16");
  Tensor y = testing::random({40, 3}, kBFloat16, 2);
  expect_like_cpu({c(y.to(kCUDA))}, {f(y)}, "40");
  EXPECT_EQ(c.stats().compiles, 1);
  Tensor z = testing::random({100, 3}, kBFloat16, 3);
  expect_like_cpu({c(z.to(kCUDA))}, {f(z)}, "100");
  EXPECT_EQ(c.stats().compiles, 2);
}

// ---- graph breaks ----

// A branch on a value read in the middle splits the function; both segments are compiled for CUDA (kernels in
// both), and each call follows its own data. The segment after the break uses no scalar (see the next test).
TEST(CudaCorpus, GraphBreakOnABranchCompilesBothSegmentsForCuda) {
  Fn f = [](const Ts& i) {
    Tensor y = exp(i[0]) - 1;
    if (bool(y.sum() > 0)) return Ts{relu(y) * i[0]};
    return Ts{tanh(y) * i[0]};
  };
  for (DType dt : {kFloat32, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    auto compiled = compile(f, {.backend = "inductor"});
    for (uint64_t i = 0; i < 6; ++i) {
      Ts in = {testing::random({5, 7}, dt, i + 1)};
      expect_like_cpu(compiled(to_device(in, kCUDA)), f(in), "call " + std::to_string(i));
    }
    CompileStats s = compiled.stats();
    EXPECT_GE(s.graph_breaks, 1);
    EXPECT_LE(s.compiles, 3) << s.str();
    EXPECT_GE(s.kernels_per_call, 2) << "a kernel in each segment";
    EXPECT_EQ(s.eager_fallbacks, 0);
  }
}

// Every break case compiled for CUDA: a scalar read at the break (x * s with s = x.sum().item()) or a constant
// after it (y.relu() + 1) is a 0-d input of the next segment on the device of its op, so every segment is a CUDA
// graph.
TEST(CudaCorpus, BreakCasesCompileEverySegmentForCuda) {
  for (const BreakCase& c : break_cases()) {
    SCOPED_TRACE(c.name);
    auto compiled = compile(c.fn, {.backend = "inductor"});
    for (uint64_t i = 0; i < 6; ++i) {
      Ts in = c.seeded(kFloat32, i);
      expect_like_cpu(compiled(to_device(in, kCUDA)), c.fn(in), "call " + std::to_string(i));
    }
    EXPECT_GE(compiled.stats().graph_breaks, 1);
    EXPECT_LE(compiled.stats().compiles, c.max_compiles) << compiled.stats().str();
    EXPECT_GE(compiled.stats().kernels_per_call, 2);
  }
}

// Every break case under eager (which captures nothing: the function runs as written) and aot_eager (segments of
// eager ops), in float16.
TEST(CudaCorpus, GraphBreaksUnderEagerAndAotEagerMatchCpu) {
  for (const BreakCase& c : break_cases())
    for (const char* backend : {"eager", "aot_eager"}) {
      SCOPED_TRACE(c.name + " " + backend);
      auto compiled = compile(c.fn, {.backend = backend});
      for (uint64_t i = 0; i < 4; ++i) {
        Ts in = c.seeded(kFloat16, i);
        expect_like_cpu(compiled(to_device(in, kCUDA)), c.fn(in), "call " + std::to_string(i));
      }
      if (std::string(backend) == "aot_eager") EXPECT_GE(compiled.stats().graph_breaks, 1);
    }
}

// ---- guards ----

// The same function called with CPU then CUDA tensors recompiles (the device is guarded), as does a new dtype on
// the device; each entry serves its own calls afterwards.
TEST(CudaCorpus, DeviceAndDtypeChangesRecompile) {
  auto f = [](const Tensor& a, const Tensor& b) { return a * b + 1; };
  auto c = compile(f, {.backend = "inductor"});
  Tensor x = testing::random({4, 5}, kFloat32, 1), y = testing::random({4, 5}, kFloat32, 2);
  EXPECT_TRUE(testing::close(c(x, y), f(x, y)));
  expect_like_cpu({c(x.to(kCUDA), y.to(kCUDA))}, {f(x, y)}, "float32 on cuda");
  EXPECT_EQ(c.stats().compiles, 2);
  EXPECT_NE(c.stats().recompile_reasons.back().reason.find("device was cpu, now cuda"), std::string::npos)
      << c.stats().recompile_reasons.back().reason;
  Tensor hx = x.to(kBFloat16), hy = y.to(kBFloat16);
  expect_like_cpu({c(hx.to(kCUDA), hy.to(kCUDA))}, {f(hx, hy)}, "bfloat16 on cuda");
  EXPECT_EQ(c.stats().compiles, 3);
  EXPECT_NE(c.stats().recompile_reasons.back().reason.find("dtype was float32, now bfloat16"), std::string::npos)
      << c.stats().recompile_reasons.back().reason;
  EXPECT_FALSE(c(x, y).is_cuda());
  EXPECT_TRUE(c(x.to(kCUDA), y.to(kCUDA)).is_cuda());
  EXPECT_EQ(c.stats().compiles, 3);
}

}  // namespace
}  // namespace sinter::corpus
