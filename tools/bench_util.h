// Timing and reporting helpers for `sinter bench` and `sinter demo`.
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace sinter::tools {

// Median wall time of `reps` runs of fn (after `warmup` runs), in milliseconds.
double time_ms(const std::function<void()>& fn, int reps = 10, int warmup = 2);
// Runs fn repeatedly for about `budget_ms` and returns the median time, for ops of unknown cost.
double time_auto_ms(const std::function<void()>& fn, double budget_ms = 300);

std::string machine_name();  // hostname + CPU model
std::string today();         // YYYY-MM-DD
std::string git_commit();    // short hash or "unknown"

// A flat JSON object writer, enough for the results envelope.
class Json {
 public:
  Json& add(const std::string& key, const std::string& value);
  Json& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
  Json& add(const std::string& key, double value);
  Json& add(const std::string& key, int64_t value);
  Json& add(const std::string& key, int value) { return add(key, static_cast<int64_t>(value)); }
  Json& add_null(const std::string& key);
  Json& add_raw(const std::string& key, const std::string& json);
  std::string str() const;

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};
std::string json_array(const std::vector<std::string>& items);
void write_file(const std::string& path, const std::string& text);

}  // namespace sinter::tools
