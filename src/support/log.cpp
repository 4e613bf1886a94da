#include "support/log.h"
#include "support/warning.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace sinter {
namespace {

constexpr std::string_view kNames[] = {"graph",   "guards",      "recompiles", "graph_breaks", "dynamic",
                                       "fusion",  "output_code", "perf_hints", "passes",
                                       "profile", "schedule",    "cudagraphs", "aot"};
static_assert(std::size(kNames) == static_cast<size_t>(LogChannel::kCount));

std::atomic<uint32_t>& mask() {
  static std::atomic<uint32_t> m{0};
  return m;
}

uint32_t parse(const char* spec) {
  uint32_t m = 0;
  std::vector<std::string> unknown;
  std::string_view s = spec ? spec : "";
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    if (item.starts_with("+")) item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    bool known = item.empty() || item == "all";
    if (item == "all") m = ~0u;
    for (size_t i = 0; i < std::size(kNames); ++i) {
      if (item == kNames[i]) m |= 1u << i;
      known = known || item == kNames[i];
    }
    if (!known) unknown.emplace_back(item);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  if (!unknown.empty()) {
    std::string names, known;
    for (const std::string& u : unknown) names += (names.empty() ? "'" : ", '") + u + "'";
    for (std::string_view k : kNames) known += std::string(k) + ", ";
    warn_once("SINTER_LOGS=" + std::string(spec),
              fmt::format("SINTER_LOGS: unknown log channel{} {} (ignored); the channels are {}all",
                          unknown.size() == 1 ? "" : "s", names, known));
  }
  return m;
}

std::once_flag& loaded() {
  static std::once_flag f;
  return f;
}

std::mutex& stderr_mutex() {  // one line at a time, whatever thread writes it
  static std::mutex m;
  return m;
}

}  // namespace

void reload_log_settings() { mask().store(parse(std::getenv("SINTER_LOGS"))); }

bool log_enabled(LogChannel channel) {
  std::call_once(loaded(), reload_log_settings);
  return (mask().load(std::memory_order_relaxed) >> static_cast<int>(channel)) & 1u;
}

std::string_view log_channel_name(LogChannel channel) { return kNames[static_cast<int>(channel)]; }

void warn_once(std::string_view key, std::string_view text) {
  static std::mutex m;
  static std::set<std::string, std::less<>> seen;
  {
    std::lock_guard<std::mutex> lock(m);
    if (!seen.emplace(key).second) return;
  }
  log_warning(text);
}

void log_message(LogChannel channel, std::string_view text) {
  std::lock_guard<std::mutex> lock(stderr_mutex());
  std::fprintf(stderr, "[sinter:%.*s] %.*s\n", static_cast<int>(log_channel_name(channel).size()),
               log_channel_name(channel).data(), static_cast<int>(text.size()), text.data());
}

void log_warning(std::string_view text) {
  std::lock_guard<std::mutex> lock(stderr_mutex());
  std::fprintf(stderr, "[sinter:warning] %.*s\n", static_cast<int>(text.size()), text.data());
}

}  // namespace sinter
