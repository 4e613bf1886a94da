// The built-in backends, registered by the registry on first use (compile.h holds the public registry API).
// Internal to src/backends.
#pragma once
#include "sinter/compile.h"

namespace sinter::backends {

// "eager": runs the graph it is given, op by op, exactly as recorded (compile() with backend "eager" never
// captures at all; this is for code that hands a graph to the backend directly).
Backend eager_backend();
// "aot_eager": runs the functionalized graph on the eager kernels, op by op in graph order, so results
// (random draws included) equal eager's exactly.
Backend aot_eager_backend();

}  // namespace sinter::backends
