#include "deploy/controller.h"

#include <algorithm>
#include <cctype>
#include <random>
#include <set>
#include <thread>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "common/encoding.h"
#include "deploy/identity.h"
#include "http/client.h"

namespace paddock::deploy {
namespace json = boost::json;

// ---- The edge's API ----------------------------------------------------------------------------

class HttpEdgeView::Impl {
 public:
  Impl(std::string host, uint16_t port) : client_(std::move(host), port, std::chrono::seconds(5)) {
    client_.set_max_response_body(64 << 20);
  }
  StatusOr<std::map<std::string, std::string>> Servers() {
    std::lock_guard lock(mu_);
    std::map<std::string, std::string> out;
    // Paged like Traefik's API: per_page at most 1000... Paddock's edge and Traefik both honour it.
    for (int page = 1; page < 1000; ++page) {
      http::Request req;
      req.method = "GET";
      req.target = fmt::format("/api/http/services?per_page=1000&page={}", page);
      ASSIGN_OR_RETURN(http::Response resp, client_.Send(req));
      if (resp.status != 200) return Unavailable(fmt::format("the edge's API answered {}", resp.status));
      boost::system::error_code ec;
      json::value v = json::parse(resp.body, ec);
      if (ec || !v.is_array()) return Unavailable("the edge's API answered something other than a list of services");
      for (const json::value& s : v.as_array()) {
        const json::object* o = s.if_object();
        if (!o) continue;
        const json::value* st = o->if_contains("serverStatus");
        if (!st || !st->is_object()) continue;
        for (const auto& [url, status] : st->as_object()) {
          if (!status.is_string()) continue;
          // A server behind two edge services is UP if either says so.
          std::string& slot = out[std::string(url)];
          if (slot != "UP") slot = std::string(status.as_string());
        }
      }
      std::string_view next = resp.GetHeader("X-Next-Page");
      if (next.empty() || next == "1" || next == std::to_string(page)) break;
    }
    return out;
  }

 private:
  std::mutex mu_;
  http::Client client_;
};

HttpEdgeView::HttpEdgeView(std::string host, uint16_t port) : impl_(std::make_unique<Impl>(std::move(host), port)) {}
HttpEdgeView::~HttpEdgeView() = default;
StatusOr<std::map<std::string, std::string>> HttpEdgeView::Servers() { return impl_->Servers(); }

// ---- The driver -------------------------------------------------------------------------------

namespace {

std::string Str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

int Int(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_int64() ? static_cast<int>(v->as_int64()) : 0;
}

std::optional<TimePoint> Time(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_number()) return std::nullopt;
  return FromEpochMillis(static_cast<int64_t>(v->to_number<double>() * 1000));
}

std::vector<std::string> Strings(const json::value* v) {
  std::vector<std::string> out;
  if (v && v->is_array()) {
    for (const json::value& s : v->as_array()) {
      if (s.is_string()) out.emplace_back(s.as_string());
    }
  }
  return out;
}

ServiceView ReadService(const ControllerSettings& settings, const json::object& s) {
  ServiceView v;
  v.arn = Str(s, "serviceArn");
  v.name = Str(s, "serviceName");
  v.status = Str(s, "status");
  v.task_definition = Str(s, "taskDefinition");
  v.desired = Int(s, "desiredCount");
  v.running = Int(s, "runningCount");
  v.pending = Int(s, "pendingCount");
  if (const json::value* ds = s.if_contains("deployments"); ds && ds->is_array()) {
    v.ecs_deployments = static_cast<int>(ds->as_array().size());
    for (const json::value& d : ds->as_array()) {
      if (!d.is_object() || Str(d.as_object(), "status") != "PRIMARY") continue;
      v.primary_created_at = Time(d.as_object(), "createdAt");
      v.rollout_state = Str(d.as_object(), "rolloutState");
      v.rollout_reason = Str(d.as_object(), "rolloutStateReason");
      v.failed_tasks = Int(d.as_object(), "failedTasks");
    }
  }
  if (const json::value* nc = s.if_contains("networkConfiguration"); nc && nc->is_object()) {
    if (const json::value* a = nc->as_object().if_contains("awsvpcConfiguration"); a && a->is_object()) {
      v.subnets = Strings(a->as_object().if_contains("subnets"));
      v.security_groups = Strings(a->as_object().if_contains("securityGroups"));
      v.assign_public_ip = Str(a->as_object(), "assignPublicIp");
    }
  }
  std::vector<std::pair<std::string, std::string>> tags;
  if (const json::value* ts = s.if_contains("tags"); ts && ts->is_array()) {
    for (const json::value& t : ts->as_array()) {
      if (t.is_object()) tags.emplace_back(Str(t.as_object(), "key"), Str(t.as_object(), "value"));
    }
  }
  v.owner = ReadTags(settings, tags);
  v.named_by_us = v.owner.complete &&
                  v.name == ServiceName(settings, {v.owner.project, v.owner.group, v.owner.deployment_id}, v.owner.container);
  if (const json::value* es = s.if_contains("events"); es && es->is_array()) {
    for (const json::value& e : es->as_array()) {
      if (!e.is_object()) continue;
      v.events.push_back({Str(e.as_object(), "id"), Time(e.as_object(), "createdAt").value_or(TimePoint{}),
                          Str(e.as_object(), "message")});
    }
  }
  return v;
}

TaskView ReadTask(const json::object& t, std::string_view container) {
  TaskView v;
  v.arn = Str(t, "taskArn");
  v.task_definition = Str(t, "taskDefinitionArn");
  v.last_status = Str(t, "lastStatus");
  v.desired_status = Str(t, "desiredStatus");
  v.stopped_reason = Str(t, "stoppedReason");
  if (const json::value* as = t.if_contains("attachments"); as && as->is_array()) {
    for (const json::value& a : as->as_array()) {
      const json::value* ds = a.is_object() ? a.as_object().if_contains("details") : nullptr;
      if (!ds || !ds->is_array()) continue;
      for (const json::value& d : ds->as_array()) {
        if (d.is_object() && Str(d.as_object(), "name") == "privateIPv4Address") v.address = Str(d.as_object(), "value");
      }
    }
  }
  if (const json::value* cs = t.if_contains("containers"); cs && cs->is_array()) {
    for (const json::value& c : cs->as_array()) {
      if (!c.is_object() || Str(c.as_object(), "name") != container) continue;
      if (const json::value* x = c.as_object().if_contains("exitCode"); x && x->is_int64()) {
        v.exit_code = static_cast<int>(x->as_int64());
      }
      if (v.address.empty()) {
        if (const json::value* nis = c.as_object().if_contains("networkInterfaces"); nis && nis->is_array()) {
          for (const json::value& ni : nis->as_array()) {
            if (ni.is_object() && v.address.empty()) v.address = Str(ni.as_object(), "privateIpv4Address");
          }
        }
      }
    }
  }
  return v;
}

bool Throttled(const Status& s) { return IsError(s, Error::kThrottled); }

// A project's task role trusts ECS's tasks and nothing else.
constexpr std::string_view kTaskRoleTrust =
    R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ecs-tasks.amazonaws.com"},)"
    R"("Action":"sts:AssumeRole"}]})";

// A failure the deployment's events show once however many ticks retry it.
NewEvent FailureEvent(std::string message) {
  std::string key = fmt::format("failure:{:016x}", Fnv1a64(message));
  return NewEvent{"failure", std::move(message), std::move(key)};
}

// IAM's action wildcards: `*` any run, `?` one character; actions compare without case.
bool ActionMatches(std::string_view pattern, std::string_view action) {
  size_t p = 0, a = 0, star = std::string_view::npos, resume = 0;
  auto same = [](char x, char y) { return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y)); };
  while (a < action.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || same(pattern[p], action[a]))) {
      ++p, ++a;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++, resume = a;
    } else if (star != std::string_view::npos) {
      p = star + 1, a = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

// A policy member that is a string or a list of strings: whether any of them passes `test`.
template <typename Test>
bool AnyOf(const json::value* v, Test test) {
  if (!v) return false;
  if (const json::string* s = v->if_string()) return test(std::string_view(*s));
  if (const json::array* a = v->if_array()) {
    return std::any_of(a->begin(), a->end(), [&](const json::value& e) { return e.is_string() && test(std::string_view(e.get_string())); });
  }
  return false;
}

// A statement that is about ECS's tasks assuming the role (whatever its Effect).
bool AboutEcsTasksAssuming(const json::object& st) {
  const bool assume = AnyOf(st.if_contains("Action"), [](std::string_view a) { return ActionMatches(a, "sts:AssumeRole"); });
  const json::value* principal = st.if_contains("Principal");
  bool ecs_tasks = principal && principal->is_string() && principal->get_string() == "*";
  if (const json::object* p = principal ? principal->if_object() : nullptr) {
    ecs_tasks = AnyOf(p->if_contains("Service"), [](std::string_view s) { return s == "ecs-tasks.amazonaws.com"; });
  }
  return assume && ecs_tasks;
}

}  // namespace

