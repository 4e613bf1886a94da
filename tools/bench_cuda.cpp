// `sinter bench --device cuda`: every workload of bench/WORKLOADS.md's GPU column at its shapes and dtypes
// (pointwise, ln_gelu, softmax, mlp, gpt_block, naive_attention, resnet_block, small_ops, dynamic_mlp, reduce_sum),
// eager and compiled with the inductor backend on cuda:0, with the fields of the CPU bench, and the same compiled
// under reduce-overhead (CUDA graphs: "ro ms" per call on the device, "ro us" of host time per call) and with the
// cudagraphs backend (eager's kernels replayed as one CUDA graph: "cg ms") and under max-autotune ("at ms";
// "at cold": its first call, the measuring included). The GEMMs are cuBLAS calls between generated kernels;
// attention and convolutions run as whatever the CUDA target has for them (gpt_block's attention: the flash
// kernel; an op without a GPU kernel: its CPU kernel on staged copies, slow at these shapes but correct). The
// model classes and functions are tools/workloads.h's, shared with the CPU bench.
// dynamic_mlp is one compiled model called on each batch size in turn: its times are sums over the sizes, and a
// line below the table gives its compiles and the first call (ms) of each size, as the CPU bench prints them.
// On a GPU the steady calls are timed with CUDA events after warm-up (eager and compiled alternately, medians);
// on the simulated device (SINTER_CUDA_SIM=1) with the wall clock, and --quick shrinks the shapes (64-fold where
// a size allows it; head dim 64 and channel counts of 16 or more kept).
// Compile seconds: cold is the first call of a fresh compiled function on an empty kernel cache, warm the first
// call of a second one (the same graph, its kernels loaded from the disk cache), each minus a steady call.
// A workload that fails is reported as failed (a JSON row with "error") and the others still run.
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

using CallFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

struct GpuWorkload {
  std::string name, dtype, shape;
  double bytes = 0;                    // minimum bytes per pass over `calls`; 0: GB/s not reported
  double flops = 0;                    // the matrix products' floating-point operations per pass over `calls`
  std::shared_ptr<nn::Module> module;  // a module workload: compiled as the module (compile(module))
  CallFn fn;                           // eager
  // The inputs (on cuda:0) of each call of one pass: one call for most workloads; dynamic_mlp has one per batch
  // size, in WORKLOADS.md's order, and its times are sums over them.
  std::vector<std::vector<Tensor>> calls;
  std::vector<int64_t> batch_sizes;  // dynamic_mlp
};

// A compiled workload, type-erased (a function or a module).
struct GpuCompiled {
  CallFn call;
  std::function<CompileStats()> stats;
};

GpuCompiled compile_workload(const GpuWorkload& w, const CompileOptions& options) {
  if (w.module) {
    auto c = compile(*w.module, options);
    return {[c](const std::vector<Tensor>& in) { return std::vector<Tensor>{c(in[0])}; },
            [c] { return c.stats(); }};
  }
  auto c = compile(w.fn, options);
  return {[c](const std::vector<Tensor>& in) { return c(in); }, [c] { return c.stats(); }};
}

// A module workload: eval, on cuda:0 in `dtype`, called eagerly through forward.
void set_module(GpuWorkload& w, std::shared_ptr<nn::Module> m, DType dtype) {
  m->eval();
  m->to(kCUDA, dtype);
  w.module = m;
  w.fn = [raw = m.get()](const std::vector<Tensor>& in) { return std::vector<Tensor>{raw->forward(in[0])}; };
}

std::string dims(const std::vector<int64_t>& d) { return fmt::format("[{}]", fmt::join(d, ", ")); }

// bench/WORKLOADS.md's GPU column, in its order.
std::vector<std::string> gpu_workload_names() {
  return {"pointwise",    "ln_gelu",   "softmax",     "mlp",       "gpt_block", "naive_attention",
          "resnet_block", "small_ops", "dynamic_mlp", "reduce_sum"};
}

