// `sinter bench --device cuda`: the GPU workloads of bench/WORKLOADS.md that the CUDA code generator covers
// (pointwise, ln_gelu, softmax, reduce_sum, small_ops) and mlp (cuBLAS GEMMs beside generated kernels; attention
// and convolutions need the library calls of the next GPU issue), eager and compiled with the inductor backend on
// cuda:0, with the fields of the CPU bench, and the same compiled under reduce-overhead (CUDA graphs: "ro ms" per
// call on the device, "ro us" of host time per call) and with the cudagraphs backend (eager's kernels replayed as
// one CUDA graph: "cg ms") and under max-autotune ("at ms"; "at cold": its first call, the measuring included).
// On a GPU the steady calls are timed with CUDA events after warm-up (eager and compiled alternately, medians);
// on the simulated device (SINTER_CUDA_SIM=1) with the wall clock, and --quick shrinks the shapes 64-fold.
// Compile seconds: cold is the first call of a fresh compiled function on an empty kernel cache, warm the first
// call of a second one (the same graph, its kernels loaded from the disk cache), each minus a steady call.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include "backends/backends.h"
#include "bench_util.h"
#include "sinter/sinter.h"
#include "support/check.h"
#include "tensor/cuda_driver.h"
#include "tools.h"
#include "workloads.h"

namespace sinter::tools {
namespace {

struct GpuWorkload {
  std::string name, dtype, shape;
  double bytes = 0;
  double flops = 0;                    // the matrix products' floating-point operations per call
  std::shared_ptr<nn::Module> module;  // keeps a module workload's parameters alive
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> fn;
  std::vector<Tensor> inputs;  // on cuda:0
};

std::string dims(const std::vector<int64_t>& d) { return fmt::format("[{}]", fmt::join(d, ", ")); }

GpuWorkload make_gpu_workload(const std::string& name, int64_t shrink) {
  manual_seed(1234);
  GpuWorkload w;
  w.name = name;
  TensorOptions f32 = TensorOptions(kFloat32).device(kCUDA), bf16 = TensorOptions(kBFloat16).device(kCUDA);
  if (name == "pointwise") {
    int64_t n = (int64_t{64} << 20) / shrink;
    w.dtype = "f32", w.shape = dims({n}), w.bytes = 2.0 * 4 * n;
    w.fn = [](const std::vector<Tensor>& in) {
      const Tensor& x = in[0];
      return std::vector<Tensor>{sigmoid(x * 1.5 + 0.5) * tanh(x) + relu(x)};
    };
    w.inputs = {randn({n}).to(f32)};
  } else if (name == "ln_gelu") {
    int64_t n = 16384 / shrink, d = 4096;
    w.dtype = "bf16", w.shape = dims({n, d}), w.bytes = 2.0 * (3 * n * d + 2 * d);
    w.fn = [d](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{gelu(layer_norm(in[0] + in[1], {d}, in[2], in[3]))};
    };
    w.inputs = {randn({n, d}).to(bf16), randn({n, d}).to(bf16), (rand({d}) + 0.5).to(bf16),
                (randn({d}) * 0.1).to(bf16)};
  } else if (name == "softmax") {
    int64_t n = 32768 / shrink, d = 4096;
    w.dtype = "f32", w.shape = dims({n, d}), w.bytes = 2.0 * 4 * n * d;
    w.fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0] * 0.125, -1)}; };
    w.inputs = {randn({n, d}).to(f32)};
  } else if (name == "mlp") {
    // cuBLAS GEMMs (extern kernels of the graph) with the generated kernels between them.
    int64_t t = 8192 / shrink, d = 4096 / shrink, h = 16384 / shrink;
    auto m = std::make_shared<Mlp>(d, h);
    m->eval();
    m->to(kCUDA, kBFloat16);
    w.module = m;
    w.dtype = "bf16", w.shape = fmt::format("T{} D{} H{}", t, d, h), w.flops = 2.0 * 2 * t * d * h;
    w.fn = [m](const std::vector<Tensor>& in) { return std::vector<Tensor>{(*m)(in[0])}; };
    w.inputs = {randn({t, d}).to(bf16)};
  } else if (name == "reduce_sum") {
    int64_t n = (int64_t{64} << 20) / shrink;
    w.dtype = "f32", w.shape = dims({n}), w.bytes = 4.0 * n;
    w.fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].sum()}; };
    w.inputs = {randn({n}).to(f32)};
  } else if (name == "small_ops") {
    int64_t n = 256;
    w.dtype = "f32", w.shape = dims({n, n}), w.bytes = 3.0 * 4 * n * n;
    w.fn = [](const std::vector<Tensor>& in) {
      Tensor x = in[0];
      for (int i = 0; i < 10; ++i) {
        x = relu(x * 0.9 + 0.1);
        x = x - x.mean({-1}, /*keepdim=*/true);
        x = tanh(x) + in[1];
      }
      return std::vector<Tensor>{x};
    };
    w.inputs = {randn({n, n}).to(f32), randn({n, n}).to(f32)};
  } else {
    throw Error(fmt::format("bench --device cuda: no GPU workload '{}' (pointwise, ln_gelu, softmax, mlp, reduce_sum, small_ops)", name));
  }
  return w;
}

