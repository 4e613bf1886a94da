// Option values of the `sinter` program: whole-string numbers with a message naming the option and the value
// (std::stoi alone accepts "12abc" and throws a bare "stoi" on "abc").
#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "sinter/error.h"
#include "tools.h"

namespace sinter::tools {

int parse_int_option(const std::string& option, const std::string& value, int min) {
  errno = 0;
  char* end = nullptr;
  long v = value.empty() ? 0 : std::strtol(value.c_str(), &end, 10);
  bool whole = !value.empty() && end == value.c_str() + value.size() && errno == 0;
  if (!whole || v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    throw Error(fmt::format("{}: '{}' is not a whole number", option, value));
  if (v < min) throw Error(fmt::format("{}: {} is too small (give {} or more)", option, v, min));
  return static_cast<int>(v);
}

double parse_double_option(const std::string& option, const std::string& value, double min) {
  errno = 0;
  char* end = nullptr;
  double v = value.empty() ? 0 : std::strtod(value.c_str(), &end);
  bool whole = !value.empty() && end == value.c_str() + value.size() && errno == 0 && std::isfinite(v);
  if (!whole) throw Error(fmt::format("{}: '{}' is not a finite number", option, value));
  if (v < min) throw Error(fmt::format("{}: {} is too small (give {} or more)", option, value, min));
  return v;
}

bool is_help(const std::string& arg) { return arg == "--help" || arg == "-h"; }

}  // namespace sinter::tools
