#include "ecs/instance/instances.h"

#include <charconv>

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <set>

#include "common/encoding.h"
#include "ecs/common/reap.h"
#include "ecs/common/records.h"
#include "ecs/common/resource_arn.h"
#include "store/key.h"
#include "vpc/default_vpc.h"
#include "ecs/common/errors.h"

namespace paddock::ecs::instance {
namespace json = boost::json;
using store::Key;

std::string_view RefusalReason(const Status& status) {
  std::optional<Refusal> r = status.detail().As<Refusal>();
  if (!r) return {};
  switch (*r) {
    case Refusal::kMissing: return "MISSING";
    case Refusal::kInactive: return "INACTIVE";
    case Refusal::kCpu: return "RESOURCE:CPU";
    case Refusal::kMemory: return "RESOURCE:MEMORY";
    case Refusal::kPorts: return "RESOURCE:PORTS";
    case Refusal::kPortsUdp: return "RESOURCE:PORTS_UDP";
  }
  return {};
}

const ErrorDomain& ErrorDomainOf(Refusal) {
  static constexpr ErrorDomain kDomain{"ecs.placement", [](int code) -> std::string_view {
                                         return RefusalReason(Status(StatusCode::kFailedPrecondition, {},
                                                                     static_cast<Refusal>(code)));
                                       }};
  return kDomain;
}

namespace {

constexpr std::string_view kInstances = "container_instances";
constexpr std::string_view kCounts = "container_instance_counts";
constexpr std::string_view kReservations = "container_instance_tasks";
constexpr std::string_view kInactive = "container_instance_inactive";
constexpr std::string_view kEc2 = "container_instance_ec2";  // ec2_instances.cc
constexpr std::string_view kHeartbeats = "container_instance_heartbeats";

constexpr std::string_view kNotFoundMessage = "The referenced container instance was not found.";

#if defined(__aarch64__)
constexpr std::string_view kArchitecture = "arm64";
#else
constexpr std::string_view kArchitecture = "x86_64";
#endif

std::string InstanceKey(const Scope& s, std::string_view cluster, std::string_view id) {
  return ScopeKey(s).Str(cluster).Str(id).Done();
}
std::string ClusterPrefix(const Scope& s, std::string_view cluster) { return ScopeKey(s).Str(cluster).Done(); }
std::string RootArnOf(const Scope& s) { return fmt::format("arn:aws:iam::{}:root", s.account.str()); }
std::string ClusterPrefixArn(const Scope& s, std::string_view cluster) {
  return fmt::format("arn:aws:ecs:{}:{}:container-instance/{}/*", s.region.str(), s.account.str(), cluster);
}

bool IsHex(std::string_view s) {
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  return true;
}

// New ids are 32 hex digits; older ECS ids are UUIDs, which Paddock also accepts as references.
bool IsInstanceId(std::string_view id) {
  if (id.size() == 32) return IsHex(id);
  if (id.size() != 36) return false;
  for (size_t i = 0; i < id.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (id[i] == '-')) return false;
    if (!dash && !IsHex(id.substr(i, 1))) return false;
  }
  return true;
}

std::string Str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

int64_t Int(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_number() ? v->to_number<int64_t>() : 0;
}

bool IsCustom(std::string_view name) { return !name.starts_with("ecs.") && !name.starts_with("com.amazonaws.ecs."); }

// ---- Resources ----

json::object* FindResource(json::array& resources, std::string_view name) {
  for (auto& r : resources)
    if (r.is_object() && Str(r.get_object(), "name") == name) return &r.get_object();
  return nullptr;
}

int64_t ResourceInt(json::array& resources, std::string_view name) {
  json::object* r = FindResource(resources, name);
  return r == nullptr ? 0 : Int(*r, "integerValue");
}

std::vector<std::string> ResourceSet(json::array& resources, std::string_view name) {
  std::vector<std::string> out;
  json::object* r = FindResource(resources, name);
  if (r == nullptr) return out;
  if (const json::value* v = r->if_contains("stringSetValue"); v != nullptr && v->is_array())
    for (const auto& s : v->get_array())
      if (s.is_string()) out.emplace_back(s.get_string());
  return out;
}

void SetResourceInt(json::array& resources, std::string_view name, int64_t value) {
  if (json::object* r = FindResource(resources, name)) (*r)["integerValue"] = value;
}

void SetResourceSet(json::array& resources, std::string_view name, std::vector<std::string> values) {
  json::object* r = FindResource(resources, name);
  if (r == nullptr) return;
  std::sort(values.begin(), values.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;  // numeric order for port numbers
  });
  json::array arr;
  for (auto& v : values) arr.push_back(json::string(v));
  (*r)["stringSetValue"] = std::move(arr);
}

bool IsPort(std::string_view s) {
  if (s.empty() || s.size() > 5) return false;
  int64_t n = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    n = n * 10 + (c - '0');
  }
  return n >= 1 && n <= 65535 && s[0] != '0';
}

// The agent's totalResources as ECS reports them: CPU, MEMORY, PORTS and PORTS_UDP always present
// (0 / empty when not reported), each with every value member.
StatusOr<json::array> NormalizeResources(const std::optional<json::array>& given) {
  std::map<std::string, json::object> by_name;
  std::vector<std::string> order = {"CPU", "MEMORY", "PORTS", "PORTS_UDP"};
  if (given) {
    for (const auto& item : *given) {
      if (!item.is_object()) return ParamError("Each resource must be an object.");
      const auto& o = item.get_object();
      std::string name = Str(o, "name");
      if (name.empty()) return ParamError("A resource must have a name.");
      if (by_name.count(name)) return ParamError(fmt::format("The resource {} appears more than once.", name));
      std::string type = Str(o, "type");
      if (type.empty()) type = (name == "PORTS" || name == "PORTS_UDP") ? "STRINGSET" : "INTEGER";
      json::object r;
      r["name"] = name;
      r["type"] = type;
      r["doubleValue"] = o.contains("doubleValue") && o.at("doubleValue").is_number() ? o.at("doubleValue").to_number<double>() : 0.0;
      r["longValue"] = Int(o, "longValue");
      r["integerValue"] = Int(o, "integerValue");
      if ((name == "CPU" || name == "MEMORY") && type != "INTEGER")
        return ParamError(fmt::format("The resource {} must be of type INTEGER.", name));
      if ((name == "PORTS" || name == "PORTS_UDP") && type != "STRINGSET")
        return ParamError(fmt::format("The resource {} must be of type STRINGSET.", name));
      if (r["integerValue"].as_int64() < 0 || r["longValue"].as_int64() < 0 || r["doubleValue"].as_double() < 0)
        return ParamError(fmt::format("The resource {} cannot be negative.", name));
      if (type == "STRINGSET") {
        json::array set;
        std::set<std::string> seen;
        if (const json::value* v = o.if_contains("stringSetValue"); v != nullptr && v->is_array()) {
          for (const auto& s : v->get_array()) {
            if (!s.is_string()) continue;
            std::string text(s.get_string());
            if ((name == "PORTS" || name == "PORTS_UDP") && !IsPort(text))
              return ParamError(fmt::format("The resource {} holds '{}', which is not a port number (1-65535).", name, text));
            if (seen.insert(text).second) set.push_back(json::string(text));
          }
        }
        r["stringSetValue"] = std::move(set);
      }
      by_name[name] = std::move(r);
      if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
    }
  }
  json::array out;
  for (const auto& name : order) {
    auto it = by_name.find(name);
    if (it != by_name.end()) {
      out.push_back(std::move(it->second));
      continue;
    }
    bool set = name == "PORTS" || name == "PORTS_UDP";
    json::object r{{"name", name}, {"type", set ? "STRINGSET" : "INTEGER"}, {"doubleValue", 0.0}, {"longValue", 0},
                   {"integerValue", 0}};
    if (set) r["stringSetValue"] = json::array();
    out.push_back(std::move(r));
  }
  // Sets in port order.
  for (std::string_view n : {"PORTS", "PORTS_UDP"}) SetResourceSet(out, n, ResourceSet(out, n));
  return out;
}

