// CUDA graphs: Mode::kReduceOverhead on the inductor and the "cudagraphs" backend (backends/cuda_graphs.cpp over
// tensor/cuda_graph.h). On the simulated device a capture records the launch list and a replay runs it, so
// these tests check in CI what a replay computes: new data in every call, outputs that outlive later replays,
// parameters read in place, one graph per input layout with the least recently used dropped, error flags
// checked after a replay, and graphs that cannot be captured running without CUDA graphs.
#include <gtest/gtest.h>

#include "backends/backends.h"
#include "scoped_env.h"
#include "sinter/cuda.h"
#include "sinter/nn.h"
#include "sinter/ops.h"
#include "support/log.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;

// SINTER_LOGS for a test's scope, with stderr captured.
class Logs {
 public:
  explicit Logs(const char* channels) : env_("SINTER_LOGS", channels) {
    reload_log_settings();
    ::testing::internal::CaptureStderr();
  }
  ~Logs() {
    if (!taken_) ::testing::internal::GetCapturedStderr();
  }
  std::string take() {
    taken_ = true;
    std::string text = ::testing::internal::GetCapturedStderr();
    return text;
  }
  Logs(const Logs&) = delete;
  Logs& operator=(const Logs&) = delete;

 private:
  testing::ScopedEnv env_;
  bool taken_ = false;
};

struct ReloadLogsAfter {
  ~ReloadLogsAfter() { reload_log_settings(); }
};

backends::CudaGraphCounts counts() { return backends::cuda_graph_counts(); }

// Three linear layers: parameters the graph reads in place, and more launches a call (GEMMs and their epilogues)
// than a replay adds copies, so reduce-overhead captures it.
struct Stack : nn::Module {
  nn::Linear fc1{16, 32}, fc2{32, 32}, fc3{32, 8};
  Stack() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_module("fc3", fc3);
  }
  Tensor forward(const Tensor& x) override { return fc3(relu(fc2(gelu(fc1(x))) * 0.5)); }
};

Tensor mlp(const Tensor& x, const Tensor& w, const Tensor& b) { return relu(matmul(x, w) + b) * 2.5 - 1; }

// Every call has new data; the first call runs as compiled, the second captures, the rest replay; outputs of
// earlier calls are not overwritten by later replays.
TEST(CudaGraphs, ReduceOverheadReplaysWithNewData) {
  NoGradGuard no_grad;  // inference (with grad the graph would also return what the backward keeps)
  Stack cpu, gpu;
  gpu.load_state_dict(cpu.state_dict());
  gpu.to(kCUDA);
  auto f = compile(gpu, {.mode = Mode::kReduceOverhead});
  backends::CudaGraphCounts before = counts();
  std::vector<Tensor> xs, outs;
  for (int i = 0; i < 5; ++i) {
    xs.push_back(random({8, 16}, kFloat32, 10 + i));
    outs.push_back(f(xs.back().to(kCUDA)));
    ASSERT_TRUE(outs.back().is_cuda());
  }
  for (int i = 0; i < 5; ++i) EXPECT_CLOSE(outs[i].cpu(), cpu(xs[i])) << i;
  EXPECT_EQ(counts().captures - before.captures, 1);
  EXPECT_EQ(counts().replays - before.replays, 4);
  EXPECT_EQ(f.stats().compiles, 1);
}

// The cudagraphs backend captures aot_eager's eager CUDA kernels (the scalar operands become constants of the
// graph), the matrix product included; tensors passed as arguments are copied in at each call.
TEST(CudaGraphs, CudagraphsBackendReplaysWithNewData) {
  NoGradGuard no_grad;  // inference (with grad the graph would also return what the backward keeps)
  auto f = compile(mlp, {.backend = "cudagraphs"});
  Tensor w = random({16, 24}, kFloat32, 1), b = random({24}, kFloat32, 2);
  backends::CudaGraphCounts before = counts();
  std::vector<Tensor> xs, outs;
  for (int i = 0; i < 5; ++i) {
    xs.push_back(random({8, 16}, kFloat32, 10 + i));
    outs.push_back(f(xs.back().to(kCUDA), w.to(kCUDA), b.to(kCUDA)));
  }
  for (int i = 0; i < 5; ++i) EXPECT_CLOSE(outs[i].cpu(), mlp(xs[i], w, b)) << i;
  EXPECT_EQ(counts().captures - before.captures, 1);
  EXPECT_EQ(counts().replays - before.replays, 4);
}

