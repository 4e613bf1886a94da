// The fuzzer's child processes and its reducer. A case runs in a forked child with a watchdog, so a crash (a
// signal), an abort or a hang is a result, not the end of the run. The reducer is greedy delta debugging: it tries
// smaller programs (a step bypassed, an output or a size variant dropped, an input made contiguous or float32, a
// size shrunk) and keeps each one that still fails the same way, until nothing smaller fails or the budget ends.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>

#include "fuzz.h"

namespace sinter::tools::fuzz {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

std::string encode(const CaseResult& r) {
  return fmt::format("{}\t{}\t{}\t{}\n", r.kind, r.config, r.variant, r.detail);
}

CaseResult decode(const std::string& line) {
  CaseResult r;
  std::vector<std::string> f;
  std::stringstream in(line);
  for (std::string x; std::getline(in, x, '\t');) f.push_back(x);
  if (f.size() >= 4) r = {f[0], f[1], std::stoi(f[2]), f[3]};
  return r;
}

// Digits and quoted names vary as a program shrinks; the rest of an error message names the failure.
std::string normalize(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 120)) {
    if (c >= '0' && c <= '9') continue;
    out += c;
  }
  return out.substr(0, 60);
}

// A crash is the same when it is the same signal; an error when its message (less numbers) starts the same.
bool same_failure(const CaseResult& a, const CaseResult& b, bool check_config) {
  if (a.kind != b.kind || (check_config && a.config != b.config)) return false;
  if (a.kind == "crash") return a.detail.substr(0, a.detail.find(')')) == b.detail.substr(0, b.detail.find(')'));
  if (a.kind == "compile-error" || a.kind == "internal-error" || a.kind == "eager-internal-error") {
    return normalize(a.detail) == normalize(b.detail);
  }
  return true;
}

// The program without value `id`; its uses read `repl` instead (an earlier value), or fail when repl < 0.
bool without_value(const Program& p, int id, int repl, Program* out) {
  Program q = p;
  auto remap = [&](int v, int* r) {
    if (v == id) {
      if (repl < 0) return false;
      v = repl;
    }
    *r = v > id ? v - 1 : v;
    return true;
  };
  int n_in = static_cast<int>(p.inputs.size());
  if (id < n_in) q.inputs.erase(q.inputs.begin() + id);
  else q.steps.erase(q.steps.begin() + (id - n_in));
  for (auto& s : q.steps) {
    for (int& a : s.args) {
      if (!remap(a, &a)) return false;
    }
  }
  std::vector<int> outs;
  for (int o : q.outputs) {
    if (o == id && repl < 0) continue;  // dropping an output is fine
    int r;
    remap(o, &r);
    if (std::find(outs.begin(), outs.end(), r) == outs.end()) outs.push_back(r);
  }
  if (outs.empty()) return false;
  q.outputs = outs;
  if (q.num_args() == 0) return false;
  *out = q;
  return true;
}

Program keep_variants(const Program& p, const std::vector<int>& keep) {
  Program q = p;
  for (auto& c : q.classes) {
    std::vector<int64_t> s;
    for (int k : keep) s.push_back(c.sizes.at(k));
    c.sizes = s;
  }
  return q;
}

// Candidates smaller than p, most effective first.
std::vector<Program> candidates(const Program& p) {
  std::vector<Program> out;
  int n_in = static_cast<int>(p.inputs.size());
  // Bypass a step: its uses read its first argument.
  for (int k = static_cast<int>(p.steps.size()) - 1; k >= 0; --k) {
    const Step& s = p.steps[k];
    Program q;
    if (without_value(p, n_in + k, -1, &q)) out.push_back(q);
    for (int a : s.args) {
      if (without_value(p, n_in + k, a, &q)) out.push_back(q);
    }
  }
  if (p.outputs.size() > 1) {
    for (int o : p.outputs) {
      Program q = p;
      q.outputs = {o};
      out.push_back(q);
    }
  }
  int nv = p.num_variants();
  if (nv > 1) {
    for (int v = 0; v < nv; ++v) out.push_back(keep_variants(p, {v}));
    for (int a = 0; a < nv; ++a) {
      for (int b = a + 1; b < nv; ++b) {
        if (nv > 2) out.push_back(keep_variants(p, {a, b}));
      }
    }
  }
  // Inputs no step reads.
  for (int i = n_in - 1; i >= 0; --i) {
    Program q;
    if (without_value(p, i, -1, &q)) out.push_back(q);
  }
  for (int i = 0; i < n_in; ++i) {
    const InputSpec& in = p.inputs[i];
    if (in.layout != Layout::kContiguous) {
      Program q = p;
      q.inputs[i].layout = Layout::kContiguous, q.inputs[i].layout_args.clear();
      out.push_back(q);
    }
    if (!in.dynamic.empty()) {
      Program q = p;
      q.inputs[i].dynamic.clear();
      out.push_back(q);
    }
    if (in.dtype != kFloat32 && in.index_bound == 0) {
      Program q = p;
      q.inputs[i].dtype = kFloat32;
      out.push_back(q);
    }
  }
  if (p.specials) {
    Program q = p;
    q.specials = false;
    out.push_back(q);
  }
  if (p.freeze) {
    Program q = p;
    q.freeze = false;
    out.push_back(q);
  }
  for (size_t c = 0; c < p.classes.size(); ++c) {
    for (size_t v = 0; v < p.classes[c].sizes.size(); ++v) {
      int64_t s = p.classes[c].sizes[v];
      for (int64_t smaller : {int64_t{1}, int64_t{2}, s - 1}) {
        if (smaller >= s || smaller < 1) continue;
        Program q = p;
        q.classes[c].sizes[v] = smaller;
        out.push_back(q);
      }
    }
  }
  return out;
}