// ---- Attributes ----

bool NameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-_/\\.").find(c) != std::string_view::npos; }
bool ValueChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-_./\\@: ").find(c) != std::string_view::npos;
}

using AttributeMap = std::map<std::string, std::optional<std::string>>;

AttributeMap ReadAttributes(const json::object& record) {
  AttributeMap out;
  if (const json::value* v = record.if_contains("attributes"); v != nullptr && v->is_array())
    for (const auto& a : v->get_array()) {
      const auto& o = a.as_object();
      std::optional<std::string> value;
      if (o.contains("value")) value = Str(o, "value");
      out[Str(o, "name")] = value;
    }
  return out;
}

void WriteAttributes(json::object& record, const AttributeMap& attributes) {
  json::array arr;
  for (const auto& [name, value] : attributes) {
    json::object a{{"name", name}};
    if (value) a["value"] = *value;
    arr.push_back(std::move(a));
  }
  record["attributes"] = std::move(arr);
}

Status CheckCustomLimit(const AttributeMap& attributes) {
  size_t custom = 0;
  for (const auto& [name, value] : attributes)
    if (IsCustom(name)) ++custom;
  if (custom > kMaxCustomAttributes)
    return InvalidArgument(
        "You can apply up to 10 custom attributes for each resource. You can view the attributes of a resource with "
        "ListAttributes. You can remove existing attributes on a resource with DeleteAttributes.",
        ecs::Error::kAttributeLimitExceeded);
  return OkStatus();
}

Facts FactsOf(const json::object& record, bool connected) {
  Facts f;
  for (auto& [name, value] : ReadAttributes(record)) f.attributes[name] = value.value_or("");
  f.ec2_instance_id = Str(record, "ec2InstanceId");
  f.running_tasks = Int(record, "runningTasksCount");
  if (const json::value* v = record.if_contains("registeredAt"); v != nullptr && v->is_number())
    f.registered_at = v->to_number<double>();
  f.agent_connected = connected;
  if (const json::value* v = record.if_contains("versionInfo"); v != nullptr && v->is_object())
    f.agent_version = Str(v->get_object(), "agentVersion");
  return f;
}

std::string FailureArn(const Scope& scope, std::string_view cluster, const InstanceRef& ref) {
  return ref.text.starts_with("arn:") ? ref.text : ContainerInstanceArn(scope, cluster, ref.id);
}

Status NotFoundError() { return ParamError(std::string(kNotFoundMessage)); }

// Placement's refusal of an instance that is not ACTIVE (DRAINING, or deregistered): ECS's
// StartTask reason INACTIVE, the status named in the message.
Status ActiveOrRefused(const json::object& record) {
  const std::string status = Str(record, "status");
  if (status == "ACTIVE") return OkStatus();
  return FailedPrecondition(fmt::format("The container instance is {}.", status), Refusal::kInactive);
}

struct Reservation {
  int64_t cpu = 0;
  int64_t memory = 0;
  std::vector<std::string> tcp, udp;
  std::string state;  // PENDING | RUNNING

  std::string Encode() const {
    json::array t, u;
    for (const auto& p : tcp) t.push_back(json::string(p));
    for (const auto& p : udp) u.push_back(json::string(p));
    return json::serialize(
        json::object{{"cpu", cpu}, {"memory", memory}, {"ports", std::move(t)}, {"udpPorts", std::move(u)}, {"state", state}});
  }
  static StatusOr<Reservation> Decode(std::string_view text) {
    ASSIGN_OR_RETURN(json::object o, ParseRecordObject(text, "container instance reservation"));
    Reservation r;
    r.cpu = Int(o, "cpu");
    r.memory = Int(o, "memory");
    for (const auto& p : o["ports"].as_array()) r.tcp.emplace_back(p.as_string());
    for (const auto& p : o["udpPorts"].as_array()) r.udp.emplace_back(p.as_string());
    r.state = Str(o, "state");
    return r;
  }
};

}  // namespace

// ---- Free functions ----

std::string ContainerInstanceArn(const Scope& scope, std::string_view cluster, std::string_view id) {
  return fmt::format("arn:aws:ecs:{}:{}:container-instance/{}/{}", scope.region.str(), scope.account.str(), cluster, id);
}

StatusOr<InstanceRef> ParseInstanceRef(std::string_view text, const Scope& caller, std::string_view action,
                                       std::string_view caller_arn) {
  ASSIGN_OR_RETURN(ClusterScopedRef r,
                   ParseClusterScopedRef(text, ResourceKind::kContainerInstance, IsInstanceId, caller, action, caller_arn));
  return InstanceRef{std::string(text), std::move(r.cluster), std::move(r.id)};
}

Status ValidateAttribute(const Attribute& a) {
  if (a.name.empty() || a.name.size() > 128 || !std::all_of(a.name.begin(), a.name.end(), NameChar))
    return ParamError(fmt::format(
        "Attribute name '{}' is invalid. Up to 128 letters (uppercase and lowercase), numbers, hyphens, underscores, "
        "forward slashes, back slashes, and periods are allowed.",
        a.name));
  if (a.value) {
    const std::string& v = *a.value;
    if (v.empty() || v.size() > 128 || !std::all_of(v.begin(), v.end(), ValueChar) || v.front() == ' ' ||
        v.back() == ' ')
      return ParamError(fmt::format(
          "Attribute value '{}' of '{}' is invalid. Up to 128 letters (uppercase and lowercase), numbers, hyphens, "
          "underscores, periods, at signs, forward slashes, back slashes, colons, and spaces are allowed; it cannot "
          "start or end with a space.",
          v, a.name));
  }
  return OkStatus();
}