// The workload at bench/WORKLOADS.md's GPU shape, or (shrink > 1, the simulated device's --quick) a smaller one.
GpuWorkload make_gpu_workload(const std::string& name, int64_t shrink) {
  manual_seed(1234);
  GpuWorkload w;
  w.name = name;
  TensorOptions f32 = TensorOptions(kFloat32).device(kCUDA), bf16 = TensorOptions(kBFloat16).device(kCUDA);
  const bool shrunk = shrink > 1;
  if (name == "pointwise") {
    int64_t n = (int64_t{64} << 20) / shrink;
    w.dtype = "f32", w.shape = dims({n}), w.bytes = 2.0 * 4 * n;
    w.fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{pointwise_fn(in[0])}; };
    w.calls = {{randn({n}).to(f32)}};
  } else if (name == "ln_gelu") {
    int64_t n = 16384 / shrink, d = 4096;
    w.dtype = "bf16", w.shape = dims({n, d}), w.bytes = 2.0 * (3 * n * d + 2 * d);
    w.fn = [](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{ln_gelu_fn(in[0], in[1], in[2], in[3])};
    };
    w.calls = {{randn({n, d}).to(bf16), randn({n, d}).to(bf16), (rand({d}) + 0.5).to(bf16),
                (randn({d}) * 0.1).to(bf16)}};
  } else if (name == "softmax") {
    int64_t n = 32768 / shrink, d = 4096;
    w.dtype = "f32", w.shape = dims({n, d}), w.bytes = 2.0 * 4 * n * d;
    w.fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax_fn(in[0])}; };
    w.calls = {{randn({n, d}).to(f32)}};
  } else if (name == "mlp") {
    int64_t t = 8192 / shrink, d = 4096 / shrink, h = 16384 / shrink;
    set_module(w, std::make_shared<Mlp>(d, h), kBFloat16);
    w.dtype = "bf16", w.shape = fmt::format("T{} D{} H{}", t, d, h), w.flops = 2.0 * 2 * t * d * h;
    w.calls = {{randn({t, d}).to(bf16)}};
  } else if (name == "gpt_block") {
    // Head dim 64 at every size: shrunk, one sequence of 32 tokens and two heads (D 128).
    int64_t b = std::max<int64_t>(1, 8 / shrink), s = std::max<int64_t>(32, 1024 / shrink);
    int64_t heads = std::max<int64_t>(2, 16 / shrink), d = 64 * heads;
    set_module(w, std::make_shared<GptBlock>(d, heads), kBFloat16);
    w.dtype = "bf16", w.shape = fmt::format("B{} S{} D{} H{}", b, s, d, heads);
    // The four linears (12 D^2 multiply-adds per token), q k^T and p v over the full S x S square (causal
    // masking skips half of it; counted in full, as PyTorch's flop counter does).
    w.flops = 2.0 * 12 * b * s * d * d + 4.0 * b * s * s * d;
    w.calls = {{randn({b, s, d}).to(bf16)}};
  } else if (name == "naive_attention") {
    int64_t b = std::max<int64_t>(1, 8 / shrink), heads = std::max<int64_t>(2, 16 / shrink);
    int64_t s = std::max<int64_t>(64, 2048 / shrink), d = 64;
    double scale = 1.0 / std::sqrt(static_cast<double>(d));
    w.dtype = "bf16", w.shape = fmt::format("B{} H{} S{} D{}", b, heads, s, d), w.flops = 4.0 * b * heads * s * s * d;
    w.fn = [scale](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{naive_attention_fn(in[0], in[1], in[2], scale)};
    };
    w.calls = {{randn({b, heads, s, d}).to(bf16), randn({b, heads, s, d}).to(bf16), randn({b, heads, s, d}).to(bf16)}};
  } else if (name == "resnet_block") {
    int64_t n = std::max<int64_t>(1, 64 / shrink), c = shrunk ? 16 : 64, hw = shrunk ? 14 : 56;
    auto block = std::make_shared<ResNetBlock>(c);
    block->randomize_bn_stats();  // on the host, before the move to the device
    set_module(w, block, kBFloat16);
    w.dtype = "bf16", w.shape = fmt::format("N{} C{} {}x{} NHWC", n, c, hw, hw);
    w.flops = 2 * 2.0 * n * hw * hw * c * c * 9;
    w.calls = {{randn({n, c, hw, hw}).to(bf16).contiguous(kChannelsLast)}};
  } else if (name == "dynamic_mlp") {
    // The mlp with D 1024, H 4096 (shrunk: D and H divided, the batch sizes kept), one model for every size.
    int64_t d = kMlpDim / shrink, h = kMlpHidden / shrink;
    set_module(w, std::make_shared<Mlp>(d, h), kBFloat16);
    w.batch_sizes = dynamic_mlp_batches();
    w.dtype = "bf16", w.shape = fmt::format("D{} H{} T 1..2048 ({} sizes)", d, h, w.batch_sizes.size());
    for (int64_t t : w.batch_sizes) {
      w.calls.push_back({randn({t, d}).to(bf16)});
      w.flops += 2.0 * 2 * t * d * h;
    }
  } else if (name == "reduce_sum") {
    int64_t n = (int64_t{64} << 20) / shrink;
    w.dtype = "f32", w.shape = dims({n}), w.bytes = 4.0 * n;
    w.fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].sum()}; };
    w.calls = {{randn({n}).to(f32)}};
  } else if (name == "small_ops") {
    int64_t n = 256;
    w.dtype = "f32", w.shape = dims({n, n}), w.bytes = 3.0 * 4 * n * n;
    w.fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{small_ops_fn(in[0], in[1])}; };
    w.calls = {{randn({n, n}).to(f32), randn({n, n}).to(f32)}};
  } else {
    throw Error(fmt::format("bench --device cuda: no GPU workload '{}' ({})", name,
                            fmt::join(gpu_workload_names(), ", ")));
  }
  return w;
}

