// `sinter demo`: runs the built-in models (a GPT-style transformer block and a small ResNet-style CNN)
// eagerly and through sinter::compile with the default backend, checks both against a float64 run of the same
// weights, and prints what ran: times, speedup, kernels per call, compile time, and what explain() says about
// the block; then it trains the block for a few AdamW steps, eagerly and with the step compiled. On a machine with a
// CUDA GPU it then runs both models on cuda:0, eager and compiled in the default,
// reduce-overhead and max-autotune modes; without one it says so and how to run the GPU part.
#include <fmt/format.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <tuple>

#include "bench_util.h"
#include "sinter/cuda.h"
#include "sinter/optim.h"
#include "tools.h"
#include "workloads.h"

namespace sinter::tools {
namespace {

// The benchmark's ResNet block followed by a pooled classifier head.
struct SmallCnn : nn::Module {
  ResNetBlock block;
  nn::Linear head;
  explicit SmallCnn(int64_t c) : block(c), head(c, 10) {
    register_module("block", block);
    register_module("head", head);
    block.randomize_bn_stats();
  }
  Tensor forward(const Tensor& x) override { return head(adaptive_avg_pool2d(block(x), {1, 1}).flatten(1)); }
};

double rel_err(const Tensor& y, const Tensor& ref) {
  return norm(y.to(kFloat64) - ref).item<double>() / norm(ref).item<double>();
}

// Eager and compiled in float32, then the same weights in float64 as the reference for both. A compile
// failure is printed with the eager results (the demo goes on to the next model) and makes the demo fail.
template <class M>
bool run(const std::string& name, M& model, const Tensor& x, const std::string& what) {
  model.eval();
  Tensor y = model(x);
  int64_t params = 0;
  for (const Tensor& p : model.parameters()) params += p.numel().hint();
  fmt::print("{}\n  {}\n  input {} -> output {}, {} parameters, {} threads\n", name, what, x.sizes().str(),
             y.sizes().str(), params, get_num_threads());

  CompileOptions options;  // the default backend
  auto compiled = compile(model, options);
  Tensor yc;
  double first_ms = 0, eager_ms = 0, compiled_ms = 0;
  std::string failure;
  try {
    auto start = std::chrono::steady_clock::now();
    yc = compiled(x);
    first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    // Alternating eager and compiled calls, so that other load on the machine falls on both alike.
    std::tie(eager_ms, compiled_ms) = time_pair_ms([&] { (void)model(x); }, [&] { (void)compiled(x); }, 300);
  } catch (const std::exception& e) {
    failure = e.what();
    eager_ms = time_ms([&] { (void)model(x); }, 10, 2);
  }
  CompileStats stats = compiled.stats();
  std::optional<double> kernels = kernels_per_call(stats);

  // Converting the weights changes their dtype, so the compiled function is not called after this.
  model.to(kFloat64);
  Tensor ref = model(x.to(kFloat64));
  model.to(kFloat32);
  // Relative L2 error of float32 against float64: about 1e-7 to 3e-7 here; past kTolerance the run fails.
  constexpr double kTolerance = 1e-4;
  const double eager_err = rel_err(y, ref);
  fmt::print("  eager:    {:8.3f} ms per call, relative error vs float64: {:.2e}{}\n", eager_ms, eager_err,
             eager_err <= kTolerance ? "" : fmt::format("   FAILED: above {:g}", kTolerance));
  if (!failure.empty()) {
    fmt::print("  compiled (backend '{}'): FAILED: {}\n\n", options.backend, failure);
    return false;
  }
  const double compiled_err = rel_err(yc, ref);
  fmt::print("  compiled: {:8.3f} ms per call, relative error vs float64: {:.2e}   (backend '{}'){}\n",
             compiled_ms, compiled_err, options.backend,
             compiled_err <= kTolerance ? "" : fmt::format("   FAILED: above {:g}", kTolerance));
  fmt::print(
      "  speedup {:.2f}x, kernels per call: {}, compile {:.3g} s ({} graph{}), first call {:.1f} ms\n\n",
      eager_ms / compiled_ms, kernels ? fmt::format("{:g}", *kernels) : "not reported by this backend",
      stats.compile_seconds, stats.compiles, stats.compiles == 1 ? "" : "s", first_ms);
  return eager_err <= kTolerance && compiled_err <= kTolerance;
}

// Milliseconds per call of `fn` on the GPU: three warm-up calls, then enough calls for about 50 ms, waited for.
double gpu_ms(const std::function<void()>& fn) {
  for (int i = 0; i < 3; ++i) fn();
  cuda::synchronize();
  auto start = std::chrono::steady_clock::now();
  fn();
  cuda::synchronize();
  double once = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  int calls = static_cast<int>(std::clamp(50.0 / std::max(once, 1e-3), 3.0, 500.0));
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) fn();
  cuda::synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / calls;
}

// The model on cuda:0 in float32: eager, then compiled in each mode, each against the float64 run on the CPU.
template <class M>
bool run_gpu(const std::string& name, M& model, const Tensor& x) {
  model.eval();
  model.to(kFloat64);
  Tensor ref = model(x.to(kFloat64));
  model.to(kFloat32);
  model.to(kCUDA);
  Tensor xd = x.to(kCUDA);
  constexpr double kTolerance = 1e-4;
  bool ok = true;
  double eager_ms = gpu_ms([&] { (void)model(xd); });
  double eager_err = rel_err(model(xd).cpu(), ref);
  ok &= eager_err <= kTolerance;
  fmt::print("{} on cuda:0\n  eager:           {:8.3f} ms per call, relative error vs float64: {:.2e}\n", name,
             eager_ms, eager_err);
  for (Mode mode : {Mode::kDefault, Mode::kReduceOverhead, Mode::kMaxAutotune}) {
    const char* label = mode == Mode::kDefault ? "default" : mode == Mode::kReduceOverhead ? "reduce-overhead"
                                                                                           : "max-autotune";
    auto compiled = compile(model, {.mode = mode});
    try {
      auto start = std::chrono::steady_clock::now();
      Tensor y = compiled(xd).cpu();
      double first_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      double ms = gpu_ms([&] { (void)compiled(xd); });
      double err = rel_err(y, ref);
      ok &= err <= kTolerance;
      std::optional<double> kernels = kernels_per_call(compiled.stats());
      fmt::print("  {:<16} {:8.3f} ms per call, relative error vs float64: {:.2e}, speedup {:.2f}x, kernels per "
                 "call {}, first call {:.3f} s{}\n",
                 std::string(label) + ":", ms, err, eager_ms / ms, kernels ? fmt::format("{:g}", *kernels) : "-",
                 first_s, err <= kTolerance ? "" : fmt::format("   FAILED: above {:g}", kTolerance));
    } catch (const std::exception& e) {
      fmt::print("  {}: FAILED: {}\n", label, e.what());
      ok = false;
    }
  }
  fmt::print("\n");
  model.to(kCPU);
  return ok;
}

// The GPU part: both models on cuda:0 when there is a real GPU; otherwise what it would need.
bool gpu_demo() {
  if (!cuda::is_available() || cuda::is_simulated()) {
    fmt::print("No CUDA GPU here ({}): the demo ran on the CPU only. On a machine with an NVIDIA GPU, `make demo` "
               "also runs these models on cuda:0, eager and compiled in the default, reduce-overhead and "
               "max-autotune modes; `bash bench/run_cuda.sh OUTDIR` runs the GPU tests and benchmarks there.\n",
               cuda::is_simulated() ? "SINTER_CUDA_SIM=1 makes kCUDA a simulated device, too slow for timing"
                                    : cuda::unavailable_reason());
    return true;
  }
  cuda::DeviceProperties props = cuda::get_device_properties(0);
  fmt::print("The same models on {} (sm_{}{}):\n\n", props.name, props.major, props.minor);
  manual_seed(0);
  GptBlock block(256, 8);
  Tensor x = randn({2, 128, 256});
  bool ok = run_gpu("GPT block", block, x);
  SmallCnn cnn(32);
  ok &= run_gpu("ResNet block + head", cnn, randn({4, 32, 28, 28}).contiguous(kChannelsLast));
  return ok;
}

// A few AdamW steps of the GPT block on a regression target, eagerly and with the whole step compiled (forward,
// loss, backward and optimiser step in one graph), from the same weights: losses side by side, step times.
bool train_demo() {
  constexpr int kSteps = 6;
  manual_seed(1);
  GptBlock eager_block(256, 8), compiled_block(256, 8);
  {
    NoGradGuard no_grad;
    compiled_block.load_state_dict(eager_block.state_dict());
  }
  optim::AdamW eager_opt(eager_block.parameters(), optim::AdamWOptions(1e-3));
  optim::AdamW compiled_opt(compiled_block.parameters(), optim::AdamWOptions(1e-3));
  Tensor x = randn({2, 128, 256}), target = randn({2, 128, 256}) * 0.5;
  auto step = [&x, &target](GptBlock& block, optim::Optimizer& opt) {
    opt.zero_grad();
    Tensor loss = mse_loss(block(x), target);
    loss.backward();
    opt.step();
    return loss.detach();
  };
  auto compiled_step = compile([&] { return step(compiled_block, compiled_opt); });
  fmt::print("Training the GPT block: {} AdamW steps (lr 1e-3) on an MSE target, eager and with the whole step "
             "compiled\n  {:>4} {:>12} {:>12} {:>10} {:>10}\n",
             kSteps, "step", "eager loss", "compiled", "eager ms", "comp. ms");
  bool ok = true;
  double eager_total = 0, compiled_total = 0;
  for (int k = 0; k < kSteps; ++k) {
    auto start = std::chrono::steady_clock::now();
    const double le = step(eager_block, eager_opt).item<double>();
    const double eager_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    start = std::chrono::steady_clock::now();
    const double lc = compiled_step().item<double>();
    const double compiled_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (k > 0) eager_total += eager_ms, compiled_total += compiled_ms;
    fmt::print("  {:>4} {:>12.6f} {:>12.6f} {:>10.2f} {:>10.2f}{}\n", k, le, lc, eager_ms, compiled_ms,
               k == 0 ? "   (the first compiled step captures and compiles)" : "");
    ok &= std::abs(lc - le) <= 1e-3 * std::abs(le);
  }
  fmt::print("  steps 1-{}: eager {:.2f} ms, compiled {:.2f} ms a step ({:.2f}x); {} compile(s), {} kernels a step{}\n\n",
             kSteps - 1, eager_total / (kSteps - 1), compiled_total / (kSteps - 1), eager_total / compiled_total,
             compiled_step.stats().compiles, compiled_step.stats().kernels_per_call,
             ok ? "" : "; THE LOSSES DIFFER");
  return ok;
}

}  // namespace

int demo() {
  manual_seed(0);
  bool ok = true;
  GptBlock block(256, 8);
  Tensor x = randn({2, 128, 256});
  {
    NoGradGuard no_grad;  // inference: no gradient recording (as torch.no_grad())
    fmt::print(
        "sinter demo: built-in models on the CPU, eager and compiled (sinter::compile, default backend "
        "'{}')\n\n",
        CompileOptions{}.backend);
    ok &= run("GPT block", block, x,
              "pre-LN: x + proj(causal_sdpa(qkv(ln1(x)))); x + fc2(gelu(fc1(ln2(x)))), D 256, 8 heads");
    SmallCnn cnn(32);
    ok &= run("ResNet block + head", cnn, randn({4, 32, 28, 28}).contiguous(kChannelsLast),
              "relu(x + bn2(conv3x3(relu(bn1(conv3x3(x)))))) -> avgpool -> linear, C 32, 28x28, channels-last");
    fmt::print("sinter::explain(block, x) for the GPT block:\n");
    fmt::print("{}\n", explain(block, x).str());
  }
  ok &= train_demo();
  NoGradGuard no_grad;
  ok &= gpu_demo();
  return ok ? 0 : 1;
}

}  // namespace sinter::tools
