#include "ecs/service/services.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <boost/json.hpp>
#include <set>

#include "common/encoding.h"
#include "common/json_fields.h"
#include "ecs/capacity/capacity_providers.h"
#include "ecs/common/reap.h"
#include "ecs/common/records.h"
#include "ecs/common/resource_arn.h"
#include "ecs/service/breaker.h"
#include "ecs/service/internal/common.h"
#include "ecs/service/internal/record.h"
#include "ecs/service/internal/resolved.h"
#include "ecs/task/placement.h"
#include "store/key.h"
#include "vpc/default_vpc.h"
#include "vpc/security_groups.h"
#include "ecs/common/errors.h"

namespace paddock::ecs::service {
namespace json = boost::json;
using json_fields::OptArray;
using json_fields::OptObject;
using json_fields::Str;
using namespace internal;  // NOLINT: the record codec is this module's own

namespace {

constexpr auto kInactiveRetention = std::chrono::hours(1);
constexpr std::string_view kDigits = "0123456789";
constexpr std::string_view kUrlSafe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr std::string_view kFargatePlatform = "1.4.0";
constexpr int64_t kMaxGrace = 2147483647;


std::optional<int64_t> OptInt(const json::object& o, std::string_view key) { return json_fields::Int(o, key); }

// Calls `change` on every service deployment of the service whose status is in `statuses`, page
// by page (a long-lived service has many), and writes each of them back.
Status UpdateServiceDeployments(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                std::string_view name, std::initializer_list<std::string_view> statuses,
                                const std::function<void(json::object&)>& change) {
  store::Range range = store::PrefixRange(ScopeKey(scope).Str(cluster).Str(name).Done());
  while (true) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kDeployments, range, 500));
    for (const auto& row : rows) {
      ASSIGN_OR_RETURN(json::object sd, ParseRecordObject(row.value, "service deployment"));
      const std::string st = Str(sd, "status");
      if (std::find(statuses.begin(), statuses.end(), st) == statuses.end()) continue;
      change(sd);
      RETURN_IF_ERROR(txn.Put(kDeployments, row.key, json::serialize(sd)));
    }
    if (rows.size() < 500) return OkStatus();
    range.begin = store::KeySuccessor(rows.back().key);
  }
}

// A service reference (name or ARN) in the request's cluster.
struct ServiceRef {
  std::string name;
  std::string given;           // as the caller wrote it
  bool other_cluster = false;  // an ARN naming another cluster: never found there
};

StatusOr<ServiceRef> ParseServiceRef(std::string_view text, std::string_view cluster, const Scope& scope,
                                     std::string_view action, std::string_view caller_arn) {
  ASSIGN_OR_RETURN(ClusterScopedRef r,
                   ParseClusterScopedRef(text, ResourceKind::kService, IsServiceName, scope, action, caller_arn));
  ServiceRef out{r.id, std::string(text), r.cluster && *r.cluster != cluster};
  return out;
}

// Capacity provider strategy items as AWS reports them: base and weight default to 0.
json::array NormalizeStrategy(const json::array& strategy) {
  json::array out;
  for (const auto& item : strategy) {
    if (!item.is_object()) continue;
    const auto& o = item.get_object();
    json::object n;
    n["capacityProvider"] = Str(o, "capacityProvider");
    n["weight"] = OptInt(o, "weight").value_or(0);
    n["base"] = OptInt(o, "base").value_or(0);
    out.push_back(std::move(n));
  }
  return out;
}

// deploymentConfiguration: `given` merged over `current` (or the defaults), validated.
StatusOr<json::object> DeploymentConfiguration(const json::object* current, const json::object* given,
                                               std::string_view scheduling) {
  const bool daemon = scheduling == "DAEMON";
  json::object out;
  if (current != nullptr) {
    out = *current;
  } else {
    out["deploymentCircuitBreaker"] = json::object{{"enable", false}, {"rollback", false}};
    out["maximumPercent"] = daemon ? 100 : 200;
    out["minimumHealthyPercent"] = daemon ? 0 : 100;
    out["strategy"] = "ROLLING";
  }
  if (given != nullptr) {
    for (const auto& [k, v] : *given) {
      json::value merged = v;
      // A deploymentCircuitBreaker given without its optional members keeps the ones in force
      // (AWS's UpdateService retains them; only enable and rollback are required).
      if (k == "deploymentCircuitBreaker" && merged.is_object() && out.contains(k) && out[k].is_object()) {
        for (std::string_view kept : {"resetOnHealthyTask", "thresholdConfiguration"})
          if (!merged.get_object().contains(kept) && out[k].get_object().contains(kept))
            merged.get_object()[kept] = out[k].get_object()[kept];
      }
      out[k] = std::move(merged);
    }
    if (auto s = json_fields::OptStr(*given, "strategy"); s && *s != "ROLLING")
      return ParamError(fmt::format(
          "The deployment strategy {} is not supported by Paddock. Use ROLLING (the rolling update).", *s));
    for (std::string_view unsupported : {"canaryConfiguration", "linearConfiguration", "lifecycleHooks"})
      if (given->contains(unsupported))
        return ParamError(fmt::format("{} applies to BLUE_GREEN, LINEAR and CANARY deployments, which Paddock does not support.",
                                      unsupported));
  }
  const int64_t max = OptInt(out, "maximumPercent").value_or(daemon ? 100 : 200);
  const int64_t min = OptInt(out, "minimumHealthyPercent").value_or(daemon ? 0 : 100);
  out["maximumPercent"] = max;
  out["minimumHealthyPercent"] = min;
  if (min < 0 || min > 100)
    return ParamError(fmt::format("minimumHealthyPercent must be between 0 and 100, but was {}.", min));
  if (daemon && max != 100)
    return ParamError("The daemon scheduling strategy does not support values above 100 for maximumPercent.");
  if (max < 100) return ParamError(fmt::format("maximumPercent must be at least 100, but was {}.", max));
  if (!out.contains("deploymentCircuitBreaker"))
    out["deploymentCircuitBreaker"] = json::object{{"enable", false}, {"rollback", false}};
  RETURN_IF_ERROR(ParseCircuitBreaker(json_fields::Obj(out, "deploymentCircuitBreaker")).status());
  if (!out.contains("strategy")) out["strategy"] = "ROLLING";
  if (auto b = OptInt(out, "bakeTimeInMinutes"); b && (*b < 0 || *b > 1440))
    return ParamError("bakeTimeInMinutes must be between 0 and 1440.");
  return out;
}

Status ValidatePlacement(const std::optional<json::array>& constraints, const std::optional<json::array>& strategies,
                         size_t definition_constraints, bool fargate, bool daemon) {
  if (constraints) {
    if (constraints->size() + definition_constraints > 10)
      return ParamError("A maximum of 10 placement constraints can be specified, including those of the task definition.");
    if (fargate && !constraints->empty()) return ParamError("Placement constraints are not supported with FARGATE launch type.");
    ASSIGN_OR_RETURN(auto parsed, task::placement::ParseConstraints(*constraints));
    (void)parsed;
  }
  if (strategies) {
    if (strategies->size() > 5) return ParamError("A maximum of 5 placement strategies can be specified.");
    if (daemon && !strategies->empty())
      return ParamError("The daemon scheduling strategy does not support placement strategies.");
    if (fargate && !strategies->empty()) return ParamError("Placement strategies are not supported with FARGATE launch type.");
    ASSIGN_OR_RETURN(auto parsed, task::placement::ParseStrategies(*strategies));
    (void)parsed;
  }
  return OkStatus();
}

// What the record keeps of features Paddock stores but does not run, or refuses.
Status CheckUnsupported(const json::object& in) {
  if (auto sc = OptObject(in, "serviceConnectConfiguration"); sc && json_fields::Bool(*sc, "enabled").value_or(false))
    return ParamError("Service Connect is not supported by Paddock yet: serviceConnectConfiguration must not be enabled.");
  if (auto v = OptArray(in, "volumeConfigurations"); v && !v->empty())
    return ParamError("volumeConfigurations are not supported by Paddock yet.");
  if (auto v = OptArray(in, "vpcLatticeConfigurations"); v && !v->empty())
    return ParamError("vpcLatticeConfigurations are not supported by Paddock yet.");
  if (json_fields::Bool(in, "enableExecuteCommand").value_or(false))
    return ParamError("ECS Exec (enableExecuteCommand) is not supported by Paddock yet.");
  if (auto lbs = OptArray(in, "loadBalancers"); lbs && lbs->size() > 5)
    return ParamError("A service can have at most 5 load balancers (target groups).");
  if (auto regs = OptArray(in, "serviceRegistries"); regs && regs->size() > 1)
    return ParamError("A service can be associated with at most one service registry.");
  if (auto g = OptInt(in, "healthCheckGracePeriodSeconds"); g && (*g < 0 || *g > kMaxGrace))
    return ParamError("healthCheckGracePeriodSeconds must be between 0 and 2147483647.");
  return OkStatus();
}

Status CheckDesiredCount(int64_t n, int64_t quota) {
  if (n < 0 || n > quota)
    return ParamError(fmt::format("desiredCount must be between 0 and {} (tasks per service), but was {}.", quota, n));
  return OkStatus();
}

