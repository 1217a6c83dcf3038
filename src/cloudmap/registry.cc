#include "cloudmap/registry.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <arpa/inet.h>
#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "cloudmap/schema.h"
#include "common/encoding.h"
#include "common/json_fields.h"
#include "store/key.h"

namespace paddock::cloudmap {

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"cloudmap", [](int code) -> std::string_view {
    switch (static_cast<Error>(code)) {
      case Error::kInvalidInput: return "InvalidInput";
      case Error::kNamespaceNotFound: return "NamespaceNotFound";
      case Error::kServiceNotFound: return "ServiceNotFound";
      case Error::kInstanceNotFound: return "InstanceNotFound";
      case Error::kOperationNotFound: return "OperationNotFound";
      case Error::kNamespaceAlreadyExists: return "NamespaceAlreadyExists";
      case Error::kServiceAlreadyExists: return "ServiceAlreadyExists";
      case Error::kResourceInUse: return "ResourceInUse";
      case Error::kResourceLimitExceeded: return "ResourceLimitExceeded";
      case Error::kCustomHealthNotFound: return "CustomHealthNotFound";
      case Error::kResourceNotFound: return "ResourceNotFound";
      case Error::kTooManyTags: return "TooManyTags";
      case Error::kDuplicateRequest: return "DuplicateRequest";
      case Error::kRequestLimitExceeded: return "RequestLimitExceeded";
    }
    return "Unknown";
  }};
  return kDomain;
}

// --- vocabularies ---

std::string_view Format(NamespaceType t) {
  switch (t) {
    case NamespaceType::kDnsPublic: return "DNS_PUBLIC";
    case NamespaceType::kDnsPrivate: return "DNS_PRIVATE";
    case NamespaceType::kHttp: return "HTTP";
  }
  return "HTTP";
}
std::optional<NamespaceType> ParseNamespaceType(std::string_view s) {
  if (s == "DNS_PUBLIC") return NamespaceType::kDnsPublic;
  if (s == "DNS_PRIVATE") return NamespaceType::kDnsPrivate;
  if (s == "HTTP") return NamespaceType::kHttp;
  return std::nullopt;
}
std::string_view Format(RoutingPolicy p) { return p == RoutingPolicy::kWeighted ? "WEIGHTED" : "MULTIVALUE"; }
std::optional<RoutingPolicy> ParseRoutingPolicy(std::string_view s) {
  if (s == "MULTIVALUE") return RoutingPolicy::kMultivalue;
  if (s == "WEIGHTED") return RoutingPolicy::kWeighted;
  return std::nullopt;
}
std::string_view Format(RecordType t) {
  switch (t) {
    case RecordType::kSrv: return "SRV";
    case RecordType::kA: return "A";
    case RecordType::kAaaa: return "AAAA";
    case RecordType::kCname: return "CNAME";
  }
  return "A";
}
std::optional<RecordType> ParseRecordType(std::string_view s) {
  if (s == "SRV") return RecordType::kSrv;
  if (s == "A") return RecordType::kA;
  if (s == "AAAA") return RecordType::kAaaa;
  if (s == "CNAME") return RecordType::kCname;
  return std::nullopt;
}
std::string_view Format(HealthStatus h) {
  switch (h) {
    case HealthStatus::kHealthy: return "HEALTHY";
    case HealthStatus::kUnhealthy: return "UNHEALTHY";
    case HealthStatus::kUnknown: return "UNKNOWN";
  }
  return "UNKNOWN";
}
std::optional<HealthFilter> ParseHealthFilter(std::string_view s) {
  if (s == "HEALTHY") return HealthFilter::kHealthy;
  if (s == "UNHEALTHY") return HealthFilter::kUnhealthy;
  if (s == "ALL") return HealthFilter::kAll;
  if (s == "HEALTHY_OR_ELSE_ALL") return HealthFilter::kHealthyOrElseAll;
  return std::nullopt;
}
std::string_view Format(OperationStatus s) {
  switch (s) {
    case OperationStatus::kSubmitted: return "SUBMITTED";
    case OperationStatus::kPending: return "PENDING";
    case OperationStatus::kSuccess: return "SUCCESS";
    case OperationStatus::kFail: return "FAIL";
  }
  return "SUBMITTED";
}
std::optional<OperationStatus> ParseOperationStatus(std::string_view s) {
  for (auto v : {OperationStatus::kSubmitted, OperationStatus::kPending, OperationStatus::kSuccess,
                 OperationStatus::kFail})
    if (Format(v) == s) return v;
  return std::nullopt;
}
std::string_view Format(OperationType t) {
  switch (t) {
    case OperationType::kCreateNamespace: return "CREATE_NAMESPACE";
    case OperationType::kDeleteNamespace: return "DELETE_NAMESPACE";
    case OperationType::kUpdateNamespace: return "UPDATE_NAMESPACE";
    case OperationType::kUpdateService: return "UPDATE_SERVICE";
    case OperationType::kRegisterInstance: return "REGISTER_INSTANCE";
    case OperationType::kDeregisterInstance: return "DEREGISTER_INSTANCE";
  }
  return "CREATE_NAMESPACE";
}
std::optional<OperationType> ParseOperationType(std::string_view s) {
  for (auto v : {OperationType::kCreateNamespace, OperationType::kDeleteNamespace, OperationType::kUpdateNamespace,
                 OperationType::kUpdateService, OperationType::kRegisterInstance, OperationType::kDeregisterInstance})
    if (Format(v) == s) return v;
  return std::nullopt;
}

