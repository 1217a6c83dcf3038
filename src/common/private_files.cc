#include "common/private_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace paddock {

Status MakePrivateDir(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Unavailable(fmt::format("cannot create {}: {}", path, ec.message()));
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Unavailable(fmt::format("cannot stat {}: {}", path, std::strerror(errno)));
  if (!S_ISDIR(st.st_mode)) return Unavailable(fmt::format("{} is not a directory", path));
  if ((st.st_mode & 077) != 0 && ::chmod(path.c_str(), st.st_mode & 0700) != 0)
    return Unavailable(fmt::format("cannot make {} private (chmod 0700): {}", path, std::strerror(errno)));
  return OkStatus();
}

Status TightenPrivateFile(const std::string& path) {
  // O_PATH | O_NOFOLLOW: a symlink planted in place of the file is left alone, not followed.
  const int fd = ::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return OkStatus();
    return Unavailable(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  }
  struct stat st;
  Status s;
  if (::fstat(fd, &st) != 0) {
    s = Unavailable(fmt::format("cannot stat {}: {}", path, std::strerror(errno)));
  } else if (S_ISREG(st.st_mode) && (st.st_mode & 077) != 0) {
    // fchmod does not work on O_PATH descriptors; chmod through /proc/self/fd acts on this inode.
    const std::string via = fmt::format("/proc/self/fd/{}", fd);
    if (::chmod(via.c_str(), st.st_mode & 0700) != 0)
      s = Unavailable(fmt::format("cannot make {} private (chmod 0600): {}", path, std::strerror(errno)));
  }
  ::close(fd);
  return s;
}

}  // namespace paddock
