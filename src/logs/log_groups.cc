#include "logs/log_groups.h"

#include <algorithm>
#include <queue>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "logs/filter.h"
#include "logs/schema.h"
#include "store/key.h"

namespace paddock::logs {
namespace {

namespace json = boost::json;
using store::Key;
using store::KeyReader;
using store::KeySuccessor;
using store::PrefixRange;
using store::Range;
using store::ReadTxn;
using store::Row;
using store::WriteTxn;

constexpr std::string_view kGroups = "logs_groups";
constexpr std::string_view kStreams = "logs_streams";
constexpr std::string_view kByLastEvent = "logs_streams_by_last_event";
constexpr std::string_view kEvents = "logs_events";
constexpr std::string_view kTags = "logs_tags";
constexpr std::string_view kCounters = "logs_counters";
constexpr std::string_view kDeletedGroups = "logs_deleted_groups";

// AWS's texts (docs/contracts/logs.md).
constexpr std::string_view kNoGroup = "The specified log group does not exist.";
constexpr std::string_view kNoStream = "The specified log stream does not exist.";
constexpr std::string_view kGroupExists = "The specified log group already exists";
constexpr std::string_view kStreamExists = "The specified log stream already exists";

constexpr int kRetentionDays[] = {1,   3,   5,   7,   14,  30,   60,   90,   120,  150,  180,
                                  365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653};

Status Invalid(std::string message) { return InvalidArgument(std::move(message), Error::kInvalidParameter); }
Status NoGroup() { return NotFound(std::string(kNoGroup), Error::kResourceNotFound); }
Status NoStream() { return NotFound(std::string(kNoStream), Error::kResourceNotFound); }

std::string GroupKey(const Scope& s, std::string_view name) {
  return Key().Str(s.account.str()).Str(s.region.str()).Str(name).Done();
}
std::string StreamKey(const Scope& s, uint64_t gid, std::string_view name) {
  return Key().Str(s.account.str()).Str(s.region.str()).U64(gid).Str(name).Done();
}
std::string StreamsPrefix(const Scope& s, uint64_t gid) {
  return Key().Str(s.account.str()).Str(s.region.str()).U64(gid).Done();
}
std::string ByLastKey(const Scope& s, uint64_t gid, int64_t last, std::string_view name) {
  return Key().Str(s.account.str()).Str(s.region.str()).U64(gid).U64(static_cast<uint64_t>(last)).Str(name).Done();
}
std::string EventKey(uint64_t gid, uint64_t sid, int64_t ts, uint64_t seq) {
  return Key().U64(gid).U64(sid).U64(static_cast<uint64_t>(ts)).U64(seq).Done();
}
std::string EventTsBound(uint64_t gid, uint64_t sid, int64_t ts) {
  return Key().U64(gid).U64(sid).U64(static_cast<uint64_t>(std::max<int64_t>(ts, 0))).Done();
}
std::string TagKey(const Scope& s, std::string_view group, std::string_view key) {
  return Key().Str(s.account.str()).Str(s.region.str()).Str(group).Str(key).Done();
}

struct GroupRecord {
  uint64_t id = 0;
  int64_t created = 0;
  int retention = 0;
  std::string kms;
  std::string cls;
};

struct StreamRecord {
  uint64_t id = 0;
  int64_t created = 0;
  std::optional<int64_t> first, last, ingested;
  int64_t bytes = 0;
  uint64_t seq = 0;
};

int64_t Num(const json::object& o, std::string_view k) {
  const json::value* v = o.if_contains(k);
  return v && v->is_int64() ? v->as_int64() : (v && v->is_uint64() ? static_cast<int64_t>(v->as_uint64()) : 0);
}
std::optional<int64_t> OptNum(const json::object& o, std::string_view k) {
  if (!o.contains(k)) return std::nullopt;
  return Num(o, k);
}
std::string Text(const json::object& o, std::string_view k) {
  const json::value* v = o.if_contains(k);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

StatusOr<json::object> ParseObject(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return DataLoss("logs: a stored record is not a JSON object");
  return std::move(v.as_object());
}

std::string EncodeGroup(const GroupRecord& g) {
  return json::serialize(json::object{
      {"id", g.id}, {"created", g.created}, {"retention", g.retention}, {"kms", g.kms}, {"class", g.cls}});
}
StatusOr<GroupRecord> DecodeGroup(std::string_view text) {
  ASSIGN_OR_RETURN(json::object o, ParseObject(text));
  return GroupRecord{static_cast<uint64_t>(Num(o, "id")), Num(o, "created"), static_cast<int>(Num(o, "retention")),
                     Text(o, "kms"), Text(o, "class")};
}

std::string EncodeStream(const StreamRecord& s) {
  json::object o{{"id", s.id}, {"created", s.created}, {"bytes", s.bytes}, {"seq", s.seq}};
  if (s.first) o["first"] = *s.first;
  if (s.last) o["last"] = *s.last;
  if (s.ingested) o["ingested"] = *s.ingested;
  return json::serialize(o);
}
StatusOr<StreamRecord> DecodeStream(std::string_view text) {
  ASSIGN_OR_RETURN(json::object o, ParseObject(text));
  return StreamRecord{static_cast<uint64_t>(Num(o, "id")), Num(o, "created"), OptNum(o, "first"),
                      OptNum(o, "last"), OptNum(o, "ingested"), Num(o, "bytes"), static_cast<uint64_t>(Num(o, "seq"))};
}

std::string EncodeEventValue(int64_t ingestion, std::string_view message) {
  std::string out(8, '\0');
  auto v = static_cast<uint64_t>(ingestion);
  for (int i = 7; i >= 0; --i, v >>= 8) out[static_cast<size_t>(i)] = static_cast<char>(v & 0xff);
  out.append(message);
  return out;
}

struct EventRow {
  uint64_t gid = 0, sid = 0, seq = 0;
  int64_t ts = 0, ingestion = 0;
  std::string_view message;
};
StatusOr<EventRow> DecodeEvent(const Row& row) {
  KeyReader r(row.key);
  EventRow e;
  ASSIGN_OR_RETURN(e.gid, r.U64());
  ASSIGN_OR_RETURN(e.sid, r.U64());
  ASSIGN_OR_RETURN(uint64_t ts, r.U64());
  ASSIGN_OR_RETURN(e.seq, r.U64());
  if (row.value.size() < 8) return DataLoss("logs: a stored event is shorter than its header");
  uint64_t ing = 0;
  for (size_t i = 0; i < 8; ++i) ing = (ing << 8) | static_cast<unsigned char>(row.value[i]);
  e.ts = static_cast<int64_t>(ts);
  e.ingestion = static_cast<int64_t>(ing);
  e.message = std::string_view(row.value).substr(8);
  return e;
}

std::string EventId(int64_t ts, uint64_t sid, uint64_t seq) { return fmt::format("{:013}{:010}{:012}", ts, sid, seq); }

StatusOr<uint64_t> NextId(WriteTxn& txn) {
  ASSIGN_OR_RETURN(auto v, txn.Get(kCounters, "next_id"));
  uint64_t id = 1;
  if (v) id = std::stoull(*v);
  RETURN_IF_ERROR(txn.Put(kCounters, "next_id", std::to_string(id + 1)));
  return id;
}

StatusOr<GroupRecord> FindGroup(ReadTxn& txn, const Scope& scope, std::string_view group) {
  ASSIGN_OR_RETURN(auto v, txn.Get(kGroups, GroupKey(scope, group)));
  if (!v) return NoGroup();
  return DecodeGroup(*v);
}
StatusOr<StreamRecord> FindStream(ReadTxn& txn, const Scope& scope, uint64_t gid, std::string_view stream) {
  ASSIGN_OR_RETURN(auto v, txn.Get(kStreams, StreamKey(scope, gid, stream)));
  if (!v) return NoStream();
  return DecodeStream(*v);
}

// The earliest timestamp a group's retention still shows at `now` (0: everything).
int64_t RetentionCutoff(const GroupRecord& g, int64_t now) {
  return g.retention > 0 ? now - static_cast<int64_t>(g.retention) * 24 * 3600 * 1000 : 0;
}

// A log-group ARN of this scope (with or without a trailing ":*") -> the group's name.
StatusOr<std::string> GroupOfArn(const Scope& scope, std::string_view arn) {
  const std::string prefix = fmt::format("arn:aws:logs:{}:{}:log-group:", scope.region.str(), scope.account.str());
  if (!arn.starts_with("arn:")) return Invalid(fmt::format("Invalid resource arn: {}", arn));
  if (!arn.starts_with(prefix)) return NoGroup();  // another account's or region's group: not here
  std::string_view name = arn.substr(prefix.size());
  if (name.ends_with(":*")) name.remove_suffix(2);
  if (name.empty() || name.find(':') != std::string_view::npos) return NoGroup();
  return std::string(name);
}

Status DeleteGroupRows(WriteTxn& txn, const Scope& scope, std::string_view name, uint64_t gid) {
  RETURN_IF_ERROR(txn.Delete(kGroups, GroupKey(scope, name)));
  RETURN_IF_ERROR(txn.DeleteRange(kStreams, PrefixRange(StreamsPrefix(scope, gid))));
  RETURN_IF_ERROR(txn.DeleteRange(kByLastEvent, PrefixRange(StreamsPrefix(scope, gid))));
  // The events go later, in bounded transactions (PurgeDeletedGroups): a big group's would hold
  // the logs store's writer for seconds. Nothing reads them meanwhile: no group row leads to them.
  RETURN_IF_ERROR(txn.Put(kDeletedGroups, Key().U64(gid).Done(), ""));
  return txn.DeleteRange(kTags, PrefixRange(GroupKey(scope, name)));
}

LogGroup GroupOf(const Scope& scope, std::string name, const GroupRecord& r) {
  LogGroup g;
  g.arn = LogGroups::GroupArn(scope, name);
  g.name = std::move(name);
  g.creation_ms = r.created;
  g.retention_days = r.retention;
  g.kms_key_id = r.kms;
  g.log_group_class = r.cls.empty() ? "STANDARD" : r.cls;
  return g;
}

LogStream StreamOf(const Scope& scope, std::string_view group, std::string name, const StreamRecord& r) {
  LogStream s;
  s.arn = LogGroups::StreamArn(scope, group, name);
  s.name = std::move(name);
  s.creation_ms = r.created;
  s.first_event_ms = r.first;
  s.last_event_ms = r.last;
  s.last_ingestion_ms = r.ingested;
  s.stored_bytes = r.bytes;
  s.next_sequence = r.seq;
  return s;
}

// The model's patterns, which the front does not check: AWS answers them with its generic
// validation text.
Status ValidateName(std::string_view member, std::string_view value, std::string_view pattern, bool ok) {
  if (ok && !value.empty() && value.size() <= 512) return OkStatus();
  return Invalid(fmt::format("1 validation error detected: Value '{}' at '{}' failed to satisfy constraint: Member "
                             "must satisfy regular expression pattern: {}",
                             value, member, pattern));
}
Status ValidateGroupName(std::string_view name) {
  bool ok = std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
           c == '_' || c == '/' || c == '#';
  });
  return ValidateName("logGroupName", name, R"([\.\-_/#A-Za-z0-9]+)", ok);
}
Status ValidateStreamName(std::string_view name) {
  return ValidateName("logStreamName", name, "[^:*]*", name.find_first_of(":*") == std::string_view::npos);
}

Status ValidateTags(const std::vector<Tag>& tags) {
  for (const Tag& t : tags)
    if (t.key.starts_with("aws:")) return Invalid("Tag keys prefixed with 'aws:' are reserved.");
  return OkStatus();
}

}  // namespace