// Median milliseconds per call of `fn` and `gn`, timed alternately: on a GPU, CUDA events around a block of calls
// (as many as fill about a millisecond, at most 20), so that the host's work for the next call overlaps the
// device's work for this one even when the other function waits for the device (the eager fallback copies to the
// host); when simulated, the wall clock of each call. A call slower than 100 ms (a CPU kernel on staged copies)
// is timed 3 times rather than `reps`.
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
  double slowest = 0;
  auto calls_for = [&](const std::function<void()>& f) {
    double once = block(f, 1);
    slowest = std::max(slowest, once);
    return cuda::is_simulated() ? 1 : static_cast<int>(std::clamp(1.0 / std::max(once, 1e-3), 1.0, 20.0));
  };
  const int nf = calls_for(fn), ng = calls_for(gn);
  if (slowest > 100) reps = std::min(reps, 3);
  std::vector<double> a, b;
  for (int i = 0; i < reps; ++i) {
    a.push_back(block(fn, nf));
    b.push_back(block(gn, ng));
  }
  return {median(a), median(b)};
}

// As time_pair_device for each call of a pass (one for most workloads, one per batch size for dynamic_mlp),
// summed: the milliseconds of one pass.
std::pair<double, double> time_pair_pass(const GpuWorkload& w, const CallFn& f, const CallFn& g, int reps) {
  double a = 0, b = 0;
  for (const std::vector<Tensor>& in : w.calls) {
    auto [x, y] = time_pair_device([&] { f(in); }, [&] { g(in); }, reps);
    a += x, b += y;
  }
  return {a, b};
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

// Summed over the calls of a pass.
double host_us_per_pass(const GpuWorkload& w, const CallFn& f, int calls) {
  double us = 0;
  for (const std::vector<Tensor>& in : w.calls) us += host_us_per_call([&] { f(in); }, calls);
  return us;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Milliseconds of the first call of each call of a pass (each waited for on the device), and the outputs.
std::vector<double> first_calls_ms(const GpuWorkload& w, const CallFn& f, std::vector<std::vector<Tensor>>* outs) {
  std::vector<double> ms;
  for (const std::vector<Tensor>& in : w.calls) {
    cuda::synchronize();
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> out = f(in);
    cuda::synchronize();
    ms.push_back(seconds_since(t0) * 1000);
    if (outs) outs->push_back(std::move(out));
  }
  return ms;
}

// Seconds of one first pass, minus `steady_ms` (a steady pass).
double seconds_of_first_pass(const GpuWorkload& w, const CallFn& f, double steady_ms) {
  std::vector<double> ms = first_calls_ms(w, f, nullptr);
  double total = 0;
  for (double m : ms) total += m;
  return std::max(0.0, (total - steady_ms) / 1000);
}

double max_rel_err(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  SINTER_CHECK(got.size() == want.size(), "compiled function returned {} outputs, eager {}", got.size(),
               want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    Tensor r = want[i].cpu().to(kFloat64), g = got[i].cpu().to(kFloat64);
    double denom = norm(r).item<double>();
    worst = std::max(worst, norm(g - r).item<double>() / (denom > 0 ? denom : 1));
  }
  return worst;
}

// The largest error of f's outputs over a pass against eager's (`wants`, one per call).
double max_rel_err_pass(const GpuWorkload& w, const CallFn& f, const std::vector<std::vector<Tensor>>& wants) {
  double worst = 0;
  for (size_t i = 0; i < w.calls.size(); ++i) worst = std::max(worst, max_rel_err(f(w.calls[i]), wants[i]));
  return worst;
}

std::string num(double v, const char* spec) { return std::isnan(v) ? "-" : fmt::format(fmt::runtime(spec), v); }

// One workload measured: its row of the table (printed), and its JSON object.
std::string bench_workload(const GpuWorkload& w, const std::string& run_cache) {
  const CallFn& fn = w.fn;
  const bool sim = cuda::is_simulated();
  // Eager's first use compiles its generated kernels (cold: an empty cache of its own; warm: the disk cache
  // filled, the process's programs forgotten).
  std::string eager_cache = make_temp_dir("sinter-bench-cuda-eager");
  setenv("SINTER_CACHE_DIR", eager_cache.c_str(), 1);
  backends::clear_cuda_eager_programs();
  double eager_cold = seconds_of_first_pass(w, fn, 0);
  backends::clear_cuda_eager_programs();
  double eager_warm = seconds_of_first_pass(w, fn, 0);
  setenv("SINTER_CACHE_DIR", run_cache.c_str(), 1);
  remove_dir(eager_cache);
  GpuCompiled compiled = compile_workload(w, {.backend = "inductor"});
  std::vector<std::vector<Tensor>> outs, wants;
  std::vector<double> first_ms = first_calls_ms(w, compiled.call, &outs);
  double first_total_ms = 0, err = 0;
  for (double m : first_ms) first_total_ms += m;
  for (size_t i = 0; i < w.calls.size(); ++i) {
    wants.push_back(fn(w.calls[i]));
    err = std::max(err, max_rel_err(outs[i], wants[i]));
  }
  outs.clear();
  const int reps = sim ? 3 : 10;
  auto [eager_ms, compiled_ms] = time_pair_pass(w, fn, compiled.call, reps);
  const int host_calls = sim || compiled_ms > 100 ? 3 : 50;  // fewer where a call takes long (staged CPU kernels)
  double cold = std::max(0.0, (first_total_ms - compiled_ms) / 1000);
  GpuCompiled again = compile_workload(w, {.backend = "inductor"});
  double warm = seconds_of_first_pass(w, again.call, compiled_ms);
  CompileStats stats = compiled.stats();
  std::optional<double> kernels;
  if (stats.kernels_per_call >= 0) kernels = stats.kernels_per_call;
  double gbps = w.bytes > 0 ? w.bytes / (compiled_ms * 1e6) : NAN;
  double tflops = w.flops > 0 ? w.flops / (compiled_ms * 1e9) : NAN;
  double host_us = host_us_per_pass(w, compiled.call, host_calls);
  // reduce-overhead (CUDA graphs): run, capture, replay, then timed beside the default mode.
  GpuCompiled graphed = compile_workload(w, {.backend = "inductor", .mode = Mode::kReduceOverhead});
  for (const std::vector<Tensor>& in : w.calls)
    for (int i = 0; i < 2; ++i) graphed.call(in);
  err = std::max(err, max_rel_err_pass(w, graphed.call, wants));
  double ro_ms = time_pair_pass(w, compiled.call, graphed.call, reps).second;
  double ro_host_us = host_us_per_pass(w, graphed.call, host_calls);
  // The cudagraphs backend: eager's kernels (aot_eager) captured and replayed, beside eager.
  GpuCompiled eager_graphed = compile_workload(w, {.backend = "cudagraphs"});
  for (const std::vector<Tensor>& in : w.calls)
    for (int i = 0; i < 2; ++i) eager_graphed.call(in);
  err = std::max(err, max_rel_err_pass(w, eager_graphed.call, wants));
  double cg_ms = time_pair_pass(w, fn, eager_graphed.call, reps).second;
  // max-autotune: its first calls measure the launch configurations (from an empty cache: cold).
  GpuCompiled tuned = compile_workload(w, {.backend = "inductor", .mode = Mode::kMaxAutotune});
  auto t1 = std::chrono::steady_clock::now();
  err = std::max(err, max_rel_err_pass(w, tuned.call, wants));
  double at_cold = seconds_since(t1);
  double at_ms = time_pair_pass(w, compiled.call, tuned.call, reps).second;
  eager_cold = std::max(0.0, eager_cold - eager_ms / 1000);
  eager_warm = std::max(0.0, eager_warm - eager_ms / 1000);
  fmt::print("{:<15} {:>5} {:>32} {:>11.4f} {:>11.4f} {:>7.2f}x {:>9} {:>8} {:>8} {:>9.3f} {:>8.4f} {:>10.2e} "
             "{:>8.1f} {:>8.3f} {:>8.4f} {:>9.4f} {:>8.1f} {:>9.4f} {:>9.4f} {:>8.3f}\n",
             w.name, w.dtype, w.shape, eager_ms, compiled_ms, eager_ms / compiled_ms, num(gbps, "{:.1f}"),
             num(tflops, "{:.1f}"), kernels ? fmt::format("{}", *kernels) : "-", cold, warm, err, host_us,
             eager_cold, eager_warm, ro_ms, ro_host_us, cg_ms, at_ms, at_cold);
  if (!w.batch_sizes.empty()) {
    std::string calls;
    for (size_t i = 0; i < first_ms.size(); ++i) calls += fmt::format(" {}:{:.1f}", w.batch_sizes[i], first_ms[i]);
    fmt::print("{:<15} compiles {}; first call ms per batch size:{}\n", "", stats.compiles, calls);
  }
  std::fflush(stdout);
  Json j;
  j.add("workload", w.name).add("backend", "inductor").add("mode", "default").add("dtype", w.dtype);
  j.add("shape", w.shape);
  j.add("eager_ms", eager_ms).add("compiled_ms", compiled_ms).add("speedup", eager_ms / compiled_ms);
  kernels ? j.add("kernels", *kernels) : j.add_null("kernels");
  j.add("compile_s_cold", cold).add("compile_s_warm", warm).add("max_rel_err", err);
  w.bytes > 0 ? j.add("gbps", gbps) : j.add_null("gbps");
  w.flops > 0 ? j.add("tflops", tflops) : j.add_null("tflops");
  j.add("compiles", stats.compiles);
  if (w.batch_sizes.empty()) {
    j.add("first_call_ms", first_total_ms);
  } else {
    std::vector<double> sizes(w.batch_sizes.begin(), w.batch_sizes.end());
    j.add_raw("first_call_ms", json_list(first_ms)).add_raw("batch_sizes", json_list(sizes));
  }
  j.add("host_us_per_call", host_us);
  j.add("eager_first_call_cold_s", eager_cold).add("eager_first_call_warm_s", eager_warm);
  j.add("reduce_overhead_ms", ro_ms).add("reduce_overhead_host_us_per_call", ro_host_us);
  j.add("cudagraphs_backend_ms", cg_ms).add("max_autotune_ms", at_ms).add("max_autotune_first_call_s", at_cold);
  return j.str();
}

}  // namespace

int bench_cuda(const BenchOptions& opt) {
  SINTER_CHECK(cuda::is_available(), "bench --device cuda: {}", cuda::unavailable_reason());
  cuda::DeviceProperties props = cuda::get_device_properties(0);
  std::vector<std::string> names = gpu_workload_names();
  if (!opt.only.empty()) {
    SINTER_CHECK(std::find(names.begin(), names.end(), opt.only) != names.end(),
                 "bench --device cuda: no GPU workload '{}' ({})", opt.only, fmt::join(names, ", "));
    names = {opt.only};
  }
  const int64_t shrink = opt.quick && cuda::is_simulated() ? 64 : 1;
  std::string run_cache = make_temp_dir("sinter-bench-cuda");  // cold compiles start from an empty cache
  setenv("SINTER_CACHE_DIR", run_cache.c_str(), 1);
  fmt::print("sinter bench --device cuda: {} (sm_{}{}, {} SMs){}, {}, {} host threads\n", props.name, props.major,
             props.minor, props.multiprocessors, cuda::is_simulated() ? ", simulated" : "", machine_name(),
             get_num_threads());
  fmt::print("{:<15} {:>5} {:>32} {:>11} {:>11} {:>8} {:>9} {:>8} {:>8} {:>9} {:>8} {:>10} {:>8} {:>8} {:>8} {:>9} "
             "{:>8} {:>9} {:>9} {:>8}\n",
             "workload", "dtype", "shape", "eager ms", "compiled ms", "speedup", "GB/s", "TFLOP/s", "kernels",
             "cold s", "warm s", "max_rel", "host us", "eag cold", "eag warm", "ro ms", "ro us", "cg ms", "at ms",
             "at cold");
  std::vector<std::string> items;
  for (const std::string& name : names) {
    GpuWorkload w = make_gpu_workload(name, shrink);
    try {
      items.push_back(bench_workload(w, run_cache));
    } catch (const std::exception& e) {  // one workload's failure should not hide the others' results
      setenv("SINTER_CACHE_DIR", run_cache.c_str(), 1);
      std::string what = e.what();
      fmt::print("{:<15} {:>5} {:>32} failed: {}\n", w.name, w.dtype, w.shape, what.substr(0, 300));
      std::fflush(stdout);
      Json j;
      j.add("workload", w.name).add("backend", "inductor").add("mode", "default").add("dtype", w.dtype);
      j.add("shape", w.shape).add("error", what);
      items.push_back(j.str());
    }
  }
  remove_dir(run_cache);
  if (!opt.json.empty()) {
    Json env = results_envelope("cuda", "workloads", opt.quick);
    env.add("gpu", props.name).add_raw("simulated", cuda::is_simulated() ? "true" : "false");
    env.add_raw("results", json_array(items));
    write_file(opt.json, env.str());
    fmt::print("wrote {}\n", opt.json);
  }
  return 0;
}

}  // namespace sinter::tools
