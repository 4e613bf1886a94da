// `sinter bench --suite aot`: ahead-of-time artifacts of the built-in models (bench/WORKLOADS.md's CPU shapes):
// the time to save one, its size, and, in a fresh process where SINTER_CXX names no compiler and the kernel cache
// is empty (`sinter run DIR`), the time to load it, its first call and a call after that, beside the compiled
// function's call in this process.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "bench_util.h"
#include "sinter/aot.h"
#include "tools.h"
#include "workloads.h"

namespace sinter::tools {

namespace {

struct AotRow {
  std::string name, shape;
  double save_s = 0, mb = 0, load_ms = NAN, first_ms = NAN, call_ms = NAN, compiled_ms = NAN;
};

double field_after(const std::string& text, const std::string& key) {
  size_t at = text.find(key);
  if (at == std::string::npos) return NAN;
  return std::strtod(text.c_str() + at + key.size(), nullptr);
}

template <class M>
AotRow measure(const std::string& name, const std::string& shape, std::shared_ptr<M> model, const Tensor& x,
               int calls) {
  AotRow row{name, shape};
  model->eval();
  NoGradGuard no_grad;
  auto compiled = compile(*model);
  compiled(x);
  row.compiled_ms = time_ms([&] { compiled(x); }, calls);
  const std::string dir = make_temp_dir("sinter-aot-bench-");
  const std::string artifact = dir + "/" + name + ".sinter";
  auto t0 = std::chrono::steady_clock::now();
  aot::save(compiled, artifact, x);
  row.save_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& e : std::filesystem::recursive_directory_iterator(artifact))
    if (e.is_regular_file()) row.mb += static_cast<double>(e.file_size()) / 1e6;
  ChildResult r = run_self({"run", artifact, "--bench", std::to_string(calls)},
                           {{"SINTER_CXX", "/nonexistent/c++"}, {"SINTER_CACHE_DIR", dir + "/empty-cache"}});
  if (r.status != 0) fmt::print(stderr, "{}: `sinter run` of the artifact failed:\n{}\n", name, r.output);
  row.load_ms = field_after(r.output, "loaded in ");
  row.first_ms = field_after(r.output, "first call ");
  row.call_ms = field_after(r.output, "median): ");
  remove_dir(dir);
  return row;
}

}  // namespace

int bench_aot(const BenchOptions& opt) {
  const int calls = opt.quick ? 3 : 20;
  fmt::print("sinter bench --suite aot: {} threads, {}\n", get_num_threads(), machine_name());
  std::vector<AotRow> rows;
  auto want = [&](const char* n) { return opt.only.empty() || opt.only == n; };
  if (want("gpt_block"))
    rows.push_back(measure("gpt_block", "B1 S256 D768 H12", std::make_shared<GptBlock>(768, 12), randn({1, 256, 768}),
                           calls));
  if (want("mlp"))
    rows.push_back(measure("mlp", fmt::format("T512 D{} H{}", kMlpDim, kMlpHidden),
                           std::make_shared<Mlp>(kMlpDim, kMlpHidden), randn({512, kMlpDim}), calls));
  if (want("resnet_block")) {
    auto block = std::make_shared<ResNetBlock>(64);
    block->randomize_bn_stats();
    rows.push_back(measure("resnet_block", "N8 C64 56x56 NHWC", block,
                           randn({8, 64, 56, 56}).contiguous(kChannelsLast), calls));
  }
  fmt::print("{:<13} {:>20} {:>8} {:>8} {:>9} {:>10} {:>9} {:>11}\n", "workload", "shape", "save s", "MB", "load ms",
             "first ms", "call ms", "compiled ms");
  for (const AotRow& r : rows)
    fmt::print("{:<13} {:>20} {:>8.3f} {:>8.1f} {:>9.1f} {:>10.1f} {:>9.3f} {:>11.3f}\n", r.name, r.shape, r.save_s,
               r.mb, r.load_ms, r.first_ms, r.call_ms, r.compiled_ms);
  fmt::print("load ms and first ms: a fresh `sinter run DIR` with no compiler and an empty kernel cache; call ms: the\n"
             "median of its later calls; compiled ms: the compiled function's call in this process.\n");
  if (!opt.json.empty()) {
    std::vector<std::string> items;
    for (const AotRow& r : rows) {
      Json j;
      j.add("workload", r.name).add("shape", r.shape).add("save_s", r.save_s).add("artifact_mb", r.mb);
      j.add_measured("load_ms", r.load_ms).add_measured("first_call_ms", r.first_ms);
      j.add_measured("call_ms", r.call_ms).add_measured("compiled_ms", r.compiled_ms);
      items.push_back(j.str());
    }
    Json env = results_envelope("cpu", "aot", opt.quick);
    env.add_raw("results", json_array(items));
    write_file(opt.json, env.str());
    fmt::print("wrote {}\n", opt.json);
  }
  return 0;
}

}  // namespace sinter::tools
