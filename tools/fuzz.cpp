// `sinter fuzz`: the differential fuzzer. Generates random small programs (tools/fuzz_gen.cpp), runs each eagerly
// and compiled under every backend and dynamic policy on several input sizes (tools/fuzz_run.cpp), in batches of
// cases per forked child; a crash or hang in a batch re-runs the culprit alone. Findings are saved as replayable
// files, reduced (tools/fuzz_reduce.cpp) and printed as C++.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "fuzz.h"
#include "tools.h"

namespace sinter::tools {
namespace fuzz {
std::string signal_text(int sig);
}  // namespace fuzz

namespace {

using namespace fuzz;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  SINTER_CHECK(in.good(), "fuzz: cannot read '{}'", path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::vector<Config> all_configs() {
  return {{"eager", false}, {"aot_eager", false}, {"aot_eager", true}, {"eager", true}, {"inductor", false},
          {"inductor", true}};
}

// The configurations of one case: the cheap backends always, inductor on a sample (the same on every run).
std::vector<Config> case_configs(const FuzzOptions& o, uint64_t case_id) {
  std::vector<Config> out;
  bool inductor = static_cast<double>(mix64(o.seed * 31 + case_id) % 10000) < o.inductor_rate * 10000;
  for (const Config& c : all_configs()) {
    if (!o.backends.empty() && std::find(o.backends.begin(), o.backends.end(), c.backend) == o.backends.end()) continue;
    if (c.backend == "inductor" && !inductor) continue;
    out.push_back(c);
    out.back().device = o.device;
  }
  return out;
}

struct Finding {
  uint64_t case_id;
  CaseResult result;
  std::string file, reduced_file;
};

class Driver {
 public:
  explicit Driver(const FuzzOptions& o) : o_(o) {}

  int run();
  int replay();

 private:
  void run_batch(uint64_t first, uint64_t count);
  void child_batch(int fd, uint64_t first, uint64_t count);
  void record(uint64_t case_id, const CaseResult& r, const std::string& program_text);
  void progress(bool force);
  std::string case_file(uint64_t id) const { return fmt::format("{}/case-{}.txt", work_dir_, id); }

  FuzzOptions o_;
  GenOptions gen_;
  std::string work_dir_;
  Clock::time_point start_ = Clock::now(), last_progress_ = Clock::now();
  uint64_t cases_ = 0, invalid_ = 0;
  std::map<std::string, int> kinds_, signatures_, ignored_;
  std::vector<Finding> findings_;
  bool stop_ = false;
};

void Driver::child_batch(int fd, uint64_t first, uint64_t count) {
  auto say = [fd](const std::string& s) { (void)!::write(fd, s.data(), s.size()); };
  uint64_t id = first;
  // While generating, the step eager is about to run is saved with the program so far: if eager crashes on it,
  // the parent has a program that replays the crash.
  gen_.on_try = [this, &id](const Program& so_far, const Step& next) {
    Program p = so_far;
    p.steps.push_back(next);
    p.outputs = {p.num_values() - 1};
    write_file(case_file(id), to_text(p));
  };
  for (; id < first + count; ++id) {
    if (since(start_) > o_.seconds) break;
    say(fmt::format("S {}\n", id));
    Program p = generate(o_.seed, id, gen_);
    write_file(case_file(id), to_text(p));
    say(fmt::format("P {}\n", id));
    CaseResult r;
    try {
      r = run_case(p, case_configs(o_, id));
    } catch (const std::exception& e) {
      r = {"internal-error", "runner", -1, e.what()};
    }
    say(fmt::format("R {}\t{}\t{}\t{}\t{}\n", id, r.kind, r.config, r.variant, r.detail));
  }
}

void Driver::run_batch(uint64_t first, uint64_t count) {
  ForkedChild child = fork_child([&](int fd) { child_batch(fd, first, count); });
  std::string buf;
  int64_t current = -1;  // the case the child is on
  bool generated = false;
  auto case_start = Clock::now();
  bool timed_out = false;
  uint64_t next = first;
  for (;;) {
    if (current >= 0 && since(case_start) > o_.timeout_s) {
      timed_out = true;
      break;
    }
    pollfd pfd{child.fd, POLLIN, 0};
    if (poll(&pfd, 1, 500) <= 0) {
      progress(false);
      continue;
    }
    char chunk[8192];
    ssize_t n = ::read(child.fd, chunk, sizeof chunk);
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    for (size_t nl; (nl = buf.find('\n')) != std::string::npos;) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (line.rfind("S ", 0) == 0) {
        current = std::stoll(line.substr(2)), generated = false, case_start = Clock::now();
      } else if (line.rfind("P ", 0) == 0) {
        generated = true;
      } else if (line.rfind("R ", 0) == 0) {
        std::vector<std::string> f;
        std::stringstream in(line.substr(2));
        for (std::string x; std::getline(in, x, '\t');) f.push_back(x);
        uint64_t id = std::stoull(f.at(0));
        CaseResult r{f.at(1), f.size() > 2 ? f[2] : "", f.size() > 3 ? std::stoi(f[3]) : -1, f.size() > 4 ? f[4] : ""};
        ++cases_;
        if (r.kind == "invalid") ++invalid_;
        if (is_finding(r.kind)) record(id, r, read_file(case_file(id)));
        std::error_code ec;
        fs::remove(case_file(id), ec);
        current = -1, next = id + 1;
        progress(false);
      }
    }
  }
  int status = reap_child(child, timed_out);
  if (current < 0) return;
  // The child died (or hung) on `current`: confirm it alone in a fresh child.
  ++cases_;
  uint64_t id = static_cast<uint64_t>(current);
  std::string how = timed_out ? fmt::format("no result after {:.0f} s", o_.timeout_s)
                    : WIFSIGNALED(status) ? signal_text(WTERMSIG(status))
                                          : fmt::format("exit status {}", WEXITSTATUS(status));
  if (!generated) {
    // Eager itself failed on the step being tried (saved by on_try): the program ending in it replays that.
    std::string text = fs::exists(case_file(id)) ? read_file(case_file(id)) : "";
    CaseResult alone = text.empty() ? CaseResult{} : run_case_isolated(parse_program(text), case_configs(o_, id), o_.timeout_s);
    if (!is_finding(alone.kind)) alone = {timed_out ? "timeout" : "crash", "", -1, how + " while generating"};
    alone.config = "eager";  // eager failed: the reducer runs only eager
    record(id, alone, text);
  } else {
    std::string text = read_file(case_file(id));
    CaseResult alone = run_case_isolated(parse_program(text), case_configs(o_, id), o_.timeout_s);
    if (!is_finding(alone.kind)) alone = {timed_out ? "timeout" : "crash", "", -1, how + " (only after earlier cases)"};
    record(id, alone, text);
  }
  (void)next;
  std::error_code ec;
  fs::remove(case_file(id), ec);
}

void Driver::record(uint64_t case_id, const CaseResult& r, const std::string& text) {
  if (std::find(o_.ignore.begin(), o_.ignore.end(), r.kind) != o_.ignore.end()) {
    ++ignored_[r.kind];
    return;
  }
  ++kinds_[r.kind];
  std::string sig = r.kind + " " + r.config + " ";
  for (char c : r.detail.substr(0, 80)) {
    if (!(c >= '0' && c <= '9')) sig += c;
  }
  int seen = signatures_[sig]++;
  Finding f{case_id, r, "", ""};
  fs::create_directories(o_.out_dir);
  std::string header = fmt::format("# sinter fuzz finding: {} under {} (variant {})\n# {}\n# replay: sinter fuzz --replay FILE\n",
                                   r.kind, r.config.empty() ? "(every configuration)" : r.config, r.variant, r.detail);
  std::string base = fmt::format("{}/seed{}-case{}-{}", o_.out_dir, o_.seed, case_id, r.kind);
  fmt::print("\n[fuzz] finding {}: case {}: {} under {} (variant {})\n  {}\n", findings_.size() + 1, case_id, r.kind,
             r.config, r.variant, r.detail);
  if (text.empty()) {
    f.file = base + ".txt";
    write_file(f.file, header + fmt::format("# regenerate: sinter fuzz --seed {} --case {} --print\n", o_.seed, case_id));
  } else {
    f.file = base + ".txt";
    write_file(f.file, header + text);
    // Reduce the first few of each kind of failure; the rest are counted.
    if (o_.reduce && seen < o_.reduce_per_signature) {
      Program p = parse_program(text);
      Program small = reduce(p, r, o_.reduce_seconds, o_.timeout_s, o_.verbose);
      f.reduced_file = base + "-reduced.txt";
      write_file(f.reduced_file, header + to_text(small));
      std::string backend = "aot_eager";
      bool always = false;
      if (size_t slash = r.config.find('/'); slash != std::string::npos && r.config != "eager-reference") {
        backend = r.config.substr(0, slash), always = r.config.substr(slash + 1) == "always";
      }
      std::string cpp = to_cpp(small, backend, always);
      write_file(base + "-reduced.cpp", cpp);
      fmt::print("  reduced ({} steps): {}\n{}\n", small.steps.size(), f.reduced_file, to_text(small));
      fmt::print("  as C++ ({}-reduced.cpp):\n{}\n", base, cpp);
    } else {
      fmt::print("  saved {} (not reduced: {} earlier of the same kind)\n", f.file, seen);
    }
  }
  findings_.push_back(f);
  if (o_.expect_clean) stop_ = true;
}

void Driver::progress(bool force) {
  if (!force && std::chrono::duration<double>(Clock::now() - last_progress_).count() < 5) return;
  last_progress_ = Clock::now();
  std::vector<std::string> parts;
  for (const auto& [k, n] : kinds_) parts.push_back(fmt::format("{} {}", k, n));
  fmt::print("[fuzz] {:.0f} s: {} cases ({} invalid), {} findings{}{}\n", since(start_), cases_, invalid_,
             findings_.size(), parts.empty() ? "" : ": ", fmt::join(parts, ", "));
  std::fflush(stdout);
}

int Driver::run() {
  gen_.disabled = o_.disabled;
  gen_.max_steps = o_.max_steps;
  for (const auto& f : o_.disabled) {
    auto all = all_features();
    SINTER_CHECK(std::find(all.begin(), all.end(), f) != all.end(), "fuzz: unknown feature '{}' (known: {})", f,
                 fmt::join(all, ", "));
  }
  char tmpl[] = "/tmp/sinter-fuzz-XXXXXX";
  SINTER_CHECK(mkdtemp(tmpl) != nullptr, "fuzz: mkdtemp failed");
  work_dir_ = tmpl;
  // One kernel cache for the whole run (and its children): repeated kernels compile once.
  if (!std::getenv("SINTER_CACHE_DIR")) setenv("SINTER_CACHE_DIR", (work_dir_ + "/cache").c_str(), 1);
  fmt::print("[fuzz] seed {} for {:.0f} s, inductor on {:.0f}% of cases, batches of {}{}\n", o_.seed, o_.seconds,
             o_.inductor_rate * 100, o_.batch, o_.disabled.empty() ? "" : fmt::format(", disabled: {}", fmt::join(o_.disabled, ",")));
  std::fflush(stdout);
  uint64_t next = o_.first_case;
  while (!stop_ && since(start_) < o_.seconds && (o_.cases == 0 || next < o_.first_case + o_.cases)) {
    uint64_t count = o_.batch;
    if (o_.cases) count = std::min<uint64_t>(count, o_.first_case + o_.cases - next);
    uint64_t before = cases_;
    run_batch(next, count);
    uint64_t done = cases_ - before;
    if (done == 0) break;  // out of time inside the child
    next += done;
  }
  progress(true);
  fmt::print("[fuzz] summary: seed {}, {} cases in {:.0f} s, {} findings\n", o_.seed, cases_, since(start_),
             findings_.size());
  for (const auto& [k, n] : ignored_) fmt::print("  ({} {} ignored: --ignore {})\n", n, k, k);
  for (size_t i = 0; i < findings_.size(); ++i) {
    const Finding& f = findings_[i];
    fmt::print("  {}. case {} {} under {}: {}\n     {}{}\n", i + 1, f.case_id, f.result.kind, f.result.config,
               f.result.detail.substr(0, 160), f.file, f.reduced_file.empty() ? "" : " (reduced: " + f.reduced_file + ")");
  }
  std::error_code ec;
  fs::remove_all(work_dir_, ec);
  return findings_.empty() ? 0 : 1;
}

int Driver::replay() {
  Program p = parse_program(read_file(o_.replay));
  char tmpl[] = "/tmp/sinter-fuzz-XXXXXX";
  SINTER_CHECK(mkdtemp(tmpl) != nullptr, "fuzz: mkdtemp failed");
  if (!std::getenv("SINTER_CACHE_DIR")) setenv("SINTER_CACHE_DIR", (std::string(tmpl) + "/cache").c_str(), 1);
  std::vector<Config> configs;
  for (const Config& c : all_configs()) {
    if (o_.backends.empty() || std::find(o_.backends.begin(), o_.backends.end(), c.backend) != o_.backends.end()) {
      configs.push_back(c);
      configs.back().device = o_.device;
    }
  }
  fmt::print("{}", to_text(p));
  CaseResult r = run_case_isolated(p, configs, o_.timeout_s);
  fmt::print("[fuzz] replay {}: {}{}{}\n", o_.replay, r.kind, r.config.empty() ? "" : " under " + r.config,
             r.detail.empty() ? "" : ": " + r.detail);
  if (is_finding(r.kind) && o_.reduce) {
    Program small = reduce(p, r, o_.reduce_seconds, o_.timeout_s, o_.verbose);
    fmt::print("[fuzz] reduced:\n{}\n", to_text(small));
    std::string backend = r.config.substr(0, r.config.find('/'));
    fmt::print("{}\n", to_cpp(small, backend.empty() || backend == "eager-reference" ? "aot_eager" : backend,
                              r.config.find("always") != std::string::npos));
  }
  std::error_code ec;
  fs::remove_all(tmpl, ec);
  return is_finding(r.kind) ? 1 : 0;
}

}  // namespace

std::vector<std::string> fuzz_features() { return all_features(); }

int fuzz_command(const FuzzOptions& o) {
  if (o.print) {
    GenOptions g;
    g.disabled = o.disabled, g.max_steps = o.max_steps;
    Program p = generate(o.seed, o.first_case, g);
    fmt::print("{}", to_text(p));
    if (o.print_cpp) fmt::print("\n{}", to_cpp(p, "inductor", true));
    return 0;
  }
  // A host compiler that hangs on a kernel is killed well inside a case's time limit, so the case goes on (the
  // build is retried at -O1, then falls back to aot_eager) and tells what hung instead of timing out.
  if (!std::getenv("SINTER_COMPILE_TIMEOUT"))
    ::setenv("SINTER_COMPILE_TIMEOUT", std::to_string(std::max(1.0, o.timeout_s / 3)).c_str(), 1);
  Driver d(o);
  return o.replay.empty() ? d.run() : d.replay();
}

}  // namespace sinter::tools
