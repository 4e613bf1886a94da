// End-to-end tests of the inductor backend on the CPU: each function runs eagerly and compiled, results are
// compared (float32 relative error <= 1e-5, bf16 <= 1e-2), and the kernel counts the fusion promises are checked.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>

#include "backends/backends.h"
#include "codegen/cpp/cpp_codegen.h"
#include "function_cases.h"
#include "inductor/lower.h"
#include "inductor/scheduler.h"
#include "sinter/compile.h"
#include "sinter/nn.h"
#include "sinter/ops.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;

// A backend that compiles with the inductor and remembers the launches of the last graph it compiled.
struct Probe {
  std::shared_ptr<int> launches = std::make_shared<int>(-1);
  std::shared_ptr<int> graphs = std::make_shared<int>(0);
  Probe() {
    auto l = launches;
    auto g = graphs;
    register_backend("inductor_probe", [l, g](const Graph& graph, const std::vector<Tensor>&) -> CompiledGraph {
      auto program = backends::compile_for_cpu(graph, CompileContext::for_graph(graph));
      *l = program->launches();
      ++*g;
      return [program](const std::vector<Tensor>& inputs) { return program->run(inputs); };
    }, {.replace = true});
  }
};

template <class Fn, class... A>
std::vector<Tensor> as_list(Fn& f, const A&... a) {
  auto r = f(a...);
  if constexpr (std::is_same_v<decltype(r), Tensor>) return {r};
  else return r;
}

// Runs fn eagerly and compiled; returns the launches of the compiled graph.
template <class Fn, class... A>
int check(Fn fn, const A&... args) {
  Probe probe;
  auto compiled = compile(fn, {.backend = "inductor_probe"});
  std::vector<Tensor> want = as_list(fn, args...);
  std::vector<Tensor> got = as_list(compiled, args...);
  EXPECT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    EXPECT_EQ(want[i].sizes(), got[i].sizes()) << "output " << i;
    EXPECT_EQ(want[i].dtype(), got[i].dtype()) << "output " << i;
    EXPECT_CLOSE(got[i], want[i]) << "output " << i;
  }
  return *probe.launches;
}

// Compiles the corpus case `name` (tests/function_cases.h) in its dtype, compares with eager, and checks the
// kernel count the case promises; returns the launches.
int check_case(const std::string& name) {
  corpus::FunctionCase c = corpus::named(corpus::inductor_cases(), name);
  SCOPED_TRACE(name);
  corpus::Ts in = c.inputs(c.dtype);
  int launches = check(c.fn, in);
  if (c.kernels >= 0 && c.at_most) EXPECT_LE(launches, c.kernels);
  else if (c.kernels >= 0) EXPECT_EQ(launches, c.kernels);
  return launches;
}

TEST(Inductor, PointwiseChainIsOneKernel) { check_case("pointwise chain"); }

TEST(Inductor, WorkloadPointwise) { check_case("workload pointwise"); }

TEST(Inductor, SoftmaxIsOneKernel) { check_case("softmax"); }

TEST(Inductor, LayerNormGeluIsOneKernel) { check_case("layer_norm gelu"); }

TEST(Inductor, LayerNormWithSizeOneDimsIsOneKernel) { check_case("layer_norm with size-1 dims"); }

TEST(Inductor, ResidualLayerNormIsTheGemmsRowEpilogue) { check_case("residual layer_norm of a linear"); }

TEST(Inductor, ReorderingEpilogueFusesIntoItsGemm) { check_case("qkv heads of a linear"); }

TEST(Inductor, MlpIsTwoGemmKernels) { check_case("mlp"); }

// A channels-last float32 conv runs as one implicit GEMM with its element-wise consumers (bias, batch-norm
// affine, residual, relu) applied to each finished tile: conv + bn + relu, then conv + bn + residual + relu, is
// two kernels. Padding, stride and a 1x1 conv take the same path; a contiguous (NCHW) conv is not fused.
TEST(Inductor, ConvEpiloguesFuseIntoTheImplicitGemm) {
  check_case("conv block");
  check_case("strided conv");
  check_case("nchw conv");
}

TEST(Inductor, DepthwiseConvEpiloguesFuse) {
  check_case("depthwise conv");
  check_case("strided depthwise conv");
}

// A GEMM whose consumer comes after an unrelated kernel moves down next to it, and the consumer becomes its
// epilogue: the column sums of z, then the GEMM with relu(y + s) applied per tile.
TEST(Inductor, GemmMovesNextToItsEpilogue) { check_case("gemm beside a reduction"); }

TEST(Inductor, SmallOpsAtMostTenKernels) { check_case("small ops"); }

TEST(Inductor, ReductionsOverAnyDims) {
  EXPECT_GE(check_case("sum all"), 1);
  for (const char* name : {"sum dim 0", "sum dim 1 keepdim", "amax dims 0,2", "amin keepdim + x", "mean dim -1"})
    check_case(name);
}

TEST(Inductor, ViewsBecomeIndexing) {
  for (const char* name : {"permute contiguous", "transpose", "view split", "select * narrow", "unsqueeze expand"})
    check_case(name);
}

TEST(Inductor, ViewOfAStoredViewIndexesFromItsStart) { check_case("view of a stored view"); }

TEST(Inductor, NonContiguousAndBroadcastInputs) { check_case("non-contiguous and broadcast inputs"); }

TEST(Inductor, BFloat16) {
  check_case("bf16 gelu");
  check_case("bf16 softmax");
}

TEST(Inductor, IntegerAndBoolOps) {
  for (const char* name : {"int remainder", "int where", "int sum"}) check_case(name);
}

TEST(Inductor, ExternsRunEagerKernels) {
  check_case("conv extern");
  check_case("cat extern");
}

