// The `sinter` command-line program.
//   sinter demo                                  run the built-in models and report what ran
//   sinter bench --suite eager [--json F] [--quick]
//   sinter bench --device cpu [--json F] [--threads N] [--backends a,b] [--only NAME] [--quick]
//     (a backend "inductor+tiered" is the inductor with CompileOptions::tiered)
//   sinter bench --device cuda [--json F] [--only NAME] [--quick]
//   sinter run MODEL.onnx [...], sinter conformance [...]
//   sinter fuzz --seconds N --seed S [--out DIR] [--replay FILE]   differential fuzzing (tools/fuzz.cpp)
// Every command answers --help / -h with its usage (exit 0); a bad option or value is an error (exit 1).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>

#include <string>
#include <vector>

#include "sinter/sinter.h"
#include "tools.h"

namespace sinter::tools {

const char* const kRunUsage =
    "  run MODEL.onnx|DIR [--backend B] [--mode M] [--device D] [--inputs DIR] [--expected DIR] [--bench N]\n"
    "      [--rtol R] [--atol A] [--no-freeze] [--matmul-precision highest|high|medium]\n"
    "                                         run an ONNX model (backend inductor unless --backend, as compile(),\n"
    "                                         its initializers frozen into constants unless --no-freeze; float32\n"
    "                                         products as set_float32_matmul_precision says, medium: bfloat16);\n"
    "                                         compare with DIR/output_K.pb (every output must have one); time N\n"
    "                                         calls eager vs compiled (N >= 1); DIR: an artifact of `sinter\n"
    "                                         compile`, loaded and run without compiling\n";
const char* const kCompileUsage =
    "  compile MODEL.onnx -o DIR [--inputs DIR] [--dynamic] [--no-freeze]\n"
    "                                         compile the model for this CPU and save it as an artifact that\n"
    "                                         `sinter run DIR` (or aot::load) runs without a compiler; --dynamic:\n"
    "                                         any sizes the guards admit, else the example's (--inputs, or random\n"
    "                                         at the model's declared shapes)\n";
const char* const kConformanceUsage =
    "  conformance [--data DIR] [--suite S]... [--backend B]... [--device D] [--filter F] [--json FILE] [-v]\n"
    "      [--no-list] [--allow-failures]     ONNX's conformance suites (data: scripts/conformance_data.sh), the\n"
    "                                         inputs on device D (cpu by default)\n";

}  // namespace sinter::tools

namespace {

const char* const kDemoUsage =
    "  demo                                   run the built-in transformer block and CNN, with timings\n";
const char* const kBenchUsage =
    "  bench --suite eager [--json FILE] [--quick] [--threads N]\n"
    "                                         eager kernels against the machine's copy bandwidth and OpenBLAS\n"
    "  bench --suite overhead [--json FILE] [--quick]\n"
    "                                         host overhead per compiled call (10/50/200 tiny ops)\n"
    "  bench --device cpu [--json FILE] [--threads N] [--backends aot_eager,inductor] [--only NAME]\n"
    "        [--quick]                        the workloads of bench/WORKLOADS.md, eager against compiled\n"
    "  bench --device cuda [--json FILE] [--only NAME] [--quick]\n"
    "                                         the GPU column of bench/WORKLOADS.md (--quick: smaller shapes on\n"
    "                                         the simulated device)\n"
    "  bench --suite train [--device cpu|cuda] [--json FILE] [--threads N] [--backends inductor] [--only NAME]\n"
    "        [--quick]"
    "                                         an AdamW training step of mlp, gpt_block and resnet_block, eager\n"
    "                                         against compile(model) and the whole step compiled\n"
    "  bench --suite models [--models DIR] [--only A,B] [--batches 1,2,8] [--threads N] [--json FILE] [--quick]\n"
    "                                         the model zoo (make models) under the inductor beside ONNX Runtime\n"
    "                                         and OpenVINO, timed alternately (peers: SINTER_BENCH_PYTHON)\n"
    "  bench --suite aot [--only NAME] [--json FILE] [--quick]\n"
    "                                         artifacts of gpt_block, mlp and resnet_block: save, then load and run\n"
    "                                         in a fresh process with no compiler\n";

const char* const kFuzzUsage =
    "  fuzz [--seconds N] [--seed S] [--out DIR] [--replay FILE] [--jobs 1] [--disable F,G] [--backends B,C]\n"
    "       [--ignore KIND,...] [--max-steps N] [--reduce-per-kind N]\n"
    "       [--inductor-rate R] [--batch N] [--cases N] [--case K] [--timeout S] [--reduce-seconds S]\n"
    "       [--no-reduce] [--expect-clean] [--print [--cpp]] [--features] [--device cuda] [-v]\n"
    "                                         differential fuzzing: random programs, eager vs every backend\n"
    "                                         (--device cuda: the backends on the GPU, eager on the CPU)\n";

int usage(FILE* out, int rc) {
  fmt::print(out, "usage: sinter <command> [options]   (sinter <command> --help: that command's options)\n{}{}{}{}{}{}",
             kDemoUsage, kBenchUsage, sinter::tools::kRunUsage, sinter::tools::kCompileUsage,
             sinter::tools::kConformanceUsage, kFuzzUsage);
  return rc;
}

int command_usage(const char* text) {
  fmt::print("usage: sinter\n{}", text);
  return 0;
}

int bench(const std::vector<std::string>& args) {
  using namespace sinter::tools;
  BenchOptions opt;
  bool suite_given = false;
  for (size_t i = 1; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw sinter::Error(fmt::format("bench: {} needs a value", args[i]));
      return args[++i];
    };
    const std::string& a = args[i];
    if (is_help(a)) return command_usage(kBenchUsage);
    if (a == "--suite") opt.suite = value(), suite_given = true;
    else if (a == "--json") opt.json = value();
    else if (a == "--quick") opt.quick = true;
    else if (a == "--threads") sinter::set_num_threads(parse_int_option("--threads", value(), 1));
    else if (a == "--device") opt.device = value();
    else if (a == "--backends") opt.backends = split_list(value());
    else if (a == "--only") opt.only = value();
    else if (a == "--probe") opt.probe = value();  // hidden: the warm/cold compile-time child
    else if (a == "--probe-inputs") opt.probe_inputs = value();  // hidden: the models suite's probe inputs
    else if (a == "--models") opt.models_dir = value();
    else if (a == "--batches") opt.batches = value();
    else throw sinter::Error(fmt::format("bench: unknown option {} (sinter bench --help lists them)", a));
  }
  if (!opt.device.empty() && !suite_given) opt.suite = "workloads";  // --device alone: the workload suite
  if (opt.suite == "train") {
    if (opt.backends == BenchOptions().backends) opt.backends = {"inductor"};
    return bench_train(opt);
  }
  // The other suites time inference: no gradient recording, as bench/vs_torch.py runs PyTorch under
  // torch.no_grad().
  sinter::NoGradGuard no_grad;
  if (opt.suite == "eager") return bench_eager(opt);
  if (opt.suite == "overhead") return bench_overhead(opt);
  if (opt.suite == "models") return bench_models(opt);
  if (opt.suite == "aot") return bench_aot(opt);
  if (opt.suite == "workloads") return opt.device == "cuda" ? bench_cuda(opt) : bench_workloads(opt);
  throw sinter::Error(fmt::format("unknown bench suite '{}' (known: eager, overhead, workloads, train, models, aot)", opt.suite));
}

