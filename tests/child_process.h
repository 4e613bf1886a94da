// Second processes for tests: this test binary re-run (posix_spawn of /proc/self/exe) with one test selected and
// some environment variables set. A fork() would inherit a thread pool whose worker threads do not exist in the
// child.
#pragma once
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace sinter::testing {

// Starts this binary with --gtest_filter=`test`, the parent's environment without gtest sharding (a sharded
// parent's child would run only its shard of the one-test filter, often nothing) and with `set` added (each
// replacing the parent's value). Returns the child's pid, or -1.
inline pid_t spawn_self(const std::string& test, const std::vector<std::pair<std::string, std::string>>& set) {
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=" + test;
  auto dropped = [&](const std::string& e) {
    for (const char* name : {"GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS"})
      if (e.rfind(std::string(name) + "=", 0) == 0) return true;
    for (const auto& [name, value] : set)
      if (e.rfind(name + "=", 0) == 0) return true;
    return false;
  };
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (!dropped(*e)) env_strings.push_back(*e);
  for (const auto& [name, value] : set) env_strings.push_back(name + "=" + value);
  std::string brief = "--gtest_brief=1";
  std::vector<char*> argv = {exe.data(), filter.data(), brief.data(), nullptr};
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), envp.data());
  return rc == 0 ? pid : -1;
}

// The child's exit status (128 + signal when it was killed), or -1.
inline int wait_child(pid_t pid) {
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace sinter::testing
