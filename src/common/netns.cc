#include "common/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

namespace paddock::netns {

Status InNetworkNamespace(const std::string& path, const std::function<Status()>& fn) {
  Status result;
  // A thread of its own: setns changes only the calling thread, and this one is discarded after,
  // so no thread of the process is ever left in the wrong namespace.
  std::thread worker([&] {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      result = err == ENOENT ? NotFound(fmt::format("no network namespace {}", path))
                             : FailedPrecondition(fmt::format("opening {}: {}", path, std::strerror(err)));
      return;
    }
    int joined = ::setns(fd, CLONE_NEWNET);
    int err = errno;
    ::close(fd);
    if (joined != 0) {
      result = FailedPrecondition(fmt::format("entering network namespace {}: {}", path, std::strerror(err)));
      return;
    }
    result = fn();
  });
  worker.join();
  return result;
}

uint64_t NamespaceId(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_ino);
}

}  // namespace paddock::netns
