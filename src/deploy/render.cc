// deploy/render: a deployment's containers as ECS task definitions and services (render.h).
#include "deploy/render.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "aws/sigv4.h"

namespace paddock::deploy {
namespace {

namespace json = boost::json;

// ECS's limit on family and service names, the length Traefik names are kept to (well inside any
// limit of the edge's, so a suffix such as "-auth" never has to be cut), a DNS label's, and the
// hex digits of a hash that keep a shortened name distinct.
constexpr size_t kMaxEcsName = 255;
constexpr size_t kMaxTraefikName = 200;
constexpr size_t kMaxDnsLabel = 63;
constexpr size_t kHashSuffixHex = 16;
// ECS's tag bounds.
constexpr size_t kMaxTagKey = 128;
constexpr size_t kMaxTagValue = 256;
constexpr size_t kMaxTaskDefinitionBytes = 65536;

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// `raw` with every character outside [A-Za-z0-9_-] made '-'; over `max`, its first
// max - 17 characters, '-' and 16 hex of the SHA-256 of `raw` — stable, and distinct for names
// that differ anywhere, their ends included.
std::string BoundedName(std::string_view raw, size_t max) {
  std::string name(raw);
  for (char& c : name) {
    if (!IsNameChar(c)) c = '-';
  }
  if (name.size() <= max) return name;
  name.resize(max - kHashSuffixHex - 1);
  return name + "-" + aws::Sha256Hex(raw).substr(0, kHashSuffixHex);
}

// "<prefix>-<project>-<group>-<container>": the family, and the stem of the Traefik names, which
// do not name the deployment so that two deployments' services merge into one load balancer.
// The parts are joined with '_', which no project, group or container name may hold (they are
// DNS labels): "a-b" + "c" and "a" + "b-c" name different things, so two projects never share a
// family, a service or, at the edge, a load balancer (one would take the other's requests).
std::string Stem(const ControllerSettings& settings, const DeploymentRef& ref, std::string_view container) {
  return fmt::format("{}_{}_{}_{}", settings.resource_prefix, ref.project, ref.group, container);
}

// Eight hex digits of a hash of what must be equal for two deployments' definitions of one name
// to merge. The edge deletes a name whose definitions differ (edge/merge.h), so a setting that
// changes between deployments (a health check, an access class) must change the name as well:
// then the old and new deployments' routers are two routers of one rule, each with its own
// servers, and the cutover happens when the old one's tasks leave the edge — never a 404 between.
std::string ConfigTag(std::string_view config) { return aws::Sha256Hex(config).substr(0, 8); }

std::string HealthConfig(const ContainerSpec& c) {
  if (!c.health_check) return "none";
  return fmt::format("{}|{}|{}", c.health_check->path, c.health_check->interval_seconds, c.health_check->timeout_seconds);
}

std::string TraefikService(const ControllerSettings& s, const DeploymentRef& ref, const ContainerSpec& c) {
  return BoundedName(fmt::format("{}-s{}", Stem(s, ref, c.name), ConfigTag(HealthConfig(c))), kMaxTraefikName);
}

// A route's router is named by its path prefix, not its position: a route added or removed in the
// next deployment leaves the other routes' names alone, so during the overlap the old and new
// deployments' routers of one prefix are the same router (the edge deletes a name whose two
// definitions differ — edge/merge.h).
std::string TraefikRouter(const ControllerSettings& s, const DeploymentRef& ref, const ContainerSpec& c,
                          const Route& r, std::string_view service) {
  const std::string config = fmt::format("{}|{}|{}|{}", r.path_prefix, service, AccessName(r.access),
                                         r.access == Access::kPrivate ? s.auth_url : "");
  return BoundedName(fmt::format("{}-r{}", Stem(s, ref, c.name), ConfigTag(config)), kMaxTraefikName);
}

std::string TraefikAuth(const ControllerSettings& s, const DeploymentRef& ref, std::string_view container) {
  return BoundedName(fmt::format("{}-auth{}", Stem(s, ref, container), ConfigTag(s.auth_url)), kMaxTraefikName);
}

// "web-api" -> "PADDOCK_CONTAINER_HOST__WEB_API".
std::string HostVariable(std::string_view container) {
  std::string name = "PADDOCK_CONTAINER_HOST__";
  for (char c : container) {
    if (c == '-') {
      name += '_';
    } else if (c >= 'a' && c <= 'z') {
      name += static_cast<char>(c - 'a' + 'A');
    } else {
      name += c;
    }
  }
  return name;
}

std::string PathRule(std::string_view host, std::string_view prefix) {
  if (prefix == "/") return fmt::format("Host(`{}`)", host);
  return fmt::format("Host(`{}`) && PathPrefix(`{}`)", host, prefix);
}

// The JSON text of `v` with every object's keys sorted (by bytes), without spaces: the same
// content gives the same text whatever order it was built in.
void WriteCanonical(const json::value& v, std::string& out) {
  switch (v.kind()) {
    case json::kind::object: {
      const json::object& o = v.get_object();
      std::vector<const json::key_value_pair*> members;
      members.reserve(o.size());
      for (const json::key_value_pair& kv : o) members.push_back(&kv);
      std::sort(members.begin(), members.end(),
                [](const json::key_value_pair* a, const json::key_value_pair* b) { return a->key() < b->key(); });
      out += '{';
      for (size_t i = 0; i < members.size(); ++i) {
        if (i > 0) out += ',';
        out += json::serialize(json::string(members[i]->key()));
        out += ':';
        WriteCanonical(members[i]->value(), out);
      }
      out += '}';
      return;
    }
    case json::kind::array: {
      out += '[';
      bool first = true;
      for (const json::value& e : v.get_array()) {
        if (!first) out += ',';
        first = false;
        WriteCanonical(e, out);
      }
      out += ']';
      return;
    }
    default:
      out += json::serialize(v);
  }
}

json::array NameValues(const std::map<std::string, std::string>& m, std::string_view value_key) {
  json::array a;
  for (const auto& [name, value] : m) a.emplace_back(json::object{{"name", name}, {value_key, value}});
  return a;
}

json::array TagArray(const std::vector<std::pair<std::string, std::string>>& tags) {
  json::array a;
  for (const auto& [key, value] : tags) a.emplace_back(json::object{{"key", key}, {"value", value}});
  return a;
}

bool IsReservedEnv(std::string_view name) { return name == "PORT" || name.starts_with("PADDOCK_"); }

// The labels of one container: the class label always; Traefik's only for a container some route
// names. A container no route names is withheld from the edge (traefik.enable=false) even when it
// has a port: with no router of its own, the ECS provider would give it a default one
// (Host(`<its normalized name>`)) and serve it to anyone sending that Host.
StatusOr<json::object> DockerLabels(const ControllerSettings& settings, const DeploymentRef& ref, const AppSpec& app,
                                    const ContainerSpec& c) {
  json::object labels;
  labels[fmt::format("{}/controller-class", settings.label_namespace)] = settings.controller_class;
  std::vector<const Route*> routes;
  for (const Route& r : app.routes) {
    if (r.container == c.name) routes.push_back(&r);
  }
  if (!c.port || routes.empty()) {
    labels["traefik.enable"] = "false";
    return labels;
  }
  labels["traefik.enable"] = "true";
  const std::string service = TraefikService(settings, ref, c);
  const std::string lb = fmt::format("traefik.http.services.{}.loadbalancer", service);
  labels[lb + ".server.port"] = std::to_string(*c.port);
  if (c.health_check) {
    labels[lb + ".healthcheck.path"] = c.health_check->path;
    labels[lb + ".healthcheck.interval"] = fmt::format("{}s", c.health_check->interval_seconds);
    labels[lb + ".healthcheck.timeout"] = fmt::format("{}s", c.health_check->timeout_seconds);
  }
  const std::string host = AppHost(settings, ref.project, ref.group);
  const std::string auth = TraefikAuth(settings, ref, c.name);
  for (const Route* r : routes) {
    const std::string router = fmt::format("traefik.http.routers.{}", TraefikRouter(settings, ref, c, *r, service));
    const std::string rule = PathRule(host, r->path_prefix);
    labels[router + ".rule"] = rule;
    labels[router + ".entrypoints"] = settings.entry_point;
    labels[router + ".service"] = service;
    // What the edge would default to (len(rule)), written out so a longer prefix visibly wins.
    labels[router + ".priority"] = std::to_string(rule.size());
    if (r->access == Access::kPrivate) {
      if (settings.auth_url.empty()) {
        return FailedPrecondition(fmt::format(
            "route {} is private, but the controller has no auth_url: it is withheld rather than served in the open",
            r->path_prefix));
      }
      labels[fmt::format("traefik.http.middlewares.{}.forwardauth.address", auth)] = settings.auth_url;
      labels[router + ".middlewares"] = auth;
    }
  }
  return labels;
}

}  // namespace

std::string AppHost(const ControllerSettings& settings, std::string_view project, std::string_view group) {
  if (group == "default") return fmt::format("{}.{}", project, settings.base_domain);
  return fmt::format("{}-{}.{}", project, group, settings.base_domain);
}

std::string AppUrl(const ControllerSettings& settings, std::string_view project, std::string_view group) {
  std::string host = AppHost(settings, project, group);
  if (settings.url_port == 0) return fmt::format("{}://{}/", settings.url_scheme, host);
  return fmt::format("{}://{}:{}/", settings.url_scheme, host, settings.url_port);
}

std::string FamilyName(const ControllerSettings& settings, const DeploymentRef& ref, std::string_view container) {
  return BoundedName(Stem(settings, ref, container), kMaxEcsName);
}

std::string ServiceName(const ControllerSettings& settings, const DeploymentRef& ref, std::string_view container) {
  return BoundedName(
      fmt::format("{}_{}_{}_{}_{}", settings.resource_prefix, ref.project, ref.group, ref.id, container), kMaxEcsName);
}

// "<project>-<group>-<container>" lowercased, characters outside [a-z0-9-] made '-', no '-' at
// either end; over 63 characters, its first 46, '-' and 16 hex of the SHA-256 of the whole. The
// prefix is left out: the namespace is the install's own.
std::string DiscoveryName(const ControllerSettings&, const DeploymentRef& ref, std::string_view container) {
  const std::string raw = fmt::format("{}-{}-{}", ref.project, ref.group, container);
  std::string name;
  for (char c : raw) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    name += ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) ? c : '-';
  }
  auto trim = [](std::string& s) {
    while (!s.empty() && s.back() == '-') s.pop_back();
    size_t first = s.find_first_not_of('-');
    s.erase(0, first == std::string::npos ? s.size() : first);
  };
  trim(name);
  if (name.size() <= kMaxDnsLabel) return name;
  name.resize(kMaxDnsLabel - kHashSuffixHex - 1);
  trim(name);
  return name + "-" + aws::Sha256Hex(raw).substr(0, kHashSuffixHex);
}

