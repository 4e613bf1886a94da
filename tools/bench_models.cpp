// `sinter bench --suite models`: the model zoo (bench/models/, exported by `make models`) under sinter's inductor
// beside ONNX Runtime and OpenVINO on the CPU, at the same thread count, timed alternately in one run. The peers run
// in a Python process (bench/models/peer.py) that this program drives over a pipe, one request per line, so each
// round times sinter, ONNX Runtime and OpenVINO back to back and the machine's noise falls on all alike.
// Per model and batch: ms per call of each, the ratios, sinter's first call cold (a fresh process, empty cache) and
// warm (a second process on that cache) against the peers' session creation (the model's initializers frozen into
// constants, as the peers fold theirs), peak resident memory added, and the
// largest output difference against ONNX Runtime's.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "bench_util.h"
#include "nn/json.h"
#include "ops/sgemm.h"
#include "sinter/onnx.h"
#include "sinter/sinter.h"
#include "support/check.h"
#include "support/subprocess.h"
#include "tools.h"

namespace sinter::tools {
namespace {
namespace fs = std::filesystem;

// A child process spoken to by lines: a request on its stdin, one JSON reply on its stdout.
class LinePeer {
 public:
  explicit LinePeer(const std::vector<std::string>& argv) {
    // A peer that died makes a write fail with EPIPE (reported below) instead of killing this process.
    std::signal(SIGPIPE, SIG_IGN);
    support::PipedProcess p = support::spawn_piped(argv);
    pid_ = p.pid;
    to_ = p.to;
    from_ = fdopen(p.from, "r");
  }
  ~LinePeer() {
    close(to_);
    if (from_) std::fclose(from_);
    support::wait_process(pid_);
  }
  LinePeer(const LinePeer&) = delete;
  LinePeer& operator=(const LinePeer&) = delete;

