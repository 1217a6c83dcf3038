#include "agent/logs.h"

#include <fcntl.h>  // splice (with _GNU_SOURCE, which g++ defines)
#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/private_files.h"

namespace paddock::agent {
namespace fs = std::filesystem;
using subprocess::UniqueFd;

namespace {

// One read's size (when splice cannot be used): a quarter of the default pipe buffer.
constexpr size_t kReadBytes = 256 * 1024;
// One splice's most: a whole default pipe buffer.
constexpr uint64_t kSpliceBytes = 1 << 20;
// Reads per FIFO per wake-up before the others get their turn (the pump is level-triggered: what
// is left wakes it again).
constexpr size_t kReadsPerTurn = 16;

void Warn(std::string_view what, const std::string& path) {
  fmt::print(stderr, "paddock: agent: logs: {} {}: {}\n", what, path, std::strerror(errno));
}

// Not O_APPEND (splice refuses such files): the pump, the only writer, writes at the file's size.
UniqueFd OpenLog(const std::string& path) {
  return UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
}

}  // namespace

LogPump::LogPump(Options options) : options_(options), buffer_(kReadBytes) {}

LogPump::~LogPump() { Stop(); }

Status LogPump::Start() {
  epoll_fd_ = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_fd_.valid()) return Internal(fmt::format("epoll_create1: {}", std::strerror(errno)));
  wake_fd_ = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_fd_.valid()) return Internal(fmt::format("eventfd: {}", std::strerror(errno)));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;  // the wake-up; sources have ids from 1
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, wake_fd_.get(), &ev) != 0)
    return Internal(fmt::format("epoll_ctl: {}", std::strerror(errno)));
  thread_ = std::thread([this] { Loop(); });
  return OkStatus();
}

void LogPump::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (wake_fd_.valid()) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  sources_.clear();  // closes the FIFOs and logs; the FIFOs stay for the next agent
  ids_.clear();
}

Status LogPump::Attach(const fs::path& fifo, const fs::path& log, std::shared_ptr<LogSink> sink) {
  std::lock_guard lock(mu_);
  if (stopping_ || !epoll_fd_.valid()) return FailedPrecondition("the log pump is not running");
  if (ids_.count(fifo.string())) return OkStatus();
  if (::mkfifo(fifo.c_str(), 0600) != 0 && errno != EEXIST)
    return Internal(fmt::format("mkfifo {}: {}", fifo.string(), std::strerror(errno)));
  struct stat st;
  if (::lstat(fifo.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode))
    return FailedPrecondition(fmt::format("{} is not a FIFO", fifo.string()));
  Source source;
  source.fifo = fifo.string();
  source.log = log.string();
  // Read-write: the pump is a writer too, so the FIFO never reads as end-of-file while containers
  // come and go, and opening it never blocks.
  source.fifo_fd = UniqueFd(::open(source.fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (!source.fifo_fd.valid()) return Internal(fmt::format("open {}: {}", source.fifo, std::strerror(errno)));
  // Best effort: a smaller buffer only means more wake-ups.
  ::fcntl(source.fifo_fd.get(), F_SETPIPE_SZ, static_cast<int>(options_.pipe_bytes));
  source.log_fd = OpenLog(source.log);
  if (!source.log_fd.valid()) return Internal(fmt::format("open {}: {}", source.log, std::strerror(errno)));
  if (::fstat(source.log_fd.get(), &st) == 0) source.size = static_cast<uint64_t>(st.st_size);
  if (sink) {
    source.splice = false;  // the sink needs the bytes
    sink->SetResume([fd = wake_fd_.get()] {
      uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(fd, &one, sizeof one);
    });
    source.sink = std::move(sink);
  }
  const uint64_t id = next_id_++;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = id;
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, source.fifo_fd.get(), &ev) != 0)
    return Internal(fmt::format("epoll_ctl {}: {}", source.fifo, std::strerror(errno)));
  ids_[source.fifo] = id;
  sources_.emplace(id, std::move(source));
  return OkStatus();
}

void LogPump::Detach(const fs::path& fifo) {
  {
    std::lock_guard lock(mu_);
    auto id = ids_.find(fifo.string());
    if (id != ids_.end()) {
      auto it = sources_.find(id->second);
      if (it != sources_.end()) {
        // Everything the containers wrote is in the pipe by now: take all of it.
        DrainLocked(it->second, SIZE_MAX, /*all=*/true);
        ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, it->second.fifo_fd.get(), nullptr);
        sources_.erase(it);
      }
      ids_.erase(id);
    }
  }
  ::unlink(fifo.c_str());
}

uint64_t LogPump::bytes_pumped() {
  std::lock_guard lock(mu_);
  return bytes_pumped_;
}

void LogPump::Loop() {
  epoll_event events[64];
  for (;;) {
    const int n = ::epoll_wait(epoll_fd_.get(), events, static_cast<int>(std::size(events)), -1);
    if (n < 0 && errno != EINTR) {
      Warn("epoll_wait failed; the pump stops", "");
      return;
    }
    std::lock_guard lock(mu_);
    if (stopping_) return;
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == 0) {  // a sink has room again (Stop returned above)
        uint64_t count;
        [[maybe_unused]] ssize_t r = ::read(wake_fd_.get(), &count, sizeof count);
        ResumeLocked();
        continue;
      }
      // A source detached since epoll_wait returned is simply gone from the map.
      // epoll_event is packed on x86-64: copy the id out rather than bind a reference to it.
      const uint64_t id = events[i].data.u64;
      auto it = sources_.find(id);
      if (it != sources_.end()) DrainLocked(it->second, kReadsPerTurn);
    }
  }
}