// ---- The owner ----

ContainerInstances::ContainerInstances(store::Store& store, cluster::Clusters& clusters, HexSource random_hex)
    : store_(store), clusters_(clusters), random_hex_(std::move(random_hex)), agents_(store) {
  if (!random_hex_) random_hex_ = [](size_t n) { return HexEncode(RandomBytes((n + 1) / 2)).substr(0, n); };
}

StatusOr<bool> ContainerInstances::Connected(store::ReadTxn& txn, const std::string& key, TimePoint now) {
  ASSIGN_OR_RETURN(std::optional<TimePoint> t, LastHeartbeat(txn, key));
  return t && now - *t <= agent_timeout_;
}

StatusOr<std::optional<TimePoint>> ContainerInstances::LastHeartbeat(store::ReadTxn& txn, const std::string& key) {
  std::optional<TimePoint> out;
  {
    std::lock_guard lock(mu_);
    auto it = heartbeats_.find(key);
    if (it != heartbeats_.end()) out = it->second;
  }
  ASSIGN_OR_RETURN(std::optional<std::string> stored, txn.Get(kHeartbeats, key));
  int64_t ms = 0;
  if (stored && std::from_chars(stored->data(), stored->data() + stored->size(), ms).ec == std::errc()) {
    const TimePoint t = FromEpochMillis(ms);
    if (!out || t > *out) out = t;
  }
  return out;
}

void ContainerInstances::SetHeartbeat(const std::string& key, std::optional<TimePoint> t) {
  std::lock_guard lock(mu_);
  if (t) {
    heartbeats_[key] = *t;
    stored_[key] = *t;  // every caller stores it in the same transaction
  } else {
    heartbeats_.erase(key);
    stored_.erase(key);
  }
}

bool ContainerInstances::HeartbeatDue(const std::string& key, TimePoint now) {
  std::lock_guard lock(mu_);
  auto it = stored_.find(key);
  return it == stored_.end() || now - it->second >= agent_timeout_ / 4;
}

StatusOr<std::string> ContainerInstances::Render(store::ReadTxn& txn, const Scope& scope, const json::object& record,
                                                 const Include& include, TimePoint now) {
  json::object shown = record;
  const std::string arn = Str(record, "containerInstanceArn");
  const bool inactive = Str(record, "status") == "INACTIVE";
  std::string key;
  {
    // The key is (scope, cluster, id); the ARN carries both.
    std::string_view rest = std::string_view(arn).substr(arn.find("container-instance/") + 19);
    size_t slash = rest.rfind('/');
    key = InstanceKey(scope, rest.substr(0, slash), rest.substr(slash + 1));
  }
  bool connected = false;
  if (!inactive) {
    ASSIGN_OR_RETURN(connected, Connected(txn, key, now));
  }
  shown["agentConnected"] = connected;
  if (include.tags) {
    ASSIGN_OR_RETURN(Tags tags, ReadTags(txn, scope, arn));
    json::array arr;
    for (const auto& t : tags) arr.push_back(json::object{{"key", t.key}, {"value", t.value}});
    shown["tags"] = std::move(arr);
  }
  if (include.health) {
    // The only check Paddock runs is the agent's liveness (its container runtime answering).
    const std::string status = connected ? "OK" : (inactive ? "INSUFFICIENT_DATA" : "IMPAIRED");
    json::object detail{{"type", "CONTAINER_RUNTIME"}, {"status", status}};
    ASSIGN_OR_RETURN(std::optional<TimePoint> last, LastHeartbeat(txn, key));
    if (last) detail["lastUpdated"] = EpochSeconds(*last);
    detail["lastStatusChange"] = record.at("registeredAt");
    shown["healthStatus"] = json::object{{"overallStatus", status}, {"details", json::array{std::move(detail)}}};
  }
  return json::serialize(shown);
}

StatusOr<std::optional<json::object>> ContainerInstances::Find(store::ReadTxn& txn, const Scope& scope,
                                                               std::string_view cluster, const InstanceRef& ref) {
  if (ref.cluster && *ref.cluster != cluster) return std::optional<json::object>();
  ASSIGN_OR_RETURN(auto text, txn.Get(kInstances, InstanceKey(scope, cluster, ref.id)));
  if (!text) return std::optional<json::object>();
  ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*text, "container instance"));
  return std::optional<json::object>(std::move(record));
}

Status ContainerInstances::Save(store::WriteTxn& txn, const Scope& scope, std::string_view cluster, json::object& record) {
  record["version"] = Int(record, "version") + 1;
  std::string arn = Str(record, "containerInstanceArn");
  std::string id = arn.substr(arn.rfind('/') + 1);
  return txn.Put(kInstances, InstanceKey(scope, cluster, id), json::serialize(record));
}

Status ContainerInstances::AddCount(store::WriteTxn& txn, const Scope& scope, std::string_view cluster, int64_t delta) {
  const std::string key = ClusterPrefix(scope, cluster);
  ASSIGN_OR_RETURN(auto text, txn.Get(kCounts, key));
  int64_t n = text ? std::stoll(*text) : 0;
  n += delta;
  if (n <= 0) return txn.Delete(kCounts, key);
  return txn.Put(kCounts, key, std::to_string(n));
}

StatusOr<cluster::ClusterUsage::Counts> ContainerInstances::Usage::Count(store::ReadTxn& txn, const Scope& scope,
                                                                         std::string_view cluster) {
  ASSIGN_OR_RETURN(auto text, txn.Get(kCounts, ClusterPrefix(scope, cluster)));
  cluster::ClusterUsage::Counts c;
  if (text) c.registered_container_instances = std::stoll(*text);
  return c;
}