namespace {

namespace json = boost::json;
using store::Key;
using store::PrefixRange;
using store::Range;
using store::ReadTxn;
using store::Row;
using store::WriteTxn;

constexpr std::string_view kNamespaces = "cloudmap_namespaces";
constexpr std::string_view kNamespaceNames = "cloudmap_namespace_names";
constexpr std::string_view kServices = "cloudmap_services";
constexpr std::string_view kServiceNames = "cloudmap_service_names";
constexpr std::string_view kInstances = "cloudmap_instances";
constexpr std::string_view kOperations = "cloudmap_operations";
constexpr std::string_view kPending = "cloudmap_pending";
constexpr std::string_view kQueued = "cloudmap_queued";
constexpr std::string_view kFinished = "cloudmap_finished";
constexpr std::string_view kFinishedCount = "cloudmap_finished_count";
constexpr std::string_view kTags = "cloudmap_tags";
constexpr std::string_view kRequests = "cloudmap_requests";

constexpr std::string_view kLower = "abcdefghijklmnopqrstuvwxyz0123456789";

Status Invalid(std::string message) { return InvalidArgument(std::move(message), Error::kInvalidInput); }

Key ScopeKey(const Scope& s) { return std::move(Key().Str(s.account.str()).Str(s.region.str())); }
std::string K1(const Scope& s, std::string_view a) { return ScopeKey(s).Str(a).Done(); }
std::string K2(const Scope& s, std::string_view a, std::string_view b) { return ScopeKey(s).Str(a).Str(b).Done(); }
Range ScopeRange(const Scope& s) { return PrefixRange(ScopeKey(s).Done()); }
// The worker's queue is ordered by acceptance: (sequence, account, region, operation id).
std::string PendingKey(uint64_t seq, const Scope& s, std::string_view op_id) {
  return Key().U64(seq).Str(s.account.str()).Str(s.region.str()).Str(op_id).Done();
}

// --- records ---

json::object TagsJson(const std::vector<Tag>& tags) {
  json::object o;
  for (const Tag& t : tags) o[t.key] = t.value;
  return o;
}
std::vector<Tag> TagsOf(const json::value* v) {
  std::vector<Tag> out;
  if (v && v->is_object())
    for (const auto& [k, val] : v->as_object())
      if (val.is_string()) out.push_back(Tag{std::string(k), std::string(val.as_string())});
  return out;
}

using json_fields::Str;
int64_t Num(const json::object& o, std::string_view k) { return json_fields::Int(o, k).value_or(0); }

StatusOr<json::object> ParseObject(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return DataLoss("cloudmap: a stored record is not a JSON object");
  return std::move(v.as_object());
}

json::object NamespaceJson(const Namespace& n) {
  json::object o{{"id", n.id},     {"arn", n.arn},   {"name", n.name},   {"type", Format(n.type)},
                 {"desc", n.description}, {"vpc", n.vpc}, {"zone", n.hosted_zone_id},
                 {"created", EpochMillis(n.created)}, {"crid", n.creator_request_id}};
  if (n.soa_ttl) o["soa"] = *n.soa_ttl;
  return o;
}
Namespace NamespaceOf(const json::object& o) {
  Namespace n;
  n.id = Str(o, "id");
  n.arn = Str(o, "arn");
  n.name = Str(o, "name");
  n.type = ParseNamespaceType(Str(o, "type")).value_or(NamespaceType::kHttp);
  n.description = Str(o, "desc");
  n.vpc = Str(o, "vpc");
  n.hosted_zone_id = Str(o, "zone");
  n.soa_ttl = json_fields::Int(o, "soa");
  n.created = FromEpochMillis(Num(o, "created"));
  n.creator_request_id = Str(o, "crid");
  return n;
}

json::array RecordsJson(const std::vector<DnsRecord>& records) {
  json::array a;
  for (const DnsRecord& r : records) a.push_back(json::object{{"type", Format(r.type)}, {"ttl", r.ttl}});
  return a;
}
std::vector<DnsRecord> RecordsOf(const json::value* v) {
  std::vector<DnsRecord> out;
  if (v && v->is_array())
    for (const auto& e : v->as_array())
      if (e.is_object())
        out.push_back(DnsRecord{ParseRecordType(Str(e.as_object(), "type")).value_or(RecordType::kA),
                                Num(e.as_object(), "ttl")});
  return out;
}

json::object ServiceJson(const Service& s) {
  json::object o{{"id", s.id},       {"arn", s.arn},
                 {"name", s.name},   {"ns", s.namespace_id},
                 {"desc", s.description}, {"http", s.http_only},
                 {"count", s.instance_count}, {"rev", s.revision},
                 {"created", EpochMillis(s.created)}, {"crid", s.creator_request_id}};
  if (s.dns) {
    o["routing"] = Format(s.dns->routing);
    o["records"] = RecordsJson(s.dns->records);
  }
  if (s.custom_health) o["custom"] = *s.custom_health;
  return o;
}
Service ServiceOf(const json::object& o) {
  Service s;
  s.id = Str(o, "id");
  s.arn = Str(o, "arn");
  s.name = Str(o, "name");
  s.namespace_id = Str(o, "ns");
  s.description = Str(o, "desc");
  s.http_only = json_fields::Bool(o, "http").value_or(false);
  s.instance_count = Num(o, "count");
  s.revision = Num(o, "rev");
  s.created = FromEpochMillis(Num(o, "created"));
  s.creator_request_id = Str(o, "crid");
  if (o.contains("routing"))
    s.dns = DnsConfig{ParseRoutingPolicy(Str(o, "routing")).value_or(RoutingPolicy::kMultivalue),
                      RecordsOf(o.if_contains("records"))};
  if (auto c = json_fields::Int(o, "custom")) s.custom_health = static_cast<int>(*c);
  return s;
}

json::object InstanceJson(const Instance& i) {
  json::object attrs;
  for (const auto& [k, v] : i.attributes) attrs[k] = v;
  return json::object{{"id", i.id}, {"svc", i.service_id}, {"attrs", std::move(attrs)},
                      {"crid", i.creator_request_id}, {"health", Format(i.health)}};
}
Instance InstanceOf(const json::object& o) {
  Instance i;
  i.id = Str(o, "id");
  i.service_id = Str(o, "svc");
  if (const json::value* a = o.if_contains("attrs"); a && a->is_object())
    for (const auto& [k, v] : a->as_object())
      if (v.is_string()) i.attributes[std::string(k)] = std::string(v.as_string());
  i.creator_request_id = Str(o, "crid");
  const std::string h = Str(o, "health");
  i.health = h == "HEALTHY" ? HealthStatus::kHealthy : h == "UNHEALTHY" ? HealthStatus::kUnhealthy : HealthStatus::kUnknown;
  return i;
}

// An operation's stored row: what readers see plus its work ("work", a JSON object).
json::object OperationJson(const Operation& op, const json::object& work) {
  json::object targets;
  for (const auto& [k, v] : op.targets) targets[k] = v;
  return json::object{{"id", op.id},
                      {"type", Format(op.type)},
                      {"status", Format(op.status)},
                      {"code", op.error_code},
                      {"message", op.error_message},
                      {"created", EpochMillis(op.created)},
                      {"updated", EpochMillis(op.updated)},
                      {"targets", std::move(targets)},
                      {"work", work}};
}
Operation OperationOf(const json::object& o) {
  Operation op;
  op.id = Str(o, "id");
  op.type = ParseOperationType(Str(o, "type")).value_or(OperationType::kCreateNamespace);
  op.status = ParseOperationStatus(Str(o, "status")).value_or(OperationStatus::kSubmitted);
  op.error_code = Str(o, "code");
  op.error_message = Str(o, "message");
  op.created = FromEpochMillis(Num(o, "created"));
  op.updated = FromEpochMillis(Num(o, "updated"));
  if (const json::value* t = o.if_contains("targets"); t && t->is_object())
    for (const auto& [k, v] : t->as_object())
      if (v.is_string()) op.targets[std::string(k)] = std::string(v.as_string());
  return op;
}

// --- reads inside a transaction ---

StatusOr<std::optional<json::object>> ReadJson(ReadTxn& txn, std::string_view table, const std::string& key) {
  ASSIGN_OR_RETURN(auto raw, txn.Get(table, key));
  if (!raw) return std::optional<json::object>();
  ASSIGN_OR_RETURN(json::object o, ParseObject(*raw));
  return std::optional<json::object>(std::move(o));
}

Status NamespaceNotFound(std::string_view id) {
  return NotFound(fmt::format("Namespace not found: {}", id), Error::kNamespaceNotFound);
}
Status ServiceNotFound(std::string_view id) {
  return NotFound(fmt::format("Service not found: {}", id), Error::kServiceNotFound);
}
Status InstanceNotFound(std::string_view id) {
  return NotFound(fmt::format("Instance not found: {}", id), Error::kInstanceNotFound);
}

// `id` or an ARN of this scope naming a namespace/service: the bare id ("" when it names another
// scope's resource, which then is not found).
std::string IdOf(const Scope& s, std::string_view id_or_arn, std::string_view kind) {
  if (!id_or_arn.starts_with("arn:")) return std::string(id_or_arn);
  const std::string prefix =
      fmt::format("arn:aws:servicediscovery:{}:{}:{}/", s.region.str(), s.account.str(), kind);
  if (!id_or_arn.starts_with(prefix)) return "";
  return std::string(id_or_arn.substr(prefix.size()));
}

StatusOr<Namespace> ReadNamespace(ReadTxn& txn, const Scope& s, std::string_view id_or_arn) {
  const std::string id = IdOf(s, id_or_arn, "namespace");
  if (id.empty()) return NamespaceNotFound(id_or_arn);
  ASSIGN_OR_RETURN(auto o, ReadJson(txn, kNamespaces, K1(s, id)));
  if (!o) return NamespaceNotFound(id_or_arn);
  return NamespaceOf(*o);
}

StatusOr<Service> ReadService(ReadTxn& txn, const Scope& s, std::string_view id_or_arn) {
  const std::string id = IdOf(s, id_or_arn, "service");
  if (id.empty()) return ServiceNotFound(id_or_arn);
  ASSIGN_OR_RETURN(auto o, ReadJson(txn, kServices, K1(s, id)));
  if (!o) return ServiceNotFound(id_or_arn);
  return ServiceOf(*o);
}

StatusOr<int64_t> CountRows(ReadTxn& txn, std::string_view table, const Range& r, size_t cap) {
  ASSIGN_OR_RETURN(auto rows, txn.Scan(table, r, cap));
  return static_cast<int64_t>(rows.size());
}

StatusOr<int64_t> ServiceCount(ReadTxn& txn, const Scope& s, std::string_view ns_id) {
  return CountRows(txn, kServiceNames, PrefixRange(K1(s, ns_id)), Registry::kMaxServicesPerNamespace + 1);
}

Status PutService(WriteTxn& txn, const Scope& s, const Service& svc) {
  return txn.Put(kServices, K1(s, svc.id), json::serialize(ServiceJson(svc)));
}

// --- validation ---

bool DnsLabelChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// A private DNS namespace's name: dot-separated labels of 1-63 [A-Za-z0-9_-], not starting or
// ending with '-'; a trailing dot is allowed (as AWS's pattern allows).
bool ValidDnsName(std::string_view name) {
  if (name.ends_with('.')) name.remove_suffix(1);
  if (name.empty() || name.size() > 253) return false;
  size_t start = 0;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    std::string_view label = name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    if (!std::all_of(label.begin(), label.end(), DnsLabelChar)) return false;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

// AWS_INSTANCE_CNAME: a domain name of letters, digits and hyphens (AWS: 1-255 characters; here
// at most 253 without the final dot, the most a DNS message can carry, since the server answers it).
bool ValidCnameTarget(std::string_view name) {
  return name.find('_') == std::string_view::npos && ValidDnsName(name);
}

// The model's patterns, which the front does not run: AWS's text for a pattern failure [verify].
Status PatternError(std::string_view member, std::string_view value, std::string_view pattern) {
  return Invalid(fmt::format("1 validation error detected: Value '{}' at '{}' failed to satisfy constraint: Member "
                             "must satisfy regular expression pattern: {}",
                             value, member, pattern));
}

// InstanceId: ^[0-9a-zA-Z_/:.@-]+$, at most 64.
bool ValidInstanceId(std::string_view id) {
  return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '/' ||
           c == ':' || c == '.' || c == '@' || c == '-';
  });
}

// ServiceName: "." or dot-separated labels of [a-zA-Z0-9_-] not starting or ending with '-', at
// most 63 each and 127 in all.
bool ValidServiceName(std::string_view name) {
  if (name == ".") return true;
  if (name.empty() || name.size() > 127 || name.ends_with('.')) return false;
  return ValidDnsName(name);
}

// A namespace name: printable ASCII without spaces ([!-~]), not starting "arn:".
bool ValidNamespaceName(std::string_view name) {
  return !name.empty() && name.size() <= 1024 && !name.starts_with("arn:") &&
         std::all_of(name.begin(), name.end(), [](char c) { return c >= '!' && c <= '~'; });
}

bool ValidIpv4(const std::string& s) {
  in_addr a{};
  return inet_pton(AF_INET, s.c_str(), &a) == 1;
}
bool ValidIpv6(const std::string& s) {
  in6_addr a{};
  return inet_pton(AF_INET6, s.c_str(), &a) == 1;
}

