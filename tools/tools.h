// The subcommands of the `sinter` program.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sinter/types.h"

namespace sinter::tools {

struct BenchOptions {
  std::string suite = "eager";
  std::string json;  // write results here when set
  bool quick = false;
  // The workload suite (`--device cpu`): which backends, which workload (empty: all).
  std::string device;
  std::vector<std::string> backends{"aot_eager", "inductor"};
  std::string only;
  std::string probe;  // hidden: compile this workload once with backends[0], print the compile seconds
  // The models suite: the zoo's folder (default .cache/models), the batch sizes ("1,2,8"), and the hidden probe's
  // input folder.
  std::string models_dir, batches, probe_inputs;
};

std::vector<std::string> split_list(const std::string& comma_separated);  // "a,b" -> {"a", "b"}

// Option values (tools/cli_args.cpp): the whole string must be a number not below `min`; otherwise a
// sinter::Error naming the option and the value ("--rtol: 'abc' is not a finite number").
int parse_int_option(const std::string& option, const std::string& value, int min);
double parse_double_option(const std::string& option, const std::string& value, double min);
bool is_help(const std::string& arg);  // --help or -h

// Each command's usage text (tools/sinter.cpp), printed by `sinter <command> --help`.
extern const char* const kRunUsage;
extern const char* const kConformanceUsage;
extern const char* const kCompileUsage;

int bench_eager(const BenchOptions& options);
int bench_overhead(const BenchOptions& options);  // --suite overhead (bench_overhead.cpp)
int bench_cuda(const BenchOptions& options);       // --device cuda (bench_cuda.cpp)
int bench_train(const BenchOptions& options);      // --suite train (bench_train.cpp)
int bench_models(const BenchOptions& options);     // --suite models (bench_models.cpp)
int bench_aot(const BenchOptions& options);        // --suite aot (bench_aot.cpp)

// `sinter run MODEL.onnx` (tools/run.cpp).
struct RunOptions {
  std::string model, backend = "inductor", mode = "default", device = "cpu", inputs, expected;
  int bench = 0;
  double rtol = -1, atol = -1;  // -1: the output dtype's default
  bool freeze = true;           // the initializers are constants of the graph (--no-freeze: graph inputs)
};
int run_onnx(const RunOptions& options);
// `sinter conformance` (tools/run.cpp).
struct ConformanceCliOptions {
  std::string data_dir = ".cache/onnx-data", filter, json, device = "cpu";
  std::vector<std::string> suites, backends;
  bool verbose = false, list = true, allow_failures = false;
};
int conformance(const ConformanceCliOptions& options);
// Parses `run ...` / `compile ...` / `conformance ...` (args[0] is the command) and runs it.
int run_command(const std::vector<std::string>& args);
int bench_workloads(const BenchOptions& options);
int demo();

// `sinter fuzz` (tools/fuzz*.cpp): the differential fuzzer.
struct FuzzOptions {
  double seconds = 60;
  uint64_t seed = 1;
  std::string out_dir = "fuzz-findings";
  std::string replay;            // re-run this saved program instead of generating
  std::vector<std::string> disabled;   // generator features left out (sinter fuzz --features lists them)
  std::vector<std::string> backends;   // empty: eager, aot_eager, inductor
  Device device = kCPU;                // --device cuda: the compiled side on the GPU (or the simulated one)
  std::vector<std::string> ignore;     // finding kinds that are counted apart and do not fail the run
  double inductor_rate = 0.3;    // the share of cases that also run under inductor
  uint64_t batch = 25;           // cases per child process
  uint64_t cases = 0;            // stop after this many cases (0: only the time limit)
  uint64_t first_case = 0;
  double timeout_s = 60;         // per case
  double reduce_seconds = 60;    // per finding
  int reduce_per_signature = 1;  // findings of one kind (kind, config, message) that are reduced
  int max_steps = 8;
  bool reduce = true, expect_clean = false, verbose = false, print = false, print_cpp = false;
};
int fuzz_command(const FuzzOptions& options);
std::vector<std::string> fuzz_features();  // the generator features --disable takes

}  // namespace sinter::tools