StatusOr<std::string> ContainerInstances::Register(const Scope& scope, const RegisterRequest& request, TimePoint now,
                                                   std::optional<AgentCredential>* issued) {
  // Everything the input decides, before the transaction.
  std::string ec2_id, zone = scope.region.str() + "a", instance_type = "paddock", ami, private_ip;
  if (request.identity_document) {
    boost::system::error_code ec;
    json::value doc = json::parse(*request.identity_document, ec);
    if (ec || !doc.is_object()) return ParamError("The instance identity document is not a JSON document.");
    const auto& o = doc.get_object();
    ec2_id = Str(o, "instanceId");
    // The host's address, which EC2's DescribeInstances answers as privateIpAddress.
    uint32_t parsed = 0;
    if (vpc::ParseIpv4(Str(o, "privateIp"), &parsed)) private_ip = Str(o, "privateIp");
    if (!Str(o, "availabilityZone").empty()) zone = Str(o, "availabilityZone");
    if (!Str(o, "instanceType").empty()) instance_type = Str(o, "instanceType");
    ami = Str(o, "imageId");
  }
  ASSIGN_OR_RETURN(json::array resources, NormalizeResources(request.total_resources));
  json::object version_info;
  if (request.version_info)
    for (std::string_view k : {"agentVersion", "agentHash", "dockerVersion"})
      if (request.version_info->contains(k)) version_info[k] = request.version_info->at(k);
  AttributeMap ecs_attributes{
      {"ecs.availability-zone", zone},
      {"ecs.instance-type", instance_type},
      {"ecs.os-type", std::string("linux")},
      {"ecs.os-family", std::string("LINUX")},
      {"ecs.cpu-architecture", std::string(kArchitecture)},
      {"ecs.capability.task-eni", std::nullopt},
      {"ecs.capability.container-health-check", std::nullopt},
  };
  if (!ami.empty()) ecs_attributes["ecs.ami-id"] = ami;
  AttributeMap given;
  for (const auto& a : request.attributes) {
    RETURN_IF_ERROR(ValidateAttribute(a));
    given[a.name] = a.value;
  }
  RETURN_IF_ERROR(ValidateTags(request.tags));

  std::string out;
  std::string key;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(clusters_.CheckActive(txn, scope, request.cluster));
    json::object record;
    AttributeMap attributes = ecs_attributes;
    if (issued != nullptr) issued->reset();
    // What the registration does to the instance's agent binding (agent_identity.h), decided
    // below once the instance is known; applied after its record is written.
    std::optional<AgentKind> bind;
    const std::string caller = request.caller_agent.empty() ? RootArnOf(scope) : request.caller_agent;
    std::string previous_ec2_id;
    if (request.container_instance) {
      const InstanceRef& ref = *request.container_instance;
      ASSIGN_OR_RETURN(auto existing, Find(txn, scope, request.cluster, ref));
      if (!existing) return NotFoundError();
      record = std::move(*existing);
      if (Str(record, "status") == "INACTIVE")
        return ClientError(fmt::format("Container instance {} is inactive.", ref.id));
      const std::string arn = Str(record, "containerInstanceArn");
      ASSIGN_OR_RETURN(AgentKind kind, agents_.KindOf(txn, scope, request.cluster, ref.id));
      const bool own_agent = !request.caller_agent.empty() && request.caller_agent == arn;
      const bool allowed = kind == AgentKind::kRemote      ? own_agent
                           : kind == AgentKind::kInProcess ? request.agent == AgentKind::kInProcess
                                                           : request.caller_agent.empty();
      if (!allowed) return NotAuthorized(caller, "RegisterContainerInstance", arn);
      if (kind == AgentKind::kNone && request.agent != AgentKind::kNone) bind = request.agent;
      // Custom attributes (PutAttributes) survive the agent's re-registration.
      for (auto& [name, value] : ReadAttributes(record))
        if (IsCustom(name)) attributes[name] = value;
      previous_ec2_id = Str(record, "ec2InstanceId");
      if (!ec2_id.empty()) record["ec2InstanceId"] = ec2_id;
      // What the instance's tasks hold stays taken from the new totals.
      json::array remaining = resources;
      int64_t cpu = ResourceInt(remaining, "CPU"), memory = ResourceInt(remaining, "MEMORY");
      std::vector<std::string> tcp = ResourceSet(remaining, "PORTS"), udp = ResourceSet(remaining, "PORTS_UDP");
      const std::string prefix = InstanceKey(scope, request.cluster, ref.id);
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kReservations, store::PrefixRange(prefix), 100000));
      for (const auto& row : rows) {
        ASSIGN_OR_RETURN(Reservation r, Reservation::Decode(row.value));
        cpu -= r.cpu;
        memory -= r.memory;
        tcp.insert(tcp.end(), r.tcp.begin(), r.tcp.end());
        udp.insert(udp.end(), r.udp.begin(), r.udp.end());
      }
      SetResourceInt(remaining, "CPU", cpu);
      SetResourceInt(remaining, "MEMORY", memory);
      SetResourceSet(remaining, "PORTS", std::move(tcp));
      SetResourceSet(remaining, "PORTS_UDP", std::move(udp));
      record["registeredResources"] = resources;
      record["remainingResources"] = std::move(remaining);
      record["versionInfo"] = version_info;
      key = prefix;
    } else {
      // An agent's credential re-registers its own instance; it never makes new ones.
      if (!request.caller_agent.empty())
        return NotAuthorized(caller, "RegisterContainerInstance", ClusterPrefixArn(scope, request.cluster));
      if (request.agent != AgentKind::kNone) bind = request.agent;
      const std::string id = random_hex_(32);
      if (ec2_id.empty()) ec2_id = "i-" + random_hex_(17);
      record["containerInstanceArn"] = ContainerInstanceArn(scope, request.cluster, id);
      record["ec2InstanceId"] = ec2_id;
      record["version"] = 0;
      record["versionInfo"] = version_info;
      record["remainingResources"] = resources;
      record["registeredResources"] = resources;
      record["status"] = "ACTIVE";
      record["runningTasksCount"] = 0;
      record["pendingTasksCount"] = 0;
      record["registeredAt"] = EpochSeconds(now);
      record["attachments"] = json::array();
      RETURN_IF_ERROR(AddCount(txn, scope, request.cluster, 1));
      key = InstanceKey(scope, request.cluster, id);
    }
    for (const auto& [name, value] : given) attributes[name] = value;
    RETURN_IF_ERROR(CheckCustomLimit(attributes));
    WriteAttributes(record, attributes);
    RETURN_IF_ERROR(Save(txn, scope, request.cluster, record));
    const std::string arn = Str(record, "containerInstanceArn");
    RETURN_IF_ERROR(IndexEc2(txn, scope, request.cluster, arn.substr(arn.rfind('/') + 1), previous_ec2_id,
                             Str(record, "ec2InstanceId"), private_ip));
    RETURN_IF_ERROR(PutTags(txn, scope, arn, request.tags));
    if (bind == AgentKind::kInProcess) {
      RETURN_IF_ERROR(agents_.BindInProcess(txn, scope, request.cluster, arn.substr(arn.rfind('/') + 1)));
    } else if (bind == AgentKind::kRemote) {
      ASSIGN_OR_RETURN(AgentCredential c, agents_.Issue(txn, scope, request.cluster, arn.substr(arn.rfind('/') + 1)));
      if (issued != nullptr) *issued = std::move(c);
    }
    if (request.agent == AgentKind::kRemote)
      RETURN_IF_ERROR(agents_.SetOverlayAddress(txn, scope, request.cluster, arn.substr(arn.rfind('/') + 1),
                                                request.overlay_address));
    // The agent that registers is connected; the answer shows it so.
    RETURN_IF_ERROR(txn.Put(kHeartbeats, key, std::to_string(EpochMillis(now))));
    SetHeartbeat(key, now);
    ASSIGN_OR_RETURN(out, Render(txn, scope, record, Include{!request.tags.empty(), false}, now));
    return OkStatus();
  }));
  NotifyChange(scope, request.cluster);
  return out;
}

