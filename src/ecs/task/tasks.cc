#include "ecs/task/tasks.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <algorithm>
#include <charconv>
#include <fmt/ranges.h>
#include <set>
#include <tuple>
#include <unordered_map>

#include "common/encoding.h"
#include "ecs/capacity/capacity_providers.h"
#include "ecs/common/reap.h"
#include "ecs/common/records.h"
#include "ecs/common/resource_arn.h"
#include "ecs/taskdef/container_values.h"
#include "ecs/taskdef/validate.h"
#include "ecs/task/internal/group_index.h"
#include "ecs/task/placement.h"
#include "agent/protocol/state_json.h"
#include "store/key.h"
#include "vpc/default_vpc.h"
#include "vpc/ipam.h"
#include "vpc/security_groups.h"
#include "ecs/common/errors.h"

namespace paddock::ecs::task {
namespace json = boost::json;
using store::Key;

namespace {

constexpr std::string_view kTasks = "tasks";
constexpr std::string_view kLaunch = "task_launch";
constexpr std::string_view kByStatus = "task_by_status";
constexpr std::string_view kByFamily = "task_by_family";
constexpr std::string_view kByStartedBy = "task_by_started_by";
using internal::kByGroup;
constexpr std::string_view kByLaunchType = "task_by_launch_type";
constexpr std::string_view kAssignments = "task_assignments";
constexpr std::string_view kRefs = "task_refs";
constexpr std::string_view kCounts = "task_counts";
constexpr std::string_view kStopped = "task_stopped";
constexpr std::string_view kTokens = "task_tokens";
constexpr std::string_view kProtection = "task_protection";  // scale-in protection (protection.cc)

constexpr std::string_view kStoppedStatus = "STOPPED";
constexpr auto kTokenLifetime = std::chrono::hours(8);
constexpr auto kStoppedRetention = std::chrono::hours(1);
constexpr std::string_view kPlatformVersion = "1.4.0";


std::string TaskKey(const Scope& s, std::string_view cluster, std::string_view id) {
  return ScopeKey(s).Str(cluster).Str(id).Done();
}

int Rank(std::string_view status) {
  for (size_t i = 0; i < std::size(kLifecycle); ++i)
    if (kLifecycle[i] == status) return static_cast<int>(i);
  return -1;
}

// ClusterUsage's buckets: PROVISIONING..ACTIVATING are pending; RUNNING..DEPROVISIONING still
// occupy the cluster and count as running; STOPPED counts as neither.
enum class Bucket { kPending, kRunning, kNone };
Bucket BucketOf(std::string_view last_status) {
  int r = Rank(last_status);
  if (r < 0 || r >= Rank(kStoppedStatus)) return Bucket::kNone;
  return r < Rank("RUNNING") ? Bucket::kPending : Bucket::kRunning;
}


std::string Str(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return (it != o.end() && it->value().is_string()) ? std::string(it->value().get_string()) : std::string();
}

// The launch record: what the task owner keeps beside the Task JSON.
struct Launch {
  std::string agent;
  std::string family;
  uint64_t revision = 0;
  std::string definition;
  std::string subnet_id;  // empty unless awsvpc
  uint32_t ip = 0;
  bool ip_held = false;
  std::string instance;   // EC2: the container instance's id, whose resources the task holds
  bool health_checks = false;  // an essential container has a healthCheck (GroupTasks)
  json::object registry;       // a service task's serviceRegistries entry (empty: none)
  bool registered = false;     // the task is an instance of `registry` now
  bool registration_refused = false;  // the registry refused it (logged once)

