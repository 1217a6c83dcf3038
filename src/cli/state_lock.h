// cli/state_lock: one process at a time runs a state directory (a server or an agent), and the
// other commands can find it.
//
// The lock. `paddock server`, `paddock up`, `paddock agent` and `paddock down` take
// <state-dir>/paddock.lock, an open-file-description lock (fcntl F_OFD_SETLK) that the kernel
// releases when the process exits however it exits (kill -9 included), and write their pid and
// role into it. A second one on the same directory is refused with the holder's pid and role.
// `paddock admin`, `paddock image` and `paddock logs` never take it: they work beside a server
// (SQLite WAL, multi-process). The descriptor is close-on-exec, and helpers (crun, skopeo) are
// spawned with every descriptor above 2 closed, so no container inherits the lock.
//
//   ASSIGN_OR_RETURN(auto lock, StateDirLock::Acquire(".paddock", "up"));
//   ... start serving ...
//   RETURN_IF_ERROR(lock->Publish("http://127.0.0.1:4566"));   // for `paddock down` and doctor
//
// The record of running servers. Publish also writes a record naming the state directory in the
// host's runtime directory (RunningServersDir: /run/paddock/servers as root, else
// $XDG_RUNTIME_DIR/paddock/servers, else /tmp/paddock-<uid>/servers; $PADDOCK_RUN_DIR overrides
// it), removed when the lock is released. `paddock image` and `paddock logs` use it to find the
// running server's state directory from any working directory (DefaultStateDir). A record whose
// directory's lock is no longer held by its pid is stale (the server was killed) and is ignored.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace paddock::cli {

// Who holds a state directory, as its lock file says.
struct LockHolder {
  pid_t pid = 0;
  std::string role;       // "up", "server", "agent", "down"
  std::string endpoint;   // the API's URL once it serves (up, server); else empty
  std::string state_dir;  // absolute
};

// "paddock up (pid 1234, http://127.0.0.1:4566)"
std::string DescribeHolder(const LockHolder& holder);

class StateDirLock {
 public:
  // Takes the lock of `state_dir` (which must exist) for this process in `role`. FailedPrecondition
  // when another process holds it, naming it and what to do.
  static StatusOr<std::unique_ptr<StateDirLock>> Acquire(const std::string& state_dir, std::string role);
  // Releases the lock and removes the running-server record (the lock file stays, unlocked).
  ~StateDirLock();
  StateDirLock(const StateDirLock&) = delete;
  StateDirLock& operator=(const StateDirLock&) = delete;

  // Records the endpoint in the lock file and publishes the running-server record.
  Status Publish(const std::string& endpoint);
  const LockHolder& holder() const { return holder_; }

 private:
  StateDirLock(int fd, LockHolder holder) : fd_(fd), holder_(std::move(holder)) {}
  Status Write();

  int fd_;
  LockHolder holder_;
  std::string record_;  // the running-server record's path, once published
};

// The process holding `state_dir`'s lock now, or nullopt when none does. Never takes the lock.
StatusOr<std::optional<LockHolder>> FindLockHolder(const std::string& state_dir);

// Where running servers are recorded (see above).
std::string RunningServersDir();

// The servers running now (records whose lock is held by their pid), oldest pid first. Stale
// records are removed as they are found.
std::vector<LockHolder> RunningServers();

// The state directory `paddock image` and `paddock logs` use when not told: the running server's,
// from any working directory; among several, the one at ./.paddock, else an error naming them;
// with none, ./.paddock. `*note` says which was chosen when it is not ./.paddock.
StatusOr<std::string> DefaultStateDir(std::string* note);

}  // namespace paddock::cli
