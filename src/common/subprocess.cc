#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

extern char** environ;

namespace paddock::subprocess {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    Reset();
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

void UniqueFd::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

UniqueFd OpenPidfd(pid_t pid) {
  return UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
}

int ExitStatusFromSiginfo(int code, int status) {
  if (code == CLD_EXITED) return status;
  return 128 + status;  // CLD_KILLED, CLD_DUMPED
}

StatusOr<std::optional<int>> TryReap(pid_t pid) {
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  for (;;) {
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG) == 0) break;
    if (errno == EINTR) continue;
    if (errno == ECHILD) return NotFound(fmt::format("pid {} is not a child of this process", pid));
    return Internal(fmt::format("waitid({}): {}", pid, std::strerror(errno)));
  }
  if (info.si_pid == 0) return std::optional<int>();
  return std::optional<int>(ExitStatusFromSiginfo(info.si_code, info.si_status));
}

bool WaitPidfdReadable(int pidfd, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{pidfd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

StatusOr<Child> Spawn(const std::vector<std::string>& argv, const Stdio& stdio) {
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  UniqueFd devnull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!devnull.valid()) return Internal(fmt::format("open /dev/null: {}", std::strerror(errno)));

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, stdio.in >= 0 ? stdio.in : devnull.get(), 0);
  posix_spawn_file_actions_adddup2(&fa, stdio.out >= 0 ? stdio.out : devnull.get(), 1);
  posix_spawn_file_actions_adddup2(&fa, stdio.err >= 0 ? stdio.err : devnull.get(), 2);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, cargv[0], &fa, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Internal(fmt::format("starting {}: {}", argv[0], std::strerror(rc)));

  Child child;
  child.pid = pid;
  // Our own unreaped child cannot be recycled, so opening the pidfd after the fact is race-free.
  child.pidfd = OpenPidfd(pid);
  return child;
}

StatusOr<std::optional<int>> WaitChild(Child& child, std::chrono::milliseconds timeout) {
  if (child.pidfd.valid() && !WaitPidfdReadable(child.pidfd.get(), timeout)) {
    return std::optional<int>();
  }
  // Exited (or no pidfd: then this polls until the deadline).
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    ASSIGN_OR_RETURN(std::optional<int> status, TryReap(child.pid));
    if (status) {
      child.pid = -1;
      child.pidfd.Reset();
      return status;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::optional<int>();
    ::usleep(1000);
  }
}

void KillAndReap(Child& child) {
  if (child.pid <= 0) return;
  ::kill(child.pid, SIGKILL);
  siginfo_t info;
  while (::waitid(P_PID, static_cast<id_t>(child.pid), &info, WEXITED) != 0 && errno == EINTR) {
  }
  child.pid = -1;
  child.pidfd.Reset();
}

StatusOr<UniqueFd> MakeMemfd(const char* name) {
  UniqueFd fd(::memfd_create(name, MFD_CLOEXEC));
  if (!fd.valid()) return Internal(fmt::format("memfd_create: {}", std::strerror(errno)));
  return fd;
}

std::string ReadMemfd(int fd, size_t max) {
  std::string out(max, '\0');
  size_t got = 0;
  while (got < max) {
    ssize_t n = ::pread(fd, out.data() + got, max - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

StatusOr<RunResult> RunCaptured(const std::vector<std::string>& argv,
                                std::chrono::milliseconds timeout, size_t max_output) {
  ASSIGN_OR_RETURN(UniqueFd out, MakeMemfd("paddock-out"));
  ASSIGN_OR_RETURN(UniqueFd err, MakeMemfd("paddock-err"));
  ASSIGN_OR_RETURN(Child child, Spawn(argv, Stdio{-1, out.get(), err.get()}));
  auto status = WaitChild(child, timeout);
  if (!status.ok()) {
    KillAndReap(child);
    return status.status();
  }
  if (!*status) {
    KillAndReap(child);
    std::string command;
    for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
    return Unavailable(fmt::format("'{}' did not finish within {} ms", command, timeout.count()));
  }
  RunResult r;
  r.exit_code = **status;
  r.output = ReadMemfd(out.get(), max_output) + ReadMemfd(err.get(), max_output);
  return r;
}

}  // namespace paddock::subprocess