  std::string Encode() const {
    json::object o{{"agent", agent}, {"family", family}, {"revision", revision}, {"definition", definition},
                   {"subnetId", subnet_id}, {"ip", ip}, {"ipHeld", ip_held}};
    if (!instance.empty()) o["instance"] = instance;
    if (health_checks) o["healthChecks"] = true;
    if (!registry.empty()) o["registry"] = registry;
    if (registered) o["registered"] = true;
    if (registration_refused) o["registrationRefused"] = true;
    return json::serialize(o);
  }
  static StatusOr<Launch> Decode(std::string_view text) {
    ASSIGN_OR_RETURN(json::object o, ParseRecordObject(text, "task launch"));
    Launch l;
    l.agent = Str(o, "agent");
    l.family = Str(o, "family");
    l.definition = Str(o, "definition");
    l.subnet_id = Str(o, "subnetId");
    l.instance = Str(o, "instance");
    if (auto it = o.find("revision"); it != o.end() && it->value().is_number()) l.revision = it->value().to_number<uint64_t>();
    if (auto it = o.find("ip"); it != o.end() && it->value().is_number()) l.ip = it->value().to_number<uint32_t>();
    if (auto it = o.find("ipHeld"); it != o.end() && it->value().is_bool()) l.ip_held = it->value().get_bool();
    if (auto it = o.find("healthChecks"); it != o.end() && it->value().is_bool()) l.health_checks = it->value().get_bool();
    if (auto it = o.find("registry"); it != o.end() && it->value().is_object()) l.registry = it->value().get_object();
    if (auto it = o.find("registered"); it != o.end() && it->value().is_bool()) l.registered = it->value().get_bool();
    if (auto it = o.find("registrationRefused"); it != o.end() && it->value().is_bool())
      l.registration_refused = it->value().get_bool();
    return l;
  }
};

// The secondary index rows of a task with the given desired status.
std::vector<std::pair<std::string_view, std::string>> IndexRows(const Scope& s, std::string_view cluster,
                                                                std::string_view id, const json::object& task,
                                                                const Launch& launch, std::string_view desired) {
  std::vector<std::pair<std::string_view, std::string>> rows;
  rows.emplace_back(kByStatus, ScopeKey(s).Str(cluster).Str(desired).Str(id).Done());
  rows.emplace_back(kByFamily, ScopeKey(s).Str(cluster).Str(launch.family).Str(desired).Str(id).Done());
  if (std::string sb = Str(task, "startedBy"); !sb.empty())
    rows.emplace_back(kByStartedBy, ScopeKey(s).Str(cluster).Str(sb).Str(desired).Str(id).Done());
  rows.emplace_back(kByGroup, internal::GroupRowKey(s, cluster, Str(task, "group"), desired, id));
  rows.emplace_back(kByLaunchType, ScopeKey(s).Str(cluster).Str(Str(task, "launchType")).Str(desired).Str(id).Done());
  return rows;
}

Status PutIndexes(store::WriteTxn& txn, const Scope& s, std::string_view cluster, std::string_view id,
                  const json::object& task, const Launch& launch, std::string_view desired) {
  for (const auto& [table, key] : IndexRows(s, cluster, id, task, launch, desired)) RETURN_IF_ERROR(txn.Put(table, key, ""));
  return OkStatus();
}
Status DeleteIndexes(store::WriteTxn& txn, const Scope& s, std::string_view cluster, std::string_view id,
                     const json::object& task, const Launch& launch, std::string_view desired) {
  for (const auto& [table, key] : IndexRows(s, cluster, id, task, launch, desired)) RETURN_IF_ERROR(txn.Delete(table, key));
  return OkStatus();
}

// Rewrites the task's task_by_group row with its stamp (internal/group_index.h): after every
// write of its record, which bumps its version.
Status StampGroupRow(store::WriteTxn& txn, const Scope& s, std::string_view cluster, std::string_view id,
                     const json::object& task) {
  ASSIGN_OR_RETURN(auto protection, txn.Get(kProtection, TaskKey(s, cluster, id)));
  const json::value* version = task.if_contains("version");
  return txn.Put(kByGroup, internal::GroupRowKey(s, cluster, Str(task, "group"), Str(task, "desiredStatus"), id),
                 internal::GroupStamp(version != nullptr && version->is_number() ? version->to_number<int64_t>() : 0,
                                      protection));
}

std::string RefKey(const Scope& s, std::string_view family, uint64_t revision, std::string_view cluster,
                   std::string_view id) {
  return ScopeKey(s).Str(family).U64(revision).Str(cluster).Str(id).Done();
}
std::string AssignmentKey(std::string_view agent, const Scope& s, std::string_view cluster, std::string_view id) {
  return Key().Str(agent).Str(s.account.str()).Str(s.region.str()).Str(cluster).Str(id).Done();
}
// The task a task_assignments row names (its key: agent, account, region, cluster, id).
struct AssignedTask {
  Scope scope;
  std::string cluster;
  std::string id;
};
StatusOr<AssignedTask> ReadAssignmentKey(std::string_view key) {
  store::KeyReader r(key);
  ASSIGN_OR_RETURN(std::string agent, r.Str());
  ASSIGN_OR_RETURN(std::string account, r.Str());
  ASSIGN_OR_RETURN(std::string region, r.Str());
  AssignedTask out;
  out.scope = Scope{AccountId(account), Region(region)};
  ASSIGN_OR_RETURN(out.cluster, r.Str());
  ASSIGN_OR_RETURN(out.id, r.Str());
  return out;
}
std::string StoppedKey(const Scope& s, int64_t stopped_ms, std::string_view cluster, std::string_view id) {
  return ScopeKey(s).U64(static_cast<uint64_t>(stopped_ms)).Str(cluster).Str(id).Done();
}

// A cluster's task_counts row, "<pending> <running> <pending EC2> <running EC2>": the EC2 counts
// are the part of the first two on container instances (rows written before EC2 existed have
// only the first two).
struct TaskCounts {
  int64_t pending = 0;
  int64_t running = 0;
  int64_t ec2_pending = 0;
  int64_t ec2_running = 0;
};

StatusOr<TaskCounts> ReadCounts(store::ReadTxn& txn, const Scope& s, std::string_view cluster) {
  ASSIGN_OR_RETURN(auto v, txn.Get(kCounts, ScopeKey(s).Str(cluster).Done()));
  TaskCounts c;
  if (!v) return c;
  const char* p = v->data();
  const char* end = v->data() + v->size();
  for (int64_t* field : {&c.pending, &c.running, &c.ec2_pending, &c.ec2_running}) {
    while (p < end && *p == ' ') ++p;
    if (p == end && field == &c.ec2_pending) break;  // an old two-field row
    auto [next, ec] = std::from_chars(p, end, *field);
    if (ec != std::errc()) return DataLoss("corrupt task counts");
    p = next;
  }
  return c;
}

enum class OnInstance : bool { kNo = false, kYes = true };  // an EC2 task

// Moves a task between ClusterUsage buckets.
Status Recount(store::WriteTxn& txn, const Scope& s, std::string_view cluster, OnInstance ec2, Bucket from,
               Bucket to) {
  if (from == to) return OkStatus();
  ASSIGN_OR_RETURN(TaskCounts c, ReadCounts(txn, s, cluster));
  auto move = [&](Bucket b, int64_t delta) {
    int64_t* total = b == Bucket::kPending ? &c.pending : b == Bucket::kRunning ? &c.running : nullptr;
    int64_t* part = b == Bucket::kPending ? &c.ec2_pending : b == Bucket::kRunning ? &c.ec2_running : nullptr;
    if (total) *total += delta;
    if (part && ec2 == OnInstance::kYes) *part += delta;
  };
  move(from, -1);
  move(to, +1);
  const std::string key = ScopeKey(s).Str(cluster).Done();
  if (c.pending == 0 && c.running == 0) return txn.Delete(kCounts, key);
  return txn.Put(kCounts, key, fmt::format("{} {} {} {}", c.pending, c.running, c.ec2_pending, c.ec2_running));
}

const vpc::Subnet* FindSubnet(const vpc::DefaultVpc& v, std::string_view id) { return v.FindSubnet(id); }

// A parsed task ARN or id: its cluster (when the ARN names one) and id.
struct TaskRef {
  std::optional<std::string> cluster;
  std::string id;
};

bool IsTaskId(std::string_view id) {
  if (id.size() != 32) return false;
  for (char c : id)
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  return true;
}

StatusOr<TaskRef> ParseTaskRef(std::string_view text, const Scope& caller, std::string_view action,
                               std::string_view caller_arn) {
  ASSIGN_OR_RETURN(ClusterScopedRef r,
                   ParseClusterScopedRef(text, ResourceKind::kTask, IsTaskId, caller, action, caller_arn));
  return TaskRef{std::move(r.cluster), std::move(r.id)};
}

std::string MacFor(uint32_t ip) {
  // As agent/net assigns it to eth0: 02:70 and the four bytes of the address.
  return fmt::format("02:70:{:02x}:{:02x}:{:02x}:{:02x}", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
}

std::string PrivateDnsName(const Scope& s, uint32_t ip) {
  std::string dashed = vpc::Ipv4ToString(ip);
  for (char& c : dashed)
    if (c == '.') c = '-';
  if (s.region.str() == "us-east-1") return fmt::format("ip-{}.ec2.internal", dashed);
  return fmt::format("ip-{}.{}.compute.internal", dashed, s.region.str());
}

StatusOr<std::string> Shown(store::ReadTxn& txn, const Scope& s, std::string_view record, bool include_tags) {
  if (!include_tags) return std::string(record);
  ASSIGN_OR_RETURN(json::object task, ParseRecordObject(record, "task"));
  ASSIGN_OR_RETURN(Tags tags, ReadTags(txn, s, Str(task, "taskArn")));
  task["tags"] = TagsJson(tags);
  return json::serialize(task);
}

// Parses an integer-valued cpu/memory string ("1024").
std::optional<int> ToInt(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

int64_t IntOf(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return (it != o.end() && it->value().is_number()) ? it->value().to_number<int64_t>() : 0;
}

// What one EC2 task reserves on its container instance, as ECS counts it: the task-level cpu and
// memory when set (by the revision or an override), else the sum over its containers — memory
// being each container's hard limit, else its soft one — and, in bridge and host mode, the fixed
// host ports of its port mappings (hostPort 0 or omitted in bridge mode is dynamic: nothing
// reserved). `overrides` is the task's TaskOverride.
placement::Demand Ec2Demand(std::string_view task_cpu, std::string_view task_memory, std::string_view network_mode,
                            const std::vector<taskdef::ContainerView>& containers, const json::object& overrides) {
  placement::Demand d;
  int64_t cpu_sum = 0, memory_sum = 0;
  for (const taskdef::ContainerView& c : containers) {
    const json::object* o = nullptr;
    if (auto co = overrides.find("containerOverrides"); co != overrides.end() && co->value().is_array())
      for (const auto& ov : co->value().as_array())
        if (ov.is_object() && Str(ov.as_object(), "name") == c.name) o = &ov.as_object();
    auto value = [&](std::string_view key, int64_t registered) {
      int64_t v = o ? IntOf(*o, key) : 0;
      return v > 0 ? v : registered;
    };
    cpu_sum += value("cpu", c.cpu);
    const int64_t hard = value("memory", c.memory);
    memory_sum += hard > 0 ? hard : value("memoryReservation", c.memory_reservation);
    if (network_mode != "bridge" && network_mode != "host") continue;
    for (const taskdef::PortMappingView& m : c.port_mappings) {
      int64_t host = m.host_port;
      if (network_mode == "host" && host == 0) host = m.container_port;
      if (host <= 0) continue;
      (m.protocol == "udp" ? d.udp_ports : d.tcp_ports).push_back(static_cast<int>(host));
    }
  }
  auto task_cpu_value = ToInt(task_cpu);
  auto task_memory_value = ToInt(task_memory);
  d.cpu = task_cpu_value ? *task_cpu_value : cpu_sum;
  d.memory = task_memory_value ? *task_memory_value : memory_sum;
  return d;
}

// The Cloud Map attributes ECS writes for a task (docs/contracts/service.md, "Service discovery").
std::map<std::string, std::string> RegistrationAttributes(const Scope& scope, std::string_view cluster,
                                                          const json::object& task, const Launch& launch) {
  std::map<std::string, std::string> a;
  a["AWS_INSTANCE_IPV4"] = vpc::Ipv4ToString(launch.ip);
  // The SRV port: `port`, or (awsvpc: the host port is the container port) containerPort.
  const int64_t port = IntOf(launch.registry, "port") > 0 ? IntOf(launch.registry, "port")
                                                          : IntOf(launch.registry, "containerPort");
  if (port > 0) a["AWS_INSTANCE_PORT"] = std::to_string(port);
  if (const std::string az = Str(task, "availabilityZone"); !az.empty()) a["AVAILABILITY_ZONE"] = az;
  a["REGION"] = scope.region.str();
  a["ECS_CLUSTER_NAME"] = std::string(cluster);
  if (const std::string group = Str(task, "group"); group.starts_with("service:"))
    a["ECS_SERVICE_NAME"] = group.substr(8);
  a["ECS_TASK_DEFINITION_FAMILY"] = launch.family;
  return a;
}

// Makes the task's registration in its service registry what the task now is — an instance while
// it is RUNNING with desiredStatus RUNNING (and HEALTHY, when its definition has health checks),
// none otherwise — in `txn`, writing the launch record when that changed. True when the registry
// was written (Discovery::Published is due after the commit). Only awsvpc tasks are registered:
// the instance's address is the task's own.
StatusOr<bool> SyncRegistration(Discovery* discovery, store::WriteTxn& txn, const Scope& scope,
                                std::string_view cluster, std::string_view id, const json::object& task,
                                Launch& launch) {
  if (discovery == nullptr || launch.registry.empty()) return false;
  const bool wanted = launch.ip_held && Str(task, "lastStatus") == "RUNNING" &&
                      Str(task, "desiredStatus") == "RUNNING" &&
                      (!launch.health_checks || Str(task, "healthStatus") == "HEALTHY");
  if (wanted == launch.registered) return false;
  const std::string registry_arn = Str(launch.registry, "registryArn");
  if (wanted) {
    ASSIGN_OR_RETURN(std::optional<std::string> refused,
                     discovery->Register(txn, scope, registry_arn, id,
                                         RegistrationAttributes(scope, cluster, task, launch)));
    if (refused) {  // ECS keeps the task running; the registry just does not list it
      if (launch.registration_refused) return false;  // said once per task
      fmt::print(stderr, "paddock: task {} was not registered in {}: {}\n", id, registry_arn, *refused);
      launch.registration_refused = true;
      RETURN_IF_ERROR(txn.Put(kLaunch, TaskKey(scope, cluster, id), launch.Encode()));
      return false;
    }
  } else {
    RETURN_IF_ERROR(discovery->Deregister(txn, scope, registry_arn, id));
  }
  launch.registered = wanted;
  launch.registration_refused = false;
  RETURN_IF_ERROR(txn.Put(kLaunch, TaskKey(scope, cluster, id), launch.Encode()));
  return true;
}

}  // namespace

std::string TaskArn(const Scope& scope, std::string_view cluster, std::string_view id) {
  return fmt::format("arn:aws:ecs:{}:{}:task/{}/{}", scope.region.str(), scope.account.str(), cluster, id);
}

StatusOr<std::string> TaskId(std::string_view ref, const Scope& caller, std::string_view action,
                             std::string_view caller_arn) {
  ASSIGN_OR_RETURN(TaskRef r, ParseTaskRef(ref, caller, action, caller_arn));
  return r.id;
}

struct Tasks::RunPlan {
  std::string cluster;
  std::string cluster_arn;
  std::string launch_type;        // FARGATE
  std::string capacity_provider;  // the strategy's first provider, when one chose it
  taskdef::LaunchView view;       // the pinned revision
  std::vector<std::pair<std::string, std::string>> containers;  // name, image
  json::object overrides;         // TaskOverride as the task reports it
  std::string cpu;                // the task's size after overrides
  std::string memory;
  std::vector<vpc::Subnet> subnets;  // awsvpc: the requested subnets, in order
  std::vector<std::string> security_groups;  // awsvpc: the interface's groups (default: the VPC's)
  Tags tags;                      // the caller's, propagated and managed ones
  std::string group;
  std::optional<std::string> started_by;
  std::string canonical;          // the request as a clientToken remembers it
  int64_t count = 1;
  std::optional<std::string> client_token;
  std::string action;             // RunTask | StartTask, for messages
  // EC2: what each task takes of an instance, and how instances are chosen (RunTask) or which
  // ones (StartTask: one task each, no strategies).
  bool ec2 = false;
  placement::Demand demand;
  std::vector<placement::Strategy> strategies;
  std::vector<placement::Constraint> constraints;
  std::vector<instance::InstanceRef> targets;
  std::function<Status(store::WriteTxn&, const std::vector<std::string>&)> in_txn;  // RunRequest::in_txn
  taskdef::InactiveRevision inactive_revision = taskdef::InactiveRevision::kRefuse;
  json::object service_registry;  // RunRequest::service_registry (empty: none)
};

// An EC2 task's container instance, chosen by placement or named by StartTask.
struct Tasks::Target {
  std::string id;
  std::string arn;
  std::string zone;  // its ecs.availability-zone
};

StatusOr<Tasks::RunPlan> Tasks::PlanRun(const Scope& scope, std::string_view caller_arn, const RunRequest& req,
                                        std::string_view action) {
  RunPlan plan;
  plan.count = req.count;
  plan.client_token = req.client_token;
  ASSIGN_OR_RETURN(plan.cluster, cluster::ClusterName(req.cluster, scope, action, caller_arn));
  if (req.count < 1 || req.count > 10) return ParamError("count must be between 1 and 10.");
  if (req.client_token) {
    const std::string& t = *req.client_token;
    bool ok = !t.empty() && t.size() <= 64;
    for (char c : t) ok = ok && c >= 33 && c <= 126;
    if (!ok) return ParamError("clientToken must be 1 to 64 characters in the range 33-126.");
  }
  if (req.launch_type && !req.capacity_providers.empty())
    return ParamError("Specifying both a launch type and capacity provider strategy is not supported. Remove one and try again.");

  // The cluster: it must exist and be ACTIVE.
  ASSIGN_OR_RETURN(cluster::Clusters::LaunchSettings cluster_settings, clusters_.ForLaunch(scope, plan.cluster));

  // Launch type and capacity provider: FARGATE (the node's Fargate agent) or EC2 (the cluster's
  // container instances). EXTERNAL instances do not exist, which AWS reports as below.
  std::vector<std::string> providers = req.capacity_providers;
  if (req.launch_type) {
    plan.launch_type = *req.launch_type;
  } else if (providers.empty()) {
    providers = cluster_settings.default_strategy;
    if (providers.empty()) plan.launch_type = "EC2";
  }
  if (plan.launch_type.empty()) {
    const std::set<std::string> associated(cluster_settings.capacity_providers.begin(),
                                           cluster_settings.capacity_providers.end());
    for (const auto& p : providers) {
      if (!associated.count(p))
        return ParamError(
            "The specified capacity provider strategy cannot contain a capacity provider that is not associated with "
            "the cluster. Associate the capacity provider with the cluster or specify a valid capacity provider and "
            "try again.");
    }
    plan.capacity_provider = providers.front();
    // An Auto Scaling group provider's tasks run on the cluster's container instances (EC2).
    ASSIGN_OR_RETURN(plan.launch_type, capacity::StrategyLaunchType(providers));
  }
  plan.ec2 = plan.launch_type == "EC2" && instances_ != nullptr;
  if (plan.launch_type != "FARGATE" && !plan.ec2) return ParamError("No Container Instances were found in your cluster.");
  if (!plan.ec2 && req.placement_constraints && !req.placement_constraints->empty())
    return ParamError("Placement constraints are not supported with FARGATE launch type.");
  if (!plan.ec2 && req.placement_strategy && !req.placement_strategy->empty())
    return ParamError("Placement strategies are not supported with FARGATE launch type.");

  if (req.platform_version && *req.platform_version != "LATEST" && *req.platform_version != kPlatformVersion)
    return InvalidArgument("The specified platform does not exist.", ecs::Error::kPlatformUnknown);
  if (req.enable_execute_command)
    return InvalidArgument("ECS Exec (enableExecuteCommand) is not supported by Paddock yet.", ecs::Error::kInvalidParameter);
  if (req.group && (req.group->empty() || req.group->size() > 255)) return ParamError("group must be 1 to 255 characters.");
  if (req.started_by && req.started_by->size() > 128) return ParamError("startedBy must be at most 128 characters.");

  // Resolve the task definition ONCE; everything below uses this pinned view.
  ASSIGN_OR_RETURN(taskdef::Ref ref, taskdef::ParseRef(req.task_definition, scope, action, caller_arn));
  ASSIGN_OR_RETURN(plan.view, task_definitions_.ResolveForLaunch(scope, ref, req.inactive_revision));
  if (req.launch_check) RETURN_IF_ERROR(req.launch_check(plan.view));
  // Then whether ECS can assume its roles, for every caller (issue 11, ecs/task/role_check.h).
  RETURN_IF_ERROR(CheckLaunchRoles(role_check_, scope.account, plan.view, req.overrides ? &*req.overrides : nullptr));
  plan.in_txn = req.in_txn;
  plan.inactive_revision = req.inactive_revision;
  const auto& compat = plan.view.compatibilities;
  if (std::find(compat.begin(), compat.end(), plan.launch_type) == compat.end())
    return ParamError(fmt::format("Task definition does not support launch_type {}.", plan.launch_type));
  std::set<std::string> container_names;
  for (const taskdef::ContainerView& c : plan.view.containers) {
    plan.containers.emplace_back(c.name, c.image);
    container_names.insert(c.name);
  }

  // Overrides: container names must exist; on Fargate a task-level size must be a Fargate size.
  plan.overrides = json::object{{"containerOverrides", json::array()}, {"inferenceAcceleratorOverrides", json::array()}};
  plan.cpu = plan.view.cpu;
  plan.memory = plan.view.memory;
  if (req.overrides) {
    for (const auto& [k, v] : *req.overrides) plan.overrides[k] = v;
    if (auto it = req.overrides->find("containerOverrides"); it != req.overrides->end() && it->value().is_array()) {
      for (const auto& o : it->value().as_array()) {
        std::string name = o.is_object() ? Str(o.as_object(), "name") : std::string();
        if (!container_names.count(name))
          return ParamError(fmt::format("Override for container named {} is not a container in the TaskDefinition.", name));
        RETURN_IF_ERROR(taskdef::CheckEnvironmentNames(o.as_object(), name));  // no forged variables
      }
    }
    if (std::string c = Str(*req.overrides, "cpu"); !c.empty()) {
      ASSIGN_OR_RETURN(plan.cpu, taskdef::NormalizeCpu(c));
    }
    if (std::string m = Str(*req.overrides, "memory"); !m.empty()) {
      ASSIGN_OR_RETURN(plan.memory, taskdef::NormalizeMemory(m));
    }
    auto c = ToInt(plan.cpu), m = ToInt(plan.memory);
    if (!plan.ec2 && (!c || !m || !taskdef::IsFargateSize(*c, *m)))
      return ClientError(fmt::format(
          "No Fargate configuration exists for given values: {} CPU, {} memory. See the Amazon ECS documentation for "
          "the valid values.",
          plan.cpu, plan.memory));
  }

  // Network: awsvpc needs subnets of the caller's default VPC.
  const vpc::DefaultVpc default_vpc = vpc::DefaultVpcFor(scope);
  if (plan.view.network_mode != "awsvpc" && req.network_configuration)
    return ParamError("Network Configuration is not valid for the given networkMode of this task definition.");
  if (plan.view.network_mode == "awsvpc") {
    if (!req.network_configuration)
      return ParamError("Network Configuration must be provided when networkMode 'awsvpc' is specified.");
    auto it = req.network_configuration->find("awsvpcConfiguration");
    if (it == req.network_configuration->end() || !it->value().is_object())
      return ParamError("Network Configuration must be provided when networkMode 'awsvpc' is specified.");
    const json::object& awsvpc = it->value().as_object();
    std::vector<std::string> ids;
    if (auto s = awsvpc.find("subnets"); s != awsvpc.end() && s->value().is_array())
      for (const auto& v : s->value().as_array())
        if (v.is_string()) ids.emplace_back(v.get_string());
    if (ids.empty()) return ParamError("subnets can not be empty.");
    if (ids.size() > 16) return ParamError("At most 16 subnets can be specified.");
    for (const auto& id : ids) {
      const vpc::Subnet* sn = FindSubnet(default_vpc, id);
      if (sn == nullptr)
        return ParamError(fmt::format(
            "Error retrieving subnet information for [{}]: The subnet ID '{}' does not exist (ECS)", id, id));
      plan.subnets.push_back(*sn);
    }
    // Security groups of the caller's VPC (vpc/security_groups.h); none: the VPC's default group.
    if (auto g = awsvpc.find("securityGroups"); g != awsvpc.end() && g->value().is_array())
      for (const auto& v : g->value().as_array())
        plan.security_groups.emplace_back(v.is_string() ? std::string_view(v.get_string()) : std::string_view());
    if (plan.security_groups.size() > vpc::kMaxGroupsPerInterface)
      return ParamError("At most 5 security groups can be specified.");
    std::vector<std::string> missing;
    RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(missing, vpc::MissingGroups(txn, scope, plan.security_groups));
      return OkStatus();
    }));
    if (!missing.empty())
      return ParamError(fmt::format(
          "Error retrieving security group information for [{0}]: The security group '{0}' does not exist (ECS)",
          missing.front()));
    if (plan.security_groups.empty()) plan.security_groups.push_back(default_vpc.security_group_id);
  }

