// An advisory lock on a file (flock), shared or exclusive, held until the object goes away.
// flock locks belong to the open file description, so two FileLocks exclude each other whether
// they are in two processes or two threads of one.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"

namespace paddock::agent::images::internal {

class FileLock {
 public:
  enum class Mode { kShared, kExclusive };

  // Blocks until the lock is held. Creates `path` if needed.
  static StatusOr<FileLock> Acquire(const std::string& path, Mode mode);
  // Like Acquire, but nullopt at once when another holder would make it wait.
  static StatusOr<std::optional<FileLock>> TryAcquire(const std::string& path, Mode mode);

  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace paddock::agent::images::internal