// AWS's DnsConfig rules (CreateService's and UpdateService's documentation).
Status CheckRecords(const std::vector<DnsRecord>& records, RoutingPolicy routing) {
  if (records.empty()) return Invalid("DnsConfig.DnsRecords must contain at least one record.");
  std::set<RecordType> seen;
  for (const DnsRecord& r : records)
    if (!seen.insert(r.type).second)
      return Invalid(fmt::format("DnsConfig.DnsRecords contains a duplicate record type: {}.", Format(r.type)));
  if (seen.contains(RecordType::kCname)) {
    if (seen.size() > 1) return Invalid("A CNAME record can't be combined with other record types in DnsConfig.DnsRecords.");
    if (routing != RoutingPolicy::kWeighted)
      return Invalid("RoutingPolicy must be WEIGHTED when DnsConfig.DnsRecords contains a CNAME record.");
  }
  return OkStatus();
}

}  // namespace

// --- Registry ---

Registry::Registry(store::Store& store, const Clock& clock, IdSource ids)
    : store_(store), clock_(clock), ids_(std::move(ids)) {
  if (!ids_)
    ids_ = [](std::string_view prefix) -> std::string {
      if (prefix == "op") return RandomString(32, kLower) + "-" + RandomString(8, kLower);
      if (prefix == "Z") return "Z" + RandomString(20, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
      return std::string(prefix) + RandomString(16, kLower);
    };
}

std::string Registry::NamespaceArn(const Scope& scope, std::string_view id) {
  return fmt::format("arn:aws:servicediscovery:{}:{}:namespace/{}", scope.region.str(), scope.account.str(), id);
}
std::string Registry::ServiceArn(const Scope& scope, std::string_view id) {
  return fmt::format("arn:aws:servicediscovery:{}:{}:service/{}", scope.region.str(), scope.account.str(), id);
}

Status Registry::WriteAndNote(const std::function<Status(WriteTxn&)>& fn) {
  Status s = store_.Write(fn);
  if (s.ok()) NoteChanged();
  return s;
}

StatusOr<std::string> Registry::Submit(const Scope& scope, OperationType type,
                                       std::map<std::string, std::string> targets, std::string work,
                                       const std::function<Status(WriteTxn&)>& also, const std::string& retry_key) {
  Operation op;
  op.id = ids_("op");
  op.type = type;
  op.status = OperationStatus::kSubmitted;
  op.created = op.updated = clock_.Now();
  op.targets = std::move(targets);
  ASSIGN_OR_RETURN(json::object w, ParseObject(work));
  std::optional<std::string> earlier;  // the operation a retried request made
  RETURN_IF_ERROR(store_.Write([&](WriteTxn& txn) -> Status {
    if (!retry_key.empty()) {
      ASSIGN_OR_RETURN(earlier, txn.Get(kRequests, retry_key));
      if (earlier) return OkStatus();
      RETURN_IF_ERROR(txn.Put(kRequests, retry_key, op.id));
    }
    ASSIGN_OR_RETURN(int64_t queued,
                     CountRows(txn, kQueued, ScopeRange(scope), static_cast<size_t>(kMaxQueuedOperations)));
    if (queued >= kMaxQueuedOperations)
      return ResourceExhausted(
          "The operation can't be completed because you've reached the quota for the number of requests.",
          Error::kRequestLimitExceeded);
    RETURN_IF_ERROR(also(txn));
    json::object row = OperationJson(op, w);
    // The request's retry record goes when the operation does (Retire): hex, a store key.
    if (!retry_key.empty()) row["retry"] = HexEncode(retry_key);
    RETURN_IF_ERROR(txn.Put(kOperations, K1(scope, op.id), json::serialize(row)));
    RETURN_IF_ERROR(txn.Put(kQueued, K1(scope, op.id), ""));
    // Queued after every queued operation: the worker runs them in the order they were accepted
    // (a register and a deregister of one instance in the same millisecond keep their order).
    ASSIGN_OR_RETURN(auto last, txn.Scan(kPending, Range{}, 1, store::Direction::kBackward));
    uint64_t seq = 1;
    if (!last.empty()) {
      store::KeyReader reader(last[0].key);
      ASSIGN_OR_RETURN(uint64_t previous, reader.U64());
      seq = previous + 1;
    }
    return txn.Put(kPending, PendingKey(seq, scope, op.id), "");
  }));
  if (earlier) return *earlier;
  if (on_submit_) on_submit_();
  return op.id;
}

StatusOr<std::string> Registry::CreateNamespace(const Scope& scope, const CreateNamespaceRequest& r,
                                                std::string_view default_vpc) {
  if (r.type == NamespaceType::kDnsPublic)
    return Invalid("Public DNS namespaces are not supported by this server: Paddock serves no public DNS. "
                   "Use CreatePrivateDnsNamespace or CreateHttpNamespace.");
  if (!ValidNamespaceName(r.name)) return PatternError("name", r.name, "^(?!arn:)[!-~]{1,1024}$");
  if (r.type == NamespaceType::kDnsPrivate) {
    if (!ValidDnsName(r.name)) return Invalid(fmt::format("Namespace name is not a valid DNS name: {}", r.name));
    if (r.vpc != default_vpc) return Invalid(fmt::format("VPC {} does not exist in this account and region.", r.vpc));
  }
  if (r.tags.size() > kMaxTags)
    return InvalidArgument(fmt::format("A resource can have at most {} tags.", kMaxTags), Error::kTooManyTags);
  Namespace n;
  n.id = ids_("ns-");
  n.arn = NamespaceArn(scope, n.id);
  n.name = r.name;
  if (n.name.size() > 1 && n.name.ends_with('.')) n.name.pop_back();
  n.type = r.type;
  n.description = r.description;
  if (r.type == NamespaceType::kDnsPrivate) {
    n.vpc = r.vpc;
    n.soa_ttl = r.soa_ttl.value_or(15);  // AWS's default SOA TTL (the console's) [verify]
    n.hosted_zone_id = ids_("Z");
  }
  n.created = clock_.Now();
  n.creator_request_id = r.creator_request_id;
  json::object work{{"namespace", NamespaceJson(n)}, {"tags", TagsJson(r.tags)}};
  return Submit(scope, OperationType::kCreateNamespace, {{"NAMESPACE", n.id}}, json::serialize(work),
                [&](WriteTxn& txn) -> Status {
                  ASSIGN_OR_RETURN(auto taken, txn.Get(kNamespaceNames, K1(scope, n.name)));
                  if (taken)
                    return AlreadyExists(fmt::format("Namespace with name {} already exists.", n.name),
                                         Error::kNamespaceAlreadyExists);
                  ASSIGN_OR_RETURN(int64_t count,
                                   CountRows(txn, kNamespaceNames, ScopeRange(scope), kMaxNamespaces + 1));
                  if (count >= kMaxNamespaces)
                    return ResourceExhausted(
                        fmt::format("The number of namespaces exceeds the quota of {}.", kMaxNamespaces),
                        Error::kResourceLimitExceeded);
                  return txn.Put(kNamespaceNames, K1(scope, n.name), n.id);
                },
                r.creator_request_id.empty() ? "" : K2(scope, "namespace", r.creator_request_id));
}

StatusOr<std::string> Registry::UpdateNamespace(const Scope& scope, const UpdateNamespaceRequest& r) {
  std::string id;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Namespace n, ReadNamespace(txn, scope, r.id));
    if (n.type != r.expected_type)
      return Invalid(fmt::format("Namespace {} is of type {}, not {}.", n.id, Format(n.type), Format(r.expected_type)));
    id = n.id;
    return OkStatus();
  }));
  json::object work{{"namespace", id}};
  if (r.description) work["desc"] = *r.description;
  if (r.soa_ttl) work["soa"] = *r.soa_ttl;
  return Submit(scope, OperationType::kUpdateNamespace, {{"NAMESPACE", id}}, json::serialize(work),
                [](WriteTxn&) { return OkStatus(); });
}

StatusOr<std::string> Registry::DeleteNamespace(const Scope& scope, std::string_view id_or_arn) {
  std::string id;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Namespace n, ReadNamespace(txn, scope, id_or_arn));
    ASSIGN_OR_RETURN(int64_t services, ServiceCount(txn, scope, n.id));
    if (services > 0)
      return FailedPrecondition(fmt::format("Namespace {} contains services and can't be deleted.", n.id),
                                Error::kResourceInUse);
    id = n.id;
    return OkStatus();
  }));
  return Submit(scope, OperationType::kDeleteNamespace, {{"NAMESPACE", id}},
                json::serialize(json::object{{"namespace", id}}), [](WriteTxn&) { return OkStatus(); });
}

StatusOr<Namespace> Registry::GetNamespace(const Scope& scope, std::string_view id) {
  Namespace out;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(out, ReadNamespace(txn, scope, id));
    ASSIGN_OR_RETURN(out.service_count, ServiceCount(txn, scope, out.id));
    return OkStatus();
  }));
  return out;
}