  if (plan.ec2) {
    plan.demand = Ec2Demand(plan.cpu, plan.memory, plan.view.network_mode, plan.view.containers, plan.overrides);
    plan.demand.attributes = plan.view.requires_attributes;
    if (req.placement_strategy) {
      ASSIGN_OR_RETURN(plan.strategies, placement::ParseStrategies(*req.placement_strategy));
    }
    json::array constraints = req.placement_constraints.value_or(json::array());
    for (const auto& c : plan.view.placement_constraints) constraints.push_back(c);  // the revision's memberOf ones too
    ASSIGN_OR_RETURN(plan.constraints, placement::ParseConstraints(constraints));
  }

  // Tags: the caller's, the task definition's (propagateTags TASK_DEFINITION), ECS-managed ones.
  RETURN_IF_ERROR(ValidateTags(req.tags));
  auto add_tag = [&](const Tag& t) {
    for (auto& existing : plan.tags)
      if (existing.key == t.key) {
        existing.value = t.value;
        return;
      }
    plan.tags.push_back(t);
  };
  if (req.propagate_tags == "TASK_DEFINITION") {
    ASSIGN_OR_RETURN(Tags td_tags, task_definitions_.ListTags(scope, taskdef::Ref{plan.view.family, plan.view.revision}));
    for (const auto& t : td_tags) add_tag(t);
  }
  for (const auto& t : req.tags) add_tag(t);
  plan.group = req.group.value_or("family:" + plan.view.family);
  if (req.enable_ecs_managed_tags) {
    add_tag(Tag{"aws:ecs:clusterName", plan.cluster});
    if (plan.group.starts_with("service:")) add_tag(Tag{"aws:ecs:serviceName", plan.group.substr(8)});
  }
  // ECS's own "aws:" tags do not count toward the 50.
  if (std::count_if(plan.tags.begin(), plan.tags.end(), [](const Tag& t) { return !t.key.starts_with("aws:"); }) >
      static_cast<std::ptrdiff_t>(kMaxTagsPerResource))
    return ParamError("The task would have more than 50 tags.");

  // The request as the clientToken remembers it: a repeat must match it exactly.
  json::object canonical{{"cluster", plan.cluster},        {"taskDefinition", req.task_definition},
                         {"count", req.count},        {"launchType", req.launch_type.value_or("")},
                         {"group", req.group.value_or("")}, {"startedBy", req.started_by.value_or("")},
                         {"platformVersion", req.platform_version.value_or("")},
                         {"propagateTags", req.propagate_tags.value_or("")},
                         {"managedTags", req.enable_ecs_managed_tags}, {"tags", TagsJson(req.tags)}};
  json::array cp;
  for (const auto& p : req.capacity_providers) cp.push_back(json::string(p));
  canonical["capacityProviders"] = std::move(cp);
  if (req.network_configuration) canonical["networkConfiguration"] = *req.network_configuration;
  if (req.overrides) canonical["overrides"] = *req.overrides;
  if (req.placement_constraints) canonical["placementConstraints"] = *req.placement_constraints;
  if (req.placement_strategy) canonical["placementStrategy"] = *req.placement_strategy;
  plan.canonical = json::serialize(canonical);
  plan.cluster_arn = ClusterArn(scope, plan.cluster);

  plan.started_by = req.started_by;
  if (req.service_registry) plan.service_registry = *req.service_registry;
  plan.action = std::string(action);
  return plan;
}

// Writes task `index` of a run: its address, record, indexes, assignment, reference, count and
// tags. Returns its ARN, or "" when it went to failures[] instead.
StatusOr<std::string> Tasks::PutTask(store::WriteTxn& txn, const Scope& scope, const RunPlan& plan, size_t index,
                                     const Target* target, TimePoint now, RunResult& result) {
  const std::string id = HexEncode(RandomBytes(16));
  const std::string arn = TaskArn(scope, plan.cluster, id);
  Launch launch{fargate_agent_, plan.view.family, plan.view.revision, plan.view.definition, {}, 0, false, {},
                plan.view.health_checks, plan.service_registry, false, false};
  if (target != nullptr) {  // EC2: the instance's resources first; a refusal is this task's failure
    launch.agent = InstanceAgentId(target->arn);
    launch.instance = target->id;
    instance::Demand d{plan.demand.cpu, plan.demand.memory, {}, {}};
    d.tcp_ports.assign(plan.demand.tcp_ports.begin(), plan.demand.tcp_ports.end());
    d.udp_ports.assign(plan.demand.udp_ports.begin(), plan.demand.udp_ports.end());
    Status reserved = instances_->Reserve(txn, scope, plan.cluster, target->id, id, d);
    if (reserved.code() == StatusCode::kFailedPrecondition || reserved.code() == StatusCode::kNotFound) {
      result.failures.push_back({target->arn, std::string(instance::RefusalReason(reserved)), ""});
      return std::string();
    }
    RETURN_IF_ERROR(reserved);
  }
  // Where the overlay reaches the task from other hosts (vpc/ipam.h): its instance's agent's host,
  // a Fargate task's host, or this server's for one of its own [[ec2_instance]]s.
  std::string host = overlay_address_;
  // Fargate: the account's vCPU quota and the capacity of the hosts that offer it, this server's or
  // another's (whose agent then runs it); a refusal is this task's failure.
  const bool fargate_reserved = target == nullptr && fargate_ != nullptr;
  if (fargate_reserved) {
    const FargateDemand demand{ToInt(plan.cpu).value_or(0), ToInt(plan.memory).value_or(0)};
    ASSIGN_OR_RETURN(FargatePlacement placed, fargate_->Reserve(txn, scope, plan.cluster, id, demand, now));
    if (placed.admission != Admission::kAdmitted) {  // ECS names no resource: the arn is left out
      result.failures.push_back({"", std::string(FailureReason(placed.admission)), ""});
      return std::string();
    }
    if (placed.elsewhere) {
      launch.agent = std::move(placed.elsewhere->agent);
      host = std::move(placed.elsewhere->overlay_address);
    }
  }
  const vpc::Subnet* subnet = nullptr;
  const std::string eni = "eni-" + HexEncode(RandomBytes(9)).substr(0, 17);
  if (target != nullptr && !plan.subnets.empty()) {
    ASSIGN_OR_RETURN(instance::AgentBinding b,
                     instances_->agents().BindingOf(txn, scope, plan.cluster, target->id));
    if (b.kind != instance::AgentKind::kInProcess) host = std::move(b.overlay_address);  // none: no agent runs it
  }
  for (size_t k = 0; k < plan.subnets.size() && subnet == nullptr; ++k) {
    const vpc::Subnet* candidate = &plan.subnets[(index + k) % plan.subnets.size()];
    StatusOr<uint32_t> ip = vpc::AllocateIp(txn, scope, *candidate, arn, plan.security_groups, host);
    if (ip.ok()) {
      subnet = candidate;
      launch.ip = *ip;
      launch.ip_held = true;
      launch.subnet_id = candidate->id;
    } else if (ip.status().code() != StatusCode::kResourceExhausted) {
      return ip.status();
    }
  }
  if (!plan.subnets.empty() && subnet == nullptr) {
    if (target != nullptr) RETURN_IF_ERROR(instances_->Release(txn, scope, plan.cluster, target->id, id));
    if (fargate_reserved) RETURN_IF_ERROR(fargate_->Release(txn, scope, plan.cluster, id));
    result.failures.push_back({arn, "RESOURCE:ENI", "No free IP address in the requested subnets."});
    return std::string();
  }
  const std::string attachment_id = RandomUuid();

  json::object task;
  json::array attachments;
  if (subnet != nullptr) {
    json::array details{
        json::object{{"name", "subnetId"}, {"value", subnet->id}},
        json::object{{"name", "networkInterfaceId"}, {"value", eni}},
        json::object{{"name", "macAddress"}, {"value", MacFor(launch.ip)}},
        json::object{{"name", "privateDnsName"}, {"value", PrivateDnsName(scope, launch.ip)}},
        json::object{{"name", "privateIPv4Address"}, {"value", vpc::Ipv4ToString(launch.ip)}},
    };
    attachments.push_back(json::object{
        {"id", attachment_id}, {"type", "ElasticNetworkInterface"}, {"status", "PRECREATED"}, {"details", details}});
  }
  task["attachments"] = std::move(attachments);
  task["attributes"] = json::array{json::object{{"name", "ecs.cpu-architecture"}, {"value", "x86_64"}}};
  if (subnet != nullptr) {
    task["availabilityZone"] = subnet->az;
  } else if (target != nullptr && !target->zone.empty()) {
    task["availabilityZone"] = target->zone;
  }
  if (!plan.capacity_provider.empty()) task["capacityProviderName"] = plan.capacity_provider;
  task["clusterArn"] = plan.cluster_arn;
  if (target != nullptr) task["containerInstanceArn"] = target->arn;
  json::array cs;
  for (const auto& [name, image] : plan.containers) {
    json::object c{{"containerArn", fmt::format("arn:aws:ecs:{}:{}:container/{}/{}/{}", scope.region.str(),
                                                scope.account.str(), plan.cluster, id, RandomUuid())},
                   {"taskArn", arn},
                   {"name", name},
                   {"image", image},
                   {"lastStatus", "PENDING"},
                   {"networkBindings", json::array()},
                   {"healthStatus", "UNKNOWN"}};
    json::array nis;
    if (subnet != nullptr)
      nis.push_back(json::object{{"attachmentId", attachment_id}, {"privateIpv4Address", vpc::Ipv4ToString(launch.ip)}});
    c["networkInterfaces"] = std::move(nis);
    cs.push_back(std::move(c));
  }
  task["containers"] = std::move(cs);
  task["cpu"] = plan.cpu;
  task["createdAt"] = EpochSeconds(now);
  task["desiredStatus"] = "RUNNING";
  task["enableExecuteCommand"] = false;
  task["group"] = plan.group;
  task["healthStatus"] = "UNKNOWN";
  task["lastStatus"] = "PROVISIONING";
  task["launchType"] = plan.launch_type;
  task["memory"] = plan.memory;
  task["overrides"] = plan.overrides;
  if (target == nullptr) {  // Fargate's own fields; EC2 tasks have none of them
    task["platformVersion"] = kPlatformVersion;
    task["platformFamily"] = "Linux";
    task["ephemeralStorage"] = json::object{{"sizeInGiB", 20}};
    task["fargateEphemeralStorage"] = json::object{{"sizeInGiB", 20}};
  }
  if (plan.started_by) task["startedBy"] = *plan.started_by;
  task["taskArn"] = arn;
  task["taskDefinitionArn"] = plan.view.arn;
  task["version"] = 1;

  RETURN_IF_ERROR(txn.Put(kTasks, TaskKey(scope, plan.cluster, id), json::serialize(task)));
  RETURN_IF_ERROR(txn.Put(kLaunch, TaskKey(scope, plan.cluster, id), launch.Encode()));
  RETURN_IF_ERROR(PutIndexes(txn, scope, plan.cluster, id, task, launch, "RUNNING"));
  RETURN_IF_ERROR(StampGroupRow(txn, scope, plan.cluster, id, task));
  RETURN_IF_ERROR(txn.Put(kAssignments, AssignmentKey(launch.agent, scope, plan.cluster, id), ""));
  RETURN_IF_ERROR(txn.Put(kRefs, RefKey(scope, plan.view.family, plan.view.revision, plan.cluster, id), ""));
  RETURN_IF_ERROR(Recount(txn, scope, plan.cluster, OnInstance(target != nullptr), Bucket::kNone, Bucket::kPending));
  RETURN_IF_ERROR(PutTags(txn, scope, arn, plan.tags));
  task["tags"] = TagsJson(plan.tags);
  result.tasks.push_back(json::serialize(task));
  return arn;
}