uint64_t parse_u64_option(const std::string& option, const std::string& value, uint64_t min) {
  errno = 0;
  char* end = nullptr;
  const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
  const unsigned long long v = digits ? std::strtoull(value.c_str(), &end, 10) : 0;
  if (!digits || errno != 0)
    throw sinter::Error(fmt::format("{}: '{}' is not a whole number of at most 20 digits", option, value));
  if (v < min) throw sinter::Error(fmt::format("{}: {} is too small (give {} or more)", option, value, min));
  return v;
}

int fuzz(const std::vector<std::string>& args) {
  using namespace sinter::tools;
  FuzzOptions opt;
  bool seeded = false;
  for (size_t i = 1; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw sinter::Error(fmt::format("fuzz: {} needs a value", args[i]));
      return args[++i];
    };
    const std::string& a = args[i];
    if (is_help(a)) return command_usage(kFuzzUsage);
    if (a == "--seconds") opt.seconds = parse_double_option(a, value(), 0);
    else if (a == "--seed") opt.seed = parse_u64_option(a, value(), 0), seeded = true;
    else if (a == "--out") opt.out_dir = value();
    else if (a == "--replay") opt.replay = value();
    else if (a == "--jobs") {
      if (parse_int_option(a, value(), 1) != 1) throw sinter::Error("fuzz: --jobs supports 1 (cases run one child at a time)");
    } else if (a == "--disable") opt.disabled = split_list(value());
    else if (a == "--backends") opt.backends = split_list(value());
    else if (a == "--ignore") opt.ignore = split_list(value());
    else if (a == "--inductor-rate") opt.inductor_rate = parse_double_option(a, value(), 0);
    else if (a == "--device") opt.device = sinter::parse_device(value());
    else if (a == "--batch") opt.batch = parse_u64_option(a, value(), 1);
    else if (a == "--cases") opt.cases = parse_u64_option(a, value(), 0);
    else if (a == "--case") opt.first_case = parse_u64_option(a, value(), 0);
    else if (a == "--timeout") opt.timeout_s = parse_double_option(a, value(), 0);
    else if (a == "--reduce-seconds") opt.reduce_seconds = parse_double_option(a, value(), 0);
    else if (a == "--reduce-per-kind") opt.reduce_per_signature = parse_int_option(a, value(), 0);
    else if (a == "--max-steps") opt.max_steps = parse_int_option(a, value(), 1);
    else if (a == "--no-reduce") opt.reduce = false;
    else if (a == "--expect-clean") opt.expect_clean = true;
    else if (a == "--print") opt.print = true;
    else if (a == "--cpp") opt.print_cpp = true;
    else if (a == "-v" || a == "--verbose") opt.verbose = true;
    else if (a == "--features") {
      fmt::print("{}\n", fmt::join(fuzz_features(), " "));
      return 0;
    } else throw sinter::Error(fmt::format("fuzz: unknown option {} (sinter fuzz --help lists them)", a));
  }
  if (!seeded && opt.replay.empty()) {
    opt.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) % 1000000007ULL;
    fmt::print("[fuzz] no --seed given: seed {}\n", opt.seed);
  }
  return fuzz_command(opt);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage(stderr, 2);
  try {
    const std::string& cmd = args[0];
    if (cmd == "demo") {
      for (size_t i = 1; i < args.size(); ++i) {
        if (sinter::tools::is_help(args[i])) return command_usage(kDemoUsage);
        throw sinter::Error(fmt::format("demo: unknown option {} (it takes none)", args[i]));
      }
      return sinter::tools::demo();
    }
    if (cmd == "bench") return bench(args);
    if (cmd == "fuzz") return fuzz(args);
    if (cmd == "run" || cmd == "conformance" || cmd == "compile") return sinter::tools::run_command(args);
    if (cmd == "help" || sinter::tools::is_help(cmd)) return usage(stdout, 0);
    fmt::print(stderr, "unknown command '{}'\n", cmd);
    return usage(stderr, 2);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