// The containers of a pinned definition: (name, image).
std::vector<std::pair<std::string, std::string>> ContainersOf(const std::vector<taskdef::ContainerView>& containers) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const taskdef::ContainerView& c : containers) out.emplace_back(c.name, c.image);
  return out;
}

json::object EventJson(const Event& e) {
  return json::object{{"id", e.id}, {"createdAtMs", Ms(e.created_at)}, {"message", e.message}};
}

}  // namespace

// ---- What Create and Update resolve before their transaction ----

// struct Services::Cluster and Services::Launch: internal/resolved.h (task_sets.cc uses them too).

StatusOr<Services::Cluster> Services::ClusterFor(const Scope& scope, std::string_view name) {
  ASSIGN_OR_RETURN(std::optional<cluster::ClusterFacts> c, clusters_.Facts(scope, name));
  if (!c || c->status != "ACTIVE") return ClusterNotFoundError();
  Cluster out;
  out.name = std::string(name);
  out.arn = c->arn;
  out.providers.insert(c->capacity_providers.begin(), c->capacity_providers.end());
  if (!c->default_strategy.empty()) out.default_strategy = NormalizeStrategy(c->default_strategy);
  return out;
}

StatusOr<Services::Launch> Services::ResolveLaunch(const Scope& scope, const Cluster& cluster, const json::object& in,
                                                   const std::optional<taskdef::LaunchView>& view,
                                                   std::string_view network_mode,
                                                   const std::vector<std::string>& compatibilities,
                                                   std::string_view scheduling, bool external_controller) {
  (void)view;
  Launch out;
  auto launch_type = json_fields::OptStr(in, "launchType");
  std::optional<json::array> strategy = OptArray(in, "capacityProviderStrategy");
  if (strategy && strategy->empty()) strategy.reset();
  if (launch_type && strategy)
    return ParamError("Specifying both a launch type and capacity provider strategy is not supported. Remove one and try again.");
  if (!launch_type && !strategy) {
    if (!cluster.default_strategy.empty()) strategy = cluster.default_strategy;
    else launch_type = "EC2";
  }
  if (strategy) {
    json::array normalized = NormalizeStrategy(*strategy);
    int with_base = 0;
    for (const auto& item : normalized) {
      const std::string p = Str(item.get_object(), "capacityProvider");
      if (!cluster.providers.count(p))
        return ParamError(
            "The specified capacity provider strategy cannot contain a capacity provider that is not associated with "
            "the cluster. Associate the capacity provider with the cluster or specify a valid capacity provider and "
            "try again.");
      if (OptInt(item.get_object(), "base").value_or(0) > 0) ++with_base;
    }
    if (with_base > 1) return ParamError("A base value can be set for only one capacity provider in a capacity provider strategy.");
    std::vector<std::string> names;
    for (const auto& item : normalized) names.push_back(Str(item.get_object(), "capacityProvider"));
    ASSIGN_OR_RETURN(out.type, capacity::StrategyLaunchType(names));
    out.service.capacity_provider_strategy = normalized;
  } else {
    if (*launch_type != "FARGATE" && *launch_type != "EC2")
      return ParamError(fmt::format("The {} launch type is not supported by Paddock. Use FARGATE or EC2.", *launch_type));
    out.service.launch_type = *launch_type;
    out.type = *launch_type;
  }
  if (scheduling == "DAEMON" && out.type == "FARGATE")
    return ParamError("The daemon scheduling strategy does not support the FARGATE launch type. Change the launch type and try again");
  if (!compatibilities.empty() &&
      std::find(compatibilities.begin(), compatibilities.end(), out.type) == compatibilities.end())
    return ParamError(fmt::format("Task definition does not support launch_type {}.", out.type));

  auto platform = json_fields::OptStr(in, "platformVersion");
  if (out.type == "EC2") {
    if (platform) return ParamError("The platform version must be null when specifying an EC2 launch type.");
  } else {
    if (platform && *platform != "LATEST" && *platform != kFargatePlatform)
      return InvalidArgument("The specified platform does not exist.", ecs::Error::kPlatformUnknown);
    out.service.platform_version = platform.value_or("LATEST");
  }

  // Network: awsvpc definitions need subnets of the caller's default VPC; others take none.
  std::optional<json::object> network = OptObject(in, "networkConfiguration");
  if (!external_controller || !network_mode.empty()) {
    if (network_mode != "awsvpc" && network)
      return ParamError("Network Configuration is not valid for the given networkMode of this task definition.");
    if (network_mode == "awsvpc" && !network)
      return ParamError("Network Configuration must be provided when networkMode 'awsvpc' is specified.");
  }
  if (network) {
    auto it = network->find("awsvpcConfiguration");
    if (it == network->end() || !it->value().is_object())
      return ParamError("Network Configuration must be provided when networkMode 'awsvpc' is specified.");
    json::object awsvpc = it->value().get_object();
    const vpc::DefaultVpc default_vpc = vpc::DefaultVpcFor(scope);
    std::vector<std::string> ids = json_fields::Strings(awsvpc, "subnets");
    if (ids.empty()) return ParamError("subnets can not be empty.");
    if (ids.size() > 16) return ParamError("At most 16 subnets can be specified.");
    for (const auto& id : ids)
      if (default_vpc.FindSubnet(id) == nullptr)
        return ParamError(fmt::format(
            "Error retrieving subnet information for [{}]: The subnet ID '{}' does not exist (ECS)", id, id));
    // Groups of the caller's VPC (vpc/security_groups.h); the service's tasks get them.
    std::vector<std::string> groups = json_fields::Strings(awsvpc, "securityGroups");
    if (groups.size() > vpc::kMaxGroupsPerInterface) return ParamError("At most 5 security groups can be specified.");
    std::vector<std::string> missing;
    RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(missing, vpc::MissingGroups(txn, scope, groups));
      return OkStatus();
    }));
    if (!missing.empty())
      return ParamError(fmt::format(
          "Error retrieving security group information for [{0}]: The security group '{0}' does not exist (ECS)",
          missing.front()));
    if (!awsvpc.contains("assignPublicIp")) awsvpc["assignPublicIp"] = "DISABLED";
    json::object normalized;
    normalized["awsvpcConfiguration"] = std::move(awsvpc);
    out.service.network_configuration = std::move(normalized);
  }
  out.deployment = out.service;
  if (out.deployment.platform_version) out.deployment.platform_version = std::string(kFargatePlatform);
  return out;
}

std::string Services::NewId(size_t n, std::string_view alphabet) {
  return id_gen_ ? id_gen_(n, alphabet) : RandomString(n, alphabet);
}