std::string LogGroups::GroupArn(const Scope& scope, std::string_view group) {
  return fmt::format("arn:aws:logs:{}:{}:log-group:{}", scope.region.str(), scope.account.str(), group);
}

std::string LogGroups::StreamArn(const Scope& scope, std::string_view group, std::string_view stream) {
  return fmt::format("{}:log-stream:{}", GroupArn(scope, group), stream);
}

bool LogGroups::ValidRetention(int64_t days) {
  return std::find(std::begin(kRetentionDays), std::end(kRetentionDays), days) != std::end(kRetentionDays);
}

Status LogGroups::CreateGroup(const Scope& scope, const GroupSpec& spec) {
  RETURN_IF_ERROR(ValidateGroupName(spec.name));
  RETURN_IF_ERROR(ValidateTags(spec.tags));
  if (spec.tags.size() > static_cast<size_t>(kMaxTags))
    return Invalid(fmt::format("A log group can have at most {} tags.", kMaxTags));
  const int64_t now = EpochMillis(clock_.Now());
  return store_.Write([&](WriteTxn& txn) -> Status {
    const std::string key = GroupKey(scope, spec.name);
    ASSIGN_OR_RETURN(auto old, txn.Get(kGroups, key));
    if (old) return AlreadyExists(std::string(kGroupExists), Error::kResourceAlreadyExists);
    GroupRecord g;
    ASSIGN_OR_RETURN(g.id, NextId(txn));
    g.created = now;
    g.kms = spec.kms_key_id;
    g.cls = spec.log_group_class.empty() ? "STANDARD" : spec.log_group_class;
    RETURN_IF_ERROR(txn.Put(kGroups, key, EncodeGroup(g)));
    for (const Tag& t : spec.tags) RETURN_IF_ERROR(txn.Put(kTags, TagKey(scope, spec.name, t.key), t.value));
    return OkStatus();
  });
}