StatusOr<DescribeResult> ContainerInstances::Describe(const Scope& scope, std::string_view cluster,
                                                      const std::vector<InstanceRef>& refs, const Include& include,
                                                      TimePoint now) {
  DescribeResult result;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, cluster));
    for (const auto& ref : refs) {
      ASSIGN_OR_RETURN(auto record, Find(txn, scope, cluster, ref));
      if (!record) {
        result.failures.push_back({FailureArn(scope, cluster, ref), "MISSING", ""});
        continue;
      }
      ASSIGN_OR_RETURN(std::string shown, Render(txn, scope, *record, include, now));
      result.instances.push_back(std::move(shown));
    }
    return OkStatus();
  }));
  return result;
}

StatusOr<Page> ContainerInstances::List(const Scope& scope, const ListQuery& q, TimePoint now) {
  std::optional<Query> query;
  if (q.filter && !q.filter->empty()) {
    ASSIGN_OR_RETURN(Query parsed, Query::Parse(*q.filter));
    query.emplace(std::move(parsed));
  }
  auto wanted = [&](std::string_view status) {
    if (!q.status) return status == "ACTIVE" || status == "DRAINING";
    return status == *q.status;
  };
  Page page;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, q.cluster));
    store::Range range = store::PrefixRange(ClusterPrefix(scope, q.cluster));
    if (!q.after.empty()) range.begin = store::KeySuccessor(q.after);
    std::vector<std::string> keys;
    while (keys.size() <= q.limit) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kInstances, range, 500));
      for (const auto& row : rows) {
        ASSIGN_OR_RETURN(json::object record, ParseRecordObject(row.value, "container instance"));
        if (!wanted(Str(record, "status"))) continue;
        if (query) {
          ASSIGN_OR_RETURN(bool connected, Connected(txn, row.key, now));
          if (!query->Matches(FactsOf(record, connected))) continue;
        }
        page.items.push_back(Str(record, "containerInstanceArn"));
        keys.push_back(row.key);
        if (keys.size() > q.limit) break;
      }
      if (rows.size() < 500) break;
      range.begin = store::KeySuccessor(rows.back().key);
    }
    if (keys.size() > q.limit) {
      page.items.pop_back();
      keys.pop_back();
      page.next = keys.back();
    }
    return OkStatus();
  }));
  return page;
}

StatusOr<std::string> ContainerInstances::Deregister(const Scope& scope, std::string_view cluster,
                                                     const InstanceRef& ref, bool force, TimePoint now) {
  std::string out;
  std::function<void()> after_commit;  // the deregistration hook's
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    after_commit = nullptr;
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, cluster));
    ASSIGN_OR_RETURN(auto record, Find(txn, scope, cluster, ref));
    if (!record) return NotFoundError();
    if (Str(*record, "status") != "INACTIVE") {  // a repeat returns the INACTIVE instance again
      if (!force && Int(*record, "runningTasksCount") + Int(*record, "pendingTasksCount") > 0)
        return ParamError("Found running tasks on the instance.");
      (*record)["status"] = "INACTIVE";
      RETURN_IF_ERROR(AddCount(txn, scope, cluster, -1));
      RETURN_IF_ERROR(txn.Put(kInactive, ScopeKey(scope).U64(static_cast<uint64_t>(EpochMillis(now))).Str(cluster).Str(ref.id).Done(), ""));
      RETURN_IF_ERROR(Save(txn, scope, cluster, *record));
      // Its agent's credential authenticates nothing from this commit on.
      RETURN_IF_ERROR(agents_.Revoke(txn, scope, cluster, ref.id));
      RETURN_IF_ERROR(txn.Delete(kHeartbeats, InstanceKey(scope, cluster, ref.id)));
      SetHeartbeat(InstanceKey(scope, cluster, ref.id), std::nullopt);
      // The tasks a forced deregistration leaves on it (the task owner's part, same transaction).
      if (deregistration_hook_) {
        ASSIGN_OR_RETURN(after_commit, deregistration_hook_(txn, scope, cluster, ref.id, now));
      }
    }
    ASSIGN_OR_RETURN(out, Render(txn, scope, *record, Include{}, now));
    return OkStatus();
  }));
  if (after_commit) after_commit();
  NotifyChange(scope, cluster);
  return out;
}

StatusOr<DescribeResult> ContainerInstances::UpdateState(const Scope& scope, std::string_view cluster,
                                                         const std::vector<InstanceRef>& refs, std::string_view status,
                                                         TimePoint now) {
  if (status != "ACTIVE" && status != "DRAINING")
    return ParamError(fmt::format("Container instance status {} is not valid. Valid values are ACTIVE and DRAINING.", status));
  DescribeResult result;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    result = {};
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, cluster));
    for (const auto& ref : refs) {
      ASSIGN_OR_RETURN(auto record, Find(txn, scope, cluster, ref));
      if (!record) {
        result.failures.push_back({FailureArn(scope, cluster, ref), "MISSING", ""});
        continue;
      }
      if (Str(*record, "status") == "INACTIVE") {
        result.failures.push_back({Str(*record, "containerInstanceArn"), "INACTIVE",
                                   "The container instance is deregistered."});
        continue;
      }
      if (Str(*record, "status") != status) {
        (*record)["status"] = status;
        RETURN_IF_ERROR(Save(txn, scope, cluster, *record));
      }
      ASSIGN_OR_RETURN(std::string shown, Render(txn, scope, *record, Include{}, now));
      result.instances.push_back(std::move(shown));
    }
    return OkStatus();
  }));
  NotifyChange(scope, cluster);
  return result;
}

