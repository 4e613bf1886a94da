// The built-in models (tools/workloads.h) trained for 20 steps with AdamW, eagerly and compiled both ways
// (compile(model) with loss.backward() outside; the whole training step compiled): the first step's gradients and
// every step's loss equal, parameters equal at the end, compiled peak memory at most eager's.
#include <functional>
#include <memory>

#include "sinter/compile.h"
#include "sinter/optim.h"
#include "tensor/allocator.h"
#include "testing.h"
#include "workloads.h"

using namespace sinter;
namespace st = sinter::testing;

namespace {

enum class Way { kEager, kCompiledModel, kCompiledStep };

struct Model {
  std::function<std::shared_ptr<nn::Module>()> make;
  std::function<Tensor(int64_t step)> input;
  std::function<Tensor(const Tensor& out)> loss;
};

struct TrainRun {
  std::vector<double> losses;
  std::vector<Tensor> first_grads;  // every parameter's gradient after the first step (same weights everywhere)
  std::shared_ptr<nn::Module> model;
  size_t peak = 0;  // the largest CPU memory in use during a step past the first two, above what was in use before it
  int compiles = 0;
};

TrainRun train(const Model& spec, Way way, const std::string& backend, int steps) {
  manual_seed(21);
  TrainRun run;
  run.model = spec.make();
  nn::Module& m = *run.model;
  optim::AdamW opt(m.parameters(), optim::AdamWOptions(1e-2));
  auto step = [&](const Tensor& x, const std::function<Tensor(const Tensor&)>& forward) {
    opt.zero_grad();
    Tensor loss = spec.loss(forward(x));
    loss.backward();
    opt.step();
    return loss.detach();
  };
  auto forward = [&](const Tensor& x) { return m.forward(x); };
  auto compiled_model = compile([&](const Tensor& x) { return m.forward(x); }, {.backend = backend});
  auto compiled_step =
      compile([&](const Tensor& x) { return step(x, [&](const Tensor& v) { return m.forward(v); }); },
              {.backend = backend});
  for (int k = 0; k < steps; ++k) {
    Tensor x = spec.input(k);
    const size_t before = cpu_memory_stats().allocated;
    reset_cpu_peak_memory();
    Tensor loss;
    if (way == Way::kEager) loss = step(x, forward);
    if (way == Way::kCompiledModel) loss = step(x, [&](const Tensor& v) { return compiled_model(v); });
    if (way == Way::kCompiledStep) loss = compiled_step(x);
    if (k >= 2) run.peak = std::max(run.peak, cpu_memory_stats().peak - before);
    run.losses.push_back(loss.item<double>());
    if (k == 0)
      for (const Tensor& p : m.parameters()) run.first_grads.push_back(p.grad().defined() ? p.grad().clone() : Tensor());
  }
  run.compiles = way == Way::kCompiledModel ? compiled_model.stats().compiles : compiled_step.stats().compiles;
  return run;
}

void expect_same_training(const Model& spec, const std::string& backend, double rtol) {
  const int steps = 20;
  TrainRun eager = train(spec, Way::kEager, backend, steps);
  for (Way way : {Way::kCompiledModel, Way::kCompiledStep}) {
    const char* what = way == Way::kCompiledModel ? "compile(model), backward outside" : "compiled training step";
    SCOPED_TRACE(what);
    TrainRun c = train(spec, way, backend, steps);
    ASSERT_EQ(c.losses.size(), eager.losses.size());
    ASSERT_EQ(c.first_grads.size(), eager.first_grads.size());
    for (size_t i = 0; i < c.first_grads.size(); ++i) {
      ASSERT_TRUE(c.first_grads[i].defined() && eager.first_grads[i].defined()) << "parameter " << i;
      if (rtol == 0)
        EXPECT_TENSOR_EQ(c.first_grads[i], eager.first_grads[i]) << "gradient of parameter " << i;
      else
        EXPECT_CLOSE(c.first_grads[i], eager.first_grads[i], 1e-5) << "gradient of parameter " << i;
    }
    for (int k = 0; k < steps; ++k) {
      if (rtol == 0)
        EXPECT_EQ(c.losses[k], eager.losses[k]) << "step " << k;
      else
        EXPECT_NEAR(c.losses[k], eager.losses[k], rtol * std::abs(eager.losses[k]) + 1e-6) << "step " << k;
    }
    auto pe = eager.model->named_parameters(), pc = c.model->named_parameters();
    for (size_t i = 0; i < pe.size(); ++i) {
      if (rtol == 0)
        EXPECT_TENSOR_EQ(pc[i].second, pe[i].second) << pe[i].first;
      else
        // Adam divides by the root of the squared gradients: where a gradient is near 0, rounding differences
        // of the fused kernels move a parameter by up to lr per step, so the parameters agree less closely than
        // the losses.
        EXPECT_CLOSE(pc[i].second, pe[i].second, 5e-2) << pe[i].first;
    }
    // Memory is the inductor's claim: it updates parameters and optimiser state in place (Executor::run with
    // `into`) and frees intermediates after their last use. aot_eager runs the functional graph op by op, so its
    // updated parameters are new tensors copied back at the end.
    if (backend == "inductor")
      EXPECT_LE(c.peak, eager.peak) << what << ": compiled peak " << c.peak << " bytes, eager " << eager.peak;
    EXPECT_LE(c.compiles, 2);
  }
}

Model mlp() {
  return {[] { return std::make_shared<tools::Mlp>(16, 32); },
          [](int64_t k) { return st::random({8, 16}, kFloat32, 300 + k); },
          [](const Tensor& out) { return mean(out * out); }};
}

Model gpt_block() {
  return {[] { return std::make_shared<tools::GptBlock>(32, 4); },
          [](int64_t k) { return st::random({2, 8, 32}, kFloat32, 320 + k); },
          [](const Tensor& out) { return mean(out * out); }};
}

Model resnet_block() {
  return {[] { return std::make_shared<tools::ResNetBlock>(16); },
          [](int64_t k) { return st::random({2, 16, 12, 12}, kFloat32, 340 + k); },
          [](const Tensor& out) { return mean(out); }};
}

}  // namespace