Status LogGroups::DeleteGroup(const Scope& scope, std::string_view group) {
  RETURN_IF_ERROR(store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(GroupRecord g, FindGroup(txn, scope, group));
    return DeleteGroupRows(txn, scope, group, g.id);
  }));
  return PurgeDeletedGroups();
}

Status LogGroups::PurgeDeletedGroups() {
  for (;;) {
    bool done = false;
    RETURN_IF_ERROR(store_.Write([&](WriteTxn& txn) -> Status {
      ASSIGN_OR_RETURN(std::vector<Row> work, txn.Scan(kDeletedGroups, Range{"", ""}, 1));
      if (work.empty()) {
        done = true;
        return OkStatus();
      }
      const Range events = PrefixRange(work[0].key);  // the key is Key().U64(gid): the events' prefix
      ASSIGN_OR_RETURN(std::vector<Row> chunk, txn.Scan(kEvents, events, kPurgeChunk));
      if (chunk.size() < kPurgeChunk) {
        RETURN_IF_ERROR(txn.DeleteRange(kEvents, events));
        return txn.Delete(kDeletedGroups, work[0].key);
      }
      return txn.DeleteRange(kEvents, Range{events.begin, KeySuccessor(chunk.back().key)});
    }));
    if (done) return OkStatus();
  }
}

