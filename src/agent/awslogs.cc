#include "agent/awslogs.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "common/json_fields.h"

namespace paddock::agent::awslogs {
namespace json = boost::json;

namespace {

constexpr std::string_view kKnownOptions[] = {
    "awslogs-group",           "awslogs-region",          "awslogs-stream-prefix", "awslogs-create-group",
    "mode",                    "max-buffer-size",         "awslogs-datetime-format", "awslogs-multiline-pattern",
    "awslogs-endpoint",        "awslogs-credentials-endpoint", "tag", "awslogs-force-flush-interval-seconds",
    "awslogs-format",          "awslogs-stream",
};

// A failure of the call that trying again cannot mend: the task is no longer this agent's (or is
// STOPPED), the control plane ships no logs, or it refuses the call.
bool Final(const Status& s) {
  return s.code() == StatusCode::kPermissionDenied || s.code() == StatusCode::kFailedPrecondition ||
         s.code() == StatusCode::kNotFound || s.code() == StatusCode::kInvalidArgument;
}

int64_t SystemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::optional<uint64_t> ParseSize(std::string_view text) {
  if (text.empty()) return std::nullopt;
  uint64_t unit = 1;
  switch (text.back()) {
    case 'k': case 'K': unit = 1024; break;
    case 'm': case 'M': unit = 1024 * 1024; break;
    case 'g': case 'G': unit = 1024 * 1024 * 1024; break;
    default: break;
  }
  if (unit != 1) text.remove_suffix(1);
  if (text.empty() || text.size() > 12) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v * unit;
}

std::string DatetimeFormatToRegex(std::string_view format) {
  // Docker's table (daemon/logger/awslogs: strftimeToRegex).
  static const std::pair<char, std::string_view> kTable[] = {
      {'a', "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"},
      {'A', "(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"},
      {'w', "[0-6]"},
      {'d', "(?:0[1-9]|[1,2][0-9]|3[0,1])"},
      {'b', "(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"},
      {'B', "(?:January|February|March|April|May|June|July|August|September|October|November|December)"},
      {'m', "(?:0[1-9]|1[0-2])"},
      {'Y', "\\d{4}"},
      {'y', "\\d{2}"},
      {'H', "(?:[0,1][0-9]|2[0-3])"},
      {'I', "(?:0[0-9]|1[0-2])"},
      {'p', "[A,P]M"},
      {'M', "[0-5][0-9]"},
      {'S', "[0-5][0-9]"},
      {'f', "\\d{6}"},
      {'z', "[+-]\\d{4}"},
      {'Z', "[A-Z]{1,4}T"},
      {'j', "(?:0[0-9][1-9]|[1,2][0-9][0-9]|3[0-5][0-9]|36[0-6])"},
      {'L', "\\.\\d{3}"},
  };
  std::string out = "^";
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '%' && i + 1 < format.size()) {
      auto it = std::find_if(std::begin(kTable), std::end(kTable), [&](const auto& e) { return e.first == format[i + 1]; });
      if (it != std::end(kTable)) {
        out += it->second;
        ++i;
        continue;
      }
    }
    out += format[i];
  }
  return out;
}

constexpr const char* kMaxBufferOnlyNonBlocking =
    "logger: max-buffer-size option is only supported with 'mode=non-blocking'";

