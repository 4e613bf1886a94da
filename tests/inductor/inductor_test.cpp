// End-to-end tests of the inductor backend on the CPU: each function runs eagerly and compiled, results are
// compared (float32 relative error <= 1e-5, bf16 <= 1e-2), and the kernel counts the fusion promises are checked.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>

#include "backends/backends.h"
#include "codegen/cpp/cpp_codegen.h"
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

TEST(Inductor, PointwiseChainIsOneKernel) {
  Tensor x = random({1000, 37});
  auto f = [](const Tensor& x) {
    Tensor y = x;
    for (int i = 0; i < 10; ++i) y = (i % 2 ? sigmoid(y) : y * 1.1 + 0.1);
    return y;
  };
  EXPECT_EQ(check(f, x), 1);
}

TEST(Inductor, WorkloadPointwise) {
  Tensor x = random({100003});
  auto f = [](const Tensor& x) { return sigmoid(x * 1.5 + 0.5) * tanh(x) + relu(x); };
  EXPECT_EQ(check(f, x), 1);
}

TEST(Inductor, SoftmaxIsOneKernel) {
  Tensor x = random({64, 1000});
  EXPECT_EQ(check([](const Tensor& x) { return softmax(x * 0.125, -1); }, x), 1);
}

TEST(Inductor, LayerNormGeluIsOneKernel) {
  Tensor x = random({64, 256}), r = random({64, 256}, kFloat32, 1), w = random({256}, kFloat32, 2),
         b = random({256}, kFloat32, 3);
  auto f = [](const Tensor& x, const Tensor& r, const Tensor& w, const Tensor& b) {
    return gelu(layer_norm(x + r, {256}, w, b));
  };
  EXPECT_EQ(check(f, x, r, w, b), 1);
}

TEST(Inductor, LayerNormWithSizeOneDimsIsOneKernel) {
  // Size-1 dims (batch 1) must index the row statistics the same way when they are stored and loaded.
  Tensor x = random({1, 48, 96}), w = random({96}, kFloat32, 2), b = random({96}, kFloat32, 3);
  EXPECT_EQ(check([](const Tensor& x, const Tensor& w, const Tensor& b) { return layer_norm(x, {96}, w, b); }, x, w, b),
            1);
}

TEST(Inductor, ResidualLayerNormIsTheGemmsRowEpilogue) {
  Tensor x = random({64, 96}), w = random({96, 96}, kFloat32, 1), b = random({96}, kFloat32, 2),
         g = random({96}, kFloat32, 3);
  auto f = [](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& g) {
    return layer_norm(x + linear(x, w, b), {96}, g, b);
  };
  EXPECT_EQ(check(f, x, w, b, g), 1);
}

TEST(Inductor, ReorderingEpilogueFusesIntoItsGemm) {
  // qkv projection -> heads split -> permute -> unbind: the copy that materialises the permuted heads walks the
  // GEMM's elements in the GEMM's own order, so it runs as the GEMM's epilogue.
  Tensor x = random({2, 16, 64}), w = random({192, 64}, kFloat32, 1), b = random({192}, kFloat32, 2);
  auto f = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    std::vector<Tensor> qkv = linear(x, w, b).view({2, 16, 3, 4, 16}).permute({2, 0, 3, 1, 4}).unbind(0);
    return matmul(qkv[0], qkv[1].transpose(-2, -1)).sum(DimList{-1}, true) * qkv[2];
  };
  EXPECT_LE(check(f, x, w, b), 4);  // GEMM(+epilogue), bmm, sum*v (and at most one copy)
}

TEST(Inductor, MlpIsTwoGemmKernels) {
  Tensor x = random({64, 128}), w1 = random({512, 128}, kFloat32, 1), b1 = random({512}, kFloat32, 2),
         w2 = random({128, 512}, kFloat32, 3), b2 = random({128}, kFloat32, 4);
  auto f = [](const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2) {
    return linear(gelu(linear(x, w1, b1)), w2, b2);
  };
  EXPECT_EQ(check(f, x, w1, b1, w2, b2), 2);
}

// A channels-last float32 conv runs as one implicit GEMM with its element-wise consumers (bias, batch-norm
// affine, residual, relu) applied to each finished tile: conv + bn + relu, then conv + bn + residual + relu, is
// two kernels. Padding, stride and a 1x1 conv take the same path; a contiguous (NCHW) conv is not fused.
TEST(Inductor, ConvEpiloguesFuseIntoTheImplicitGemm) {
  Tensor x = random({2, 16, 9, 11}).contiguous(MemoryFormat::kChannelsLast);
  Tensor w1 = random({24, 16, 3, 3}, kFloat32, 1), w2 = random({24, 24, 3, 3}, kFloat32, 2);
  Tensor b1 = random({24}, kFloat32, 3), s = random({24}, kFloat32, 4), t = random({24}, kFloat32, 5);
  Tensor wr = random({24, 16, 1, 1}, kFloat32, 6);
  auto block = [](const Tensor& x, const Tensor& w1, const Tensor& w2, const Tensor& b1, const Tensor& s,
                  const Tensor& t, const Tensor& wr) {
    Tensor sc = s.view({1, 24, 1, 1}), sh = t.view({1, 24, 1, 1});
    Tensor h = relu(conv2d(x, w1, b1, {1, 1}, {1, 1}) * sc + sh);
    Tensor y = conv2d(h, w2, {}, {1, 1}, {1, 1});
    Tensor shortcut = conv2d(x, wr);  // between y's conv and its batch norm: y's conv moves down past it
    return relu(y * sc + sh + shortcut);
  };
  EXPECT_EQ(check(block, x, w1, w2, b1, s, t, wr), 3);  // three convs, every element-wise op in an epilogue
  auto strided = [](const Tensor& x, const Tensor& w1, const Tensor& b1) {
    return sigmoid(conv2d(x, w1, b1, {2, 2}, {0, 1}, {1, 2}));
  };
  EXPECT_EQ(check(strided, x, w1, b1), 1);
  auto nchw = [](const Tensor& x, const Tensor& w1) { return relu(conv2d(x, w1, {}, {1, 1}, {1, 1})); };
  EXPECT_EQ(check(nchw, x.contiguous(), w1), 2);  // the conv (an ordinary extern), then the relu
}