TEST(Inductor, SymbolicSizesServeEveryShape) {
  Probe probe;
  corpus::SizedCase sc = corpus::named(corpus::dynamic_cases(), "softmax + row sums");
  auto c = compile(sc.fn, {.backend = "inductor_probe", .dynamic = Dynamic::kAlways});
  for (int64_t n : sc.sizes) {
    corpus::Ts x = sc.sized(kFloat32, n);
    EXPECT_CLOSE(c(x)[0], sc.fn(x)[0]) << n;
  }
  EXPECT_EQ(*probe.graphs, 1);
}

}  // namespace
}  // namespace sinter

namespace sinter {
namespace {

std::string generated_source(const std::string& text) {
  Graph g = parse_graph(text);
  inductor::LoopProgram p = inductor::lower(g);
  inductor::Schedule s = inductor::schedule(p);
  inductor::ProgramPlan plan = inductor::plan_kernels(p, s);
  codegen::cpp::GeneratedCode code = codegen::cpp::generate(p, plan, 1);
  return code.units.at(0);
}

TEST(InductorCodegen, StaticSizesUse32BitIndicesSymbolicOnes64) {
  std::string fixed = generated_source(
      "graph(%x: f32[64, 100]):\n  %1 = exp(%x)  # f32[64, 100]\n  return (%1)\n");
  EXPECT_NE(fixed.find("every index fits in 32 bits"), std::string::npos) << fixed;
  EXPECT_NE(fixed.find("const sn_i32 begin_"), std::string::npos);
  std::string dynamic = generated_source(
      "graph(%x: f32[s0, 100]):\n  %1 = exp(%x)  # f32[s0, 100]\n  return (%1)\n");
  EXPECT_EQ(dynamic.find("every index fits in 32 bits"), std::string::npos);
  EXPECT_NE(dynamic.find("const sn_i64 begin_"), std::string::npos) << dynamic;
  // Nested index constants are 32-bit too (no LL anywhere in the kernel of a 32-bit transposed read).
  std::string transposed = generated_source(
      "graph(%x: f32[64, 100], %y: f32[100, 64]):\n"
      "  %1 = permute(%x, [1, 0])  # f32[100, 64]{1, 100}\n"
      "  %2 = add.Tensor(%y, %1)  # f32[100, 64]\n"
      "  return (%2)\n");
  size_t kernel = transposed.find("extern \"C\"");
  ASSERT_NE(kernel, std::string::npos);
  EXPECT_NE(transposed.find("every index fits in 32 bits", kernel), std::string::npos) << transposed;
  EXPECT_EQ(transposed.find("LL", kernel), std::string::npos) << transposed.substr(kernel);
}

// Softmax's exp(x - max) is computed once: the sum's loop also stores it into the output, which the last loop
// scales by one reciprocal of the sum per row. A bfloat16 output cannot hold it exactly, so there the exp is
// computed again.
TEST(InductorCodegen, SoftmaxComputesEachExpOnce) {
  auto softmax_graph = [](const char* out) {
    return fmt::format(
        "graph(%x: f32[8, 1001]):\n"
        "  %1 = amax(%x, [1], True)  # f32[8, 1]\n"
        "  %2 = sub.Tensor(%x, %1)  # f32[8, 1001]\n"
        "  %3 = exp(%2)  # f32[8, 1001]\n"
        "  %4 = sum.dim_IntList(%3, [1], True)  # f32[8, 1]\n"
        "  %5 = div.Tensor(%3, %4)  # f32[8, 1001]\n"
        "  %6 = _to_copy(%5, dtype={})  # {}[8, 1001]\n"
        "  return (%6)\n",
        out, std::string(out) == "torch.bfloat16" ? "bf16" : "f32");
  };
  std::string f32 = generated_source(softmax_graph("torch.float32"));
  EXPECT_NE(f32.find("kept for"), std::string::npos) << f32;
  size_t exps = 0, kernels = f32.find("end of prelude");
  ASSERT_NE(kernels, std::string::npos);
  for (size_t at = f32.find("sn_exp(", kernels); at != std::string::npos; at = f32.find("sn_exp(", at + 1)) ++exps;
  EXPECT_EQ(exps, 2u) << f32;  // the sum's vector body and its scalar tail
  EXPECT_NE(f32.find(" * (1.0f / r"), std::string::npos) << f32;  // the row sum, in a register
  std::string bf16 = generated_source(softmax_graph("torch.bfloat16"));
  EXPECT_EQ(bf16.find("kept for"), std::string::npos) << bf16;
}

// The same softmax end to end, with rows whose length leaves a scalar tail, a NaN and an infinity in some rows.
TEST(Inductor, SoftmaxWithKeptExpsMatchesEager) {
  Tensor x = random({37, 1001}) * 3;
  x.select(0, 3).select(0, 500).fill_(std::numeric_limits<float>::quiet_NaN());
  x.select(0, 5).select(0, 7).fill_(std::numeric_limits<float>::infinity());
  x.select(0, 6).fill_(-std::numeric_limits<float>::infinity());
  auto f = [](const Tensor& x) { return softmax(x * 0.5, -1); };
  Tensor want = f(x), got = compile(f, {.backend = "inductor"})(x);
  for (int64_t r : {0, 1, 2, 4, 36}) EXPECT_CLOSE(got.select(0, r), want.select(0, r)) << r;
  for (int64_t r : {3, 5, 6}) {
    EXPECT_EQ(isnan(got.select(0, r)).sum().item<int64_t>(), isnan(want.select(0, r)).sum().item<int64_t>()) << r;
  }
}

}  // namespace
}  // namespace sinter
