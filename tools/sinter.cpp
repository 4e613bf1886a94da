// The `sinter` command-line program: demo, bench, run.
#include <fmt/format.h>

#include <string>

#include "sinter/sinter.h"

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "demo";
  fmt::print("sinter {}: not built yet\n", cmd);
  return 0;
}