namespace {

// IAM's role name characters: [A-Za-z0-9+=,.@_-].
bool IsRoleNameChar(char c) {
  return IsNameChar(c) || c == '+' || c == '=' || c == ',' || c == '.' || c == '@';
}

std::string ReplaceAll(std::string s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

}  // namespace

Status CheckTaskRolePattern(std::string_view pattern) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format("task role pattern '{}' {}", pattern, why));
  };
  // arn:<partition>:iam::<account>:role/<path/><name>
  if (!pattern.starts_with("arn:")) return bad("must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)");
  const size_t iam = pattern.find(":iam::");
  const size_t role = pattern.find(":role/");
  if (iam == std::string_view::npos || role == std::string_view::npos || role < iam) {
    return bad("must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)");
  }
  const std::string_view account = pattern.substr(iam + 6, role - iam - 6);
  if (account.size() != 12 || account.find_first_not_of("0123456789") != std::string_view::npos) {
    return bad("must name a 12-digit account");
  }
  const std::string_view path_and_name = pattern.substr(role + 6);
  const std::string_view name = path_and_name.substr(path_and_name.rfind('/') + 1);
  if (name.find("{project}") == std::string_view::npos) {
    return bad("must hold {project} in the role's name, so each project has a role of its own");
  }
  std::string rest = ReplaceAll(ReplaceAll(std::string(path_and_name), "{project}", "p"), "{class}", "c");
  for (char c : rest) {
    if (!IsRoleNameChar(c) && c != '/') {
      return bad(fmt::format("holds '{}': a role's path and name take letters, digits, +=,.@_- and, in the path, /; "
                             "the only placeholders are {{project}} and {{class}}",
                             c));
    }
  }
  return OkStatus();
}