Status Services::StartDeployment(store::WriteTxn& txn, const Scope& scope, const std::string& cluster,
                                 json::object& record, const taskdef::LaunchView& definition, const LaunchConfig& launch,
                                 TimePoint now) {
  const std::string& task_definition = definition.arn;
  const std::vector<std::pair<std::string, std::string>> containers = ContainersOf(definition.containers);
  const std::string name = Str(record, "serviceName");
  const std::string service_arn = Str(record, "serviceArn");
  Deployment d;
  d.id = "ecs-svc/" + NewId(19, kDigits);
  d.status = "PRIMARY";
  d.task_definition = task_definition;
  d.desired_count = json_fields::Int(record, "desiredCount").value_or(0);
  d.rollout_state = "IN_PROGRESS";
  d.rollout_state_reason = fmt::format("ECS deployment {} in progress.", d.id);
  d.created_at = now;
  d.updated_at = now;
  d.launch = launch;
  d.definition_constraints = definition.placement_constraints;
  d.service_deployment_id = NewId(21, kUrlSafe);
  d.service_revision_id = NewId(19, kDigits);

  // The previous deployments: PRIMARY becomes ACTIVE; their service deployments, if still in
  // progress, are stopped by this newer one; they are this deployment's sources.
  json::array deployments;
  json::array sources;
  for (const json::object* o : json_fields::Objects(record, "deployments")) {
    Deployment old = DecodeDeployment(*o);
    if (old.status == "PRIMARY") old.status = "ACTIVE";
    old.updated_at = now;
    if (!old.service_revision_id.empty())
      sources.push_back(json::object{{"arn", ServiceRevisionArn(scope, cluster, name, old.service_revision_id)},
                                     {"requestedTaskCount", old.desired_count},
                                     {"runningTaskCount", old.running_count},
                                     {"pendingTaskCount", old.pending_count}});
    if (!old.service_deployment_id.empty()) {
      const std::string key = ChildKey(scope, cluster, name, old.service_deployment_id);
      ASSIGN_OR_RETURN(auto text, txn.Get(kDeployments, key));
      if (text) {
        ASSIGN_OR_RETURN(json::object sd, ParseRecordObject(*text, "service deployment"));
        const std::string st = Str(sd, "status");
        if (st == "PENDING" || st == "IN_PROGRESS" || st == "ROLLBACK_REQUESTED" || st == "STOP_REQUESTED") {
          sd["status"] = "STOPPED";
          sd["statusReason"] = "Service deployment stopped: a newer service deployment started.";
          sd["stoppedAt"] = Seconds(Ms(now));
          sd["finishedAt"] = Seconds(Ms(now));
          sd["updatedAt"] = Seconds(Ms(now));
          if (auto cb = sd.find("deploymentCircuitBreaker"); cb != sd.end() && cb->value().is_object() &&
                                                               Str(cb->value().get_object(), "status") == "MONITORING")
            cb->value().get_object()["status"] = "MONITORING_COMPLETE";
          RETURN_IF_ERROR(txn.Put(kDeployments, key, json::serialize(sd)));
        }
      }
    }
    deployments.push_back(EncodeDeployment(old));
  }
  // A rollback still under way is abandoned too, also when the deployment it rolls back from has
  // already left the list.
  RETURN_IF_ERROR(UpdateServiceDeployments(txn, scope, cluster, name, {"ROLLBACK_IN_PROGRESS"}, [&](json::object& sd) {
    sd["status"] = "STOPPED";
    sd["statusReason"] = "Service deployment stopped: a newer service deployment started.";
    sd["stoppedAt"] = Seconds(Ms(now));
    sd["finishedAt"] = Seconds(Ms(now));
    sd["updatedAt"] = Seconds(Ms(now));
  }));
  deployments.insert(deployments.begin(), EncodeDeployment(d));
  record["deployments"] = std::move(deployments);
  record["taskDefinition"] = task_definition;

  // The ServiceRevision: the workload configuration this deployment runs (immutable).
  json::object revision;
  revision["serviceRevisionArn"] = ServiceRevisionArn(scope, cluster, name, d.service_revision_id);
  revision["serviceArn"] = service_arn;
  revision["clusterArn"] = ClusterArn(scope, cluster);
  revision["taskDefinition"] = task_definition;
  if (launch.capacity_provider_strategy) revision["capacityProviderStrategy"] = *launch.capacity_provider_strategy;
  if (launch.launch_type) revision["launchType"] = *launch.launch_type;
  if (launch.platform_version) {
    revision["platformVersion"] = *launch.platform_version;
    revision["platformFamily"] = "Linux";
  }
  revision["loadBalancers"] = OptArray(record, "loadBalancers").value_or(json::array());
  revision["serviceRegistries"] = OptArray(record, "serviceRegistries").value_or(json::array());
  if (launch.network_configuration) revision["networkConfiguration"] = *launch.network_configuration;
  json::array images;
  for (const auto& [cname, image] : containers) images.push_back(json::object{{"containerName", cname}, {"image", image}});
  revision["containerImages"] = std::move(images);
  revision["guardDutyEnabled"] = false;
  revision["createdAt"] = Seconds(Ms(now));
  RETURN_IF_ERROR(txn.Put(kRevisions, ChildKey(scope, cluster, name, d.service_revision_id), json::serialize(revision)));

  // The ServiceDeployment: this deployment's progress, as the deployment APIs show it.
  const json::object& dc = json_fields::Obj(record, "deploymentConfiguration");
  const StatusOr<CircuitBreakerSettings> cb = ParseCircuitBreaker(json_fields::Obj(dc, "deploymentCircuitBreaker"));
  const CircuitBreakerSettings settings = cb.ok() ? *cb : CircuitBreakerSettings{};
  const bool breaker = settings.enable;
  json::object sd;
  sd["serviceDeploymentArn"] = ServiceDeploymentArn(scope, cluster, name, d.service_deployment_id);
  sd["serviceArn"] = service_arn;
  sd["clusterArn"] = ClusterArn(scope, cluster);
  sd["createdAt"] = Seconds(Ms(now));
  sd["startedAt"] = Seconds(Ms(now));
  sd["updatedAt"] = Seconds(Ms(now));
  sd["sourceServiceRevisions"] = std::move(sources);
  sd["targetServiceRevision"] = json::object{{"arn", revision["serviceRevisionArn"]},
                                             {"requestedTaskCount", d.desired_count},
                                             {"runningTaskCount", 0},
                                             {"pendingTaskCount", 0}};
  sd["status"] = "IN_PROGRESS";
  sd["deploymentConfiguration"] = dc;
  const int64_t threshold = FailureThreshold(d.desired_count, settings.threshold);
  sd["deploymentCircuitBreaker"] = json::object{
      {"status", breaker ? "MONITORING" : "DISABLED"}, {"failureCount", 0}, {"threshold", threshold}};
  if (auto alarms = OptObject(dc, "alarms")) {
    const bool on = json_fields::Bool(*alarms, "enable").value_or(false);
    sd["alarms"] = json::object{{"status", on ? "MONITORING" : "DISABLED"},
                                {"alarmNames", OptArray(*alarms, "alarmNames").value_or(json::array())},
                                {"triggeredAlarmNames", json::array()}};
  } else {
    sd["alarms"] = json::object{{"status", "DISABLED"}};
  }
  RETURN_IF_ERROR(txn.Put(kDeployments, ChildKey(scope, cluster, name, d.service_deployment_id), json::serialize(sd)));
  return PruneServiceHistory(txn, scope, cluster, name, record, now);
}

// ---- serviceRegistries ----

Status Services::CheckRegistries(const Scope& scope, const json::array& registries, std::string_view network_mode,
                                 const std::vector<taskdef::ContainerView>& containers) {
  for (const json::value& v : registries) {
    if (!v.is_object()) return ParamError("Each serviceRegistries entry must be an object.");
    const json::object& reg = v.get_object();
    const std::string arn = Str(reg, "registryArn");
    if (arn.empty()) return ParamError("A service registry must specify registryArn, the ARN of a Cloud Map service.");
    const std::optional<int64_t> port = OptInt(reg, "port");
    const std::optional<std::string> container_name = json_fields::OptStr(reg, "containerName");
    const std::optional<int64_t> container_port = OptInt(reg, "containerPort");
    for (const std::optional<int64_t>& p : {port, container_port})
      if (p && (*p < 1 || *p > 65535))
        return ParamError(fmt::format("The port {} specified in serviceRegistries must be from 1 to 65535.", *p));
    if (port && (container_name || container_port))
      return ParamError(
          "Specify a value for either 'port' or the 'containerName' and 'containerPort' combination, but not both. "
          "Remove one and retry.");
    if (container_name.has_value() != container_port.has_value())
      return ParamError(
          "The values specified for serviceRegistries require both 'containerName' and 'containerPort', or neither.");
    std::optional<task::RegistryFacts> facts;
    if (discovery_ != nullptr) {
      StatusOr<task::RegistryFacts> described = discovery_->Describe(scope, arn);
      if (!described.ok() && described.status().code() == StatusCode::kNotFound)
        return ParamError(fmt::format("The service registry {} was not found: it must be a Cloud Map service of "
                                      "this account and region.",
                                      arn));
      RETURN_IF_ERROR(described.status());
      facts = *described;
    }
    if (containers.empty()) continue;   // EXTERNAL: the task sets' definitions are not known yet
    const std::string mode = network_mode.empty() ? std::string("bridge") : std::string(network_mode);
    if (mode == "bridge" || mode == "host") {
      if (!container_name)
        return ParamError(fmt::format("The task definition uses the '{}' network mode: serviceRegistries require a "
                                      "'containerName' and 'containerPort' combination from the task definition.",
                                      mode));
      if (facts && !facts->srv)
        return ParamError(fmt::format("The service registry {} has no SRV record: with the '{}' network mode, a "
                                      "registry needs an SRV record (A and AAAA records need the awsvpc network mode).",
                                      arn, mode));
    } else if (facts && facts->srv && !port && !container_name) {
      return ParamError(
          "The values specified for serviceRegistries require a value for either 'port' or the 'containerName' and "
          "'containerPort' combination: the service registry has an SRV record.");
    } else if (facts && !facts->srv && (port || container_port)) {
      return ParamError(fmt::format(
          "The values specified for serviceRegistries do not require a value for '{}'. Remove the value and retry.",
          port ? "port" : "containerPort"));
    }
    if (!container_name) continue;
    // The container and its port mapping, from the definition.
    bool named = false, mapped = false;
    for (const taskdef::ContainerView& c : containers) {
      if (c.name != *container_name) continue;
      named = true;
      for (const taskdef::PortMappingView& m : c.port_mappings)
        mapped = mapped || (container_port && m.container_port == *container_port);
    }
    if (!named)
      return ParamError(fmt::format("The container '{}' specified in serviceRegistries is not in the task definition.",
                                    *container_name));
    if (!mapped)
      return ParamError(fmt::format(
          "The container port {} specified in serviceRegistries is not a port mapping of container '{}'.",
          *container_port, *container_name));
  }
  return OkStatus();
}

// ---- The API ----