StatusOr<std::string> ContainerInstances::UpdateAgent(const Scope& scope, std::string_view cluster,
                                                      const InstanceRef& ref, TimePoint now) {
  (void)now;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, cluster));
    ASSIGN_OR_RETURN(auto record, Find(txn, scope, cluster, ref));
    if (!record || Str(*record, "status") == "INACTIVE") return NotFoundError();
    const json::value* vi = record->if_contains("versionInfo");
    if (vi == nullptr || !vi->is_object() || Str(vi->get_object(), "agentVersion").empty())
      return InvalidArgument(
          "Amazon ECS can't determine the current version of the Amazon ECS container agent on the container instance "
          "and doesn't have enough information to proceed with an update.",
          ecs::Error::kMissingVersion);
    return InvalidArgument("There is no update available for your container agent.", ecs::Error::kNoUpdateAvailable);
  }));
  return Internal("UpdateContainerAgent has no update to start");
}

// ---- Attributes ----

StatusOr<std::vector<ListedAttribute>> ContainerInstances::PutAttributes(const Scope& scope, std::string_view cluster,
                                                                         const std::vector<TargetedAttribute>& attributes) {
  for (const auto& a : attributes) RETURN_IF_ERROR(ValidateAttribute(a.attribute));
  std::vector<ListedAttribute> out;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    out.clear();
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, cluster));
    std::map<std::string, json::object> changed;  // by id
    for (const auto& a : attributes) {
      auto it = changed.find(a.target.id);
      if (it == changed.end() || (a.target.cluster && *a.target.cluster != cluster)) {
        ASSIGN_OR_RETURN(auto record, Find(txn, scope, cluster, a.target));
        if (!record || Str(*record, "status") == "INACTIVE")
          return NotFound(fmt::format("Could not find the target {}.", a.target.text), ecs::Error::kTargetNotFound);
        it = changed.emplace(a.target.id, std::move(*record)).first;
      }
      AttributeMap current = ReadAttributes(it->second);
      current[a.attribute.name] = a.attribute.value;
      RETURN_IF_ERROR(CheckCustomLimit(current));
      WriteAttributes(it->second, current);
      out.push_back({a.attribute, Str(it->second, "containerInstanceArn")});
    }
    for (auto& [id, record] : changed) RETURN_IF_ERROR(Save(txn, scope, cluster, record));
    return OkStatus();
  }));
  return out;
}

StatusOr<std::vector<ListedAttribute>> ContainerInstances::DeleteAttributes(const Scope& scope, std::string_view cluster,
                                                                            const std::vector<TargetedAttribute>& attributes) {
  for (const auto& a : attributes) RETURN_IF_ERROR(ValidateAttribute(Attribute{a.attribute.name, std::nullopt}));
  std::vector<ListedAttribute> out;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    out.clear();
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, cluster));
    std::map<std::string, json::object> changed;
    for (const auto& a : attributes) {
      auto it = changed.find(a.target.id);
      if (it == changed.end() || (a.target.cluster && *a.target.cluster != cluster)) {
        ASSIGN_OR_RETURN(auto record, Find(txn, scope, cluster, a.target));
        if (!record || Str(*record, "status") == "INACTIVE")
          return NotFound(fmt::format("Could not find the target {}.", a.target.text), ecs::Error::kTargetNotFound);
        it = changed.emplace(a.target.id, std::move(*record)).first;
      }
      AttributeMap current = ReadAttributes(it->second);
      current.erase(a.attribute.name);
      WriteAttributes(it->second, current);
      out.push_back({a.attribute, Str(it->second, "containerInstanceArn")});
    }
    for (auto& [id, record] : changed) RETURN_IF_ERROR(Save(txn, scope, cluster, record));
    return OkStatus();
  }));
  return out;
}

StatusOr<AttributePage> ContainerInstances::ListAttributes(const Scope& scope, const AttributeQuery& q) {
  AttributePage page;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, q.cluster));
    store::Range range = store::PrefixRange(ClusterPrefix(scope, q.cluster));
    // A position is the instance's key followed by the attribute's name.
    if (!q.after.empty()) {
      store::KeyReader r(q.after);
      std::string parts[4];
      for (auto& p : parts) {
        ASSIGN_OR_RETURN(p, r.Str());
      }
      range.begin = Key().Str(parts[0]).Str(parts[1]).Str(parts[2]).Str(parts[3]).Done();
    }
    std::vector<std::string> positions;
    bool full = false;
    while (!full) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kInstances, range, 200));
      for (const auto& row : rows) {
        ASSIGN_OR_RETURN(json::object record, ParseRecordObject(row.value, "container instance"));
        if (Str(record, "status") == "INACTIVE") continue;
        for (auto& [name, value] : ReadAttributes(record)) {
          std::string position = row.key + Key().Str(name).Done();
          if (!q.after.empty() && position <= q.after) continue;
          if (q.name && name != *q.name) continue;
          if (q.value && value.value_or("") != *q.value) continue;
          page.attributes.push_back({Attribute{name, value}, Str(record, "containerInstanceArn")});
          positions.push_back(std::move(position));
          if (positions.size() > q.limit) {
            full = true;
            break;
          }
        }
        if (full) break;
      }
      if (rows.size() < 200) break;
      range.begin = store::KeySuccessor(rows.back().key);
    }
    if (positions.size() > q.limit) {
      page.attributes.pop_back();
      positions.pop_back();
      page.next = positions.back();
    }
    return OkStatus();
  }));
  return page;
}

// ---- Losing a host ----

namespace {

// Whether `record` (an instance's) is lost at `now`: ACTIVE or DRAINING, its last heartbeat known
// and more than `grace` old.
bool LostAt(const json::object& record, const std::optional<TimePoint>& last, TimePoint now,
            std::chrono::milliseconds grace) {
  const std::string status = Str(record, "status");
  return (status == "ACTIVE" || status == "DRAINING") && last && now - *last > grace;
}

}  // namespace

StatusOr<std::vector<ContainerInstances::Lost>> ContainerInstances::LostInstances(store::ReadTxn& txn, TimePoint now,
                                                                                   std::chrono::milliseconds grace) {
  std::vector<Lost> out;
  store::Range range;  // every account's
  while (true) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kInstances, range, 500));
    for (const auto& row : rows) {
      // The heartbeat first: a connected instance's record is not parsed.
      ASSIGN_OR_RETURN(std::optional<TimePoint> last, LastHeartbeat(txn, row.key));
      if (!last || now - *last <= grace) continue;
      ASSIGN_OR_RETURN(json::object record, ParseRecordObject(row.value, "container instance"));
      if (!LostAt(record, last, now, grace)) continue;
      store::KeyReader r(row.key);
      Lost lost;
      ASSIGN_OR_RETURN(std::string account, r.Str());
      ASSIGN_OR_RETURN(std::string region, r.Str());
      lost.scope = Scope{AccountId(account), Region(region)};
      ASSIGN_OR_RETURN(lost.cluster, r.Str());
      ASSIGN_OR_RETURN(lost.id, r.Str());
      ASSIGN_OR_RETURN(AgentKind kind, agents_.KindOf(txn, lost.scope, lost.cluster, lost.id));
      if (kind == AgentKind::kInProcess && !sweep_in_process_) continue;  // a server's own: see the header
      lost.ec2_instance_id = Str(record, "ec2InstanceId");
      out.push_back(std::move(lost));
    }
    if (rows.size() < 500) break;
    range.begin = store::KeySuccessor(rows.back().key);
  }
  return out;
}

