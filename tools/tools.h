// The subcommands of the `sinter` program.
#pragma once
#include <string>

namespace sinter::tools {

struct BenchOptions {
  std::string suite = "eager";
  std::string json;  // write results here when set
  bool quick = false;
};

int bench_eager(const BenchOptions& options);
int demo();

}  // namespace sinter::tools