bool TrustsEcsTasks(std::string_view trust_policy) {
  boost::system::error_code ec;
  json::value doc = json::parse(trust_policy, ec);
  if (ec || !doc.is_object()) return false;
  const json::value* statements = doc.as_object().if_contains("Statement");
  if (!statements) return false;
  std::vector<const json::object*> list;
  if (const json::object* one = statements->if_object()) list.push_back(one);
  if (const json::array* many = statements->if_array()) {
    for (const json::value& s : *many) {
      if (const json::object* o = s.if_object()) list.push_back(o);
    }
  }
  bool allowed = false;
  for (const json::object* st : list) {
    if (!AboutEcsTasksAssuming(*st)) continue;
    const json::value* effect = st->if_contains("Effect");
    if (!effect || !effect->is_string()) continue;
    if (effect->get_string() == "Deny" && !st->contains("Condition")) return false;
    if (effect->get_string() == "Allow") allowed = true;
  }
  return allowed;
}

Controller::Controller(store::Store& store, Deployments& deployments, Aws& aws, EdgeView* edge, Clock& clock,
                       ControllerOptions options, QueryAws* iam)
    : store_(store), deployments_(deployments), aws_(aws), iam_(iam), edge_(edge), clock_(clock),
      options_(std::move(options)),
      lease_(store, options_.holder, options_.lease_ttl, options_.successor_of,
             sched::LeaseSlot{.table = "deploy_lease", .name = options_.settings.controller_class}) {
  if (!options_.sleep) options_.sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
  if (options_.holder_gone) lease_.TakeOverWhen(options_.holder_gone);
}

std::string SecretParameterName(const ControllerOptions& o, const Deployment& d, std::string_view key) {
  return fmt::format("/{}/{}/{}/{}/{}/{}", o.ssm_prefix, o.settings.controller_class, d.project, d.group, d.id, key);
}

StatusOr<std::vector<Workload>> RenderDeployment(const ControllerOptions& o, const Deployment& d,
                                                 std::optional<std::string>* resize_note) {
  ASSIGN_OR_RETURN(TaskSize size, ResolveSize(d.spec.deploy.cpu, d.spec.deploy.memory, d.spec.deploy.capacity));
  if (resize_note && size.rounded_up) *resize_note = size.note;
  // The deployment's plain env applies to every container; a container's own value wins.
  AppSpec app = d.spec;
  for (ContainerSpec& c : app.containers) {
    for (const auto& [k, v] : d.env) c.env.emplace(k, v);
  }
  SecretRefs secrets;
  for (const auto& [k, v] : d.secrets) secrets[k] = SecretParameterName(o, d, k);
  const std::string credential = o.settings.identity_agent_image.empty()
                                     ? std::string()
                                     : SecretParameterName(o, d, kIdentityCredentialKey);
  return Render(o.settings, DeploymentRef{d.project, d.group, d.id}, app, size, secrets, credential);
}

std::string Controller::SecretName(const Deployment& d, std::string_view key) const {
  return SecretParameterName(options_, d, key);
}

// One tick's state: the epoch it leads with, its call counts, and the calls it makes.
class Controller::Tick_ {
 public:
  Tick_(Controller& c, uint64_t epoch, TickReport& report) : c_(c), epoch_(epoch), report_(report) {}

  Fence fence() const { return Fence{&c_.lease_, epoch_}; }

  StatusOr<json::value> Read(AwsService s, std::string_view action, const json::object& body) {
    ++report_.reads;
    StatusOr<json::value> v = c_.aws_.Call(s, action, body);
    if (!v.ok() && Throttled(v.status())) report_.throttled = true;
    return v;
  }