StatusOr<Page<LogGroup>> LogGroups::DescribeGroups(const Scope& scope, std::string_view prefix, size_t limit,
                                                   const std::optional<std::string>& after) {
  Page<LogGroup> page;
  Range range = PrefixRange(Key().Str(scope.account.str()).Str(scope.region.str()).StrPrefix(prefix).Done());
  if (after) range.begin = std::max(range.begin, KeySuccessor(GroupKey(scope, *after)));
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(std::vector<Row> rows, txn.Scan(kGroups, range, limit + 1));
    for (size_t i = 0; i < rows.size() && i < limit; ++i) {
      KeyReader r(rows[i].key);
      RETURN_IF_ERROR(r.Str().status());
      RETURN_IF_ERROR(r.Str().status());
      ASSIGN_OR_RETURN(std::string name, r.Str());
      ASSIGN_OR_RETURN(GroupRecord g, DecodeGroup(rows[i].value));
      page.items.push_back(GroupOf(scope, std::move(name), g));
    }
    if (rows.size() > limit && !page.items.empty()) page.next = page.items.back().name;
    return OkStatus();
  }));
  return page;
}

Status LogGroups::PutRetention(const Scope& scope, std::string_view group, int64_t days) {
  if (!ValidRetention(days))
    return Invalid(fmt::format(
        "1 validation error detected: Value '{}' at 'retentionInDays' failed to satisfy constraint: Member must "
        "satisfy enum value set: [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, "
        "2557, 2922, 3288, 3653]",
        days));
  return store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(GroupRecord g, FindGroup(txn, scope, group));
    g.retention = static_cast<int>(days);  // one of kRetentionDays
    return txn.Put(kGroups, GroupKey(scope, group), EncodeGroup(g));
  });
}

Status LogGroups::DeleteRetention(const Scope& scope, std::string_view group) {
  return store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(GroupRecord g, FindGroup(txn, scope, group));
    g.retention = 0;
    return txn.Put(kGroups, GroupKey(scope, group), EncodeGroup(g));
  });
}

Status LogGroups::CreateStream(const Scope& scope, std::string_view group, std::string_view stream) {
  RETURN_IF_ERROR(ValidateStreamName(stream));
  const int64_t now = EpochMillis(clock_.Now());
  return store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(GroupRecord g, FindGroup(txn, scope, group));
    const std::string key = StreamKey(scope, g.id, stream);
    ASSIGN_OR_RETURN(auto old, txn.Get(kStreams, key));
    if (old) return AlreadyExists(std::string(kStreamExists), Error::kResourceAlreadyExists);
    StreamRecord s;
    ASSIGN_OR_RETURN(s.id, NextId(txn));
    s.created = now;
    s.seq = 1;
    RETURN_IF_ERROR(txn.Put(kStreams, key, EncodeStream(s)));
    return txn.Put(kByLastEvent, ByLastKey(scope, g.id, 0, stream), "");
  });
}

Status LogGroups::DeleteStream(const Scope& scope, std::string_view group, std::string_view stream) {
  return store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(GroupRecord g, FindGroup(txn, scope, group));
    ASSIGN_OR_RETURN(StreamRecord s, FindStream(txn, scope, g.id, stream));
    RETURN_IF_ERROR(txn.Delete(kStreams, StreamKey(scope, g.id, stream)));
    RETURN_IF_ERROR(txn.Delete(kByLastEvent, ByLastKey(scope, g.id, s.last.value_or(0), stream)));
    return txn.DeleteRange(kEvents, PrefixRange(Key().U64(g.id).U64(s.id).Done()));
  });
}

StatusOr<Page<LogStream>> LogGroups::DescribeStreams(const Scope& scope, std::string_view group,
                                                     std::string_view prefix, StreamOrder order, bool descending,
                                                     size_t limit, const std::optional<std::string>& after) {
  if (order == StreamOrder::kLastEventTime && !prefix.empty())
    return Invalid("Cannot order by LastEventTime with a logStreamNamePrefix.");
  Page<LogStream> page;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(GroupRecord g, FindGroup(txn, scope, group));
    const std::string_view table = order == StreamOrder::kName ? kStreams : kByLastEvent;
    Range range = order == StreamOrder::kName
                      ? PrefixRange(Key().Str(scope.account.str()).Str(scope.region.str()).U64(g.id).StrPrefix(prefix).Done())
                      : PrefixRange(StreamsPrefix(scope, g.id));
    // `after` is the last row's key in `table` (the adapter seals it with the request's shape).
    if (after) {
      if (!after->starts_with(StreamsPrefix(scope, g.id)))
        return Invalid("The specified nextToken is invalid.");
      if (descending) range.end = *after;
      else range.begin = std::max(range.begin, KeySuccessor(*after));
    }
    ASSIGN_OR_RETURN(std::vector<Row> rows, txn.Scan(table, range, limit + 1,
                                                     descending ? store::Direction::kBackward : store::Direction::kForward));
    for (size_t i = 0; i < rows.size() && i < limit; ++i) {
      KeyReader r(rows[i].key);
      RETURN_IF_ERROR(r.Str().status());
      RETURN_IF_ERROR(r.Str().status());
      RETURN_IF_ERROR(r.U64().status());
      if (order == StreamOrder::kLastEventTime) RETURN_IF_ERROR(r.U64().status());
      ASSIGN_OR_RETURN(std::string name, r.Str());
      std::string value = rows[i].value;
      if (order == StreamOrder::kLastEventTime) {
        ASSIGN_OR_RETURN(auto v, txn.Get(kStreams, StreamKey(scope, g.id, name)));
        if (!v) continue;  // cannot happen: both rows change in one transaction
        value = *v;
      }
      ASSIGN_OR_RETURN(StreamRecord s, DecodeStream(value));
      page.items.push_back(StreamOf(scope, group, std::move(name), s));
    }
    if (rows.size() > limit) page.next = rows[limit - 1].key;
    return OkStatus();
  }));
  return page;
}