StatusOr<RunResult> Tasks::Run(const Scope& scope, std::string_view caller_arn, const RunRequest& req, TimePoint now) {
  ASSIGN_OR_RETURN(const RunPlan plan, PlanRun(scope, caller_arn, req, "RunTask"));
  return Commit(scope, caller_arn, plan, now);
}

StatusOr<RunResult> Tasks::Start(const Scope& scope, std::string_view caller_arn, const StartRequest& req,
                                 TimePoint now) {
  if (instances_ == nullptr) return ParamError("No Container Instances were found in your cluster.");
  if (req.container_instances.empty()) return ParamError("containerInstances can not be empty.");
  if (req.container_instances.size() > 10) return ParamError("containerInstances can have at most 10 items.");
  std::vector<instance::InstanceRef> targets;
  for (const auto& text : req.container_instances) {
    ASSIGN_OR_RETURN(instance::InstanceRef ref, instance::ParseInstanceRef(text, scope, "StartTask", caller_arn));
    targets.push_back(std::move(ref));
  }
  RunRequest run = req.run;
  run.launch_type = "EC2";
  run.capacity_providers.clear();
  run.count = static_cast<int64_t>(targets.size());
  run.placement_constraints.reset();
  run.placement_strategy.reset();
  ASSIGN_OR_RETURN(RunPlan plan, PlanRun(scope, caller_arn, run, "StartTask"));
  for (const auto& t : targets)
    if (t.cluster && *t.cluster != plan.cluster) return ParamError(fmt::format("Invalid identifier: {}", t.text));
  plan.targets = std::move(targets);
  return Commit(scope, caller_arn, plan, now);
}

// The non-STOPPED tasks of `group` in the cluster, per container instance id: spread and
// distinctInstance count them.
StatusOr<std::map<std::string, int64_t>> Tasks::GroupTasksPerInstance(store::ReadTxn& txn, const Scope& scope,
                                                                      std::string_view cluster, std::string_view group) {
  std::map<std::string, int64_t> counts;
  const store::Range range = store::PrefixRange(ScopeKey(scope).Str(cluster).Str(group).Str("RUNNING").Done());
  std::string begin = range.begin;
  while (true) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kByGroup, store::Range{begin, range.end}, 500));
    for (const auto& row : rows) {
      store::KeyReader r(row.key);
      for (int i = 0; i < 5; ++i) {  // account, region, cluster, group, desired status
        ASSIGN_OR_RETURN(std::string part, r.Str());
      }
      ASSIGN_OR_RETURN(std::string id, r.Str());
      ASSIGN_OR_RETURN(auto l, txn.Get(kLaunch, TaskKey(scope, cluster, id)));
      if (!l) continue;
      ASSIGN_OR_RETURN(Launch launch, Launch::Decode(*l));
      if (!launch.instance.empty()) ++counts[launch.instance];
    }
    if (rows.size() < 500) return counts;
    begin = store::KeySuccessor(rows.back().key);
  }
}

// Where each EC2 task of the run goes: RunTask places them (placement.h) on the cluster's ACTIVE
// instances, adding the instances' reasons to result.failures for the tasks that fit nowhere;
// StartTask takes the named instances, and `refused` holds the failure of each one that is
// missing or disconnected (in request order: Commit reports it in the task's turn).
StatusOr<std::vector<std::optional<Tasks::Target>>> Tasks::Place(
    store::WriteTxn& txn, const Scope& scope, const RunPlan& plan, TimePoint now, RunResult& result,
    std::vector<std::optional<RunResult::Failure>>& refused) {
  std::vector<std::optional<Target>> where(static_cast<size_t>(plan.count));
  refused.assign(where.size(), std::nullopt);
  ASSIGN_OR_RETURN(std::vector<instance::Candidate> cands, instances_->Candidates(txn, scope, plan.cluster, now));
  auto zone_of = [](const instance::Candidate& c) {
    auto it = c.facts.attributes.find("ecs.availability-zone");
    return it == c.facts.attributes.end() ? std::string() : it->second;
  };
  if (!plan.targets.empty()) {  // StartTask: the named instances; Reserve judges each
    for (size_t i = 0; i < plan.targets.size(); ++i) {
      const instance::InstanceRef& ref = plan.targets[i];
      auto c = std::find_if(cands.begin(), cands.end(), [&](const auto& x) { return x.id == ref.id; });
      if (c == cands.end()) {
        // Not ACTIVE: ECS's StartTask reasons are MISSING (no such instance) and INACTIVE (one
        // that cannot be used: deregistered, and here DRAINING too — the detail says which).
        Status why = instances_->CheckPlaceable(txn, scope, plan.cluster, ref.id);
        std::string_view reason = instance::RefusalReason(why);
        if (!why.ok() && reason.empty()) return why;
        refused[i] = RunResult::Failure{instance::ContainerInstanceArn(scope, plan.cluster, ref.id),
                                        std::string(reason.empty() ? "MISSING" : reason),
                                        reason == "INACTIVE" ? std::string(why.message()) : std::string()};
        continue;
      }
      if (!c->facts.agent_connected) {
        refused[i] = RunResult::Failure{c->arn, "AGENT", ""};
        continue;
      }
      if (!placement::HasRequiredAttributes(c->facts, plan.demand)) {  // e.g. host access (host_grants.h)
        refused[i] = RunResult::Failure{c->arn, "ATTRIBUTE", ""};
        continue;
      }
      where[i] = Target{c->id, c->arn, zone_of(*c)};
    }
    return where;
  }
  if (cands.empty()) return ParamError("No Container Instances were found in your cluster.");
  // Only spread and distinctInstance look at where the group's tasks are: the scan costs a read
  // per running task of the group, which a plain run does not pay.
  std::map<std::string, int64_t> group_counts;
  const bool by_group =
      std::any_of(plan.strategies.begin(), plan.strategies.end(),
                  [](const placement::Strategy& s) { return s.type == placement::Strategy::Type::kSpread; }) ||
      std::any_of(plan.constraints.begin(), plan.constraints.end(), [](const placement::Constraint& c) {
        return c.type == placement::Constraint::Type::kDistinctInstance;
      });
  if (by_group) {
    ASSIGN_OR_RETURN(group_counts, GroupTasksPerInstance(txn, scope, plan.cluster, plan.group));
  }
  std::vector<placement::Candidate> pc;
  for (const auto& c : cands) {
    placement::Candidate p;
    p.arn = c.arn;
    p.id = c.id;
    p.facts = c.facts;
    p.cpu = c.remaining_cpu;
    p.memory = c.remaining_memory;
    for (const auto& port : c.used_tcp_ports)
      if (auto v = ToInt(port)) p.tcp_ports.insert(*v);
    for (const auto& port : c.used_udp_ports)
      if (auto v = ToInt(port)) p.udp_ports.insert(*v);
    if (auto it = group_counts.find(c.id); it != group_counts.end()) p.group_tasks = it->second;
    pc.push_back(std::move(p));
  }
  std::mt19937_64 rng(std::random_device{}());
  placement::Outcome out =
      placement::Place(pc, plan.demand, static_cast<int>(plan.count), plan.strategies, plan.constraints, rng);
  for (size_t i = 0; i < out.placed.size(); ++i)
    if (out.placed[i]) where[i] = Target{cands[*out.placed[i]].id, cands[*out.placed[i]].arn, zone_of(cands[*out.placed[i]])};
  for (const auto& f : out.failures) result.failures.push_back({f.arn, f.reason, ""});
  return where;
}

