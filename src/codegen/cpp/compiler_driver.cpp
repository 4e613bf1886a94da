#include "codegen/cpp/compiler_driver.h"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>

#include "codegen/cpp/toolchain.h"
#include "support/cache_files.h"
#include "support/subprocess.h"
#include "sinter/error.h"
#include "sinter/compile.h"
#include "support/check.h"
#include "support/log.h"
#include "support/warning.h"

namespace sinter::codegen::cpp {
using support::read_file;

namespace {

struct Job {
  std::vector<std::string> argv;
  std::string log;
  std::string source;  // the unit it compiles ("" for the link)
};

std::string first_lines(const std::string& text, int max_lines) {
  size_t pos = 0;
  for (int i = 0; i < max_lines && pos != std::string::npos; ++i) {
    pos = text.find('\n', pos);
    if (pos != std::string::npos) ++pos;
  }
  if (pos == std::string::npos || pos >= text.size()) return text;
  return text.substr(0, pos) + "  [... output cut; the whole log is beside the source]\n";
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

// How long one compiler process may run before it is killed and the build counts as failed: SINTER_COMPILE_TIMEOUT
// seconds (default 120). A unit of generated code compiles in well under a second to a few seconds; g++ 13 was
// seen spinning for minutes on a small kernel (an asinhf of an int64 converted to float, on the H200 host), and a
// hang must not hang the user's call. A bad setting is said once on stderr and the default used.
double compile_timeout_seconds() {
  constexpr double kDefault = 120;
  const char* v = std::getenv("SINTER_COMPILE_TIMEOUT");
  if (!v || !*v) return kDefault;
  char* end = nullptr;
  double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(s > 0) || s > 1e6) {
    warn_once("SINTER_COMPILE_TIMEOUT",
              fmt::format("SINTER_COMPILE_TIMEOUT={} is not a number of seconds (above 0); using {:.0f}", v, kDefault));
    return kDefault;
  }
  return s;
}

[[noreturn]] void fail(const BuildRequest& req, const Job& job, int status, double timed_out_after) {
  std::string output;
  read_file(job.log, output);
  std::string source = job.source.empty() ? req.sources.front() : job.source;
  std::string how = timed_out_after > 0 ? fmt::format("killed after running {:.0f} s, the limit SINTER_COMPILE_TIMEOUT sets",
                                                      timed_out_after)
                                        : support::describe_wait_status(status);
  throw CompilerError(fmt::format(
      "sinter: compiling the generated C++ of {} failed ({} {}).\n  source kept at: {}\n  compiler output: {}\n"
      "  command: {}\n--- compiler output (first 40 lines) ---\n{}",
      req.name, req.toolchain->compiler, how, source, job.log, command_line(job.argv), first_lines(output, 40)));
}

// Runs jobs with at most `width` at once; throws on the first failure after letting the running ones finish. A
// job running past the time limit is killed and is that failure.
void run_jobs(const BuildRequest& req, const std::vector<Job>& jobs, int width) {
  using Clock = std::chrono::steady_clock;
  struct Running {
    size_t job;
    Clock::time_point start;
    bool killed = false;
  };
  const double limit = compile_timeout_seconds();
  std::map<pid_t, Running> running;
  size_t next = 0;
  int failed_status = 0;
  double failed_after = 0;
  const Job* failed = nullptr;
  std::string spawn_error;
  while (next < jobs.size() || !running.empty()) {
    while (next < jobs.size() && int(running.size()) < width && !failed && spawn_error.empty()) {
      try {
        running.emplace(support::spawn_process(jobs[next].argv, jobs[next].log), Running{next, Clock::now()});
      } catch (const Error& e) {
        spawn_error = e.what();
      }
      ++next;
    }
    if (running.empty()) break;
    // Poll our own children only (waitpid(-1) could reap processes the rest of the program started); a compile
    // takes 100 ms or more, so a 2 ms poll costs nothing measurable.
    bool reaped = false;
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      Running& r = it->second;
      const double elapsed = std::chrono::duration<double>(Clock::now() - r.start).count();
      if (!r.killed && elapsed > limit) {
        ::kill(it->first, SIGKILL);
        r.killed = true;
      }
      if (!support::try_wait_process(it->first, &status)) {
        ++it;
        continue;
      }
      if ((!support::exited_ok(status) || r.killed) && !failed) {
        failed = &jobs[r.job], failed_status = status, failed_after = r.killed ? elapsed : 0;
      }
      it = running.erase(it);
      reaped = true;
    }
    if (!reaped) ::usleep(2000);
  }
  if (!spawn_error.empty())
    throw Error(fmt::format("{} (the C++ compiler, chosen by SINTER_CXX; building {})", spawn_error, req.name));
  if (failed) fail(req, *failed, failed_status, failed_after);
}

// The toolchain's flags with the optimisation level lowered to -O1 and without -fopenmp-simd, whose forced
// vectorisation is where compiler crashes live (g++ 12's signbit one happens at -O1 too while the `omp simd`
// pragmas are honoured; ignored, they leave correct scalar loops). Empty when there is nothing to lower.
std::vector<std::string> lowered_flags(const std::vector<std::string>& flags) {
  std::vector<std::string> out;
  bool lowered = false;
  for (const std::string& f : flags) {
    if (f == "-O2" || f == "-O3" || f == "-Ofast") {
      out.push_back("-O1");
      lowered = true;
    } else if (f == "-fopenmp-simd") {
      lowered = true;
    } else {
      out.push_back(f);
    }
  }
  return lowered ? out : std::vector<std::string>{};
}

// `tag` names the logs of this attempt (a retry keeps the first attempt's logs, which its message names).
void build_with_flags(const BuildRequest& req, const std::vector<std::string>& flags, const std::string& tag) {
  std::vector<std::string> base = {req.toolchain->compiler};
  for (const std::string& f : flags) base.push_back(f);
  for (const std::string& f : req.extra_flags) base.push_back(f);
  if (req.sources.size() == 1) {
    // One unit: compile and link in one process.
    Job job{base, req.dir + "/compile" + tag + ".log", req.sources[0]};
    for (const char* a : {"-o", req.output.c_str(), req.sources[0].c_str(), "-lm"}) job.argv.push_back(a);
    run_jobs(req, {job}, 1);
    ::unlink(job.log.c_str());
    return;
  }
  std::vector<Job> compiles;
  std::vector<std::string> objects;
  for (size_t i = 0; i < req.sources.size(); ++i) {
    Job job{{}, fmt::format("{}/unit{}{}.log", req.dir, i, tag), req.sources[i]};
    for (const std::string& a : base)
      if (a != "-shared") job.argv.push_back(a);  // a link flag; clang warns about it under -c
    objects.push_back(fmt::format("{}/unit{}.o", req.dir, i));
    for (const std::string& a : {std::string("-c"), std::string("-o"), objects.back(), req.sources[i]})
      job.argv.push_back(a);
    compiles.push_back(std::move(job));
  }
  run_jobs(req, compiles, parallel_compile_jobs());
  Job link{base, req.dir + "/link" + tag + ".log", ""};
  link.argv.push_back("-o");
  link.argv.push_back(req.output);
  for (const std::string& o : objects) link.argv.push_back(o);
  link.argv.push_back("-lm");
  run_jobs(req, {link}, 1);
  for (const Job& j : compiles) ::unlink(j.log.c_str());
  for (const std::string& o : objects) ::unlink(o.c_str());
  ::unlink(link.log.c_str());
}

}  // namespace