namespace {

// Checks a list's filters against the names and conditions it takes.
Status CheckFilters(const std::vector<Filter>& filters,
                    const std::map<std::string, std::set<std::string>>& allowed) {
  for (const Filter& f : filters) {
    auto it = allowed.find(f.name);
    if (it == allowed.end()) return Invalid(fmt::format("Filter name {} is not supported by this list.", f.name));
    const std::string cond = f.condition.empty() ? "EQ" : f.condition;
    if (!it->second.contains(cond))
      return Invalid(fmt::format("Condition {} is not supported for filter {}.", cond, f.name));
    if (f.values.empty()) return Invalid(fmt::format("Filter {} needs at least one value.", f.name));
    if ((cond == "EQ" || cond == "BEGINS_WITH") && f.values.size() != 1)
      return Invalid(fmt::format("Filter {} with condition {} takes exactly one value.", f.name, cond));
    if (cond == "BETWEEN" && f.values.size() != 2)
      return Invalid(fmt::format("Filter {} with condition BETWEEN takes exactly two values.", f.name));
  }
  return OkStatus();
}

bool MatchValue(const Filter& f, std::string_view value) {
  const std::string cond = f.condition.empty() ? "EQ" : f.condition;
  if (cond == "BEGINS_WITH") return value.starts_with(f.values[0]);
  return std::find(f.values.begin(), f.values.end(), value) != f.values.end();
}

// Scans `table`'s rows of `scope` in key order from `after` (a previous page's last id), keeping
// those `keep` accepts, at most `max`.
template <typename T>
Status ScanPage(ReadTxn& txn, std::string_view table, const Range& whole, const std::optional<std::string>& after_key,
                size_t max, const std::function<StatusOr<std::optional<T>>(const Row&)>& keep,
                const std::function<std::string(const T&)>& position, Page<T>& page) {
  Range r = whole;
  if (after_key) r.begin = std::max(r.begin, store::KeySuccessor(*after_key));
  constexpr size_t kChunk = 256;
  for (;;) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(table, r, kChunk));
    for (const Row& row : rows) {
      ASSIGN_OR_RETURN(std::optional<T> item, keep(row));
      if (!item) continue;
      if (page.items.size() == max) {
        page.next = position(page.items.back());
        return OkStatus();
      }
      page.items.push_back(std::move(*item));
    }
    if (rows.size() < kChunk) return OkStatus();
    r.begin = store::KeySuccessor(rows.back().key);
  }
}

}  // namespace

StatusOr<Page<Namespace>> Registry::ListNamespaces(const Scope& scope, const std::vector<Filter>& filters, size_t max,
                                                   const std::optional<std::string>& after) {
  RETURN_IF_ERROR(CheckFilters(filters, {{"TYPE", {"EQ", "IN"}},
                                         {"NAME", {"EQ", "BEGINS_WITH"}},
                                         {"HTTP_NAME", {"EQ", "BEGINS_WITH"}},
                                         {"RESOURCE_OWNER", {"EQ"}}}));
  Page<Namespace> page;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    std::function<StatusOr<std::optional<Namespace>>(const Row&)> keep =
        [&](const Row& row) -> StatusOr<std::optional<Namespace>> {
      ASSIGN_OR_RETURN(json::object o, ParseObject(row.value));
      Namespace n = NamespaceOf(o);
      for (const Filter& f : filters) {
        // RESOURCE_OWNER: SELF is this account; nothing is shared with it (OTHER_ACCOUNTS lists none).
        const std::string v = f.name == "TYPE"             ? std::string(Format(n.type))
                              : f.name == "RESOURCE_OWNER" ? std::string("SELF")
                                                           : n.name;
        if (!MatchValue(f, v)) return std::optional<Namespace>();
      }
      ASSIGN_OR_RETURN(n.service_count, ServiceCount(txn, scope, n.id));
      return std::optional<Namespace>(std::move(n));
    };
    std::optional<std::string> after_key;
    if (after) after_key = K1(scope, *after);
    return ScanPage<Namespace>(txn, kNamespaces, ScopeRange(scope), after_key, max, keep,
                               [](const Namespace& n) { return n.id; }, page);
  }));
  return page;
}

StatusOr<Service> Registry::CreateService(const Scope& scope, const CreateServiceRequest& r) {
  if (r.route53_health_check)
    return Invalid("HealthCheckConfig (Route 53 health checks) applies to public DNS namespaces, which this server "
                   "does not serve; use HealthCheckCustomConfig.");
  if (r.namespace_id.empty()) return Invalid("NamespaceId is required.");
  if (!ValidServiceName(r.name))
    return PatternError("name", r.name,
                        "((?=^.{1,127}$)^([a-zA-Z0-9_][a-zA-Z0-9-_]{0,61}[a-zA-Z0-9_]|[a-zA-Z0-9])(\\.([a-zA-Z0-9_][a-zA-Z0-9-_]{0,61}"
                        "[a-zA-Z0-9_]|[a-zA-Z0-9]))*$)|(^\\.$)");
  Service s;
  s.id = ids_("srv-");
  s.arn = ServiceArn(scope, s.id);
  s.name = r.name;
  s.description = r.description;
  s.dns = r.dns;
  s.custom_health = r.custom_health;
  s.http_only = r.http_only;
  s.created = clock_.Now();
  s.creator_request_id = r.creator_request_id;
  if (r.tags.size() > kMaxTags)
    return InvalidArgument(fmt::format("A resource can have at most {} tags.", kMaxTags), Error::kTooManyTags);
  const std::string retry_key = r.creator_request_id.empty() ? "" : K2(scope, "service", r.creator_request_id);
  RETURN_IF_ERROR(WriteAndNote([&](WriteTxn& txn) -> Status {
    if (!retry_key.empty()) {
      // A retry answers the service the request made, while it exists.
      ASSIGN_OR_RETURN(auto earlier, txn.Get(kRequests, retry_key));
      if (earlier) {
        ASSIGN_OR_RETURN(auto o, ReadJson(txn, kServices, K1(scope, *earlier)));
        if (o) {
          s = ServiceOf(*o);
          return OkStatus();
        }
      }
      RETURN_IF_ERROR(txn.Put(kRequests, retry_key, s.id));
    }
    ASSIGN_OR_RETURN(Namespace n, ReadNamespace(txn, scope, r.namespace_id));
    s.namespace_id = n.id;
    if (n.type == NamespaceType::kHttp) {
      if (s.dns) return Invalid("DnsConfig can't be specified for a service in an HTTP namespace.");
      s.http_only = true;
    } else if (s.dns) {
      if (s.http_only) return Invalid("A service of type HTTP can't have a DnsConfig.");
      RETURN_IF_ERROR(CheckRecords(s.dns->records, s.dns->routing));
    } else {
      s.http_only = true;  // a DNS namespace's service without DnsConfig is discoverable by API only
    }
    const std::string name_key = K2(scope, n.id, s.name);
    ASSIGN_OR_RETURN(auto existing, txn.Get(kServiceNames, name_key));
    if (existing)
      return AlreadyExists(fmt::format("Service already exists: {}", *existing), Error::kServiceAlreadyExists);
    ASSIGN_OR_RETURN(int64_t count, ServiceCount(txn, scope, n.id));
    if (count >= kMaxServicesPerNamespace)
      return ResourceExhausted(fmt::format("The number of services in namespace {} exceeds the quota of {}.", n.id,
                                           kMaxServicesPerNamespace),
                               Error::kResourceLimitExceeded);
    RETURN_IF_ERROR(txn.Put(kServiceNames, name_key, s.id));
    for (const Tag& t : r.tags) RETURN_IF_ERROR(txn.Put(kTags, K2(scope, s.arn, t.key), t.value));
    return PutService(txn, scope, s);
  }));
  return s;
}

StatusOr<Service> Registry::GetService(const Scope& scope, std::string_view id) {
  Service out;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(out, ReadService(txn, scope, id));
    return OkStatus();
  }));
  return out;
}

StatusOr<Page<Service>> Registry::ListServices(const Scope& scope, const std::vector<Filter>& filters, size_t max,
                                               const std::optional<std::string>& after) {
  RETURN_IF_ERROR(CheckFilters(filters, {{"NAMESPACE_ID", {"EQ", "IN"}}, {"RESOURCE_OWNER", {"EQ"}}}));
  for (const Filter& f : filters)
    if (f.name == "NAMESPACE_ID" && f.values.size() != 1)
      return Invalid("Filter NAMESPACE_ID takes exactly one value.");
  Page<Service> page;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    std::function<StatusOr<std::optional<Service>>(const Row&)> keep =
        [&](const Row& row) -> StatusOr<std::optional<Service>> {
      ASSIGN_OR_RETURN(json::object o, ParseObject(row.value));
      Service s = ServiceOf(o);
      for (const Filter& f : filters)
        if (!MatchValue(f, f.name == "NAMESPACE_ID" ? s.namespace_id : std::string("SELF")))
          return std::optional<Service>();
      return std::optional<Service>(std::move(s));
    };
    std::optional<std::string> after_key;
    if (after) after_key = K1(scope, *after);
    return ScanPage<Service>(txn, kServices, ScopeRange(scope), after_key, max, keep,
                             [](const Service& s) { return s.id; }, page);
  }));
  return page;
}

StatusOr<std::string> Registry::UpdateService(const Scope& scope, const UpdateServiceRequest& r) {
  if (r.route53_health_check)
    return Invalid("HealthCheckConfig (Route 53 health checks) applies to public DNS namespaces, which this server "
                   "does not serve.");
  std::string id;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Service s, ReadService(txn, scope, r.id));
    if (r.records) {
      if (!s.dns) return Invalid("DnsConfig can't be updated on a service that has none.");
      // The record types are fixed when the service is created; only TTLs change (AWS's rule).
      std::vector<RecordType> before, after;
      for (const auto& d : s.dns->records) before.push_back(d.type);
      for (const auto& d : *r.records) after.push_back(d.type);
      std::sort(before.begin(), before.end());
      std::sort(after.begin(), after.end());
      if (before != after) return Invalid("DnsConfig.DnsRecords may change only TTLs: the record types are fixed.");
      RETURN_IF_ERROR(CheckRecords(*r.records, s.dns->routing));
    }
    id = s.id;
    return OkStatus();
  }));
  json::object work{{"service", id}};
  if (r.description) work["desc"] = *r.description;
  if (r.records) work["records"] = RecordsJson(*r.records);
  return Submit(scope, OperationType::kUpdateService, {{"SERVICE", id}}, json::serialize(work),
                [](WriteTxn&) { return OkStatus(); });
}