  // Every write first re-checks the lease in the store (D1): a replica that lost it writes nothing.
  Status Leading() {
    Status leading = c_.store_.Read([&](store::ReadTxn& txn) { return c_.lease_.CheckFence(txn, epoch_, c_.clock_.Now()); });
    if (!leading.ok()) return FailedPrecondition(leading.message(), Error::kLeaseLost);
    return OkStatus();
  }

  StatusOr<json::value> Write(AwsService s, std::string_view action, const json::object& body) {
    RETURN_IF_ERROR(Leading());
    ++report_.writes;
    StatusOr<json::value> v = c_.aws_.Call(s, action, body);
    if (!v.ok() && Throttled(v.status())) report_.throttled = true;
    return v;
  }

  StatusOr<std::map<std::string, ServiceView>> Snapshot() {
    const ControllerSettings& st = c_.options_.settings;
    std::vector<std::string> arns;
    std::string token;
    do {
      json::object body{{"cluster", st.cluster}, {"maxResults", 100}};
      if (!token.empty()) body["nextToken"] = token;
      StatusOr<json::value> listed = Read(AwsService::kEcs, "ListServices", body);
      if (!listed.ok() && IsError(listed.status(), Error::kNotFound) && arns.empty()) {
        cluster_missing_ = true;  // no cluster, no services: an empty snapshot, not a failed one
        return std::map<std::string, ServiceView>();
      }
      ASSIGN_OR_RETURN(json::value v, std::move(listed));
      for (const std::string& a : Strings(v.as_object().if_contains("serviceArns"))) arns.push_back(a);
      token = Str(v.as_object(), "nextToken");
    } while (!token.empty());
    std::map<std::string, ServiceView> out;
    for (size_t i = 0; i < arns.size(); i += 10) {
      json::array batch;
      for (size_t j = i; j < std::min(arns.size(), i + 10); ++j) batch.emplace_back(arns[j]);
      ASSIGN_OR_RETURN(json::value v, Read(AwsService::kEcs, "DescribeServices",
                                           {{"cluster", st.cluster}, {"services", batch}, {"include", json::array{"TAGS"}}}));
      // A partial answer is no snapshot: a service missing from it would look deleted (its
      // deployment retired, its secrets removed) or missing (created twice). Only MISSING — the
      // service is gone since ListServices — is a fact.
      if (const json::value* fs = v.as_object().if_contains("failures"); fs && fs->is_array()) {
        for (const json::value& f : fs->as_array()) {
          if (f.is_object() && Str(f.as_object(), "reason") != "MISSING") {
            return Unavailable(fmt::format("DescribeServices could not describe {}: {}", Str(f.as_object(), "arn"),
                                           Str(f.as_object(), "reason")));
          }
        }
      }
      const json::value* ss = v.as_object().if_contains("services");
      if (!ss || !ss->is_array()) return Unavailable("DescribeServices answered without services");
      for (const json::value& s : ss->as_array()) {
        if (!s.is_object()) continue;
        ServiceView view = ReadService(st, s.as_object());
        if (view.status != "ACTIVE" || !view.owner.owned) continue;  // not ours: never touched
        out[view.name] = std::move(view);
      }
    }
    return out;
  }

  // The described tasks of `arns`, 100 per DescribeTasks.
  StatusOr<std::vector<json::object>> Describe(const std::vector<std::string>& arns) {
    std::vector<json::object> out;
    for (size_t i = 0; i < arns.size(); i += 100) {
      json::array batch;
      for (size_t j = i; j < std::min(arns.size(), i + 100); ++j) batch.emplace_back(arns[j]);
      ASSIGN_OR_RETURN(json::value v, Read(AwsService::kEcs, "DescribeTasks",
                                           {{"cluster", c_.options_.settings.cluster}, {"tasks", batch}}));
      if (const json::value* ts = v.as_object().if_contains("tasks"); ts && ts->is_array()) {
        for (const json::value& t : ts->as_array()) {
          if (t.is_object()) out.push_back(t.as_object());
        }
      }
    }
    return out;
  }

  // Every task of the cluster whose desired status is RUNNING, by service name (their "group" is
  // "service:<name>"): one paginated ListTasks and DescribeTasks ×100 for the whole tick, however
  // many services there are, instead of three reads per service.
  StatusOr<std::map<std::string, std::vector<json::object>>> RunningTasks() {
    std::vector<std::string> arns;
    std::string token;
    do {
      json::object body{{"cluster", c_.options_.settings.cluster}, {"desiredStatus", "RUNNING"}, {"maxResults", 100}};
      if (!token.empty()) body["nextToken"] = token;
      ASSIGN_OR_RETURN(json::value v, Read(AwsService::kEcs, "ListTasks", body));
      for (const std::string& a : Strings(v.as_object().if_contains("taskArns"))) arns.push_back(a);
      token = Str(v.as_object(), "nextToken");
    } while (!token.empty());
    ASSIGN_OR_RETURN(std::vector<json::object> tasks, Describe(arns));
    std::map<std::string, std::vector<json::object>> out;
    for (json::object& t : tasks) {
      // RunTask lets anyone name a group "service:<name>"; ECS starts a service's own tasks as
      // "ecs-svc/<deployment>". Only those count, so a hand-run task cannot make a deployment ready.
      std::string group = Str(t, "group");
      if (group.starts_with("service:") && Str(t, "startedBy").starts_with("ecs-svc/")) {
        out[group.substr(8)].push_back(std::move(t));
      }
    }
    return out;
  }

  // One service's recently STOPPED tasks (at most 100): why a deployment's tasks fail.
  StatusOr<std::vector<json::object>> StoppedTasks(const std::string& service) {
    ASSIGN_OR_RETURN(json::value v, Read(AwsService::kEcs, "ListTasks",
                                         {{"cluster", c_.options_.settings.cluster}, {"serviceName", service},
                                          {"desiredStatus", "STOPPED"}, {"maxResults", 100}}));
    return Describe(Strings(v.as_object().if_contains("taskArns")));
  }

  // D7: the deployment's secrets in SSM, written before the revision that references them. A
  // deployment's values never change, so one already there is kept (no new version per retry).
  Status PutSecrets(const Deployment& d) {
    for (const auto& [key, value] : d.secrets) {
      StatusOr<json::value> put = Write(AwsService::kSsm, "PutParameter",
                                        {{"Name", c_.SecretName(d, key)}, {"Value", value}, {"Type", "SecureString"},
                                         {"Overwrite", false}});
      if (!put.ok() && !IsError(put.status(), Error::kAlreadyExists)) return put.status();
    }
    return OkStatus();
  }

