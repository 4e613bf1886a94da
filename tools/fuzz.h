// `sinter fuzz`: the differential fuzzer's driver pieces shared by tools/fuzz*.cpp (programs: fuzz_program.h).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "fuzz_program.h"

namespace sinter::tools::fuzz {

struct Config {
  std::string backend;
  bool dynamic_always = false;
  Device device = kCPU;     // where the compiled side runs; the eager reference always runs on the CPU
  std::string str() const;  // "inductor/always", "inductor/always@cuda:0"
};

// What one case gave. kind: "ok", "invalid" (eager rejects the program: not a finding), "mismatch",
// "meta-mismatch" (dtype or sizes), "stride-mismatch", "compile-error" (sinter::Error where eager works), "internal-error",
// "eager-internal-error", "crash" (a signal), "timeout".
struct CaseResult {
  std::string kind = "ok";
  std::string config;  // Config::str() of the failing configuration
  int variant = -1;
  std::string detail;
};
bool is_finding(const std::string& kind);

// Runs in the calling process (the driver calls it in a child).
CaseResult run_case(const Program& p, const std::vector<Config>& configs);

// A forked child that runs `body` with the write end of a pipe and exits; the parent reads `fd`.
struct ForkedChild {
  int pid = -1;
  int fd = -1;
};
ForkedChild fork_child(const std::function<void(int fd)>& body);
// Closes the read end, kills the child first when `kill_it`, and waits for it; returns its wait status.
int reap_child(ForkedChild& child, bool kill_it);

// Runs `p` under `configs` in a forked child with a watchdog; a signal or a timeout becomes a result.
CaseResult run_case_isolated(const Program& p, const std::vector<Config>& configs, double timeout_s);

// Delta debugging: smaller programs that still fail with the same kind (and configuration), each tried in a
// child. Stops after `budget_s` seconds.
Program reduce(const Program& p, const CaseResult& failure, double budget_s, double timeout_s, bool verbose);

}  // namespace sinter::tools::fuzz
