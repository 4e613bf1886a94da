// `sinter demo`: placeholder until the nn layer lands.
#include <fmt/format.h>

#include "tools.h"

namespace sinter::tools {
int demo() {
  fmt::print("demo: coming with the nn layer\n");
  return 0;
}
}  // namespace sinter::tools