  // D8: the deployment's identity credential, in the ADR's order — the SSM parameter, then its hash
  // on the record, then (the caller) the revision that names it. A crash between the first two
  // leaves no revision naming an unpersisted credential, and the next tick writes a new one over
  // it; once the hash is on the record the parameter is never written again.
  Status EnsureIdentityCredential(const Deployment& snapshot) {
    if (c_.options_.settings.identity_agent_image.empty() || !snapshot.identity_credential_hash.empty()) {
      return OkStatus();
    }
    // Another container's workload of this deployment may have minted it earlier in this tick.
    ASSIGN_OR_RETURN(Deployment d, c_.deployments_.Get(snapshot.id));
    if (!d.identity_credential_hash.empty()) return OkStatus();
    const std::string credential = NewIdentityCredential(d.id);
    ASSIGN_OR_RETURN(json::value put, Write(AwsService::kSsm, "PutParameter",
                                            {{"Name", c_.SecretName(d, kIdentityCredentialKey)}, {"Value", credential},
                                             {"Type", "SecureString"}, {"Overwrite", true}}));
    (void)put;
    return c_.deployments_.SetIdentityCredentialHash(d.id, IdentityCredentialHash(credential), fence());
  }

  // Every parameter under the deployment's path, deleted (after its services are gone).
  Status DeleteSecrets(const Deployment& d) { return DeleteSecretsOf(d.project, d.group, d.id); }
  Status DeleteSecretsOf(std::string_view project, std::string_view group, std::string_view id) {
    std::string path = fmt::format("/{}/{}/{}/{}/{}", c_.options_.ssm_prefix, c_.options_.settings.controller_class,
                                   project, group, id);
    std::vector<std::string> names;
    std::string token;
    do {
      json::object body{{"Path", path}, {"Recursive", true}, {"MaxResults", 10}};
      if (!token.empty()) body["NextToken"] = token;
      ASSIGN_OR_RETURN(json::value v, Read(AwsService::kSsm, "GetParametersByPath", body));
      if (const json::value* ps = v.as_object().if_contains("Parameters"); ps && ps->is_array()) {
        for (const json::value& p : ps->as_array()) {
          if (p.is_object()) names.push_back(Str(p.as_object(), "Name"));
        }
      }
      token = Str(v.as_object(), "NextToken");
    } while (!token.empty());
    for (size_t i = 0; i < names.size(); i += 10) {
      json::array batch;
      for (size_t j = i; j < std::min(names.size(), i + 10); ++j) batch.emplace_back(names[j]);
      StatusOr<json::value> del = Write(AwsService::kSsm, "DeleteParameters", {{"Names", batch}});
      if (!del.ok()) return del.status();
    }
    return OkStatus();
  }

  // Revision GC (beyond the ADR): the family's ACTIVE revisions past the newest `keep`, except any
  // a live service runs, deregistered and then deleted. Best effort: a failure is left for the next
  // retirement of the family, never a deployment's failure.
  void CollectRevisions(const std::string& family, const std::set<std::string>& in_use) {
    const int keep = c_.options_.keep_revisions;
    if (keep <= 0) return;
    StatusOr<json::value> listed =
        Read(AwsService::kEcs, "ListTaskDefinitions",
             {{"familyPrefix", family}, {"status", "ACTIVE"}, {"sort", "DESC"}, {"maxResults", 100}});
    if (!listed.ok()) return;
    std::vector<std::string> arns = Strings(listed->as_object().if_contains("taskDefinitionArns"));
    std::vector<std::string> old;
    for (size_t i = static_cast<size_t>(keep); i < arns.size(); ++i) {
      if (in_use.contains(arns[i])) continue;
      if (Write(AwsService::kEcs, "DeregisterTaskDefinition", {{"taskDefinition", arns[i]}}).ok()) old.push_back(arns[i]);
    }
    for (size_t i = 0; i < old.size(); i += 10) {
      json::array batch;
      for (size_t j = i; j < std::min(old.size(), i + 10); ++j) batch.emplace_back(old[j]);
      (void)Write(AwsService::kEcs, "DeleteTaskDefinitions", {{"taskDefinitions", batch}});
    }
  }

  // D10: the namespace's id — found by name among the private DNS namespaces, or created (when the
  // controller may: namespace_vpc) and waited for.
  StatusOr<std::string> NamespaceId() {
    if (!c_.namespace_id_.empty()) return c_.namespace_id_;
    const std::string& name = c_.options_.settings.cloudmap_namespace;
    std::string token;
    do {
      json::object body;
      if (!token.empty()) body["NextToken"] = token;
      ASSIGN_OR_RETURN(json::value v, Read(AwsService::kServiceDiscovery, "ListNamespaces", body));
      if (const json::value* ns = v.as_object().if_contains("Namespaces"); ns && ns->is_array()) {
        for (const json::value& n : ns->as_array()) {
          if (n.is_object() && Str(n.as_object(), "Name") == name && Str(n.as_object(), "Type") == "DNS_PRIVATE") {
            return c_.namespace_id_ = Str(n.as_object(), "Id");
          }
        }
      }
      token = Str(v.as_object(), "NextToken");
    } while (!token.empty());
    if (c_.options_.namespace_vpc.empty()) {
      return InvalidArgument(fmt::format("NamespaceNotFound: the Cloud Map namespace {} does not exist: create it "
                                         "(aws servicediscovery create-private-dns-namespace --name {} --vpc VPC)",
                                         name, name),
                             Error::kRejected);
    }
    ASSIGN_OR_RETURN(json::value op, Write(AwsService::kServiceDiscovery, "CreatePrivateDnsNamespace",
                                           {{"Name", name}, {"Vpc", c_.options_.namespace_vpc},
                                            {"CreatorRequestId", "paddock-deploy-" + name}}));
    const std::string op_id = Str(op.as_object(), "OperationId");
    for (int i = 0; i < 50; ++i) {
      ASSIGN_OR_RETURN(json::value got, Read(AwsService::kServiceDiscovery, "GetOperation", {{"OperationId", op_id}}));
      const json::value* o = got.as_object().if_contains("Operation");
      if (!o || !o->is_object()) break;
      const std::string status = Str(o->as_object(), "Status");
      if (status == "SUCCESS") {
        if (const json::value* t = o->as_object().if_contains("Targets"); t && t->is_object()) {
          return c_.namespace_id_ = Str(t->as_object(), "NAMESPACE");
        }
        break;
      }
      if (status == "FAIL") return Unavailable(fmt::format("creating the namespace {} failed: {}", name, Str(o->as_object(), "ErrorMessage")));
      c_.options_.sleep(std::chrono::milliseconds(100));
    }
    return Unavailable(fmt::format("the namespace {} is not ready yet", name));
  }