StatusOr<std::optional<Config>> ConfigOf(const json::object& container_definition) {
  const json::object& lc = json_fields::Obj(container_definition, "logConfiguration");
  if (json_fields::Str(lc, "logDriver") != "awslogs") return std::optional<Config>();
  const json::object& options = json_fields::Obj(lc, "options");
  for (const auto& kv : options) {
    if (std::find(std::begin(kKnownOptions), std::end(kKnownOptions), kv.key()) == std::end(kKnownOptions))
      return InvalidArgument(fmt::format("unknown log opt '{}' for awslogs log driver", std::string_view(kv.key())));
    if (!kv.value().is_string())
      return InvalidArgument(fmt::format("log opt '{}' must be a string", std::string_view(kv.key())));
  }
  Config c;
  c.group = json_fields::Str(options, "awslogs-group");
  if (c.group.empty()) return InvalidArgument("must specify a value for log opt 'awslogs-group'");
  c.region = json_fields::Str(options, "awslogs-region");
  c.stream_prefix = json_fields::Str(options, "awslogs-stream-prefix");
  if (!json_fields::Str(options, "awslogs-stream").empty())
    return InvalidArgument("log opt 'awslogs-stream' is not supported: ECS names the stream (awslogs-stream-prefix)");
  if (!json_fields::Str(options, "awslogs-endpoint").empty())
    return InvalidArgument("log opt 'awslogs-endpoint' is not supported: the node's CloudWatch Logs is used");
  const std::string create = json_fields::Str(options, "awslogs-create-group");
  if (create == "true") {
    c.create_group = true;
  } else if (!create.empty() && create != "false") {
    return InvalidArgument(fmt::format("invalid value for log opt 'awslogs-create-group': {}", create));
  }
  const std::string mode = json_fields::Str(options, "mode");
  if (mode == "non-blocking" || mode == "blocking") {
    c.mode = mode == "blocking" ? Mode::kBlocking : Mode::kNonBlocking;
    c.mode_given = true;
  } else if (!mode.empty()) {
    return InvalidArgument(fmt::format("logger: logger mode not supported: {}", mode));
  }
  if (const std::string size = json_fields::Str(options, "max-buffer-size"); !size.empty()) {
    if (c.mode_given && c.mode != Mode::kNonBlocking) return InvalidArgument(kMaxBufferOnlyNonBlocking);
    std::optional<uint64_t> bytes = ParseSize(size);
    if (!bytes || *bytes == 0) return InvalidArgument(fmt::format("logger: could not parse max-buffer-size: {}", size));
    c.max_buffer_bytes = *bytes;
    c.max_buffer_given = true;
  }
  const std::string datetime = json_fields::Str(options, "awslogs-datetime-format");
  const std::string multiline = json_fields::Str(options, "awslogs-multiline-pattern");
  if (!datetime.empty() && !multiline.empty())
    return InvalidArgument(
        "you cannot configure log opt 'awslogs-datetime-format' and 'awslogs-multiline-pattern' at the same time");
  c.start_pattern = !datetime.empty() ? DatetimeFormatToRegex(datetime) : multiline;
  if (!c.start_pattern.empty()) {
    try {
      std::regex check(c.start_pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return InvalidArgument(fmt::format("awslogs could not parse multiline pattern key '{}': {}",
                                         !datetime.empty() ? "awslogs-datetime-format" : "awslogs-multiline-pattern",
                                         e.what()));
    }
  }
  return std::optional<Config>(std::move(c));
}

StatusOr<Config> WithDefaultMode(Config config, std::string_view account_default) {
  if (config.mode_given) return config;
  config.mode = account_default == "blocking" ? Mode::kBlocking : Mode::kNonBlocking;
  if (config.mode == Mode::kBlocking && config.max_buffer_given) return InvalidArgument(kMaxBufferOnlyNonBlocking);
  return config;
}

std::string StreamName(const Config& config, std::string_view container, std::string_view task_id,
                       std::string_view runtime_id) {
  if (config.stream_prefix.empty()) return std::string(runtime_id);
  return fmt::format("{}/{}/{}", config.stream_prefix, container, task_id);
}

// ---- LineSplitter ----

void LineSplitter::Feed(std::string_view bytes, const std::function<void(std::string_view)>& line) {
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    const std::string_view part = bytes.substr(0, nl);
    // A line longer than one event goes out in pieces as it grows.
    size_t room = kMaxEventBytes - partial_.size();
    std::string_view rest = part;
    while (rest.size() >= room) {
      if (partial_.empty()) {
        line(rest.substr(0, room));
      } else {
        partial_.append(rest.substr(0, room));
        line(partial_);
        partial_.clear();
      }
      rest.remove_prefix(room);
      room = kMaxEventBytes;
    }
    if (nl == std::string_view::npos) {
      partial_.append(rest);
      return;
    }
    if (partial_.empty()) {
      line(rest);
    } else {
      partial_.append(rest);
      line(partial_);
      partial_.clear();
    }
    bytes.remove_prefix(nl + 1);
  }
}

std::string LineSplitter::TakePartial() { return std::exchange(partial_, std::string()); }

