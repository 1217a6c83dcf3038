#include "logs/api/logs_service.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iterator>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "aws/eventstream.h"
#include "aws/model.h"
#include "common/json_fields.h"
#include "logs/api/models/logs_model.h"
#include "logs/schema.h"
#include "store/sqlite/sqlite_store.h"

namespace paddock::logs::api {
namespace {

namespace json = boost::json;

constexpr std::string_view kActions[] = {
    "CreateLogGroup",     "DeleteLogGroup",     "DescribeLogGroups",   "CreateLogStream",
    "DeleteLogStream",    "DescribeLogStreams", "PutLogEvents",        "GetLogEvents",
    "FilterLogEvents",    "PutRetentionPolicy", "DeleteRetentionPolicy", "TagResource",
    "UntagResource",      "ListTagsForResource", "StartLiveTail",
};

Status Invalid(std::string message) { return InvalidArgument(std::move(message), Error::kInvalidParameter); }

// The group a request names: logGroupName, or logGroupIdentifier (a name or a log-group ARN; an
// ARN of another account or region names no group of the caller's).
StatusOr<std::string> GroupOf(const Scope& scope, const json::object& input) {
  std::optional<std::string> name = json_fields::OptStr(input, "logGroupName");
  std::optional<std::string> id = json_fields::OptStr(input, "logGroupIdentifier");
  if (name && id) return Invalid("LogGroup name and LogGroup ARN are mutually exclusive parameters.");
  if (name) return *name;
  if (!id) return Invalid("Either the log group name or the log group ARN must be specified.");
  if (!id->starts_with("arn:")) return *id;
  const std::string prefix = fmt::format("arn:aws:logs:{}:{}:log-group:", scope.region.str(), scope.account.str());
  if (!id->starts_with(prefix)) return NotFound("The specified log group does not exist.", Error::kResourceNotFound);
  std::string_view rest = std::string_view(*id).substr(prefix.size());
  if (rest.ends_with(":*")) rest.remove_suffix(2);
  return std::string(rest);
}

// For authorization only (never fails): the group named, or "" when none is.
std::string GroupForAuth(const Scope& scope, const json::object& input) {
  auto g = GroupOf(scope, input);
  if (g.ok()) return *g;
  std::string id = json_fields::Str(input, "logGroupIdentifier");
  return id.empty() ? json_fields::Str(input, "logGroupName") : id;
}

std::vector<Tag> TagsOf(const json::object& input) {
  std::vector<Tag> out;
  if (auto tags = json_fields::OptObject(input, "tags"))
    for (const auto& [k, v] : *tags)
      if (v.is_string()) out.push_back(Tag{std::string(k), std::string(v.get_string())});
  return out;
}

json::object GroupJson(const LogGroup& g) {
  json::object o{{"logGroupName", g.name},
                 {"creationTime", g.creation_ms},
                 {"metricFilterCount", 0},
                 {"arn", g.arn + ":*"},
                 {"logGroupArn", g.arn},
                 {"storedBytes", g.stored_bytes},
                 {"logGroupClass", g.log_group_class},
                 {"deletionProtectionEnabled", false}};
  if (g.retention_days > 0) o["retentionInDays"] = g.retention_days;
  if (!g.kms_key_id.empty()) o["kmsKeyId"] = g.kms_key_id;
  return o;
}

json::object StreamJson(const LogStream& s) {
  json::object o{{"logStreamName", s.name},
                 {"creationTime", s.creation_ms},
                 {"arn", s.arn},
                 {"storedBytes", 0}};  // deprecated: AWS reports 0 for streams since 2019
  if (s.first_event_ms) o["firstEventTimestamp"] = *s.first_event_ms;
  if (s.last_event_ms) o["lastEventTimestamp"] = *s.last_event_ms;
  if (s.last_ingestion_ms) o["lastIngestionTime"] = *s.last_ingestion_ms;
  o["uploadSequenceToken"] = fmt::format("{:056}", s.next_sequence);
  return o;
}

// A token's context: the action and everything that shapes its list, so a token is good only for
// the listing that made it.
std::string TokenContext(const aws::CallContext& ctx, const json::object& input) {
  json::object shape = input;
  for (std::string_view k : {"nextToken", "limit", "startFromHead", "interleaved", "unmask"}) shape.erase(k);
  return fmt::format("logs|{}|{}|{}|{}", ctx.action, ctx.scope.account.str(), ctx.scope.region.str(),
                     json::serialize(shape));
}

// StartLiveTail's log groups: ARNs of the caller's scope (AWS asks for ARNs; a bare name is taken as
// one of the caller's groups), without a trailing ":*"; another account's or region's ARN names no
// group of the caller's.
StatusOr<std::vector<LiveTailRequest::Group>> LiveTailGroups(const Scope& scope, const json::object& input) {
  std::vector<LiveTailRequest::Group> out;
  const std::string prefix = fmt::format("arn:aws:logs:{}:{}:log-group:", scope.region.str(), scope.account.str());
  for (const std::string& id : json_fields::Strings(input, "logGroupIdentifiers")) {
    if (id.ends_with("*"))
      return Invalid(fmt::format("The log group identifier {} must not end with '*': give the log group's ARN.", id));
    std::string name = id;
    if (id.starts_with("arn:")) {
      if (!id.starts_with(prefix))
        return NotFound(fmt::format("The specified log group does not exist: {}", id), Error::kResourceNotFound);
      name = id.substr(prefix.size());
    }
    if (std::none_of(out.begin(), out.end(), [&](const auto& g) { return g.name == name; }))
      out.push_back({std::move(name), id});
  }
  return out;
}

// One sessionUpdate's payload.
std::string SessionUpdateJson(const LiveTailBatch& batch) {
  json::array results;
  for (const LiveTailEvent& e : batch.events)
    results.push_back(json::object{{"logStreamName", e.stream},
                                   {"logGroupIdentifier", e.group_identifier},
                                   {"message", e.message},
                                   {"timestamp", e.timestamp_ms},
                                   {"ingestionTime", e.ingestion_ms}});
  return json::serialize(json::object{{"sessionMetadata", json::object{{"sampled", batch.sampled}}},
                                      {"sessionResults", std::move(results)}});
}

}  // namespace

LogsService::LogsService(LogGroups& groups, aws::TokenCodec tokens) : groups_(groups), tokens_(std::move(tokens)) {
  groups_.SetIngestListener([this](const Scope& scope, std::string_view group, const std::vector<Event>& events) {
    live_tail_.OnIngest(scope, group, events);
  });
}

StatusOr<http::BodyProducer> LogsService::CallStream(const aws::CallContext& ctx, json::object& input) {
  LiveTailRequest request;
  ASSIGN_OR_RETURN(request.groups, LiveTailGroups(ctx.scope, input));
  bool names = false, prefixes = false;
  request.stream_names = json_fields::Strings(input, "logStreamNames", &names);
  request.stream_prefixes = json_fields::Strings(input, "logStreamNamePrefixes", &prefixes);
  if (names && prefixes)
    return Invalid("logStreamNames and logStreamNamePrefixes are mutually exclusive parameters.");
  if ((names || prefixes) && json_fields::Strings(input, "logGroupIdentifiers").size() != 1)
    return Invalid("logStreamNames and logStreamNamePrefixes can be given only with exactly one log group.");
  std::optional<std::string> pattern = json_fields::OptStr(input, "logEventFilterPattern");
  ASSIGN_OR_RETURN(request.filter, Filter::Compile(pattern.value_or("")));
  for (const LiveTailRequest::Group& g : request.groups) {
    ASSIGN_OR_RETURN(Page<LogGroup> found, groups_.DescribeGroups(ctx.scope, g.name, 1, std::nullopt));
    if (found.items.empty() || found.items.front().name != g.name)
      return NotFound(fmt::format("The specified log group does not exist: {}", g.identifier), Error::kResourceNotFound);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<LiveTail::Session> opened, live_tail_.Open(ctx.scope, std::move(request)));
  std::shared_ptr<LiveTail::Session> session = std::move(opened);  // a BodyProducer must be copyable

  json::array identifiers;
  for (const auto& g : session->request().groups) identifiers.push_back(json::string(g.identifier));
  json::object start{{"requestId", ctx.request_id},
                     {"sessionId", session->id()},
                     {"logGroupIdentifiers", std::move(identifiers)},
                     {"logEventFilterPattern", pattern.value_or("")}};
  if (names) start["logStreamNames"] = *json_fields::OptArray(input, "logStreamNames");
  if (prefixes) start["logStreamNamePrefixes"] = *json_fields::OptArray(input, "logStreamNamePrefixes");
  const Duration max = live_tail_max_.load();
  return http::BodyProducer([session, start = json::serialize(start), max](http::BodyWriter& w) {
    using steady = std::chrono::steady_clock;
    const steady::time_point end = steady::now() + max;
    if (!w.Write(aws::EncodeEvent("sessionStart", start))) return;
    while (true) {
      const steady::time_point now = steady::now();
      if (now >= end) {
        w.Write(aws::EncodeException(
            "SessionTimeoutException",
            json::serialize(json::object{{"message", fmt::format("The Live Tail session timed out after {} seconds.",
                                                                 std::chrono::duration_cast<std::chrono::seconds>(max).count())}})));
        return;
      }
      LiveTailBatch batch = session->Take(std::min(now + kLiveTailInterval, end));
      if (!w.Write(aws::EncodeEvent("sessionUpdate", SessionUpdateJson(batch)))) return;
    }
  });
}

const aws::ServiceModel& LogsService::Model() const {
  static const aws::ServiceModel* model = [] {
    auto parsed = aws::ServiceModel::Parse(LogsModelJson());
    if (!parsed.ok()) std::abort();  // the embedded model is part of the binary
    return parsed->release();
  }();
  return *model;
}

bool LogsService::Implements(std::string_view action) const {
  return std::find(std::begin(kActions), std::end(kActions), action) != std::end(kActions);
}

std::optional<aws::ThrottleGroup> LogsService::ThrottleGroupFor(std::string_view action) const {
  (void)action;
  return std::nullopt;
}

std::vector<aws::AuthRequest> LogsService::AuthorizationFor(const aws::CallContext& ctx,
                                                            const json::object& input) const {
  const std::string action = "logs:" + ctx.action;
  const std::string group = GroupForAuth(ctx.scope, input);
  std::string resource;
  if (ctx.action == "DescribeLogGroups") {
    resource = LogGroups::StreamArn(ctx.scope, "", "");
  } else if (ctx.action == "StartLiveTail") {
    // One question per log group, as AWS asks (a group of another account is refused later, as not
    // found).
    std::vector<aws::AuthRequest> questions;
    for (const std::string& id : json_fields::Strings(input, "logGroupIdentifiers")) {
      std::string arn = id.starts_with("arn:") ? id : LogGroups::GroupArn(ctx.scope, id);
      if (arn.ends_with(":*")) arn.resize(arn.size() - 2);
      questions.push_back(aws::AuthRequest{action, arn + ":*", {}});
    }
    return questions;
  } else if (ctx.action == "TagResource" || ctx.action == "UntagResource" || ctx.action == "ListTagsForResource") {
    resource = json_fields::Str(input, "resourceArn");
  } else if (ctx.action == "CreateLogStream" || ctx.action == "DeleteLogStream" || ctx.action == "PutLogEvents" ||
             ctx.action == "GetLogEvents") {
    resource = LogGroups::StreamArn(ctx.scope, group, json_fields::StrView(input, "logStreamName"));
  } else {
    resource = LogGroups::StreamArn(ctx.scope, group, "");
  }
  return {aws::AuthRequest{action, std::move(resource), {}}};
}

std::optional<aws::AwsError> LogsService::ErrorFor(const Status& status) const {
  if (std::optional<Error> e = status.detail().As<Error>()) {
    switch (*e) {
      case Error::kInvalidParameter: return aws::AwsError{"InvalidParameterException", 400};
      case Error::kResourceNotFound: return aws::AwsError{"ResourceNotFoundException", 400};
      case Error::kResourceAlreadyExists: return aws::AwsError{"ResourceAlreadyExistsException", 400};
      case Error::kTooManyTags: return aws::AwsError{"TooManyTagsException", 400};
      case Error::kLimitExceeded: return aws::AwsError{"LimitExceededException", 400};
    }
  }
  // The model's own checks (lengths, patterns, required members) carry no detail: CloudWatch Logs
  // answers them InvalidParameterException.
  if (status.code() == StatusCode::kInvalidArgument && status.detail().empty())
    return aws::AwsError{"InvalidParameterException", 400};
  return std::nullopt;
}

StatusOr<std::string> LogsService::Call(const aws::CallContext& ctx, json::object& input) {
  const Scope& scope = ctx.scope;
  const std::string& action = ctx.action;
  auto position = [&](std::string_view token, std::string_view prefix) -> StatusOr<std::string> {
    if (!token.starts_with(prefix)) return Invalid("The specified nextToken is invalid.");
    auto p = tokens_.Decode(TokenContext(ctx, input), token.substr(prefix.size()));
    if (!p.ok()) return Invalid("The specified nextToken is invalid.");
    return *p;
  };
  auto seal = [&](std::string_view prefix, std::string_view pos) {
    return std::string(prefix) + tokens_.Encode(TokenContext(ctx, input), pos);
  };
  auto limit = [&](size_t dflt) { return static_cast<size_t>(json_fields::Int(input, "limit").value_or(static_cast<int64_t>(dflt))); };

  if (action == "CreateLogGroup") {
    GroupSpec spec;
    spec.name = json_fields::Str(input, "logGroupName");
    spec.tags = TagsOf(input);
    spec.kms_key_id = json_fields::Str(input, "kmsKeyId");
    spec.log_group_class = json_fields::Str(input, "logGroupClass");
    RETURN_IF_ERROR(groups_.CreateGroup(scope, spec));
    return std::string("{}");
  }
  if (action == "DeleteLogGroup") {
    RETURN_IF_ERROR(groups_.DeleteGroup(scope, json_fields::Str(input, "logGroupName")));
    return std::string("{}");
  }
  if (action == "DescribeLogGroups") {
    for (std::string_view unsupported : {"accountIdentifiers", "logGroupNamePattern", "logGroupIdentifiers", "logGroupClass"})
      if (input.contains(unsupported))
        return Invalid(fmt::format("The parameter {} is not supported by this server.", unsupported));
    std::optional<std::string> after;
    if (auto t = json_fields::OptStr(input, "nextToken")) {
      ASSIGN_OR_RETURN(after, position(*t, ""));
    }
    ASSIGN_OR_RETURN(Page<LogGroup> page,
                     groups_.DescribeGroups(scope, json_fields::StrView(input, "logGroupNamePrefix"), limit(50), after));
    json::array items;
    for (const LogGroup& g : page.items) items.push_back(GroupJson(g));
    json::object out{{"logGroups", std::move(items)}};
    if (page.next) out["nextToken"] = seal("", *page.next);
    return json::serialize(out);
  }
  if (action == "PutRetentionPolicy") {
    RETURN_IF_ERROR(groups_.PutRetention(scope, json_fields::Str(input, "logGroupName"),
                                         json_fields::Int(input, "retentionInDays").value_or(0)));
    return std::string("{}");
  }
  if (action == "DeleteRetentionPolicy") {
    RETURN_IF_ERROR(groups_.DeleteRetention(scope, json_fields::Str(input, "logGroupName")));
    return std::string("{}");
  }
  if (action == "CreateLogStream") {
    RETURN_IF_ERROR(groups_.CreateStream(scope, json_fields::Str(input, "logGroupName"),
                                         json_fields::Str(input, "logStreamName")));
    return std::string("{}");
  }
  if (action == "DeleteLogStream") {
    RETURN_IF_ERROR(groups_.DeleteStream(scope, json_fields::Str(input, "logGroupName"),
                                         json_fields::Str(input, "logStreamName")));
    return std::string("{}");
  }
  if (action == "DescribeLogStreams") {
    ASSIGN_OR_RETURN(std::string group, GroupOf(scope, input));
    StreamOrder order = json_fields::StrView(input, "orderBy") == "LastEventTime" ? StreamOrder::kLastEventTime
                                                                                  : StreamOrder::kName;
    std::optional<std::string> after;
    if (auto t = json_fields::OptStr(input, "nextToken")) {
      ASSIGN_OR_RETURN(after, position(*t, ""));
    }
    ASSIGN_OR_RETURN(Page<LogStream> page,
                     groups_.DescribeStreams(scope, group, json_fields::StrView(input, "logStreamNamePrefix"), order,
                                             json_fields::Bool(input, "descending").value_or(false), limit(50), after));
    json::array items;
    for (const LogStream& s : page.items) items.push_back(StreamJson(s));
    json::object out{{"logStreams", std::move(items)}};
    if (page.next) out["nextToken"] = seal("", *page.next);
    return json::serialize(out);
  }
  if (action == "PutLogEvents") {
    std::vector<InputEvent> events;
    for (const json::object* e : json_fields::Objects(input, "logEvents"))
      events.push_back(InputEvent{json_fields::Int(*e, "timestamp").value_or(0), json_fields::Str(*e, "message")});
    ASSIGN_OR_RETURN(PutResult put, groups_.Put(scope, json_fields::Str(input, "logGroupName"),
                                                json_fields::Str(input, "logStreamName"), events));
    json::object out{{"nextSequenceToken", put.next_sequence_token}};
    if (put.rejected.any()) {
      json::object r;
      if (put.rejected.too_new_start) r["tooNewLogEventStartIndex"] = *put.rejected.too_new_start;
      if (put.rejected.too_old_end) r["tooOldLogEventEndIndex"] = *put.rejected.too_old_end;
      if (put.rejected.expired_end) r["expiredLogEventEndIndex"] = *put.rejected.expired_end;
      out["rejectedLogEventsInfo"] = std::move(r);
    }
    return json::serialize(out);
  }
  if (action == "GetLogEvents") {
    GetEventsRequest r;
    ASSIGN_OR_RETURN(r.group, GroupOf(scope, input));
    r.stream = json_fields::Str(input, "logStreamName");
    r.start_ms = json_fields::Int(input, "startTime");
    r.end_ms = json_fields::Int(input, "endTime");
    r.limit = limit(10000);
    r.start_from_head = json_fields::Bool(input, "startFromHead").value_or(false);
    if (auto t = json_fields::OptStr(input, "nextToken")) {
      // "f/<sealed position>" or "b/<sealed position>"; the position keeps its own direction.
      if (!t->starts_with("f/") && !t->starts_with("b/")) return Invalid("The specified nextToken is invalid.");
      ASSIGN_OR_RETURN(std::string pos, position(*t, t->substr(0, 2)));
      if (pos.empty() || pos[0] != (*t)[0]) return Invalid("The specified nextToken is invalid.");
      r.token = std::move(pos);
    }
    ASSIGN_OR_RETURN(GetEventsResult got, groups_.GetEvents(scope, r));
    json::array events;
    for (const Event& e : got.events)
      events.push_back(json::object{{"timestamp", e.timestamp_ms}, {"message", e.message}, {"ingestionTime", e.ingestion_ms}});
    return json::serialize(json::object{{"events", std::move(events)},
                                        {"nextForwardToken", seal("f/", got.next_forward)},
                                        {"nextBackwardToken", seal("b/", got.next_backward)}});
  }
  if (action == "FilterLogEvents") {
    FilterEventsRequest r;
    ASSIGN_OR_RETURN(r.group, GroupOf(scope, input));
    r.stream_names = json_fields::Strings(input, "logStreamNames");
    r.stream_prefix = json_fields::OptStr(input, "logStreamNamePrefix");
    r.start_ms = json_fields::Int(input, "startTime");
    r.end_ms = json_fields::Int(input, "endTime");
    r.filter_pattern = json_fields::Str(input, "filterPattern");
    r.limit = limit(10000);
    if (auto t = json_fields::OptStr(input, "nextToken")) {
      ASSIGN_OR_RETURN(r.after, position(*t, ""));
    }
    ASSIGN_OR_RETURN(Page<Event> page, groups_.FilterEvents(scope, r));
    json::array events;
    for (const Event& e : page.items)
      events.push_back(json::object{{"logStreamName", e.stream},
                                    {"timestamp", e.timestamp_ms},
                                    {"message", e.message},
                                    {"ingestionTime", e.ingestion_ms},
                                    {"eventId", e.event_id}});
    // searchedLogStreams: the model says "no longer supported"; AWS answers an empty list.
    json::object out{{"events", std::move(events)}, {"searchedLogStreams", json::array()}};
    if (page.next) out["nextToken"] = seal("", *page.next);
    return json::serialize(out);
  }
  const std::string arn = json_fields::Str(input, "resourceArn");
  if (action == "TagResource") {
    RETURN_IF_ERROR(groups_.TagResource(scope, arn, TagsOf(input)));
    return std::string("{}");
  }
  if (action == "UntagResource") {
    RETURN_IF_ERROR(groups_.UntagResource(scope, arn, json_fields::Strings(input, "tagKeys")));
    return std::string("{}");
  }
  ASSIGN_OR_RETURN(std::vector<Tag> tags, groups_.ListTags(scope, arn));
  json::object map;
  for (const Tag& t : tags) map[t.key] = t.value;
  return json::serialize(json::object{{"tags", std::move(map)}});
}

StatusOr<std::unique_ptr<LogsModule>> LogsModule::Open(const std::string& state_dir, const std::string& token_key,
                                                       const Clock& clock) {
  store::SqliteOptions options;
  options.path = (std::filesystem::path(state_dir) / "logs.db").string();
  options.schemas = {kSchema};
  ASSIGN_OR_RETURN(auto store, store::SqliteStore::Open(options));
  return OpenOn(std::move(store), token_key, clock);
}

StatusOr<std::unique_ptr<LogsModule>> LogsModule::OpenOn(std::unique_ptr<store::Store> store,
                                                         const std::string& token_key, const Clock& clock) {
  std::unique_ptr<LogsModule> m(new LogsModule());
  m->store_ = std::move(store);
  m->groups_ = std::make_unique<LogGroups>(*m->store_, clock);
  m->service_ = std::make_unique<LogsService>(*m->groups_, aws::TokenCodec(token_key));
  return m;
}

Status LogsModule::PruneIfDue(TimePoint now) {
  if (last_prune_ && now - *last_prune_ < kPruneEvery) return OkStatus();
  last_prune_ = now;
  return groups_->PruneExpired(now).status();
}

LogsModule::~LogsModule() {
  if (store_) store_->Close();
}

}  // namespace paddock::logs::api