StatusOr<std::string> Services::Create(const Scope& scope, std::string_view caller_arn, const json::object& in,
                                       TimePoint now, const taskdef::LaunchCheck& check) {
  const std::string name = Str(in, "serviceName");
  if (!IsServiceName(name))
    return ParamError(fmt::format(
        "Service name '{}' is invalid. Up to 255 letters (uppercase and lowercase), numbers, underscores, and hyphens are allowed.",
        name));
  ASSIGN_OR_RETURN(std::string cluster_name, cluster::ClusterName(json_fields::OptStr(in, "cluster"), scope,
                                                                  "CreateService", caller_arn));
  std::optional<std::string> token = json_fields::OptStr(in, "clientToken");
  if (token) {
    bool ok = !token->empty() && token->size() <= 36;
    for (char c : *token) ok = ok && c >= 33 && c <= 126;
    if (!ok) return ParamError("clientToken must be 1 to 36 characters in the range 33-126.");
  }
  const std::string controller = [&] {
    std::string t = Str(json_fields::Obj(in, "deploymentController"), "type");
    return t.empty() ? std::string("ECS") : t;
  }();
  if (controller == "CODE_DEPLOY")
    return ParamError(
        "The CODE_DEPLOY deployment controller is not supported by Paddock: it needs AWS CodeDeploy. Use the ECS or "
        "EXTERNAL deployment controller.");
  const bool external = controller == "EXTERNAL";
  const std::string scheduling = json_fields::OptStr(in, "schedulingStrategy").value_or("REPLICA");
  const bool daemon = scheduling == "DAEMON";
  if (daemon && external)
    return ParamError("The daemon scheduling strategy does not support the EXTERNAL deployment controller.");
  const std::optional<int64_t> desired = OptInt(in, "desiredCount");
  if (daemon && desired)
    return ParamError(
        "The daemon scheduling strategy does not support a desired count for services. Remove the desired count value "
        "and try again");
  if (!daemon && !desired) return ParamError("desiredCount is required for a service with the REPLICA scheduling strategy.");
  if (desired) RETURN_IF_ERROR(CheckDesiredCount(*desired, quotas_.tasks_per_service));
  RETURN_IF_ERROR(CheckUnsupported(in));
  Tags tags = TagsFrom(in);
  RETURN_IF_ERROR(ValidateTags(tags));
  if (tags.size() > kMaxTagsPerResource) return ParamError("A resource can have at most 50 tags.");

  ASSIGN_OR_RETURN(Cluster cluster, ClusterFor(scope, cluster_name));

  // The task definition, resolved ONCE: the deployment pins this revision.
  std::optional<taskdef::LaunchView> view;
  if (auto td = json_fields::OptStr(in, "taskDefinition")) {
    ASSIGN_OR_RETURN(taskdef::Ref ref, taskdef::ParseRef(*td, scope, "CreateService", caller_arn));
    ASSIGN_OR_RETURN(view, task_definitions_.ResolveForLaunch(scope, ref));
    if (check) RETURN_IF_ERROR(check(*view));
  } else if (!external) {
    return ParamError("taskDefinition is required for a service with the ECS deployment controller.");
  }
  if (auto regs = OptArray(in, "serviceRegistries"))
    RETURN_IF_ERROR(CheckRegistries(scope, *regs, view ? view->network_mode : std::string(),
                                    view ? view->containers : std::vector<taskdef::ContainerView>()));
  ASSIGN_OR_RETURN(Launch launch, ResolveLaunch(scope, cluster, in, view, view ? view->network_mode : std::string(),
                                                view ? view->compatibilities : std::vector<std::string>(), scheduling,
                                                external));
  const size_t definition_constraints = view ? view->placement_constraints.size() : 0;
  RETURN_IF_ERROR(ValidatePlacement(OptArray(in, "placementConstraints"), OptArray(in, "placementStrategy"),
                                    definition_constraints, launch.type == "FARGATE", daemon));
  const json::object* given_dc = nullptr;
  if (auto it = in.find("deploymentConfiguration"); it != in.end() && it->value().is_object())
    given_dc = &it->value().get_object();
  ASSIGN_OR_RETURN(json::object deployment_configuration, DeploymentConfiguration(nullptr, given_dc, scheduling));

  // The record.
  const std::string arn = ServiceArn(scope, cluster_name, name);
  json::object record;
  record["serviceArn"] = arn;
  record["serviceName"] = name;
  record["clusterArn"] = cluster.arn;
  record["status"] = "ACTIVE";
  record["desiredCount"] = daemon ? 0 : *desired;
  for (const auto& [k, v] : EncodeLaunch(launch.service)) record[k] = v;
  record["deploymentConfiguration"] = std::move(deployment_configuration);
  record["deploymentController"] = json::object{{"type", controller}};
  record["placementConstraints"] = OptArray(in, "placementConstraints").value_or(json::array());
  record["placementStrategy"] = OptArray(in, "placementStrategy").value_or(json::array());
  if (auto g = OptInt(in, "healthCheckGracePeriodSeconds")) record["healthCheckGracePeriodSeconds"] = *g;
  record["schedulingStrategy"] = scheduling;
  record["enableECSManagedTags"] = json_fields::Bool(in, "enableECSManagedTags").value_or(false);
  record["propagateTags"] = json_fields::OptStr(in, "propagateTags").value_or("NONE");
  record["enableExecuteCommand"] = false;
  record["loadBalancers"] = OptArray(in, "loadBalancers").value_or(json::array());
  record["serviceRegistries"] = OptArray(in, "serviceRegistries").value_or(json::array());
  if (auto role = json_fields::OptStr(in, "role"); role && !role->empty())
    record["roleArn"] = role->starts_with("arn:") ? *role : fmt::format("arn:aws:iam::{}:role/{}", scope.account.str(), *role);
  else if (!record["loadBalancers"].get_array().empty())
    record["roleArn"] = fmt::format("arn:aws:iam::{}:role/aws-service-role/ecs.amazonaws.com/AWSServiceRoleForECS",
                                    scope.account.str());
  record["createdBy"] = std::string(caller_arn);
  record["availabilityZoneRebalancing"] = json_fields::OptStr(in, "availabilityZoneRebalancing").value_or("ENABLED");
  if (auto sc = OptObject(in, "serviceConnectConfiguration")) record["serviceConnectConfiguration"] = *sc;
  record["createdAtMs"] = Ms(now);
  record["events"] = json::array();
  record["deployments"] = json::array();
  record["version"] = 1;

  const std::string canonical = json::serialize(Canonical(in));
  std::string out;
  bool created = false;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(clusters_.CheckActive(txn, scope, cluster_name));
    ASSIGN_OR_RETURN(auto existing, LoadRecord(txn, scope, cluster_name, name));
    if (existing) {
      const std::string status = Str(*existing, "status");
      if (status == "ACTIVE") {
        ASSIGN_OR_RETURN(auto remembered, txn.Get(kTokens, RecordKey(scope, cluster_name, name)));
        if (token && remembered) {
          ASSIGN_OR_RETURN(json::object r, ParseRecordObject(*remembered, "service token"));
          if (Str(r, "clientToken") == *token && Str(r, "request") == canonical) {
            ASSIGN_OR_RETURN(Tags current, ReadTags(txn, scope, arn));
            out = json::serialize(RenderService(*existing, &current));
            return OkStatus();
          }
        }
        return ParamError("Creation of service was not idempotent.");
      }
      if (status == "DRAINING") return ParamError("Unable to Start a service that is still Draining.");
      RETURN_IF_ERROR(RemoveService(txn, scope, cluster_name, name));  // INACTIVE: the name is free again
      existing.reset();
    }
    // The cluster's quota counts ACTIVE and DRAINING services.
    ASSIGN_OR_RETURN(auto in_cluster, txn.Scan(kByStatus, store::PrefixRange(ScopeKey(scope).Str(cluster_name).Done()),
                                               static_cast<size_t>(quotas_.services_per_cluster)));
    if (static_cast<int64_t>(in_cluster.size()) >= quotas_.services_per_cluster)
      return ParamError(fmt::format("The cluster {} already has {} services, the limit (services per cluster).",
                                    cluster_name, quotas_.services_per_cluster));
    if (!external) {
      RETURN_IF_ERROR(StartDeployment(txn, scope, cluster_name, record, *view, launch.deployment, now));
    }
    RETURN_IF_ERROR(WriteRecord(txn, scope, cluster_name, name, std::nullopt, record));
    RETURN_IF_ERROR(PutTags(txn, scope, arn, tags));
    if (token)
      RETURN_IF_ERROR(txn.Put(kTokens, RecordKey(scope, cluster_name, name),
                              json::serialize(json::object{{"clientToken", *token}, {"request", canonical}})));
    ASSIGN_OR_RETURN(Tags current, ReadTags(txn, scope, arn));
    out = json::serialize(RenderService(record, &current));
    created = true;
    return OkStatus();
  }));
  if (created) NotifyChange(ServiceKey{scope, cluster_name, name});
  return out;
}

