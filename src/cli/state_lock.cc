#include "cli/state_lock.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace paddock::cli {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kLockFile = "paddock.lock";

std::string AbsoluteDir(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(dir), ec);
  if (ec) p = fs::absolute(dir).lexically_normal();
  std::string s = p.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

std::string Serialize(const LockHolder& h) {
  return fmt::format("pid={}\nrole={}\nendpoint={}\nstate_dir={}\n", h.pid, h.role, h.endpoint, h.state_dir);
}

LockHolder Deserialize(const std::string& text) {
  LockHolder h;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "pid") h.pid = static_cast<pid_t>(std::atol(value.c_str()));
    else if (key == "role") h.role = value;
    else if (key == "endpoint") h.endpoint = value;
    else if (key == "state_dir") h.state_dir = value;
  }
  return h;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  off_t at = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof(buf), at);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    at += n;
    if (out.size() > 64 * 1024) break;  // a lock file is a few lines
  }
  return out;
}

struct flock WholeFile(short type) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 0;
  return fl;
}

// Writes `text` to `path` through a temporary file and a rename, so a reader never sees half.
Status WriteFileAtomically(const std::string& path, const std::string& text, mode_t mode) {
  const std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return Unavailable(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Unavailable(fmt::format("cannot write {}: {}", path, why));
  }
  return OkStatus();
}

// The records directory may be trusted: it and its parent are this user's and no one else may
// write to them (in the /tmp fallback, another user could otherwise plant records naming their own
// state directory, where `paddock image import` would then write).
bool TrustedDir(const std::string& dir) {
  for (const fs::path& p : {fs::path(dir), fs::path(dir).parent_path()}) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0)
      return false;
  }
  return true;
}

}  // namespace

std::string DescribeHolder(const LockHolder& h) {
  std::string who = h.role.empty() ? std::string("another paddock process") : fmt::format("paddock {}", h.role);
  std::string what = h.pid > 0 ? fmt::format("pid {}", h.pid) : std::string("pid unknown");
  if (!h.endpoint.empty()) what += ", " + h.endpoint;
  return fmt::format("{} ({})", who, what);
}

