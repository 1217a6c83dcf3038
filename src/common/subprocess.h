// Starting helper processes (crun, ip) with chosen stdio and waiting for them with a deadline.
//
//   ASSIGN_OR_RETURN(RunResult r, RunCaptured({"crun", "--root", root, "delete", id}, 10s));
//   if (r.exit_code != 0) return Internal("crun delete: " + r.output);
//
// Children are waited for by their own pid (never P_ALL), through a pidfd, so this coexists with
// other code of the process that waits for its own children. Signal mask and dispositions are
// reset in the child and every descriptor above 2 is closed, so nothing of the agent leaks into
// crun or, through it, into a container.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace paddock::subprocess {

// An owned file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset();

 private:
  int fd_ = -1;
};

// A pidfd for `pid`, or an invalid fd when the process is gone.
UniqueFd OpenPidfd(pid_t pid);

// The exit status as a shell reports it: the exit code, or 128+N when killed by signal N.
int ExitStatusFromSiginfo(int code, int status);

// Reaps `pid` if it is a child of this process that has exited. Returns its exit status, or
// nullopt when it is still running. ECHILD (not our child, or already reaped) is NotFound.
StatusOr<std::optional<int>> TryReap(pid_t pid);

// Whether the process behind `pidfd` has exited, waiting at most `timeout` (0: just look).
bool WaitPidfdReadable(int pidfd, std::chrono::milliseconds timeout);

struct Stdio {
  int in = -1;  // -1: /dev/null
  int out = -1;
  int err = -1;
};

struct Child {
  pid_t pid = -1;
  UniqueFd pidfd;
};

// Starts argv (argv[0] looked up in PATH when it has no '/').
// REQUIRES: !argv.empty()
StatusOr<Child> Spawn(const std::vector<std::string>& argv, const Stdio& stdio);

// Waits for `child` at most `timeout`; returns its exit status, or nullopt on timeout (the child
// is then still running and still to be waited for).
StatusOr<std::optional<int>> WaitChild(Child& child, std::chrono::milliseconds timeout);

// Kills `child` with SIGKILL and reaps it (bounded: SIGKILL cannot be ignored).
void KillAndReap(Child& child);

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout then stderr of the helper, each cut at max_output bytes
};

// Runs argv to completion with stdin from /dev/null. A helper that outlives `timeout` is killed
// and the call fails with Unavailable; a non-zero exit is reported in the result, not failed.
StatusOr<RunResult> RunCaptured(const std::vector<std::string>& argv,
                                std::chrono::milliseconds timeout, size_t max_output = 64 * 1024);

// A memfd for capturing output, and reading up to `max` bytes back from its start.
StatusOr<UniqueFd> MakeMemfd(const char* name);
std::string ReadMemfd(int fd, size_t max);

}  // namespace paddock::subprocess
