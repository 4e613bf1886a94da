// The subcommands of the `sinter` program.
#pragma once
#include <string>
#include <vector>

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
};

std::vector<std::string> split_list(const std::string& comma_separated);  // "a,b" -> {"a", "b"}

int bench_eager(const BenchOptions& options);
int bench_workloads(const BenchOptions& options);
int demo();

}  // namespace sinter::tools
