// logs/log_groups: CloudWatch Logs' owner — log groups, their streams and events, retention and
// tags, per (account, region). Typed values in and out; the wire is the adapter's
// (logs/api/logs_service.h). It lives on its own store (<state-dir>/logs.db, logs/schema.h).
//
//   logs::LogGroups groups(logs_store, SystemClock::Get());
//   RETURN_IF_ERROR(groups.CreateGroup(scope, {.name = "/ecs/web"}));
//   RETURN_IF_ERROR(groups.CreateStream(scope, "/ecs/web", "web/app/1f2e"));
//   ASSIGN_OR_RETURN(auto put, groups.Put(scope, "/ecs/web", "web/app/1f2e", {{now_ms, "hello"}}));
//
// Every group is keyed by (account, region, name), its streams and events by the group's
// node-unique id, found only through that key: one account never reads, lists, writes or deletes
// another's groups, streams or events, whatever name or ARN it passes (docs/contracts/logs.md).
// Texts of failures are AWS's where known (docs/contracts/logs.md names each).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "logs/errors.h"
#include "store/store.h"

namespace paddock::logs {

struct Tag {
  std::string key = {};
  std::string value = {};
  bool operator==(const Tag&) const = default;
};

struct GroupSpec {
  std::string name = {};
  std::vector<Tag> tags = {};
  std::string kms_key_id = {};           // recorded and echoed; not used (no KMS API here)
  std::string log_group_class = {};      // "STANDARD" (default) or "INFREQUENT_ACCESS"
};

struct LogGroup {
  std::string name = {};
  std::string arn = {};                 // arn:aws:logs:<region>:<account>:log-group:<name> (no ":*")
  int64_t creation_ms = 0;
  int retention_days = 0;          // 0: never expire
  int64_t stored_bytes = 0;        // not tracked per group (always 0: no hot row on ingest)
  std::string kms_key_id = {};
  std::string log_group_class = {};
};

struct LogStream {
  std::string name = {};
  std::string arn = {};                 // …:log-group:<group>:log-stream:<name>
  int64_t creation_ms = 0;
  std::optional<int64_t> first_event_ms = {};  // absent until the first event
  std::optional<int64_t> last_event_ms = {};
  std::optional<int64_t> last_ingestion_ms = {};
  int64_t stored_bytes = 0;
  uint64_t next_sequence = 0;      // the sequence number the next event gets
};

struct InputEvent {
  int64_t timestamp_ms = 0;
  std::string message = {};
};

struct Event {
  std::string stream = {};        // FilterLogEvents: the event's stream name
  int64_t timestamp_ms = 0;
  int64_t ingestion_ms = 0;
  std::string message = {};
  std::string event_id = {};      // stable, unique in the group: ts(13) stream id(10) sequence(12), decimal
};

// Which events PutLogEvents refused, as AWS reports them: index ranges of the batch. Events
// [0, too_old_end) are too old, [0, expired_end) older than the retention, [too_new_start, n) too
// new (more than 2 h ahead). A batch with none rejected has all three absent.
struct Rejected {
  std::optional<int> too_new_start = {};
  std::optional<int> too_old_end = {};
  std::optional<int> expired_end = {};
  bool any() const { return too_new_start || too_old_end || expired_end; }
};

struct PutResult {
  Rejected rejected = {};
  uint64_t accepted = 0;
  std::string next_sequence_token = {};  // echoed for old SDKs; ignored on input
};

// A page of a listing; `next` is the opaque position to resume after (the adapter seals it).
template <typename T>
struct Page {
  std::vector<T> items = {};
  std::optional<std::string> next = {};
};

enum class StreamOrder { kName, kLastEventTime };

struct GetEventsRequest {
  std::string group = {};
  std::string stream = {};
  std::optional<int64_t> start_ms = {};  // inclusive
  std::optional<int64_t> end_ms = {};    // exclusive (AWS: "equal to or later than this time are not included")
  size_t limit = 10000;
  bool start_from_head = false;
  std::optional<std::string> token = {};  // a position GetEvents returned (forward or backward)
};

struct GetEventsResult {
  std::vector<Event> events = {};  // ascending
  std::string next_forward = {};   // positions, never empty; the same forward position comes back at the end
  std::string next_backward = {};
};

struct FilterEventsRequest {
  std::string group = {};
  std::vector<std::string> stream_names = {};  // at most 100; exclusive with stream_prefix
  std::optional<std::string> stream_prefix = {};
  std::optional<int64_t> start_ms = {};  // inclusive
  std::optional<int64_t> end_ms = {};    // inclusive (AWS: "later than this time are not returned")
  std::string filter_pattern = {};
  size_t limit = 10000;
  std::optional<std::string> after = {};  // the position a previous page returned
};

class LogGroups {
 public:
  static constexpr int kMaxTags = 50;
  static constexpr size_t kMaxBatchBytes = 1048576;    // UTF-8 bytes + kEventOverhead per event
  static constexpr size_t kEventOverhead = 26;
  static constexpr int64_t kMaxBatchSpanMs = 24LL * 3600 * 1000;
  static constexpr int64_t kTooNewMs = 2LL * 3600 * 1000;        // events more than 2 h ahead
  static constexpr int64_t kTooOldMs = 14LL * 24 * 3600 * 1000;  // events more than 14 days old
  static constexpr size_t kMaxResponseBytes = 1048576;           // Get/FilterLogEvents pages
  // Rows one FilterLogEvents page may read, and time it may take, before it returns (possibly
  // empty) with a position; a page always reads at least one event, so pages always progress.
  static constexpr size_t kFilterScanBudget = 100000;
  static constexpr Duration kFilterTimeBudget = std::chrono::milliseconds(50);

