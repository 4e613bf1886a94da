// The `sinter` command-line program.
//   sinter demo                                  run the built-in models and report what ran
//   sinter bench --suite eager [--json F] [--quick]
//   sinter bench --device cpu [--json F] [--threads N] [--backends a,b] [--only NAME] [--quick]
//   sinter fuzz --seconds N --seed S [--out DIR] [--replay FILE]   differential fuzzing (tools/fuzz.cpp)
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "sinter/sinter.h"
#include "tools.h"

namespace {

int usage() {
  fmt::print(
      "usage: sinter <command> [options]\n"
      "  demo                                   run the built-in transformer block and CNN, with timings\n"
      "  bench --suite eager [--json FILE] [--quick] [--threads N]\n"
      "                                         eager kernels against the machine's copy bandwidth and OpenBLAS\n"
      "  bench --suite overhead [--json FILE] [--quick]\n"
      "                                         host overhead per compiled call (10/50/200 tiny ops)\n"
      "  bench --device cpu [--json FILE] [--threads N] [--backends aot_eager,inductor] [--only NAME]\n"
      "        [--quick]                        the workloads of WORKLOADS.md, eager against compiled\n"
      "  run MODEL.onnx [--backend B] [--mode M] [--device D] [--inputs DIR] [--expected DIR] [--bench N]\n"
      "      [--rtol R] [--atol A]              run an ONNX model; compare with output_K.pb; time eager vs compiled\n"
      "  conformance [--data DIR] [--suite S]... [--backend B]... [--filter F] [--json FILE] [-v] [--no-list]\n"
      "                                         ONNX's conformance suites (data: scripts/conformance_data.sh)\n"
      "  fuzz [--seconds N] [--seed S] [--out DIR] [--replay FILE] [--jobs 1] [--disable F,G] [--backends B,C]\n"
      "       [--ignore KIND,...] [--max-steps N] [--reduce-per-kind N]\n"
      "       [--inductor-rate R] [--batch N] [--cases N] [--case K] [--timeout S] [--reduce-seconds S]\n"
      "       [--no-reduce] [--expect-clean] [--print [--cpp]] [--features] [-v]\n"
      "                                         differential fuzzing: random programs, eager vs every backend\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage();
  try {
    const std::string& cmd = args[0];
    if (cmd == "demo") return sinter::tools::demo();
    if (cmd == "bench") {
      sinter::tools::BenchOptions opt;
      for (size_t i = 1; i < args.size(); ++i) {
        auto value = [&]() -> std::string {
          if (i + 1 >= args.size()) throw sinter::Error(fmt::format("{} needs a value", args[i]));
          return args[++i];
        };
        if (args[i] == "--suite") opt.suite = value();
        else if (args[i] == "--json") opt.json = value();
        else if (args[i] == "--quick") opt.quick = true;
        else if (args[i] == "--threads") sinter::set_num_threads(std::stoi(value()));
        else if (args[i] == "--device") opt.device = value(), opt.suite = "workloads";
        else if (args[i] == "--backends") opt.backends = sinter::tools::split_list(value());
        else if (args[i] == "--only") opt.only = value();
        else if (args[i] == "--probe") opt.probe = value();  // hidden: the warm/cold compile-time child
        else throw sinter::Error(fmt::format("unknown option {}", args[i]));
      }
      if (opt.suite == "eager") return sinter::tools::bench_eager(opt);
      if (opt.suite == "overhead") return sinter::tools::bench_overhead(opt);
      if (opt.suite == "workloads") return sinter::tools::bench_workloads(opt);
      throw sinter::Error(fmt::format("unknown bench suite '{}' (known: eager, overhead, workloads)", opt.suite));
    }
    if (cmd == "fuzz") {
      sinter::tools::FuzzOptions opt;
      bool seeded = false;
      for (size_t i = 1; i < args.size(); ++i) {
        auto value = [&]() -> std::string {
          if (i + 1 >= args.size()) throw sinter::Error(fmt::format("{} needs a value", args[i]));
          return args[++i];
        };
        const std::string& a = args[i];
        if (a == "--seconds") opt.seconds = std::stod(value());
        else if (a == "--seed") opt.seed = std::stoull(value()), seeded = true;
        else if (a == "--out") opt.out_dir = value();
        else if (a == "--replay") opt.replay = value();
        else if (a == "--jobs") {
          if (std::stoi(value()) != 1) throw sinter::Error("fuzz: --jobs supports 1 (cases run one child at a time)");
        } else if (a == "--disable") opt.disabled = sinter::tools::split_list(value());
        else if (a == "--backends") opt.backends = sinter::tools::split_list(value());
        else if (a == "--ignore") opt.ignore = sinter::tools::split_list(value());
        else if (a == "--inductor-rate") opt.inductor_rate = std::stod(value());
        else if (a == "--batch") opt.batch = std::max(1ULL, std::stoull(value()));
        else if (a == "--cases") opt.cases = std::stoull(value());
        else if (a == "--case") opt.first_case = std::stoull(value());
        else if (a == "--timeout") opt.timeout_s = std::stod(value());
        else if (a == "--reduce-seconds") opt.reduce_seconds = std::stod(value());
        else if (a == "--reduce-per-kind") opt.reduce_per_signature = std::stoi(value());
        else if (a == "--max-steps") opt.max_steps = std::stoi(value());
        else if (a == "--no-reduce") opt.reduce = false;
        else if (a == "--expect-clean") opt.expect_clean = true;
        else if (a == "--print") opt.print = true;
        else if (a == "--cpp") opt.print_cpp = true;
        else if (a == "-v" || a == "--verbose") opt.verbose = true;
        else if (a == "--features") {
          fmt::print("{}\n", fmt::join(sinter::tools::fuzz_features(), " "));
          return 0;
        } else throw sinter::Error(fmt::format("unknown option {}", a));
      }
      if (!seeded && opt.replay.empty()) {
        opt.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) % 1000000007ULL;
        fmt::print("[fuzz] no --seed given: seed {}\n", opt.seed);
      }
      return sinter::tools::fuzz_command(opt);
    }
    if (cmd == "run" || cmd == "conformance") return sinter::tools::run_command(args);
    if (cmd == "help" || cmd == "--help" || cmd == "-h") {
      usage();
      return 0;
    }
    fmt::print(stderr, "unknown command '{}'\n", cmd);
    return usage();
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