StatusOr<RunResult> Tasks::Commit(const Scope& scope, std::string_view caller_arn, const RunPlan& plan, TimePoint now) {
  if (before_commit_) before_commit_();
  RunResult result;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    result = RunResult{};
    // Again inside the transaction: a DeleteCluster that committed since the check above wins, and
    // so does a DeregisterTaskDefinition or DeleteTaskDefinitions of the pinned revision.
    RETURN_IF_ERROR(clusters_.CheckActive(txn, scope, plan.cluster));
    RETURN_IF_ERROR(task_definitions_.CheckLaunchable(txn, scope, plan.view, plan.inactive_revision));
    std::string token_key;
    if (plan.client_token) {
      token_key = ScopeKey(scope).Str(*plan.client_token).Done();
      ASSIGN_OR_RETURN(auto existing, txn.Get(kTokens, token_key));
      if (existing) {
        ASSIGN_OR_RETURN(json::object tok, ParseRecordObject(*existing, "client token"));
        const int64_t expires = tok.at("expires").to_number<int64_t>();
        if (EpochMillis(now) < expires) {
          std::vector<std::string> arns;
          for (const auto& a : tok.at("arns").as_array()) arns.emplace_back(a.as_string());
          if (Str(tok, "request") != plan.canonical)
            return FailedPrecondition(
                fmt::format("The {} request could not be processed due to conflicts. The provided clientToken is "
                            "already in use with a different {} request. The resourceIds are the existing task "
                            "ARNs which are already associated with the clientToken: [{}]",
                            plan.action, plan.action, fmt::join(arns, ", ")),
                ecs::Error::kConflict);
          for (const auto& arn : arns) {
            ASSIGN_OR_RETURN(TaskRef r, ParseTaskRef(arn, scope, plan.action, caller_arn));
            ASSIGN_OR_RETURN(auto rec, txn.Get(kTasks, TaskKey(scope, r.cluster.value_or(plan.cluster), r.id)));
            if (!rec) continue;  // reaped after it stopped
            ASSIGN_OR_RETURN(std::string shown, Shown(txn, scope, *rec, true));
            result.tasks.push_back(std::move(shown));
          }
          return OkStatus();
        }
      }
    }

    std::vector<std::optional<Target>> where;
    std::vector<std::optional<RunResult::Failure>> refused;
    if (plan.ec2) {
      ASSIGN_OR_RETURN(where, Place(txn, scope, plan, now, result, refused));
    }
    json::array arns;
    for (size_t i = 0; i < static_cast<size_t>(plan.count); ++i) {
      if (plan.ec2 && !where[i]) {  // placement's failures are in result.failures already
        if (refused[i]) result.failures.push_back(*refused[i]);
        continue;
      }
      ASSIGN_OR_RETURN(std::string arn, PutTask(txn, scope, plan, i, plan.ec2 ? &*where[i] : nullptr, now, result));
      if (!arn.empty()) arns.push_back(json::string(arn));
    }
    if (plan.in_txn) {
      std::vector<std::string> launched;
      for (const auto& a : arns) launched.emplace_back(a.as_string());
      RETURN_IF_ERROR(plan.in_txn(txn, launched));
    }
    if (plan.client_token) {
      json::object tok{{"request", plan.canonical},
                       {"arns", std::move(arns)},
                       {"expires", EpochMillis(now + kTokenLifetime)}};
      RETURN_IF_ERROR(txn.Put(kTokens, token_key, json::serialize(tok)));
    }
    return OkStatus();
  }));
  if (!result.tasks.empty()) NotifyChange();
  if (!result.tasks.empty()) NotifyTasks(scope);
  if (!result.tasks.empty() && !plan.subnets.empty()) NotifyAddresses(scope);
  return result;
}

StatusOr<DescribeResult> Tasks::Describe(const Scope& scope, std::optional<std::string_view> cluster_ref,
                                         const std::vector<std::string>& refs, bool include_tags,
                                         std::string_view caller_arn) {
  ASSIGN_OR_RETURN(std::string cluster, cluster::ClusterName(cluster_ref, scope, "DescribeTasks", caller_arn));
  if (refs.empty()) return ParamError("Tasks cannot be empty.");
  if (refs.size() > 100) return ParamError("Tasks cannot contain more than 100 elements.");
  DescribeResult result;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, cluster));
    for (const auto& text : refs) {
      auto r = ParseTaskRef(text, scope, "DescribeTasks", caller_arn);
      if (!r.ok()) {
        if (r.status().code() == StatusCode::kPermissionDenied) return r.status();
        result.failures.push_back({text, "MISSING", {}});
        continue;
      }
      std::optional<std::string> rec;
      if (!r->cluster || *r->cluster == cluster) {
        ASSIGN_OR_RETURN(rec, txn.Get(kTasks, TaskKey(scope, cluster, r->id)));
      }
      if (!rec) {
        result.failures.push_back({text.substr(0, 4) == "arn:" ? text : TaskArn(scope, cluster, r->id), "MISSING", {}});
        continue;
      }
      ASSIGN_OR_RETURN(std::string shown, Shown(txn, scope, *rec, include_tags));
      result.tasks.push_back(std::move(shown));
    }
    return OkStatus();
  }));
  return result;
}

namespace {
// The (cluster, id) a tag operation's task ARN names; see Tasks::TagResource.
StatusOr<TaskRef> TaggedTask(const Scope& scope, std::string_view arn) {
  ASSIGN_OR_RETURN(TaskRef r, ParseTaskRef(arn, scope, "TagResource", ""));
  if (!r.cluster) return ParamError("Long arn format must be used for tagging operations");
  return r;
}

Status TaggedTaskNotFound(std::string_view arn) {
  return NotFound(fmt::format("The specified resource is not found: {}", arn), ecs::Error::kResourceNotFound);
}

// Runs `change` on the task's tags in one write, after checking the task is there.
Status ChangeTaskTags(store::Store& store, const Scope& scope, std::string_view arn,
                      const std::function<Status(store::WriteTxn&, const std::string& stored_arn)>& change) {
  ASSIGN_OR_RETURN(TaskRef r, TaggedTask(scope, arn));
  return store.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto rec, txn.Get(kTasks, TaskKey(scope, *r.cluster, r.id)));
    if (!rec) return TaggedTaskNotFound(arn);
    return change(txn, TaskArn(scope, *r.cluster, r.id));
  });
}
}  // namespace

Status Tasks::TagResource(const Scope& scope, std::string_view arn, const Tags& tags) {
  RETURN_IF_ERROR(ValidateTags(tags));
  return ChangeTaskTags(store_, scope, arn, [&](store::WriteTxn& txn, const std::string& stored) {
    return PutTags(txn, scope, stored, tags);
  });
}

Status Tasks::UntagResource(const Scope& scope, std::string_view arn, const std::vector<std::string>& keys) {
  return ChangeTaskTags(store_, scope, arn, [&](store::WriteTxn& txn, const std::string& stored) {
    return RemoveTags(txn, scope, stored, keys);
  });
}

StatusOr<Tags> Tasks::ListTags(const Scope& scope, std::string_view arn) {
  ASSIGN_OR_RETURN(TaskRef r, TaggedTask(scope, arn));
  Tags out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto rec, txn.Get(kTasks, TaskKey(scope, *r.cluster, r.id)));
    if (!rec) return TaggedTaskNotFound(arn);
    ASSIGN_OR_RETURN(out, ReadTags(txn, scope, TaskArn(scope, *r.cluster, r.id)));
    return OkStatus();
  }));
  return out;
}

StatusOr<Page> Tasks::List(const Scope& scope, const ListQuery& q, std::string_view caller_arn) {
  ASSIGN_OR_RETURN(std::string cluster, cluster::ClusterName(q.cluster, scope, "ListTasks", caller_arn));
  if (q.family && q.service_name)
    return ParamError("You cannot specify both family and serviceName in the same request.");

  // The most selective index answers; the other filters are checked on each candidate.
  std::string_view table = kByStatus;
  Key prefix = ScopeKey(scope).Str(cluster);
  int skip = 4;  // key parts before the id: account, region, cluster, [value,] status
  if (q.service_name) {
    table = kByGroup;
    prefix.Str("service:" + *q.service_name);
    ++skip;
  } else if (q.family) {
    table = kByFamily;
    prefix.Str(*q.family);
    ++skip;
  } else if (q.started_by) {
    table = kByStartedBy;
    prefix.Str(*q.started_by);
    ++skip;
  } else if (q.launch_type) {
    table = kByLaunchType;
    prefix.Str(*q.launch_type);
    ++skip;
  }
  prefix.Str(q.desired_status);
  store::Range range = store::PrefixRange(prefix.Done());
  if (!q.after.empty()) {
    if (q.after < range.begin || (!range.end.empty() && q.after >= range.end))
      return ParamError("The specified nextToken is invalid.");
    range.begin = store::KeySuccessor(q.after);
  }
  std::optional<std::string> instance_id;
  if (q.container_instance) {
    ASSIGN_OR_RETURN(instance::InstanceRef ref,
                     instance::ParseInstanceRef(*q.container_instance, scope, "ListTasks", caller_arn));
    if (ref.cluster && *ref.cluster != cluster) return Page{};
    instance_id = ref.id;
  }
  const bool post_filter = (q.started_by && table != kByStartedBy) || (q.launch_type && table != kByLaunchType) ||
                           (q.family && table != kByFamily) || instance_id;
  Page page;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, cluster));
    std::string last_key;
    while (true) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(table, range, q.limit + 1));
      for (const auto& row : rows) {
        store::KeyReader r(row.key);
        for (int i = 0; i < skip; ++i) {
          ASSIGN_OR_RETURN(std::string part, r.Str());
        }
        ASSIGN_OR_RETURN(std::string id, r.Str());
        if (post_filter) {
          ASSIGN_OR_RETURN(auto rec, txn.Get(kTasks, TaskKey(scope, cluster, id)));
          if (!rec) continue;
          ASSIGN_OR_RETURN(json::object task, ParseRecordObject(*rec, "task"));
          if (q.started_by && Str(task, "startedBy") != *q.started_by) continue;
          if (q.launch_type && Str(task, "launchType") != *q.launch_type) continue;
          if (q.family || instance_id) {
            ASSIGN_OR_RETURN(auto l, txn.Get(kLaunch, TaskKey(scope, cluster, id)));
            if (!l) continue;
            ASSIGN_OR_RETURN(Launch launch, Launch::Decode(*l));
            if (q.family && launch.family != *q.family) continue;
            if (instance_id && launch.instance != *instance_id) continue;
          }
        }
        if (page.arns.size() == q.limit) {
          page.next = last_key;
          return OkStatus();
        }
        page.arns.push_back(TaskArn(scope, cluster, id));
        last_key = row.key;
      }
      if (rows.size() < q.limit + 1) return OkStatus();
      range.begin = store::KeySuccessor(rows.back().key);
    }
  }));
  return page;
}

StatusOr<std::string> Tasks::Stop(const Scope& scope, std::optional<std::string_view> cluster_ref, std::string_view task_ref,
                                  std::optional<std::string> reason, std::string_view caller_arn, TimePoint now,
                                  const StopOptions& options) {
  ASSIGN_OR_RETURN(std::string cluster, cluster::ClusterName(cluster_ref, scope, "StopTask", caller_arn));
  ASSIGN_OR_RETURN(TaskRef ref, ParseTaskRef(task_ref, scope, "StopTask", caller_arn));
  if (ref.cluster && *ref.cluster != cluster) return ParamError("The referenced task was not found.");
  if (reason && reason->size() > 1024) reason->resize(1024);
  std::string out;
  bool deregistered = false;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    deregistered = false;
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, cluster));
    const std::string key = TaskKey(scope, cluster, ref.id);
    ASSIGN_OR_RETURN(auto rec, txn.Get(kTasks, key));
    if (!rec) return ParamError("The referenced task was not found.");
    ASSIGN_OR_RETURN(json::object task, ParseRecordObject(*rec, "task"));
    if (Str(task, "desiredStatus") == kStoppedStatus) {  // already stopping: unchanged
      ASSIGN_OR_RETURN(out, Shown(txn, scope, *rec, true));
      return options.in_txn ? options.in_txn(txn) : OkStatus();
    }
    ASSIGN_OR_RETURN(Stopping written,
                     WriteStopping(txn, scope, cluster, ref.id, std::move(task), options.stop_code,
                                   reason && !reason->empty() ? *reason : std::string("Task stopped by user"), now));
    deregistered = written.deregistered;
    ASSIGN_OR_RETURN(out, Shown(txn, scope, written.record, true));
    return options.in_txn ? options.in_txn(txn) : OkStatus();
  }));
  // The registry first: the task leaves DNS answers before its agent learns it is to stop.
  if (deregistered) discovery_->Published();
  // The edge before the agent: it fences the task's servers while the agent reports DEACTIVATING
  // (the agent then waits for the edge's drain hold either way).
  NotifyTasks(scope);
  NotifyChange();
  return out;
}

StatusOr<Tasks::Stopping> Tasks::WriteStopping(store::WriteTxn& txn, const Scope& scope, const std::string& cluster,
                                               const std::string& id, json::object task, std::string_view stop_code,
                                               std::string reason, TimePoint now) {
  const std::string key = TaskKey(scope, cluster, id);
  ASSIGN_OR_RETURN(auto l, txn.Get(kLaunch, key));
  if (!l) return DataLoss("task launch record is missing");
  ASSIGN_OR_RETURN(Launch launch, Launch::Decode(*l));
  RETURN_IF_ERROR(DeleteIndexes(txn, scope, cluster, id, task, launch, Str(task, "desiredStatus")));
  task["desiredStatus"] = kStoppedStatus;
  task["stopCode"] = stop_code;
  task["stoppedReason"] = std::move(reason);
  if (!task.contains("stoppingAt")) task["stoppingAt"] = EpochSeconds(now);
  task["version"] = task["version"].to_number<int64_t>() + 1;
  RETURN_IF_ERROR(PutIndexes(txn, scope, cluster, id, task, launch, kStoppedStatus));
  RETURN_IF_ERROR(StampGroupRow(txn, scope, cluster, id, task));
  Stopping out;
  ASSIGN_OR_RETURN(out.deregistered, SyncRegistration(discovery_, txn, scope, cluster, id, task, launch));
  out.record = json::serialize(task);
  RETURN_IF_ERROR(txn.Put(kTasks, key, out.record));
  return out;
}