// Median milliseconds per call of `fn` and `gn`, timed alternately: on a GPU, CUDA events around a block of calls
// (as many as fill about a millisecond, at most 20), so that the host's work for the next call overlaps the
// device's work for this one even when the other function waits for the device (the eager fallback copies to the
// host); when simulated, the wall clock of each call.
std::pair<double, double> time_pair_device(const std::function<void()>& fn, const std::function<void()>& gn,
                                           int reps) {
  for (int i = 0; i < 2; ++i) fn(), gn();
  cuda::synchronize();
  auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  auto block = [](const std::function<void()>& f, int calls) {
    if (cuda::is_simulated()) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i) f();
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / calls;
    }
    cuda::driver::Event start, stop;
    start.record(nullptr);
    for (int i = 0; i < calls; ++i) f();
    stop.record(nullptr);
    stop.synchronize();
    return static_cast<double>(stop.elapsed_ms_since(start)) / calls;
  };
  auto calls_for = [&](const std::function<void()>& f) {
    double once = block(f, 1);
    return cuda::is_simulated() ? 1 : static_cast<int>(std::clamp(1.0 / std::max(once, 1e-3), 1.0, 20.0));
  };
  const int nf = calls_for(fn), ng = calls_for(gn);
  std::vector<double> a, b;
  for (int i = 0; i < reps; ++i) {
    a.push_back(block(fn, nf));
    b.push_back(block(gn, ng));
  }
  return {median(a), median(b)};
}

// Microseconds of host time per call of `fn` with the device's queue kept full: what a call costs the CPU.
double host_us_per_call(const std::function<void()>& fn, int calls) {
  cuda::synchronize();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) fn();
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls;
  cuda::synchronize();
  return us;
}

double seconds_of_first_call(const std::function<void()>& first, double steady_ms) {
  auto t0 = std::chrono::steady_clock::now();
  first();
  cuda::synchronize();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return std::max(0.0, s - steady_ms / 1000);
}

double max_rel_err(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    Tensor r = want[i].cpu().to(kFloat64), g = got[i].cpu().to(kFloat64);
    double denom = norm(r).item<double>();
    worst = std::max(worst, norm(g - r).item<double>() / (denom > 0 ? denom : 1));
  }
  return worst;
}

}  // namespace