// An input refilled in place between calls is read where it is (no copy); inputs at new addresses every call
// are copied into the graph's buffers. Either way each call sees its own data.
TEST(CudaGraphs, InputsAtTheSameAddressAreReadInPlace) {
  NoGradGuard no_grad;  // inference (with grad the graph would also return what the backward keeps)
  ReloadLogsAfter reload;
  Stack cpu, gpu;
  gpu.load_state_dict(cpu.state_dict());
  gpu.to(kCUDA);
  auto f = compile(gpu, {.mode = Mode::kReduceOverhead});
  Logs logs("cudagraphs");
  Tensor buffer = empty({4, 16}, TensorOptions(kFloat32).device(kCUDA));
  for (int i = 0; i < 4; ++i) {
    Tensor x = random({4, 16}, kFloat32, 50 + i);
    buffer.copy_(x);
    EXPECT_CLOSE(f(buffer).cpu(), cpu(x)) << i;
  }
  std::vector<Tensor> kept;  // every input stays alive: each call's is somewhere new
  for (int i = 0; i < 4; ++i) {
    Tensor x = random({5, 16}, kFloat32, 60 + i);
    kept.push_back(x.to(kCUDA));
    EXPECT_CLOSE(f(kept.back()).cpu(), cpu(x)) << i;
  }
  std::string text = logs.take();
  EXPECT_NE(text.find("captured a CUDA graph for inputs (float32[4, 16] and 6 static) read where they are"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("captured a CUDA graph for inputs (float32[5, 16] and 6 static) copied in"),
            std::string::npos)
      << text;
}

// Parameters are read where they are: a weight changed in place between calls is seen by the next replay.
TEST(CudaGraphs, ParametersAreReadInPlace) {
  NoGradGuard no_grad;  // inference (with grad the graph would also return what the backward keeps)
  Stack cpu, gpu;
  gpu.load_state_dict(cpu.state_dict());
  gpu.to(kCUDA);
  auto f = compile(gpu, {.mode = Mode::kReduceOverhead});
  Tensor x = random({3, 16}, kFloat32, 3);
  for (int i = 0; i < 3; ++i) f(x.to(kCUDA));  // run, capture, replay
  backends::CudaGraphCounts before = counts();
  gpu.fc1.weight.mul_(2.0);
  cpu.fc1.weight.mul_(2.0);
  Tensor out = f(x.to(kCUDA));
  EXPECT_EQ(counts().replays - before.replays, 1);
  EXPECT_CLOSE(out.cpu(), cpu(x));
}

// Under a symbolic size every layout has its own graph; beyond 16 the least recently used one is dropped
// (logged), and results stay right throughout.
TEST(CudaGraphs, OneGraphPerLayoutLeastRecentlyUsedDropped) {
  NoGradGuard no_grad;  // inference (with grad the graph would also return what the backward keeps)
  ReloadLogsAfter reload;
  Stack cpu, gpu;
  gpu.load_state_dict(cpu.state_dict());
  gpu.to(kCUDA);
  auto f = compile(gpu, {.mode = Mode::kReduceOverhead, .dynamic = Dynamic::kAlways});
  Logs logs("cudagraphs");
  backends::CudaGraphCounts before = counts();
  for (int64_t n = 2; n < 20; ++n) {
    Tensor x = random({n, 16}, kFloat32, n);
    for (int call = 0; call < 3; ++call) EXPECT_CLOSE(f(x.to(kCUDA)).cpu(), cpu(x)) << n;
  }
  std::string text = logs.take();
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(counts().captures - before.captures, 18);
  EXPECT_EQ(counts().replays - before.replays, 36);
  EXPECT_NE(text.find("16 CUDA graphs kept, the least recently used one (inputs (float32[2, 16]"), std::string::npos)
      << text;
}

// An output that is an input is the caller's tensor; two outputs that share memory still do after a replay.
TEST(CudaGraphs, OutputsThatAliasStayAliased) {
  NoGradGuard no_grad;  // inference (with grad the graph would also return what the backward keeps)
  auto f = compile(
      [](const Tensor& x) {
        Tensor y = x * 2;
        return std::vector<Tensor>{x, y, y.view({-1})};
      },
      {.backend = "cudagraphs"});
  backends::CudaGraphCounts before = counts();
  for (int i = 0; i < 3; ++i) {
    Tensor x = random({4, 5}, kFloat32, 30 + i).to(kCUDA);
    std::vector<Tensor> out = f(x);
    EXPECT_TRUE(out[0].is_same(x));
    EXPECT_CLOSE(out[1].cpu(), x.cpu() * 2);
    out[1].fill_(7.0);
    EXPECT_CLOSE(out[2].cpu(), full({20}, 7.0, kFloat32));
  }
  EXPECT_EQ(counts().replays - before.replays, 2);
}

// An integer division by zero in a replayed kernel raises, as it does without graphs.
TEST(CudaGraphs, ErrorFlagsAreCheckedAfterAReplay) {
  auto f = compile([](const Tensor& x, const Tensor& y) { return floor_divide(x, y) + 1; }, {.backend = "cudagraphs"});
  Tensor a = full({4}, 7, kInt64).to(kCUDA);
  backends::CudaGraphCounts before = counts();
  for (int i = 0; i < 3; ++i) EXPECT_CLOSE(f(a, full({4}, 2, kInt64).to(kCUDA)).cpu(), full({4}, 4, kInt64));
  EXPECT_EQ(counts().replays - before.replays, 2);
  EXPECT_ERROR(f(a, zeros({4}, kInt64).to(kCUDA)), "ZeroDivisionError");
  EXPECT_EQ(counts().replays - before.replays, 3);
}

// A graph with an op that runs its CPU kernel (a scan) cannot be captured: it runs without CUDA graphs, right,
// and says why.
TEST(CudaGraphs, WhatCannotBeCapturedRunsWithoutGraphs) {
  ReloadLogsAfter reload;
  auto f = compile([](const Tensor& x) { return cumsum(x * 2, 1) + 1; }, {.backend = "cudagraphs"});
  Logs logs("cudagraphs");
  backends::CudaGraphCounts before = counts();
  for (int i = 0; i < 4; ++i) {
    Tensor x = random({3, 9}, kFloat32, 40 + i);
    EXPECT_CLOSE(f(x.to(kCUDA)).cpu(), cumsum(x * 2, 1) + 1);
  }
  std::string text = logs.take();
  EXPECT_EQ(counts().captures - before.captures, 0);
  EXPECT_EQ(counts().replays - before.replays, 0);
  EXPECT_NE(text.find("runs without CUDA graphs: cumsum"), std::string::npos) << text;
  EXPECT_NE(text.find("cannot be part of a CUDA graph"), std::string::npos) << text;
}

// A compiled graph of one kernel gains nothing from a CUDA graph (a replay would add the input and output
// copies): reduce-overhead runs it as compiled and says so.
TEST(CudaGraphs, OneKernelGraphsRunWithoutGraphs) {
  ReloadLogsAfter reload;
  auto f = compile([](const Tensor& x) { return softmax(x * 3, -1) + 1; }, {.mode = Mode::kReduceOverhead});
  Logs logs("cudagraphs");
  backends::CudaGraphCounts before = counts();
  Tensor x = random({5, 7}, kFloat32, 4);
  for (int i = 0; i < 3; ++i) EXPECT_CLOSE(f(x.to(kCUDA)).cpu(), softmax(x * 3, -1) + 1);
  std::string text = logs.take();
  EXPECT_EQ(counts().captures - before.captures, 0);
  EXPECT_NE(text.find("it launches 1 kernel(s) a call, and a replay would launch the graph and 2 copies"),
            std::string::npos)
      << text;
}

// On CPU tensors reduce-overhead and the cudagraphs backend run as the default mode and aot_eager.
TEST(CudaGraphs, CpuGraphsRunWithoutGraphs) {
  Tensor w = random({16, 24}, kFloat32, 1), b = random({24}, kFloat32, 2), x = random({8, 16}, kFloat32, 3);
  for (const char* backend : {"inductor", "cudagraphs"}) {
    auto f = compile(mlp, {.backend = backend, .mode = Mode::kReduceOverhead});
    for (int i = 0; i < 3; ++i) EXPECT_CLOSE(f(x, w, b), mlp(x, w, b));
  }
}

}  // namespace
}  // namespace sinter