Status Registry::DeleteService(const Scope& scope, std::string_view id) {
  return WriteAndNote([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Service s, ReadService(txn, scope, id));
    ASSIGN_OR_RETURN(int64_t n, CountRows(txn, kInstances, PrefixRange(K1(scope, s.id)), 1));
    if (n > 0)
      return FailedPrecondition(fmt::format("Service {} contains registered instances; deregister them first.", s.id),
                                Error::kResourceInUse);
    RETURN_IF_ERROR(txn.Delete(kServiceNames, K2(scope, s.namespace_id, s.name)));
    RETURN_IF_ERROR(txn.DeleteRange(kTags, PrefixRange(K1(scope, s.arn))));
    if (!s.creator_request_id.empty()) {  // the request that made it is forgotten with it
      const std::string retry_key = K2(scope, "service", s.creator_request_id);
      ASSIGN_OR_RETURN(auto made, txn.Get(kRequests, retry_key));
      if (made && *made == s.id) RETURN_IF_ERROR(txn.Delete(kRequests, retry_key));
    }
    return txn.Delete(kServices, K1(scope, s.id));
  });
}

namespace {

// AWS's RegisterInstance attribute rules for service `s`.
Status CheckAttributes(const Service& s, const std::map<std::string, std::string>& attrs) {
  if (attrs.size() > 30) return Invalid("An instance can have at most 30 attributes.");
  size_t total = 0;
  for (const auto& [k, v] : attrs) total += k.size() + v.size();
  if (total > 5000) return Invalid("The total size of an instance's attributes can't exceed 5,000 characters.");
  auto has = [&](std::string_view k) { return attrs.contains(std::string(k)); };
  std::set<RecordType> types;
  if (s.dns)
    for (const auto& r : s.dns->records) types.insert(r.type);
  if (has("AWS_INSTANCE_IPV4") && !ValidIpv4(attrs.at("AWS_INSTANCE_IPV4")))
    return Invalid(fmt::format("AWS_INSTANCE_IPV4 is not a valid IPv4 address: {}", attrs.at("AWS_INSTANCE_IPV4")));
  if (has("AWS_INSTANCE_IPV6") && !ValidIpv6(attrs.at("AWS_INSTANCE_IPV6")))
    return Invalid(fmt::format("AWS_INSTANCE_IPV6 is not a valid IPv6 address: {}", attrs.at("AWS_INSTANCE_IPV6")));
  if (has("AWS_INSTANCE_PORT")) {
    const std::string& p = attrs.at("AWS_INSTANCE_PORT");
    const bool digits = !p.empty() && p.size() <= 5 && std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoi(p) < 1 || std::stoi(p) > 65535)
      return Invalid(fmt::format("AWS_INSTANCE_PORT must be a port number from 1 to 65535: {}", p));
  }
  if (types.contains(RecordType::kA) && !has("AWS_INSTANCE_IPV4"))
    return Invalid("AWS_INSTANCE_IPV4 is required: the service has an A record.");
  if (types.contains(RecordType::kAaaa) && !has("AWS_INSTANCE_IPV6"))
    return Invalid("AWS_INSTANCE_IPV6 is required: the service has an AAAA record.");
  if (types.contains(RecordType::kSrv)) {
    if (!has("AWS_INSTANCE_PORT")) return Invalid("AWS_INSTANCE_PORT is required: the service has an SRV record.");
    if (!has("AWS_INSTANCE_IPV4") && !has("AWS_INSTANCE_IPV6"))
      return Invalid("AWS_INSTANCE_IPV4 or AWS_INSTANCE_IPV6 is required: the service has an SRV record.");
  }
  if (types.contains(RecordType::kCname) && !has("AWS_INSTANCE_CNAME"))
    return Invalid("AWS_INSTANCE_CNAME is required: the service has a CNAME record.");
  if (has("AWS_INSTANCE_CNAME") && !types.contains(RecordType::kCname))
    return Invalid("AWS_INSTANCE_CNAME can be specified only for a service with a CNAME record.");
  if (has("AWS_INSTANCE_CNAME") && !ValidCnameTarget(attrs.at("AWS_INSTANCE_CNAME")))
    return Invalid(fmt::format("AWS_INSTANCE_CNAME must be a domain name (letters, digits, hyphens and dots; at most 253 "
                               "characters without a final dot): {}",
                               attrs.at("AWS_INSTANCE_CNAME")));
  if (has("AWS_INIT_HEALTH_STATUS")) {
    if (!s.custom_health)
      return Invalid("AWS_INIT_HEALTH_STATUS can be specified only for a service with HealthCheckCustomConfig.");
    const std::string& h = attrs.at("AWS_INIT_HEALTH_STATUS");
    if (h != "HEALTHY" && h != "UNHEALTHY") return Invalid("AWS_INIT_HEALTH_STATUS must be HEALTHY or UNHEALTHY.");
  }
  if (has("AWS_ALIAS_DNS_NAME"))
    return Invalid("AWS_ALIAS_DNS_NAME (an Elastic Load Balancing alias) is not supported by this server.");
  return OkStatus();
}

}  // namespace

StatusOr<std::string> Registry::RegisterInstance(const Scope& scope, const RegisterRequest& r) {
  if (!ValidInstanceId(r.instance_id)) return PatternError("instanceId", r.instance_id, "^[0-9a-zA-Z_/:.@-]+$");
  std::string id;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Service s, ReadService(txn, scope, r.service_id));
    RETURN_IF_ERROR(CheckAttributes(s, r.attributes));
    ASSIGN_OR_RETURN(auto existing, txn.Get(kInstances, K2(scope, s.id, r.instance_id)));
    if (!existing && s.instance_count >= kMaxInstancesPerService)
      return ResourceExhausted(fmt::format("The number of instances of service {} exceeds the quota of {}.", s.id,
                                           kMaxInstancesPerService),
                               Error::kResourceLimitExceeded);
    id = s.id;
    return OkStatus();
  }));
  json::object attrs;
  for (const auto& [k, v] : r.attributes) attrs[k] = v;
  json::object work{{"service", id}, {"instance", r.instance_id}, {"attrs", std::move(attrs)},
                    {"crid", r.creator_request_id}};
  return Submit(scope, OperationType::kRegisterInstance, {{"SERVICE", id}, {"INSTANCE", r.instance_id}},
                json::serialize(work), [](WriteTxn&) { return OkStatus(); },
                r.creator_request_id.empty() ? "" : K2(scope, "instance/" + id, r.creator_request_id));
}

StatusOr<std::string> Registry::DeregisterInstance(const Scope& scope, std::string_view service_id,
                                                   std::string_view instance_id) {
  std::string id;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Service s, ReadService(txn, scope, service_id));
    ASSIGN_OR_RETURN(auto existing, txn.Get(kInstances, K2(scope, s.id, instance_id)));
    if (!existing) return InstanceNotFound(instance_id);
    id = s.id;
    return OkStatus();
  }));
  return Submit(scope, OperationType::kDeregisterInstance, {{"SERVICE", id}, {"INSTANCE", std::string(instance_id)}},
                json::serialize(json::object{{"service", id}, {"instance", instance_id}}),
                [](WriteTxn&) { return OkStatus(); });
}

StatusOr<Instance> Registry::GetInstance(const Scope& scope, std::string_view service_id,
                                         std::string_view instance_id) {
  Instance out;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Service s, ReadService(txn, scope, service_id));
    ASSIGN_OR_RETURN(auto o, ReadJson(txn, kInstances, K2(scope, s.id, instance_id)));
    if (!o) return InstanceNotFound(instance_id);
    out = InstanceOf(*o);
    return OkStatus();
  }));
  return out;
}

StatusOr<Page<Instance>> Registry::ListInstances(const Scope& scope, std::string_view service_id, size_t max,
                                                 const std::optional<std::string>& after) {
  return HealthOf(scope, service_id, {}, max, after);
}

StatusOr<Page<Instance>> Registry::HealthOf(const Scope& scope, std::string_view service_id,
                                            const std::vector<std::string>& ids, size_t max,
                                            const std::optional<std::string>& after) {
  Page<Instance> page;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Service s, ReadService(txn, scope, service_id));
    if (!ids.empty()) {
      std::vector<std::string> sorted = ids;
      std::sort(sorted.begin(), sorted.end());
      sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
      for (const std::string& id : sorted) {
        if (after && id <= *after) continue;
        ASSIGN_OR_RETURN(auto o, ReadJson(txn, kInstances, K2(scope, s.id, id)));
        if (!o) return InstanceNotFound(id);
        if (page.items.size() == max) {
          page.next = page.items.back().id;
          return OkStatus();
        }
        page.items.push_back(InstanceOf(*o));
      }
      return OkStatus();
    }
    std::function<StatusOr<std::optional<Instance>>(const Row&)> keep =
        [](const Row& row) -> StatusOr<std::optional<Instance>> {
      ASSIGN_OR_RETURN(json::object o, ParseObject(row.value));
      return std::optional<Instance>(InstanceOf(o));
    };
    std::optional<std::string> after_key;
    if (after) after_key = K2(scope, s.id, *after);
    return ScanPage<Instance>(txn, kInstances, PrefixRange(K1(scope, s.id)), after_key, max, keep,
                              [](const Instance& i) { return i.id; }, page);
  }));
  return page;
}

