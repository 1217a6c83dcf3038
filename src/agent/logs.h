// agent/logs: per-container logs under <state-dir>/logs/<task id>/, owned by the agent.
//
//   <name>.fifo    the container's stdout and stderr: a FIFO the container holds open O_RDWR
//                  (so it never gets SIGPIPE or EPIPE, even while no agent reads), both streams
//                  interleaved in write order
//   <name>.log     what the agent's LogPump moved out of the FIFO: the latest part
//   <name>.log.1   the part before (at most one kept)
//   containers     the task's container names in definition order, one a line (for `paddock logs`)
//   STOPPED        written when the agent has reported the task STOPPED; its mtime is when
//
// The bound holds whatever the writer's speed: the container never touches a log file, so the
// pump can rotate by rename — before a write would take <name>.log past `max_bytes`, it renames
// <name>.log over <name>.log.1 and opens a new <name>.log. Each file stays ≤ max_bytes, so a
// container's logs take at most 2 × max_bytes of disk at every moment (its FIFO buffers another
// MiB in memory). A writer faster than the pump (or the disk) is slowed down: its writes block
// once the FIFO is full, as they would on any pipe. Nothing is lost to rotation.
//
// An agent restart: the container keeps writing into its FIFO until the pipe is full (then its
// writes block until an agent reads again — the trade-off of owning the pipe); the next agent
// re-attaches the FIFO when it re-adopts the task, and the pump resumes where the log file ends.
// The directory and its files are private to root (0700 / 0600): container output is the
// tenant's.
//
//   LogPump pump(LogPump::Options{.max_bytes = 10 << 20});
//   RETURN_IF_ERROR(pump.Start());
//   RETURN_IF_ERROR(pump.Attach(dir / "web.fifo", dir / "web.log"));  // before the container is created
//   spec.stdout_path = spec.stderr_path = (dir / "web.fifo").string();
//   ... the container runs, exits, is deleted ...
//   pump.Detach(dir / "web.fifo");   // what is left in the FIFO goes to the log; the FIFO goes
//   pump.Stop();
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/subprocess.h"

namespace paddock::agent {

inline constexpr uint64_t kDefaultMaxLogBytes = 10 * 1024 * 1024;

// Where a FIFO's output goes besides its log file (the awslogs driver, agent/awslogs.h).
class LogSink {
 public:
  virtual ~LogSink() = default;
  // What the pump read from the FIFO, in order, on the pump's thread: must not block.
  virtual void Write(std::string_view bytes) = 0;
  // Whether the pump must stop reading the FIFO for now (the container's writes then block once
  // the pipe is full). A sink that answers true calls the resume function once it has room.
  virtual bool Full() = 0;
  // Set by Attach before any Write: wakes the pump (cheap, any thread, no lock held by the pump).
  virtual void SetResume(std::function<void()> resume) = 0;
};

// Moves what containers write into their FIFOs to their log files, on one thread (an epoll loop)
// for every container of an agent, with splice(2) (no copy through user space). Thread-safe.
class LogPump {
 public:
  struct Options {
    // Each log file is rotated before it would grow past this (see the header). 0: never.
    uint64_t max_bytes = kDefaultMaxLogBytes;
    // The FIFOs' pipe buffer (F_SETPIPE_SZ): what a container can write while no agent reads.
    size_t pipe_bytes = 1 << 20;
  };

  explicit LogPump(Options options);
  ~LogPump();  // Stop()
  LogPump(const LogPump&) = delete;
  LogPump& operator=(const LogPump&) = delete;

  // Starts the pump's thread. REQUIRES: not started.
  Status Start();
  // Stops the thread and closes every FIFO and log it holds; FIFOs stay on disk for the next
  // agent (containers keep writing into them). Idempotent.
  void Stop();

  // Pumps the FIFO `fifo` (made 0600 when missing) into the log file `log` (0600, appended to),
  // from now on. Its directory must exist. Calling it again for an attached FIFO does nothing.
  // The pump holds the FIFO open read-write, so it never sees end-of-file: containers may come
  // and go (restarts) until Detach.
  // With a `sink`, the bytes are read (not spliced) and handed to it too, and the FIFO is not read
  // while the sink is Full.
  Status Attach(const std::filesystem::path& fifo, const std::filesystem::path& log,
                std::shared_ptr<LogSink> sink = nullptr);

  // Moves what is left in `fifo` into its log, stops pumping it and removes it. Call once no
  // container writes to it any more (every container using it is deleted). A FIFO not attached:
  // only removed.
  void Detach(const std::filesystem::path& fifo);

  // Bytes moved into log files since Start, for tests and statistics.
  uint64_t bytes_pumped();

 private:
  struct Source {
    std::string fifo;
    std::string log;
    subprocess::UniqueFd fifo_fd;
    subprocess::UniqueFd log_fd;
    uint64_t size = 0;  // of the current log file: where the next byte goes
    bool splice = true;         // false once the log's file system refused splice(2)
    bool write_failed = false;  // reported once
    std::shared_ptr<LogSink> sink;
    bool paused = false;  // the sink was full: out of the epoll set until it resumes
  };

  void Loop();
  // Reads what `source` holds (at most `max_reads` reads) into its log. `all`: whatever its sink
  // says (Detach). REQUIRES: mu_ held.
  void DrainLocked(Source& source, size_t max_reads, bool all = false);
  // Puts back into the epoll set the paused sources whose sinks have room. REQUIRES: mu_ held.
  void ResumeLocked();
  // Appends bytes to the log, rotating before it would pass max_bytes. REQUIRES: mu_ held.
  void WriteLocked(Source& source, const char* data, size_t n);
  Status RotateLocked(Source& source);

  const Options options_;
  subprocess::UniqueFd epoll_fd_;
  subprocess::UniqueFd wake_fd_;  // an eventfd: Stop
  std::thread thread_;

  std::mutex mu_;
  bool stopping_ = false;                            // GUARDED_BY(mu_)
  uint64_t next_id_ = 1;                             // GUARDED_BY(mu_)
  std::map<uint64_t, Source> sources_;               // GUARDED_BY(mu_), by id (the epoll data)
  std::map<std::string, uint64_t> ids_;              // GUARDED_BY(mu_), FIFO path → id
  std::vector<char> buffer_;                         // GUARDED_BY(mu_)
  uint64_t bytes_pumped_ = 0;                        // GUARDED_BY(mu_)
};

// Writes `dir`/containers (names one a line), creating `dir` (0700).
Status WriteLogIndex(const std::filesystem::path& dir, const std::vector<std::string>& names);
// Writes `dir`/STOPPED.
Status MarkLogsStopped(const std::filesystem::path& dir);
// Removes every task directory under `logs_root` whose STOPPED marker is older than `keep`
// (by its mtime against the system clock). Returns how many it removed.
size_t RemoveExpiredLogs(const std::filesystem::path& logs_root, std::chrono::seconds keep);

}  // namespace paddock::agent
