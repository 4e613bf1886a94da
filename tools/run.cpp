// `sinter run MODEL.onnx` and `sinter conformance`: run an ONNX model (given or random inputs, outputs' statistics,
// comparison with expected outputs, eager-versus-compiled timing), and ONNX's conformance suites.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "frontends/onnx/conformance.h"
#include "support/check.h"
#include "sinter/aot.h"
#include "sinter/sinter.h"
#include "sinter/onnx.h"
#include "tools.h"

namespace sinter::tools {
namespace fs = std::filesystem;

namespace {

std::string stats(const Tensor& t) {
  Tensor c = t.is_cpu() ? t : t.to(kCPU);
  std::vector<double> v = c.to_vector<double>();
  if (v.empty()) return "empty";
  double lo = v[0], hi = v[0], sum = 0, sq = 0;
  for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x), sum += x, sq += x * x;
  double mean = sum / static_cast<double>(v.size());
  double sd = std::sqrt(std::max(0.0, sq / static_cast<double>(v.size()) - mean * mean));
  return fmt::format("min {:.6g}  max {:.6g}  mean {:.6g}  std {:.6g}", lo, hi, mean, sd);
}

Tensor random_input(DType dtype, const SymIntList& sizes, Device device) {
  Tensor t;
  if (is_floating(dtype)) t = randn(sizes, TensorOptions(dtype));
  else if (dtype == kBool) t = lt(rand(sizes), Scalar(0.5));
  else t = randint(0, 10, sizes, TensorOptions(dtype));
  return device.is_cpu() ? t : t.to(device);
}

Tensor random_input(const onnx::ValueInfo& v, Device device) {
  SymIntList sizes;
  for (int64_t d : v.dims) sizes.push_back(d >= 0 ? d : 1);  // unknown or named dims: 1
  return random_input(v.dtype, sizes, device);
}

// Input k: DIR/input_K.pb when `dir` is given, else random_input().
Tensor input_from(const std::string& dir, size_t k, const std::string& name, const std::function<Tensor()>& random,
                  Device device) {
  if (dir.empty()) return random();
  fs::path p = fs::path(dir) / fmt::format("input_{}.pb", k);
  SINTER_CHECK(fs::is_regular_file(p), "--inputs {}: no {} for input {} '{}'", dir, p.filename().string(), k, name);
  Tensor t = onnx::read_tensor(p.string());
  return device.is_cpu() ? t : t.to(device);
}

// Every output against DIR/output_K.pb (a missing expected file is an error, not a silent pass); 1 on a mismatch.
int compare_expected(const std::vector<Tensor>& outs, const RunOptions& o) {
  if (o.expected.empty()) return 0;
  int rc = 0;
  for (size_t k = 0; k < outs.size(); ++k) {
    fs::path p = fs::path(o.expected) / fmt::format("output_{}.pb", k);
    SINTER_CHECK(fs::is_regular_file(p), "--expected {}: no {} for output {} (the model has {} outputs)", o.expected,
                 p.filename().string(), k, outs.size());
    Tensor want = onnx::read_tensor(p.string());
    bool half = want.dtype() == kFloat16 || want.dtype() == kBFloat16;
    onnx::Tolerance tol{o.rtol >= 0 ? o.rtol : (half ? 1e-2 : 1e-3), o.atol >= 0 ? o.atol : (half ? 1e-2 : 1e-5)};
    onnx::Comparison c = onnx::compare_outputs(outs[k], want, tol);
    fmt::print("  output {} vs {}: max abs error {:.3g}, max rel error {:.3g} (rtol {:g}, atol {:g}): {}\n", k,
               p.filename().string(), c.max_abs_error, c.max_rel_error, tol.rtol, tol.atol,
               c.mismatch.empty() ? "match" : "MISMATCH: " + c.mismatch);
    if (!c.mismatch.empty()) rc = 1;
  }
  fs::path extra = fs::path(o.expected) / fmt::format("output_{}.pb", outs.size());
  SINTER_CHECK(!fs::exists(extra), "--expected {}: has {} but the model has only {} outputs", o.expected,
               extra.filename().string(), outs.size());
  return rc;
}

void print_outputs(const std::vector<Tensor>& outs, const std::function<std::string(size_t)>& name) {
  for (size_t k = 0; k < outs.size(); ++k)
    fmt::print("  output {} '{}': {}{}  {}\n", k, name(k), dtype_name(outs[k].dtype()), outs[k].sizes().str(),
               stats(outs[k]));
}

// The model's inputs: given (--inputs) or random at the shapes the model declares.
std::vector<Tensor> model_inputs(const onnx::Model& model, const RunOptions& o, Device device) {
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < model.inputs().size(); ++k)
    inputs.push_back(input_from(o.inputs, k, model.inputs()[k].name,
                                [&] { return random_input(model.inputs()[k], device); }, device));
  return inputs;
}

