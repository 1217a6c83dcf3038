#include "agent/net/internal/command.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include <fmt/format.h>

extern char** environ;

namespace paddock::agent::net::internal {
namespace {

// Output beyond this is dropped: `ip` says a line or two, and an error message must stay short.
constexpr size_t kMaxOutput = 64 * 1024;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string ErrnoText(int err) { return std::strerror(err); }

StatusOr<int> MakeMemFile(const char* name) {
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return Internal(fmt::format("memfd_create: {}", ErrnoText(errno)));
  return fd;
}

Status WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Internal(fmt::format("write: {}", ErrnoText(errno)));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  if (lseek(fd, 0, SEEK_SET) < 0) return Internal(fmt::format("lseek: {}", ErrnoText(errno)));
  return OkStatus();
}

std::string ReadBack(int fd) {
  std::string text;
  if (lseek(fd, 0, SEEK_SET) < 0) return text;
  char buf[4096];
  while (text.size() < kMaxOutput) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  if (text.size() > kMaxOutput) text.resize(kMaxOutput);
  return text;
}

// Waits for `pid` up to `timeout`; kills it when the time is up. Returns the wait status.
StatusOr<int> WaitFor(pid_t pid, std::chrono::milliseconds timeout) {
  bool timed_out = false;
  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  if (pidfd.get() >= 0) {
    pollfd p{.fd = pidfd.get(), .events = POLLIN, .revents = 0};
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        break;
      }
      int r = poll(&p, 1, static_cast<int>(left.count()));
      if (r > 0) break;
      if (r < 0 && errno != EINTR) break;  // fall back to a plain blocking wait
    }
    if (timed_out) kill(pid, SIGKILL);
  }
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0) {
    if (errno != EINTR) return Internal(fmt::format("waitpid({}): {}", pid, ErrnoText(errno)));
  }
  if (timed_out) return Unavailable(fmt::format("did not finish within {} ms and was killed", timeout.count()));
  return wstatus;
}

}  // namespace

StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv, std::string_view input,
                                   std::chrono::milliseconds timeout) {
  if (argv.empty()) return InvalidArgument("RunCommand: empty argv");
  ASSIGN_OR_RETURN(int in_fd, MakeMemFile("pdk-stdin"));
  Fd in(in_fd);
  ASSIGN_OR_RETURN(int out_fd, MakeMemFile("pdk-stdout"));
  Fd out(out_fd);
  ASSIGN_OR_RETURN(int err_fd, MakeMemFile("pdk-stderr"));
  Fd err(err_fd);
  RETURN_IF_ERROR(WriteAll(in.get(), input));

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.get(), STDERR_FILENO);
  // The agent's own descriptors (sockets, the store) are none of the child's business.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);

  // The child must not inherit a blocked signal mask or ignored signals from the agent's threads.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Unavailable(fmt::format("cannot run {}: {}", argv[0], ErrnoText(rc)));

  StatusOr<int> wstatus = WaitFor(pid, timeout);
  if (!wstatus.ok()) return Status(wstatus.status().code(), fmt::format("{}: {}", argv[0], wstatus.status().message()));

  CommandResult result;
  if (WIFEXITED(*wstatus)) {
    result.exit_code = WEXITSTATUS(*wstatus);
  } else if (WIFSIGNALED(*wstatus)) {
    result.exit_code = 128 + WTERMSIG(*wstatus);
  } else {
    result.exit_code = -1;
  }
  result.out = ReadBack(out.get());
  result.err = ReadBack(err.get());
  return result;
}

const std::string& IpBinary() {
  static const std::string path = [] {
    for (const char* candidate : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
      if (access(candidate, X_OK) == 0) return std::string(candidate);
    }
    return std::string("ip");
  }();
  return path;
}

}  // namespace paddock::agent::net::internal
