// The compile context: capture builds one per graph and hands it to the backend (options, target, ShapeEnv);
// freeze reaches the inductor's passes through it; the target's capabilities decide what the scheduler may fuse
// into a library call, and a refusal names the capability.
#include <gtest/gtest.h>

#include <memory>

#include "inductor/lower.h"
#include "inductor/scheduler.h"
#include "passes/pipeline.h"
#include "sinter/compile.h"
#include "sinter/nn.h"
#include "scoped_env.h"
#include "support/log.h"
#include "testing.h"

namespace sinter {
namespace {

struct ConvBn : nn::Module {
  nn::Conv2d conv{3, 8, 3, 1, 1};
  nn::BatchNorm2d bn{8};
  ConvBn() {
    register_module("conv", conv);
    register_module("bn", bn);
  }
  Tensor forward(const Tensor& x) override { return relu(bn(conv(x))); }
};

TEST(CompileContext, FreezeFoldsConvBatchNormThroughCompile) {
  manual_seed(1);
  ConvBn m;
  // Running statistics other than the initial 0 and 1, so that the fold changes the weights.
  m.bn.running_mean.copy_(testing::random({8}, kFloat32, 2));
  m.bn.running_var.copy_(testing::random({8}, kFloat32, 3).abs() + 0.5);
  m.eval();
  // Channels-last, so that the conv extern takes element-wise epilogues.
  Tensor x = testing::random({2, 3, 10, 10}, kFloat32, 4).contiguous(kChannelsLast);
  Tensor want = m(x);
  auto frozen = compile(m, {.freeze = true});
  auto plain = compile(m);
  {
  testing::ScopedEnv logs("SINTER_LOGS", "passes");
  reload_log_settings();
  ::testing::internal::CaptureStderr();
  EXPECT_CLOSE(frozen(x), want);
  std::string frozen_log = ::testing::internal::GetCapturedStderr();
  ::testing::internal::CaptureStderr();
  EXPECT_CLOSE(plain(x), want);
  std::string plain_log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(frozen_log.find("applied fold_conv_batch_norm"), std::string::npos) << frozen_log;
  EXPECT_EQ(plain_log.find("applied fold_conv_batch_norm"), std::string::npos) << plain_log;
  }
  reload_log_settings();
  // Folded: one conv, with relu as its epilogue.
  EXPECT_EQ(frozen.stats().kernels_per_call, 1) << frozen.stats().str();
}

TEST(CompileContext, AContextBackendSeesOptionsTargetAndShapeEnv) {
  struct Seen {
    bool freeze = false;
    bool symbolic = false;
    TargetKind kind = TargetKind::kCuda;
    Mode mode = Mode::kDefault;
    int cores = 0;
  };
  auto seen = std::make_shared<Seen>();
  register_backend(
      "test_context",
      [seen](const Graph& g, const std::vector<Tensor>& examples, const CompileContext& ctx) -> CompiledGraph {
        seen->freeze = ctx.options.freeze;
        seen->symbolic = ctx.shape_env != nullptr;
        seen->kind = ctx.target.kind;
        seen->mode = ctx.options.mode;
        seen->cores = ctx.target.cores;
        return find_backend("aot_eager")(g, examples, ctx);
      },
      {.replace = true});
  auto f = [](const Tensor& x) { return x * 2 + 1; };
  auto c = compile(f, {.backend = "test_context", .mode = Mode::kMaxAutotune, .dynamic = Dynamic::kAlways,
                       .freeze = true});
  Tensor x = testing::random({5, 3}, kFloat32, 1);
  EXPECT_TENSOR_EQ(c(x), f(x));
  EXPECT_TRUE(seen->freeze);
  EXPECT_TRUE(seen->symbolic);
  EXPECT_EQ(seen->kind, TargetKind::kCpu);
  EXPECT_EQ(seen->mode, Mode::kMaxAutotune);
  EXPECT_EQ(seen->cores, get_num_threads());
  // The simple form (graph and examples) still registers, and find_backend's result calls either way.
  register_backend("test_simple", [](const Graph& g, const std::vector<Tensor>& examples) -> CompiledGraph {
    return find_backend("aot_eager")(g, examples);
  }, {.replace = true});
  EXPECT_TENSOR_EQ(compile(f, {.backend = "test_simple"})(x), f(x));
}

// CompileContext::training says whether the compiled module was in training mode (a guarded flag, so train()
// and eval() each get their own entry and context).
TEST(CompileContext, TrainingFollowsTheModulesMode) {
  auto seen = std::make_shared<std::vector<bool>>();
  register_backend(
      "test_training",
      [seen](const Graph& g, const std::vector<Tensor>& examples, const CompileContext& ctx) -> CompiledGraph {
        seen->push_back(ctx.training);
        return find_backend("aot_eager")(g, examples, ctx);
      },
      {.replace = true});
  nn::Linear lin(4, 3);
  auto c = compile(lin, {.backend = "test_training"});
  Tensor x = testing::random({2, 4}, kFloat32, 1);
  c(x);
  lin.eval();
  c(x);
  EXPECT_EQ(*seen, (std::vector<bool>{true, false}));
  auto f = compile([](const Tensor& t) { return t + 1; }, {.backend = "test_training"});
  f(x);
  EXPECT_FALSE(seen->back()) << "a plain function is not training";
}

// linear + relu: on the CPU target the relu runs as the GEMM's tile epilogue; a target whose GEMM takes only a
// menu of epilogues inside the library call (the CUDA description) refuses it and says which capability.
TEST(CompileContext, EpilogueFusionAsksTheTarget) {
  auto captured = std::make_shared<std::unique_ptr<Graph>>();
  register_backend(
      "test_capture_graph",
      [captured](const Graph& g, const std::vector<Tensor>& examples, const CompileContext& ctx) -> CompiledGraph {
        *captured = std::make_unique<Graph>(g.clone());
        return find_backend("aot_eager")(g, examples, ctx);
      },
      {.replace = true});
  auto f = [](const Tensor& x, const Tensor& w) { return relu(linear(x, w)); };
  Tensor x = testing::random({16, 32}, kFloat32, 1), w = testing::random({24, 32}, kFloat32, 2);
  compile(f, {.backend = "test_capture_graph"})(x, w);
  ASSERT_TRUE(*captured);
  Graph& g = **captured;
  passes::run_inductor_passes(g, passes::PassContext{});
  Target cpu = host_cpu_target(), gpu = cuda_target(90);
  inductor::LoopProgram program = inductor::lower(g, {.target = &cpu});
  inductor::Schedule on_cpu = inductor::schedule(program, cpu), on_gpu = inductor::schedule(program, gpu);
  EXPECT_EQ(on_cpu.launches(), 1);
  EXPECT_EQ(on_gpu.launches(), 2);
  std::string decisions;
  for (const std::string& d : on_gpu.decisions) decisions += d + "\n";
  EXPECT_NE(decisions.find("capability gemm.epilogue.tile"), std::string::npos) << decisions;
}

TEST(CompileContext, TargetsDescribeThemselves) {
  Target cpu = host_cpu_target();
  EXPECT_EQ(cpu.kind, TargetKind::kCpu);
  EXPECT_TRUE(cpu.runs_on(kCPU));
  EXPECT_FALSE(cpu.runs_on(kCUDA));
  EXPECT_TRUE(cpu.provides(ExternKind::kGemm, kFloat32));
  EXPECT_FALSE(cpu.provides(ExternKind::kGemm, kBFloat16));
  EXPECT_TRUE(cpu.accepts(ExternKind::kGemm, EpilogueShape::kRows));
  EXPECT_FALSE(cpu.accepts(ExternKind::kConv, EpilogueShape::kRows));
  Target gpu = cuda_target(90);
  EXPECT_EQ(gpu.warp_size, 32);
  EXPECT_TRUE(gpu.provides(ExternKind::kGemm, kBFloat16));
  EXPECT_TRUE(gpu.accepts(ExternKind::kGemm, EpilogueShape::kMenu));
  EXPECT_FALSE(gpu.accepts(ExternKind::kGemm, EpilogueShape::kRows));
  EXPECT_NE(gpu.str().find("menu: bias,relu,gelu,aux"), std::string::npos) << gpu.str();
  EXPECT_NE(cpu.str().find("extern gemm: dtypes float32; epilogues tile,rows"), std::string::npos) << cpu.str();
}

}  // namespace
}  // namespace sinter
