// agent/awslogs: the awslogs log driver — a container's output shipped to CloudWatch Logs, beside
// its local log file (agent/logs.h), as ECS's agent does with Docker's awslogs driver.
//
// The pieces, each testable alone (awslogs_test.cc):
//   ConfigOf         a container definition's logConfiguration → Config (awslogs-group, -region,
//                    -stream-prefix, -create-group, mode, max-buffer-size, -datetime-format,
//                    -multiline-pattern), or why it is refused
//   LineSplitter     bytes → lines (no '\n'; a line longer than kMaxEventBytes in pieces)
//   Assembler        lines → events (one a line; with a start pattern, the lines up to the next
//                    line that matches it, each with its '\n', as Docker joins them)
//   TakeBatch        events → one PutLogEvents batch (≤ 10,000 events, ≤ 1,048,576 bytes counting
//                    26 bytes an event, chronological, ≤ 24 h span)
//   Shipper          a LogSink for the LogPump: the pump hands it what it read from the FIFO; its
//                    own thread assembles events and puts them through a PutFn at least every
//                    second. Blocking mode: past kBlockingBufferBytes buffered the pump stops
//                    reading the FIFO (the container's writes block; nothing is lost).
//                    Non-blocking (AWS's default since June 25, 2025, unless the account's
//                    defaultLogDriverMode says blocking: WithDefaultMode): a line past
//                    max-buffer-size is dropped and counted.
//
//   ASSIGN_OR_RETURN(std::optional<awslogs::Config> config, awslogs::ConfigOf(container_definition));
//   auto shipper = std::make_shared<awslogs::Shipper>(*config, [&](std::vector<protocol::LogEvent> batch) {
//     return control.ShipLogs(agent_id, spec, {.container = "web", .stream = stream, .events = std::move(batch)});
//   });
//   pump.Attach(fifo, log, shipper);
//   ... pump.Detach(fifo); shipper->Close();   // the rest is shipped, then the thread ends
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/json/object.hpp>

#include "agent/logs.h"
#include "agent/protocol/messages.h"
#include "common/status.h"

namespace paddock::agent::awslogs {

inline constexpr size_t kEventOverhead = 26;
// CloudWatch's most for one event, its 26 bytes of overhead included (Docker splits longer lines).
inline constexpr size_t kMaxEventBytes = 262144 - kEventOverhead;
inline constexpr size_t kMaxBatchEvents = 10000;
inline constexpr size_t kMaxBatchBytes = 1048576;
inline constexpr int64_t kMaxBatchSpanMs = 24LL * 3600 * 1000;
inline constexpr uint64_t kDefaultMaxBufferBytes = 1 << 20;  // max-buffer-size's default ("1m")
// Blocking mode: what may wait to be shipped before the pump stops reading the container's FIFO.
inline constexpr uint64_t kBlockingBufferBytes = 4 << 20;

enum class Mode { kBlocking, kNonBlocking };

struct Config {
  std::string group;
  std::string region;         // empty: the node's (the task's) region
  std::string stream_prefix;  // empty: the stream is the container's runtime id (ECS on EC2)
  bool create_group = false;
  Mode mode = Mode::kNonBlocking;
  bool mode_given = false;  // the options name a mode; else the account's default applies (WithDefaultMode)
  uint64_t max_buffer_bytes = kDefaultMaxBufferBytes;  // non-blocking mode only
  bool max_buffer_given = false;
  std::string start_pattern;  // a regex (ECMAScript); from -multiline-pattern or -datetime-format
};

// The awslogs configuration of a container definition (its logConfiguration); nullopt when its
// logDriver is not awslogs. InvalidArgument naming the option when one is missing or malformed
// (the message follows "failed to initialize logging driver: ").
StatusOr<std::optional<Config>> ConfigOf(const boost::json::object& container_definition);

// `config` with `account_default` as its mode when its options name none (what ECS does with the
// account's defaultLogDriverMode setting: "blocking" or "non-blocking"; anything else keeps
// non-blocking, AWS's default). InvalidArgument, as Docker words it, when that makes a blocking
// container with a max-buffer-size.
StatusOr<Config> WithDefaultMode(Config config, std::string_view account_default);

// Docker's translation of awslogs-datetime-format (strftime: %Y %m %d %H %M %S %f %L %z %Z %a %A
// %b %B %y %I %p %j %w) into a regex anchored at the line's start; other text stays as written.
std::string DatetimeFormatToRegex(std::string_view format);

// "1m", "64k", "512K", "2g", "1048576" (bytes); nullopt when not a size.
std::optional<uint64_t> ParseSize(std::string_view text);

// The container's log stream: prefix/container/task-id, or without a prefix its runtime id.
std::string StreamName(const Config& config, std::string_view container, std::string_view task_id,
                       std::string_view runtime_id);

struct Event {
  int64_t timestamp_ms = 0;
  std::string message;
  bool operator==(const Event&) const = default;
};

// Splits a byte stream into lines. Not thread-safe.
class LineSplitter {
 public:
  // Calls `line` for each line `bytes` completes, without its '\n' (a '\r' before it is kept, as
  // Docker keeps it), and for each kMaxEventBytes piece of a longer one.
  void Feed(std::string_view bytes, const std::function<void(std::string_view)>& line);
  // The incomplete last line (cleared).
  std::string TakePartial();
  size_t partial_bytes() const { return partial_.size(); }