StatusOr<std::function<void()>> Tasks::OrphanInstance(store::WriteTxn& txn, const Scope& scope,
                                                      std::string_view cluster, std::string_view instance_id,
                                                      TimePoint now) {
  // The instance's tasks are the assignments of its agent (one per unconfirmed task).
  const std::string agent = InstanceAgentId(instance::ContainerInstanceArn(scope, cluster, instance_id));
  store::Range range = store::PrefixRange(Key().Str(agent).Done());
  bool stopped = false, deregistered = false;
  while (true) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kAssignments, range, 500));
    for (const auto& row : rows) {
      ASSIGN_OR_RETURN(AssignedTask assigned, ReadAssignmentKey(row.key));
      const std::string& task_cluster = assigned.cluster;
      const std::string& id = assigned.id;
      ASSIGN_OR_RETURN(auto rec, txn.Get(kTasks, TaskKey(scope, task_cluster, id)));
      if (!rec) continue;
      ASSIGN_OR_RETURN(json::object task, ParseRecordObject(*rec, "task"));
      if (Str(task, "desiredStatus") == kStoppedStatus) continue;  // already stopping: its reason stands
      ASSIGN_OR_RETURN(Stopping written, WriteStopping(txn, scope, task_cluster, id, std::move(task), "UserInitiated",
                                                       std::string(kForcedDeregistrationReason), now));
      stopped = true;
      deregistered = deregistered || written.deregistered;
    }
    if (rows.size() < 500) break;
    range.begin = store::KeySuccessor(rows.back().key);
  }
  if (!stopped) return std::function<void()>();
  return std::function<void()>([this, scope, deregistered] {
    if (deregistered) discovery_->Published();
    NotifyTasks(scope);
    NotifyChange();
  });
}

namespace {

// One task of a group as GroupTask, read by key; nullopt when it was reaped in between its index
// row and its record.
StatusOr<std::optional<GroupTask>> ReadGroupTask(store::ReadTxn& txn, const Scope& scope, std::string_view cluster,
                                                 const std::string& id) {
  auto seconds = [](const json::object& o, std::string_view key) -> std::optional<TimePoint> {
    auto it = o.find(key);
    if (it == o.end() || !it->value().is_number()) return std::nullopt;
    return FromEpochMillis(static_cast<int64_t>(it->value().to_number<double>() * 1000));
  };
  const std::string key = TaskKey(scope, cluster, id);
  ASSIGN_OR_RETURN(auto rec, txn.Get(kTasks, key));
  ASSIGN_OR_RETURN(auto l, txn.Get(kLaunch, key));
  if (!rec || !l) return std::optional<GroupTask>();
  ASSIGN_OR_RETURN(json::object task, ParseRecordObject(*rec, "task"));
  ASSIGN_OR_RETURN(Launch launch, Launch::Decode(*l));
  GroupTask t;
  t.id = id;
  t.started_by = Str(task, "startedBy");
  t.last_status = Str(task, "lastStatus");
  t.desired_status = Str(task, "desiredStatus");
  t.health_status = Str(task, "healthStatus");
  t.health_checks = launch.health_checks;
  t.started_at = seconds(task, "startedAt");
  t.stopped_at = seconds(task, "stoppedAt");
  t.stop_code = Str(task, "stopCode");
  t.stopped_reason = Str(task, "stoppedReason");
  t.container_instance_arn = Str(task, "containerInstanceArn");
  t.created_at = seconds(task, "createdAt").value_or(TimePoint{});
  ASSIGN_OR_RETURN(auto protection, txn.Get(kProtection, key));  // protection.cc
  if (protection) t.protected_until = FromEpochMillis(std::stoll(*protection));
  return std::optional<GroupTask>(std::move(t));
}

}  // namespace

StatusOr<std::vector<GroupTask>> Tasks::GroupTasks(store::ReadTxn& txn, const Scope& scope, std::string_view cluster,
                                                   std::string_view group) {
  GroupProjection all;
  RETURN_IF_ERROR(RefreshGroup(txn, scope, cluster, group, all));
  return std::move(all.tasks);
}

Status Tasks::RefreshGroup(store::ReadTxn& txn, const Scope& scope, std::string_view cluster, std::string_view group,
                           GroupProjection& projection) {
  std::unordered_map<std::string_view, size_t> held;
  held.reserve(projection.tasks.size());
  for (size_t i = 0; i < projection.tasks.size() && i < projection.stamps.size(); ++i)
    held.emplace(projection.tasks[i].id, i);
  // Each row in index order: a task kept from the projection (its index there) or one read now.
  constexpr size_t kRead = static_cast<size_t>(-1);
  struct Row {
    size_t kept = kRead;
    GroupTask read;
    std::string stamp;
  };
  std::vector<Row> out;
  size_t reread = 0;
  store::Range range = store::PrefixRange(ScopeKey(scope).Str(cluster).Str(group).Done());
  while (true) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kByGroup, range, 500));
    for (const auto& row : rows) {
      store::KeyReader r(row.key);
      for (int i = 0; i < 5; ++i) RETURN_IF_ERROR(r.Str().status());  // account, region, cluster, group, desired
      ASSIGN_OR_RETURN(std::string id, r.Str());
      // The index row's stamp moves with the record and the protection (internal/group_index.h):
      // a task whose stamp is the one it was read at is kept as it was.
      if (auto it = held.find(id); it != held.end() && !row.value.empty() && projection.stamps[it->second] == row.value) {
        out.push_back(Row{it->second, {}, row.value});
        continue;
      }
      ASSIGN_OR_RETURN(std::optional<GroupTask> t, ReadGroupTask(txn, scope, cluster, id));
      ++reread;
      if (t) out.push_back(Row{kRead, std::move(*t), row.value});  // else reaped in between: gone
    }
    if (rows.size() < 500) break;
    range.begin = store::KeySuccessor(rows.back().key);
  }
  GroupProjection next;
  next.tasks.reserve(out.size());
  next.stamps.reserve(out.size());
  for (Row& row : out) {
    next.tasks.push_back(row.kept == kRead ? std::move(row.read) : std::move(projection.tasks[row.kept]));
    next.stamps.push_back(std::move(row.stamp));
  }
  next.reread = reread;
  projection = std::move(next);
  return OkStatus();
}

void Tasks::SetGroupListener(GroupListener listener) {
  std::lock_guard lock(listener_mu_);
  group_listener_ = std::move(listener);
}

void Tasks::SetChangeListener(std::function<void()> listener) {
  std::lock_guard lock(listener_mu_);
  listener_ = std::move(listener);
}

void Tasks::SetAddressListener(std::function<void(const Scope&)> listener) {
  std::lock_guard lock(listener_mu_);
  address_listener_ = std::move(listener);
}

void Tasks::SetTaskListener(std::function<void(const Scope&)> listener) {
  std::lock_guard lock(listener_mu_);
  task_listener_ = std::move(listener);
}

void Tasks::NotifyTasks(const Scope& scope) {
  std::lock_guard lock(listener_mu_);
  if (task_listener_) task_listener_(scope);
}

void Tasks::NotifyAddresses(const Scope& scope) {
  std::lock_guard lock(listener_mu_);
  if (address_listener_) address_listener_(scope);
}

namespace {

// What a stopped task held goes back, in the caller's transaction: its instance's reservation or
// its share of the node's Fargate capacity, its address (`released` turns true), its agent
// assignment and its definition reference; it joins ReapStopped's list as of `now`.
Status ReleaseHeld(store::WriteTxn& txn, instance::ContainerInstances* instances, FargateCapacity* fargate,
                   const Scope& scope, const std::string& cluster, const std::string& id, Launch& launch,
                   TimePoint now, bool& released) {
  if (!launch.instance.empty() && instances != nullptr)
    RETURN_IF_ERROR(instances->Release(txn, scope, cluster, launch.instance, id));
  // A Fargate task's share of the node (a no-op for a task that holds none).
  if (launch.instance.empty() && fargate != nullptr) RETURN_IF_ERROR(fargate->Release(txn, scope, cluster, id));
  if (launch.ip_held) {
    const vpc::DefaultVpc v = vpc::DefaultVpcFor(scope);
    if (const vpc::Subnet* sn = v.FindSubnet(launch.subnet_id)) RETURN_IF_ERROR(vpc::ReleaseIp(txn, scope, *sn, launch.ip));
    launch.ip_held = false;
    released = true;
    RETURN_IF_ERROR(txn.Put(kLaunch, TaskKey(scope, cluster, id), launch.Encode()));
  }
  RETURN_IF_ERROR(txn.Delete(kAssignments, AssignmentKey(launch.agent, scope, cluster, id)));
  RETURN_IF_ERROR(txn.Delete(kRefs, RefKey(scope, launch.family, launch.revision, cluster, id)));
  return txn.Put(kStopped, StoppedKey(scope, EpochMillis(now), cluster, id), "");
}

}  // namespace

std::string HostLostReason(std::string_view ec2_instance_id) {
  return fmt::format("Host EC2 (instance {}) terminated.", ec2_instance_id);
}

std::string FargateHostLostReason() { return "Task stopped because its Fargate host was lost."; }

StatusOr<Tasks::LostTasks> Tasks::StopLostInstance(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                                   std::string_view instance_id, std::string_view ec2_instance_id,
                                                   TimePoint now) {
  return StopLostAgent(txn, InstanceAgentId(instance::ContainerInstanceArn(scope, cluster, instance_id)),
                       HostLostReason(ec2_instance_id), now);
}

StatusOr<std::vector<FargateHost>> Tasks::LapsedFargateHosts(store::ReadTxn& txn, TimePoint now,
                                                            std::chrono::milliseconds grace) {
  if (fargate_ == nullptr) return std::vector<FargateHost>{};
  return fargate_->LapsedHosts(txn, now, grace);
}

StatusOr<Tasks::LostTasks> Tasks::StopLostFargateHost(store::WriteTxn& txn, const FargateHost& host, TimePoint now,
                                                      std::chrono::milliseconds grace) {
  if (fargate_ == nullptr) return LostTasks{};
  ASSIGN_OR_RETURN(bool lost, fargate_->Forget(txn, host.node, now, grace));
  if (!lost) return LostTasks{};
  return StopLostAgent(txn, host.agent, FargateHostLostReason(), now);
}