double seconds_per_call(const std::function<std::vector<Tensor>()>& fn, int n) {
  std::vector<double> times;
  for (int i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

// `sinter run DIR`: an ahead-of-time artifact (sinter/aot.h), loaded and run without compiling.
int run_artifact(const RunOptions& o) {
  SINTER_CHECK(o.device == "cpu", "run: an artifact runs on the CPU (--device {} given)", o.device);
  auto t0 = std::chrono::steady_clock::now();
  aot::Artifact a = aot::load(o.model);
  double load = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("{}", a.describe());
  std::vector<TensorMeta> metas = a.input_metas();
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < metas.size(); ++k)
    inputs.push_back(input_from(o.inputs, k, fmt::format("#{}", k),
                                [&] { return random_input(metas[k].dtype, metas[k].sizes.hints(), kCPU); }, kCPU));
  t0 = std::chrono::steady_clock::now();
  std::vector<Tensor> outs = a(inputs);
  double first = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("loaded in {:.1f} ms, first call {:.1f} ms\n", load * 1e3, first * 1e3);
  print_outputs(outs, [](size_t k) { return fmt::format("#{}", k); });
  int rc = compare_expected(outs, o);
  if (o.bench > 0)
    fmt::print("bench ({} calls, median): {:.3f} ms\n", o.bench, seconds_per_call([&] { return a(inputs); }, o.bench) * 1e3);
  return rc;
}

int run_onnx(const RunOptions& o) {
  if (fs::is_directory(o.model)) return run_artifact(o);
  // Folders are checked before the model is loaded and compiled, so a typo fails at once.
  SINTER_CHECK(fs::is_regular_file(o.model), "run: no model file {}", o.model);
  for (auto [option, dir] : {std::pair{"--inputs", o.inputs}, {"--expected", o.expected}})
    SINTER_CHECK(dir.empty() || fs::is_directory(dir), "{} {}: no such folder", option, dir);
  onnx::Model model = onnx::load(o.model);
  fmt::print("{}", model.summary());
  Device device = parse_device(o.device);
  std::vector<Tensor> inputs = model_inputs(model, o, device);
  CompileOptions copt{.backend = o.backend, .mode = parse_mode(o.mode), .freeze = o.freeze};
  auto fast = compile(model, copt);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Tensor> outs = fast(inputs);
  double first = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("ran under {} on {} (first call {:.3f} s)\n", o.backend, device.str(), first);
  print_outputs(outs, [&](size_t k) {
    return k < model.outputs().size() ? model.outputs()[k].name : fmt::format("#{}", k);
  });
  int rc = compare_expected(outs, o);
  if (o.bench > 0) {
    double eager = seconds_per_call([&] { return model(inputs); }, o.bench);
    double compiled = seconds_per_call([&] { return fast(inputs); }, o.bench);
    fmt::print("bench ({} calls, median): eager {:.3f} ms, {} {:.3f} ms ({:.2f}x)\n", o.bench, eager * 1e3, o.backend,
               compiled * 1e3, eager / compiled);
  }
  return rc;
}

// `sinter compile MODEL.onnx -o DIR`: the model compiled for this CPU and saved as an artifact.
int compile_onnx(const RunOptions& o, const std::string& out, bool dynamic) {
  SINTER_CHECK(fs::is_regular_file(o.model), "compile: no model file {}", o.model);
  SINTER_CHECK(!out.empty(), "compile: give the artifact's folder with -o DIR");
  onnx::Model model = onnx::load(o.model);
  fmt::print("{}", model.summary());
  std::vector<Tensor> inputs = model_inputs(model, o, kCPU);
  auto fast = compile(model, {.dynamic = dynamic ? Dynamic::kAlways : Dynamic::kNever, .freeze = o.freeze});
  auto t0 = std::chrono::steady_clock::now();
  aot::save(fast, out, inputs);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("saved {} in {:.2f} s\n", out, took);
  return 0;
}

int conformance(const ConformanceCliOptions& o) {
  std::vector<std::string> backends = o.backends;
  if (backends.empty()) backends = {"aot_eager"};
  std::string json = "{\n\"runs\": [\n";
  int rc = 0;
  for (size_t b = 0; b < backends.size(); ++b) {
    const std::string& backend = backends[b];
    if (backend != "eager") {
      try {
        find_backend(backend);
      } catch (const Error& e) {
        fmt::print("\n*** backend '{}' is not available: SKIPPED ({})\n", backend, e.what());
        json += fmt::format("{}{{\"backend\": \"{}\", \"skipped\": true}}", b ? ",\n" : "", backend);
        continue;
      }
    }
    onnx::ConformanceOptions co{.data_dir = o.data_dir, .suites = o.suites, .backend = backend,
                                .device = parse_device(o.device), .filter = o.filter, .verbose = o.verbose};
    auto t0 = std::chrono::steady_clock::now();
    std::vector<onnx::CaseResult> results = onnx::run_conformance(co);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print("\nONNX conformance under {} on {} ({:.1f} s)\n{}", backend, o.device, secs,
               onnx::pass_table(results, o.list));
    json += (b ? ",\n" : "") + onnx::results_json(results, backend, o.device);
    for (const auto& r : results)
      if (r.status == onnx::CaseStatus::kFailed) rc = 1;
  }
  json += "]\n}\n";
  if (!o.json.empty()) {
    std::ofstream(o.json) << json;
    fmt::print("wrote {}\n", o.json);
  }
  return o.allow_failures ? 0 : rc;
}

}  // namespace sinter::tools

