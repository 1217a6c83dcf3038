#include "agent/images/internal/file_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace paddock::agent::images::internal {

StatusOr<FileLock> FileLock::Acquire(const std::string& path, Mode mode) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Unavailable(fmt::format("cannot open lock file {}: {}", path, std::strerror(errno)));
  int op = mode == Mode::kShared ? LOCK_SH : LOCK_EX;
  while (::flock(fd, op) != 0) {
    if (errno == EINTR) continue;
    int e = errno;
    ::close(fd);
    return Unavailable(fmt::format("cannot lock {}: {}", path, std::strerror(e)));
  }
  return FileLock(fd);
}

StatusOr<std::optional<FileLock>> FileLock::TryAcquire(const std::string& path, Mode mode) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Unavailable(fmt::format("cannot open lock file {}: {}", path, std::strerror(errno)));
  int op = (mode == Mode::kShared ? LOCK_SH : LOCK_EX) | LOCK_NB;
  while (::flock(fd, op) != 0) {
    if (errno == EINTR) continue;
    int e = errno;
    ::close(fd);
    if (e == EWOULDBLOCK) return std::optional<FileLock>();
    return Unavailable(fmt::format("cannot lock {}: {}", path, std::strerror(e)));
  }
  return std::optional<FileLock>(FileLock(fd));
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the lock
}

}  // namespace paddock::agent::images::internal