StatusOr<PutResult> LogGroups::Put(const Scope& scope, std::string_view group, std::string_view stream,
                                   const std::vector<InputEvent>& events) {
  const int64_t now = EpochMillis(clock_.Now());
  size_t bytes = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    if (i > 0 && events[i].timestamp_ms < events[i - 1].timestamp_ms)
      return Invalid("Log events in a single PutLogEvents request must be in chronological order.");
    bytes += events[i].message.size() + kEventOverhead;
  }
  if (bytes > kMaxBatchBytes)
    return Invalid(fmt::format("Upload too large: {} bytes exceeds limit of {}", bytes, kMaxBatchBytes));
  if (!events.empty() && events.back().timestamp_ms - events.front().timestamp_ms > kMaxBatchSpanMs)
    return Invalid("The batch of log events in a single PutLogEvents request cannot span more than 24 hours.");
  PutResult result;
  std::vector<Event> stored;  // for the ingest listener
  RETURN_IF_ERROR(store_.Write([&](WriteTxn& txn) -> Status {
    result = PutResult{};
    stored.clear();
    ASSIGN_OR_RETURN(GroupRecord g, FindGroup(txn, scope, group));
    const std::string skey = StreamKey(scope, g.id, stream);
    ASSIGN_OR_RETURN(auto sv, txn.Get(kStreams, skey));
    if (!sv) return NoStream();
    ASSIGN_OR_RETURN(StreamRecord s, DecodeStream(*sv));
    const int64_t too_old = now - kTooOldMs;
    const int64_t expired = RetentionCutoff(g, now);
    const int64_t too_new = now + kTooNewMs;
    const std::optional<int64_t> old_last = s.last;
    for (size_t i = 0; i < events.size(); ++i) {
      const InputEvent& e = events[i];
      const int idx = static_cast<int>(i);
      if (e.timestamp_ms < too_old || e.timestamp_ms < 0) { result.rejected.too_old_end = idx + 1; continue; }
      if (g.retention > 0 && e.timestamp_ms < expired) { result.rejected.expired_end = idx + 1; continue; }
      if (e.timestamp_ms > too_new) {
        if (!result.rejected.too_new_start) result.rejected.too_new_start = idx;
        continue;
      }
      RETURN_IF_ERROR(txn.Put(kEvents, EventKey(g.id, s.id, e.timestamp_ms, s.seq), EncodeEventValue(now, e.message)));
      if (listener_) stored.push_back(Event{std::string(stream), e.timestamp_ms, now, e.message, EventId(e.timestamp_ms, s.id, s.seq)});
      ++s.seq;
      ++result.accepted;
      s.bytes += static_cast<int64_t>(e.message.size());
      s.first = s.first ? std::min(*s.first, e.timestamp_ms) : e.timestamp_ms;
      s.last = s.last ? std::max(*s.last, e.timestamp_ms) : e.timestamp_ms;
    }
    if (result.accepted > 0) {
      s.ingested = now;
      if (s.last != old_last) {
        RETURN_IF_ERROR(txn.Delete(kByLastEvent, ByLastKey(scope, g.id, old_last.value_or(0), stream)));
        RETURN_IF_ERROR(txn.Put(kByLastEvent, ByLastKey(scope, g.id, *s.last, stream), ""));
      }
      RETURN_IF_ERROR(txn.Put(kStreams, skey, EncodeStream(s)));
    }
    result.next_sequence_token = fmt::format("{:056}", s.seq);
    return OkStatus();
  }));
  if (listener_ && !stored.empty()) listener_(scope, group, stored);
  return result;
}

