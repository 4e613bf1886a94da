// Helpers shared by the nn files (see util.h).
#include "nn/util.h"

#include <fmt/format.h>

#include <cmath>

#include "support/check.h"

namespace sinter::nn {

std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);  // shortest round-trip form, like Python's repr
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string py_tuple(const std::vector<int64_t>& v) {
  if (v.size() == 1) return fmt::format("({},)", v[0]);
  return fmt::format("({})", fmt::join(v, ", "));
}

std::vector<int64_t> expand_arg(const DimList& v, size_t n, const char* what, const char* layer) {
  if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
  SINTER_CHECK(v.size() == n, "{}: {} must be one number or {} numbers (one per spatial dim), got {}", layer,
               what, n, v.size());
  return std::vector<int64_t>(v.begin(), v.end());
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  if (path.empty()) return parts;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

namespace {
thread_local std::optional<Loc> t_call_site;
}  // namespace

Loc call_site(Loc fallback) { return t_call_site ? *t_call_site : fallback; }
CallSiteScope::CallSiteScope(const Loc& loc) : previous_(t_call_site) { t_call_site = loc; }
CallSiteScope::~CallSiteScope() { t_call_site = previous_; }

void check_size(int64_t v, const char* what, const char* layer, bool zero_ok) {
  SINTER_CHECK(zero_ok ? v >= 0 : v > 0, "{}: {} must be {}, got {}", layer, what,
               zero_ok ? "non-negative" : "positive", v);
}

}  // namespace sinter::nn