StatusOr<bool> ContainerInstances::StillLost(store::ReadTxn& txn, const Lost& lost, TimePoint now,
                                             std::chrono::milliseconds grace) {
  const std::string key = InstanceKey(lost.scope, lost.cluster, lost.id);
  ASSIGN_OR_RETURN(auto text, txn.Get(kInstances, key));
  if (!text) return false;
  ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*text, "container instance"));
  ASSIGN_OR_RETURN(std::optional<TimePoint> last, LastHeartbeat(txn, key));
  return LostAt(record, last, now, grace);
}

Status ContainerInstances::ForgetHeartbeat(const Scope& scope, std::string_view cluster, std::string_view id) {
  const std::string key = InstanceKey(scope, cluster, id);
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) { return txn.Delete(kHeartbeats, key); }));
  SetHeartbeat(key, std::nullopt);
  return OkStatus();
}

// ---- Agent, tags ----

Status ContainerInstances::Heartbeat(const Scope& scope, std::string_view cluster, std::string_view id, TimePoint now) {
  const std::string key = InstanceKey(scope, cluster, id);
  auto check = [&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto record, Find(txn, scope, cluster, InstanceRef{std::string(id), std::nullopt, std::string(id)}));
    if (!record || Str(*record, "status") == "INACTIVE")
      return NotFound(std::string(kNotFoundMessage), ecs::Error::kInvalidParameter);
    return OkStatus();
  };
  if (!HeartbeatDue(key, now)) {
    RETURN_IF_ERROR(store_.Read(check));
    std::lock_guard lock(mu_);
    heartbeats_[key] = now;
    return OkStatus();
  }
  // Stored for the other servers on the store (and this one's next life).
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(check(txn));
    return txn.Put(kHeartbeats, key, std::to_string(EpochMillis(now)));
  }));
  SetHeartbeat(key, now);
  return OkStatus();
}

namespace {
Status TagTargetNotFound(const Scope& scope, std::string_view cluster, std::string_view id) {
  return NotFound(fmt::format("The specified resource is not found: {}", ContainerInstanceArn(scope, cluster, id)),
                  ecs::Error::kResourceNotFound);
}
}  // namespace

Status ContainerInstances::TagResource(const Scope& scope, std::string_view cluster, std::string_view id, const Tags& tags) {
  RETURN_IF_ERROR(ValidateTags(tags));
  return store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto text, txn.Get(kInstances, InstanceKey(scope, cluster, id)));
    if (!text) return TagTargetNotFound(scope, cluster, id);
    return PutTags(txn, scope, ContainerInstanceArn(scope, cluster, id), tags);
  });
}

Status ContainerInstances::UntagResource(const Scope& scope, std::string_view cluster, std::string_view id,
                                         const std::vector<std::string>& keys) {
  return store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto text, txn.Get(kInstances, InstanceKey(scope, cluster, id)));
    if (!text) return TagTargetNotFound(scope, cluster, id);
    return RemoveTags(txn, scope, ContainerInstanceArn(scope, cluster, id), keys);
  });
}

StatusOr<Tags> ContainerInstances::ListTags(const Scope& scope, std::string_view cluster, std::string_view id) {
  Tags out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto text, txn.Get(kInstances, InstanceKey(scope, cluster, id)));
    if (!text) return TagTargetNotFound(scope, cluster, id);
    ASSIGN_OR_RETURN(out, ReadTags(txn, scope, ContainerInstanceArn(scope, cluster, id)));
    return OkStatus();
  }));
  return out;
}

// ---- The placement seam ----

StatusOr<std::vector<Candidate>> ContainerInstances::Candidates(store::ReadTxn& txn, const Scope& scope,
                                                                std::string_view cluster, TimePoint now) {
  std::vector<Candidate> out;
  store::Range range = store::PrefixRange(ClusterPrefix(scope, cluster));
  while (true) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kInstances, range, 500));
    for (const auto& row : rows) {
      ASSIGN_OR_RETURN(json::object record, ParseRecordObject(row.value, "container instance"));
      if (Str(record, "status") != "ACTIVE") continue;
      Candidate c;
      c.arn = Str(record, "containerInstanceArn");
      c.id = c.arn.substr(c.arn.rfind('/') + 1);
      json::array& remaining = record["remainingResources"].as_array();
      c.remaining_cpu = ResourceInt(remaining, "CPU");
      c.remaining_memory = ResourceInt(remaining, "MEMORY");
      c.used_tcp_ports = ResourceSet(remaining, "PORTS");
      c.used_udp_ports = ResourceSet(remaining, "PORTS_UDP");
      ASSIGN_OR_RETURN(bool connected, Connected(txn, row.key, now));
      c.facts = FactsOf(record, connected);
      out.push_back(std::move(c));
    }
    if (rows.size() < 500) break;
    range.begin = store::KeySuccessor(rows.back().key);
  }
  return out;
}

Status ContainerInstances::CheckPlaceable(store::ReadTxn& txn, const Scope& scope, std::string_view cluster,
                                          std::string_view id) {
  ASSIGN_OR_RETURN(auto text, txn.Get(kInstances, InstanceKey(scope, cluster, id)));
  if (!text) return NotFound(std::string(kNotFoundMessage), Refusal::kMissing);
  ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*text, "container instance"));
  return ActiveOrRefused(record);
}