  // Sends one request; returns the reply, or throws with the peer's error.
  nn::Json request(const std::string& line) {
    const std::string msg = line + "\n";
    SINTER_CHECK(write(to_, msg.data(), msg.size()) == static_cast<ssize_t>(msg.size()),
                 "bench --suite models: the peer process has gone ({})", line);
    std::string reply;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, from_)) {
      reply += buf;
      if (!reply.empty() && reply.back() == '\n') break;
    }
    SINTER_CHECK(!reply.empty(), "bench --suite models: no reply from the peer process to {}", line);
    nn::Json j = nn::parse_json(reply);
    const nn::Json* ok = j.find("ok");
    if (!ok || !ok->boolean) {
      const nn::Json* err = j.find("error");
      throw Error(err ? err->text : reply);
    }
    return j;
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1;
  std::FILE* from_ = nullptr;
};

double number(const nn::Json& j, const char* key) {
  const nn::Json* v = j.find(key);
  return v && v->kind == nn::Json::Kind::kNumber ? std::strtod(v->text.c_str(), nullptr) : NAN;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The engines the peer runs: ONNX Runtime with every graph optimisation, OpenVINO in float32 and in its default
// precision (bfloat16 inside where the CPU has AVX512-BF16 or AMX).
const std::vector<std::string> kPeerEngines = {"ort", "ov-f32", "ov-default"};

struct ModelEntry {
  std::string name, file, what;
  bool batched = false;  // the inputs have a "batch" dimension
};

std::vector<ModelEntry> read_manifest(const std::string& dir) {
  const fs::path path = fs::path(dir) / "models.json";
  SINTER_CHECK(fs::is_regular_file(path), "bench --suite models: no {} (make models exports the zoo there)",
               path.string());
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  nn::Json root = nn::parse_json(text.str());
  std::vector<ModelEntry> out;
  for (const auto& [name, m] : root.members) {
    ModelEntry e{name, m.find("file") ? m.find("file")->text : name + ".onnx", m.find("what") ? m.find("what")->text : ""};
    if (const nn::Json* inputs = m.find("inputs"))
      for (const nn::Json& in : inputs->items)
        if (const nn::Json* shape = in.find("shape"))
          for (const nn::Json& d : shape->items) e.batched |= d.kind == nn::Json::Kind::kString && d.text == "batch";
    out.push_back(e);
  }
  return out;
}

// DIR/input_0.pb, DIR/input_1.pb, ... (kind "input"), or the outputs (kind "output").
std::vector<Tensor> read_tensors(const std::string& dir, const char* kind = "input") {
  std::vector<Tensor> tensors;
  for (int k = 0;; ++k) {
    const fs::path p = fs::path(dir) / fmt::format("{}_{}.pb", kind, k);
    if (!fs::exists(p)) return tensors;
    tensors.push_back(onnx::read_tensor(p.string()));
  }
}

// The hidden child: load, compile and run the model once (what a user waits for on a first call), then a few
// more calls; prints the first call's seconds and the peak resident memory above what the process had before.
int run_probe(const BenchOptions& opt) {
  const double rss_before = status_mb("VmRSS");
  auto start = std::chrono::steady_clock::now();
  onnx::Model model = onnx::load(opt.probe);
  std::vector<Tensor> inputs = read_tensors(opt.probe_inputs);
  CompileOptions options = options_for(opt.backends.at(0));
  options.freeze = true;
  auto fast = compile(model, options);
  (void)fast(inputs);
  const double first = ms_since(start) / 1e3;
  for (int i = 0; i < 3; ++i) (void)fast(inputs);
  fmt::print("probe first_s={:.6f} peak_rss_mb={:.3f}\n", first, status_mb("VmHWM") - rss_before);
  return 0;
}

struct Probe {
  double first_s = NAN, peak_rss_mb = NAN;
};
Probe probe(const std::string& model, const std::string& inputs, const std::string& backend, const std::string& cache) {
  ChildResult r = run_self({"bench", "--suite", "models", "--probe", model, "--probe-inputs", inputs, "--backends",
                            backend, "--threads", std::to_string(get_num_threads())},
                           {{"SINTER_CACHE_DIR", cache}});
  const std::string what = fmt::format("first-call probe of {}", model);
  return {probe_field(r, "first_s", what), probe_field(r, "peak_rss_mb", what)};
}

struct EngineResult {
  std::string engine;
  double ms = NAN, create_s = NAN, first_s = NAN, peak_mb = NAN, max_abs_err = NAN, rel_err = NAN;
  std::string error;
  std::vector<double> times;
  int per_round = 1;
};

struct ModelRow {
  std::string model, what;
  int64_t batch = 0;
  double sinter_cold_s = NAN, sinter_warm_s = NAN;
  double sinter_tiered_s = NAN;  // the cold first call with CompileOptions::tiered
  std::vector<EngineResult> engines;  // sinter first, then the peers
  std::string error;
};

// The largest |a - b| over every output, and that over the largest |b| (a scale-free figure).
std::pair<double, double> output_difference(const std::vector<Tensor>& a, const std::string& dir) {
  double max_abs = 0, max_ref = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    fs::path p = fs::path(dir) / fmt::format("output_{}.pb", k);
    SINTER_CHECK(fs::exists(p), "bench --suite models: the reference has no {}", p.string());
    std::vector<double> want = onnx::read_tensor(p.string()).to(kFloat64).contiguous().to_vector<double>();
    std::vector<double> got = a[k].to(kFloat64).contiguous().to_vector<double>();
    SINTER_CHECK(want.size() == got.size(), "bench --suite models: output {} has {} elements, the reference {}", k,
                 got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      max_abs = std::max(max_abs, std::abs(got[i] - want[i]));
      max_ref = std::max(max_ref, std::abs(want[i]));
    }
  }
  return {max_abs, max_abs / std::max(max_ref, 1e-30)};
}

ModelRow bench_model(LinePeer& peer, const std::string& dir, const ModelEntry& m, int64_t batch, bool quick,
                     const std::string& backend, const std::string& work) {
  ModelRow row{m.name, m.what, batch};
  const std::string model_path = (fs::path(dir) / m.file).string();
  const std::string in_dir = fmt::format("{}/{}-b{}", work, m.name, batch);
  const int threads = get_num_threads();
  try {
    peer.request(fmt::format(R"({{"op": "make_inputs", "manifest": "{}", "model": "{}", "batch": {}, "dir": "{}"}})",
                             (fs::path(dir) / "models.json").string(), m.name, batch, in_dir));
    std::vector<Tensor> inputs = read_tensors(in_dir);
    if (!m.batched && !inputs.empty()) row.batch = inputs[0].dim() > 0 ? inputs[0].size(0).guard_int() : 1;
    // sinter's first call, cold and warm, each in a fresh process.
    const std::string cache = make_temp_dir("sinter-bench-models-cache");
    Probe cold = probe(model_path, in_dir, backend, cache);
    row.sinter_cold_s = cold.first_s;
    row.sinter_warm_s = probe(model_path, in_dir, backend, cache).first_s;
    remove_dir(cache);
    const std::string tiered_cache = make_temp_dir("sinter-bench-models-cache");
    row.sinter_tiered_s = probe(model_path, in_dir, backend + "+tiered", tiered_cache).first_s;
    remove_dir(tiered_cache);
    EngineResult s{"sinter"};
    s.peak_mb = cold.peak_rss_mb;
    onnx::Model model = onnx::load(model_path);
    auto fast = compile(model, CompileOptions{.backend = backend, .freeze = true});
    std::vector<Tensor> outs = fast(inputs);
    row.engines.push_back(s);
    for (const std::string& e : kPeerEngines) {
      EngineResult r{e};
      try {
        nn::Json j = peer.request(fmt::format(R"({{"op": "open", "engine": "{}", "model": "{}", "inputs": "{}", "threads": {}}})",
                                              e, model_path, in_dir, threads));
        r.create_s = number(j, "create_s");
        r.first_s = number(j, "first_s");
        r.peak_mb = number(j, "peak_mb");
      } catch (const Error& err) {
        r.error = err.what();
      }
      row.engines.push_back(r);
    }
    // The same compiled function at set_float32_matmul_precision("medium"): bfloat16 GEMMs (where they pay),
    // against OpenVINO's default precision.
    std::vector<Tensor> outs_bf16;
    if (blas::sgemm_bf16_pays()) row.engines.push_back(EngineResult{"sinter-bf16"});
    // Calls per round from one warm-up round: about 150 ms (quick: 50 ms) of each engine per round.
    auto run_engine = [&](EngineResult& r, int n) {
      if (r.engine == "sinter" || r.engine == "sinter-bf16") {
        const bool bf16 = r.engine == "sinter-bf16";
        const std::string was = get_float32_matmul_precision();
        set_float32_matmul_precision(bf16 ? "medium" : "highest");
        for (int i = 0; i < n; ++i) {
          auto start = std::chrono::steady_clock::now();
          (bf16 ? outs_bf16 : outs) = fast(inputs);
          r.times.push_back(ms_since(start));
        }
        set_float32_matmul_precision(was);
        return;
      }
      nn::Json j = peer.request(fmt::format(R"({{"op": "time", "engine": "{}", "n": {}}})", r.engine, n));
      if (const nn::Json* ms = j.find("ms"))
        for (const nn::Json& v : ms->items) r.times.push_back(std::strtod(v.text.c_str(), nullptr));
    };
    const double round_ms = quick ? 50 : 150;
    const int rounds = quick ? 3 : 7;
    for (EngineResult& r : row.engines) {
      if (!r.error.empty()) continue;
      run_engine(r, 2);
      r.per_round = std::clamp(static_cast<int>(std::ceil(round_ms / std::max(r.times.back(), 1e-3))), 1, 500);
      r.times.clear();
    }
    // A pause before each engine's round: the previous engine's pool threads spin on for a while after its last
    // call (ONNX Runtime's and OpenVINO's for milliseconds), and on a many-core host they took the cores from the
    // next engine (sinter's dwsep_cnn at 16 threads measured 3.1 ms there against 0.55 ms alone).
    for (int round = 0; round < rounds; ++round)
      for (EngineResult& r : row.engines)
        if (r.error.empty()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(quick ? 20 : 50));
          run_engine(r, r.per_round);
        }
    for (EngineResult& r : row.engines) r.ms = median(r.times);
    // Outputs against ONNX Runtime's (sinter's own check against eager is the test suite's).
    const std::string ref = in_dir + "/ort";
    if (row.engines[1].error.empty()) {
      peer.request(fmt::format(R"({{"op": "save", "engine": "ort", "dir": "{}"}})", ref));
      for (EngineResult& r : row.engines) {
        if (!r.error.empty() || r.engine == "ort") continue;
        if (r.engine == "sinter" || r.engine == "sinter-bf16") {
          std::tie(r.max_abs_err, r.rel_err) = output_difference(r.engine == "sinter" ? outs : outs_bf16, ref);
          continue;
        }
        const std::string d = in_dir + "/" + r.engine;
        peer.request(fmt::format(R"({{"op": "save", "engine": "{}", "dir": "{}"}})", r.engine, d));
        std::tie(r.max_abs_err, r.rel_err) = output_difference(read_tensors(d, "output"), ref);
      }
    }
    for (const std::string& e : kPeerEngines) peer.request(fmt::format(R"({{"op": "close", "engine": "{}"}})", e));
  } catch (const std::exception& e) {
    row.error = e.what();
    fmt::print("  {} at batch {} failed: {}\n", m.name, batch, row.error);
  }
  return row;
}