StatusOr<std::string> Services::Update(const Scope& scope, std::string_view caller_arn, const json::object& in,
                                       TimePoint now, const taskdef::LaunchCheck& check) {
  ASSIGN_OR_RETURN(std::string cluster_name, cluster::ClusterName(json_fields::OptStr(in, "cluster"), scope,
                                                                  "UpdateService", caller_arn));
  ASSIGN_OR_RETURN(ServiceRef ref, ParseServiceRef(Str(in, "service"), cluster_name, scope, "UpdateService", caller_arn));
  RETURN_IF_ERROR(CheckUnsupported(in));
  ASSIGN_OR_RETURN(Cluster cluster, ClusterFor(scope, cluster_name));
  if (ref.other_cluster) return ServiceNotFound();

  // The task definition the update asks for, resolved once (an INACTIVE one is refused).
  std::optional<taskdef::LaunchView> view;
  if (auto td = json_fields::OptStr(in, "taskDefinition")) {
    ASSIGN_OR_RETURN(taskdef::Ref tref, taskdef::ParseRef(*td, scope, "UpdateService", caller_arn));
    ASSIGN_OR_RETURN(view, task_definitions_.ResolveForLaunch(scope, tref));
    if (check) RETURN_IF_ERROR(check(*view));
  }

  // The current PRIMARY's definition: what a change of launch or network is checked against when
  // the update names no new one (it may be INACTIVE by now: the service keeps it).
  struct Facts {
    std::string arn;  // as the service record names it
    taskdef::LaunchView view;
  };
  auto primary_definition = [](const json::object& record) {
    std::string td = Str(record, "taskDefinition");
    for (const json::object* d : json_fields::Objects(record, "deployments"))
      if (Str(*d, "status") == "PRIMARY") td = Str(*d, "taskDefinition");
    return td;
  };
  // Every decision is made on the record as the write transaction reads it, so a concurrent
  // change (another update, the scheduler's StoreState) is never lost or refused; only a change of
  // the PRIMARY's definition in between (a rollback) makes it read that definition again.
  for (int attempt = 0; attempt < 5; ++attempt) {
    Facts facts;
    if (view) {
      facts = Facts{view->arn, *view};
    } else {
      std::optional<json::object> snapshot;
      RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
        ASSIGN_OR_RETURN(snapshot, LoadRecord(txn, scope, cluster_name, ref.name));
        return OkStatus();
      }));
      if (!snapshot) return ServiceNotFound();
      if (Str(*snapshot, "status") != "ACTIVE") return ServiceNotActive();
      facts.arn = primary_definition(*snapshot);
      if (!facts.arn.empty()) {
        // The owner's projection of the revision the service runs, which may be INACTIVE by now.
        ASSIGN_OR_RETURN(taskdef::Ref tref, taskdef::ParseRef(facts.arn, scope, "UpdateService", caller_arn));
        ASSIGN_OR_RETURN(facts.view,
                         task_definitions_.ResolveForLaunch(scope, tref, taskdef::InactiveRevision::kAllow));
      }
    }

    // serviceRegistries, given or kept, against the definition the service will run (before the
    // transaction: the registry is read through Discovery).
    std::optional<json::array> registries = OptArray(in, "serviceRegistries");
    if (!registries && view) {
      RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
        ASSIGN_OR_RETURN(auto current, LoadRecord(txn, scope, cluster_name, ref.name));
        if (current) registries = OptArray(*current, "serviceRegistries");
        return OkStatus();
      }));
    }
    if (registries && !registries->empty())
      RETURN_IF_ERROR(CheckRegistries(scope, *registries, facts.view.network_mode, facts.view.containers));

    std::string out;
    bool definition_moved = false;
    RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
      ASSIGN_OR_RETURN(auto again, LoadRecord(txn, scope, cluster_name, ref.name));
      if (!again) return ServiceNotFound();
      if (Str(*again, "status") != "ACTIVE") return ServiceNotActive();
      const std::string current_td = primary_definition(*again);
      if (!view && current_td != facts.arn) {
        definition_moved = true;
        return OkStatus();
      }
      json::object record = *again;
      const std::string scheduling = Str(record, "schedulingStrategy");
      const bool daemon = scheduling == "DAEMON";
      const std::string controller = Str(json_fields::Obj(record, "deploymentController"), "type");
      const bool external = controller == "EXTERNAL";
      if (auto dc = OptObject(in, "deploymentController"); dc && Str(*dc, "type") != controller)
        return ParamError(fmt::format("Updating the deployment controller from {} to {} is not supported by Paddock.",
                                      controller, Str(*dc, "type")));

      const bool force = json_fields::Bool(in, "forceNewDeployment").value_or(false);
      if (external) {
        for (std::string_view member : {"taskDefinition", "networkConfiguration", "capacityProviderStrategy",
                                         "platformVersion", "loadBalancers", "serviceRegistries"})
          if (in.contains(member))
            return ParamError(fmt::format(
                "{} cannot be updated for a service that uses the EXTERNAL deployment controller: create a task set "
                "instead.",
                member));
        if (force) return ParamError("forceNewDeployment is not supported for a service that uses the EXTERNAL deployment controller.");
      }

      const std::string& network_mode = facts.view.network_mode;
      const std::vector<std::string>& compat = facts.view.compatibilities;
      const size_t definition_constraints = facts.view.placement_constraints.size();
      const std::string target_td = view ? view->arn : current_td;

      // The launch configuration: the service's, with the update's members over it.
      json::object launch_in = EncodeLaunch(DecodeLaunch(record));
      if (auto cps = OptArray(in, "capacityProviderStrategy"); cps && !cps->empty()) {
        launch_in.erase("launchType");
        launch_in["capacityProviderStrategy"] = *cps;
        if (!in.contains("platformVersion") && !launch_in.contains("platformVersion")) launch_in["platformVersion"] = "LATEST";
      }
      if (auto pv = json_fields::OptStr(in, "platformVersion")) launch_in["platformVersion"] = *pv;
      if (auto nc = OptObject(in, "networkConfiguration")) launch_in["networkConfiguration"] = *nc;
      Launch launch;
      if (!external) {
        ASSIGN_OR_RETURN(launch, ResolveLaunch(scope, cluster, launch_in, view, network_mode, compat, scheduling, false));
      } else {
        launch.service = DecodeLaunch(record);
        launch.type = launch.service.launch_type.value_or("FARGATE");
      }
      const bool launch_changed = json::serialize(EncodeLaunch(launch.service)) != json::serialize(EncodeLaunch(DecodeLaunch(record)));

      // placement (never a new deployment), deployment configuration, counts and flags.
      std::optional<json::array> constraints = OptArray(in, "placementConstraints");
      std::optional<json::array> strategies = OptArray(in, "placementStrategy");
      RETURN_IF_ERROR(ValidatePlacement(constraints ? constraints : OptArray(record, "placementConstraints"),
                                        strategies ? strategies : OptArray(record, "placementStrategy"),
                                        definition_constraints, launch.type == "FARGATE", daemon));
      if (constraints) record["placementConstraints"] = *constraints;
      if (strategies) record["placementStrategy"] = *strategies;
      if (auto it = in.find("deploymentConfiguration"); it != in.end() && it->value().is_object()) {
        const json::object current_dc = json_fields::Obj(record, "deploymentConfiguration");
        ASSIGN_OR_RETURN(json::object dc, DeploymentConfiguration(&current_dc, &it->value().get_object(), scheduling));
        record["deploymentConfiguration"] = std::move(dc);
      }
      std::optional<int64_t> desired = OptInt(in, "desiredCount");
      if (desired && daemon)
        return ParamError(
            "The daemon scheduling strategy does not support a desired count for services. Remove the desired count "
            "value and try again");
      if (desired) {
        RETURN_IF_ERROR(CheckDesiredCount(*desired, quotas_.tasks_per_service));
        record["desiredCount"] = *desired;
      }
      if (auto g = OptInt(in, "healthCheckGracePeriodSeconds")) record["healthCheckGracePeriodSeconds"] = *g;
      if (auto p = json_fields::OptStr(in, "propagateTags")) record["propagateTags"] = *p;
      if (auto m = json_fields::Bool(in, "enableECSManagedTags")) record["enableECSManagedTags"] = *m;
      if (auto az = json_fields::OptStr(in, "availabilityZoneRebalancing")) record["availabilityZoneRebalancing"] = *az;
      bool registries_changed = false;
      for (std::string_view member : {"loadBalancers", "serviceRegistries"}) {
        if (auto a = OptArray(in, member)) {
          if (json::serialize(*a) != json::serialize(OptArray(record, member).value_or(json::array())))
            registries_changed = true;
          record[member] = *a;
        }
      }

      const bool new_deployment = !external && (force || target_td != current_td || launch_changed || registries_changed);
      if (!external) {
        for (std::string_view k : {"launchType", "capacityProviderStrategy", "platformVersion", "networkConfiguration"})
          record.erase(k);
        for (const auto& [k, v] : EncodeLaunch(launch.service)) record[k] = v;
      }
      if (desired && !new_deployment) {  // a scale: the PRIMARY (or, EXTERNAL, nothing: task sets follow the service)
        json::array deployments = OptArray(record, "deployments").value_or(json::array());
        for (auto& d : deployments)
          if (d.is_object() && Str(d.get_object(), "status") == "PRIMARY" && !external) {
            d.get_object()["desiredCount"] = *desired;
            d.get_object()["updatedAtMs"] = Ms(now);
          } else if (d.is_object() && external && Str(d.get_object(), "status") != "DRAINING") {  // task_sets.cc
            Deployment set = DecodeDeployment(d.get_object());
            d.get_object()["desiredCount"] = TaskSetDesiredCount(*desired, set.scale_percent);
          }
        record["deployments"] = std::move(deployments);
      }
      const uint64_t version = static_cast<uint64_t>(json_fields::Int(*again, "version").value_or(0));
      record["version"] = version + 1;
      if (new_deployment)
        RETURN_IF_ERROR(StartDeployment(txn, scope, cluster_name, record, facts.view, launch.deployment, now));
      RETURN_IF_ERROR(WriteRecord(txn, scope, cluster_name, ref.name, again, record));
      out = json::serialize(RenderService(record, nullptr));
      return OkStatus();
    }));
    if (definition_moved) continue;
    NotifyChange(ServiceKey{scope, cluster_name, ref.name});
    return out;
  }
  return Aborted("The service's task definition kept changing during the update; try again.");
}

