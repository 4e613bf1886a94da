// `sinter bench --device cpu`: every CPU workload of bench/WORKLOADS.md, eager and compiled under each backend,
// with the fields it lists (times, speedup, kernels per call, cold and warm compile seconds, error
// against eager, GB/s or TFLOP/s, peak memory) printed as one table and written as its JSON.
//
// Compile times come from child processes of this same program (`--probe NAME`), so that they measure what a
// user sees: cold is the first process on an empty SINTER_CACHE_DIR (no in-memory cache, nothing warmed up),
// warm is a second process on the same directory (the disk cache hit). Each child reports its own
// CompileStats::compile_seconds. A backend named "B+tiered" is B with CompileOptions::tiered: its first_call_ms
// is the call that runs on aot_eager while B compiles (its compiled ms, once B's code took over).
#include <algorithm>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <thread>
#include <optional>
#include <tuple>

#include "bench_util.h"
#include "support/check.h"
#include "tensor/allocator.h"
#include "tools.h"
#include "workloads.h"

namespace sinter::tools {
namespace {

struct Row {
  std::string workload, backend, shape;
  double eager_ms = NAN, compiled_ms = NAN, first_call_ms = NAN;
  std::optional<double> kernels;
  double compile_cold = NAN, compile_warm = NAN, compile_inprocess = NAN;
  double max_rel_err = NAN, gbps = NAN, tflops = NAN, eager_gbps = NAN, eager_tflops = NAN;
  double peak_mb_eager = NAN, peak_mb_compiled = NAN;
  int compiles = 0;
  std::vector<double> first_calls;  // dynamic_mlp: first-call ms per batch size
  std::string error;                // set when this backend failed on this workload
};

// ||out - ref|| / ||ref|| in float64 (bench/WORKLOADS.md's max_rel_err), the largest over the outputs.
double max_rel_err(const std::vector<Tensor>& out, const std::vector<Tensor>& ref) {
  SINTER_CHECK(out.size() == ref.size(), "compiled function returned {} outputs, eager {}", out.size(),
               ref.size());
  double worst = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    Tensor r = ref[i].to(kFloat64);
    double denom = norm(r).item<double>();
    double diff = norm(out[i].to(kFloat64) - r).item<double>();
    worst = std::max(worst, denom > 0 ? diff / denom : diff);
  }
  return worst;
}

// Extra bytes the allocator held at its peak during one call (outputs included), above what was live before.
double peak_mb(const std::function<void()>& fn) {
  reset_cpu_peak_memory();
  size_t base = cpu_memory_stats().allocated;
  fn();
  return static_cast<double>(cpu_memory_stats().peak - base) / (1 << 20);
}

// Bytes live now above `before`, in MB: what a compiled function keeps between calls (buffers it planned
// once, constants), counted into its peak so that memory held across calls is not hidden.
double held_mb(size_t before) {
  size_t now = cpu_memory_stats().allocated;
  return now > before ? static_cast<double>(now - before) / (1 << 20) : 0.0;
}

// Runs one (workload, backend) measurement; a failure becomes a row with the error instead of ending the run
// (a backend under construction should not hide the other results).
void guarded(Row& row, const std::function<void()>& measure) {
  try {
    measure();
  } catch (const std::exception& e) {
    row.error = e.what();
    fmt::print("  {} / {} failed: {}\n", row.workload, row.backend, row.error);
  }
}

// dynamic_mlp: one compiled function called on every batch size in turn, under the default dynamic policy.
struct DynamicMlp {
  std::shared_ptr<Mlp> model = std::make_shared<Mlp>(kMlpDim, kMlpHidden);
  std::vector<Tensor> inputs;
  DynamicMlp() {
    manual_seed(1234);
    model->eval();
    for (int64_t b : dynamic_mlp_batches()) inputs.push_back(randn({b, kMlpDim}));
  }
  double flops() const {
    double f = 0;
    for (const Tensor& x : inputs) f += 4.0 * static_cast<double>(x.size(0).hint()) * kMlpDim * kMlpHidden;
    return f;
  }
};

// The hidden child: compile one workload with one backend, report the compile seconds, exit.
int run_probe(const BenchOptions& opt) {
  const std::string& backend = opt.backends.at(0);
  CompileStats stats;
  if (opt.probe == "dynamic_mlp") {
    DynamicMlp d;
    auto compiled = compile(*d.model, options_for(backend));
    for (const Tensor& x : d.inputs) (void)compiled(x);
    stats = compiled.stats();
  } else {
    Workload w = make_workload(opt.probe);
    CompiledRun run = w.compile(options_for(backend));
    (void)run.call();
    stats = run.stats();
  }
  fmt::print("probe compile_s={:.6f} compiles={}\n", stats.compile_seconds, stats.compiles);
  return 0;
}

// Compile seconds in a fresh process on `cache_dir`; NaN (with the child's output on stderr) when it failed.
double probe_compile_seconds(const std::string& workload, const std::string& backend,
                             const std::string& cache_dir) {
  ChildResult r = run_self({"bench", "--device", "cpu", "--probe", workload, "--backends", backend,
                            "--threads", std::to_string(get_num_threads())},
                           {{"SINTER_CACHE_DIR", cache_dir}});
  return probe_field(r, "compile_s", fmt::format("compile-time probe of {} / {}", workload, backend));
}

void probe_cold_and_warm(Row& row) {
  std::string dir = make_temp_dir("sinter-bench-cache");
  row.compile_cold = probe_compile_seconds(row.workload, row.backend, dir);
  row.compile_warm = probe_compile_seconds(row.workload, row.backend, dir);
  remove_dir(dir);
}

std::vector<Row> bench_one(const std::string& name, const std::vector<std::string>& backends,
                           double budget_ms) {
  Workload w = make_workload(name);
  std::vector<Tensor> ref = w.eager();
  double eager_peak = peak_mb([&] { (void)w.eager(); });
  std::vector<Row> rows;
  for (const std::string& backend : backends) {
    Row row{name, backend, w.shape};
    row.peak_mb_eager = eager_peak;
    guarded(row, [&] {
      size_t before = cpu_memory_stats().allocated;
      CompiledRun run = w.compile(options_for(backend));
      auto start = std::chrono::steady_clock::now();
      std::vector<Tensor> out = run.call();
      row.first_call_ms = ms_since(start);
      row.max_rel_err = max_rel_err(out, ref);
      out.clear();
      if (options_for(backend).tiered)  // the steady calls are the backend's code: wait for the switch
        for (int i = 0; i < 6000 && run.stats().tier_switches < run.stats().compiles; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::tie(row.eager_ms, row.compiled_ms) =
          time_pair_ms([&] { (void)w.eager(); }, [&] { (void)run.call(); }, budget_ms);
      double held = held_mb(before);
      row.peak_mb_compiled = held + peak_mb([&] { (void)run.call(); });
      CompileStats stats = run.stats();
      row.kernels = kernels_per_call(stats);
      row.compile_inprocess = stats.compile_seconds;
      row.compiles = stats.compiles;
      if (w.bytes > 0) {
        row.gbps = w.bytes / (row.compiled_ms * 1e6);
        row.eager_gbps = w.bytes / (row.eager_ms * 1e6);
      }
      if (w.flops > 0) {
        row.tflops = w.flops / (row.compiled_ms * 1e9);
        row.eager_tflops = w.flops / (row.eager_ms * 1e9);
      }
      probe_cold_and_warm(row);
    });
    rows.push_back(row);
  }
  return rows;
}

std::vector<Row> bench_dynamic_mlp(const std::vector<std::string>& backends, bool quick) {
  DynamicMlp d;
  double budget_ms = quick ? 50 : 300;  // per batch size
  std::vector<Tensor> refs;
  for (const Tensor& x : d.inputs) refs.push_back(d.model->forward(x));
  const Tensor& largest = d.inputs[8];  // batch 2048
  double eager_peak = peak_mb([&] { (void)d.model->forward(largest); });
  std::vector<Row> rows;
  for (const std::string& backend : backends) {
    Row row{"dynamic_mlp", backend, fmt::format("D{} H{} T {}", kMlpDim, kMlpHidden, "1..2048 (10 sizes)")};
    row.peak_mb_eager = eager_peak;
    guarded(row, [&] {
      size_t before = cpu_memory_stats().allocated;
      auto compiled = compile(*d.model, options_for(backend));
      row.max_rel_err = 0;
      for (size_t i = 0; i < d.inputs.size(); ++i) {
        auto start = std::chrono::steady_clock::now();
        Tensor y = compiled(d.inputs[i]);
        row.first_calls.push_back(ms_since(start));
        row.max_rel_err = std::max(row.max_rel_err, max_rel_err({y}, {refs[i]}));
      }
      row.eager_ms = row.compiled_ms = 0;  // one pass over every batch size
      for (const Tensor& x : d.inputs) {
        auto [e, c] = time_pair_ms([&] { (void)d.model->forward(x); }, [&] { (void)compiled(x); }, budget_ms);
        row.eager_ms += e;
        row.compiled_ms += c;
      }
      double held = held_mb(before);
      row.peak_mb_compiled = held + peak_mb([&] { (void)compiled(largest); });
      CompileStats stats = compiled.stats();
      row.kernels = kernels_per_call(stats);
      row.compiles = stats.compiles;
      row.compile_inprocess = stats.compile_seconds;
      row.tflops = d.flops() / (row.compiled_ms * 1e9);
      row.eager_tflops = d.flops() / (row.eager_ms * 1e9);
      probe_cold_and_warm(row);
    });
    rows.push_back(row);
  }
  return rows;
}

// The generated code's vectorisation, measured: the same inductor graph compiled as usual and with the
// compiler's vectorisers off (SINTER_CXXFLAGS reaches the kernel compiler), timed side by side.
struct VectorCheck {
  std::string workload;
  double vector_ms = 0, scalar_ms = 0;
};

std::vector<VectorCheck> vector_checks(const std::vector<std::string>& names, double budget_ms) {
  std::vector<VectorCheck> out;
  for (const std::string& name : {"pointwise", "softmax", "ln_gelu"}) {
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    Workload w = make_workload(name);
    CompiledRun vec = w.compile(options_for("inductor"));
    (void)vec.call();
    setenv("SINTER_CXXFLAGS", "-fno-tree-vectorize -fno-tree-slp-vectorize -fno-openmp-simd", 1);
    CompiledRun scalar = w.compile(options_for("inductor"));
    (void)scalar.call();
    unsetenv("SINTER_CXXFLAGS");
    auto [v, sc] = time_pair_ms([&] { (void)vec.call(); }, [&] { (void)scalar.call(); }, budget_ms);
    out.push_back({name, v, sc});
    fmt::print("  vectorised vs scalar code, {}: {:.3f} ms vs {:.3f} ms ({:.2f}x)\n", name, v, sc, sc / v);
  }
  return out;
}

std::string num(double v, const char* spec = "{:.3f}") {
  return std::isnan(v) ? "-" : fmt::format(fmt::runtime(spec), v);
}

void print_table(const std::vector<Row>& rows) {
  fmt::print("\n{:<16} {:<10} {:>10} {:>11} {:>8} {:>7} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9}\n",
             "workload", "backend", "eager ms", "compiled ms", "speedup", "kernels", "cold s", "warm s",
             "rel err", "GB/s", "TFLOP/s", "peak MB e", "peak MB c");
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      fmt::print("{:<16} {:<10} failed: {}\n", r.workload, r.backend, r.error.substr(0, 200));
      continue;
    }
    fmt::print("{:<16} {:<10} {:>10} {:>11} {:>8} {:>7} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9}\n",
               r.workload, r.backend, num(r.eager_ms), num(r.compiled_ms),
               num(r.eager_ms / r.compiled_ms, "{:.2f}x"), r.kernels ? fmt::format("{:g}", *r.kernels) : "-",
               num(r.compile_cold, "{:.4f}"), num(r.compile_warm, "{:.4f}"), num(r.max_rel_err, "{:.1e}"),
               num(r.gbps, "{:.1f}"), num(r.tflops, "{:.4f}"), num(r.peak_mb_eager, "{:.1f}"),
               num(r.peak_mb_compiled, "{:.1f}"));
    if (!r.first_calls.empty()) {
      std::string calls;
      std::vector<int64_t> sizes = dynamic_mlp_batches();
      for (size_t i = 0; i < r.first_calls.size(); ++i)
        calls += fmt::format(" {}:{:.1f}", sizes[i], r.first_calls[i]);
      fmt::print("{:<16} {:<10} compiles {}; first call ms per batch size:{}\n", "", "", r.compiles, calls);
    }
  }
  fmt::print(
      "\ncold s / warm s: compile seconds in a fresh process on an empty cache / a second process on the\n"
      "same cache. rel err: ||compiled - eager|| / ||eager||. peak MB e / c: the allocator's high-water "
      "mark\n"
      "during one call above what was live before it (compiled: plus what the compiled function keeps "
      "between\n"
      "calls). GB/s, TFLOP/s: compiled.\n");
}