std::string num(double v, const char* spec = "{:.3f}") {
  return std::isnan(v) ? "-" : fmt::format(fmt::runtime(spec), v);
}

std::string python_for_peer() {
  if (const char* p = std::getenv("SINTER_BENCH_PYTHON")) return p;
  return fs::exists(".cache/venv-models/bin/python") ? ".cache/venv-models/bin/python" : "python3";
}

const EngineResult* find_engine(const ModelRow& r, const std::string& name) {
  for (const EngineResult& e : r.engines)
    if (e.engine == name) return &e;
  return nullptr;
}

// ms of `peer` over `of`'s (sinter's unless named; above 1: sinter is faster); NaN where either is missing.
double ratio(const ModelRow& r, const std::string& peer, const std::string& of = "sinter") {
  const EngineResult *s = find_engine(r, of), *p = find_engine(r, peer);
  return s && p ? p->ms / s->ms : NAN;
}

double geomean(const std::vector<ModelRow>& rows, const std::string& peer, const std::string& of = "sinter") {
  double sum = 0;
  int n = 0;
  for (const ModelRow& r : rows)
    if (double x = ratio(r, peer, of); std::isfinite(x) && x > 0) sum += std::log(x), ++n;
  return n ? std::exp(sum / n) : NAN;
}

void print_table(const std::vector<ModelRow>& rows) {
  const char* line = "{:<22} {:>5} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7} {:>7} {:>7} {:>8} {:>7} {:>7} {:>9} "
                     "{:>9} {:>8} {:>9} {:>9}\n";
  fmt::print("\n");
  fmt::print(fmt::runtime(line), "model", "batch", "sinter ms", "ort ms", "ov32 ms", "ovdef ms", "ort/s", "ov32/s",
             "ovdef/s", "cold s", "tier s", "warm s", "ort new s", "MB s", "MB ort", "err s", "err ovdef", "bf16 ms",
             "ovdef/bf", "err bf16");
  for (const ModelRow& r : rows) {
    if (!r.error.empty()) {
      fmt::print("{:<22} {:>5} failed: {}\n", r.model, r.batch, r.error.substr(0, 300));
      continue;
    }
    auto ms = [&](const char* e) { return num(find_engine(r, e) ? find_engine(r, e)->ms : NAN); };
    const EngineResult *s = find_engine(r, "sinter"), *o = find_engine(r, "ort"), *d = find_engine(r, "ov-default");
    const EngineResult* bf = find_engine(r, "sinter-bf16");
    fmt::print(fmt::runtime(line), r.model, r.batch, ms("sinter"), ms("ort"), ms("ov-f32"), ms("ov-default"),
               num(ratio(r, "ort"), "{:.2f}x"), num(ratio(r, "ov-f32"), "{:.2f}x"), num(ratio(r, "ov-default"), "{:.2f}x"),
               num(r.sinter_cold_s), num(r.sinter_tiered_s), num(r.sinter_warm_s), num(o->create_s), num(s->peak_mb, "{:.0f}"),
               num(o->peak_mb, "{:.0f}"), num(s->rel_err, "{:.1e}"), num(d->rel_err, "{:.1e}"), ms("sinter-bf16"),
               num(ratio(r, "ov-default", "sinter-bf16"), "{:.2f}x"), num(bf ? bf->rel_err : NAN, "{:.1e}"));
    for (const EngineResult& e : r.engines)
      if (!e.error.empty()) fmt::print("    {} failed: {}\n", e.engine, e.error.substr(0, 300));
  }
  fmt::print("\ngeometric mean of peer ms / sinter ms: ort {}, ov-f32 {}, ov-default {}; ov-default / sinter-bf16 {}\n",
             num(geomean(rows, "ort"), "{:.2f}x"), num(geomean(rows, "ov-f32"), "{:.2f}x"),
             num(geomean(rows, "ov-default"), "{:.2f}x"), num(geomean(rows, "ov-default", "sinter-bf16"), "{:.2f}x"));
  fmt::print("ms: median per call over alternating rounds. X/s: X's ms over sinter's (above 1: sinter faster). cold s "
             "/ warm s: sinter's\nload + compile + first call in a fresh process on an empty cache / on that cache; tier s: "
             "the cold one\nwith CompileOptions::tiered (the first call on aot_eager while the inductor compiles); ort "
             "new s: ONNX Runtime's\nsession creation. MB: peak resident memory added by loading and the first calls. "
             "err: max |diff| / max |ort|.\nbf16: the same compiled model at set_float32_matmul_precision(\"medium\") "
             "(bfloat16 GEMMs where they pay), against\nOpenVINO's default precision (bfloat16 inside where the CPU "
             "has it).\n");
}