namespace sinter::tools {

int run_command(const std::vector<std::string>& args) {
  auto value_of = [&](size_t& i) -> std::string {
    if (i + 1 >= args.size()) throw Error(fmt::format("{}: {} needs a value", args[0], args[i]));
    return args[++i];
  };
  if (args[0] == "run") {
    RunOptions o;
    for (size_t i = 1; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (is_help(a)) {
        fmt::print("usage: sinter\n{}", kRunUsage);
        return 0;
      }
      if (a == "--backend") o.backend = value_of(i);
      else if (a == "--mode") o.mode = value_of(i);
      else if (a == "--device") o.device = value_of(i);
      else if (a == "--inputs") o.inputs = value_of(i);
      else if (a == "--expected") o.expected = value_of(i);
      else if (a == "--bench") o.bench = parse_int_option(a, value_of(i), 1);
      else if (a == "--rtol") o.rtol = parse_double_option(a, value_of(i), 0);
      else if (a == "--atol") o.atol = parse_double_option(a, value_of(i), 0);
      else if (a == "--no-freeze") o.freeze = false;
      else if (a == "--matmul-precision") set_float32_matmul_precision(value_of(i));
      else if (!a.empty() && a[0] != '-' && o.model.empty()) o.model = a;
      else throw Error(fmt::format("run: unknown option {} (sinter run --help lists them)", a));
    }
    if (o.model.empty()) throw Error("run: give a model file or an artifact's folder (sinter run MODEL.onnx)");
    return run_onnx(o);
  }
  if (args[0] == "compile") {
    RunOptions o;
    std::string out;
    bool dynamic = false;
    for (size_t i = 1; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (is_help(a)) {
        fmt::print("usage: sinter\n{}", kCompileUsage);
        return 0;
      }
      if (a == "-o" || a == "--out") out = value_of(i);
      else if (a == "--inputs") o.inputs = value_of(i);
      else if (a == "--dynamic") dynamic = true;
      else if (a == "--no-freeze") o.freeze = false;
      else if (!a.empty() && a[0] != '-' && o.model.empty()) o.model = a;
      else throw Error(fmt::format("compile: unknown option {} (sinter compile --help lists them)", a));
    }
    if (o.model.empty()) throw Error("compile: give a model file (sinter compile MODEL.onnx -o DIR)");
    return compile_onnx(o, out, dynamic);
  }
  ConformanceCliOptions o;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (is_help(a)) {
      fmt::print("usage: sinter\n{}", kConformanceUsage);
      return 0;
    }
    if (a == "--data") o.data_dir = value_of(i);
    else if (a == "--suite") o.suites.push_back(value_of(i));
    else if (a == "--backend") o.backends.push_back(value_of(i));
    else if (a == "--filter") o.filter = value_of(i);
    else if (a == "--device") o.device = value_of(i);
    else if (a == "--json") o.json = value_of(i);
    else if (a == "-v" || a == "--verbose") o.verbose = true;
    else if (a == "--no-list") o.list = false;
    else if (a == "--allow-failures") o.allow_failures = true;
    else throw Error(fmt::format("conformance: unknown option {} (sinter conformance --help lists them)", a));
  }
  return conformance(o);
}

}  // namespace sinter::tools