int parallel_compile_jobs() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
}

// Generated code must compile; when the compiler fails on it anyway (g++ has internal compiler errors on some
// vector code), the build is retried once at -O1 without forced vectorisation, which takes other paths. The object
// built at -O1 is cached under the same key: it is what this source compiles to with this compiler.
void build_shared_object(const BuildRequest& req) {
  SINTER_INTERNAL_ASSERT(req.toolchain && !req.sources.empty());
  try {
    build_with_flags(req, req.toolchain->flags, "");
  } catch (const CompilerError& first) {
    std::vector<std::string> retry = lowered_flags(req.toolchain->flags);
    if (retry.empty()) throw;
    SINTER_LOG(kPerfHints, "the C++ compiler failed on {}; retrying at -O1:\n{}", req.name, first.what());
    try {
      build_with_flags(req, retry, "-O1");
    } catch (const CompilerError& second) {
      throw CompilerError(fmt::format("{}\n--- retried at -O1, which failed too ---\n{}", first.what(),
                                      second.what()));
    }
    // The retry built the object: the first attempt's logs go, as a successful build's do.
    ::unlink((req.dir + "/compile.log").c_str());
    ::unlink((req.dir + "/link.log").c_str());
    for (size_t i = 0; i < req.sources.size(); ++i) ::unlink(fmt::format("{}/unit{}.log", req.dir, i).c_str());
  }
}

}  // namespace sinter::codegen::cpp