// ---- Assembler ----

Assembler::Assembler(const std::string& start_pattern) {
  if (!start_pattern.empty()) start_.emplace(start_pattern, std::regex::ECMAScript);
}

void Assembler::Add(std::string line, int64_t timestamp_ms, std::vector<Event>& out) {
  if (!start_) {
    if (!line.empty()) out.push_back(Event{timestamp_ms, std::move(line)});
    return;
  }
  // As Docker: a line matching the pattern starts an event, and so does one that would take the
  // pending event past the most an event may hold; each line keeps its '\n' while it fits.
  const bool starts = std::regex_search(line.begin(), line.end(), *start_);
  if (starts || pending_.size() + line.size() > kMaxEventBytes) {
    Flush(out);
    pending_ts_ = timestamp_ms;
  }
  if (pending_.empty()) pending_ts_ = timestamp_ms;
  pending_.append(line);
  if (line.size() < kMaxEventBytes) pending_ += '\n';
  if (pending_.size() > kMaxEventBytes) pending_.resize(kMaxEventBytes);
  last_line_ts_ = timestamp_ms;
}

void Assembler::Flush(std::vector<Event>& out, std::optional<int64_t> idle_since_ms) {
  if (pending_.empty()) return;
  if (idle_since_ms && last_line_ts_ > *idle_since_ms) return;
  out.push_back(Event{pending_ts_, std::exchange(pending_, std::string())});
}

// ---- TakeBatch ----

std::vector<Event> TakeBatch(std::deque<Event>& events) {
  std::vector<Event> batch;
  size_t bytes = 0;
  while (!events.empty() && batch.size() < kMaxBatchEvents) {
    const Event& e = events.front();
    const size_t size = e.message.size() + kEventOverhead;
    if (!batch.empty() && (bytes + size > kMaxBatchBytes || e.timestamp_ms - batch.front().timestamp_ms > kMaxBatchSpanMs ||
                           e.timestamp_ms < batch.back().timestamp_ms))
      break;
    bytes += size;
    batch.push_back(std::move(events.front()));
    events.pop_front();
  }
  return batch;
}

// ---- Shipper ----

Shipper::Shipper(const Config& config, PutFn put, Options options)
    : config_(config), put_(std::move(put)), options_(std::move(options)) {
  thread_ = std::thread([this] { Loop(); });
}

Shipper::~Shipper() { Close(); }

void Shipper::Write(std::string_view bytes) {
  const int64_t now = options_.now_ms ? options_.now_ms() : SystemNowMs();
  std::lock_guard lock(mu_);
  if (closed_ || closing_) return;
  splitter_.Feed(bytes, [&](std::string_view line) {
    if (config_.mode == Mode::kNonBlocking &&
        waiting_bytes_ + held_bytes_ + line.size() > config_.max_buffer_bytes) {
      ++dropped_lines_;
      return;
    }
    waiting_bytes_ += line.size();
    lines_.push_back(Line{now, std::string(line)});
  });
  if (lines_.size() >= kWakeLines || waiting_bytes_ >= kMaxBatchBytes / 2) cv_.notify_one();
}

std::function<void()> Shipper::ResumeIfRoomLocked() {
  if (!paused_ || waiting_bytes_ + held_bytes_ + splitter_.partial_bytes() >= kBlockingBufferBytes / 2) return {};
  paused_ = false;
  return resume_;
}

bool Shipper::Full() {
  std::lock_guard lock(mu_);
  if (config_.mode == Mode::kNonBlocking || closing_ || closed_) return false;
  const bool full = waiting_bytes_ + held_bytes_ + splitter_.partial_bytes() >= kBlockingBufferBytes;
  if (full) {
    paused_ = true;
    cv_.notify_one();
  }
  return full;
}

void Shipper::SetResume(std::function<void()> resume) {
  std::lock_guard lock(mu_);
  resume_ = std::move(resume);
}

void Shipper::Close() {
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closing_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  closed_ = true;
}

uint64_t Shipper::dropped_lines() {
  std::lock_guard lock(mu_);
  return dropped_lines_;
}
uint64_t Shipper::shipped_events() {
  std::lock_guard lock(mu_);
  return shipped_;
}
uint64_t Shipper::refused_events() {
  std::lock_guard lock(mu_);
  return refused_;
}