StatusOr<std::string> Services::Delete(const Scope& scope, std::string_view caller_arn, const json::object& in,
                                       TimePoint now) {
  ASSIGN_OR_RETURN(std::string cluster_name, cluster::ClusterName(json_fields::OptStr(in, "cluster"), scope,
                                                                  "DeleteService", caller_arn));
  ASSIGN_OR_RETURN(ServiceRef ref, ParseServiceRef(Str(in, "service"), cluster_name, scope, "DeleteService", caller_arn));
  const bool force = json_fields::Bool(in, "force").value_or(false);
  std::string out;
  bool changed = false;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, cluster_name));
    if (ref.other_cluster) return ServiceNotFound();
    ASSIGN_OR_RETURN(auto current, LoadRecord(txn, scope, cluster_name, ref.name));
    if (!current) return ServiceNotFound();
    if (Str(*current, "status") != "ACTIVE") {  // a repeat answers the service again
      out = json::serialize(RenderService(*current, nullptr));
      return OkStatus();
    }
    json::object record = *current;
    if (Str(record, "schedulingStrategy") != "DAEMON" && json_fields::Int(record, "desiredCount").value_or(0) > 0 &&
        !force)
      return ParamError("The service cannot be stopped while it is scaled above 0.");
    record["status"] = "DRAINING";
    record["desiredCount"] = 0;
    json::array deployments = OptArray(record, "deployments").value_or(json::array());
    for (auto& d : deployments) {
      if (!d.is_object()) continue;
      d.get_object()["desiredCount"] = 0;
      d.get_object()["updatedAtMs"] = Ms(now);
    }
    record["deployments"] = std::move(deployments);
    record["version"] = json_fields::Int(record, "version").value_or(0) + 1;
    RETURN_IF_ERROR(WriteRecord(txn, scope, cluster_name, ref.name, current, record));
    out = json::serialize(RenderService(record, nullptr));
    changed = true;
    return OkStatus();
  }));
  if (changed) NotifyChange(ServiceKey{scope, cluster_name, ref.name});
  return out;
}

StatusOr<DescribeResult> Services::Describe(const Scope& scope, std::string_view caller_arn, const json::object& in) {
  ASSIGN_OR_RETURN(std::string cluster_name, cluster::ClusterName(json_fields::OptStr(in, "cluster"), scope,
                                                                  "DescribeServices", caller_arn));
  std::vector<std::string> refs = json_fields::Strings(in, "services");
  if (refs.empty()) return ParamError("Services cannot be empty.");
  if (refs.size() > 10) return ParamError("The services list can contain at most 10 entries.");
  bool include_tags = false;
  for (const auto& f : json_fields::Strings(in, "include"))
    if (f == "TAGS") include_tags = true;
  std::vector<ServiceRef> parsed;
  for (const auto& r : refs) {
    ASSIGN_OR_RETURN(ServiceRef p, ParseServiceRef(r, cluster_name, scope, "DescribeServices", caller_arn));
    parsed.push_back(std::move(p));
  }
  DescribeResult result;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, cluster_name));
    for (const auto& p : parsed) {
      if (!p.other_cluster && !include_tags) {
        ASSIGN_OR_RETURN(std::optional<std::string> shown, LoadRenderedService(txn, scope, cluster_name, p.name));
        if (shown) {
          result.services.push_back(std::move(*shown));
          continue;
        }
      }
      std::optional<json::object> record;
      if (!p.other_cluster && include_tags) {
        ASSIGN_OR_RETURN(record, LoadRecord(txn, scope, cluster_name, p.name));
      }
      if (!record) {
        // A name given comes back as service/<name>, without the cluster, as AWS reports it (a
        // real answer quoted in aws-actions/amazon-ecs-deploy-task-definition#369); an ARN as given.
        std::string arn = p.given.starts_with("arn:")
                              ? p.given
                              : fmt::format("arn:aws:ecs:{}:{}:service/{}", scope.region.str(), scope.account.str(), p.name);
        result.failures.push_back({std::move(arn), "MISSING", ""});
        continue;
      }
      ASSIGN_OR_RETURN(Tags tags, ReadTags(txn, scope, Str(*record, "serviceArn")));
      result.services.push_back(json::serialize(RenderService(*record, &tags)));
    }
    return OkStatus();
  }));
  return result;
}

StatusOr<Page> Services::List(const Scope& scope, std::string_view caller_arn, const ListQuery& q) {
  ASSIGN_OR_RETURN(std::string cluster_name, cluster::ClusterName(q.cluster, scope, "ListServices", caller_arn));
  // ACTIVE only: "the service is no longer visible … in the ListServices API operation" once
  // DRAINING (DeleteService's doc).
  store::Range range = store::PrefixRange(ScopeKey(scope).Str(cluster_name).Str("ACTIVE").Done());
  if (!q.after.empty()) range.begin = store::KeySuccessor(q.after);
  const bool filtered = q.launch_type || q.scheduling_strategy;
  Page page;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, cluster_name));
    constexpr size_t kBatch = 256;
    std::vector<std::pair<std::string, std::string>> found;  // (index key, name), up to limit + 1
    while (found.size() <= q.limit) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kByStatus, range, kBatch));
      for (const auto& row : rows) {
        store::KeyReader r(row.key);
        for (int i = 0; i < 4; ++i) {  // account, region, cluster, status
          ASSIGN_OR_RETURN(std::string skip, r.Str());
        }
        ASSIGN_OR_RETURN(std::string name, r.Str());
        if (filtered) {
          ASSIGN_OR_RETURN(auto record, LoadRecord(txn, scope, cluster_name, name));
          if (!record) continue;
          if (q.scheduling_strategy && Str(*record, "schedulingStrategy") != *q.scheduling_strategy) continue;
          if (q.launch_type) {
            std::string lt = Str(*record, "launchType");
            if (lt.empty() && !json_fields::Objects(*record, "capacityProviderStrategy").empty()) lt = "FARGATE";
            if (lt != *q.launch_type) continue;
          }
        }
        found.emplace_back(row.key, std::move(name));
        if (found.size() > q.limit) break;
      }
      if (rows.size() < kBatch) break;
      range.begin = store::KeySuccessor(rows.back().key);
    }
    if (found.size() > q.limit) {
      found.resize(q.limit);
      page.next = found.back().first;
    }
    for (const auto& f : found) page.arns.push_back(ServiceArn(scope, cluster_name, f.second));
    return OkStatus();
  }));
  return page;
}

StatusOr<Page> Services::ListByNamespace(const Scope& scope, std::string_view caller_arn, const json::object& input) {
  (void)scope;
  (void)caller_arn;
  return NotFound(fmt::format("Namespace {} not found.", Str(input, "namespace")), ecs::Error::kNamespaceNotFound);
}

StatusOr<Page> Services::ListByRegistries(const Scope& scope, const std::vector<std::string>& registry_arns,
                                          size_t limit, const std::string& after) {
  const std::set<std::string> wanted(registry_arns.begin(), registry_arns.end());
  store::Range range = store::PrefixRange(ScopeKey(scope).Done());
  if (!after.empty()) range.begin = store::KeySuccessor(after);
  Page page;
  if (wanted.empty()) return page;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    constexpr size_t kBatch = 256;
    std::vector<std::pair<std::string, std::string>> found;  // (index key, ARN), up to limit + 1
    while (found.size() <= limit) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kByStatus, range, kBatch));
      for (const auto& row : rows) {
        store::KeyReader r(row.key);
        for (int i = 0; i < 2; ++i) RETURN_IF_ERROR(r.Str().status());  // account, region
        ASSIGN_OR_RETURN(std::string cluster, r.Str());
        ASSIGN_OR_RETURN(std::string status, r.Str());
        ASSIGN_OR_RETURN(std::string name, r.Str());
        if (status != "ACTIVE") continue;
        ASSIGN_OR_RETURN(auto record, LoadRecord(txn, scope, cluster, name));
        if (!record) continue;
        bool member = false;
        for (const json::object* reg : json_fields::Objects(*record, "serviceRegistries"))
          member = member || wanted.contains(Str(*reg, "registryArn"));
        if (!member) continue;
        found.emplace_back(row.key, ServiceArn(scope, cluster, name));
        if (found.size() > limit) break;
      }
      if (rows.size() < kBatch) break;
      range.begin = store::KeySuccessor(rows.back().key);
    }
    if (found.size() > limit) {
      found.resize(limit);
      page.next = found.back().first;
    }
    for (auto& f : found) page.arns.push_back(std::move(f.second));
    return OkStatus();
  }));
  return page;
}

// ---- Tags ----

