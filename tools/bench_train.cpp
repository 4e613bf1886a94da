// `sinter bench --suite train`: one AdamW training step (zero_grad, forward, loss, backward, step) of the built-in
// models at bench/WORKLOADS.md's training shapes, eagerly and compiled the two ways torch.compile users train:
//   model: compile(model), loss.backward() and the optimiser step outside (the compiled forward's backward is a
//          compiled graph too);
//   step:  compile(train_step), the whole step in one graph.
// Per model and way: step ms (timed alternately with eager), peak memory during a step, the first step's compile
// seconds cold (a fresh process on an empty cache) and warm (a second process on that cache), and the loss after
// three steps against eager's. bench/vs_torch.py --train times PyTorch eager and torch.compile on the same
// definitions.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>

#include "bench_util.h"
#include "sinter/amp.h"
#include "sinter/cuda.h"
#include "sinter/optim.h"
#include "support/check.h"
#include "tensor/allocator.h"
#include "tools.h"
#include "workloads.h"

namespace sinter::tools {
namespace {

struct TrainModel {
  std::string name, shape;
  std::function<std::shared_ptr<nn::Module>()> make;
  std::function<Tensor()> input;
};

// bench/WORKLOADS.md, "Training steps"; bench/vs_torch.py --train builds the same. On CUDA: the GPU shapes, the
// forward and loss under bfloat16 autocast.
std::vector<TrainModel> train_models(bool cuda) {
  if (cuda)
    return {
        {"mlp", "T8192 D1024 H4096 bf16 autocast", [] { return std::make_shared<Mlp>(1024, 4096); },
         [] { return randn({8192, 1024}); }},
        {"gpt_block", "B8 S1024 D1024 H16 bf16 autocast", [] { return std::make_shared<GptBlock>(1024, 16); },
         [] { return randn({8, 1024, 1024}); }},
        {"resnet_block", "N32 C64 56x56 NHWC bf16 autocast", [] { return std::make_shared<ResNetBlock>(64); },
         [] { return randn({32, 64, 56, 56}).contiguous(MemoryFormat::kChannelsLast); }},
    };
  return {
      {"mlp", "T256 D512 H2048", [] { return std::make_shared<Mlp>(512, 2048); },
       [] { return randn({256, 512}); }},
      {"gpt_block", "B2 S128 D256 H4", [] { return std::make_shared<GptBlock>(256, 4); },
       [] { return randn({2, 128, 256}); }},
      {"resnet_block", "N4 C32 28x28 NCHW", [] { return std::make_shared<ResNetBlock>(32); },
       [] { return randn({4, 32, 28, 28}); }},
  };
}

// One model with its optimiser, stepped eagerly or compiled one of the two ways.
struct Trainer {
  std::shared_ptr<nn::Module> model;
  std::unique_ptr<optim::AdamW> opt;
  Tensor x;
  std::function<Tensor()> step;
  std::function<CompileStats()> stats = [] { return CompileStats{}; };