  // `store` (the logs store) and `clock` must outlive this.
  LogGroups(store::Store& store, const Clock& clock) : store_(store), clock_(clock) {}

  static std::string GroupArn(const Scope& scope, std::string_view group);
  static std::string StreamArn(const Scope& scope, std::string_view group, std::string_view stream);
  // Whether `days` is one of the retention values AWS accepts (1, 3, 5, 7, 14, 30, … 3653).
  static bool ValidRetention(int64_t days);

  Status CreateGroup(const Scope& scope, const GroupSpec& spec);
  // Removes the group, its streams and tags (one transaction; from then on nothing finds its
  // events), then its events in transactions of at most kPurgeChunk rows (PurgeDeletedGroups).
  Status DeleteGroup(const Scope& scope, std::string_view group);
  // Deletes the events of deleted groups, kPurgeChunk rows per transaction, until none is left
  // (what DeleteGroup and ReapAccount started; after a crash, PruneExpired finishes it).
  Status PurgeDeletedGroups();
  static constexpr size_t kPurgeChunk = 50000;
  // Groups whose name starts with `prefix`, by name; `after` = a previous page's `next`.
  StatusOr<Page<LogGroup>> DescribeGroups(const Scope& scope, std::string_view prefix, size_t limit,
                                          const std::optional<std::string>& after);
  Status PutRetention(const Scope& scope, std::string_view group, int64_t days);
  Status DeleteRetention(const Scope& scope, std::string_view group);

  Status CreateStream(const Scope& scope, std::string_view group, std::string_view stream);
  Status DeleteStream(const Scope& scope, std::string_view group, std::string_view stream);
  // kLastEventTime refuses a prefix (AWS does).
  StatusOr<Page<LogStream>> DescribeStreams(const Scope& scope, std::string_view group, std::string_view prefix,
                                            StreamOrder order, bool descending, size_t limit,
                                            const std::optional<std::string>& after);

  // What Put calls after each commit that stored events: the group, the stream and the stored
  // events (with their event ids, in order). For StartLiveTail's subscriptions; it runs on the
  // caller's thread, so it must only hand the events on (never block, never call back in).
  using IngestListener = std::function<void(const Scope&, std::string_view group, const std::vector<Event>&)>;
  // REQUIRES: before the first Put (not synchronised with it).
  void SetIngestListener(IngestListener listener) { listener_ = std::move(listener); }

  // Appends a batch to a stream (AWS's rules: chronological, ≤ kMaxBatchBytes, ≤ 24 h span; too
  // new / too old / expired events are skipped and reported). One transaction.
  StatusOr<PutResult> Put(const Scope& scope, std::string_view group, std::string_view stream,
                          const std::vector<InputEvent>& events);
  StatusOr<GetEventsResult> GetEvents(const Scope& scope, const GetEventsRequest& request);
  // Events of the group's matching streams, interleaved by (timestamp, stream, sequence); a page
  // ends at `limit`, kMaxResponseBytes, kFilterScanBudget rows read or kFilterTimeBudget — then
  // `next` is set even if the page is empty.
  StatusOr<Page<Event>> FilterEvents(const Scope& scope, const FilterEventsRequest& request);

  // Tags of the group that `arn` names (a log-group ARN of this scope, with or without ":*").
  Status TagResource(const Scope& scope, std::string_view arn, const std::vector<Tag>& tags);
  Status UntagResource(const Scope& scope, std::string_view arn, const std::vector<std::string>& keys);
  StatusOr<std::vector<Tag>> ListTags(const Scope& scope, std::string_view arn);

  // Retention: deletes every event older than its group's retention at `now` (one transaction per
  // stream that has any, each stream's first event time updated), after PurgeDeletedGroups. Reads every group row: run it
  // every few minutes, not per request. Returns how many streams it pruned.
  StatusOr<uint64_t> PruneExpired(TimePoint now);

  // Deletes every group (and its streams, events, tags) of `account`, in every region.
  Status ReapAccount(const AccountId& account);

 private:
  store::Store& store_;
  const Clock& clock_;
  IngestListener listener_;
};

}  // namespace paddock::logs