namespace {
// TagResource and UntagResource name ResourceNotFoundException (not ServiceNotFoundException) in
// their model for a resource that does not exist.
Status TagTargetNotFound(std::string_view arn) {
  return NotFound(fmt::format("The specified resource is not found: {}", arn), ecs::Error::kResourceNotFound);
}

// A service ARN's (cluster, name). A tagged service is named by its long ARN (service/<cluster>/<name>). AWS answers a short one
// (service/<name>) with InvalidParameterException (TagResource's resourceArn documentation; the
// text as boto/boto3#2473 and turbot/steampipe-plugin-aws#2388 quote it).
StatusOr<std::pair<std::string, std::string>> TagTarget(const Scope& scope, std::string_view arn) {
  ASSIGN_OR_RETURN(EcsResource r, ParseEcsResourceArn(arn));
  const size_t slash = r.id.find('/');
  if (r.kind == ResourceKind::kService && slash == std::string::npos)
    return ParamError("Long arn format must be used for tagging operations");
  if (r.kind != ResourceKind::kService || slash == std::string::npos || r.scope != scope) return TagTargetNotFound(arn);
  return std::make_pair(r.id.substr(0, slash), r.id.substr(slash + 1));
}

bool NamesTaskSet(std::string_view arn) {
  StatusOr<EcsResource> r = ParseEcsResourceArn(arn);
  return r.ok() && r->kind == ResourceKind::kTaskSet;
}
}  // namespace

Status Services::TagResource(const Scope& scope, std::string_view arn, const Tags& tags) {
  RETURN_IF_ERROR(ValidateTags(tags));
  if (NamesTaskSet(arn)) {
    const std::function<Status(Tags&)> add = [&](Tags& current) { return MergeTags(current, tags, arn); };
    return TaskSetTags(scope, arn, &add).status();
  }
  ASSIGN_OR_RETURN(auto target, TagTarget(scope, arn));
  return store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto record, LoadRecord(txn, scope, target.first, target.second));
    if (!record || Str(*record, "status") == "INACTIVE") return TagTargetNotFound(arn);
    return PutTags(txn, scope, ServiceArn(scope, target.first, target.second), tags);
  });
}

Status Services::UntagResource(const Scope& scope, std::string_view arn, const std::vector<std::string>& keys) {
  if (NamesTaskSet(arn)) {
    const std::function<Status(Tags&)> remove = [&](Tags& current) {
      std::erase_if(current, [&](const Tag& t) { return std::find(keys.begin(), keys.end(), t.key) != keys.end(); });
      return OkStatus();
    };
    return TaskSetTags(scope, arn, &remove).status();
  }
  ASSIGN_OR_RETURN(auto target, TagTarget(scope, arn));
  return store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto record, LoadRecord(txn, scope, target.first, target.second));
    if (!record || Str(*record, "status") == "INACTIVE") return TagTargetNotFound(arn);
    return RemoveTags(txn, scope, ServiceArn(scope, target.first, target.second), keys);
  });
}

StatusOr<Tags> Services::ListTags(const Scope& scope, std::string_view arn) {
  if (NamesTaskSet(arn)) return TaskSetTags(scope, arn, nullptr);
  ASSIGN_OR_RETURN(auto target, TagTarget(scope, arn));
  Tags out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto record, LoadRecord(txn, scope, target.first, target.second));
    if (!record) return ServiceNotFound();
    ASSIGN_OR_RETURN(out, ReadTags(txn, scope, ServiceArn(scope, target.first, target.second)));
    return OkStatus();
  }));
  return out;
}

// ---- The scheduler's side ----

StatusOr<std::optional<ServiceState>> Services::LoadState(store::ReadTxn& txn, const ServiceKey& key) {
  ASSIGN_OR_RETURN(auto text, txn.Get(kServices, RecordKey(key.scope, key.cluster, key.name)));
  if (!text) return std::optional<ServiceState>();
  ASSIGN_OR_RETURN(ServiceState state, StateOf(txn, key, *text));
  return std::optional<ServiceState>(std::move(state));
}

StatusOr<ServiceState> Services::StateOf(store::ReadTxn& txn, const ServiceKey& key, std::string_view text) {
  // The scheduler loads every service on each resync: the record is parsed into a buffer freed at
  // once (StateFromRecord copies what it keeps onto the heap).
  alignas(std::max_align_t) unsigned char buffer[16384];
  json::monotonic_resource arena(buffer, sizeof(buffer));
  boost::system::error_code ec;
  json::value parsed = json::parse(text, ec, &arena);
  if (ec || !parsed.is_object()) return DataLoss("the service record is not a JSON object");
  const json::object* record = &parsed.get_object();
  // The service's tags matter to the scheduler only when they propagate to its tasks.
  Tags tags;
  if (Str(*record, "propagateTags") == "SERVICE") {
    ASSIGN_OR_RETURN(tags, ReadTags(txn, key.scope, Str(*record, "serviceArn")));
  }
  return StateFromRecord(key, *record, std::move(tags));
}

Status Services::StoreState(store::WriteTxn& txn, const ServiceState& state, TimePoint now) {
  const ServiceKey& key = state.key;
  ASSIGN_OR_RETURN(auto current, LoadRecord(txn, key.scope, key.cluster, key.name));
  if (!current) return ServiceNotFound();
  const uint64_t version = static_cast<uint64_t>(json_fields::Int(*current, "version").value_or(0));
  if (version != state.version)
    return Aborted(fmt::format("service {} changed since it was loaded (version {}, loaded {})", key.name, version,
                               state.version));
  json::object record = *current;
  const std::string status = Str(record, "status");
  if (state.status != status) {
    if (status != "DRAINING" || state.status != "INACTIVE")
      return InvalidArgument(fmt::format("the scheduler cannot move a service from {} to {}", status, state.status));
    record["status"] = "INACTIVE";
    record["inactiveAtMs"] = Ms(now);
  }
  if (Str(record, "schedulingStrategy") == "DAEMON" && Str(record, "status") == "ACTIVE")
    record["desiredCount"] = state.desired_count;
  json::array deployments;
  for (const auto& d : state.deployments) deployments.push_back(EncodeDeployment(d));
  record["deployments"] = std::move(deployments);
  for (const auto& d : state.deployments)
    if (d.status == "PRIMARY" && !d.task_definition.empty()) record["taskDefinition"] = d.task_definition;
  if (state.last_completed) record["lastCompleted"] = EncodeDeployment(*state.last_completed);
  else record.erase("lastCompleted");
  if (!state.new_events.empty()) {
    json::array events;
    for (auto it = state.new_events.rbegin(); it != state.new_events.rend() && events.size() < kMaxEvents; ++it) {
      Event e = *it;
      if (e.id.empty()) e.id = RandomUuid();
      if (e.created_at == TimePoint{}) e.created_at = now;
      events.push_back(EventJson(e));
    }
    for (const auto& old : OptArray(record, "events").value_or(json::array())) {
      if (events.size() >= kMaxEvents) break;
      events.push_back(old);
    }
    record["events"] = std::move(events);
  }
  record["version"] = version + 1;
  RETURN_IF_ERROR(SyncServiceDeployments(txn, state, *current, now));
  if (status != "INACTIVE" && Str(record, "status") == "INACTIVE") {
    // The service is gone: a service deployment still under way ends with it.
    RETURN_IF_ERROR(UpdateServiceDeployments(
        txn, key.scope, key.cluster, key.name,
        {"PENDING", "IN_PROGRESS", "STOP_REQUESTED", "ROLLBACK_REQUESTED", "ROLLBACK_IN_PROGRESS"},
        [&](json::object& sd) {
          sd["status"] = "STOPPED";
          sd["statusReason"] = "The service was deleted.";
          sd["stoppedAt"] = Seconds(Ms(now));
          sd["finishedAt"] = Seconds(Ms(now));
          sd["updatedAt"] = Seconds(Ms(now));
        }));
  }
  return WriteRecord(txn, key.scope, key.cluster, key.name, current, record);
}

