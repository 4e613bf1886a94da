#include "bench_util.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>

#include "sinter/error.h"

namespace sinter::tools {

double time_ms(const std::function<void()>& fn, int reps, int warmup) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double time_auto_ms(const std::function<void()>& fn, double budget_ms) {
  double once = time_ms(fn, 1, 1);
  int reps = static_cast<int>(std::clamp(budget_ms / std::max(once, 1e-3), 3.0, 200.0));
  return time_ms(fn, reps, 1);
}

std::string machine_name() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string model = "unknown cpu";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  return fmt::format("{} ({}, {} cores)", host, model, sysconf(_SC_NPROCESSORS_ONLN));
}

std::string today() {
  std::time_t now = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", std::gmtime(&now));
  return buf;
}

std::string git_commit() {
  if (const char* c = std::getenv("SINTER_COMMIT")) return c;
  FILE* p = popen("git rev-parse --short HEAD 2>/dev/null", "r");
  if (!p) return "unknown";
  char buf[64] = {0};
  std::string out = fgets(buf, sizeof(buf), p) ? std::string(buf) : "unknown";
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out.empty() ? "unknown" : out;
}

namespace {
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}
}  // namespace

Json& Json::add(const std::string& key, const std::string& value) {
  fields_.emplace_back(key, quote(value));
  return *this;
}
Json& Json::add(const std::string& key, double value) {
  fields_.emplace_back(key, std::isfinite(value) ? fmt::format("{:.6g}", value) : "null");
  return *this;
}
Json& Json::add(const std::string& key, int64_t value) {
  fields_.emplace_back(key, fmt::format("{}", value));
  return *this;
}
Json& Json::add_null(const std::string& key) {
  fields_.emplace_back(key, "null");
  return *this;
}
Json& Json::add_raw(const std::string& key, const std::string& json) {
  fields_.emplace_back(key, json);
  return *this;
}
std::string Json::str() const {
  std::string out = "{";
  for (size_t i = 0; i < fields_.size(); ++i)
    out += (i ? ", " : "") + quote(fields_[i].first) + ": " + fields_[i].second;
  return out + "}";
}

std::string json_array(const std::vector<std::string>& items) {
  std::string out = "[\n";
  for (size_t i = 0; i < items.size(); ++i) out += "  " + items[i] + (i + 1 < items.size() ? ",\n" : "\n");
  return out + "]";
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) throw Error(fmt::format("cannot write {}", path));
  f << text << "\n";
}

}  // namespace sinter::tools