TEST(TrainingModels, MlpAotEagerEqualsEager) { expect_same_training(mlp(), "aot_eager", 0); }
// The inductor's kernels sum in other orders than eager's: the first step's gradients agree within 1e-5, and the
// losses of 20 steps within 1e-3 (AdamW divides by the root of the squared gradients and batch norm by the batch's
// deviation, which amplify such differences step after step).
TEST(TrainingModels, MlpInductorMatchesEager) { expect_same_training(mlp(), "inductor", 1e-3); }
TEST(TrainingModels, GptBlockAotEagerEqualsEager) { expect_same_training(gpt_block(), "aot_eager", 0); }
TEST(TrainingModels, GptBlockInductorMatchesEager) { expect_same_training(gpt_block(), "inductor", 1e-3); }
TEST(TrainingModels, ResNetBlockAotEagerEqualsEager) { expect_same_training(resnet_block(), "aot_eager", 0); }
TEST(TrainingModels, ResNetBlockInductorMatchesEager) { expect_same_training(resnet_block(), "inductor", 1e-3); }

// Dropout in training draws a fresh mask every step, compiled as eagerly, and aot_eager draws eager's masks.
TEST(TrainingModels, DropoutDrawsFreshMasksAndAotEagerReproducesEager) {
  Model spec{[] {
               struct Net : nn::Module {
                 nn::Linear fc{16, 16};
                 nn::Dropout drop{0.3};
                 Net() {
                   register_module("fc", fc);
                   register_module("drop", drop);
                 }
                 Tensor forward(const Tensor& x) override { return drop(fc(x)); }
               };
               return std::make_shared<Net>();
             },
             [](int64_t) { return full({4, 16}, 1.0); },  // the same input every step: only the mask changes
             [](const Tensor& out) { return sum(out); }};
  TrainRun eager = train(spec, Way::kEager, "aot_eager", 4);
  EXPECT_NE(eager.losses[0], eager.losses[1]);
  for (Way way : {Way::kCompiledModel, Way::kCompiledStep}) {
    TrainRun c = train(spec, way, "aot_eager", 4);
    EXPECT_EQ(c.losses, eager.losses);
  }
}