Status Registry::SetCustomHealth(const Scope& scope, std::string_view service_id, std::string_view instance_id,
                                 bool healthy) {
  return WriteAndNote([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Service s, ReadService(txn, scope, service_id));
    const std::string key = K2(scope, s.id, instance_id);
    ASSIGN_OR_RETURN(auto o, ReadJson(txn, kInstances, key));
    if (!o) return InstanceNotFound(instance_id);
    if (!s.custom_health)
      return NotFound(fmt::format("Service {} has no custom health check (HealthCheckCustomConfig).", s.id),
                      Error::kCustomHealthNotFound);
    Instance i = InstanceOf(*o);
    const HealthStatus h = healthy ? HealthStatus::kHealthy : HealthStatus::kUnhealthy;
    if (i.health == h) return OkStatus();
    i.health = h;
    ++s.revision;
    RETURN_IF_ERROR(PutService(txn, scope, s));
    return txn.Put(kInstances, key, json::serialize(InstanceJson(i)));
  });
}

namespace {

// Whether instance `i` passes every query parameter.
bool MatchesAll(const Instance& i, const std::map<std::string, std::string>& params) {
  for (const auto& [k, v] : params) {
    auto it = i.attributes.find(k);
    if (it == i.attributes.end() || it->second != v) return false;
  }
  return true;
}

}  // namespace

bool DnsNamesEqual(std::string_view a, std::string_view b) {
  if (a.size() > 1 && a.ends_with('.')) a.remove_suffix(1);
  if (b.size() > 1 && b.ends_with('.')) b.remove_suffix(1);
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

namespace {

StatusOr<std::optional<Namespace>> NamespaceByName(ReadTxn& txn, const Scope& s, std::string_view name) {
  std::string_view n = name;
  if (n.size() > 1 && n.ends_with('.')) n.remove_suffix(1);
  ASSIGN_OR_RETURN(auto id, txn.Get(kNamespaceNames, K1(s, n)));
  if (!id) return std::optional<Namespace>();
  ASSIGN_OR_RETURN(auto o, ReadJson(txn, kNamespaces, K1(s, *id)));
  if (!o) return std::optional<Namespace>();  // reserved by a create not yet applied
  return std::optional<Namespace>(NamespaceOf(*o));
}

StatusOr<std::vector<Instance>> AllInstances(ReadTxn& txn, const Scope& s, std::string_view service_id) {
  std::vector<Instance> out;
  ASSIGN_OR_RETURN(auto rows, txn.Scan(kInstances, PrefixRange(K1(s, service_id)),
                                       static_cast<size_t>(Registry::kMaxInstancesPerService) + 1));
  for (const Row& row : rows) {
    ASSIGN_OR_RETURN(json::object o, ParseObject(row.value));
    out.push_back(InstanceOf(o));
  }
  return out;
}

}  // namespace

StatusOr<Discovered> Registry::Discover(const Scope& scope, const DiscoverRequest& r) {
  Discovered out;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto n, NamespaceByName(txn, scope, r.namespace_name));
    if (!n) return NamespaceNotFound(r.namespace_name);
    ASSIGN_OR_RETURN(auto sid, txn.Get(kServiceNames, K2(scope, n->id, r.service_name)));
    if (!sid) return ServiceNotFound(r.service_name);
    ASSIGN_OR_RETURN(Service s, ReadService(txn, scope, *sid));
    ASSIGN_OR_RETURN(std::vector<Instance> all, AllInstances(txn, scope, s.id));
    std::vector<Instance> picked;
    for (Instance& i : all)
      if (MatchesAll(i, r.query)) picked.push_back(std::move(i));
    if (!r.optional.empty()) {
      std::vector<Instance> narrowed;
      for (const Instance& i : picked)
        if (MatchesAll(i, r.optional)) narrowed.push_back(i);
      if (!narrowed.empty()) picked = std::move(narrowed);
    }
    // The health filter applies only to a service with a health check (AWS ignores it otherwise).
    if (s.custom_health) {
      auto only = [&](HealthStatus h) {
        std::vector<Instance> v;
        for (const Instance& i : picked)
          if (i.health == h) v.push_back(i);
        return v;
      };
      switch (r.health) {
        case HealthFilter::kHealthy: picked = only(HealthStatus::kHealthy); break;
        case HealthFilter::kUnhealthy: picked = only(HealthStatus::kUnhealthy); break;
        case HealthFilter::kAll: break;
        case HealthFilter::kHealthyOrElseAll: {
          auto healthy = only(HealthStatus::kHealthy);
          if (!healthy.empty()) picked = std::move(healthy);
          break;
        }
      }
    }
    if (picked.size() > r.max_results) picked.resize(r.max_results);
    out.instances = std::move(picked);
    out.namespace_name = n->name;
    out.service_name = s.name;
    out.revision = s.revision;
    return OkStatus();
  }));
  return out;
}

StatusOr<DnsAnswer> Registry::ResolveDns(const Scope& scope, std::string_view vpc, std::string_view namespace_name,
                                         std::string_view service_name) {
  DnsAnswer out;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto n, NamespaceByName(txn, scope, namespace_name));
    // DNS names ignore case (the server asks in lowercase): a namespace or service named with
    // capitals is found by a scan of the scope's (at most 50) namespaces and the namespace's (at
    // most 100) services when the exact name misses.
    if (!n || n->type != NamespaceType::kDnsPrivate || n->vpc != vpc) {
      n.reset();
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kNamespaceNames, ScopeRange(scope), static_cast<size_t>(kMaxNamespaces) + 1));
      for (const Row& row : rows) {
        ASSIGN_OR_RETURN(auto o, ReadJson(txn, kNamespaces, K1(scope, row.value)));
        if (!o) continue;
        Namespace c = NamespaceOf(*o);
        if (c.type == NamespaceType::kDnsPrivate && c.vpc == vpc && DnsNamesEqual(c.name, namespace_name)) {
          n = std::move(c);
          break;
        }
      }
    }
    if (!n) return NamespaceNotFound(namespace_name);
    ASSIGN_OR_RETURN(auto sid, txn.Get(kServiceNames, K2(scope, n->id, service_name)));
    if (!sid) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kServiceNames, PrefixRange(K1(scope, n->id)),
                                           static_cast<size_t>(kMaxServicesPerNamespace) + 1));
      for (const Row& row : rows) {
        ASSIGN_OR_RETURN(Service candidate, ReadService(txn, scope, row.value));
        if (DnsNamesEqual(candidate.name, service_name)) {
          sid = row.value;
          break;
        }
      }
    }
    if (!sid) return ServiceNotFound(service_name);
    ASSIGN_OR_RETURN(out.service, ReadService(txn, scope, *sid));
    if (!out.service.dns) return ServiceNotFound(service_name);  // API-only: no DNS records
    ASSIGN_OR_RETURN(std::vector<Instance> all, AllInstances(txn, scope, out.service.id));
    for (Instance& i : all)
      if (!out.service.custom_health || i.health == HealthStatus::kHealthy) out.instances.push_back(std::move(i));
    out.namespace_id = n->id;
    out.vpc = n->vpc;
    return OkStatus();
  }));
  return out;
}

StatusOr<std::vector<DnsZone>> Registry::DnsZones(const Scope& scope, std::string_view vpc) {
  std::vector<DnsZone> out;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    out.clear();
    ASSIGN_OR_RETURN(auto names, txn.Scan(kNamespaceNames, ScopeRange(scope), static_cast<size_t>(kMaxNamespaces) + 1));
    for (const Row& name : names) {
      ASSIGN_OR_RETURN(auto o, ReadJson(txn, kNamespaces, K1(scope, name.value)));
      if (!o) continue;  // reserved by a create not yet applied
      Namespace n = NamespaceOf(*o);
      if (n.type != NamespaceType::kDnsPrivate || n.vpc != vpc) continue;
      DnsZone zone{n.name, {}};
      ASSIGN_OR_RETURN(auto services, txn.Scan(kServiceNames, PrefixRange(K1(scope, n.id)),
                                               static_cast<size_t>(kMaxServicesPerNamespace) + 1));
      for (const Row& row : services) {
        store::KeyReader reader(row.key);
        for (int i = 0; i < 3; ++i) RETURN_IF_ERROR(reader.Str().status());  // account, region, namespace id
        ASSIGN_OR_RETURN(std::string service, reader.Str());
        zone.services.push_back(std::move(service));
      }
      out.push_back(std::move(zone));
    }
    return OkStatus();
  }));
  return out;
}

StatusOr<std::optional<std::vector<std::string>>> Registry::ServiceArnsIn(const Scope& scope, std::string_view ns) {
  std::optional<std::vector<std::string>> out;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    std::optional<Namespace> n;
    if (ns.starts_with("arn:")) {
      auto by_arn = ReadNamespace(txn, scope, ns);
      if (by_arn.ok()) n = std::move(*by_arn);
      else if (by_arn.status().detail() != Error::kNamespaceNotFound) return by_arn.status();
    } else {
      ASSIGN_OR_RETURN(n, NamespaceByName(txn, scope, ns));
    }
    if (!n) return OkStatus();
    out.emplace();
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kServiceNames, PrefixRange(K1(scope, n->id)), kMaxServicesPerNamespace + 1));
    for (const Row& row : rows) out->push_back(ServiceArn(scope, row.value));
    return OkStatus();
  }));
  return out;
}

StatusOr<Operation> Registry::GetOperation(const Scope& scope, std::string_view id) {
  Operation out;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto o, ReadJson(txn, kOperations, K1(scope, id)));
    if (!o) return NotFound(fmt::format("Operation not found: {}", id), Error::kOperationNotFound);
    out = OperationOf(*o);
    return OkStatus();
  }));
  return out;
}