void LogPump::ResumeLocked() {
  for (auto& [id, source] : sources_) {
    if (!source.paused || source.sink->Full()) continue;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, source.fifo_fd.get(), &ev) == 0) source.paused = false;
  }
}

void LogPump::DrainLocked(Source& source, size_t max_reads, bool all) {
  for (size_t reads = 0; reads < max_reads; ++reads) {
    if (source.sink && !all && source.sink->Full()) {
      // Blocking mode's back-pressure: the FIFO waits (and then its writers) until the sink has
      // shipped enough; the sink's resume wakes the loop.
      if (!source.paused) {
        epoll_event ev{};
        ev.events = 0;
        ev.data.u64 = ids_[source.fifo];
        ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, source.fifo_fd.get(), &ev);
        source.paused = true;
      }
      return;
    }
    if (source.splice) {
      // Pipe to file inside the kernel: no copy through the pump, at the log's own offset (the
      // pump is its only writer), never past the cap.
      // Rotate only for bytes that are there: a full log with nothing more to write keeps the
      // part before it.
      int waiting = 0;
      if (::ioctl(source.fifo_fd.get(), FIONREAD, &waiting) != 0 || waiting <= 0) return;
      if (options_.max_bytes && source.size >= options_.max_bytes && !RotateLocked(source).ok()) return;
      const uint64_t room = options_.max_bytes ? options_.max_bytes - source.size : kSpliceBytes;
      loff_t offset = static_cast<loff_t>(source.size);
      const ssize_t n = ::splice(source.fifo_fd.get(), nullptr, source.log_fd.get(), &offset,
                                 std::min<uint64_t>(room, kSpliceBytes), SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        source.size += static_cast<uint64_t>(n);
        bytes_pumped_ += static_cast<uint64_t>(n);
        source.write_failed = false;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;  // empty for now (never 0: the pump is a writer itself)
      if (n < 0 && (errno == EINVAL || errno == ENOSYS)) {
        source.splice = false;  // a file system without splice: read and write instead
        continue;
      }
      if (!source.write_failed) Warn("cannot write (output dropped)", source.log);
      source.write_failed = true;
      // Drop what is waiting rather than stall: read it out below.
    }
    const ssize_t n = ::read(source.fifo_fd.get(), buffer_.data(), buffer_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // EAGAIN: empty for now
    WriteLocked(source, buffer_.data(), static_cast<size_t>(n));
    if (source.sink) source.sink->Write(std::string_view(buffer_.data(), static_cast<size_t>(n)));
  }
}

void LogPump::WriteLocked(Source& source, const char* data, size_t n) {
  bytes_pumped_ += n;
  while (n > 0) {
    size_t chunk = n;
    if (options_.max_bytes) {
      if (source.size >= options_.max_bytes && !RotateLocked(source).ok()) return;
      chunk = std::min<uint64_t>(n, options_.max_bytes - source.size);
    }
    const ssize_t w = ::pwrite(source.log_fd.get(), data, chunk, static_cast<off_t>(source.size));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      // A full disk: the bytes are dropped rather than the pump stalled (which would stall every
      // container behind it). Said once per log.
      if (!source.write_failed) Warn("cannot write (output dropped)", source.log);
      source.write_failed = true;
      return;
    }
    source.write_failed = false;
    source.size += static_cast<uint64_t>(w);
    data += w;
    n -= static_cast<size_t>(w);
  }
}

Status LogPump::RotateLocked(Source& source) {
  const std::string old = source.log + ".1";
  // The previous part is replaced at once (rename), and the pump alone writes the file: no copy,
  // and no byte lost.
  if (::rename(source.log.c_str(), old.c_str()) != 0) {
    Warn("cannot rotate", source.log);
    // The bound still holds: start the file over.
    if (::ftruncate(source.log_fd.get(), 0) != 0) return Internal("cannot truncate " + source.log);
    source.size = 0;
    return OkStatus();
  }
  UniqueFd fresh = OpenLog(source.log);
  if (!fresh.valid()) {
    Warn("cannot reopen", source.log);
    return Internal("cannot reopen " + source.log);
  }
  source.log_fd = std::move(fresh);
  source.size = 0;
  return OkStatus();
}

Status WriteLogIndex(const fs::path& dir, const std::vector<std::string>& names) {
  // The logs root and each task's directory are root's alone: container output is the tenant's.
  RETURN_IF_ERROR(MakePrivateDir(dir.parent_path().string()));
  RETURN_IF_ERROR(MakePrivateDir(dir.string()));
  std::ofstream out(dir / "containers", std::ios::trunc);
  for (const auto& n : names) out << n << '\n';
  out.close();
  if (!out) return Internal(fmt::format("write {}", (dir / "containers").string()));
  return OkStatus();
}

Status MarkLogsStopped(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return OkStatus();  // nothing was logged
  std::ofstream out(dir / "STOPPED", std::ios::trunc);
  out.close();
  if (!out) return Internal(fmt::format("write {}", (dir / "STOPPED").string()));
  return OkStatus();
}

size_t RemoveExpiredLogs(const fs::path& logs_root, std::chrono::seconds keep) {
  std::error_code ec;
  size_t removed = 0;
  fs::directory_iterator it(logs_root, ec), end;
  if (ec) return 0;
  const auto now = fs::file_time_type::clock::now();
  for (; it != end; it.increment(ec)) {
    if (ec) break;
    std::error_code e2;
    auto t = fs::last_write_time(it->path() / "STOPPED", e2);
    if (e2 || now - t < keep) continue;
    fs::remove_all(it->path(), e2);
    if (!e2) ++removed;
  }
  return removed;
}

}  // namespace paddock::agent