Status ContainerInstances::Reserve(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                   std::string_view id, std::string_view task_id, const Demand& demand) {
  const std::string key = InstanceKey(scope, cluster, id);
  const std::string rkey = ScopeKey(scope).Str(cluster).Str(id).Str(task_id).Done();
  ASSIGN_OR_RETURN(auto existing, txn.Get(kReservations, rkey));
  if (existing) return OkStatus();
  ASSIGN_OR_RETURN(auto text, txn.Get(kInstances, key));
  if (!text) return NotFound(std::string(kNotFoundMessage), Refusal::kMissing);
  ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*text, "container instance"));
  RETURN_IF_ERROR(ActiveOrRefused(record));
  json::array& remaining = record["remainingResources"].as_array();
  const int64_t cpu = ResourceInt(remaining, "CPU"), memory = ResourceInt(remaining, "MEMORY");
  if (demand.cpu < 0 || demand.memory < 0) return ParamError("A reservation cannot be negative.");
  if (demand.cpu > cpu) return FailedPrecondition("Not enough CPU units remain on the instance.", Refusal::kCpu);
  if (demand.memory > memory) return FailedPrecondition("Not enough memory remains on the instance.", Refusal::kMemory);
  Reservation r{demand.cpu, demand.memory, {}, {}, "PENDING"};
  auto take = [&](const std::vector<int64_t>& ports, std::string_view resource, std::vector<std::string>& taken) -> Status {
    std::vector<std::string> used = ResourceSet(remaining, resource);
    std::set<std::string> in_use(used.begin(), used.end());
    for (int64_t p : ports) {
      std::string port = std::to_string(p);
      if (p < 1 || p > 65535) return ParamError(fmt::format("{} is not a port number.", p));
      if (!in_use.insert(port).second)
        return FailedPrecondition(fmt::format("Port {} is already in use on the instance.", p),
                                  resource == "PORTS" ? Refusal::kPorts : Refusal::kPortsUdp);
      taken.push_back(port);
    }
    SetResourceSet(remaining, resource, std::vector<std::string>(in_use.begin(), in_use.end()));
    return OkStatus();
  };
  RETURN_IF_ERROR(take(demand.tcp_ports, "PORTS", r.tcp));
  RETURN_IF_ERROR(take(demand.udp_ports, "PORTS_UDP", r.udp));
  SetResourceInt(remaining, "CPU", cpu - demand.cpu);
  SetResourceInt(remaining, "MEMORY", memory - demand.memory);
  record["pendingTasksCount"] = Int(record, "pendingTasksCount") + 1;
  RETURN_IF_ERROR(txn.Put(kReservations, rkey, r.Encode()));
  return Save(txn, scope, cluster, record);
}

Status ContainerInstances::MarkRunning(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                       std::string_view id, std::string_view task_id) {
  const std::string rkey = ScopeKey(scope).Str(cluster).Str(id).Str(task_id).Done();
  ASSIGN_OR_RETURN(auto text, txn.Get(kReservations, rkey));
  // None (reaped with its deregistered instance): nothing to move, as Release has nothing to give
  // back. An error here would refuse the task's every later report, STOPPED included.
  if (!text) return OkStatus();
  ASSIGN_OR_RETURN(Reservation r, Reservation::Decode(*text));
  if (r.state == "RUNNING") return OkStatus();
  ASSIGN_OR_RETURN(auto rec, txn.Get(kInstances, InstanceKey(scope, cluster, id)));
  if (!rec) return OkStatus();
  ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*rec, "container instance"));
  record["pendingTasksCount"] = std::max<int64_t>(0, Int(record, "pendingTasksCount") - 1);
  record["runningTasksCount"] = Int(record, "runningTasksCount") + 1;
  r.state = "RUNNING";
  RETURN_IF_ERROR(txn.Put(kReservations, rkey, r.Encode()));
  return Save(txn, scope, cluster, record);
}

Status ContainerInstances::Release(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                   std::string_view id, std::string_view task_id) {
  const std::string rkey = ScopeKey(scope).Str(cluster).Str(id).Str(task_id).Done();
  ASSIGN_OR_RETURN(auto text, txn.Get(kReservations, rkey));
  if (!text) return OkStatus();
  ASSIGN_OR_RETURN(Reservation r, Reservation::Decode(*text));
  RETURN_IF_ERROR(txn.Delete(kReservations, rkey));
  ASSIGN_OR_RETURN(auto rec, txn.Get(kInstances, InstanceKey(scope, cluster, id)));
  if (!rec) return OkStatus();  // reaped with its instance
  ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*rec, "container instance"));
  json::array& remaining = record["remainingResources"].as_array();
  SetResourceInt(remaining, "CPU", ResourceInt(remaining, "CPU") + r.cpu);
  SetResourceInt(remaining, "MEMORY", ResourceInt(remaining, "MEMORY") + r.memory);
  auto give_back = [&](std::string_view resource, const std::vector<std::string>& ports) {
    std::vector<std::string> used = ResourceSet(remaining, resource);
    for (const auto& p : ports) used.erase(std::remove(used.begin(), used.end(), p), used.end());
    SetResourceSet(remaining, resource, std::move(used));
  };
  give_back("PORTS", r.tcp);
  give_back("PORTS_UDP", r.udp);
  const char* counter = r.state == "RUNNING" ? "runningTasksCount" : "pendingTasksCount";
  record[counter] = std::max<int64_t>(0, Int(record, counter) - 1);
  return Save(txn, scope, cluster, record);
}

// ---- Reapers ----

StatusOr<size_t> ContainerInstances::ReapInactive(TimePoint now) {
  return ReapDue(store_, kInactive, EpochMillis(now - kInactiveRetention),
                 [&](store::WriteTxn& txn, const Scope& scope, const std::string& cluster, const std::string& id) -> Status {
                   const std::string key = InstanceKey(scope, cluster, id);
                   ASSIGN_OR_RETURN(auto text, txn.Get(kInstances, key));
                   if (text) {
                     ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*text, "container instance"));
                     RETURN_IF_ERROR(txn.Delete(kEc2, ScopeKey(scope).Str(Str(record, "ec2InstanceId")).Str(cluster).Str(id).Done()));
                   }
                   RETURN_IF_ERROR(txn.Delete(kInstances, key));
                   RETURN_IF_ERROR(RemoveAllTags(txn, scope, ContainerInstanceArn(scope, cluster, id)));
                   ASSIGN_OR_RETURN(auto held, txn.Scan(kReservations, store::PrefixRange(key), 100000));
                   for (const auto& h : held) RETURN_IF_ERROR(txn.Delete(kReservations, h.key));
                   return OkStatus();
                 });
}

Status ContainerInstances::ReapAccount(const AccountId& account) {
  RETURN_IF_ERROR(agents_.ReapAccount(account));  // first: no credential outlives its instance
  for (std::string_view table : {kInstances, kCounts, kReservations, kInactive, kEc2, kHeartbeats})
    RETURN_IF_ERROR(ReapAccountRows(store_, table, account));
  const std::string prefix = Key().Str(account.str()).Done();
  std::lock_guard lock(mu_);
  for (auto it = heartbeats_.lower_bound(prefix); it != heartbeats_.end() && it->first.starts_with(prefix);)
    it = heartbeats_.erase(it);
  for (auto it = stored_.lower_bound(prefix); it != stored_.end() && it->first.starts_with(prefix);)
    it = stored_.erase(it);
  return OkStatus();
}

}  // namespace paddock::ecs::instance