StatusOr<Page<Operation>> Registry::ListOperations(const Scope& scope, const std::vector<Filter>& filters, size_t max,
                                                   const std::optional<std::string>& after) {
  RETURN_IF_ERROR(CheckFilters(filters, {{"NAMESPACE_ID", {"EQ"}},
                                         {"SERVICE_ID", {"EQ"}},
                                         {"STATUS", {"EQ", "IN"}},
                                         {"TYPE", {"EQ", "IN"}},
                                         {"UPDATE_DATE", {"BETWEEN"}}}));
  std::vector<std::pair<double, double>> windows;
  for (const Filter& f : filters)
    if (f.name == "UPDATE_DATE") {
      char* end = nullptr;
      const double from = std::strtod(f.values[0].c_str(), &end);
      if (end == f.values[0].c_str() || *end) return Invalid("UPDATE_DATE values must be epoch seconds.");
      const double to = std::strtod(f.values[1].c_str(), &end);
      if (end == f.values[1].c_str() || *end) return Invalid("UPDATE_DATE values must be epoch seconds.");
      windows.emplace_back(from, to);
    }
  Page<Operation> page;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    std::function<StatusOr<std::optional<Operation>>(const Row&)> keep =
        [&](const Row& row) -> StatusOr<std::optional<Operation>> {
      ASSIGN_OR_RETURN(json::object o, ParseObject(row.value));
      Operation op = OperationOf(o);
      for (const Filter& f : filters) {
        bool ok = true;
        if (f.name == "NAMESPACE_ID") ok = op.targets.contains("NAMESPACE") && MatchValue(f, op.targets["NAMESPACE"]);
        if (f.name == "SERVICE_ID") ok = op.targets.contains("SERVICE") && MatchValue(f, op.targets["SERVICE"]);
        if (f.name == "STATUS") ok = MatchValue(f, Format(op.status));
        if (f.name == "TYPE") ok = MatchValue(f, Format(op.type));
        if (!ok) return std::optional<Operation>();
      }
      for (const auto& [from, to] : windows) {
        const double t = EpochSeconds(op.updated);
        if (t < from || t > to) return std::optional<Operation>();
      }
      return std::optional<Operation>(std::move(op));
    };
    std::optional<std::string> after_key;
    if (after) after_key = K1(scope, *after);
    return ScanPage<Operation>(txn, kOperations, ScopeRange(scope), after_key, max, keep,
                               [](const Operation& o) { return o.id; }, page);
  }));
  return page;
}

namespace {

// RegisterInstance's work: instance `i` (id, attributes, request id) of service `service` (an id or
// this scope's ARN), checked again against the service as it is now, updated in place if present.
Status ApplyRegister(WriteTxn& txn, const Scope& s, std::string_view service, Instance i) {
  ASSIGN_OR_RETURN(Service svc, ReadService(txn, s, service));
  i.service_id = svc.id;
  RETURN_IF_ERROR(CheckAttributes(svc, i.attributes));
  const std::string key = K2(s, svc.id, i.id);
  ASSIGN_OR_RETURN(auto existing, txn.Get(kInstances, key));
  if (!existing) {
    if (svc.instance_count >= Registry::kMaxInstancesPerService)
      return ResourceExhausted("The number of instances exceeds the quota.", Error::kResourceLimitExceeded);
    ++svc.instance_count;
  }
  if (svc.custom_health) {
    auto init = i.attributes.find("AWS_INIT_HEALTH_STATUS");
    i.health = init != i.attributes.end() && init->second == "UNHEALTHY" ? HealthStatus::kUnhealthy
                                                                         : HealthStatus::kHealthy;
  }
  ++svc.revision;
  RETURN_IF_ERROR(PutService(txn, s, svc));
  return txn.Put(kInstances, key, json::serialize(InstanceJson(i)));
}

// DeregisterInstance's work; kInstanceNotFound when it is not there.
Status ApplyDeregister(WriteTxn& txn, const Scope& s, std::string_view service, std::string_view instance_id) {
  ASSIGN_OR_RETURN(Service svc, ReadService(txn, s, service));
  const std::string key = K2(s, svc.id, instance_id);
  ASSIGN_OR_RETURN(auto existing, txn.Get(kInstances, key));
  if (!existing) return InstanceNotFound(instance_id);
  svc.instance_count = std::max<int64_t>(0, svc.instance_count - 1);
  ++svc.revision;
  RETURN_IF_ERROR(PutService(txn, s, svc));
  return txn.Delete(kInstances, key);
}

// Applies a queued operation's work inside `txn`. A failure is the operation's FAIL (its error
// detail names the ErrorCode), with nothing of the work written.
Status Apply(WriteTxn& txn, const Scope& s, OperationType type, const json::object& w) {
  switch (type) {
    case OperationType::kCreateNamespace: {
      const json::value* nv = w.if_contains("namespace");
      if (!nv || !nv->is_object()) return DataLoss("cloudmap: a CREATE_NAMESPACE without its namespace");
      Namespace n = NamespaceOf(nv->as_object());
      RETURN_IF_ERROR(txn.Put(kNamespaces, K1(s, n.id), json::serialize(nv->as_object())));
      for (const Tag& t : TagsOf(w.if_contains("tags"))) RETURN_IF_ERROR(txn.Put(kTags, K2(s, n.arn, t.key), t.value));
      return OkStatus();
    }
    case OperationType::kUpdateNamespace: {
      ASSIGN_OR_RETURN(Namespace n, ReadNamespace(txn, s, Str(w, "namespace")));
      if (w.contains("desc")) n.description = Str(w, "desc");
      if (auto soa = json_fields::Int(w, "soa")) n.soa_ttl = *soa;
      return txn.Put(kNamespaces, K1(s, n.id), json::serialize(NamespaceJson(n)));
    }
    case OperationType::kDeleteNamespace: {
      ASSIGN_OR_RETURN(Namespace n, ReadNamespace(txn, s, Str(w, "namespace")));
      ASSIGN_OR_RETURN(int64_t services, ServiceCount(txn, s, n.id));
      if (services > 0)
        return FailedPrecondition(fmt::format("Namespace {} contains services and can't be deleted.", n.id),
                                  Error::kResourceInUse);
      RETURN_IF_ERROR(txn.Delete(kNamespaceNames, K1(s, n.name)));
      RETURN_IF_ERROR(txn.DeleteRange(kTags, PrefixRange(K1(s, n.arn))));
      return txn.Delete(kNamespaces, K1(s, n.id));
    }
    case OperationType::kUpdateService: {
      ASSIGN_OR_RETURN(Service svc, ReadService(txn, s, Str(w, "service")));
      if (w.contains("desc")) svc.description = Str(w, "desc");
      if (w.contains("records") && svc.dns) svc.dns->records = RecordsOf(w.if_contains("records"));
      return PutService(txn, s, svc);
    }
    case OperationType::kRegisterInstance: {
      Instance i;
      i.id = Str(w, "instance");
      i.creator_request_id = Str(w, "crid");
      if (const json::value* a = w.if_contains("attrs"); a && a->is_object())
        for (const auto& [k, v] : a->as_object())
          if (v.is_string()) i.attributes[std::string(k)] = std::string(v.as_string());
      return ApplyRegister(txn, s, Str(w, "service"), std::move(i));
    }
    case OperationType::kDeregisterInstance:
      return ApplyDeregister(txn, s, Str(w, "service"), Str(w, "instance"));
  }
  return Internal("cloudmap: unknown operation type");
}

}  // namespace

Status Registry::RegisterIn(WriteTxn& txn, const Scope& scope, std::string_view service,
                            std::string_view instance_id, const std::map<std::string, std::string>& attributes) {
  if (!ValidInstanceId(instance_id)) return PatternError("instanceId", instance_id, "^[0-9a-zA-Z_/:.@-]+$");
  Instance i;
  i.id = std::string(instance_id);
  i.attributes = attributes;
  return ApplyRegister(txn, scope, service, std::move(i));
}

Status Registry::DeregisterIn(WriteTxn& txn, const Scope& scope, std::string_view service,
                              std::string_view instance_id) {
  Status s = ApplyDeregister(txn, scope, service, instance_id);
  if (IsError(s, Error::kServiceNotFound) || IsError(s, Error::kInstanceNotFound)) return OkStatus();
  return s;
}

