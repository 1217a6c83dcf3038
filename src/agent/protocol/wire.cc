#include "agent/protocol/wire.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "common/json_fields.h"
#include "agent/protocol/state_json.h"

namespace paddock::agent::protocol {
namespace json = boost::json;
using json_fields::Str;
using json_fields::OptStr;
using json_fields::Int;

namespace {

double Seconds(TimePoint t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

}  // namespace

json::object EncodeLaunchSpec(const LaunchSpec& spec) {
  json::object o;
  o["account"] = spec.scope.account.str();
  o["region"] = spec.scope.region.str();
  o["cluster"] = spec.cluster;
  o["taskArn"] = spec.task_arn;
  o["taskDefinitionArn"] = spec.task_definition_arn;
  o["definition"] = spec.definition;
  o["overrides"] = spec.overrides;
  o["desiredStatus"] = spec.desired_status;
  o["lastStatus"] = spec.last_status;
  o["cpu"] = spec.cpu;
  o["memory"] = spec.memory;
  if (spec.network) {
    o["network"] = json::object{{"subnetId", spec.network->subnet_id},
                                {"ip", spec.network->ip},
                                {"prefixLength", spec.network->prefix_length},
                                {"gateway", spec.network->gateway}};
  }
  return o;
}

StatusOr<LaunchSpec> DecodeLaunchSpec(const json::object& o) {
  LaunchSpec spec;
  spec.scope = Scope{AccountId(Str(o, "account")), Region(Str(o, "region"))};
  spec.cluster = Str(o, "cluster");
  spec.task_arn = Str(o, "taskArn");
  spec.task_definition_arn = Str(o, "taskDefinitionArn");
  spec.definition = Str(o, "definition");
  spec.overrides = Str(o, "overrides");
  spec.desired_status = Str(o, "desiredStatus");
  spec.last_status = Str(o, "lastStatus");
  spec.cpu = Str(o, "cpu");
  spec.memory = Str(o, "memory");
  if (spec.task_arn.empty() || spec.definition.empty())
    return DataLoss("an assignment without taskArn or definition");
  if (auto it = o.find("network"); it != o.end() && it->value().is_object()) {
    const json::object& n = it->value().get_object();
    LaunchSpec::Network net;
    net.subnet_id = Str(n, "subnetId");
    net.ip = Str(n, "ip");
    net.prefix_length = static_cast<int>(Int(n, "prefixLength").value_or(0));
    net.gateway = Str(n, "gateway");
    spec.network = std::move(net);
  }
  return spec;
}

void EncodeStateChange(const TaskStateChange& change, json::object& out) {
  out["status"] = change.last_status;
  if (change.stopped_reason) out["reason"] = *change.stopped_reason;
  if (change.stop_code) out["stopCode"] = *change.stop_code;
  if (change.health_status) out["healthStatus"] = *change.health_status;
  if (change.pull_started_at) out["pullStartedAt"] = Seconds(*change.pull_started_at);
  if (change.pull_stopped_at) out["pullStoppedAt"] = Seconds(*change.pull_stopped_at);
  if (change.execution_stopped_at) out["executionStoppedAt"] = Seconds(*change.execution_stopped_at);
  json::array containers;
  for (const auto& c : change.containers) containers.push_back(ContainerChangeJson(c));
  if (!containers.empty()) out["containers"] = std::move(containers);
}

TaskStateChange DecodeStateChange(const json::object& in) {
  TaskStateChange change;
  change.last_status = Str(in, "status");
  change.stopped_reason = OptStr(in, "reason");
  change.stop_code = OptStr(in, "stopCode");
  change.health_status = OptStr(in, "healthStatus");
  change.pull_started_at = json_fields::EpochSeconds(in, "pullStartedAt");
  change.pull_stopped_at = json_fields::EpochSeconds(in, "pullStoppedAt");
  change.execution_stopped_at = json_fields::EpochSeconds(in, "executionStoppedAt");
  if (auto it = in.find("containers"); it != in.end() && it->value().is_array()) {
    for (const auto& v : it->value().get_array()) {
      if (v.is_object()) change.containers.push_back(ContainerChangeFromJson(v.get_object()));
    }
  }
  return change;
}

namespace {

json::array Strings(const std::vector<std::string>& items) {
  json::array a;
  for (const std::string& s : items) a.emplace_back(s);
  return a;
}

json::object EncodeRule(const vpc::PolicyRule& r) {
  return json::object{{"protocol", r.protocol}, {"fromPort", r.from_port}, {"toPort", r.to_port},
                      {"cidrs", Strings(r.cidrs)}, {"groups", Strings(r.groups)}};
}

StatusOr<std::vector<std::string>> DecodeStrings(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return out;
  if (!v->is_array()) return DataLoss(fmt::format("policy: {} is not a list", key));
  for (const json::value& item : v->get_array()) {
    if (!item.is_string()) return DataLoss(fmt::format("policy: {} holds a non-string", key));
    out.emplace_back(item.get_string());
  }
  return out;
}

StatusOr<std::vector<const json::object*>> DecodeObjects(const json::object& o, std::string_view key) {
  std::vector<const json::object*> out;
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return out;
  if (!v->is_array()) return DataLoss(fmt::format("{} is not a list", key));
  for (const json::value& item : v->get_array()) {
    if (!item.is_object()) return DataLoss(fmt::format("{} holds a non-object", key));
    out.push_back(&item.get_object());
  }
  return out;
}

StatusOr<vpc::PolicyRule> DecodeRule(const json::object& o) {
  vpc::PolicyRule r;
  r.protocol = Str(o, "protocol");
  auto port = [&](std::string_view key) -> StatusOr<int32_t> {
    std::optional<int64_t> v = Int(o, key);
    if (!v) return -1;
    if (*v < -1 || *v > 65535) return DataLoss(fmt::format("policy: {} {} is out of range", key, *v));
    return static_cast<int32_t>(*v);
  };
  ASSIGN_OR_RETURN(r.from_port, port("fromPort"));
  ASSIGN_OR_RETURN(r.to_port, port("toPort"));
  ASSIGN_OR_RETURN(r.cidrs, DecodeStrings(o, "cidrs"));
  ASSIGN_OR_RETURN(r.groups, DecodeStrings(o, "groups"));
  return r;
}

}  // namespace

json::object EncodeVpcPolicy(const vpc::VpcPolicy& policy) {
  json::array groups;
  for (const vpc::PolicyGroup& g : policy.groups) {
    json::array ingress, egress;
    for (const vpc::PolicyRule& r : g.ingress) ingress.push_back(EncodeRule(r));
    for (const vpc::PolicyRule& r : g.egress) egress.push_back(EncodeRule(r));
    groups.push_back(json::object{{"groupId", g.group_id}, {"ingress", std::move(ingress)}, {"egress", std::move(egress)}});
  }
  json::array members;
  for (const vpc::PolicyMember& m : policy.members) {
    json::object member{{"ip", m.ip}, {"groups", Strings(m.groups)}};
    if (!m.host.empty()) member["host"] = m.host;
    members.push_back(std::move(member));
  }
  json::object o{{"vpcId", policy.vpc_id}, {"version", policy.version}, {"groups", std::move(groups)},
                 {"members", std::move(members)}};
  if (policy.vni != 0) o["vni"] = policy.vni;
  return o;
}

StatusOr<vpc::VpcPolicy> DecodeVpcPolicy(const json::object& o) {
  vpc::VpcPolicy p;
  p.vpc_id = Str(o, "vpcId");
  p.version = Str(o, "version");
  ASSIGN_OR_RETURN(std::vector<const json::object*> groups, DecodeObjects(o, "groups"));
  for (const json::object* g : groups) {
    vpc::PolicyGroup group;
    group.group_id = Str(*g, "groupId");
    ASSIGN_OR_RETURN(std::vector<const json::object*> ingress, DecodeObjects(*g, "ingress"));
    for (const json::object* r : ingress) {
      ASSIGN_OR_RETURN(vpc::PolicyRule rule, DecodeRule(*r));
      group.ingress.push_back(std::move(rule));
    }
    ASSIGN_OR_RETURN(std::vector<const json::object*> egress, DecodeObjects(*g, "egress"));
    for (const json::object* r : egress) {
      ASSIGN_OR_RETURN(vpc::PolicyRule rule, DecodeRule(*r));
      group.egress.push_back(std::move(rule));
    }
    p.groups.push_back(std::move(group));
  }
  ASSIGN_OR_RETURN(std::vector<const json::object*> members, DecodeObjects(o, "members"));
  for (const json::object* m : members) {
    vpc::PolicyMember member;
    member.ip = Str(*m, "ip");
    ASSIGN_OR_RETURN(member.groups, DecodeStrings(*m, "groups"));
    member.host = Str(*m, "host");
    p.members.push_back(std::move(member));
  }
  if (const json::value* vni = o.if_contains("vni")) {
    if (!vni->is_int64() || vni->as_int64() < 0 || vni->as_int64() >= (1 << 24))
      return InvalidArgument("policy: vni must be an integer from 0 to 16777215");
    p.vni = static_cast<uint32_t>(vni->as_int64());
  }
  return p;
}

json::object EncodeRoleCredentials(const RoleCredentials& c) {
  return json::object{{"roleArn", c.role_arn},
                      {"accessKeyId", c.access_key_id},
                      {"secretAccessKey", c.secret_access_key},
                      {"sessionToken", c.token},
                      {"expiration", EpochMillis(c.expiration)}};
}

StatusOr<RoleCredentials> DecodeRoleCredentials(const json::object& o) {
  RoleCredentials c;
  c.role_arn = Str(o, "roleArn");
  c.access_key_id = Str(o, "accessKeyId");
  c.secret_access_key = Str(o, "secretAccessKey");
  c.token = Str(o, "sessionToken");
  const json::value* e = o.if_contains("expiration");
  if (c.access_key_id.empty() || c.secret_access_key.empty() || c.token.empty() || e == nullptr || !e->is_number())
    return DataLoss("task role credentials lack a member");
  c.expiration = FromEpochMillis(e->to_number<int64_t>());
  return c;
}

json::object EncodeExecutionResources(const ExecutionResources& r) {
  json::array containers;
  for (const ExecutionResources::Container& c : r.containers) {
    json::array secrets;
    for (const ExecutionResources::Variable& v : c.secrets) secrets.push_back(json::object{{"name", v.name}, {"value", v.value}});
    json::object o{{"name", c.name}, {"secrets", std::move(secrets)}};
    if (c.registry_auth)
      o["registryAuth"] = json::object{{"username", c.registry_auth->username}, {"password", c.registry_auth->password}};
    containers.push_back(std::move(o));
  }
  return json::object{{"containers", std::move(containers)}, {"failureReason", r.failure_reason}};
}

StatusOr<ExecutionResources> DecodeExecutionResources(const json::object& o) {
  ExecutionResources r;
  r.failure_reason = Str(o, "failureReason");
  ASSIGN_OR_RETURN(std::vector<const json::object*> containers, DecodeObjects(o, "containers"));
  for (const json::object* c : containers) {
    ExecutionResources::Container got{Str(*c, "name"), {}, std::nullopt};
    if (got.name.empty()) return DataLoss("execution resources: a container without a name");
    ASSIGN_OR_RETURN(std::vector<const json::object*> secrets, DecodeObjects(*c, "secrets"));
    for (const json::object* v : secrets) {
      const json::value* value = v->if_contains("value");
      if (Str(*v, "name").empty() || value == nullptr || !value->is_string())
        return DataLoss("execution resources: a secret without a name or value");
      got.secrets.push_back({Str(*v, "name"), std::string(value->get_string())});
    }
    if (const json::value* a = c->if_contains("registryAuth"); a != nullptr) {
      if (!a->is_object()) return DataLoss("execution resources: registryAuth is not an object");
      got.registry_auth = RegistryAuth{Str(a->get_object(), "username"), Str(a->get_object(), "password")};
    }
    r.containers.push_back(std::move(got));
  }
  return r;
}

void EncodeLogsCall(const LogsCall& call, json::object& out) {
  out["container"] = call.container;
  out["stream"] = call.stream;
  out["createStream"] = call.create_stream;
  json::array events;
  events.reserve(call.events.size());
  for (const LogEvent& e : call.events) events.push_back(json::object{{"timestamp", e.timestamp_ms}, {"message", e.message}});
  out["events"] = std::move(events);
}

StatusOr<LogsCall> DecodeLogsCall(const json::object& in) {
  LogsCall call{.container = Str(in, "container"), .stream = Str(in, "stream"), .create_stream = false, .events = {}};
  if (const json::value* c = in.if_contains("createStream"); c != nullptr && c->is_bool()) call.create_stream = c->get_bool();
  if (const json::value* events = in.if_contains("events"); events != nullptr && events->is_array()) {
    call.events.reserve(events->get_array().size());
    for (const json::value& e : events->get_array()) {
      const json::value* ts = e.is_object() ? e.get_object().if_contains("timestamp") : nullptr;
      const json::value* message = e.is_object() ? e.get_object().if_contains("message") : nullptr;
      if (ts == nullptr || !ts->is_number() || message == nullptr || !message->is_string())
        return InvalidArgument("Each log event needs a timestamp and a message.");
      call.events.push_back({ts->to_number<int64_t>(), std::string(message->get_string())});
    }
  }
  return call;
}

json::object EncodeLogsAnswer(const LogsAnswer& a) {
  return json::object{{"failure", a.failure}, {"defaultMode", a.default_mode}};
}

LogsAnswer DecodeLogsAnswer(const json::object& o) { return LogsAnswer{Str(o, "failure"), Str(o, "defaultMode")}; }

std::string_view DrainVerdictName(DrainVerdict v) {
  switch (v) {
    case DrainVerdict::kWait: return "WAIT";
    case DrainVerdict::kNoHolds: return "NO_HOLDS";
    case DrainVerdict::kReleased: return "RELEASED";
    case DrainVerdict::kTimedOut: return "TIMED_OUT";
    case DrainVerdict::kLeasesExpired: return "LEASES_EXPIRED";
  }
  return "NO_HOLDS";
}

std::optional<DrainVerdict> ParseDrainVerdict(std::string_view name) {
  for (DrainVerdict v : {DrainVerdict::kWait, DrainVerdict::kNoHolds, DrainVerdict::kReleased, DrainVerdict::kTimedOut,
                         DrainVerdict::kLeasesExpired})
    if (DrainVerdictName(v) == name) return v;
  return std::nullopt;
}

json::object EncodeDrainAnswer(const DrainAnswer& a) {
  json::object o{{"verdict", DrainVerdictName(a.verdict)}, {"holds", a.holds}};
  if (a.deadline) o["deadline"] = EpochMillis(*a.deadline);
  return o;
}

StatusOr<DrainAnswer> DecodeDrainAnswer(const json::object& o) {
  std::optional<DrainVerdict> verdict = ParseDrainVerdict(Str(o, "verdict"));
  if (!verdict) return DataLoss(fmt::format("a drain answer with an unknown verdict '{}'", Str(o, "verdict")));
  DrainAnswer a;
  a.verdict = *verdict;
  if (const json::value* h = o.if_contains("holds"); h != nullptr && h->is_number()) a.holds = h->to_number<int64_t>();
  if (const json::value* d = o.if_contains("deadline"); d != nullptr && d->is_number())
    a.deadline = FromEpochMillis(d->to_number<int64_t>());
  return a;
}

}  // namespace paddock::agent::protocol
