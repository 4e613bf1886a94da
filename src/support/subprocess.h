// Running a program without a shell: posix_spawn with an argv array, so no argument is ever interpreted by
// /bin/sh (the kernel cache runs the C++ compiler this way). Output goes to a file or is captured through a pipe.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace sinter::support {

// Starts argv[0] (an absolute path) with stdin from /dev/null and stdout+stderr written to `output_path`
// (created mode 0600). Throws sinter::Error when the program cannot be started.
pid_t spawn_process(const std::vector<std::string>& argv, const std::string& output_path);

// Waits for `pid`; returns the wait status (as waitpid reports it).
int wait_process(pid_t pid);

// Non-blocking wait: true when `pid` has ended, with its wait status in *status.
bool try_wait_process(pid_t pid, int* status);

// "exit status 1", "killed by signal 9".
std::string describe_wait_status(int status);
bool exited_ok(int status);

struct ProcessOutput {
  int status = 0;      // wait status
  std::string output;  // stdout and stderr together
};
// Runs argv and captures its output through a pipe (for short outputs such as `g++ --version`).
ProcessOutput run_and_capture(const std::vector<std::string>& argv);

// Starts argv[0] (looked up on PATH when it has no '/') with its stdin and stdout on pipes this process holds:
// `to` writes the child's stdin, `from` reads its stdout; its stderr is this process's. The caller closes both
// and waits for `pid`. Throws sinter::Error when the program cannot be started.
struct PipedProcess {
  pid_t pid = -1;
  int to = -1, from = -1;
};
PipedProcess spawn_piped(const std::vector<std::string>& argv);

}  // namespace sinter::support