std::string row_json(const Row& r) {
  Json j;
  j.add("workload", r.workload).add("backend", r.backend).add("mode", "default").add("dtype", "f32");
  j.add("shape", r.shape);
  if (!r.error.empty()) j.add("error", r.error);
  j.add_measured("eager_ms", r.eager_ms);
  j.add_measured("compiled_ms", r.compiled_ms);
  j.add_measured("speedup", r.eager_ms / r.compiled_ms);
  r.kernels ? j.add("kernels", *r.kernels) : j.add_null("kernels");
  j.add_measured("compile_s_cold", r.compile_cold);
  j.add_measured("compile_s_warm", r.compile_warm);
  j.add_measured("compile_s_in_process", r.compile_inprocess);
  if (r.first_calls.empty()) j.add_measured("first_call_ms", r.first_call_ms);  // dynamic_mlp: a list, below
  j.add("compiles", r.compiles);
  j.add_measured("max_rel_err", r.max_rel_err);
  j.add_measured("gbps", r.gbps);
  j.add_measured("tflops", r.tflops);
  j.add_measured("eager_gbps", r.eager_gbps);
  j.add_measured("eager_tflops", r.eager_tflops);
  j.add_measured("peak_mb_eager", r.peak_mb_eager);
  j.add_measured("peak_mb_compiled", r.peak_mb_compiled);
  if (!r.first_calls.empty()) {
    std::vector<double> sizes;
    for (int64_t b : dynamic_mlp_batches()) sizes.push_back(static_cast<double>(b));
    j.add_raw("first_call_ms", json_list(r.first_calls));
    j.add_raw("batch_sizes", json_list(sizes));
  }
  return j.str();
}

}  // namespace

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

