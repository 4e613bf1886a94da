#include "bench_util.h"

#include "sinter/threads.h"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

extern char** environ;

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

std::pair<double, double> time_pair_ms(const std::function<void()>& a, const std::function<void()>& b,
                                       double budget_ms) {
  double once = std::max(time_ms(a, 1, 1), time_ms(b, 1, 1));
  int reps = static_cast<int>(std::clamp(budget_ms / std::max(once, 1e-3), 3.0, 200.0));
  std::vector<double> ta, tb;
  auto timed = [](const std::function<void()>& fn) {
    auto start = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  for (int i = 0; i < reps; ++i) {
    ta.push_back(timed(a));
    tb.push_back(timed(b));
  }
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  return {ta[ta.size() / 2], tb[tb.size() / 2]};
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
Json& Json::add_measured(const std::string& key, double value) {
  return std::isnan(value) ? add_null(key) : add(key, value);
}

CompileOptions options_for(const std::string& backend) {
  constexpr std::string_view kTiered = "+tiered";
  CompileOptions o;
  o.backend = backend;
  if (backend.ends_with(kTiered)) {
    o.backend = backend.substr(0, backend.size() - kTiered.size());
    o.tiered = true;
  }
  return o;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double status_mb(const std::string& key) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return NAN;
  char line[256];
  double kb = NAN;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key.c_str(), key.size()) == 0 && line[key.size()] == ':')
      kb = std::strtod(line + key.size() + 1, nullptr);
  std::fclose(f);
  return kb / 1024;
}

void reset_peak_rss() {
  if (std::FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
    std::fputs("5", f);
    std::fclose(f);
  }
}

double probe_field(const ChildResult& r, const std::string& key, const std::string& what) {
  const size_t at = r.output.find(key + "=");
  if (r.status != 0 || at == std::string::npos) {
    fmt::print(stderr, "  {} failed (status {}):\n{}\n", what, r.status,
               r.output.substr(r.output.size() > 2000 ? r.output.size() - 2000 : 0));
    return NAN;
  }
  return std::strtod(r.output.c_str() + at + key.size() + 1, nullptr);
}

Json results_envelope(const std::string& device, const std::string& suite, bool quick) {
  Json env;
  env.add("machine", machine_name()).add("date", today()).add("device", device).add("threads", get_num_threads());
  env.add("sinter_commit", git_commit()).add("suite", suite);
  env.add_raw("quick", quick ? "true" : "false");
  return env;
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

std::string json_list(const std::vector<double>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i)
    out +=
        (i ? ", " : "") + (std::isfinite(values[i]) ? fmt::format("{:.6g}", values[i]) : std::string("null"));
  return out + "]";
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) throw Error(fmt::format("cannot write {}", path));
  f << text << "\n";
}

ChildResult run_self(const std::vector<std::string>& args,
                     const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    bool replaced = std::any_of(env.begin(), env.end(),
                                [&](const auto& kv) { return entry.rfind(kv.first + "=", 0) == 0; });
    if (!replaced) env_strings.push_back(entry);
  }
  for (const auto& [key, value] : env) env_strings.push_back(key + "=" + value);
  std::string exe = "/proc/self/exe";
  std::vector<char*> argv{exe.data()}, envp;
  std::vector<std::string> arg_copy = args;
  for (std::string& a : arg_copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  int fds[2];
  if (pipe(fds) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  ChildResult result;
  if (rc != 0) {
    close(fds[0]);
    result.output = fmt::format("could not start {}: error {}", exe, rc);
    return result;
  }
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    result.output.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string make_temp_dir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = fmt::format("{}/{}-XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix);
  if (!mkdtemp(templ.data())) throw Error(fmt::format("cannot create a temporary directory {}", templ));
  return templ;  // mkdtemp makes it mode 0700
}

void remove_dir(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

}  // namespace sinter::tools