std::string row_json(const ModelRow& r) {
  Json j;
  j.add("model", r.model).add("batch", r.batch).add("what", r.what);
  if (!r.error.empty()) j.add("error", r.error);
  j.add_measured("sinter_first_call_s_cold", r.sinter_cold_s).add_measured("sinter_first_call_s_warm", r.sinter_warm_s);
  j.add_measured("sinter_first_call_s_cold_tiered", r.sinter_tiered_s);
  std::vector<std::string> engines;
  for (const EngineResult& e : r.engines) {
    Json k;
    k.add("engine", e.engine);
    if (!e.error.empty()) k.add("error", e.error);
    k.add_measured("ms", e.ms).add_measured("session_create_s", e.create_s).add_measured("first_run_s", e.first_s);
    k.add_measured("peak_rss_mb", e.peak_mb).add_measured("max_abs_diff_vs_ort", e.max_abs_err);
    k.add_measured("rel_diff_vs_ort", e.rel_err).add("calls", static_cast<int64_t>(e.times.size()));
    engines.push_back(k.str());
  }
  j.add_raw("engines", json_array(engines));
  for (const std::string& peer : kPeerEngines) j.add_measured("ratio_" + peer, ratio(r, peer));
  return j.str();
}

std::vector<int64_t> parse_batches(const std::string& list) {
  std::vector<int64_t> out;
  for (const std::string& b : split_list(list)) out.push_back(parse_int_option("--batches", b, 1));
  SINTER_CHECK(!out.empty(), "bench --suite models: --batches is empty");
  return out;
}

}  // namespace

