// Small helpers shared by the nn files: PyTorch-style printing of numbers and tuples, per-dim argument
// expansion, dotted-path splitting. Internal to src/nn.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sinter/error.h"
#include "sinter/nn.h"
#include "sinter/symint.h"

namespace sinter::nn {

// 1e-05, 0.1, 1.0: as Python's repr of a float.
std::string py_float(double v);
inline const char* py_bool(bool v) { return v ? "True" : "False"; }
// (3, 3) or (768,): as Python prints a tuple of ints.
std::string py_tuple(const std::vector<int64_t>& v);
// One value per spatial dim: a single number repeats; otherwise the count must be n. `what` names the
// argument.
std::vector<int64_t> expand_arg(const DimList& v, size_t n, const char* what, const char* layer);
// "a.b.c" -> {"a", "b", "c"}.
std::vector<std::string> split_path(const std::string& path);
// Checks a size argument of a layer is positive (or non-negative when zero_ok).
void check_size(int64_t v, const char* what, const char* layer, bool zero_ok = false);

// The source line of the module call being run (set by Module::operator()), so that an error raised inside a
// layer names the user's line that called the layer rather than a line of sinter. `fallback` when none is
// set.
Loc call_site(Loc fallback = Loc::current());
// (CallSiteScope, which sets it, is declared in sinter/nn.h: module holders use it.)

}  // namespace sinter::nn