 private:
  std::string partial_;
};

// Lines → events. Empty lines make no event (CloudWatch refuses empty messages). Not thread-safe.
class Assembler {
 public:
  // `start_pattern` empty: one event a line. REQUIRES: it compiles (ConfigOf checked it).
  explicit Assembler(const std::string& start_pattern);
  // `line` by value: without a pattern it becomes the event as it is (moved, not copied).
  void Add(std::string line, int64_t timestamp_ms, std::vector<Event>& out);
  // The pending multiline event goes out when its last line came at or before `idle_since_ms`
  // (nullopt: now, whatever its age).
  void Flush(std::vector<Event>& out, std::optional<int64_t> idle_since_ms = std::nullopt);
  size_t pending_bytes() const { return pending_.size(); }

 private:
  std::optional<std::regex> start_;
  std::string pending_;
  int64_t pending_ts_ = 0;
  int64_t last_line_ts_ = 0;
};

// Removes from the front of `events` (chronological) the longest run that is one valid
// PutLogEvents batch, and returns it (empty only when `events` is).
std::vector<Event> TakeBatch(std::deque<Event>& events);

// Ships one batch. An answer with `failure` set: CloudWatch refused the batch (AWS's "Code:
// message"), which is dropped; so is a batch whose call is PermissionDenied, FailedPrecondition,
// NotFound or InvalidArgument (the task no longer this agent's). Another error: the control plane
// unreachable, and the batch is tried again.
using PutFn = std::function<StatusOr<protocol::LogsAnswer>(std::vector<protocol::LogEvent> batch)>;

class Shipper final : public LogSink {
 public:
  struct Options {
    std::chrono::milliseconds flush_interval{1000};
    // Wall-clock milliseconds: each line's timestamp is when the pump read it.
    std::function<int64_t()> now_ms;
    std::string label;  // for warnings: "task <id> container <name>"
  };
  Shipper(const Config& config, PutFn put, Options options);
  ~Shipper() override;  // Close()
  Shipper(const Shipper&) = delete;
  Shipper& operator=(const Shipper&) = delete;

  // LogSink (the pump's thread).
  void Write(std::string_view bytes) override;
  bool Full() override;
  void SetResume(std::function<void()> resume) override;

  // Ships what is buffered (the incomplete last line too), tries a failing put a few more times,
  // then stops the thread. After it, Write drops what it gets and put is never called. Idempotent.
  void Close();

  uint64_t dropped_lines();    // non-blocking mode: past max-buffer-size
  uint64_t shipped_events();   // accepted by a put
  uint64_t refused_events();   // in batches a put refused, or given up on at Close

 private:
  struct Line {
    int64_t timestamp_ms;
    std::string text;
  };
  void Loop();
  // Ships `events` until none is left (a refused batch is dropped; a failing put is tried again,
  // at most kCloseRetries more times once closing). REQUIRES: mu_ not held.
  void ShipAll(std::deque<Event>& events, bool closing);
  // The pump's resume function when the pump is paused and the buffer is below half. REQUIRES: mu_ held.
  std::function<void()> ResumeIfRoomLocked();

  static constexpr size_t kWakeLines = 1024;  // the thread wakes before the interval for this many
  static constexpr int kCloseRetries = 3;

  const Config config_;
  const PutFn put_;
  const Options options_;
  std::thread thread_;

  std::mutex mu_;
  std::condition_variable cv_;
  LineSplitter splitter_;           // GUARDED_BY(mu_)
  std::vector<Line> lines_;         // GUARDED_BY(mu_): split, not yet taken by the thread
  uint64_t waiting_bytes_ = 0;      // GUARDED_BY(mu_): of lines_
  uint64_t held_bytes_ = 0;         // GUARDED_BY(mu_): of what the thread assembles and ships
  bool closing_ = false;            // GUARDED_BY(mu_)
  bool closed_ = false;             // GUARDED_BY(mu_)
  std::function<void()> resume_;    // GUARDED_BY(mu_)
  bool paused_ = false;             // GUARDED_BY(mu_): Full answered true since the last resume
  uint64_t dropped_lines_ = 0;      // GUARDED_BY(mu_)
  uint64_t shipped_ = 0;            // GUARDED_BY(mu_)
  uint64_t refused_ = 0;            // GUARDED_BY(mu_)
  bool warned_ = false;             // GUARDED_BY(mu_)
};

}  // namespace paddock::agent::awslogs