Config parse_config(const std::string& s) {
  size_t slash = s.find('/');
  return Config{s.substr(0, slash), slash != std::string::npos && s.substr(slash + 1) == "always"};
}

}  // namespace

std::string signal_text(int sig) { return fmt::format("signal {} ({})", sig, strsignal(sig)); }

ForkedChild fork_child(const std::function<void(int fd)>& body) {
  int fds[2];
  if (pipe(fds) != 0) throw Error("fuzz: pipe failed");
  pid_t pid = fork();
  if (pid < 0) throw Error("fuzz: fork failed");
  if (pid == 0) {
    ::close(fds[0]);
    body(fds[1]);
    ::close(fds[1]);
    _exit(0);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

int reap_child(ForkedChild& child, bool kill_it) {
  ::close(child.fd);
  if (kill_it) kill(child.pid, SIGKILL);
  int status = 0;
  waitpid(child.pid, &status, 0);
  return status;
}

CaseResult run_case_isolated(const Program& p, const std::vector<Config>& configs, double timeout_s) {
  ForkedChild child = fork_child([&](int fd) {
    CaseResult r;
    try {
      r = run_case(p, configs);
    } catch (const std::exception& e) {
      r = {"internal-error", "runner", -1, e.what()};
    }
    write_all(fd, encode(r));
  });
  std::string buf;
  auto start = Clock::now();
  bool timed_out = false;
  for (;;) {
    double left = timeout_s - since(start);
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{child.fd, POLLIN, 0};
    int rc = poll(&pfd, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (rc <= 0) continue;
    char chunk[4096];
    ssize_t n = ::read(child.fd, chunk, sizeof chunk);
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
  }
  int status = reap_child(child, timed_out);
  if (timed_out) return {"timeout", configs.size() == 1 ? configs[0].str() : "", -1,
                         fmt::format("no result after {:.0f} s", timeout_s)};
  if (WIFSIGNALED(status)) return {"crash", configs.size() == 1 ? configs[0].str() : "", -1, signal_text(WTERMSIG(status))};
  if (buf.empty()) return {"crash", "", -1, fmt::format("exit status {} without a result", WEXITSTATUS(status))};
  return decode(buf.substr(0, buf.find('\n')));
}

Program reduce(const Program& p, const CaseResult& failure, double budget_s, double timeout_s, bool verbose) {
  auto start = Clock::now();
  // A failure under one configuration reduces under that one; a failure of eager itself needs no compiled run;
  // a crash or hang of a whole case (no configuration in its result) keeps every configuration.
  std::vector<Config> configs;
  bool check_config = false;
  if (failure.config == "eager-reference" || failure.config == "eager") {
  } else if (!failure.config.empty() && failure.config != "runner") {
    configs.push_back(parse_config(failure.config));
    check_config = true;
  } else {
    configs = {{"eager", false}, {"aot_eager", false}, {"inductor", false},
               {"eager", true},  {"aot_eager", true},  {"inductor", true}};
  }
  Program best = p;
  int tried = 0, kept = 0;
  double cand_timeout = failure.kind == "timeout" ? timeout_s : std::min(timeout_s, 60.0);
  bool progress = true;
  while (progress && since(start) < budget_s) {
    progress = false;
    for (const Program& c : candidates(best)) {
      if (since(start) >= budget_s) break;
      ++tried;
      CaseResult r = run_case_isolated(c, configs, cand_timeout);
      if (same_failure(r, failure, check_config)) {
        best = c;
        ++kept;
        progress = true;
        if (verbose) fmt::print("  reduce: {} steps, {} inputs ({} tried)\n", best.steps.size(), best.inputs.size(), tried);
        break;
      }
    }
  }
  if (verbose) fmt::print("  reduce: {} candidates tried, {} kept, {:.1f} s\n", tried, kept, since(start));
  return compact_classes(best);
}

}  // namespace sinter::tools::fuzz