// A GEMM whose consumer comes after an unrelated kernel moves down next to it, and the consumer becomes its
// epilogue: the column sums of z, then the GEMM with relu(y + s) applied per tile.
TEST(Inductor, GemmMovesNextToItsEpilogue) {
  Tensor x = random({64, 32}), w = random({32, 48}, kFloat32, 1), z = random({80, 48}, kFloat32, 2);
  auto f = [](const Tensor& x, const Tensor& w, const Tensor& z) {
    Tensor y = matmul(x, w);
    Tensor s = exp(z).sum(DimList{0});
    return relu(y + s);
  };
  EXPECT_EQ(check(f, x, w, z), 2);
}

TEST(Inductor, SmallOpsAtMostTenKernels) {
  Tensor x = random({64, 64}), w = random({64, 64}, kFloat32, 1);
  auto f = [](Tensor x, const Tensor& w) {
    for (int i = 0; i < 10; ++i) {
      x = relu(x * 0.9 + 0.1);
      x = x - x.mean(-1, true);
      x = tanh(x) + w;
    }
    return x;
  };
  EXPECT_LE(check(f, x, w), 10);
}

TEST(Inductor, ReductionsOverAnyDims) {
  Tensor x = random({6, 7, 8});
  EXPECT_GE(check([](const Tensor& x) { return x.sum(); }, x), 1);
  check([](const Tensor& x) { return sum(x, DimList{0}); }, x);
  check([](const Tensor& x) { return sum(x, DimList{1}, true); }, x);
  check([](const Tensor& x) { return amax(x, DimList{0, 2}); }, x);
  check([](const Tensor& x) { return amin(x, DimList{2}, true) + x; }, x);
  check([](const Tensor& x) { return mean(x, DimList{-1}) * 2; }, x);
}

TEST(Inductor, ViewsBecomeIndexing) {
  Tensor x = random({4, 6, 8});
  check([](const Tensor& x) { return (x.permute({2, 0, 1}) * 2).contiguous(); }, x);
  check([](const Tensor& x) { return x.transpose(0, 2) + 1; }, x);
  check([](const Tensor& x) { return x.view({4, 2, 3, 8}).sum(DimList{2}); }, x);
  check([](const Tensor& x) { return x.select(1, 2) * x.narrow(1, 1, 1).squeeze(1); }, x);
  check([](const Tensor& x) { return exp(x).unsqueeze(0).expand({3, 4, 6, 8}) + 1; }, x);
}

// A view of a view of a computed value: the inner view (select at storage offset 45) is stored, and the outer one
// (narrow at offset 55) must index that buffer from its own start (offset 10), not from the graph's storage.
TEST(Inductor, ViewOfAStoredViewIndexesFromItsStart) {
  Tensor x = random({2, 3, 3}), w = random({15, 3}), b = random({15}), h = random({3, 5});
  auto f = [](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& h) {
    Tensor xw = add(matmul(x, w.t()), b);
    return mul(narrow(select(xw, 0, 1), -1, 10, 5), h) + sigmoid(narrow(select(xw, 0, 0), -1, 5, 5));
  };
  check(f, x, w, b, h);
}

TEST(Inductor, NonContiguousAndBroadcastInputs) {
  Tensor x = testing::non_contiguous(random({16, 9}));
  Tensor y = random({9});
  check([](const Tensor& x, const Tensor& y) { return x * y - y.sigmoid(); }, x, y);
}

TEST(Inductor, BFloat16) {
  Tensor x = random({32, 64}, kBFloat16), w = random({64}, kBFloat16, 1);
  check([](const Tensor& x, const Tensor& w) { return gelu(x * w + 1.5); }, x, w);
  check([](const Tensor& x) { return softmax(x, -1); }, x);
}

TEST(Inductor, IntegerAndBoolOps) {
  Tensor a = arange(0, 24, 1, TensorOptions(kInt64)).view({4, 6});
  check([](const Tensor& a) { return remainder(a * 3 + 1, 5); }, a);
  check([](const Tensor& a) { return where(a > 7, a, a * 2); }, a);
  check([](const Tensor& a) { return a.sum(); }, a);
}

TEST(Inductor, ExternsRunEagerKernels) {
  Tensor x = random({2, 3, 8, 8}), w = random({4, 3, 3, 3}, kFloat32, 1);
  check([](const Tensor& x, const Tensor& w) { return relu(conv2d(x, w) + 1); }, x, w);
  check([](const Tensor& x) { return cat({x * 2, x + 1}, 1); }, x);
}

TEST(Inductor, SymbolicSizesServeEveryShape) {
  Probe probe;
  auto f = [](const Tensor& x) { return softmax(x * 2, -1) + x.sum(DimList{1}, true); };
  auto c = compile(f, {.backend = "inductor_probe", .dynamic = Dynamic::kAlways});
  for (int64_t n : {3, 17, 64, 5}) {
    Tensor x = random({n, n + 3});
    EXPECT_CLOSE(c(x), f(x)) << n;
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