StatusOr<Tasks::LostTasks> Tasks::StopLostAgent(store::WriteTxn& txn, const std::string& agent,
                                                const std::string& reason, TimePoint now) {
  const double t = EpochSeconds(now);
  LostTasks out;
  bool released = false, deregistered = false;
  std::set<Scope> scopes;                                        // of the stopped tasks
  std::set<std::tuple<Scope, std::string, std::string>> groups;  // (scope, cluster, group) of the stopped tasks
  // Each row is deleted as its task is stopped (ReleaseHeld): the scan starts over until none is left.
  while (true) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kAssignments, store::PrefixRange(Key().Str(agent).Done()), 500));
    for (const auto& row : rows) {
      ASSIGN_OR_RETURN(AssignedTask assigned, ReadAssignmentKey(row.key));
      const Scope& scope = assigned.scope;
      const std::string& task_cluster = assigned.cluster;
      const std::string& id = assigned.id;
      const std::string key = TaskKey(scope, task_cluster, id);
      ASSIGN_OR_RETURN(auto rec, txn.Get(kTasks, key));
      ASSIGN_OR_RETURN(auto l, txn.Get(kLaunch, key));
      if (!rec || !l) return DataLoss("an assignment names a task that does not exist");
      ASSIGN_OR_RETURN(json::object task, ParseRecordObject(*rec, "task"));
      ASSIGN_OR_RETURN(Launch launch, Launch::Decode(*l));
      const std::string old_status = Str(task, "lastStatus");
      if (old_status != kStoppedStatus) {
        RETURN_IF_ERROR(Recount(txn, scope, task_cluster, OnInstance(!launch.instance.empty()), BucketOf(old_status),
                                Bucket::kNone));
        const std::string desired = Str(task, "desiredStatus");
        if (desired != kStoppedStatus) {  // a task being stopped keeps its stop code and reason
          RETURN_IF_ERROR(DeleteIndexes(txn, scope, task_cluster, id, task, launch, desired));
          task["desiredStatus"] = kStoppedStatus;
          task["stopCode"] = kHostLostStopCode;
          task["stoppedReason"] = reason;
          RETURN_IF_ERROR(PutIndexes(txn, scope, task_cluster, id, task, launch, kStoppedStatus));
        }
        if (!task.contains("stoppingAt")) task["stoppingAt"] = t;
        if (!task.contains("executionStoppedAt")) task["executionStoppedAt"] = t;
        task["stoppedAt"] = t;
        task["lastStatus"] = kStoppedStatus;
        for (auto& a : task["attachments"].as_array()) a.as_object()["status"] = "DELETED";
        for (auto& c : task["containers"].as_array()) c.as_object()["lastStatus"] = kStoppedStatus;
        task["version"] = task["version"].to_number<int64_t>() + 1;
      }
      RETURN_IF_ERROR(ReleaseHeld(txn, instances_, fargate_, scope, task_cluster, id, launch, now, released));
      ASSIGN_OR_RETURN(bool registry_written, SyncRegistration(discovery_, txn, scope, task_cluster, id, task, launch));
      deregistered = deregistered || registry_written;
      RETURN_IF_ERROR(StampGroupRow(txn, scope, task_cluster, id, task));
      RETURN_IF_ERROR(txn.Put(kTasks, key, json::serialize(task)));
      scopes.insert(scope);
      if (!Str(task, "group").empty()) groups.emplace(scope, task_cluster, Str(task, "group"));
      ++out.stopped;
    }
    if (rows.size() < 500) break;
  }
  if (out.stopped == 0) return out;
  out.notify = [this, scopes, released, deregistered, groups] {
    if (deregistered) discovery_->Published();
    {
      std::lock_guard lock(listener_mu_);
      if (group_listener_)
        for (const auto& [scope, c, g] : groups) group_listener_(scope, c, g);
    }
    for (const Scope& scope : scopes) {
      if (released) NotifyAddresses(scope);
      NotifyTasks(scope);
    }
    NotifyChange();
  };
  return out;
}

void Tasks::NotifyChange() {
  std::lock_guard lock(listener_mu_);
  if (listener_) listener_();
}

void Tasks::NotifyChangedElsewhere() {
  NotifyChange();
  NotifyTasks(Scope{});
}

namespace {

// The LaunchSpec of an assigned task, read in `txn`.
StatusOr<LaunchSpec> ReadLaunchSpec(store::ReadTxn& txn, const Scope& scope, const std::string& cluster,
                                    const std::string& id) {
  ASSIGN_OR_RETURN(auto rec, txn.Get(kTasks, TaskKey(scope, cluster, id)));
  ASSIGN_OR_RETURN(auto l, txn.Get(kLaunch, TaskKey(scope, cluster, id)));
  if (!rec || !l) return DataLoss("an assignment names a task that does not exist");
  ASSIGN_OR_RETURN(json::object task, ParseRecordObject(*rec, "task"));
  ASSIGN_OR_RETURN(Launch launch, Launch::Decode(*l));
  LaunchSpec spec;
  spec.scope = scope;
  spec.cluster = cluster;
  spec.task_arn = Str(task, "taskArn");
  spec.task_definition_arn = Str(task, "taskDefinitionArn");
  spec.definition = launch.definition;
  spec.overrides = json::serialize(task["overrides"]);
  spec.desired_status = Str(task, "desiredStatus");
  spec.last_status = Str(task, "lastStatus");
  spec.cpu = Str(task, "cpu");
  spec.memory = Str(task, "memory");
  if (launch.ip_held) {
    const vpc::DefaultVpc v = vpc::DefaultVpcFor(scope);
    const vpc::Subnet* sn = v.FindSubnet(launch.subnet_id);
    if (sn == nullptr) return DataLoss("a task's subnet is not in its default VPC");
    spec.network = LaunchSpec::Network{launch.subnet_id, vpc::Ipv4ToString(launch.ip), sn->prefix_length,
                                       vpc::Ipv4ToString(sn->network + 1)};
  }
  return spec;
}

// A task ARN's (scope, cluster, id); InvalidParameterException when it is not one.
struct TaskName {
  Scope scope;
  std::string cluster;
  std::string id;
};
StatusOr<TaskName> ParseTaskName(std::string_view task_arn) {
  ASSIGN_OR_RETURN(EcsResource res, ParseEcsResourceArn(task_arn));
  if (res.kind != ResourceKind::kTask) return ParamError("The ARN provided is invalid.");
  std::string_view rest = task_arn.substr(task_arn.find("task/") + 5);
  size_t slash = rest.rfind('/');
  if (slash == std::string_view::npos) return ParamError("The ARN provided is invalid.");
  return TaskName{res.scope, std::string(rest.substr(0, slash)), std::string(rest.substr(slash + 1))};
}

}  // namespace

StatusOr<std::vector<LaunchSpec>> Tasks::Assignments(std::string_view agent_id) {
  std::vector<LaunchSpec> specs;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    store::Range range = store::PrefixRange(Key().Str(agent_id).Done());
    while (true) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kAssignments, range, 500));
      for (const auto& row : rows) {
        store::KeyReader r(row.key);
        ASSIGN_OR_RETURN(std::string agent, r.Str());
        ASSIGN_OR_RETURN(std::string account, r.Str());
        ASSIGN_OR_RETURN(std::string region, r.Str());
        ASSIGN_OR_RETURN(std::string cluster, r.Str());
        ASSIGN_OR_RETURN(std::string id, r.Str());
        ASSIGN_OR_RETURN(LaunchSpec spec, ReadLaunchSpec(txn, Scope{AccountId(account), Region(region)}, cluster, id));
        specs.push_back(std::move(spec));
      }
      if (rows.size() < 500) return OkStatus();
      range.begin = store::KeySuccessor(rows.back().key);
    }
  }));
  return specs;
}

StatusOr<std::optional<LaunchSpec>> Tasks::Assignment(std::string_view agent_id, std::string_view task_arn) {
  auto name = ParseTaskName(task_arn);
  if (!name.ok()) return std::optional<LaunchSpec>();  // not a task ARN: assigned to no one
  std::optional<LaunchSpec> spec;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    spec.reset();
    ASSIGN_OR_RETURN(auto assigned, txn.Get(kAssignments, AssignmentKey(agent_id, name->scope, name->cluster, name->id)));
    if (!assigned) return OkStatus();
    ASSIGN_OR_RETURN(spec, ReadLaunchSpec(txn, name->scope, name->cluster, name->id));
    return OkStatus();
  }));
  return spec;
}

StatusOr<bool> Tasks::HasAssignmentIn(std::string_view agent_id, const Scope& scope) {
  bool found = false;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kAssignments,
                                         store::PrefixRange(Key().Str(agent_id).Str(scope.account.str()).Str(scope.region.str()).Done()),
                                         1));
    found = !rows.empty();
    return OkStatus();
  }));
  return found;
}

StatusOr<std::vector<bool>> Tasks::NotStopped(store::ReadTxn& txn, const Scope& scope,
                                               const std::vector<ClusterTaskId>& tasks) {
  std::vector<bool> out;
  out.reserve(tasks.size());
  for (const ClusterTaskId& t : tasks) {
    // The agent's STOPPED sets desiredStatus STOPPED in the same transaction: a task still desired
    // RUNNING is not stopped, and its ListTasks row says so without its record being parsed.
    ASSIGN_OR_RETURN(auto running, txn.Get(kByStatus, ScopeKey(scope).Str(t.cluster).Str("RUNNING").Str(t.id).Done()));
    if (running) {
      out.push_back(true);
      continue;
    }
    ASSIGN_OR_RETURN(auto rec, txn.Get(kTasks, TaskKey(scope, t.cluster, t.id)));
    if (!rec) {
      out.push_back(false);
      continue;
    }
    ASSIGN_OR_RETURN(json::object task, ParseRecordObject(*rec, "task"));
    out.push_back(Str(task, "lastStatus") != kStoppedStatus);
  }
  return out;
}

Status Tasks::ReportState(std::string_view agent_id, std::string_view task_arn, const TaskStateChange& change,
                          TimePoint now) {
  ASSIGN_OR_RETURN(TaskName task_name, ParseTaskName(task_arn));
  const Scope& scope = task_name.scope;
  const std::string& cluster = task_name.cluster;
  const std::string& id = task_name.id;
  const int new_rank = Rank(change.last_status);
  if (new_rank < 0) return ParamError(fmt::format("Unknown task status: {}", change.last_status));

  std::string group;  // set when the report changed a task of a group
  bool released = false;  // the report released the task's address
  bool registry_written = false;  // the report (de)registered the task (SyncRegistration)
  Status written = store_.Write([&](store::WriteTxn& txn) -> Status {
    group.clear();
    released = false;
    registry_written = false;
    const std::string key = TaskKey(scope, cluster, id);
    ASSIGN_OR_RETURN(auto l, txn.Get(kLaunch, key));
    ASSIGN_OR_RETURN(auto rec, txn.Get(kTasks, key));
    if (!l || !rec) return NotFound("The referenced task was not found.", ecs::Error::kInvalidParameter);
    ASSIGN_OR_RETURN(Launch launch, Launch::Decode(*l));
    if (launch.agent != agent_id)
      return PermissionDenied(fmt::format("Agent {} does not own task {}.", agent_id, task_arn));
    ASSIGN_OR_RETURN(json::object task, ParseRecordObject(*rec, "task"));
    const std::string old_status = Str(task, "lastStatus");
    const int old_rank = Rank(old_status);
    // What a stopped task held (its address, assignment, reservation and definition reference)
    // goes back only on its agent's STOPPED: the agent reports it once the containers are gone.
    ASSIGN_OR_RETURN(auto assigned, txn.Get(kAssignments, AssignmentKey(launch.agent, scope, cluster, id)));
    auto release_held = [&]() -> Status {
      return ReleaseHeld(txn, instances_, fargate_, scope, cluster, id, launch, now, released);
    };
    if (old_status == kStoppedStatus) {
      // Recorded STOPPED without its agent's word (docs/contracts/task.md, "Stopped means gone"): the
      // agent tears it down, and its STOPPED is the confirmation that releases what it held.
      if (change.last_status == kStoppedStatus && assigned) {
        // Not registered any longer either (a record marked STOPPED by no stop of this owner's).
        ASSIGN_OR_RETURN(registry_written, SyncRegistration(discovery_, txn, scope, cluster, id, task, launch));
        return release_held();
      }
      return OkStatus();  // late report: ignored
    }
    // The assignment is the agent's lease: once it is gone (the account is being deleted) the agent
    // may still confirm the task STOPPED, but not move it on.
    if (!assigned && change.last_status != kStoppedStatus)
      return PermissionDenied(fmt::format("Agent {} does not own task {}.", agent_id, task_arn));
    if (new_rank < old_rank) return OkStatus();  // late report: ignored

    const double t = EpochSeconds(now);
    auto set_once = [&](std::string_view field, double value) {
      if (!task.contains(field)) task[field] = value;
    };
    if (change.pull_started_at) set_once("pullStartedAt", EpochSeconds(*change.pull_started_at));
    if (change.pull_stopped_at) set_once("pullStoppedAt", EpochSeconds(*change.pull_stopped_at));
    // startedAt only when the task really reached RUNNING: a task torn down before it ran (the
    // agent reports DEACTIVATING … STOPPED straight from PENDING) never started, and the service
    // scheduler counts it as a failed start.
    if (change.last_status == "RUNNING" && old_rank < Rank("RUNNING")) {
      set_once("startedAt", t);
      set_once("connectivityAt", t);
      task["connectivity"] = "CONNECTED";
    }
    if (new_rank >= Rank("DEACTIVATING")) set_once("stoppingAt", t);
    if (new_rank >= Rank("DEPROVISIONING"))
      set_once("executionStoppedAt", change.execution_stopped_at ? EpochSeconds(*change.execution_stopped_at) : t);
    if (change.stopped_reason) task["stoppedReason"] = *change.stopped_reason;
    if (change.stop_code) task["stopCode"] = *change.stop_code;
    if (change.health_status) task["healthStatus"] = *change.health_status;
    task["lastStatus"] = change.last_status;

    std::string attachment_status = new_rank >= Rank(kStoppedStatus) ? "DELETED"
                                    : new_rank >= Rank("DEACTIVATING") ? "DETACHING"
                                    : new_rank >= Rank("RUNNING")      ? "ATTACHED"
                                    : new_rank >= Rank("PENDING")      ? "ATTACHING"
                                                                       : "PRECREATED";
    for (auto& a : task["attachments"].as_array()) a.as_object()["status"] = attachment_status;

    for (auto& cv : task["containers"].as_array()) {
      json::object& c = cv.as_object();
      const std::string name = Str(c, "name");
      bool reported = false;
      for (const auto& cc : change.containers) {
        if (cc.name != name) continue;
        reported = true;
        // Containers too are monotonic (PENDING, RUNNING, STOPPED): a late report is ignored.
        if (Str(c, "lastStatus") == kStoppedStatus || Rank(cc.last_status) < Rank(Str(c, "lastStatus"))) continue;
        c["lastStatus"] = cc.last_status;
        if (cc.exit_code) c["exitCode"] = *cc.exit_code;
        if (cc.reason) c["reason"] = *cc.reason;
        if (cc.runtime_id) c["runtimeId"] = *cc.runtime_id;
        if (cc.health_status) c["healthStatus"] = *cc.health_status;
        if (cc.image_digest) c["imageDigest"] = *cc.image_digest;
        if (cc.network_bindings) {
          json::array bindings;
          for (const auto& b : *cc.network_bindings) bindings.push_back(agent::protocol::NetworkBindingJson(b));
          c["networkBindings"] = std::move(bindings);
        }
      }
      if (!reported && change.last_status == "RUNNING" && Str(c, "lastStatus") == "PENDING") c["lastStatus"] = "RUNNING";
      if (change.last_status == kStoppedStatus) c["lastStatus"] = kStoppedStatus;
    }

    RETURN_IF_ERROR(Recount(txn, scope, cluster, OnInstance(!launch.instance.empty()), BucketOf(old_status),
                            BucketOf(change.last_status)));
    // EC2: the instance counts the task as running from RUNNING and gets its resources back at
    // STOPPED (release_held).
    if (!launch.instance.empty() && instances_ != nullptr && change.last_status != kStoppedStatus &&
        new_rank >= Rank("RUNNING") && old_rank < Rank("RUNNING")) {
      RETURN_IF_ERROR(instances_->MarkRunning(txn, scope, cluster, launch.instance, id));
    }
    if (change.last_status == kStoppedStatus) {
      task["stoppedAt"] = t;
      const std::string desired = Str(task, "desiredStatus");
      if (desired != kStoppedStatus) {
        RETURN_IF_ERROR(DeleteIndexes(txn, scope, cluster, id, task, launch, desired));
        task["desiredStatus"] = kStoppedStatus;
        RETURN_IF_ERROR(PutIndexes(txn, scope, cluster, id, task, launch, kStoppedStatus));
      }
      RETURN_IF_ERROR(release_held());
    }
    ASSIGN_OR_RETURN(registry_written, SyncRegistration(discovery_, txn, scope, cluster, id, task, launch));
    task["version"] = task["version"].to_number<int64_t>() + 1;
    group = Str(task, "group");
    RETURN_IF_ERROR(StampGroupRow(txn, scope, cluster, id, task));
    return txn.Put(kTasks, key, json::serialize(task));
  });
  if (written.ok() && registry_written) discovery_->Published();
  if (written.ok() && !group.empty()) {
    std::lock_guard lock(listener_mu_);
    if (group_listener_) group_listener_(scope, cluster, group);
  }
  if (written.ok() && released) NotifyAddresses(scope);
  if (written.ok()) NotifyTasks(scope);
  return written;
}