int bench_workloads(const BenchOptions& opt) {
  SINTER_CHECK(opt.device == "cpu", "bench --device {}: only the cpu workloads exist in this build",
               opt.device);
  SINTER_CHECK(!opt.backends.empty(), "bench: --backends is empty");
  if (!opt.probe.empty()) return run_probe(opt);

  std::vector<std::string> backends;
  for (const std::string& b : opt.backends) {
    try {
      (void)find_backend(options_for(b).backend);
      backends.push_back(b);
    } catch (const Error& e) {
      fmt::print("skipping backend '{}': {}\n", b, e.what());
    }
  }
  SINTER_CHECK(!backends.empty(), "bench: none of the backends asked for is available");
  std::vector<std::string> names;
  for (const std::string& n : workload_names())
    if (opt.only.empty() || opt.only == n) names.push_back(n);
  SINTER_CHECK(!names.empty(), "bench: no workload named '{}'", opt.only);

  // This process compiles too (for the timings); keep its artifacts out of the user's cache.
  std::string run_cache = make_temp_dir("sinter-bench-run");
  setenv("SINTER_CACHE_DIR", run_cache.c_str(), 1);
  fmt::print("sinter bench --device cpu: {} threads, backends {}, {}\n", get_num_threads(),
             fmt::join(backends, ","), machine_name());
  double budget_ms = opt.quick ? 150 : 1000;
  std::vector<Row> rows;
  for (const std::string& name : names) {
    fmt::print("  {} ...\n", name);
    std::fflush(stdout);
    std::vector<Row> r =
        name == "dynamic_mlp" ? bench_dynamic_mlp(backends, opt.quick) : bench_one(name, backends, budget_ms);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  std::vector<VectorCheck> checks;
  if (std::find(backends.begin(), backends.end(), "inductor") != backends.end())
    checks = vector_checks(names, budget_ms);
  remove_dir(run_cache);
  print_table(rows);
  if (!opt.json.empty()) {
    std::vector<std::string> items;
    for (const Row& r : rows) items.push_back(row_json(r));
    Json env = results_envelope("cpu", "workloads", opt.quick);
    env.add_raw("results", json_array(items));
    std::vector<std::string> vc;
    for (const VectorCheck& c : checks) {
      Json j;
      j.add("workload", c.workload).add("vector_ms", c.vector_ms).add("scalar_ms", c.scalar_ms);
      j.add("speedup", c.scalar_ms / c.vector_ms);
      vc.push_back(j.str());
    }
    env.add_raw("vector_check", json_array(vc));
    write_file(opt.json, env.str());
    fmt::print("wrote {}\n", opt.json);
  }
  return 0;
}

}  // namespace sinter::tools