StatusOr<GetEventsResult> LogGroups::GetEvents(const Scope& scope, const GetEventsRequest& req) {
  const int64_t now = EpochMillis(clock_.Now());
  GetEventsResult out;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(GroupRecord g, FindGroup(txn, scope, req.group));
    ASSIGN_OR_RETURN(StreamRecord s, FindStream(txn, scope, g.id, req.stream));
    const int64_t lo = std::max(req.start_ms.value_or(0), RetentionCutoff(g, now));
    Range window{EventTsBound(g.id, s.id, lo),
                 req.end_ms ? EventTsBound(g.id, s.id, *req.end_ms)
                            // past every event, yet inside the stream's prefix: a position tokens may carry
                            : Key().U64(g.id).U64(s.id).U64(UINT64_MAX).Done()};
    // A position is 'f' + inclusive begin key or 'b' + exclusive end key, inside the stream.
    bool forward = req.start_from_head;
    Range range = window;
    if (req.token) {
      const std::string stream_prefix = Key().U64(g.id).U64(s.id).Done();
      if (req.token->size() < 1 || !req.token->substr(1).starts_with(stream_prefix))
        return Invalid("The specified nextToken is invalid.");
      forward = (*req.token)[0] == 'f';
      std::string bound = req.token->substr(1);
      if (forward) range.begin = std::max(range.begin, bound);
      else range.end = std::min(range.end, bound);
    }
    if (range.end < range.begin) range.end = range.begin;
    ASSIGN_OR_RETURN(std::vector<Row> rows, txn.Scan(kEvents, range, req.limit,
                                                     forward ? store::Direction::kForward : store::Direction::kBackward));
    if (!forward) std::reverse(rows.begin(), rows.end());
    size_t bytes = 0, taken = 0;
    for (; taken < rows.size(); ++taken) {
      bytes += rows[taken].value.size() - 8 + LogGroups::kEventOverhead;
      if (taken > 0 && bytes > kMaxResponseBytes) break;
    }
    if (!forward && taken < rows.size()) rows.erase(rows.begin(), rows.end() - static_cast<long>(taken));
    else rows.resize(taken);
    for (const Row& row : rows) {
      ASSIGN_OR_RETURN(EventRow e, DecodeEvent(row));
      out.events.push_back(Event{"", e.ts, e.ingestion, std::string(e.message), EventId(e.ts, s.id, e.seq)});
    }
    if (rows.empty()) {
      // Nothing in [begin, end): reading on from `begin` sees whatever comes later, and a page in
      // the direction it was read answers the token it was given (the end, for SDKs).
      out.next_forward = "f" + range.begin;
      out.next_backward = "b" + (forward ? range.begin : range.end);
    } else {
      out.next_forward = "f" + KeySuccessor(rows.back().key);
      out.next_backward = "b" + rows.front().key;
    }
    return OkStatus();
  }));
  return out;
}