StatusOr<std::unique_ptr<StateDirLock>> StateDirLock::Acquire(const std::string& state_dir, std::string role) {
  const std::string dir = AbsoluteDir(state_dir);
  const std::string path = (fs::path(dir) / kLockFile).string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Unavailable(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  struct flock fl = WholeFile(F_WRLCK);
  if (::fcntl(fd, F_OFD_SETLK, &fl) != 0) {
    const int err = errno;
    if (err != EAGAIN && err != EACCES) {
      ::close(fd);
      return Unavailable(fmt::format("cannot lock {}: {}", path, std::strerror(err)));
    }
    LockHolder other = Deserialize(ReadAll(fd));
    ::close(fd);
    std::string next;
    if (other.role == "down") next = "wait for it to finish";
    else if (other.role == "agent") next = "stop it first, or give this one another --state-dir";
    else
      next = fmt::format("stop it first (Ctrl-C in its terminal{}), or give this one another --state-dir",
                         other.pid > 0 ? fmt::format(", or kill {}", other.pid) : std::string());
    return FailedPrecondition(
        fmt::format("state directory {} is in use by {}: {}", dir, DescribeHolder(other), next));
  }
  LockHolder me;
  me.pid = ::getpid();
  me.role = std::move(role);
  me.state_dir = dir;
  std::unique_ptr<StateDirLock> lock(new StateDirLock(fd, std::move(me)));
  RETURN_IF_ERROR(lock->Write());
  return lock;
}

StateDirLock::~StateDirLock() {
  if (!record_.empty()) ::unlink(record_.c_str());
  // Emptied so that the file names no one; closing releases the OFD lock whatever this returns
  // (readers check the lock, not the text).
  const int emptied = ::ftruncate(fd_, 0);
  (void)emptied;
  ::close(fd_);  // releases the OFD lock
}

Status StateDirLock::Write() {
  const std::string text = Serialize(holder_);
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
    return Unavailable(fmt::format("cannot write the lock file of {}: {}", holder_.state_dir, std::strerror(errno)));
  return OkStatus();
}

Status StateDirLock::Publish(const std::string& endpoint) {
  holder_.endpoint = endpoint;
  RETURN_IF_ERROR(Write());
  // The record is a convenience (image and logs from any directory): failing to write it is said,
  // never fatal.
  const std::string dir = RunningServersDir();
  const mode_t old_mask = ::umask(022);
  std::error_code ec;
  fs::create_directories(dir, ec);
  ::umask(old_mask);
  if (ec || !TrustedDir(dir))
    return Unavailable(fmt::format("cannot record the running server in {} (it must be this user's, writable by "
                                   "no one else)",
                                   dir));
  const std::string path = fmt::format("{}/{}", dir, holder_.pid);
  RETURN_IF_ERROR(WriteFileAtomically(path, Serialize(holder_), 0644));
  record_ = path;
  return OkStatus();
}

StatusOr<std::optional<LockHolder>> FindLockHolder(const std::string& state_dir) {
  const std::string path = (fs::path(AbsoluteDir(state_dir)) / kLockFile).string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<LockHolder>();
    return Unavailable(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  }
  struct flock fl = WholeFile(F_WRLCK);
  if (::fcntl(fd, F_OFD_GETLK, &fl) != 0) {
    const int err = errno;
    ::close(fd);
    return Unavailable(fmt::format("cannot query the lock {}: {}", path, std::strerror(err)));
  }
  if (fl.l_type == F_UNLCK) {
    ::close(fd);
    return std::optional<LockHolder>();
  }
  LockHolder h = Deserialize(ReadAll(fd));
  ::close(fd);
  if (h.state_dir.empty()) h.state_dir = AbsoluteDir(state_dir);
  return std::optional<LockHolder>(std::move(h));
}

std::string RunningServersDir() {
  if (const char* dir = std::getenv("PADDOCK_RUN_DIR"); dir != nullptr && *dir != '\0') return std::string(dir) + "/servers";
  if (::geteuid() == 0) return "/run/paddock/servers";
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && *xdg == '/') return std::string(xdg) + "/paddock/servers";
  return fmt::format("/tmp/paddock-{}/servers", ::geteuid());
}

std::vector<LockHolder> RunningServers() {
  std::vector<LockHolder> out;
  const std::string dir = RunningServersDir();
  if (!TrustedDir(dir)) return out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    std::ifstream in(entry.path());
    LockHolder record = Deserialize(std::string((std::istreambuf_iterator<char>(in)), {}));
    auto holder = record.state_dir.empty() ? StatusOr<std::optional<LockHolder>>(std::optional<LockHolder>())
                                           : FindLockHolder(record.state_dir);
    if (holder.ok() && *holder && (*holder)->pid == record.pid && std::to_string(record.pid) == name) {
      out.push_back(**holder);
    } else if (holder.ok()) {
      fs::remove(entry.path(), ec);  // stale: its server is gone (killed before it could remove it)
    }
  }
  std::sort(out.begin(), out.end(), [](const LockHolder& a, const LockHolder& b) { return a.pid < b.pid; });
  return out;
}

StatusOr<std::string> DefaultStateDir(std::string* note) {
  const std::string here = "./.paddock";
  std::vector<LockHolder> servers = RunningServers();
  std::erase_if(servers, [](const LockHolder& h) { return h.role != "up" && h.role != "server"; });
  if (servers.empty()) return here;
  const std::string here_abs = AbsoluteDir(here);
  for (const auto& s : servers)
    if (s.state_dir == here_abs) return here;
  if (servers.size() == 1) {
    if (note) *note = fmt::format("using the state directory of {}: {}", DescribeHolder(servers[0]), servers[0].state_dir);
    return servers[0].state_dir;
  }
  std::string list;
  for (const auto& s : servers) list += fmt::format("\n  {}  state directory {}", DescribeHolder(s), s.state_dir);
  return FailedPrecondition(
      fmt::format("several Paddock servers are running and none uses ./.paddock; pass --state-dir with one of:{}", list));
}

}  // namespace paddock::cli