std::string TaskRoleArn(const ControllerSettings& settings, std::string_view project) {
  if (settings.task_role_pattern.empty()) return settings.task_role_arn;
  std::string arn = ReplaceAll(ReplaceAll(settings.task_role_pattern, "{project}", project), "{class}",
                               settings.controller_class);
  const size_t slash = arn.rfind('/');
  const std::string name = arn.substr(slash + 1);
  if (name.size() <= kMaxRoleName) return arn;
  std::string shortened = name.substr(0, kMaxRoleName - kHashSuffixHex - 1);
  return arn.substr(0, slash + 1) + shortened + "-" + aws::Sha256Hex(name).substr(0, kHashSuffixHex);
}

Ownership ReadTags(const ControllerSettings& settings, const std::vector<std::pair<std::string, std::string>>& tags) {
  Ownership o;
  const std::string ns = settings.label_namespace + "/";
  std::optional<std::string> managed_by, controller_class;
  std::set<std::string_view> seen;
  for (const auto& [key, value] : tags) {
    if (!key.starts_with(ns)) continue;
    std::string_view name = std::string_view(key).substr(ns.size());
    if (name == tag::kManagedBy) managed_by = value;
    else if (name == tag::kControllerClass) controller_class = value;
    else if (name == tag::kProject) o.project = value;
    else if (name == tag::kGroup) o.group = value;
    else if (name == tag::kDeploymentId) o.deployment_id = value;
    else if (name == tag::kContainer) o.container = value;
    else if (name == tag::kTaskDefinitionHash) o.task_definition_hash = value;
    else continue;
    seen.insert(name);
  }
  o.owned = managed_by == "paddock" && controller_class == settings.controller_class;
  o.complete = o.owned && seen.contains(tag::kProject) && seen.contains(tag::kGroup) &&
               seen.contains(tag::kDeploymentId) && seen.contains(tag::kContainer);
  return o;
}

