// Timing and reporting helpers for `sinter bench` and `sinter demo`.
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sinter/compile.h"

namespace sinter::tools {

// Median wall time of `reps` runs of fn (after `warmup` runs), in milliseconds.
double time_ms(const std::function<void()>& fn, int reps = 10, int warmup = 2);
// Runs fn repeatedly for about `budget_ms` and returns the median time, for ops of unknown cost.
double time_auto_ms(const std::function<void()>& fn, double budget_ms = 300);
// Times a and b alternately (a, b, a, b, ...) and returns both medians, so that load from other processes and
// the machine's clock changes fall on both alike. Repetitions as time_auto_ms, from the slower of the two.
std::pair<double, double> time_pair_ms(const std::function<void()>& a, const std::function<void()>& b,
                                       double budget_ms = 300);

// compile()'s options for a bench backend name: "B+tiered" is backend B with CompileOptions::tiered (the first
// call runs on aot_eager while B compiles).
CompileOptions options_for(const std::string& backend);

double ms_since(std::chrono::steady_clock::time_point start);
// A line of /proc/self/status in MB ("VmRSS", "VmHWM"); NaN where there is none.
double status_mb(const std::string& key);
// Resets the process's peak resident size (VmHWM) to its current size (Linux's clear_refs).
void reset_peak_rss();

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
  Json& add_measured(const std::string& key, double value);  // null for NaN (a measurement not made)
  Json& add_raw(const std::string& key, const std::string& json);
  std::string str() const;

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};
std::string json_array(const std::vector<std::string>& items);
// A results file's first fields: machine, date, device, threads, sinter_commit, suite, quick.
Json results_envelope(const std::string& device, const std::string& suite, bool quick);
std::string json_list(const std::vector<double>& values);  // [1.5, 2] on one line
void write_file(const std::string& path, const std::string& text);

// Runs this program again (/proc/self/exe) with `args`, without a shell, with `env` set on top of this
// process's environment; returns its exit status and what it printed (stdout and stderr together).
struct ChildResult {
  int status = -1;  // exit code; -1 when it could not be started or was killed
  std::string output;
};
ChildResult run_self(const std::vector<std::string>& args,
                     const std::vector<std::pair<std::string, std::string>>& env = {});

// The number after `key=` in a probe child's output ("probe compile_s=0.25"); NaN, with the end of the child's
// output on stderr naming `what`, when the child failed or printed none.
double probe_field(const ChildResult& r, const std::string& key, const std::string& what);

// A new empty directory under $TMPDIR (or /tmp), private to the user; and a recursive delete for it.
std::string make_temp_dir(const std::string& prefix);
void remove_dir(const std::string& path);

}  // namespace sinter::tools
