#include "cli/fence_watch.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cli/host_checks.h"
#include "cli/state_lock.h"

namespace paddock::cli {
namespace {

namespace fs = std::filesystem;

constexpr char kCleanStop = 'c';
constexpr std::chrono::milliseconds kLockCheck{250};
constexpr std::chrono::seconds kCrunTimeout{10};

// This binary, as the kernel knows it (the server may have been started by a relative path).
std::string SelfBinary() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("paddock") : self.string();
}

// Kills every container of `state_dir`'s runtime (agent/runtime: <state-dir>/containers/crun);
// returns how many it killed.
size_t KillContainers(const std::string& state_dir) {
  const std::string crun = CrunBinary();
  const std::string root = (fs::path(state_dir) / "containers" / "crun").string();
  StatusOr<subprocess::RunResult> listed = subprocess::RunCaptured({crun, "--root", root, "list", "-q"}, kCrunTimeout);
  if (!listed.ok() || listed->exit_code != 0) {
    fmt::print(stderr, "paddock fence-watch: listing the containers of {}: {}\n", state_dir,
               listed.ok() ? listed->output : listed.status().ToString());
    return 0;
  }
  std::istringstream names(listed->output);
  size_t killed = 0;
  for (std::string name; names >> name;) {
    StatusOr<subprocess::RunResult> r = subprocess::RunCaptured({crun, "--root", root, "kill", name, "KILL"}, kCrunTimeout);
    if (r.ok() && r->exit_code == 0) ++killed;  // one already stopped fails: nothing to kill
  }
  return killed;
}

}  // namespace

StatusOr<FenceWatch> FenceWatch::Start(const std::string& state_dir, std::chrono::milliseconds after) {
  // A socket pair rather than a pipe: the clean-stop byte is sent with MSG_NOSIGNAL, so a watchdog
  // that died first costs the server no SIGPIPE.
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return Internal(fmt::format("fence watch: socketpair: {}", std::strerror(errno)));
  subprocess::UniqueFd read_end(fds[0]);
  FenceWatch watch;
  watch.pipe_ = subprocess::UniqueFd(fds[1]);
  const std::string dir = fs::absolute(state_dir).string();
  ASSIGN_OR_RETURN(watch.child_, subprocess::Spawn({SelfBinary(), "fence-watch", "--state-dir", dir, "--after-ms",
                                                    std::to_string(after.count())},
                                                   subprocess::Stdio{.in = read_end.get(), .out = -1, .err = 2}));
  return watch;
}

FenceWatch::~FenceWatch() {
  // Destroyed without StopCleanly (a failed start): the watchdog would fence a server that never
  // ran; it is told the stop is clean.
  if (pipe_.valid()) StopCleanly();
}

void FenceWatch::StopCleanly() {
  if (!pipe_.valid()) return;
  const char c = kCleanStop;
  while (::send(pipe_.get(), &c, 1, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
  pipe_.Reset();
  if (child_.pid <= 0) return;
  // It exits at once on the byte; one that does not within the bound is killed, never left.
  StatusOr<std::optional<int>> exited = subprocess::WaitChild(child_, std::chrono::seconds(5));
  if (!exited.ok() || !exited->has_value()) subprocess::KillAndReap(child_);
}

void FenceWatch::Abandon() {
  pipe_.Reset();
  child_ = subprocess::Child();  // not reaped: it outlives this process, and init takes it
}

int RunFenceWatch(const std::string& state_dir, std::chrono::milliseconds after) {
  ::setsid();  // out of its process group: a signal to the group is the server's or the agent's
  char c = 0;
  ssize_t n;
  do {
    n = ::read(STDIN_FILENO, &c, 1);
  } while (n < 0 && errno == EINTR);
  if (n == 1) return 0;  // a clean stop: the server is not lost
  // The server is gone. A server started again on the directory re-adopts its tasks.
  const auto deadline = std::chrono::steady_clock::now() + after;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kLockCheck);  // nothing to wait on: another process's lock
    StatusOr<std::optional<LockHolder>> holder = FindLockHolder(state_dir);
    if (holder.ok() && holder->has_value()) return 0;
    std::error_code ec;
    if (!fs::exists(state_dir, ec) && !ec) return 0;  // the directory is gone, and its runtime with it
  }
  const size_t killed = KillContainers(state_dir);
  fmt::print(stderr,
             "paddock fence-watch: the process of {} is gone and none took the directory over in {} ms: "
             "killed its {} running container(s) before its host can be found lost\n",
             state_dir, after.count(), killed);
  return 0;
}

}  // namespace paddock::cli