StatusOr<size_t> Tasks::ReapStopped(TimePoint now) {
  return ReapDue(store_, kStopped, EpochMillis(now - kStoppedRetention),
                 [&](store::WriteTxn& txn, const Scope& scope, const std::string& cluster, const std::string& id) -> Status {
                   const std::string key = TaskKey(scope, cluster, id);
                   ASSIGN_OR_RETURN(auto rec, txn.Get(kTasks, key));
                   ASSIGN_OR_RETURN(auto l, txn.Get(kLaunch, key));
                   if (rec && l) {
                     ASSIGN_OR_RETURN(json::object task, ParseRecordObject(*rec, "task"));
                     ASSIGN_OR_RETURN(Launch launch, Launch::Decode(*l));
                     RETURN_IF_ERROR(DeleteIndexes(txn, scope, cluster, id, task, launch, Str(task, "desiredStatus")));
                     RETURN_IF_ERROR(RemoveAllTags(txn, scope, Str(task, "taskArn")));
                   }
                   RETURN_IF_ERROR(txn.Delete(kTasks, key));
                   RETURN_IF_ERROR(txn.Delete(kProtection, key));
                   return txn.Delete(kLaunch, key);
                 });
}

StatusOr<std::vector<Tasks::Unconfirmed>> Tasks::StopAccount(const AccountId& account, std::string_view reason,
                                                              TimePoint now) {
  return StopInRange(store::PrefixRange(Key().Str(account.str()).Done()), reason, now);
}

// Issue 10: `paddock down` and `paddock up`'s Ctrl-C stop every account's tasks the same way.
StatusOr<std::vector<Tasks::Unconfirmed>> Tasks::StopAll(std::string_view reason, TimePoint now) {
  return StopInRange(store::Range{}, reason, now);
}

StatusOr<std::vector<Tasks::Unconfirmed>> Tasks::StopInRange(const store::Range& scan, std::string_view reason,
                                                              TimePoint now) {
  struct Found {
    Scope scope;
    std::string cluster, id, agent, desired, last;
    bool assigned = false;
  };
  std::vector<Found> found;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    found.clear();
    store::Range range = scan;
    while (true) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kLaunch, range, 500));
      for (const auto& row : rows) {
        store::KeyReader r(row.key);
        Found f;
        ASSIGN_OR_RETURN(std::string acct, r.Str());
        ASSIGN_OR_RETURN(std::string region, r.Str());
        ASSIGN_OR_RETURN(f.cluster, r.Str());
        ASSIGN_OR_RETURN(f.id, r.Str());
        f.scope = Scope{AccountId(acct), Region(region)};
        ASSIGN_OR_RETURN(Launch launch, Launch::Decode(row.value));
        f.agent = launch.agent;
        ASSIGN_OR_RETURN(auto rec, txn.Get(kTasks, row.key));
        if (!rec) continue;
        ASSIGN_OR_RETURN(json::object task, ParseRecordObject(*rec, "task"));
        f.desired = Str(task, "desiredStatus");
        f.last = Str(task, "lastStatus");
        ASSIGN_OR_RETURN(auto a, txn.Get(kAssignments, AssignmentKey(launch.agent, f.scope, f.cluster, f.id)));
        f.assigned = a.has_value();
        found.push_back(std::move(f));
      }
      if (rows.size() < 500) return OkStatus();
      range.begin = store::KeySuccessor(rows.back().key);
    }
  }));
  std::vector<Unconfirmed> out;
  for (const Found& f : found) {
    if (f.desired != kStoppedStatus) {
      auto stopped = Stop(f.scope, f.cluster, f.id, std::string(reason), "", now);
      if (!stopped.ok() && stopped.status().code() != StatusCode::kInvalidArgument) return stopped.status();
    }
    if (f.last != kStoppedStatus || f.assigned) out.push_back({TaskArn(f.scope, f.cluster, f.id), f.agent, f.last});
  }
  return out;
}

Status Tasks::ReapAccount(const AccountId& account, ReapMode mode) {
  // First release what the account's tasks hold outside its own key space: addresses (the pools
  // are node-wide) and agent assignments (keyed by agent), each only once no container can be
  // left (see the declaration). Then drop the account's rows.
  const store::Range range = store::PrefixRange(Key().Str(account.str()).Done());
  std::string begin = range.begin;
  while (true) {
    size_t seen = 0;
    RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kLaunch, {begin, range.end}, 200));
      seen = rows.size();
      for (const auto& row : rows) {
        store::KeyReader r(row.key);
        ASSIGN_OR_RETURN(std::string acct, r.Str());
        ASSIGN_OR_RETURN(std::string region, r.Str());
        ASSIGN_OR_RETURN(std::string cluster, r.Str());
        ASSIGN_OR_RETURN(std::string id, r.Str());
        const Scope scope{AccountId(acct), Region(region)};
        ASSIGN_OR_RETURN(Launch launch, Launch::Decode(row.value));
        ASSIGN_OR_RETURN(auto assigned, txn.Get(kAssignments, AssignmentKey(launch.agent, scope, cluster, id)));
        if (assigned && mode == ReapMode::kConfirmedOnly) {
          ASSIGN_OR_RETURN(auto rec, txn.Get(kTasks, row.key));
          ASSIGN_OR_RETURN(json::object task, ParseRecordObject(rec.value_or("{}"), "task"));
          const std::string last = Str(task, "lastStatus");
          if (last != "PROVISIONING")
            return FailedPrecondition(fmt::format("task {} ({}) is held by agent {}, which has not confirmed it stopped",
                                                  TaskArn(scope, cluster, id), last, launch.agent));
        }
        if (launch.ip_held) {
          const vpc::DefaultVpc v = vpc::DefaultVpcFor(scope);
          if (const vpc::Subnet* sn = v.FindSubnet(launch.subnet_id)) RETURN_IF_ERROR(vpc::ReleaseIp(txn, scope, *sn, launch.ip));
          launch.ip_held = false;
          RETURN_IF_ERROR(txn.Put(kLaunch, row.key, launch.Encode()));
        }
        RETURN_IF_ERROR(txn.Delete(kAssignments, AssignmentKey(launch.agent, scope, cluster, id)));
      }
      if (!rows.empty()) begin = store::KeySuccessor(rows.back().key);
      return OkStatus();
    }));
    if (seen < 200) break;
  }
  if (fargate_ != nullptr) RETURN_IF_ERROR(fargate_->ReapAccount(store_, account));  // node-wide totals too
  for (std::string_view table : {kTasks, kLaunch, kByStatus, kByFamily, kByStartedBy, kByGroup, kByLaunchType, kRefs,
                                 kCounts, kStopped, kTokens, kProtection})
    RETURN_IF_ERROR(ReapAccountRows(store_, table, account));
  return OkStatus();
}

StatusOr<bool> Tasks::Refs::IsReferenced(store::ReadTxn& txn, const Scope& scope, std::string_view family,
                                         uint64_t revision) {
  ASSIGN_OR_RETURN(auto rows, txn.Scan(kRefs, store::PrefixRange(ScopeKey(scope).Str(family).U64(revision).Done()), 1));
  return !rows.empty();
}

StatusOr<cluster::ClusterUsage::Counts> Tasks::Usage::Count(store::ReadTxn& txn, const Scope& scope,
                                                            std::string_view cluster) {
  ASSIGN_OR_RETURN(TaskCounts c, ReadCounts(txn, scope, cluster));
  cluster::ClusterUsage::Counts out;
  out.pending_tasks = c.pending;
  out.running_tasks = c.running;
  out.pending_ec2_tasks = c.ec2_pending;
  out.running_ec2_tasks = c.ec2_running;
  return out;
}

// A task not yet told to stop, launched through `provider` (its capacityProviderName): the
// cluster's tasks desired RUNNING, read one by one (PutClusterCapacityProviders' rare check).
StatusOr<bool> Tasks::Usage::UsesCapacityProvider(store::ReadTxn& txn, const Scope& scope, std::string_view cluster,
                                                  std::string_view provider) {
  store::Range range = store::PrefixRange(ScopeKey(scope).Str(cluster).Str("RUNNING").Done());
  while (true) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kByStatus, range, 500));
    for (const auto& row : rows) {
      store::KeyReader r(row.key);
      std::string id;
      for (int i = 0; i < 5; ++i) {  // account, region, cluster, desired status, id
        ASSIGN_OR_RETURN(id, r.Str());
      }
      ASSIGN_OR_RETURN(auto text, txn.Get(kTasks, TaskKey(scope, cluster, id)));
      if (!text) continue;
      ASSIGN_OR_RETURN(json::object task, ParseRecordObject(*text, "task"));
      if (Str(task, "capacityProviderName") == provider) return true;
    }
    if (rows.size() < 500) return false;
    range.begin = store::KeySuccessor(rows.back().key);
  }
}

}  // namespace paddock::ecs::task
