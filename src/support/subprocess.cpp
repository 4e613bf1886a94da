#include "support/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "support/check.h"

extern char** environ;

namespace sinter::support {
namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const std::string& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

// RAII for the file actions so every exit path destroys them.
struct FileActions {
  posix_spawn_file_actions_t actions;
  FileActions() { posix_spawn_file_actions_init(&actions); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions); }
};

// `search_path`: argv[0] without a '/' is looked up on PATH (posix_spawnp).
pid_t spawn_with(const std::vector<std::string>& argv, FileActions& fa, bool search_path = false) {
  SINTER_INTERNAL_ASSERT(!argv.empty());
  std::vector<char*> args = c_argv(argv);
  pid_t pid = 0;
  int rc = search_path ? posix_spawnp(&pid, args[0], &fa.actions, nullptr, args.data(), environ)
                       : posix_spawn(&pid, args[0], &fa.actions, nullptr, args.data(), environ);
  SINTER_CHECK(rc == 0, "sinter: cannot start {}: {}", argv[0], std::strerror(rc));
  return pid;
}

}  // namespace

pid_t spawn_process(const std::vector<std::string>& argv, const std::string& output_path) {
  FileActions fa;
  posix_spawn_file_actions_addopen(&fa.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa.actions, 2, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa.actions, 2, 1);
  return spawn_with(argv, fa);
}

int wait_process(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

bool try_wait_process(pid_t pid, int* status) {
  while (true) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r == 0) return false;
    if (errno != EINTR) {
      *status = -1;
      return true;
    }
  }
}

bool exited_ok(int status) { return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::string describe_wait_status(int status) {
  if (status < 0) return "lost (waitpid failed)";
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  return fmt::format("wait status {}", status);
}

ProcessOutput run_and_capture(const std::vector<std::string>& argv) {
  int fds[2];
  SINTER_CHECK(pipe2(fds, O_CLOEXEC) == 0, "sinter: pipe failed: {}", std::strerror(errno));
  pid_t pid = -1;
  try {
    FileActions fa;
    posix_spawn_file_actions_addopen(&fa.actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa.actions, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa.actions, fds[1], 2);
    pid = spawn_with(argv, fa);
  } catch (...) {
    close(fds[0]), close(fds[1]);
    throw;
  }
  close(fds[1]);
  ProcessOutput out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) out.output.append(buf, size_t(n));
    else if (n == 0 || errno != EINTR) break;
  }
  close(fds[0]);
  out.status = wait_process(pid);
  return out;
}

PipedProcess spawn_piped(const std::vector<std::string>& argv) {
  int in[2], out[2];
  SINTER_CHECK(pipe2(in, O_CLOEXEC) == 0, "sinter: pipe failed: {}", std::strerror(errno));
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]), close(in[1]);
    SINTER_CHECK(false, "sinter: pipe failed: {}", std::strerror(errno));
  }
  PipedProcess p;
  try {
    FileActions fa;
    posix_spawn_file_actions_adddup2(&fa.actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa.actions, out[1], 1);
    p.pid = spawn_with(argv, fa, /*search_path=*/true);
  } catch (...) {
    for (int fd : {in[0], in[1], out[0], out[1]}) close(fd);
    throw;
  }
  close(in[0]);
  close(out[1]);
  p.to = in[1];
  p.from = out[0];
  return p;
}

}  // namespace sinter::support
