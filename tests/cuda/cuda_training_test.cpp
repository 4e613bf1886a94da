// Training on CUDA tensors (the simulated device in CI, the GPU when there is one): eager autograd through the CUDA
// ops, compile(model) with its backward compiled for the GPU, a whole AdamW step compiled, and bfloat16 autocast,
// each against the same model trained eagerly on the CPU.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sinter/amp.h"
#include "sinter/compile.h"
#include "sinter/cuda.h"
#include "sinter/nn.h"
#include "sinter/optim.h"
#include "testing.h"

namespace sinter {
namespace {

struct Mlp : nn::Module {
  nn::Linear fc1{8, 16}, fc2{16, 4};
  Mlp() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override { return fc2(gelu(fc1(x))); }
};

Tensor step(Mlp& m, optim::Optimizer& opt, const std::function<Tensor(const Tensor&)>& forward, const Tensor& x) {
  opt.zero_grad();
  Tensor out = forward(x);
  Tensor loss = mean(out * out);
  loss.backward();
  opt.step();
  (void)m;
  return loss.detach();
}

// Three AdamW steps of an MLP on the CPU (eager) and on CUDA (`way`: eager, compile(model), or the step compiled):
// losses and final weights within `rtol`.
void expect_cuda_matches_cpu(const std::string& way, double rtol) {
  SCOPED_TRACE(way);
  manual_seed(5);
  Mlp cpu, gpu;
  gpu.load_state_dict(cpu.state_dict());
  gpu.to(kCUDA);
  optim::AdamW opt_cpu(cpu.parameters(), optim::AdamWOptions(1e-2)), opt_gpu(gpu.parameters(), optim::AdamWOptions(1e-2));
  auto compiled_model = compile(gpu);
  auto compiled_step = compile([&](const Tensor& x) {
    return step(gpu, opt_gpu, [&](const Tensor& v) { return gpu.forward(v); }, x);
  });
  for (int k = 0; k < 3; ++k) {
    Tensor x = testing::random({6, 8}, kFloat32, 40 + k);
    Tensor want = step(cpu, opt_cpu, [&](const Tensor& v) { return cpu.forward(v); }, x);
    Tensor xg = x.to(kCUDA), got;
    if (way == "eager") got = step(gpu, opt_gpu, [&](const Tensor& v) { return gpu.forward(v); }, xg);
    if (way == "model") got = step(gpu, opt_gpu, [&](const Tensor& v) { return compiled_model(v); }, xg);
    if (way == "step") got = compiled_step(xg);
    ASSERT_TRUE(got.device().is_cuda());
    EXPECT_CLOSE(got.cpu(), want, rtol) << "step " << k;
  }
  EXPECT_CLOSE(gpu.fc1.weight.cpu(), cpu.fc1.weight, rtol);
  EXPECT_TRUE(gpu.fc1.weight.grad().device().is_cuda());
}

TEST(CudaTraining, EagerAutogradMatchesTheCpu) { expect_cuda_matches_cpu("eager", 1e-4); }
TEST(CudaTraining, CompiledModelMatchesTheCpu) { expect_cuda_matches_cpu("model", 1e-4); }
TEST(CudaTraining, CompiledStepMatchesTheCpu) { expect_cuda_matches_cpu("step", 1e-4); }

// bfloat16 autocast on CUDA: the linears run in bfloat16, the loss in float32, gradients reach the float32
// parameters; the compiled forward and backward agree with eager autocast.
TEST(CudaTraining, Bfloat16AutocastEagerAndCompiled) {
  manual_seed(6);
  Mlp a, b;
  b.load_state_dict(a.state_dict());
  a.to(kCUDA);
  b.to(kCUDA);
  auto compiled = compile(b);
  Tensor x = testing::random({6, 8}, kFloat32, 50).to(kCUDA);
  Tensor la, lb;
  {
    AutocastGuard autocast(DeviceType::kCUDA, kBFloat16);
    Tensor ya = a(x), yb = compiled(x);
    EXPECT_EQ(ya.dtype(), kBFloat16);
    EXPECT_EQ(yb.dtype(), kBFloat16);
    la = mse_loss(ya, zeros({6, 4}, TensorOptions(kFloat32, kCUDA)));
    lb = mse_loss(yb, zeros({6, 4}, TensorOptions(kFloat32, kCUDA)));
    EXPECT_EQ(la.dtype(), kFloat32);
  }
  la.backward();
  lb.backward();
  EXPECT_EQ(a.fc1.weight.grad().dtype(), kFloat32);
  EXPECT_CLOSE(lb.cpu(), la.cpu(), 1e-2);
  EXPECT_CLOSE(b.fc1.weight.grad().cpu(), a.fc1.weight.grad().cpu(), 2e-2);
}

// A residual conv block with batch norm in training (running stats updated), channels-last: three AdamW steps on
// CUDA (eager, compile(model), the step compiled) against the same block trained eagerly on the CPU, in float32,
// and under bfloat16 autocast against CUDA eager's own bfloat16 steps.
struct ConvBlock : nn::Module {
  nn::Conv2d conv1{4, 4, 3, 1, 1, 1, 1, false}, conv2{4, 4, 3, 1, 1, 1, 1, false};
  nn::BatchNorm2d bn1{4}, bn2{4};
  ConvBlock() {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
  }
  Tensor forward(const Tensor& x) override { return relu(x + bn2(conv2(relu(bn1(conv1(x)))))); }
};

std::vector<Tensor> conv_block_losses(ConvBlock& m, const std::string& way, bool autocast, Device device) {
  m.to(device);
  optim::AdamW opt(m.parameters(), optim::AdamWOptions(1e-2));
  auto one = [&](const std::function<Tensor(const Tensor&)>& forward, const Tensor& x) {
    opt.zero_grad();
    Tensor loss;
    {
      AutocastGuard guard(DeviceType::kCUDA, kBFloat16, autocast);
      Tensor out = forward(x);
      loss = mean(out * out);
    }
    loss.backward();
    opt.step();
    return loss.detach();
  };
  auto eager = [&](const Tensor& v) { return m.forward(v); };
  auto compiled_model = compile(m);
  auto compiled_step = compile([&](const Tensor& x) { return one(eager, x); });
  std::vector<Tensor> losses;
  for (int k = 0; k < 3; ++k) {
    Tensor x = testing::random({2, 4, 6, 5}, kFloat32, 60 + k).contiguous(MemoryFormat::kChannelsLast).to(device);
    Tensor loss = way == "eager"   ? one(eager, x)
                  : way == "model" ? one([&](const Tensor& v) { return compiled_model(v); }, x)
                                   : compiled_step(x);
    losses.push_back(loss.cpu());
  }
  losses.push_back(m.bn1.running_var.cpu());
  losses.push_back(m.conv1.weight.cpu());
  return losses;
}

TEST(CudaTraining, ConvBatchNormBlockMatchesTheCpu) {
  manual_seed(7);
  ConvBlock reference;
  std::vector<Tensor> want = conv_block_losses(reference, "eager", false, kCPU);
  std::vector<Tensor> bf16;
  for (const char* way : {"eager", "model", "step"})
    for (bool autocast : {false, true}) {
      SCOPED_TRACE(fmt::format("{}{}", way, autocast ? ", bfloat16 autocast" : ""));
      manual_seed(7);
      ConvBlock m;
      std::vector<Tensor> got = conv_block_losses(m, way, autocast, kCUDA);
      if (!autocast) {
        for (size_t i = 0; i < got.size(); ++i) EXPECT_CLOSE(got[i], want[i], 1e-4) << "value " << i;
      } else if (bf16.empty()) {
        bf16 = got;
        for (size_t i = 0; i < 3; ++i) EXPECT_CLOSE(got[i], want[i], 5e-2) << "loss " << i;
      } else {
        for (size_t i = 0; i < got.size(); ++i) EXPECT_CLOSE(got[i], bf16[i], 2e-2) << "value " << i;
      }
    }
}

}  // namespace
}  // namespace sinter