  // D10: the Cloud Map service of (project, group, container), found or created: one registry that
  // every deployment of it registers its tasks in, so the name resolves across a cutover.
  StatusOr<Registry> RegistryFor(const std::string& service_name) {
    if (auto it = c_.registries_.find(service_name); it != c_.registries_.end()) return it->second;
    ASSIGN_OR_RETURN(std::string ns, NamespaceId());
    std::string token;
    do {
      json::object body{{"Filters", json::array{json::object{
                                        {"Name", "NAMESPACE_ID"}, {"Values", json::array{ns}}, {"Condition", "EQ"}}}}};
      if (!token.empty()) body["NextToken"] = token;
      ASSIGN_OR_RETURN(json::value v, Read(AwsService::kServiceDiscovery, "ListServices", body));
      if (const json::value* ss = v.as_object().if_contains("Services"); ss && ss->is_array()) {
        for (const json::value& s : ss->as_array()) {
          if (!s.is_object()) continue;
          c_.registries_[Str(s.as_object(), "Name")] = Registry{Str(s.as_object(), "Id"), Str(s.as_object(), "Arn")};
        }
      }
      token = Str(v.as_object(), "NextToken");
    } while (!token.empty());
    if (auto it = c_.registries_.find(service_name); it != c_.registries_.end()) return it->second;
    ASSIGN_OR_RETURN(json::value made,
                     Write(AwsService::kServiceDiscovery, "CreateService",
                           {{"Name", service_name},
                            {"NamespaceId", ns},
                            {"CreatorRequestId", "paddock-deploy-" + service_name},
                            {"DnsConfig", {{"RoutingPolicy", "MULTIVALUE"},
                                           {"DnsRecords", json::array{json::object{{"Type", "A"}, {"TTL", 10}}}}}}}));
    const json::value* s = made.as_object().if_contains("Service");
    if (!s || !s->is_object()) return DataLoss("Cloud Map's CreateService answered without a Service");
    return c_.registries_[service_name] = Registry{Str(s->as_object(), "Id"), Str(s->as_object(), "Arn")};
  }

  // D10's collection: the registry no unfinished deployment of (project, group) uses any more.
  // Best effort: Cloud Map refuses while instances remain (ResourceInUse); a later retirement retries.
  void CollectRegistry(const std::string& service_name) {
    auto it = c_.registries_.find(service_name);
    if (it == c_.registries_.end()) {
      if (!RegistryFor(service_name).ok()) return;  // fills the cache with what exists
      it = c_.registries_.find(service_name);
      if (it == c_.registries_.end()) return;
    }
    if (Write(AwsService::kServiceDiscovery, "DeleteService", {{"Id", it->second.id}}).ok()) c_.registries_.erase(it);
  }

  // The deployment's task role, before the revision that names it (render.h TaskRoleArn): found
  // with IAM's GetRole and trusting ecs-tasks.amazonaws.com, or — with create_task_roles — made
  // (CreateRole: that trust, no permissions; the operator attaches what the project needs). A role
  // that is missing (and not to be made) or that ECS could not assume is a permanent refusal
  // (kRejected: the deployment fails, naming the role and what to do) rather than ECS's launch
  // error later; any other failure (a denied GetRole) is returned as is, so it is retried. Checked
  // once per deployment rendering.
  Status EnsureTaskRole(const Deployment& d) {
    const std::string arn = TaskRoleArn(c_.options_.settings, d.project);
    if (arn.empty() || c_.iam_ == nullptr) return OkStatus();
    auto r = c_.rendered_.find(d.id);
    if (r != c_.rendered_.end() && r->second.task_role_ready) return OkStatus();
    const size_t slash = arn.rfind('/');
    const std::string name = arn.substr(slash + 1);
    const size_t role = arn.find(":role/");
    const std::string path = role == std::string::npos || role + 5 > slash ? "/" : arn.substr(role + 5, slash - role - 4);
    ++report_.reads;
    StatusOr<std::string> got = c_.iam_->Query("iam", {{"Action", "GetRole"}, {"RoleName", name}, {"Version", "2010-05-08"}});
    if (!got.ok() && Throttled(got.status())) report_.throttled = true;
    if (!got.ok() && IsError(got.status(), Error::kNotFound)) {
      if (!c_.options_.create_task_roles) {
        return InvalidArgument(
            fmt::format("the task role {0} of project {1} does not exist: create it trusting ecs-tasks.amazonaws.com "
                        "(aws iam create-role --role-name {2}{3} --assume-role-policy-document '{4}') and attach what "
                        "{1}'s tasks may do, or start the controller with --create-task-roles",
                        arn, d.project, name, path == "/" ? "" : " --path " + path, kTaskRoleTrust),
            Error::kRejected);
      }
      RETURN_IF_ERROR(Leading());
      ++report_.writes;
      StatusOr<std::string> made = c_.iam_->Query(
          "iam", {{"Action", "CreateRole"}, {"RoleName", name}, {"Path", path},
                  {"AssumeRolePolicyDocument", std::string(kTaskRoleTrust)},
                  {"Description", fmt::format("The tasks of project {}, deployed by Paddock (no permissions until "
                                              "an operator attaches them)", d.project)},
                  {"Version", "2010-05-08"}});
      if (!made.ok() && !IsError(made.status(), Error::kAlreadyExists)) return made.status();
      if (made.ok()) {
        if (r != c_.rendered_.end()) r->second.task_role_ready = true;
        return OkStatus();
      }
      // Made by someone else meanwhile: check it as one found.
      ++report_.reads;
      got = c_.iam_->Query("iam", {{"Action", "GetRole"}, {"RoleName", name}, {"Version", "2010-05-08"}});
    }
    if (!got.ok()) return got.status();
    const std::string trust = PercentDecode(XmlText(*got, "AssumeRolePolicyDocument"));
    if (!TrustsEcsTasks(trust)) {
      return InvalidArgument(fmt::format("the task role {} of project {} does not trust ecs-tasks.amazonaws.com, so "
                                         "ECS cannot give it to the project's tasks: let ecs-tasks.amazonaws.com "
                                         "assume it (aws iam update-assume-role-policy --role-name {} "
                                         "--policy-document '{}')",
                                         arn, d.project, name, kTaskRoleTrust),
                             Error::kRejected);
    }
    if (r != c_.rendered_.end()) r->second.task_role_ready = true;
    return OkStatus();
  }