void Shipper::Loop() {
  Assembler assembler(config_.start_pattern);
  std::deque<Event> events;
  int64_t last_ts = 0;
  for (;;) {
    std::vector<Line> lines;
    bool closing;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, options_.flush_interval, [&] {
        return closing_ || paused_ || lines_.size() >= kWakeLines || waiting_bytes_ >= kMaxBatchBytes / 2;
      });
      lines.swap(lines_);
      closing = closing_;
      if (closing) {
        if (std::string partial = splitter_.TakePartial(); !partial.empty())
          lines.push_back(Line{options_.now_ms ? options_.now_ms() : SystemNowMs(), std::move(partial)});
      }
    }
    std::vector<Event> out;
    uint64_t taken = 0;  // bytes of the swapped lines, counted before they move into events
    for (Line& l : lines) {
      // Chronological whatever the wall clock does (PutLogEvents refuses a batch out of order).
      last_ts = std::max(last_ts, l.timestamp_ms);
      taken += l.text.size();
      assembler.Add(std::move(l.text), last_ts, out);
    }
    const int64_t now = options_.now_ms ? options_.now_ms() : SystemNowMs();
    if (closing) {
      assembler.Flush(out);
    } else {
      assembler.Flush(out, now - options_.flush_interval.count());
    }
    for (Event& e : out) events.push_back(std::move(e));
    std::function<void()> resume;
    {
      // The swapped lines are this thread's now: as events, or in the assembler (empty lines and
      // the '\n's a multiline event adds are not counted exactly; the bound stays).
      std::lock_guard lock(mu_);
      uint64_t held = assembler.pending_bytes();
      for (const Event& e : events) held += e.message.size();
      waiting_bytes_ -= std::min(waiting_bytes_, taken);
      held_bytes_ = held;
      resume = ResumeIfRoomLocked();
    }
    if (resume) resume();
    ShipAll(events, closing);
    if (closing) return;
  }
}

void Shipper::ShipAll(std::deque<Event>& events, bool closing) {
  int attempt = 0;
  while (!events.empty()) {
    std::vector<Event> batch = TakeBatch(events);
    std::vector<protocol::LogEvent> wire;
    wire.reserve(batch.size());
    uint64_t bytes = 0;
    for (const Event& e : batch) {
      bytes += e.message.size();
      wire.push_back(protocol::LogEvent{e.timestamp_ms, e.message});
    }
    StatusOr<protocol::LogsAnswer> answer = put_(std::move(wire));
    std::function<void()> resume;
    bool done = false;
    {
      std::lock_guard lock(mu_);
      if (answer.ok() && answer->failure.empty()) {
        shipped_ += batch.size();
        warned_ = false;
        done = true;
      } else if (answer.ok() || Final(answer.status()) || (closing && attempt >= kCloseRetries)) {
        // Refused (the group or stream deleted, access taken away): dropped, as Docker's driver
        // does; or the control plane is gone while the task stops.
        refused_ += batch.size();
        fmt::print(stderr, "paddock: agent: awslogs: {}: {} events dropped: {}\n", options_.label, batch.size(),
                   answer.ok() ? answer->failure : answer.status().ToString());
        done = true;
      } else if (!warned_) {
        fmt::print(stderr, "paddock: agent: awslogs: {}: shipping failed (trying again): {}\n", options_.label,
                   answer.status().ToString());
        warned_ = true;
      }
      if (done) {
        held_bytes_ -= std::min(held_bytes_, bytes);
        resume = ResumeIfRoomLocked();
      }
    }
    if (resume) resume();
    if (done) {
      attempt = 0;
      continue;
    }
    // Put it back and wait: the control plane may be back in a moment (blocking mode then backs up
    // into the FIFO; nothing is lost).
    for (auto it = batch.rbegin(); it != batch.rend(); ++it) events.push_front(std::move(*it));
    ++attempt;
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(std::min(5000, 250 << std::min(attempt, 5))),
                 [&] { return closing_ && !closing; });
    closing = closing || closing_;
  }
}

}  // namespace paddock::agent::awslogs