  Trainer(const TrainModel& spec, const std::string& way, const std::string& backend, bool cuda) {
    manual_seed(1234);
    model = spec.make();
    x = spec.input();
    if (cuda) {
      model->to(kCUDA);
      x = x.to(kCUDA);
    }
    opt = std::make_unique<optim::AdamW>(model->parameters(), optim::AdamWOptions(1e-3));
    nn::Module& m = *model;
    auto one_step = [this, cuda](const std::function<Tensor(const Tensor&)>& forward, const Tensor& input) {
      opt->zero_grad();
      Tensor loss;
      {
        AutocastGuard autocast(DeviceType::kCUDA, kBFloat16, cuda);
        Tensor out = forward(input);
        loss = mean(out * out);
      }
      loss.backward();
      opt->step();
      return loss.detach();
    };
    auto eager_forward = [&m](const Tensor& v) { return m.forward(v); };
    if (way == "eager") {
      step = [this, one_step, eager_forward] { return one_step(eager_forward, x); };
    } else if (way == "model") {
      auto compiled = std::make_shared<decltype(compile(m))>(compile(m, {.backend = backend}));
      step = [this, one_step, compiled] { return one_step([compiled](const Tensor& v) { return (*compiled)(v); }, x); };
      stats = [compiled] { return compiled->stats(); };
    } else {
      SINTER_CHECK(way == "step", "bench --suite train: unknown way '{}'", way);
      auto body = [one_step, eager_forward](const Tensor& input) { return one_step(eager_forward, input); };
      auto compiled = std::make_shared<decltype(compile(body))>(compile(body, {.backend = backend}));
      step = [this, compiled] { return (*compiled)(x); };
      stats = [compiled] { return compiled->stats(); };
    }
  }
};

struct TrainRow {
  std::string model, way, backend, shape;
  double eager_ms = NAN, compiled_ms = NAN, first_step_ms = NAN;
  double compile_cold = NAN, compile_warm = NAN;
  double peak_mb_eager = NAN, peak_mb_compiled = NAN;
  double peak_rss_mb_eager = NAN, peak_rss_mb_compiled = NAN;
  double loss_rel_err = NAN;
  int compiles = 0, kernels = -1;
  std::string error;
};

// The allocator's high-water mark during one step, above what was live before it, in MB.
double step_peak_mb(const std::function<Tensor()>& step) {
  size_t before = cpu_memory_stats().allocated;
  reset_cpu_peak_memory();
  (void)step();
  return static_cast<double>(cpu_memory_stats().peak - before) / (1 << 20);
}

// The hidden child: the first step's wall time minus a steady step's (what a user waits for the compiler), and
// the process's peak resident memory over steady steps above what it had before the model was made (what
// bench/vs_torch.py --train measures for PyTorch the same way).
int run_probe(const BenchOptions& opt) {
  const size_t colon = opt.probe.find(':');
  SINTER_CHECK(colon != std::string::npos, "bench --suite train --probe MODEL:WAY");
  const std::string name = opt.probe.substr(0, colon), way = opt.probe.substr(colon + 1);
  const bool cuda = opt.device == "cuda";
  for (const TrainModel& spec : train_models(cuda)) {
    if (spec.name != name) continue;
    const double rss_before = status_mb("VmRSS");
    Trainer t(spec, way, opt.backends.at(0), cuda);
    if (cuda) t.step = [step = t.step] {
      Tensor loss = step();
      cuda::synchronize();
      return loss;
    };
    auto start = std::chrono::steady_clock::now();
    (void)t.step();
    double first = ms_since(start);
    double steady = time_ms([&] { (void)t.step(); }, 3, 1);
    reset_peak_rss();
    for (int i = 0; i < 3; ++i) (void)t.step();
    fmt::print("probe compile_s={:.6f} peak_rss_mb={:.3f}\n", std::max(0.0, first - steady) / 1e3,
               status_mb("VmHWM") - rss_before);
    return 0;
  }
  throw Error(fmt::format("bench --suite train: no model named '{}'", name));
}

struct ProbeResult {
  double compile_s = NAN, peak_rss_mb = NAN;
};

ProbeResult probe(const std::string& model, const std::string& way, const std::string& backend, const std::string& dir,
                  const std::string& device) {
  ChildResult r = run_self({"bench", "--suite", "train", "--probe", model + ":" + way, "--backends", backend,
                            "--threads", std::to_string(get_num_threads()), "--device", device},
                           {{"SINTER_CACHE_DIR", dir}});
  const std::string what = fmt::format("compile probe of {} / {}", model, way);
  return {probe_field(r, "compile_s", what), probe_field(r, "peak_rss_mb", what)};
}

// The step, and on CUDA a wait for the device after it (so wall times are the device's).
std::function<Tensor()> synced(const std::function<Tensor()>& step, bool cuda) {
  if (!cuda) return step;
  return [step] {
    Tensor loss = step();
    cuda::synchronize();
    return loss;
  };
}

// Peak memory during one step above what was live before, in MB: the CPU allocator's, or the CUDA device's.
double step_peak(const std::function<Tensor()>& step, bool cuda) {
  if (!cuda) return step_peak_mb(step);
  const int64_t before = cuda::memory_stats().allocated;
  cuda::reset_peak_memory_stats();
  (void)step();
  return static_cast<double>(cuda::memory_stats().peak - before) / (1 << 20);
}

TrainRow bench_way(const TrainModel& spec, const std::string& way, const std::string& backend, double budget_ms,
                   const std::string& device) {
  TrainRow row{spec.name, way, backend, spec.shape};
  const bool cuda = device == "cuda";
  try {
    Trainer eager(spec, "eager", backend, cuda), compiled(spec, way, backend, cuda);
    eager.step = synced(eager.step, cuda);
    compiled.step = synced(compiled.step, cuda);
    // Correctness first: three steps each from the same weights, the last losses compared.
    auto start = std::chrono::steady_clock::now();
    Tensor lc = compiled.step();
    row.first_step_ms = ms_since(start);
    Tensor le = eager.step();
    for (int i = 0; i < 2; ++i) {
      le = eager.step();
      lc = compiled.step();
    }
    row.loss_rel_err = std::abs(lc.item<double>() - le.item<double>()) / std::max(std::abs(le.item<double>()), 1e-30);
    std::tie(row.eager_ms, row.compiled_ms) = time_pair_ms([&] { (void)eager.step(); }, [&] { (void)compiled.step(); },
                                                           budget_ms);
    row.peak_mb_eager = step_peak(eager.step, cuda);
    row.peak_mb_compiled = step_peak(compiled.step, cuda);
    CompileStats stats = compiled.stats();
    row.compiles = stats.compiles;
    row.kernels = stats.kernels_per_call;
    std::string dir = make_temp_dir("sinter-bench-train-cache");
    ProbeResult cold = probe(spec.name, way, backend, dir, device);
    row.compile_cold = cold.compile_s;
    row.compile_warm = probe(spec.name, way, backend, dir, device).compile_s;
    row.peak_rss_mb_compiled = cold.peak_rss_mb;
    row.peak_rss_mb_eager = probe(spec.name, "eager", backend, dir, device).peak_rss_mb;
    remove_dir(dir);
  } catch (const std::exception& e) {
    row.error = e.what();
    fmt::print("  {} / {} failed: {}\n", spec.name, way, row.error);
  }
  return row;
}

std::string num(double v, const char* spec = "{:.3f}") {
  return std::isnan(v) ? "-" : fmt::format(fmt::runtime(spec), v);
}

}  // namespace

int bench_train(const BenchOptions& opt) {
  SINTER_CHECK(!opt.backends.empty(), "bench: --backends is empty");
  if (!opt.probe.empty()) return run_probe(opt);
  std::string run_cache = make_temp_dir("sinter-bench-run");
  setenv("SINTER_CACHE_DIR", run_cache.c_str(), 1);
  const std::string device = opt.device.empty() ? "cpu" : opt.device;
  SINTER_CHECK(device == "cpu" || device == "cuda", "bench --suite train: unknown device '{}'", device);
  SINTER_CHECK(device == "cpu" || cuda::is_available(), "bench --suite train --device cuda: {}",
               cuda::unavailable_reason());
  fmt::print("sinter bench --suite train --device {}: {} threads, backends {}, {}\n", device, get_num_threads(),
             fmt::join(opt.backends, ","), machine_name());
  const double budget_ms = opt.quick ? 300 : 2000;
  std::vector<TrainRow> rows;
  for (const TrainModel& spec : train_models(device == "cuda")) {
    if (!opt.only.empty() && opt.only != spec.name) continue;
    for (const std::string& backend : opt.backends)
      for (const char* way : {"model", "step"}) {
        fmt::print("  {} / {} / {} ...\n", spec.name, way, backend);
        std::fflush(stdout);
        rows.push_back(bench_way(spec, way, backend, budget_ms, device));
      }
  }
  remove_dir(run_cache);
  fmt::print("\n{:<13} {:<6} {:<10} {:>9} {:>9} {:>8} {:>8} {:>8} {:>9} {:>9} {:>9} {:>8}\n", "model", "way",
             "backend", "eager ms", "comp. ms", "speedup", "cold s", "warm s", "peak MB e", "peak MB c", "loss err",
             "kernels");
  for (const TrainRow& r : rows) {
    if (!r.error.empty()) {
      fmt::print("{:<13} {:<6} {:<10} failed: {}\n", r.model, r.way, r.backend, r.error.substr(0, 200));
      continue;
    }
    fmt::print("{:<13} {:<6} {:<10} {:>9} {:>9} {:>8} {:>8} {:>8} {:>9} {:>9} {:>9} {:>8}\n", r.model, r.way,
               r.backend, num(r.eager_ms), num(r.compiled_ms), num(r.eager_ms / r.compiled_ms, "{:.2f}x"),
               num(r.compile_cold), num(r.compile_warm), num(r.peak_mb_eager, "{:.1f}"),
               num(r.peak_mb_compiled, "{:.1f}"), num(r.loss_rel_err, "{:.1e}"),
               r.kernels >= 0 ? std::to_string(r.kernels) : "-");
  }
  fmt::print("\nmodel: compile(model), backward and AdamW outside; step: compile(train_step), the whole step in one "
             "graph.\ncold s / warm s: the first step's extra seconds in a fresh process on an empty cache / a "
             "second process\non that cache. peak MB: the allocator's high-water mark during one step above what "
             "was live before\n(peak RSS, the process's, in the JSON). loss err: |compiled - eager| / |eager| of the third step's loss. kernels: per call "
             "of the compiled function\n(model: the forward).\n");
  if (!opt.json.empty()) {
    std::vector<std::string> items;
    for (const TrainRow& r : rows) {
      Json j;
      j.add("model", r.model).add("way", r.way).add("backend", r.backend).add("shape", r.shape);
      if (!r.error.empty()) j.add("error", r.error);
      j.add_measured("eager_ms", r.eager_ms);
      j.add_measured("compiled_ms", r.compiled_ms);
      j.add_measured("speedup", r.eager_ms / r.compiled_ms);
      j.add_measured("first_step_ms", r.first_step_ms);
      j.add_measured("compile_s_cold", r.compile_cold);
      j.add_measured("compile_s_warm", r.compile_warm);
      j.add_measured("peak_mb_eager", r.peak_mb_eager);
      j.add_measured("peak_mb_compiled", r.peak_mb_compiled);
      j.add_measured("peak_rss_mb_eager", r.peak_rss_mb_eager);
      j.add_measured("peak_rss_mb_compiled", r.peak_rss_mb_compiled);
      j.add_measured("loss_rel_err", r.loss_rel_err);
      j.add("compiles", r.compiles).add("kernels", r.kernels);
      items.push_back(j.str());
    }
    Json env = results_envelope(device, "train", opt.quick);
    if (device == "cuda") env.add("gpu", cuda::get_device_properties().name);
    env.add("optimizer", "AdamW(lr=1e-3)").add_raw("results", json_array(items));
    write_file(opt.json, env.str());
    fmt::print("wrote {}\n", opt.json);
  }
  return 0;
}

}  // namespace sinter::tools