  StatusOr<std::string> Register(const Workload& w) {
    TimePoint now = c_.clock_.Now();
    if (c_.last_register_ != TimePoint{} && now - c_.last_register_ < c_.options_.register_spacing) {
      c_.options_.sleep(std::chrono::duration_cast<std::chrono::milliseconds>(c_.options_.register_spacing -
                                                                               (now - c_.last_register_)));
    }
    c_.last_register_ = c_.clock_.Now();
    ASSIGN_OR_RETURN(json::value v, Write(AwsService::kEcs, "RegisterTaskDefinition", w.task_definition));
    const json::value* td = v.as_object().if_contains("taskDefinition");
    if (!td || !td->is_object()) return DataLoss("RegisterTaskDefinition answered without a taskDefinition");
    return Str(td->as_object(), "taskDefinitionArn");
  }

  Status Act(const ServiceAction& a, const Deployment* d) {
    const ControllerSettings& st = c_.options_.settings;
    using K = ServiceAction::Kind;
    switch (a.kind) {
      case K::kCreate:
      case K::kRoll: {
        if (cluster_missing_ && !c_.options_.create_cluster) {
          return InvalidArgument(fmt::format("ClusterNotFoundException: cluster {} does not exist: create it, or "
                                             "point the controller at another (--cluster)",
                                             st.cluster),
                                 Error::kRejected);
        }
        if (cluster_missing_) {
          // With both Fargate providers, so `capacity = "interruptible"` (FARGATE_SPOT) places too.
          ASSIGN_OR_RETURN(json::value made,
                           Write(AwsService::kEcs, "CreateCluster",
                                 {{"clusterName", st.cluster},
                                  {"capacityProviders", json::array{"FARGATE", "FARGATE_SPOT"}}}));
          (void)made;
          cluster_missing_ = false;
        }
        if (d) RETURN_IF_ERROR(EnsureTaskRole(*d));
        if (d) RETURN_IF_ERROR(PutSecrets(*d));
        if (d) RETURN_IF_ERROR(EnsureIdentityCredential(*d));
        // One revision per rendering: a create or roll retried after a later step failed reuses it.
        std::string* registered = nullptr;
        if (auto r = c_.rendered_.find(a.deployment_id); r != c_.rendered_.end()) {
          registered = &r->second.registered[a.workload->hash];
        }
        std::string arn = registered ? *registered : "";
        if (arn.empty()) {
          ASSIGN_OR_RETURN(arn, Register(*a.workload));
          if (registered) *registered = arn;
        }
        if (a.kind == K::kCreate) {
          json::object body = a.workload->service;
          body["taskDefinition"] = arn;
          if (!st.cloudmap_namespace.empty() && d) {
            ASSIGN_OR_RETURN(Registry registry,
                             RegistryFor(DiscoveryName(st, {d->project, d->group, d->id}, a.workload->container)));
            body["serviceRegistries"] = json::array{json::object{{"registryArn", registry.arn}}};
          }
          ASSIGN_OR_RETURN(json::value created, Write(AwsService::kEcs, "CreateService", body));
          (void)created;
        } else {
          ASSIGN_OR_RETURN(json::value updated,
                           Write(AwsService::kEcs, "UpdateService",
                                 {{"cluster", st.cluster}, {"service", a.service_name}, {"taskDefinition", arn},
                                  {"desiredCount", a.workload->service.at("desiredCount")}}));
          (void)updated;
        }
        // The durable marker first (D4): a lost TagResource must not re-roll the service forever.
        RETURN_IF_ERROR(c_.deployments_.RecordApplied(a.deployment_id, a.workload->container, a.workload->hash, fence()));
        if (a.kind == K::kRoll && !a.service_arn.empty()) {
          json::array tags{json::object{{"key", fmt::format("{}/{}", st.label_namespace, tag::kTaskDefinitionHash)},
                                        {"value", a.workload->hash}}};
          StatusOr<json::value> tagged = Write(AwsService::kEcs, "TagResource", {{"resourceArn", a.service_arn}, {"tags", tags}});
          if (!tagged.ok() && IsError(tagged.status(), Error::kLeaseLost)) return tagged.status();
        }
        return OkStatus();
      }
      case K::kScale:
        return Write(AwsService::kEcs, "UpdateService",
                     {{"cluster", st.cluster}, {"service", a.service_name},
                      {"desiredCount", a.workload->service.at("desiredCount")}})
            .status();
      case K::kNetwork:
        return Write(AwsService::kEcs, "UpdateService",
                     {{"cluster", st.cluster}, {"service", a.service_name},
                      {"networkConfiguration", a.workload->service.at("networkConfiguration")}})
            .status();
      case K::kRetire:
        return Write(AwsService::kEcs, "UpdateService", {{"cluster", st.cluster}, {"service", a.service_name}, {"desiredCount", 0}})
            .status();
      case K::kDelete: {
        StatusOr<json::value> v = Write(AwsService::kEcs, "DeleteService", {{"cluster", st.cluster}, {"service", a.service_name}, {"force", true}});
        if (!v.ok() && IsError(v.status(), Error::kNotFound)) return OkStatus();
        return v.status();
      }
    }
    return OkStatus();
  }

 private:
  Controller& c_;
  uint64_t epoch_;
  TickReport& report_;
  bool cluster_missing_ = false;
};