StatusOr<Page<Event>> LogGroups::FilterEvents(const Scope& scope, const FilterEventsRequest& req) {
  if (!req.stream_names.empty() && req.stream_prefix)
    return Invalid("logStreamNames and logStreamNamePrefix are mutually exclusive.");
  ASSIGN_OR_RETURN(Filter filter, Filter::Compile(req.filter_pattern));
  const int64_t now = EpochMillis(clock_.Now());
  // The position: (timestamp, stream id, sequence) of the last event read.
  std::optional<std::tuple<int64_t, uint64_t, uint64_t>> after;
  if (req.after) {
    KeyReader r(*req.after);
    auto ts = r.U64();
    auto sid = r.U64();
    auto seq = r.U64();
    if (!ts.ok() || !sid.ok() || !seq.ok() || !r.AtEnd()) return Invalid("The specified nextToken is invalid.");
    after = std::make_tuple(static_cast<int64_t>(*ts), *sid, *seq);
  }
  Page<Event> page;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(GroupRecord g, FindGroup(txn, scope, req.group));
    const int64_t lo = std::max(req.start_ms.value_or(0), RetentionCutoff(g, now));
    const std::optional<int64_t> hi = req.end_ms;
    struct Cursor {
      std::string name;
      uint64_t id = 0;
      Range range;
      size_t chunk = 8;
      std::vector<Row> rows;
      size_t next = 0;
      bool exhausted = false;
    };
    std::vector<Cursor> cursors;
    auto consider = [&](std::string name, const StreamRecord& s) {
      if (!s.last || *s.last < lo || (hi && s.first && *s.first > *hi)) return;
      Cursor c;
      c.name = std::move(name);
      c.id = s.id;
      int64_t from = lo;
      std::string begin = EventTsBound(g.id, s.id, from);
      if (after) {
        auto [ts, sid, seq] = *after;
        std::string resume = s.id < sid   ? EventTsBound(g.id, s.id, ts + 1)
                             : s.id == sid ? KeySuccessor(EventKey(g.id, s.id, ts, seq))
                                           : EventTsBound(g.id, s.id, ts);
        begin = std::max(begin, resume);
      }
      // endTime is inclusive; at INT64_MAX there is nothing after it to exclude (and +1 would overflow).
      std::string end = hi && *hi < INT64_MAX ? EventTsBound(g.id, s.id, *hi + 1)
                                              : PrefixRange(Key().U64(g.id).U64(s.id).Done()).end;
      c.range = Range{std::move(begin), std::move(end)};
      cursors.push_back(std::move(c));
    };
    if (!req.stream_names.empty()) {
      for (const std::string& name : req.stream_names) {
        ASSIGN_OR_RETURN(auto v, txn.Get(kStreams, StreamKey(scope, g.id, name)));
        if (!v) continue;
        ASSIGN_OR_RETURN(StreamRecord s, DecodeStream(*v));
        consider(name, s);
      }
    } else {
      Range streams = PrefixRange(
          Key().Str(scope.account.str()).Str(scope.region.str()).U64(g.id).StrPrefix(req.stream_prefix.value_or("")).Done());
      for (;;) {
        ASSIGN_OR_RETURN(std::vector<Row> rows, txn.Scan(kStreams, streams, 1000));
        for (const Row& row : rows) {
          KeyReader r(row.key);
          RETURN_IF_ERROR(r.Str().status());
          RETURN_IF_ERROR(r.Str().status());
          RETURN_IF_ERROR(r.U64().status());
          ASSIGN_OR_RETURN(std::string name, r.Str());
          ASSIGN_OR_RETURN(StreamRecord s, DecodeStream(row.value));
          consider(std::move(name), s);
        }
        if (rows.size() < 1000) break;
        streams.begin = KeySuccessor(rows.back().key);
      }
    }
    // A cursor reads its stream in chunks that start small and double up to kMaxChunk, so a group of
    // thousands of streams costs a few rows per stream before the merge, not a full chunk each.
    constexpr size_t kMaxChunk = 256;
    size_t read = 0;  // rows read from the store: what the scan budget counts
    // Refills a cursor whose rows are used up; false when its stream has no more events.
    auto fill = [&](Cursor& c) -> StatusOr<bool> {
      if (c.next < c.rows.size()) return true;
      if (c.exhausted) return false;
      ASSIGN_OR_RETURN(c.rows, txn.Scan(kEvents, c.range, c.chunk));
      read += c.rows.size();
      c.next = 0;
      if (c.rows.size() < c.chunk) c.exhausted = true;
      c.chunk = std::min(kMaxChunk, c.chunk * 2);
      if (!c.rows.empty()) c.range.begin = KeySuccessor(c.rows.back().key);
      return !c.rows.empty();
    };
    using Head = std::tuple<int64_t, uint64_t, uint64_t, size_t>;  // ts, stream id, seq, cursor
    std::priority_queue<Head, std::vector<Head>, std::greater<>> heap;
    auto push = [&](size_t i) -> Status {
      ASSIGN_OR_RETURN(bool has, fill(cursors[i]));
      if (!has) return OkStatus();
      ASSIGN_OR_RETURN(EventRow e, DecodeEvent(cursors[i].rows[cursors[i].next]));
      heap.emplace(e.ts, e.sid, e.seq, i);
      return OkStatus();
    };
    for (size_t i = 0; i < cursors.size(); ++i) RETURN_IF_ERROR(push(i));
    size_t bytes = 0, popped = 0;
    const TimePoint started = clock_.Now();
    bool out_of_time = false;
    while (!heap.empty()) {
      // A page ends at its limit or size, or once it has read its budget of rows or time — but
      // only after at least one event was read, so that every page moves the position on.
      if (page.items.size() >= req.limit || bytes >= kMaxResponseBytes ||
          (popped > 0 && (read >= kFilterScanBudget || out_of_time)))
        break;
      auto [ts, sid, seq, i] = heap.top();
      heap.pop();
      Cursor& c = cursors[i];
      ASSIGN_OR_RETURN(EventRow e, DecodeEvent(c.rows[c.next]));
      ++c.next;
      if (++popped % 1024 == 0) out_of_time = clock_.Now() - started > kFilterTimeBudget;
      page.next = Key().U64(static_cast<uint64_t>(ts)).U64(sid).U64(seq).Done();
      if (filter.Matches(e.message)) {
        bytes += e.message.size() + kEventOverhead;
        page.items.push_back(Event{c.name, e.ts, e.ingestion, std::string(e.message), EventId(e.ts, sid, e.seq)});
      }
      RETURN_IF_ERROR(push(i));
    }
    if (heap.empty()) page.next.reset();  // every stream read to its end: the listing is complete
    return OkStatus();
  }));
  return page;
}

Status LogGroups::TagResource(const Scope& scope, std::string_view arn, const std::vector<Tag>& tags) {
  ASSIGN_OR_RETURN(std::string group, GroupOfArn(scope, arn));
  RETURN_IF_ERROR(ValidateTags(tags));
  return store_.Write([&](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(FindGroup(txn, scope, group).status());
    for (const Tag& t : tags) RETURN_IF_ERROR(txn.Put(kTags, TagKey(scope, group, t.key), t.value));
    ASSIGN_OR_RETURN(std::vector<Row> rows,
                     txn.Scan(kTags, PrefixRange(GroupKey(scope, group)), static_cast<size_t>(kMaxTags) + 1));
    if (rows.size() > static_cast<size_t>(kMaxTags))
      return InvalidArgument(fmt::format("A resource can have at most {} tags.", kMaxTags), Error::kTooManyTags);
    return OkStatus();
  });
}