namespace {

// awslogs into the install's one group (made by the first task that logs to it).
json::object AwsLogs(const ControllerSettings& settings, std::string stream_prefix) {
  return json::object{{"logDriver", "awslogs"},
                      {"options",
                       {{"awslogs-group", settings.log_group},
                        {"awslogs-region", settings.log_region},
                        {"awslogs-stream-prefix", std::move(stream_prefix)},
                        {"awslogs-create-group", "true"}}}};
}

// The D8 sidecar's container definition (Render's comment says what each part is for).
json::object IdentitySidecar(const ControllerSettings& settings, const DeploymentRef& ref, const AppSpec& app,
                             std::string_view credential) {
  std::string audiences;
  for (const auto& [file, audience] : app.identity_audiences) {
    audiences += fmt::format("{}{}={}", audiences.empty() ? "" : " ", file, audience);
  }
  const std::map<std::string, std::string> env{
      {"PADDOCK_IDENTITY_AUDIENCES", audiences},
      {"PADDOCK_IDENTITY_TOKEN_TTL_SECONDS", std::to_string(settings.identity_token_ttl_seconds)},
      {"PADDOCK_IDENTITY_TOKEN_URL", settings.identity_exchange_url}};
  json::object c{{"name", kIdentityContainer},
                 {"image", settings.identity_agent_image},
                 {"essential", false},
                 {"command", json::array{"/bin/sh", kIdentityAgentPath}},
                 {"environment", NameValues(env, "value")},
                 {"secrets", json::array{json::object{{"name", kIdentityCredentialEnv}, {"valueFrom", credential}}}},
                 {"memoryReservation", 32},
                 {"linuxParameters", json::object{{"initProcessEnabled", true}}},
                 {"mountPoints", json::array{json::object{
                                     {"sourceVolume", kIdentityVolume}, {"containerPath", kIdentityDir}, {"readOnly", false}}}},
                 // The first passing check releases the app at once; failures within ECS's longest
                 // start period (a control plane slow to answer at task start) do not count.
                 {"healthCheck", json::object{{"command", json::array{"CMD", "/bin/sh", kIdentityAgentPath, "--check"}},
                                              {"interval", 5},
                                              {"timeout", 2},
                                              {"retries", 3},
                                              {"startPeriod", 300}}},
                 {"restartPolicy", json::object{{"enabled", true}}},
                 {"dockerLabels", json::object{{fmt::format("{}/controller-class", settings.label_namespace),
                                                settings.controller_class},
                                               {"traefik.enable", "false"}}}};
  if (!settings.log_group.empty()) {
    c["logConfiguration"] = AwsLogs(settings, fmt::format("{}-identity/{}/{}", settings.resource_prefix, ref.project, ref.id));
  }
  return c;
}

}  // namespace