StatusOr<TickReport> Controller::Tick() {
  TickReport report;
  ASSIGN_OR_RETURN(std::optional<uint64_t> epoch, lease_.TryAcquire(clock_.Now()));
  if (!epoch) return report;
  report.led = true;
  Tick_ tick(*this, *epoch, report);

  ASSIGN_OR_RETURN(std::vector<Deployment> unfinished, deployments_.Unfinished());
  // One read of the cluster for the whole tick; without it nothing is decided (a partial view would
  // make live services look orphaned).
  StatusOr<std::map<std::string, ServiceView>> snapshot = tick.Snapshot();
  if (!snapshot.ok()) {
    if (IsError(snapshot.status(), Error::kDenied)) {
      // The controller may not read its cluster: nothing can move until an operator grants it, so
      // each deployment it has work for says why (once), rather than waiting without a word.
      const std::string message = fmt::format("reading the cluster {}: {}", options_.settings.cluster,
                                              snapshot.status().message());
      for (const Deployment& d : unfinished) {
        RETURN_IF_ERROR(deployments_.AppendEvents(d.id, {FailureEvent(message)}, tick.fence()));
      }
    }
    if (!Throttled(snapshot.status())) return snapshot.status();
    // Throttled: nothing is decided or done, and the next tick comes later (backoff), not an error.
    backoff_ = std::min(backoff_ + 1, 5);
    return report;
  }

  PlanInput in;
  in.now = clock_.Now();
  in.deploying_timeout = options_.deploying_timeout;
  in.drain = options_.drain;
  in.edge_configured = edge_ != nullptr;
  in.services = std::move(*snapshot);
  in.orphan_retiring_since = orphan_retiring_since_;
  // A failed read of the running tasks leaves every deployment's state as it is this tick (B7).
  StatusOr<std::map<std::string, std::vector<json::object>>> running =
      std::map<std::string, std::vector<json::object>>();
  if (std::any_of(unfinished.begin(), unfinished.end(), [](const Deployment& d) { return !IsTerminal(d.state); })) {
    running = tick.RunningTasks();
  }
  std::set<std::string> ids;
  for (Deployment& d : unfinished) {
    ids.insert(d.id);
    DeploymentInput di;
    if (!IsTerminal(d.state)) {
      // A deployment's spec, env and secrets never change, nor do the settings in a process: its
      // rendering is made once and kept while the deployment is unfinished.
      auto cached = rendered_.find(d.id);
      if (cached == rendered_.end()) {
        Rendering r;
        r.workloads = RenderDeployment(options_, d, &r.resize_note);
        cached = rendered_.emplace(d.id, std::move(r)).first;
      }
      di.workloads = cached->second.workloads;
      di.resize_note = cached->second.resize_note;
      if (di.workloads.ok() && running.ok()) {
        // Stopped tasks say why a deployment is not (yet) healthy: read for those still getting
        // there, and only for a service whose tasks ECS counts as failed (one read per service
        // would spend the read budget on every deploying deployment, every tick), or when it is
        // Unhealthy.
        const bool getting_there = d.state == State::kPending || d.state == State::kDeploying;
        for (const Workload& w : *di.workloads) {
          auto service = in.services.find(w.service_name);
          if (service == in.services.end()) continue;
          std::vector<TaskView>& tasks = di.tasks[w.service_name];
          if (auto it = running->find(w.service_name); it != running->end()) {
            for (const json::object& t : it->second) tasks.push_back(ReadTask(t, w.container));
          }
          const bool why = (getting_there && service->second.failed_tasks > 0) || d.state == State::kUnhealthy;
          if (!why) continue;
          StatusOr<std::vector<json::object>> stopped = tick.StoppedTasks(w.service_name);
          if (!stopped.ok()) {
            di.tasks.erase(w.service_name);  // unread: its deployment's state is left as it is
            continue;
          }
          for (const json::object& t : *stopped) tasks.push_back(ReadTask(t, w.container));
        }
      }
    }
    di.record = std::move(d);
    in.deployments.push_back(std::move(di));
  }
  if (edge_) {
    StatusOr<std::map<std::string, std::string>> servers = edge_->Servers();
    if (servers.ok()) {
      in.edge_servers = std::move(*servers);
    } else {
      in.edge_read_ok = false;
    }
  }
  for (const auto& [name, s] : in.services) {
    if (!s.owner.complete || ids.contains(s.owner.deployment_id) || in.orphans.contains(s.owner.deployment_id)) continue;
    StatusOr<Deployment> found = deployments_.Get(s.owner.deployment_id);
    if (!found.ok()) {
      in.orphans[s.owner.deployment_id] =
          found.status().code() == StatusCode::kNotFound ? OrphanVerdict::kGone : OrphanVerdict::kUnknown;
    } else {
      in.orphans[s.owner.deployment_id] = IsTerminal(found->state) ? OrphanVerdict::kGone : OrphanVerdict::kUnknown;
    }
  }

  report.plan = PlanTick(in);
  const Plan& plan = report.plan;
  report.busy = !plan.actions.empty() || !plan.transitions.empty() || !plan.mark_retiring.empty() ||
                !plan.orphans_retiring.empty();
  for (const DeploymentInput& d : in.deployments) {
    const State st = d.record.state;
    if (st == State::kPending || st == State::kDeploying || (IsTerminal(st) && !d.record.retired)) report.busy = true;
  }
  std::map<std::string, const Deployment*> by_id;
  for (const DeploymentInput& d : in.deployments) by_id[d.record.id] = &d.record;

  // Pending -> Deploying before anything is created, so the deploying clock starts first.
  // A deployment a user stopped since the tick read it: its planned transition is stale, and
  // nothing planned for it is done (the next tick retires it); the others' plans go on.
  std::set<std::string> stale;
  auto stale_or_error = [&](const Status& moved, const std::string& id) -> Status {
    if (moved.ok()) return moved;
    if (moved.code() == StatusCode::kFailedPrecondition && !IsError(moved, sched::Error::kLeaseLost)) {
      stale.insert(id);
      return OkStatus();
    }
    return moved;
  };
  for (const PlannedTransition& t : plan.transitions) {
    if (t.to != State::kDeploying) continue;
    RETURN_IF_ERROR(stale_or_error(deployments_.Transition(t.deployment_id, t.to, t.reason, tick.fence()), t.deployment_id));
  }
  std::set<std::string> failed_now;
  for (const ServiceAction& a : plan.actions) {
    if (report.throttled) break;  // the rest waits for a later tick
    const Deployment* d = a.deployment_id.empty() ? nullptr : by_id[a.deployment_id];
    if (stale.contains(a.deployment_id)) continue;
    Status s = tick.Act(a, d);
    if (s.ok() && a.kind == ServiceAction::Kind::kDelete && a.deployment_id.empty()) {
      // D13a: the last service of a deployment this store never knew (or long finished) is gone:
      // the secrets at that deployment's path go too. Best effort — nothing is left to retry it
      // from, and the next sweep finds no service.
      const Ownership& owner = in.services.at(a.service_name).owner;
      const bool last = std::none_of(in.services.begin(), in.services.end(), [&](const auto& kv) {
        return kv.first != a.service_name && kv.second.owner.deployment_id == owner.deployment_id;
      });
      auto verdict = in.orphans.find(owner.deployment_id);
      if (last && verdict != in.orphans.end() && verdict->second == OrphanVerdict::kGone) {
        s = tick.DeleteSecretsOf(owner.project, owner.group, owner.deployment_id);
      }
    }
    if (s.ok() || Throttled(s)) continue;
    if (IsError(s, Error::kLeaseLost) || IsError(s, sched::Error::kLeaseLost)) return report;
    // A permanent refusal of a deployment still deploying fails it, with ECS's words; anything
    // else is an event, retried next tick.
    if (d && IsError(s, Error::kRejected) && (d->state == State::kPending || d->state == State::kDeploying)) {
      if (failed_now.insert(d->id).second) {
        RETURN_IF_ERROR(stale_or_error(
            deployments_.Transition(d->id, State::kFailed,
                                    fmt::format("{} of {}: {}", KindName(a.kind), a.service_name, s.message()), tick.fence()),
            d->id));
      }
      continue;
    }
    if (d) {
      // The same failure, retried tick after tick, is one event.
      RETURN_IF_ERROR(deployments_.AppendEvents(
          d->id, {FailureEvent(fmt::format("{} {}: {}", KindName(a.kind), a.service_name, s.message()))}, tick.fence()));
    }
  }
  for (const std::string& name : plan.orphans_retiring) orphan_retiring_since_.emplace(name, in.now);
  std::erase_if(orphan_retiring_since_, [&](const auto& kv) { return !in.services.contains(kv.first); });

  // ECS repeats a service's recent events on every DescribeServices: only those not forwarded yet
  // reach the store (which dedupes them again by id, across restarts), so a steady tick writes nothing.
  std::map<std::string, std::vector<NewEvent>> events;
  for (const auto& [id, e] : plan.events) {
    if (!e.dedupe_key.empty() && forwarded_[id].contains(e.dedupe_key)) continue;
    events[id].push_back(e);
  }
  for (const auto& [id, es] : events) {
    RETURN_IF_ERROR(deployments_.AppendEvents(id, es, tick.fence()));
    for (const NewEvent& e : es) {
      if (!e.dedupe_key.empty()) forwarded_[id].insert(e.dedupe_key);
    }
  }
  std::erase_if(forwarded_, [&](const auto& kv) { return !ids.contains(kv.first); });
  std::erase_if(rendered_, [&](const auto& kv) { return !ids.contains(kv.first); });
  for (const auto& [id, tasks] : plan.observations) RETURN_IF_ERROR(deployments_.RecordTasks(id, tasks, tick.fence()));
  for (const PlannedTransition& t : plan.transitions) {
    if (t.to == State::kDeploying || failed_now.contains(t.deployment_id)) continue;
    if (stale.contains(t.deployment_id)) continue;
    RETURN_IF_ERROR(stale_or_error(deployments_.Transition(t.deployment_id, t.to, t.reason, tick.fence()), t.deployment_id));
  }
  for (const std::string& id : plan.mark_retiring) RETURN_IF_ERROR(deployments_.MarkRetiring(id, tick.fence()));
  if (!report.throttled) {
    for (const std::string& id : plan.mark_retired) {
      // Its services are gone: now its secrets, then the record says so (D7).
      Status gone = tick.DeleteSecrets(*by_id[id]);
      if (!gone.ok()) {
        if (IsError(gone, Error::kLeaseLost)) return report;
        // Retried next tick; a refusal that will not pass by itself (a denied call) is said once.
        if (!Throttled(gone) && gone.code() != StatusCode::kUnavailable) {
          RETURN_IF_ERROR(deployments_.AppendEvents(
              id, {FailureEvent(fmt::format("deleting its secrets: {}", gone.message()))}, tick.fence()));
        }
        continue;
      }
      std::set<std::string> in_use;
      for (const auto& [name, s] : in.services) in_use.insert(s.task_definition);
      const Deployment& d = *by_id[id];
      for (const ContainerSpec& c : d.spec.containers) {
        tick.CollectRevisions(FamilyName(options_.settings, {d.project, d.group, d.id}, c.name), in_use);
        // Its Cloud Map service, when no other deployment of its group still needs it.
        if (options_.settings.cloudmap_namespace.empty()) continue;
        const bool needed = std::any_of(in.deployments.begin(), in.deployments.end(), [&](const DeploymentInput& o) {
          return o.record.id != d.id && !o.record.retired && o.record.project == d.project && o.record.group == d.group &&
                 std::any_of(o.record.spec.containers.begin(), o.record.spec.containers.end(),
                             [&](const ContainerSpec& oc) { return oc.name == c.name; });
        });
        if (!needed) tick.CollectRegistry(DiscoveryName(options_.settings, {d.project, d.group, d.id}, c.name));
      }
      RETURN_IF_ERROR(deployments_.MarkRetired(id, tick.fence()));
    }
  }
  backoff_ = report.throttled ? std::min(backoff_ + 1, 5) : 0;
  return report;
}