Status LogGroups::UntagResource(const Scope& scope, std::string_view arn, const std::vector<std::string>& keys) {
  ASSIGN_OR_RETURN(std::string group, GroupOfArn(scope, arn));
  return store_.Write([&](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(FindGroup(txn, scope, group).status());
    for (const std::string& k : keys) RETURN_IF_ERROR(txn.Delete(kTags, TagKey(scope, group, k)));
    return OkStatus();
  });
}

StatusOr<std::vector<Tag>> LogGroups::ListTags(const Scope& scope, std::string_view arn) {
  ASSIGN_OR_RETURN(std::string group, GroupOfArn(scope, arn));
  std::vector<Tag> out;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    RETURN_IF_ERROR(FindGroup(txn, scope, group).status());
    ASSIGN_OR_RETURN(std::vector<Row> rows,
                     txn.Scan(kTags, PrefixRange(GroupKey(scope, group)), static_cast<size_t>(kMaxTags) + 1));
    for (const Row& row : rows) {
      KeyReader r(row.key);
      for (int i = 0; i < 3; ++i) RETURN_IF_ERROR(r.Str().status());
      ASSIGN_OR_RETURN(std::string key, r.Str());
      out.push_back(Tag{std::move(key), row.value});
    }
    return OkStatus();
  }));
  return out;
}

StatusOr<uint64_t> LogGroups::PruneExpired(TimePoint now) {
  RETURN_IF_ERROR(PurgeDeletedGroups());  // what a crash interrupted
  const int64_t now_ms = EpochMillis(now);
  // The (scope, group, cutoff) of groups with a retention, then per stream one write.
  struct Due {
    Scope scope;
    uint64_t gid = 0;
    int64_t cutoff = 0;
  };
  std::vector<Due> due;
  Range groups{"", ""};
  for (;;) {
    std::vector<Row> rows;
    RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(rows, txn.Scan(kGroups, groups, 1000));
      return OkStatus();
    }));
    for (const Row& row : rows) {
      ASSIGN_OR_RETURN(GroupRecord g, DecodeGroup(row.value));
      if (g.retention <= 0) continue;
      KeyReader r(row.key);
      ASSIGN_OR_RETURN(std::string account, r.Str());
      ASSIGN_OR_RETURN(std::string region, r.Str());
      due.push_back(Due{Scope{AccountId(account), Region(region)}, g.id, RetentionCutoff(g, now_ms)});
    }
    if (rows.size() < 1000) break;
    groups.begin = KeySuccessor(rows.back().key);
  }
  uint64_t pruned = 0;
  for (const Due& d : due) {
    std::vector<Row> streams;
    RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(streams, txn.Scan(kStreams, PrefixRange(StreamsPrefix(d.scope, d.gid)), 100000));
      return OkStatus();
    }));
    for (const Row& row : streams) {
      ASSIGN_OR_RETURN(StreamRecord seen, DecodeStream(row.value));
      if (!seen.first || *seen.first >= d.cutoff) continue;
      RETURN_IF_ERROR(store_.Write([&](WriteTxn& txn) -> Status {
        ASSIGN_OR_RETURN(auto v, txn.Get(kStreams, row.key));
        if (!v) return OkStatus();  // deleted meanwhile
        ASSIGN_OR_RETURN(StreamRecord s, DecodeStream(*v));
        const std::string events = Key().U64(d.gid).U64(s.id).Done();
        RETURN_IF_ERROR(txn.DeleteRange(kEvents, Range{events, EventTsBound(d.gid, s.id, d.cutoff)}));
        ASSIGN_OR_RETURN(std::vector<Row> first, txn.Scan(kEvents, PrefixRange(events), 1));
        if (first.empty()) {
          s.first.reset();  // nothing left; lastEventTimestamp stays, as the stream's history
        } else {
          ASSIGN_OR_RETURN(EventRow e, DecodeEvent(first[0]));
          s.first = e.ts;
        }
        return txn.Put(kStreams, row.key, EncodeStream(s));
      }));
      ++pruned;
    }
  }
  return pruned;
}

Status LogGroups::ReapAccount(const AccountId& account) {
  // One transaction per group: a big group's events go in one DeleteRange statement.
  for (;;) {
    bool more = false;
    RETURN_IF_ERROR(store_.Write([&](WriteTxn& txn) -> Status {
      ASSIGN_OR_RETURN(std::vector<Row> rows, txn.Scan(kGroups, PrefixRange(Key().Str(account.str()).Done()), 1));
      if (rows.empty()) return OkStatus();
      more = true;
      KeyReader r(rows[0].key);
      RETURN_IF_ERROR(r.Str().status());
      ASSIGN_OR_RETURN(std::string region, r.Str());
      ASSIGN_OR_RETURN(std::string name, r.Str());
      ASSIGN_OR_RETURN(GroupRecord g, DecodeGroup(rows[0].value));
      return DeleteGroupRows(txn, Scope{account, Region(region)}, name, g.id);
    }));
    if (!more) return PurgeDeletedGroups();
  }
}

}  // namespace paddock::logs