// The scheduler's changes, as the deployment APIs tell them (docs/contracts/service.md):
// - a deployment's rollout COMPLETED: its service deployment SUCCESSFUL, and the ones rolling back
//   to it ROLLBACK_SUCCESSFUL;
// - a PRIMARY that became ACTIVE here was rolled back from (only a rollback changes the PRIMARY
//   outside the API): ROLLBACK_IN_PROGRESS, with the revision it returns to;
// - a PRIMARY that FAILED and stayed PRIMARY, or whose requested rollback was dropped without one,
//   had nothing to return to: ROLLBACK_FAILED when a rollback was configured or asked for, else
//   STOPPED.
Status Services::SyncServiceDeployments(store::WriteTxn& txn, const ServiceState& state, const json::object& old_record,
                                        TimePoint now) {
  std::map<std::string, Deployment> before;
  for (const json::object* o : json_fields::Objects(old_record, "deployments")) {
    Deployment d = DecodeDeployment(*o);
    before.emplace(d.id, std::move(d));
  }
  const ServiceKey& key = state.key;
  const double at = Seconds(Ms(now));
  auto update = [&](const std::string& sd_id, const std::function<void(json::object&)>& change) -> Status {
    if (sd_id.empty()) return OkStatus();
    const std::string k = ChildKey(key.scope, key.cluster, key.name, sd_id);
    ASSIGN_OR_RETURN(auto text, txn.Get(kDeployments, k));
    if (!text) return OkStatus();
    ASSIGN_OR_RETURN(json::object sd, ParseRecordObject(*text, "service deployment"));
    change(sd);
    sd["updatedAt"] = at;
    return txn.Put(kDeployments, k, json::serialize(sd));
  };
  auto breaker = [](json::object& sd, std::string_view status, int64_t failures) {
    if (auto cb = sd.find("deploymentCircuitBreaker"); cb != sd.end() && cb->value().is_object()) {
      json::object& o = cb->value().get_object();
      if (Str(o, "status") != "DISABLED") o["status"] = status;
      o["failureCount"] = failures;
    }
  };
  auto under_way = [](const json::object& sd) {
    const std::string st = Str(sd, "status");
    return st == "PENDING" || st == "IN_PROGRESS" || st == "ROLLBACK_REQUESTED" || st == "STOP_REQUESTED";
  };
  const Deployment* primary = state.deployments.empty() || state.deployments[0].status != "PRIMARY"
                                  ? nullptr
                                  : &state.deployments[0];
  for (const auto& d : state.deployments) {
    auto it = before.find(d.id);
    if (it == before.end()) continue;  // the rollback target coming back: its own record is finished
    const Deployment& was = it->second;
    const bool failed_now = d.rollout_state == "FAILED" && was.rollout_state != "FAILED";
    if (was.status == "PRIMARY" && d.status != "PRIMARY" && primary != nullptr) {
      // Rolled back from (by the breaker or on request).
      const std::string reason = d.rollout_state == "FAILED" ? d.rollout_state_reason
                                                             : std::string("Service deployment rollback requested.");
      const std::string target = ServiceRevisionArn(key.scope, key.cluster, key.name, primary->service_revision_id);
      RETURN_IF_ERROR(update(d.service_deployment_id, [&](json::object& sd) {
        if (!under_way(sd)) return;
        sd["status"] = "ROLLBACK_IN_PROGRESS";
        sd["statusReason"] = reason;
        sd["rollback"] = json::object{{"reason", reason}, {"startedAt", at}, {"serviceRevisionArn", target}};
        if (d.rollout_state == "FAILED") breaker(sd, "TRIGGERED", d.failed_tasks);
      }));
      continue;
    }
    const bool request_dropped = was.rollback_requested && !d.rollback_requested && d.status == "PRIMARY";
    if (failed_now || request_dropped) {
      RETURN_IF_ERROR(update(d.service_deployment_id, [&](json::object& sd) {
        if (!under_way(sd)) return;
        const bool asked = Str(sd, "status") == "ROLLBACK_REQUESTED" || request_dropped;
        if (failed_now) breaker(sd, "TRIGGERED", d.failed_tasks);
        if (asked || (failed_now && state.rollback)) {
          sd["status"] = "ROLLBACK_FAILED";
          sd["statusReason"] = "There is no completed service deployment to roll back to.";
        } else {
          sd["status"] = "STOPPED";
          sd["statusReason"] = d.rollout_state_reason;
          sd["stoppedAt"] = at;
        }
        sd["finishedAt"] = at;
      }));
      continue;
    }
    if (d.rollout_state == "COMPLETED" && was.rollout_state != "COMPLETED") {
      RETURN_IF_ERROR(update(d.service_deployment_id, [&](json::object& sd) {
        if (Str(sd, "status") != "IN_PROGRESS" && Str(sd, "status") != "PENDING") return;
        sd["status"] = "SUCCESSFUL";
        sd["statusReason"] = "Service deployment completed.";
        sd["finishedAt"] = at;
        breaker(sd, "MONITORING_COMPLETE", d.failed_tasks);
      }));
      // A rollback to this deployment finished: the service deployment rolling back succeeded.
      // (Only the rollback's target can complete while one is in progress: a newer deployment
      // stops the rollback — StartDeployment.)
      RETURN_IF_ERROR(UpdateServiceDeployments(txn, key.scope, key.cluster, key.name, {"ROLLBACK_IN_PROGRESS"},
                                               [&](json::object& sd) {
                                                 sd["status"] = "ROLLBACK_SUCCESSFUL";
                                                 sd["finishedAt"] = at;
                                                 sd["updatedAt"] = at;
                                               }));
    }
  }
  return OkStatus();
}

StatusOr<Services::KeyPage> Services::ListAllKeys(store::ReadTxn& txn, size_t limit, const std::string& after) {
  store::Range range{after.empty() ? std::string() : store::KeySuccessor(after), ""};
  KeyPage page;
  ASSIGN_OR_RETURN(auto rows, txn.Scan(kServices, range, limit + 1));
  const bool more = rows.size() > limit;
  if (more) rows.pop_back();
  for (const auto& row : rows) {
    store::KeyReader r(row.key);
    ASSIGN_OR_RETURN(std::string account, r.Str());
    ASSIGN_OR_RETURN(std::string region, r.Str());
    ASSIGN_OR_RETURN(std::string cluster, r.Str());
    ASSIGN_OR_RETURN(std::string name, r.Str());
    page.keys.push_back(ServiceKey{Scope{AccountId(account), Region(region)}, cluster, name});
    page.records.push_back(row.value);
  }
  if (more) page.next = rows.back().key;
  return page;
}

void Services::SetChangeListener(std::function<void(const ServiceKey&)> listener) {
  std::lock_guard lock(listener_mu_);
  listener_ = std::move(listener);
}

void Services::NotifyChange(const ServiceKey& key) {
  std::lock_guard lock(listener_mu_);
  if (listener_) listener_(key);
}

StatusOr<size_t> Services::ReapInactive(TimePoint now) {
  return ReapDue(store_, kInactive, Ms(now - kInactiveRetention),
                 [&](store::WriteTxn& txn, const Scope& scope, const std::string& cluster, const std::string& name) -> Status {
                   ASSIGN_OR_RETURN(auto record, LoadRecord(txn, scope, cluster, name));
                   if (!record || Str(*record, "status") != "INACTIVE") return OkStatus();
                   return RemoveService(txn, scope, cluster, name);
                 });
}

Status Services::ReapAccount(const AccountId& account) {
  for (std::string_view table : {kServices, kByStatus, kInactive, kRefs, kTokens, kDeployments, kRevisions})
    RETURN_IF_ERROR(ReapAccountRows(store_, table, account));
  return OkStatus();  // tags go with the cluster owner's sweep of the account's tags
}

StatusOr<bool> Services::Refs::IsReferenced(store::ReadTxn& txn, const Scope& scope, std::string_view family,
                                            uint64_t revision) {
  ASSIGN_OR_RETURN(auto rows, txn.Scan(kRefs, store::PrefixRange(ScopeKey(scope).Str(family).U64(revision).Done()), 1));
  return !rows.empty();
}

StatusOr<cluster::ClusterUsage::Counts> Services::Usage::Count(store::ReadTxn& txn, const Scope& scope,
                                                               std::string_view cluster) {
  cluster::ClusterUsage::Counts out;
  for (std::string_view status : {"ACTIVE", "DRAINING"}) {
    store::Range range = store::PrefixRange(ScopeKey(scope).Str(cluster).Str(status).Done());
    int64_t n = 0;
    while (true) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kByStatus, range, 1000));
      n += static_cast<int64_t>(rows.size());
      if (rows.size() < 1000) break;
      range.begin = store::KeySuccessor(rows.back().key);
    }
    (status == "ACTIVE" ? out.active_services : out.draining_services) = n;
  }
  return out;
}

// A service of the cluster not yet INACTIVE whose strategy (its own, a deployment's or a task
// set's) names `provider`.
StatusOr<bool> Services::Usage::UsesCapacityProvider(store::ReadTxn& txn, const Scope& scope,
                                                     std::string_view cluster, std::string_view provider) {
  auto names = [&](const json::value* strategy) {
    if (strategy == nullptr || !strategy->is_array()) return false;
    for (const auto& item : strategy->get_array())
      if (item.is_object() && Str(item.get_object(), "capacityProvider") == provider) return true;
    return false;
  };
  for (std::string_view status : {"ACTIVE", "DRAINING"}) {
    store::Range range = store::PrefixRange(ScopeKey(scope).Str(cluster).Str(status).Done());
    while (true) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kByStatus, range, 500));
      for (const auto& row : rows) {
        store::KeyReader r(row.key);
        std::string name;
        for (int i = 0; i < 5; ++i) {  // account, region, cluster, status, name
          ASSIGN_OR_RETURN(name, r.Str());
        }
        ASSIGN_OR_RETURN(auto text, txn.Get(kServices, RecordKey(scope, cluster, name)));
        if (!text) continue;
        ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*text, "service"));
        if (names(record.if_contains("capacityProviderStrategy"))) return true;
        if (const json::value* ds = record.if_contains("deployments"); ds != nullptr && ds->is_array())
          for (const auto& d : ds->get_array())
            if (d.is_object() && names(d.get_object().if_contains("capacityProviderStrategy"))) return true;
      }
      if (rows.size() < 500) break;
      range.begin = store::KeySuccessor(rows.back().key);
    }
  }
  return false;
}

}  // namespace paddock::ecs::service