int bench_cuda(const BenchOptions& opt) {
  SINTER_CHECK(cuda::is_available(), "bench --device cuda: {}", cuda::unavailable_reason());
  cuda::DeviceProperties props = cuda::get_device_properties(0);
  std::vector<std::string> names = {"pointwise", "ln_gelu", "softmax", "mlp", "reduce_sum", "small_ops"};
  if (!opt.only.empty()) names = {opt.only};
  const int64_t shrink = opt.quick && cuda::is_simulated() ? 64 : 1;
  std::string run_cache = make_temp_dir("sinter-bench-cuda");  // cold compiles start from an empty cache
  setenv("SINTER_CACHE_DIR", run_cache.c_str(), 1);
  fmt::print("sinter bench --device cuda: {} (sm_{}{}, {} SMs){}, {}\n", props.name, props.major, props.minor,
             props.multiprocessors, cuda::is_simulated() ? ", simulated" : "", machine_name());
  fmt::print("{:<10} {:>5} {:>16} {:>11} {:>11} {:>8} {:>9} {:>8} {:>8} {:>9} {:>8} {:>10} {:>8} {:>8} {:>8} {:>9} "
             "{:>8} {:>9} {:>9} {:>8}\n",
             "workload", "dtype", "shape", "eager ms", "compiled ms", "speedup", "GB/s", "TFLOP/s", "kernels", "cold s",
             "warm s", "max_rel", "host us", "eag cold", "eag warm", "ro ms", "ro us", "cg ms", "at ms", "at cold");
  std::vector<std::string> items;
  for (const std::string& name : names) {
    GpuWorkload w = make_gpu_workload(name, shrink);
    auto fn = w.fn;
    std::vector<Tensor> in = w.inputs;
    // Eager's first use compiles its generated kernels (cold: an empty cache of its own; warm: the disk cache
    // filled, the process's programs forgotten).
    std::string eager_cache = make_temp_dir("sinter-bench-cuda-eager");
    setenv("SINTER_CACHE_DIR", eager_cache.c_str(), 1);
    backends::clear_cuda_eager_programs();
    double eager_cold = seconds_of_first_call([&] { fn(in); }, 0);
    backends::clear_cuda_eager_programs();
    double eager_warm = seconds_of_first_call([&] { fn(in); }, 0);
    setenv("SINTER_CACHE_DIR", run_cache.c_str(), 1);
    remove_dir(eager_cache);
    auto compiled = compile(fn, {.backend = "inductor"});
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> out = compiled(in);
    cuda::synchronize();
    double first_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<Tensor> want = fn(in);
    double err = max_rel_err(out, want);
    int reps = cuda::is_simulated() ? 3 : 10;
    auto [eager_ms, compiled_ms] = time_pair_device([&] { fn(in); }, [&] { compiled(in); }, reps);
    double cold = std::max(0.0, first_s - compiled_ms / 1000);
    auto again = compile(fn, {.backend = "inductor"});
    double warm = seconds_of_first_call([&] { again(in); }, compiled_ms);
    std::optional<double> kernels;
    if (compiled.stats().kernels_per_call >= 0) kernels = compiled.stats().kernels_per_call;
    double gbps = w.bytes > 0 ? w.bytes / (compiled_ms * 1e6) : NAN;
    double tflops = w.flops > 0 ? w.flops / (compiled_ms * 1e9) : NAN;
    double host_us = host_us_per_call([&] { compiled(in); }, cuda::is_simulated() ? 3 : 50);
    // reduce-overhead (CUDA graphs): run, capture, replay, then timed beside the default mode.
    auto graphed = compile(fn, {.backend = "inductor", .mode = Mode::kReduceOverhead});
    for (int i = 0; i < 2; ++i) graphed(in);
    err = std::max(err, max_rel_err(graphed(in), want));
    double ro_ms = time_pair_device([&] { compiled(in); }, [&] { graphed(in); }, reps).second;
    double ro_host_us = host_us_per_call([&] { graphed(in); }, cuda::is_simulated() ? 3 : 50);
    // The cudagraphs backend: eager's kernels (aot_eager) captured and replayed, beside eager.
    auto eager_graphed = compile(fn, {.backend = "cudagraphs"});
    for (int i = 0; i < 2; ++i) eager_graphed(in);
    err = std::max(err, max_rel_err(eager_graphed(in), want));
    double cg_ms = time_pair_device([&] { fn(in); }, [&] { eager_graphed(in); }, reps).second;
    // max-autotune: its first call measures the launch configurations (from an empty cache: cold).
    auto tuned = compile(fn, {.backend = "inductor", .mode = Mode::kMaxAutotune});
    auto t1 = std::chrono::steady_clock::now();
    err = std::max(err, max_rel_err(tuned(in), want));
    double at_cold = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    double at_ms = time_pair_device([&] { compiled(in); }, [&] { tuned(in); }, reps).second;
    eager_cold = std::max(0.0, eager_cold - eager_ms / 1000);
    eager_warm = std::max(0.0, eager_warm - eager_ms / 1000);
    fmt::print("{:<10} {:>5} {:>16} {:>11.4f} {:>11.4f} {:>7.2f}x {:>9.1f} {:>8.1f} {:>8} {:>9.3f} {:>8.4f} {:>10.2e} "
               "{:>8.1f} {:>8.3f} {:>8.4f} {:>9.4f} {:>8.1f} {:>9.4f} {:>9.4f} {:>8.3f}\n",
               w.name, w.dtype, w.shape, eager_ms, compiled_ms, eager_ms / compiled_ms, gbps, tflops,
               kernels ? fmt::format("{}", *kernels) : "-", cold, warm, err, host_us, eager_cold, eager_warm, ro_ms,
               ro_host_us, cg_ms, at_ms, at_cold);
    std::fflush(stdout);
    Json j;
    j.add("workload", w.name).add("dtype", w.dtype).add("shape", w.shape).add("backend", "inductor");
    j.add("eager_ms", eager_ms).add("compiled_ms", compiled_ms).add("speedup", eager_ms / compiled_ms);
    if (w.bytes > 0) j.add("gbps", gbps);
    if (w.flops > 0) j.add("tflops", tflops);
    if (kernels) j.add("kernels_per_call", *kernels);
    j.add("compile_cold_s", cold).add("compile_warm_s", warm).add("max_rel_err", err).add("host_us_per_call", host_us);
    j.add("eager_first_call_cold_s", eager_cold).add("eager_first_call_warm_s", eager_warm);
    j.add("reduce_overhead_ms", ro_ms).add("reduce_overhead_host_us_per_call", ro_host_us);
    j.add("cudagraphs_backend_ms", cg_ms).add("max_autotune_ms", at_ms).add("max_autotune_first_call_s", at_cold);
    items.push_back(j.str());
  }
  remove_dir(run_cache);
  if (!opt.json.empty()) {
    Json env;
    env.add("machine", machine_name()).add("date", today()).add("device", "cuda").add("gpu", props.name);
    env.add_raw("simulated", cuda::is_simulated() ? "true" : "false");
    env.add("sinter_commit", git_commit()).add("suite", "workloads");
    env.add_raw("quick", opt.quick ? "true" : "false");
    env.add_raw("results", json_array(items));
    write_file(opt.json, env.str());
    fmt::print("wrote {}\n", opt.json);
  }
  return 0;
}

}  // namespace sinter::tools