namespace {

// The operation leaves the worker's queue and its scope's count.
Status Dequeue(WriteTxn& txn, const Scope& scope, std::string_view op_id, const std::string& pending_key) {
  RETURN_IF_ERROR(txn.Delete(kPending, pending_key));
  return txn.Delete(kQueued, K1(scope, op_id));
}

// Operation `op_id` finished (SUCCESS or FAIL) at `now_ms`: it joins the scope's finished ones
// (counted in cloudmap_finished_count), of which the oldest go while there are more than `max`
// or they are older than kFinishedRetention — at most three per finish, each finish paying for
// its own with a few keyed reads (no scan of the scope's finished operations).
Status Retire(WriteTxn& txn, const Scope& scope, std::string_view op_id, int64_t now_ms, size_t max) {
  RETURN_IF_ERROR(txn.Put(kFinished, ScopeKey(scope).U64(static_cast<uint64_t>(now_ms)).Str(op_id).Done(), ""));
  const std::string count_key = ScopeKey(scope).Done();
  ASSIGN_OR_RETURN(auto stored, txn.Get(kFinishedCount, count_key));
  size_t count = 1;
  if (stored) {
    auto [end, ec] = std::from_chars(stored->data(), stored->data() + stored->size(), count);
    if (ec != std::errc() || end != stored->data() + stored->size()) return DataLoss("cloudmap: a bad finished count");
    ++count;
  }
  ASSIGN_OR_RETURN(auto oldest, txn.Scan(kFinished, ScopeRange(scope), 3));
  const int64_t cutoff =
      now_ms - std::chrono::duration_cast<std::chrono::milliseconds>(Registry::kFinishedRetention).count();
  for (const Row& row : oldest) {
    store::KeyReader reader(row.key);
    for (int k = 0; k < 2; ++k) RETURN_IF_ERROR(reader.Str().status());  // account, region
    ASSIGN_OR_RETURN(uint64_t finished_ms, reader.U64());
    ASSIGN_OR_RETURN(std::string id, reader.Str());
    if (count <= max && static_cast<int64_t>(finished_ms) >= cutoff) break;
    ASSIGN_OR_RETURN(auto purged, ReadJson(txn, kOperations, K1(scope, id)));
    if (purged && !Str(*purged, "retry").empty()) {  // its CreatorRequestId is forgotten with it
      ASSIGN_OR_RETURN(std::string retry_key, HexDecode(Str(*purged, "retry")));
      ASSIGN_OR_RETURN(auto made, txn.Get(kRequests, retry_key));
      if (made && *made == id) RETURN_IF_ERROR(txn.Delete(kRequests, retry_key));
    }
    RETURN_IF_ERROR(txn.Delete(kOperations, K1(scope, id)));
    RETURN_IF_ERROR(txn.Delete(kFinished, row.key));
    --count;
  }
  return txn.Put(kFinishedCount, count_key, std::to_string(count));
}

}  // namespace

Status Registry::Advance(const Scope& scope, const std::string& op_id, const std::string& pending_key) {
  const std::string key = K1(scope, op_id);
  // SUBMITTED -> PENDING, in its own transaction: a reader can see the work under way.
  std::optional<json::object> row;
  RETURN_IF_ERROR(store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(row, ReadJson(txn, kOperations, key));
    if (!row) return Dequeue(txn, scope, op_id, pending_key);
    Operation op = OperationOf(*row);
    if (op.status != OperationStatus::kSubmitted) return OkStatus();
    (*row)["status"] = Format(OperationStatus::kPending);
    (*row)["updated"] = EpochMillis(clock_.Now());
    return txn.Put(kOperations, key, json::serialize(*row));
  }));
  if (!row) return OkStatus();
  const Operation op = OperationOf(*row);
  const json::value* wv = row->if_contains("work");
  const json::object work = wv && wv->is_object() ? wv->as_object() : json::object();
  bool mine = true;  // whether this pass is the one that applies it (another may run concurrently)
  Status applied = WriteAndNote([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto now, ReadJson(txn, kOperations, key));
    mine = now && OperationOf(*now).status == OperationStatus::kPending;
    if (!mine) return OkStatus();
    RETURN_IF_ERROR(Apply(txn, scope, op.type, work));
    json::object done = *row;
    done.erase("work");  // done: only what GetOperation shows is kept
    done["status"] = Format(OperationStatus::kSuccess);
    done["updated"] = EpochMillis(clock_.Now());
    RETURN_IF_ERROR(txn.Put(kOperations, key, json::serialize(done)));
    RETURN_IF_ERROR(Retire(txn, scope, op_id, EpochMillis(clock_.Now()), max_finished_));
    return Dequeue(txn, scope, op_id, pending_key);
  });
  if (applied.ok() || !mine) return applied;
  // The work failed: FAIL with the reason, nothing of it applied. A failure of the store itself
  // (no typed detail) leaves the operation PENDING for the next pass.
  std::optional<Error> e = applied.detail().As<Error>();
  if (!e) return applied;
  return store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto now, ReadJson(txn, kOperations, key));
    if (!now || OperationOf(*now).status != OperationStatus::kPending) return OkStatus();
    json::object failed = *row;
    failed["status"] = Format(OperationStatus::kFail);
    failed["updated"] = EpochMillis(clock_.Now());
    failed["code"] = ErrorDomainOf(*e).code_name(static_cast<int>(*e));
    failed["message"] = applied.message();
    if (op.type == OperationType::kCreateNamespace) {
      // The name reserved at submit is free again.
      const json::value* nv = work.if_contains("namespace");
      if (nv && nv->is_object()) RETURN_IF_ERROR(txn.Delete(kNamespaceNames, K1(scope, Str(nv->as_object(), "name"))));
    }
    failed.erase("work");
    RETURN_IF_ERROR(txn.Put(kOperations, key, json::serialize(failed)));
    RETURN_IF_ERROR(Retire(txn, scope, op_id, EpochMillis(clock_.Now()), max_finished_));
    return Dequeue(txn, scope, op_id, pending_key);
  });
}

Status Registry::RunPending(const std::function<bool()>& stop) {
  // In acceptance order (the queue's key order), in chunks: what is queued meanwhile waits for the
  // next pass, which the submit that queued it asks for.
  Range range;
  constexpr size_t kChunk = 1000;
  for (;;) {
    std::vector<std::tuple<Scope, std::string, std::string>> queued;  // (scope, op id, queue key)
    RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
      queued.clear();
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kPending, range, kChunk));
      for (const Row& row : rows) {
        store::KeyReader reader(row.key);
        RETURN_IF_ERROR(reader.U64().status());
        ASSIGN_OR_RETURN(std::string account, reader.Str());
        ASSIGN_OR_RETURN(std::string region, reader.Str());
        ASSIGN_OR_RETURN(std::string id, reader.Str());
        queued.emplace_back(Scope{AccountId(account), Region(region)}, id, row.key);
      }
      return OkStatus();
    }));
    for (const auto& [scope, id, key] : queued) {
      if (stop && stop()) return OkStatus();
      // Stuck here (the store failed): later operations wait, in order, for the next pass.
      RETURN_IF_ERROR(Advance(scope, id, key));
    }
    if (queued.size() < kChunk) return OkStatus();
    range.begin = store::KeySuccessor(std::get<2>(queued.back()));
  }
}

Status Registry::TagResource(const Scope& scope, std::string_view arn, const std::vector<Tag>& tags) {
  return store_.Write([&](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(ListTagsIn(txn, scope, arn).status());
    for (const Tag& t : tags) RETURN_IF_ERROR(txn.Put(kTags, K2(scope, arn, t.key), t.value));
    ASSIGN_OR_RETURN(int64_t n, CountRows(txn, kTags, PrefixRange(K1(scope, arn)), kMaxTags + 1));
    if (n > static_cast<int64_t>(kMaxTags))
      return InvalidArgument(fmt::format("A resource can have at most {} tags.", kMaxTags), Error::kTooManyTags);
    return OkStatus();
  });
}

Status Registry::UntagResource(const Scope& scope, std::string_view arn, const std::vector<std::string>& keys) {
  return store_.Write([&](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(ListTagsIn(txn, scope, arn).status());
    for (const auto& k : keys) RETURN_IF_ERROR(txn.Delete(kTags, K2(scope, arn, k)));
    return OkStatus();
  });
}

StatusOr<std::vector<Tag>> Registry::ListTags(const Scope& scope, std::string_view arn) {
  std::vector<Tag> out;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(out, ListTagsIn(txn, scope, arn));
    return OkStatus();
  }));
  return out;
}

StatusOr<std::vector<Tag>> Registry::ListTagsIn(ReadTxn& txn, const Scope& scope, std::string_view arn) {
  // Only this scope's namespaces and services carry tags here.
  const std::string ns_prefix = NamespaceArn(scope, "");
  const std::string svc_prefix = ServiceArn(scope, "");
  bool exists = false;
  if (arn.starts_with(ns_prefix)) {
    ASSIGN_OR_RETURN(auto o, txn.Get(kNamespaces, K1(scope, arn.substr(ns_prefix.size()))));
    exists = o.has_value();
  } else if (arn.starts_with(svc_prefix)) {
    ASSIGN_OR_RETURN(auto o, txn.Get(kServices, K1(scope, arn.substr(svc_prefix.size()))));
    exists = o.has_value();
  }
  if (!exists) return NotFound(fmt::format("Resource not found: {}", arn), Error::kResourceNotFound);
  std::vector<Tag> out;
  ASSIGN_OR_RETURN(auto rows, txn.Scan(kTags, PrefixRange(K1(scope, arn)), kMaxTags + 1));
  for (const Row& row : rows) {
    store::KeyReader reader(row.key);
    for (int i = 0; i < 3; ++i) RETURN_IF_ERROR(reader.Str().status());
    ASSIGN_OR_RETURN(std::string key, reader.Str());
    out.push_back(Tag{std::move(key), row.value});
  }
  return out;
}

Status Registry::ReapAccount(const AccountId& account) {
  const Range all = PrefixRange(Key().Str(account.str()).Done());
  return WriteAndNote([&](WriteTxn& txn) -> Status {
    for (std::string_view table :
         {kNamespaces, kNamespaceNames, kServices, kServiceNames, kInstances, kOperations, kQueued, kFinished,
          kFinishedCount, kTags, kRequests})
      RETURN_IF_ERROR(txn.DeleteRange(table, all));
    // The queue is keyed by sequence first: its rows of `account` are found by reading it.
    Range queue;
    for (;;) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kPending, queue, 1000));
      for (const Row& row : rows) {
        store::KeyReader reader(row.key);
        RETURN_IF_ERROR(reader.U64().status());
        ASSIGN_OR_RETURN(std::string owner, reader.Str());
        if (owner == account.str()) RETURN_IF_ERROR(txn.Delete(kPending, row.key));
      }
      if (rows.size() < 1000) break;
      queue.begin = store::KeySuccessor(rows.back().key);
    }
    return OkStatus();
  });
}

}  // namespace paddock::cloudmap