void Controller::Nudge() {
  {
    std::lock_guard lock(mu_);
    nudged_ = true;
  }
  cv_.notify_all();
}

void Controller::Release() {
  Status s = lease_.Release();
  if (!s.ok()) fmt::print(stderr, "paddock: controller lease: {}\n", s.ToString());
}

void Controller::Run(std::stop_token stop) {
  std::mt19937_64 rng(std::random_device{}());
  while (!stop.stop_requested()) {
    StatusOr<TickReport> r = Tick();
    if (!r.ok()) fmt::print(stderr, "paddock: controller tick: {}\n", r.status().ToString());
    if (r.ok() && r->busy && options_.ticked) options_.ticked();
    const bool busy = r.ok() && r->busy && options_.busy_interval.count() > 0;
    // ±20% jitter, so replicas that started together do not poll together; doubled per throttled tick.
    std::uniform_real_distribution<double> jitter(0.8, 1.2);
    const auto base = busy ? std::min(options_.busy_interval, options_.interval) : options_.interval;
    auto wait = std::chrono::milliseconds(
        static_cast<int64_t>(static_cast<double>(base.count()) * jitter(rng) * (1 << backoff_)));
    // While it does not lead, a replica retries at the lease's pace, not the tick's.
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, stop, wait, [&] { return nudged_; });
    nudged_ = false;
  }
}

}  // namespace paddock::deploy