StatusOr<std::vector<Workload>> Render(const ControllerSettings& settings, const DeploymentRef& ref,
                                       const AppSpec& app, const TaskSize& size, const SecretRefs& secrets,
                                       std::string_view identity_credential) {
  if (std::optional<SpecProblem> p = CheckAppSpec(app)) return InvalidArgument(p->message);
  const bool identity = !settings.identity_agent_image.empty();
  if (!identity && !app.identity_audiences.empty()) {
    return InvalidArgument("[identity] audiences need the identity sidecar, which this controller does not run "
                           "(--identity-agent-image): the tokens would never be written");
  }
  if (identity && identity_credential.empty()) {
    return InvalidArgument("identity is on but the deployment has no credential parameter");
  }
  if (identity && settings.execution_role_arn.empty()) {
    return InvalidArgument("the identity sidecar reads its credential as the task's execution role: this controller "
                           "has none (--execution-role-arn)");
  }
  const bool ec2 = app.deploy.capacity == Capacity::kEc2;
  const std::string app_url = AppUrl(settings, ref.project, ref.group);
  std::vector<Workload> out;
  for (const ContainerSpec& c : app.containers) {
    Workload w;
    w.container = c.name;
    w.family = FamilyName(settings, ref, c.name);
    w.service_name = ServiceName(settings, ref, c.name);

    // ECS takes each name once across environment and secrets; the reserved names are Paddock's.
    for (const auto& [name, value_from] : secrets) {
      if (IsReservedEnv(name)) {
        return InvalidArgument(fmt::format("secret {} is set by Paddock (PORT and PADDOCK_* are reserved)", name));
      }
      if (c.env.contains(name)) {
        return InvalidArgument(
            fmt::format("{} is both a secret and a plain env var of container {}: keep one", name, c.name));
      }
    }
    std::map<std::string, std::string> env = c.env;
    if (c.port) env["PORT"] = std::to_string(*c.port);
    env["PADDOCK_PROJECT"] = ref.project;
    env["PADDOCK_DEPLOYMENT"] = ref.id;
    env["PADDOCK_APP_URL"] = app_url;
    if (identity) env[std::string(kIdentityDirEnv)] = std::string(kIdentityDir);
    if (!settings.cloudmap_namespace.empty()) {
      for (const ContainerSpec& other : app.containers) {
        if (other.name == c.name) continue;
        env[HostVariable(other.name)] =
            fmt::format("{}.{}", DiscoveryName(settings, ref, other.name), settings.cloudmap_namespace);
      }
    }

    json::object container{{"name", c.name}, {"image", c.image}, {"essential", true}};
    if (!c.command.empty()) {
      json::array command;
      for (const std::string& arg : c.command) command.emplace_back(arg);
      container["command"] = std::move(command);
    }
    container["environment"] = NameValues(env, "value");
    if (!secrets.empty()) container["secrets"] = NameValues(secrets, "valueFrom");
    // An init process (tini) as PID 1: the app gets SIGTERM when its task stops (a bare PID 1
    // ignores it and is killed only after the stop timeout), and its orphans are reaped.
    container["linuxParameters"] = json::object{{"initProcessEnabled", true}};
    if (c.port) {
      container["portMappings"] = json::array{json::object{{"containerPort", *c.port}, {"protocol", "tcp"}}};
    }
    ASSIGN_OR_RETURN(container["dockerLabels"], DockerLabels(settings, ref, app, c));
    if (!settings.log_group.empty()) {
      container["logConfiguration"] =
          AwsLogs(settings, fmt::format("{}/{}/{}", settings.resource_prefix, ref.project, ref.id));
    }

    auto key = [&](std::string_view name) { return fmt::format("{}/{}", settings.label_namespace, name); };
    w.tags = {{key(tag::kManagedBy), "paddock"},       {key(tag::kControllerClass), settings.controller_class},
              {key(tag::kProject), ref.project},        {key(tag::kGroup), ref.group},
              {key(tag::kDeploymentId), ref.id},        {key(tag::kContainer), c.name}};
    for (const auto& [k, v] : w.tags) {
      if (k.size() > kMaxTagKey) {
        return InvalidArgument(fmt::format("tag key {} is {} characters long; ECS takes at most {}", k, k.size(), kMaxTagKey));
      }
      if (v.size() > kMaxTagValue) {
        return InvalidArgument(
            fmt::format("tag {} is {} characters long; ECS takes values of at most {}", k, v.size(), kMaxTagValue));
      }
    }

    json::object& td = w.task_definition;
    td["family"] = w.family;
    td["networkMode"] = "awsvpc";
    td["requiresCompatibilities"] = json::array{ec2 ? "EC2" : "FARGATE"};
    td["cpu"] = std::to_string(size.cpu_units);
    td["memory"] = std::to_string(size.memory_mib);
    td["runtimePlatform"] = json::object{{"cpuArchitecture", "X86_64"}, {"operatingSystemFamily", "LINUX"}};
    if (!settings.execution_role_arn.empty()) td["executionRoleArn"] = settings.execution_role_arn;
    if (std::string role = TaskRoleArn(settings, ref.project); !role.empty()) td["taskRoleArn"] = role;
    if (identity) {
      container["mountPoints"] = json::array{
          json::object{{"sourceVolume", kIdentityVolume}, {"containerPath", kIdentityDir}, {"readOnly", true}}};
      container["dependsOn"] = json::array{json::object{{"containerName", kIdentityContainer}, {"condition", "HEALTHY"}}};
      td["containerDefinitions"] = json::array{std::move(container), IdentitySidecar(settings, ref, app, identity_credential)};
      td["volumes"] = json::array{json::object{{"name", kIdentityVolume}}};
    } else {
      td["containerDefinitions"] = json::array{std::move(container)};
    }
    td["tags"] = TagArray(w.tags);

    std::string canonical;
    WriteCanonical(td, canonical);
    // Refused here with the reason, not by ECS with a generic one (ECS's quota: 64 KiB per task
    // definition; the canonical form is the request's body without its whitespace).
    if (canonical.size() > kMaxTaskDefinitionBytes) {
      return InvalidArgument(fmt::format("the task definition of container {} is {} bytes; ECS takes at most {} (64 KiB): "
                                         "move large env values to secrets or files in the image",
                                         c.name, canonical.size(), kMaxTaskDefinitionBytes));
    }
    if (!secrets.empty() && settings.execution_role_arn.empty()) {
      return InvalidArgument(fmt::format("container {} has secrets ({}), and ECS reads them as the task's execution "
                                         "role: this controller has none (--execution-role-arn)",
                                         c.name, secrets.begin()->first));
    }
    if (identity) {
      // The hash without the sidecar's image: upgrading the agent rolls no running service.
      json::object unversioned = td;
      unversioned["containerDefinitions"].as_array().back().as_object()["image"] = "";
      canonical.clear();
      WriteCanonical(unversioned, canonical);
    }
    w.hash = aws::Sha256Hex(canonical);
    w.tags.emplace_back(key(tag::kTaskDefinitionHash), w.hash);

    json::object& svc = w.service;
    svc["cluster"] = settings.cluster;
    svc["serviceName"] = w.service_name;
    svc["desiredCount"] = app.deploy.replicas;
    switch (app.deploy.capacity) {
      case Capacity::kFargate: svc["launchType"] = "FARGATE"; break;
      case Capacity::kEc2: svc["launchType"] = "EC2"; break;
      case Capacity::kInterruptible:
        svc["capacityProviderStrategy"] = json::array{json::object{{"capacityProvider", "FARGATE_SPOT"}, {"weight", 1}}};
        break;
    }
    json::object awsvpc;
    if (!settings.subnets.empty()) awsvpc["subnets"] = json::value_from(settings.subnets);
    if (!settings.security_groups.empty()) awsvpc["securityGroups"] = json::value_from(settings.security_groups);
    if (!ec2) awsvpc["assignPublicIp"] = settings.assign_public_ip ? "ENABLED" : "DISABLED";
    svc["networkConfiguration"] = json::object{{"awsvpcConfiguration", std::move(awsvpc)}};
    svc["propagateTags"] = "SERVICE";
    svc["enableECSManagedTags"] = true;
    json::object deployment{{"maximumPercent", 200}, {"minimumHealthyPercent", 100}};
    if (settings.circuit_breaker) {
      deployment["deploymentCircuitBreaker"] = json::object{{"enable", true}, {"rollback", false}};
    }
    svc["deploymentConfiguration"] = std::move(deployment);
    svc["tags"] = TagArray(w.tags);
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace paddock::deploy
