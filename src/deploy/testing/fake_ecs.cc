// deploy/testing/fake_ecs: an in-memory ECS and SSM for the controller's tests (fake_ecs.h).
#include "deploy/testing/fake_ecs.h"

#include <algorithm>
#include <mutex>
#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>

namespace paddock::deploy::testing {
namespace json = boost::json;

namespace {

std::string Str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::optional<int64_t> Int(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v) return std::nullopt;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->as_uint64());
  return std::nullopt;
}

bool Bool(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_bool() && v->as_bool();
}

std::vector<std::string> Strings(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const json::value* v = o.if_contains(key); v && v->is_array()) {
    for (const json::value& s : v->as_array()) {
      if (s.is_string()) out.emplace_back(s.as_string());
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> Tags(const json::object& o) {
  std::vector<std::pair<std::string, std::string>> out;
  if (const json::value* v = o.if_contains("tags"); v && v->is_array()) {
    for (const json::value& t : v->as_array()) {
      if (t.is_object()) out.emplace_back(Str(t.as_object(), "key"), Str(t.as_object(), "value"));
    }
  }
  return out;
}

json::array TagArray(const std::vector<std::pair<std::string, std::string>>& tags) {
  json::array a;
  for (const auto& [k, v] : tags) a.emplace_back(json::object{{"key", k}, {"value", v}});
  return a;
}

// "arn:aws:ecs:...:cluster/name" or "name" -> "name"; "" -> "default".
std::string ClusterName(const json::object& body) {
  std::string c = Str(body, "cluster");
  if (c.empty()) return "default";
  if (size_t slash = c.rfind('/'); c.starts_with("arn:") && slash != std::string::npos) return c.substr(slash + 1);
  return c;
}

// A page's start from a token this fake handed out ("" = 0), or nullopt for a bad one.
std::optional<size_t> PageStart(const json::object& body, std::string_view key) {
  std::string token = Str(body, key);
  if (token.empty()) return 0;
  if (!std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  return static_cast<size_t>(std::stoull(token));
}

}  // namespace

Status AwsError(std::string_view type, std::string_view message) {
  std::string text = fmt::format("{}: {}", type, message);
  if (type == "ThrottlingException" || type == "Throttling" || type == "TooManyRequestsException" ||
      type == "RequestLimitExceeded" || type == "ThrottledException") {
    return ResourceExhausted(std::move(text), Error::kThrottled);
  }
  if (type.ends_with("NotFoundException") || type == "ParameterNotFound" || type == "ServiceNotActiveException" ||
      type == "ServiceNotFound" || type == "NamespaceNotFound" || type == "NoSuchEntity") {
    return NotFound(std::move(text), Error::kNotFound);
  }
  if (type == "AccessDeniedException" || type == "AccessDenied") return PermissionDenied(std::move(text), Error::kDenied);
  if (type == "ParameterAlreadyExists" || type == "ResourceAlreadyExistsException" || type == "EntityAlreadyExists") {
    return AlreadyExists(std::move(text), Error::kAlreadyExists);
  }
  if (type == "ClientException" || type == "InvalidParameterException" || type == "ValidationException" ||
      type == "ParameterMaxVersionLimitExceeded" || type == "InvalidInput") {
    return InvalidArgument(std::move(text), Error::kRejected);
  }
  if (type == "ServerException" || type == "InternalServerError" || type == "ServiceUnavailableException") {
    return Unavailable(std::move(text));
  }
  return FailedPrecondition(std::move(text));
}

bool IsWriteAction(std::string_view action) {
  for (std::string_view prefix : {"Create", "Update", "Delete", "Put", "Register", "Deregister", "Tag", "Untag"}) {
    if (action.starts_with(prefix)) return true;
  }
  return false;
}

class FakeEcs::Impl {
 public:
  Impl(Clock& clock, FakeEcsOptions options) : clock_(clock), options_(std::move(options)) {
    for (const std::string& c : options_.clusters) clusters_.insert(c);
  }

  StatusOr<json::value> Call(AwsService service, std::string_view action, const json::object& body) {
    std::lock_guard lock(mu_);
    FakeCall call;
    call.seq = static_cast<int>(log_.size()) + 1;
    call.service = service;
    call.action = std::string(action);
    call.body = body;
    call.at = clock_.Now();
    call.write = IsWriteAction(action);
    StatusOr<json::value> answer = Answer(call);
    call.outcome = answer.status();
    log_.push_back(std::move(call));
    return answer;
  }

  // ---- the world, for the test ----

  void Settle() {
    std::lock_guard lock(mu_);
    for (FakeService& s : services_) {
      bool changed = false;
      const bool active = s.status == "ACTIVE";
      int keep = active ? s.desired : 0;
      for (FakeTask& t : tasks_) {
        if (t.desired_status != "RUNNING" || t.cluster != s.cluster || t.service_name != s.name) continue;
        if (keep > 0 && t.task_definition == s.task_definition) {
          --keep;
          continue;
        }
        t.desired_status = "STOPPED";
        t.last_status = "STOPPED";
        t.stopped_reason = active ? fmt::format("Scaling activity initiated by (deployment {})", Primary(s).id)
                                  : "Service was deleted";
        changed = true;
      }
      for (; keep > 0; --keep) {
        tasks_.push_back(NewTask(s));
        changed = true;
      }
      if (active) {
        s.running = s.desired;
        s.pending = 0;
        if (s.deployments.size() != 1 || s.deployments[0].rollout_state != "COMPLETED") changed = true;
        FakeRollout primary = Primary(s);
        primary.rollout_state = "COMPLETED";
        s.deployments = {primary};
        if (changed) {
          s.events.insert(s.events.begin(), {fmt::format("ev-{}", ++next_event_),
                                             fmt::format("(service {}) has reached a steady state.", s.name)});
        }
      } else {
        s.running = 0;
        s.pending = 0;
        if (s.status == "DRAINING") s.status = "INACTIVE";
      }
    }
  }

  std::string AddService(FakeService s) {
    std::lock_guard lock(mu_);
    if (s.arn.empty()) s.arn = ServiceArn(s.cluster, s.name);
    if (s.deployments.empty()) {
      s.deployments.push_back({fmt::format("ecs-svc/{}", ++next_rollout_), "PRIMARY", s.task_definition, clock_.Now(),
                               "COMPLETED"});
    }
    s.created_at = clock_.Now();
    services_.push_back(s);
    return s.arn;
  }

  std::optional<FakeService> Service(std::string_view name) const {
    std::lock_guard lock(mu_);
    for (auto it = services_.rbegin(); it != services_.rend(); ++it) {
      if (it->name == name) return *it;
    }
    return std::nullopt;
  }

  bool EditService(std::string_view name, const std::function<void(FakeService&)>& edit) {
    std::lock_guard lock(mu_);
    for (auto it = services_.rbegin(); it != services_.rend(); ++it) {
      if (it->name == name) {
        edit(*it);
        return true;
      }
    }
    return false;
  }

  std::vector<FakeService> ActiveServices() const {
    std::lock_guard lock(mu_);
    std::vector<FakeService> out;
    for (const FakeService& s : services_) {
      if (s.status == "ACTIVE") out.push_back(s);
    }
    return out;
  }

  std::vector<FakeTask> RunningTasks() const {
    std::lock_guard lock(mu_);
    std::vector<FakeTask> out;
    for (const FakeTask& t : tasks_) {
      if (t.last_status == "RUNNING") out.push_back(t);
    }
    return out;
  }

  std::map<std::string, std::string> RevisionStatuses(std::string_view family) const {
    std::lock_guard lock(mu_);
    std::map<std::string, std::string> out;
    for (const auto& [arn, td] : task_definitions_) {
      if (td.family == family) out[arn] = td.status;
    }
    return out;
  }

  int Registrations(std::string_view family) const {
    std::lock_guard lock(mu_);
    auto it = registrations_.find(std::string(family));
    return it == registrations_.end() ? 0 : it->second;
  }

  std::map<std::string, std::string> Parameters() const {
    std::lock_guard lock(mu_);
    std::map<std::string, std::string> out;
    for (const auto& [name, p] : parameters_) out[name] = p.value;
    return out;
  }

  // ---- faults and the log ----

  void AddFault(Match m, int nth, Status status, bool every) {
    std::lock_guard lock(mu_);
    faults_.push_back({std::move(m), nth, 0, std::move(status), every});
  }
  void ClearFaults() {
    std::lock_guard lock(mu_);
    faults_.clear();
  }
  void CrashAfter(int seq) {
    std::lock_guard lock(mu_);
    crash_after_ = seq;
  }
  bool crashed() const {
    std::lock_guard lock(mu_);
    return crash_after_ && static_cast<int>(log_.size()) >= *crash_after_;
  }
  void Recover() {
    std::lock_guard lock(mu_);
    crash_after_.reset();
  }
  std::vector<FakeCall> Log() const {
    std::lock_guard lock(mu_);
    return log_;
  }

 private:
  struct Fault {
    Match match;
    int nth = 0;
    int seen = 0;
    Status status;
    bool every = false;
  };
  struct TaskDefinition {
    std::string arn;
    std::string family;
    int revision = 0;
    std::string status = "ACTIVE";  // ACTIVE | INACTIVE | DELETE_IN_PROGRESS
    json::object body;
  };
  struct Parameter {
    std::string value;
    std::string type;
    int64_t version = 0;
  };

  // The injected answer for `call`, if any; counts the call against every FailNth it matches.
  std::optional<Status> Injected(const FakeCall& call) {
    if (crash_after_ && call.seq > *crash_after_) {
      return Unavailable(fmt::format("{} {}: connection refused (the process crashed)", AwsServiceName(call.service),
                                     call.action));
    }
    std::optional<Status> out;
    for (auto it = faults_.begin(); it != faults_.end();) {
      const bool matches = (!it->match.service || *it->match.service == call.service) &&
                           (it->match.action.empty() || it->match.action == call.action);
      if (matches && it->every) {
        if (!out) out = it->status;
      } else if (matches && ++it->seen == it->nth) {
        if (!out) out = it->status;
        it = faults_.erase(it);
        continue;
      }
      ++it;
    }
    return out;
  }

  StatusOr<json::value> Answer(const FakeCall& call) {
    if (std::optional<Status> injected = Injected(call)) return *injected;
    const json::object& b = call.body;
    const std::string_view a = call.action;
    if (call.service == AwsService::kEcs) {
      if (a == "ListServices") return ListServices(b);
      if (a == "DescribeServices") return DescribeServices(b);
      if (a == "CreateService") return CreateService(b);
      if (a == "UpdateService") return UpdateService(b);
      if (a == "DeleteService") return DeleteService(b);
      if (a == "TagResource") return TagResource(b);
      if (a == "RegisterTaskDefinition") return RegisterTaskDefinition(b);
      if (a == "ListTaskDefinitions") return ListTaskDefinitions(b);
      if (a == "DeregisterTaskDefinition") return DeregisterTaskDefinition(b);
      if (a == "DeleteTaskDefinitions") return DeleteTaskDefinitions(b);
      if (a == "CreateCluster") return CreateCluster(b);
      if (a == "ListTasks") return ListTasks(b);
      if (a == "DescribeTasks") return DescribeTasks(b);
    } else if (call.service == AwsService::kSsm) {
      if (a == "PutParameter") return PutParameter(b);
      if (a == "GetParametersByPath") return GetParametersByPath(b);
      if (a == "DeleteParameters") return DeleteParameters(b);
    }
    return AwsError("UnknownOperationException", fmt::format("the fake does not answer {}.{}", AwsServiceName(call.service), a));
  }

  // ---- ECS ----

  std::string ArnPrefix() const { return fmt::format("arn:aws:ecs:{}:{}", options_.region, options_.account); }
  std::string ServiceArn(std::string_view cluster, std::string_view name) const {
    return fmt::format("{}:service/{}/{}", ArnPrefix(), cluster, name);
  }
  std::string ClusterArn(std::string_view cluster) const { return fmt::format("{}:cluster/{}", ArnPrefix(), cluster); }

  static FakeRollout Primary(const FakeService& s) {
    for (const FakeRollout& r : s.deployments) {
      if (r.status == "PRIMARY") return r;
    }
    return FakeRollout{"ecs-svc/none", "PRIMARY", s.task_definition, s.created_at, "COMPLETED"};
  }

  // The newest service of `cluster` named or ARN'd `ident`.
  FakeService* FindService(std::string_view cluster, std::string_view ident) {
    for (auto it = services_.rbegin(); it != services_.rend(); ++it) {
      if (it->cluster == cluster && (it->name == ident || it->arn == ident)) return &*it;
    }
    return nullptr;
  }

  // A registered task definition's ARN for an ARN, "family:revision" or a family (its latest).
  std::optional<std::string> ResolveTaskDefinition(const std::string& ident) const {
    if (task_definitions_.contains(ident)) return ident;
    std::string arn = fmt::format("{}:task-definition/{}", ArnPrefix(), ident);
    if (task_definitions_.contains(arn)) return arn;
    auto rev = revisions_.find(ident);
    if (rev != revisions_.end()) return fmt::format("{}:task-definition/{}:{}", ArnPrefix(), ident, rev->second);
    return std::nullopt;
  }

  FakeTask NewTask(const FakeService& s) {
    FakeTask t;
    ++next_task_;
    t.arn = fmt::format("{}:task/{}/{:032x}", ArnPrefix(), s.cluster, next_task_);
    t.cluster = s.cluster;
    t.service_name = s.name;
    t.task_definition = s.task_definition;
    t.last_status = "RUNNING";
    t.desired_status = "RUNNING";
    t.address = fmt::format("10.0.{}.{}", next_task_ / 250, next_task_ % 250 + 2);
    if (auto td = task_definitions_.find(s.task_definition); td != task_definitions_.end()) {
      const json::value* cds = td->second.body.if_contains("containerDefinitions");
      if (cds && cds->is_array() && !cds->as_array().empty() && cds->as_array()[0].is_object()) {
        const json::object& c = cds->as_array()[0].as_object();
        t.container = Str(c, "name");
        const json::value* pms = c.if_contains("portMappings");
        if (pms && pms->is_array() && !pms->as_array().empty() && pms->as_array()[0].is_object()) {
          if (std::optional<int64_t> port = Int(pms->as_array()[0].as_object(), "containerPort")) {
            t.port = static_cast<int>(*port);
          }
        }
      }
    }
    return t;
  }

  json::object ServiceJson(const FakeService& s, bool with_tags) const {
    json::array deployments;
    for (const FakeRollout& r : s.deployments) {
      deployments.emplace_back(json::object{{"id", r.id},
                                            {"status", r.status},
                                            {"taskDefinition", r.task_definition},
                                            {"desiredCount", s.desired},
                                            {"createdAt", EpochSeconds(r.created_at)},
                                            {"updatedAt", EpochSeconds(r.created_at)},
                                            {"rolloutState", r.rollout_state},
                                            {"failedTasks", r.failed_tasks}});
    }
    json::array events;
    for (const auto& [id, message] : s.events) {
      events.emplace_back(json::object{{"id", id}, {"createdAt", EpochSeconds(s.created_at)}, {"message", message}});
    }
    json::object o{{"serviceArn", s.arn},
                   {"serviceName", s.name},
                   {"clusterArn", ClusterArn(s.cluster)},
                   {"status", s.status},
                   {"taskDefinition", s.task_definition},
                   {"desiredCount", s.desired},
                   {"runningCount", s.running},
                   {"pendingCount", s.pending},
                   {"launchType", s.launch_type},
                   {"deployments", std::move(deployments)},
                   {"events", std::move(events)},
                   {"createdAt", EpochSeconds(s.created_at)}};
    if (!s.network_configuration.empty()) o["networkConfiguration"] = s.network_configuration;
    if (with_tags) o["tags"] = TagArray(s.tags);
    return o;
  }

  json::object TaskJson(const FakeTask& t) const {
    json::object container{{"name", t.container}, {"lastStatus", t.last_status},
                           {"networkInterfaces", json::array{json::object{{"privateIpv4Address", t.address}}}}};
    if (t.last_status == "STOPPED") container["exitCode"] = 0;
    json::object o{{"taskArn", t.arn},
                   {"clusterArn", ClusterArn(t.cluster)},
                   {"taskDefinitionArn", t.task_definition},
                   {"group", "service:" + t.service_name},
                   {"startedBy", "ecs-svc/0000000000000000001"},
                   {"lastStatus", t.last_status},
                   {"desiredStatus", t.desired_status},
                   {"attachments", json::array{json::object{
                                       {"type", "ElasticNetworkInterface"},
                                       {"details", json::array{json::object{{"name", "privateIPv4Address"},
                                                                            {"value", t.address}}}}}}},
                   {"containers", json::array{std::move(container)}}};
    if (!t.stopped_reason.empty()) o["stoppedReason"] = t.stopped_reason;
    return o;
  }

  StatusOr<json::value> ListServices(const json::object& b) {
    const std::string cluster = ClusterName(b);
    if (!clusters_.contains(cluster)) return AwsError("ClusterNotFoundException", "Cluster not found.");
    const int64_t max = Int(b, "maxResults").value_or(10);
    if (max < 1 || max > 100) return AwsError("InvalidParameterException", "maxResults must be between 1 and 100.");
    std::optional<size_t> start = PageStart(b, "nextToken");
    if (!start) return AwsError("InvalidParameterException", "Invalid nextToken.");
    std::vector<const FakeService*> listed;
    for (const FakeService& s : services_) {
      if (s.cluster == cluster && s.status != "INACTIVE") listed.push_back(&s);
    }
    const size_t page = static_cast<size_t>(std::min<int64_t>(max, options_.page_limit));
    json::array arns;
    for (size_t i = *start; i < listed.size() && i < *start + page; ++i) arns.emplace_back(listed[i]->arn);
    json::object out{{"serviceArns", std::move(arns)}};
    if (*start + page < listed.size()) out["nextToken"] = std::to_string(*start + page);
    return out;
  }

  StatusOr<json::value> DescribeServices(const json::object& b) {
    const std::string cluster = ClusterName(b);
    if (!clusters_.contains(cluster)) return AwsError("ClusterNotFoundException", "Cluster not found.");
    std::vector<std::string> idents = Strings(b, "services");
    if (idents.empty() || idents.size() > 10) {
      return AwsError("InvalidParameterException", "services must hold between 1 and 10 names or ARNs.");
    }
    std::vector<std::string> include = Strings(b, "include");
    const bool tags = std::find(include.begin(), include.end(), "TAGS") != include.end();
    json::array services, failures;
    for (const std::string& ident : idents) {
      if (const FakeService* s = FindService(cluster, ident)) {
        services.emplace_back(ServiceJson(*s, tags));
      } else {
        failures.emplace_back(json::object{{"arn", ident.starts_with("arn:") ? ident : ServiceArn(cluster, ident)},
                                           {"reason", "MISSING"}});
      }
    }
    return json::object{{"services", std::move(services)}, {"failures", std::move(failures)}};
  }

  StatusOr<json::value> CreateService(const json::object& b) {
    const std::string cluster = ClusterName(b);
    if (!clusters_.contains(cluster)) return AwsError("ClusterNotFoundException", "Cluster not found.");
    const std::string name = Str(b, "serviceName");
    if (name.empty()) return AwsError("InvalidParameterException", "serviceName is required.");
    if (const FakeService* existing = FindService(cluster, name)) {
      if (existing->status == "ACTIVE") return AwsError("InvalidParameterException", "Creation of service was not idempotent.");
      if (existing->status == "DRAINING") {
        return AwsError("InvalidParameterException", "Unable to Start a service that is still Draining.");
      }
    }
    std::optional<std::string> td = ResolveTaskDefinition(Str(b, "taskDefinition"));
    if (!td) return AwsError("ClientException", "TaskDefinition not found.");
    FakeService s;
    s.arn = ServiceArn(cluster, name);
    s.name = name;
    s.cluster = cluster;
    s.task_definition = *td;
    s.desired = static_cast<int>(Int(b, "desiredCount").value_or(0));
    s.launch_type = Str(b, "launchType").empty() ? "FARGATE" : Str(b, "launchType");
    if (const json::value* nc = b.if_contains("networkConfiguration"); nc && nc->is_object()) {
      s.network_configuration = nc->as_object();
    }
    s.tags = Tags(b);
    s.created_at = clock_.Now();
    s.deployments.push_back({fmt::format("ecs-svc/{}", ++next_rollout_), "PRIMARY", *td, s.created_at, "IN_PROGRESS"});
    services_.push_back(s);
    return json::object{{"service", ServiceJson(s, false)}};
  }

  StatusOr<json::value> UpdateService(const json::object& b) {
    const std::string cluster = ClusterName(b);
    if (!clusters_.contains(cluster)) return AwsError("ClusterNotFoundException", "Cluster not found.");
    FakeService* s = FindService(cluster, Str(b, "service"));
    if (!s) return AwsError("ServiceNotFoundException", "Service not found.");
    if (s->status != "ACTIVE") return AwsError("ServiceNotActiveException", "Service was not ACTIVE.");
    bool new_rollout = false;
    if (b.contains("taskDefinition")) {
      std::optional<std::string> td = ResolveTaskDefinition(Str(b, "taskDefinition"));
      if (!td) return AwsError("ClientException", "TaskDefinition not found.");
      new_rollout = *td != s->task_definition;
      s->task_definition = *td;
    }
    if (const json::value* nc = b.if_contains("networkConfiguration"); nc && nc->is_object()) {
      new_rollout = new_rollout || nc->as_object() != s->network_configuration;
      s->network_configuration = nc->as_object();
    }
    if (std::optional<int64_t> desired = Int(b, "desiredCount")) s->desired = static_cast<int>(*desired);
    if (new_rollout) {
      for (FakeRollout& r : s->deployments) r.status = "ACTIVE";
      s->deployments.insert(s->deployments.begin(), {fmt::format("ecs-svc/{}", ++next_rollout_), "PRIMARY",
                                                     s->task_definition, clock_.Now(), "IN_PROGRESS"});
    }
    return json::object{{"service", ServiceJson(*s, false)}};
  }

  StatusOr<json::value> DeleteService(const json::object& b) {
    const std::string cluster = ClusterName(b);
    if (!clusters_.contains(cluster)) return AwsError("ClusterNotFoundException", "Cluster not found.");
    FakeService* s = FindService(cluster, Str(b, "service"));
    if (!s) return AwsError("ServiceNotFoundException", "Service not found.");
    if (s->status != "ACTIVE") return AwsError("ServiceNotActiveException", "Service was not ACTIVE.");
    if (s->desired > 0 && !Bool(b, "force")) {
      return AwsError("InvalidParameterException", "The service cannot be stopped while it is scaled above 0.");
    }
    s->status = "DRAINING";
    s->desired = 0;
    return json::object{{"service", ServiceJson(*s, false)}};
  }

  StatusOr<json::value> TagResource(const json::object& b) {
    const std::string arn = Str(b, "resourceArn");
    FakeService* s = nullptr;
    for (auto it = services_.rbegin(); it != services_.rend() && !s; ++it) {
      if (it->arn == arn && it->status != "INACTIVE") s = &*it;
    }
    if (!s) return AwsError("InvalidParameterException", "The specified resource is not found.");
    for (const auto& [key, value] : Tags(b)) {
      auto it = std::find_if(s->tags.begin(), s->tags.end(), [&](const auto& kv) { return kv.first == key; });
      if (it == s->tags.end()) {
        s->tags.emplace_back(key, value);
      } else {
        it->second = value;
      }
    }
    return json::object{};
  }

  // familyPrefix is the exact family, as ECS has it; one page (the fake's families stay small).
  StatusOr<json::value> ListTaskDefinitions(const json::object& b) {
    const std::string family = Str(b, "familyPrefix"), status = Str(b, "status").empty() ? "ACTIVE" : Str(b, "status");
    std::vector<const TaskDefinition*> found;
    for (const auto& [arn, td] : task_definitions_) {
      if ((family.empty() || td.family == family) && td.status == status) found.push_back(&td);
    }
    const bool desc = Str(b, "sort") == "DESC";
    std::sort(found.begin(), found.end(), [&](const TaskDefinition* x, const TaskDefinition* y) {
      if (x->family != y->family) return x->family < y->family;
      return desc ? x->revision > y->revision : x->revision < y->revision;
    });
    json::array arns;
    for (const TaskDefinition* td : found) arns.emplace_back(td->arn);
    return json::object{{"taskDefinitionArns", std::move(arns)}};
  }

  StatusOr<json::value> DeregisterTaskDefinition(const json::object& b) {
    auto it = task_definitions_.find(Str(b, "taskDefinition"));
    if (it == task_definitions_.end()) return AwsError("ClientException", "Unable to describe task definition.");
    it->second.status = "INACTIVE";
    return json::object{{"taskDefinition", json::object{{"taskDefinitionArn", it->first}, {"status", "INACTIVE"}}}};
  }

  StatusOr<json::value> DeleteTaskDefinitions(const json::object& b) {
    json::array done;
    if (const json::value* tds = b.if_contains("taskDefinitions"); tds && tds->is_array()) {
      for (const json::value& v : tds->as_array()) {
        auto it = v.is_string() ? task_definitions_.find(std::string(v.as_string())) : task_definitions_.end();
        if (it == task_definitions_.end() || it->second.status != "INACTIVE") continue;
        it->second.status = "DELETE_IN_PROGRESS";
        done.emplace_back(json::object{{"taskDefinitionArn", it->first}, {"status", "DELETE_IN_PROGRESS"}});
      }
    }
    return json::object{{"taskDefinitions", std::move(done)}, {"failures", json::array{}}};
  }

  StatusOr<json::value> RegisterTaskDefinition(const json::object& b) {
    const std::string family = Str(b, "family");
    const json::value* cds = b.if_contains("containerDefinitions");
    if (family.empty()) return AwsError("ClientException", "Family is required.");
    if (!cds || !cds->is_array() || cds->as_array().empty()) {
      return AwsError("ClientException", "Container list cannot be empty.");
    }
    const int revision = ++revisions_[family];
    ++registrations_[family];
    TaskDefinition td;
    td.arn = fmt::format("{}:task-definition/{}:{}", ArnPrefix(), family, revision);
    td.family = family;
    td.revision = revision;
    td.body = b;
    td.body.erase("tags");
    json::object answer = td.body;
    answer["taskDefinitionArn"] = td.arn;
    answer["revision"] = revision;
    answer["status"] = "ACTIVE";
    task_definitions_[td.arn] = std::move(td);
    json::object out{{"taskDefinition", std::move(answer)}};
    if (const json::value* tags = b.if_contains("tags")) out["tags"] = *tags;
    return out;
  }

  StatusOr<json::value> CreateCluster(const json::object& b) {
    std::string name = Str(b, "clusterName");
    if (name.empty()) name = "default";
    clusters_.insert(name);
    return json::object{{"cluster", json::object{{"clusterArn", ClusterArn(name)}, {"clusterName", name}, {"status", "ACTIVE"}}}};
  }

  StatusOr<json::value> ListTasks(const json::object& b) {
    const std::string cluster = ClusterName(b);
    if (!clusters_.contains(cluster)) return AwsError("ClusterNotFoundException", "Cluster not found.");
    const std::string service = Str(b, "serviceName");
    if (!service.empty() && !FindService(cluster, service)) return AwsError("ServiceNotFoundException", "Service not found.");
    std::string desired = Str(b, "desiredStatus");
    if (desired.empty()) desired = "RUNNING";
    const int64_t max = Int(b, "maxResults").value_or(100);
    if (max < 1 || max > 100) return AwsError("InvalidParameterException", "maxResults must be between 1 and 100.");
    std::optional<size_t> start = PageStart(b, "nextToken");
    if (!start) return AwsError("InvalidParameterException", "Invalid nextToken.");
    std::vector<const FakeTask*> listed;
    for (const FakeTask& t : tasks_) {
      if (t.cluster == cluster && t.desired_status == desired && (service.empty() || t.service_name == service)) {
        listed.push_back(&t);
      }
    }
    const size_t page = static_cast<size_t>(std::min<int64_t>(max, options_.page_limit));
    json::array arns;
    for (size_t i = *start; i < listed.size() && i < *start + page; ++i) arns.emplace_back(listed[i]->arn);
    json::object out{{"taskArns", std::move(arns)}};
    if (*start + page < listed.size()) out["nextToken"] = std::to_string(*start + page);
    return out;
  }

  StatusOr<json::value> DescribeTasks(const json::object& b) {
    const std::string cluster = ClusterName(b);
    if (!clusters_.contains(cluster)) return AwsError("ClusterNotFoundException", "Cluster not found.");
    std::vector<std::string> arns = Strings(b, "tasks");
    if (arns.empty() || arns.size() > 100) return AwsError("InvalidParameterException", "tasks must hold between 1 and 100 ARNs.");
    json::array tasks, failures;
    for (const std::string& arn : arns) {
      auto it = std::find_if(tasks_.begin(), tasks_.end(), [&](const FakeTask& t) { return t.arn == arn; });
      if (it == tasks_.end()) {
        failures.emplace_back(json::object{{"arn", arn}, {"reason", "MISSING"}});
      } else {
        tasks.emplace_back(TaskJson(*it));
      }
    }
    return json::object{{"tasks", std::move(tasks)}, {"failures", std::move(failures)}};
  }

  // ---- SSM ----

  StatusOr<json::value> PutParameter(const json::object& b) {
    const std::string name = Str(b, "Name");
    if (name.empty() || !b.contains("Value")) return AwsError("ValidationException", "Name and Value are required.");
    auto it = parameters_.find(name);
    if (it != parameters_.end() && !Bool(b, "Overwrite")) {
      return AwsError("ParameterAlreadyExists",
                      "The parameter already exists. To overwrite this value, set the overwrite option in the request to true.");
    }
    Parameter& p = parameters_[name];
    p.value = Str(b, "Value");
    p.type = Str(b, "Type").empty() ? "String" : Str(b, "Type");
    ++p.version;
    return json::object{{"Version", p.version}, {"Tier", "Standard"}};
  }

  StatusOr<json::value> GetParametersByPath(const json::object& b) {
    std::string path = Str(b, "Path");
    if (!path.starts_with('/')) return AwsError("ValidationException", "Path must start with /.");
    const int64_t max = Int(b, "MaxResults").value_or(10);
    if (max < 1 || max > 10) return AwsError("ValidationException", "MaxResults must be between 1 and 10.");
    std::optional<size_t> start = PageStart(b, "NextToken");
    if (!start) return AwsError("ValidationException", "Invalid NextToken.");
    if (!path.ends_with('/')) path += '/';
    const bool recursive = Bool(b, "Recursive");
    std::vector<std::pair<std::string, const Parameter*>> matched;
    for (const auto& [name, p] : parameters_) {
      if (!name.starts_with(path)) continue;
      if (!recursive && name.find('/', path.size()) != std::string::npos) continue;
      matched.emplace_back(name, &p);
    }
    json::array params;
    const size_t page = static_cast<size_t>(max);
    for (size_t i = *start; i < matched.size() && i < *start + page; ++i) {
      params.emplace_back(json::object{{"Name", matched[i].first},
                                       {"Type", matched[i].second->type},
                                       {"Value", matched[i].second->value},
                                       {"Version", matched[i].second->version}});
    }
    json::object out{{"Parameters", std::move(params)}};
    if (*start + page < matched.size()) out["NextToken"] = std::to_string(*start + page);
    return out;
  }

  StatusOr<json::value> DeleteParameters(const json::object& b) {
    std::vector<std::string> names = Strings(b, "Names");
    if (names.empty() || names.size() > 10) return AwsError("ValidationException", "Names must hold between 1 and 10 names.");
    json::array deleted, invalid;
    for (const std::string& n : names) {
      if (parameters_.erase(n) > 0) {
        deleted.emplace_back(n);
      } else {
        invalid.emplace_back(n);
      }
    }
    return json::object{{"DeletedParameters", std::move(deleted)}, {"InvalidParameters", std::move(invalid)}};
  }

  Clock& clock_;
  const FakeEcsOptions options_;
  mutable std::mutex mu_;
  std::set<std::string> clusters_;
  std::vector<FakeService> services_;  // in creation order; a name's newest last
  std::vector<FakeTask> tasks_;
  std::map<std::string, TaskDefinition> task_definitions_;  // by ARN
  std::map<std::string, int> revisions_;                    // family -> latest revision
  std::map<std::string, int> registrations_;                // family -> successful registrations
  std::map<std::string, Parameter> parameters_;
  std::vector<Fault> faults_;
  std::optional<int> crash_after_;
  std::vector<FakeCall> log_;
  uint64_t next_task_ = 0;
  uint64_t next_rollout_ = 0;
  uint64_t next_event_ = 0;
};

FakeEcs::FakeEcs(Clock& clock, FakeEcsOptions options) : impl_(std::make_unique<Impl>(clock, std::move(options))) {}
FakeEcs::~FakeEcs() = default;

StatusOr<json::value> FakeEcs::Call(AwsService service, std::string_view action, const json::object& body) {
  return impl_->Call(service, action, body);
}

void FakeEcs::Settle() { impl_->Settle(); }
std::string FakeEcs::AddService(FakeService s) { return impl_->AddService(std::move(s)); }
std::optional<FakeService> FakeEcs::Service(std::string_view name) const { return impl_->Service(name); }
bool FakeEcs::EditService(std::string_view name, const std::function<void(FakeService&)>& edit) {
  return impl_->EditService(name, edit);
}
std::vector<FakeService> FakeEcs::ActiveServices() const { return impl_->ActiveServices(); }
std::vector<FakeTask> FakeEcs::RunningTasks() const { return impl_->RunningTasks(); }
int FakeEcs::Registrations(std::string_view family) const { return impl_->Registrations(family); }
std::map<std::string, std::string> FakeEcs::RevisionStatuses(std::string_view family) const {
  return impl_->RevisionStatuses(family);
}
std::map<std::string, std::string> FakeEcs::Parameters() const { return impl_->Parameters(); }

void FakeEcs::FailNth(Match m, int nth, Status status) { impl_->AddFault(std::move(m), nth, std::move(status), false); }
void FakeEcs::FailEvery(Match m, Status status) { impl_->AddFault(std::move(m), 0, std::move(status), true); }
void FakeEcs::ClearFaults() { impl_->ClearFaults(); }
void FakeEcs::CrashAfter(int seq) { impl_->CrashAfter(seq); }
bool FakeEcs::crashed() const { return impl_->crashed(); }
void FakeEcs::Recover() { impl_->Recover(); }

std::vector<FakeCall> FakeEcs::Log() const { return impl_->Log(); }
int FakeEcs::calls() const { return static_cast<int>(impl_->Log().size()); }

std::vector<FakeCall> FakeEcs::Since(int after) const {
  std::vector<FakeCall> log = impl_->Log();
  return std::vector<FakeCall>(log.begin() + std::min<size_t>(static_cast<size_t>(std::max(after, 0)), log.size()), log.end());
}

int FakeEcs::WritesSince(int after) const {
  int n = 0;
  for (const FakeCall& c : Since(after)) n += c.write && c.outcome.ok();
  return n;
}

}  // namespace paddock::deploy::testing