int bench_models(const BenchOptions& opt) {
  SINTER_CHECK(!opt.backends.empty(), "bench: --backends is empty");
  if (!opt.probe.empty()) return run_probe(opt);
  const std::string dir = opt.models_dir.empty() ? ".cache/models" : opt.models_dir;
  std::vector<ModelEntry> models = read_manifest(dir);
  const std::vector<int64_t> batches = parse_batches(opt.batches.empty() ? (opt.quick ? "2" : "1,2,8") : opt.batches);
  const std::string backend = opt.backends.back();  // --backends inductor (the default list ends with it)
  const std::string work = make_temp_dir("sinter-bench-models");
  std::string run_cache = make_temp_dir("sinter-bench-run");
  setenv("SINTER_CACHE_DIR", run_cache.c_str(), 1);
  const std::string python = python_for_peer();
  SINTER_CHECK(fs::is_regular_file("bench/models/peer.py"),
               "bench --suite models: no bench/models/peer.py here (it runs ONNX Runtime and OpenVINO); run it from "
               "the repository's root");
  LinePeer peer({python, "bench/models/peer.py"});
  nn::Json versions = peer.request(R"({"op": "versions"})");
  auto text = [&](const char* key) { return versions.find(key) ? versions.find(key)->text : std::string("none"); };
  fmt::print("sinter bench --suite models: {} threads, sinter {} against ONNX Runtime {} and OpenVINO {} ({}), {}\n",
             get_num_threads(), backend, text("ort"), text("openvino"), python, machine_name());
  const std::vector<std::string> only = split_list(opt.only);
  std::vector<ModelRow> rows;
  for (const ModelEntry& m : models) {
    if (!only.empty() && std::find(only.begin(), only.end(), m.name) == only.end()) continue;
    for (int64_t b : m.batched ? batches : std::vector<int64_t>{0}) {
      fmt::print("  {} batch {} ...\n", m.name, m.batched ? std::to_string(b) : "fixed");
      std::fflush(stdout);
      rows.push_back(bench_model(peer, dir, m, b, opt.quick, backend, work));
    }
  }
  remove_dir(run_cache);
  remove_dir(work);
  print_table(rows);
  if (!opt.json.empty()) {
    std::vector<std::string> items;
    for (const ModelRow& r : rows) items.push_back(row_json(r));
    Json env = results_envelope("cpu", "models", opt.quick);
    env.add("backend", backend).add("onnxruntime", text("ort")).add("openvino", text("openvino"));
    env.add_measured("geomean_ort_over_sinter", geomean(rows, "ort"));
    env.add_measured("geomean_ov_f32_over_sinter", geomean(rows, "ov-f32"));
    env.add_measured("geomean_ov_default_over_sinter", geomean(rows, "ov-default"));
    env.add_measured("geomean_ov_default_over_sinter_bf16", geomean(rows, "ov-default", "sinter-bf16"));
    env.add_raw("results", json_array(items));
    write_file(opt.json, env.str());
    fmt::print("wrote {}\n", opt.json);
  }
  return 0;
}

}  // namespace sinter::tools
