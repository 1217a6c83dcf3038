// ecs/task: the one owner of task records.
//
// Only this module writes task records, their indexes, their tags, their agent assignments and
// the IP addresses they hold. Run resolves the task definition once (TaskDefinitions::
// ResolveForLaunch) and then, in ONE store transaction, allocates each task's address, writes the
// task records, every index row, the agent assignment, the tags and the clientToken record, so
// an interrupted or refused run leaves nothing behind. The agent side (Assignments, ReportState)
// is used in-process by the node agent; state reports are accepted only from the task's agent
// and are monotonic over the ECS lifecycle.
//
// The node agent (agent/agent.h) consumes Assignments and reports every transition; it learns of
// new work through SetChangeListener (docs/contracts/task.md).
//
//   Tasks tasks(store, task_definitions, clusters, "fargate-local");
//   ASSIGN_OR_RETURN(RunResult r, tasks.Run(scope, caller_arn, request, now));
//
// Records (ecs/schema.h):
//   tasks             (account, region, cluster, id) -> the Task JSON as DescribeTasks returns it
//                     (without tags, which live in the shared tags table)
//   task_launch       (account, region, cluster, id) -> the launch record: agent, subnet, ip,
//                     pinned definition, family, revision (never leaves this module as stored)
//   task_by_status    (account, region, cluster, desiredStatus, id) -> ""
//   task_by_family    (account, region, cluster, family, desiredStatus, id) -> ""
//   task_by_started_by(account, region, cluster, startedBy, desiredStatus, id) -> ""
//   task_by_group     (account, region, cluster, group, desiredStatus, id) -> the task's stamp
//                     (serviceName; RefreshGroup: internal/group_index.h)
//   task_by_launch_type (account, region, cluster, launchType, desiredStatus, id) -> ""
//   task_assignments  (agent id, account, region, cluster, id) -> ""
//   task_refs         (account, region, family, revision, cluster, id) -> ""  non-STOPPED tasks
//   task_counts       (account, region, cluster) -> "<pending> <running> <pending EC2> <running EC2>"
//   task_stopped      (account, region, stoppedAt ms, cluster, id) -> ""      ReapStopped's list
//   task_tokens       (account, region, clientToken) -> {request, arns, expires}
// and, through FargateCapacity (fargate_capacity.h), each Fargate task's reservation of the node.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "agent/protocol/messages.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "ecs/cluster/clusters.h"
#include "ecs/common/tags.h"
#include "ecs/instance/instances.h"
#include "ecs/task/discovery.h"
#include "ecs/task/fargate_capacity.h"
#include "ecs/task/role_check.h"
#include "ecs/taskdef/taskdefs.h"
#include "store/store.h"

namespace paddock::ecs::task {

// The lifecycle, in order (agent/protocol/messages.h). Reports never move a task backwards.
using agent::protocol::kLifecycle;

struct RunRequest {
  std::optional<std::string> cluster;  // name or ARN; omitted: "default"
  std::string task_definition;         // family, family:revision or ARN
  int64_t count = 1;
  std::optional<std::string> launch_type;                  // FARGATE | EC2 | EXTERNAL
  std::vector<std::string> capacity_providers;             // capacityProviderStrategy's names
  std::optional<boost::json::object> network_configuration;  // {"awsvpcConfiguration": {...}}
  std::optional<boost::json::object> overrides;            // TaskOverride
  std::optional<std::string> group;
  std::optional<std::string> started_by;
  std::optional<std::string> platform_version;
  Tags tags;
  std::optional<std::string> propagate_tags;  // TASK_DEFINITION | SERVICE | NONE
  bool enable_ecs_managed_tags = false;
  bool enable_execute_command = false;
  std::optional<std::string> client_token;
  // EC2 only: PlacementConstraint and PlacementStrategy lists as the request gave them.
  std::optional<boost::json::array> placement_constraints;
  std::optional<boost::json::array> placement_strategy;
  // A service's launch (sched/): the pinned revision may have become INACTIVE since the service
  // pinned it; `in_txn` runs at the end of the run's transaction with the new tasks' ARNs, so the
  // caller's own records (and its lease check) commit together with the launch, or neither does.
  taskdef::InactiveRevision inactive_revision = taskdef::InactiveRevision::kRefuse;
  std::function<Status(store::WriteTxn&, const std::vector<std::string>& task_arns)> in_txn;
  // RunTask's and StartTask's PassRole check of the pinned revision (taskdef::LaunchCheck).
  taskdef::LaunchCheck launch_check;
  // A service's launch: its serviceRegistries entry ({registryArn, port, containerName,
  // containerPort}), kept in each task's launch record; the task is registered there while it
  // runs (SetDiscovery).
  std::optional<boost::json::object> service_registry;
};

// How a stop is recorded: StopTask's is a user's; the service scheduler passes its own code and a
// callback that runs inside the stop's transaction (its lease check and its own records).
struct StopOptions {
  std::string stop_code = "UserInitiated";
  std::function<Status(store::WriteTxn&)> in_txn;
};

// A task of a service (group "service:<name>"), as the service scheduler observes it.
struct GroupTask {
  std::string id;
  std::string started_by;
  std::string last_status;
  std::string desired_status;
  std::string health_status;
  bool health_checks = false;  // an essential container of its pinned definition has a healthCheck
  std::optional<TimePoint> started_at;
  std::optional<TimePoint> stopped_at;
  std::string stop_code;
  std::string stopped_reason;
  std::string container_instance_arn;
  TimePoint created_at{};
  // Scale-in protection (UpdateTaskProtection): until when the scheduler must not stop the task
  // to scale in or to replace it; nullopt when not protected.
  std::optional<TimePoint> protected_until;

  bool operator==(const GroupTask&) const = default;
};

// The tasks of one group held between reads: the service scheduler's projection of its service's
// tasks, brought up to date by Tasks::RefreshGroup, which re-reads only the tasks that changed.
struct GroupProjection {
  std::vector<GroupTask> tasks;     // as GroupTasks returns them, in the same order
  std::vector<std::string> stamps;  // each task's stamp when it was read (tasks.cc), parallel to `tasks`
  size_t reread = 0;                // how many task records the last refresh read (the rest were kept)
};

// ECS's stoppedReason for the tasks of a container instance deregistered with force (the
// developer guide's "Checking stopped tasks for errors").
inline constexpr std::string_view kForcedDeregistrationReason = "Container instance deregistration forced by user";

// How ECS records a task whose host went away: stopCode TerminationNotice and stoppedReason
// "Host EC2 (instance i-…) terminated." (docs/contracts/task.md, "Losing a host", with the source).
inline constexpr std::string_view kHostLostStopCode = "TerminationNotice";
std::string HostLostReason(std::string_view ec2_instance_id);
// A lost Fargate host's tasks' stoppedReason (Paddock's words: AWS publishes none for it).
std::string FargateHostLostReason();

// Task scale-in protection (protection.cc): the default and longest protection.
inline constexpr std::chrono::minutes kDefaultProtection{120};
inline constexpr int64_t kMaxProtectionMinutes = 2880;

// A task's protection as UpdateTaskProtection and GetTaskProtection answer it.
struct ProtectedTask {
  std::string arn;
  bool enabled = false;
  std::optional<TimePoint> expires_at;  // when enabled
};

// StartTask: RunTask's fields that apply (launch type EC2, no count or placement), onto the named
// container instances, one task each.
struct StartRequest {
  RunRequest run;                             // launch_type, count and placement are ignored
  std::vector<std::string> container_instances;  // 1-10 ids or ARNs
};

struct RunResult {
  std::vector<std::string> tasks;  // serialized Task JSON (with tags)
  struct Failure {
    std::string arn;
    std::string reason;
    std::string detail;
  };
  std::vector<Failure> failures;
};

struct DescribeResult {
  std::vector<std::string> tasks;  // serialized Task JSON
  std::vector<RunResult::Failure> failures;  // reason MISSING
};

struct ListQuery {
  std::optional<std::string> cluster;
  std::optional<std::string> family;
  std::optional<std::string> started_by;
  std::optional<std::string> service_name;
  std::string desired_status = "RUNNING";  // RUNNING | PENDING | STOPPED
  std::optional<std::string> launch_type;
  std::optional<std::string> container_instance;  // id or ARN
  size_t limit = 100;
  std::string after;  // position from a previous page, or empty
};

struct Page {
  std::vector<std::string> arns;
  std::string next;  // empty when done
};

// The agent protocol's plain types (agent/protocol/messages.h): what the agent gets and reports.
// The owner converts its records into them; the agent never includes this header.
using LaunchSpec = agent::protocol::LaunchSpec;
using NetworkBinding = agent::protocol::NetworkBinding;
using ContainerStateChange = agent::protocol::ContainerStateChange;
using TaskStateChange = agent::protocol::TaskStateChange;

// Parses a task reference (an id or a task ARN of the caller's scope) into the 32-hex id.
StatusOr<std::string> TaskId(std::string_view ref, const Scope& caller, std::string_view action,
                             std::string_view caller_arn);

std::string TaskArn(const Scope& scope, std::string_view cluster, std::string_view id);

// The agent id an EC2 task is assigned to: its container instance's ARN (agent/protocol/messages.h).
using agent::protocol::InstanceAgentId;

class Tasks {
 public:
  // `fargate_agent` is the id of the agent that provides Fargate capacity on this node.
  // `instances`, when given, makes the EC2 launch type available: tasks are placed on the
  // cluster's container instances (ecs/task/placement.h), their resources reserved through it.
  // `fargate`, when given, is the node's Fargate capacity: each FARGATE task reserves its cpu and
  // memory there in the run's transaction (a task that does not fit is a failures[] entry) and
  // gives them back at STOPPED; without it Fargate admits everything.
  Tasks(store::Store& store, taskdef::TaskDefinitions& task_definitions, cluster::Clusters& clusters,
        std::string fargate_agent, instance::ContainerInstances* instances = nullptr,
        FargateCapacity* fargate = nullptr)
      : store_(store),
        task_definitions_(task_definitions),
        clusters_(clusters),
        fargate_agent_(std::move(fargate_agent)),
        instances_(instances),
        fargate_(fargate) {
    // A forced DeregisterContainerInstance orphans the instance's tasks in its own transaction
    // (the instances' one hook: the last Tasks made over them holds it, and must outlive every
    // deregistration).
    if (instances_ != nullptr)
      instances_->SetDeregistrationHook(
          [this](store::WriteTxn& txn, const Scope& scope, std::string_view cluster, std::string_view id, TimePoint now) {
            return OrphanInstance(txn, scope, cluster, id, now);
          });
  }

  StatusOr<RunResult> Run(const Scope& scope, std::string_view caller_arn, const RunRequest& request, TimePoint now);
  // Tests' seam: runs between a launch's planning (the revision resolved and pinned) and its
  // transaction, where a concurrent change (a deleted revision, a deleted cluster) is made to land.
  void SetBeforeCommitForTest(std::function<void()> hook) { before_commit_ = std::move(hook); }
  // StartTask: one EC2 task on each named container instance; an instance that cannot take it
  // (missing, not ACTIVE, short of resources) is a failures[] entry, not an exception.
  StatusOr<RunResult> Start(const Scope& scope, std::string_view caller_arn, const StartRequest& request, TimePoint now);
  StatusOr<DescribeResult> Describe(const Scope& scope, std::optional<std::string_view> cluster,
                                    const std::vector<std::string>& refs, bool include_tags, std::string_view caller_arn);
  StatusOr<Page> List(const Scope& scope, const ListQuery& q, std::string_view caller_arn);
  // A task's tags by its ARN (TagResource, UntagResource, ListTagsForResource): the long form
  // task/<cluster>/<id> (the short one is InvalidParameterException "Long arn format must be used
  // for tagging operations"); a task this account does not have, or no longer has (reaped), is
  // ResourceNotFoundException. A STOPPED task still described takes tags until it is reaped, and
  // its tags go with it. ECS's own "aws:" tags do not count toward the 50.
  Status TagResource(const Scope& scope, std::string_view arn, const Tags& tags);
  Status UntagResource(const Scope& scope, std::string_view arn, const std::vector<std::string>& keys);
  StatusOr<Tags> ListTags(const Scope& scope, std::string_view arn);
  // Sets desiredStatus STOPPED (stopCode UserInitiated). Repeating it returns the task unchanged.
  StatusOr<std::string> Stop(const Scope& scope, std::optional<std::string_view> cluster, std::string_view task,
                             std::optional<std::string> reason, std::string_view caller_arn, TimePoint now,
                             const StopOptions& options = {});

  // ---- Scale-in protection (protection.cc; docs/contracts/task.md) ----
  struct ProtectionResult {
    std::vector<ProtectedTask> tasks;
    std::vector<RunResult::Failure> failures;  // MISSING; TASK_NOT_VALID for a task of no service or stopped
  };
  // UpdateTaskProtection: protects (for `expires_in_minutes`, 1..2880, default 120, counted from
  // `now` again on every call) or unprotects each of 1..10 tasks of a service in the cluster.
  StatusOr<ProtectionResult> UpdateProtection(const Scope& scope, std::string_view cluster,
                                              const std::vector<std::string>& refs, bool enabled,
                                              std::optional<int64_t> expires_in_minutes, std::string_view caller_arn,
                                              TimePoint now);
  // GetTaskProtection: each of the tasks (1..100); without any, the cluster's protected tasks. An
  // expired protection reads as not protected.
  StatusOr<ProtectionResult> GetProtection(const Scope& scope, std::string_view cluster,
                                           const std::vector<std::string>& refs, std::string_view caller_arn,
                                           TimePoint now);

  // Every task of `group` in the cluster that is not yet reaped (STOPPED ones included), read in
  // the caller's transaction: what the service scheduler plans from.
  StatusOr<std::vector<GroupTask>> GroupTasks(store::ReadTxn& txn, const Scope& scope, std::string_view cluster,
                                              std::string_view group);

  // Brings `projection` (empty, or what an earlier refresh of the same group left) up to date in
  // the caller's transaction: afterwards its tasks are exactly what GroupTasks reads in `txn`, but
  // only the tasks written since (a report, a stop, a launch, a protection change) are read; the
  // rest are kept. Tasks that left the group (reaped) leave it. The cost is one scan of the
  // group's index rows plus one read per changed task. On failure the projection is unchanged.
  Status RefreshGroup(store::ReadTxn& txn, const Scope& scope, std::string_view cluster, std::string_view group,
                      GroupProjection& projection);

  // `listener` is called (after the commit) when an agent's report changed a task that belongs to
  // a group, with the task's scope, cluster and group, so the service scheduler can act at once.
  // Cheap; must not call back into Tasks. Set before serving.
  using GroupListener = std::function<void(const Scope&, const std::string& cluster, const std::string& group)>;
  void SetGroupListener(GroupListener listener);

  // Every launch's check of its task and execution roles (ecs/task/role_check.h), after its
  // launch_check (PassRole): a role ECS could not assume refuses the launch with ClientException
  // and writes nothing. Set before serving; unset (emulator mode): no check.
  void SetRoleCheck(RoleCheck check) { role_check_ = std::move(check); }

  // Where tasks launched with a service_registry are registered (ecs/task/discovery.h): in the
  // transaction that records the task RUNNING (and HEALTHY, when its definition has health
  // checks), and deregistered in the one that sets its desiredStatus STOPPED or records it
  // DEACTIVATING, UNHEALTHY or STOPPED, so a stopping task leaves the registry before its agent
  // is told to stop it. Null (the default): nothing is registered. Set before serving.
  void SetDiscovery(Discovery* discovery) { discovery_ = discovery; }
  // The overlay address of this server's host (issue 16 §3), recorded with the addresses of the
  // Fargate tasks it places (its own agent runs them); empty: none. Set before serving requests.
  void SetOverlayAddress(std::string address) { overlay_address_ = std::move(address); }

  // The agent side.
  StatusOr<std::vector<LaunchSpec>> Assignments(std::string_view agent_id);
  // The one task `task_arn` of `agent_id`'s assignments, read by key (no scan of the agent's
  // other tasks); nullopt when it is not assigned to that agent (or `task_arn` is no task ARN).
  StatusOr<std::optional<LaunchSpec>> Assignment(std::string_view agent_id, std::string_view task_arn);
  // Whether `agent_id` has a task assigned in `scope` (one keyed read of its first such row).
  StatusOr<bool> HasAssignmentIn(std::string_view agent_id, const Scope& scope);
  // For each task of `scope` named (cluster, id): whether it exists and its agent has not reported
  // it STOPPED — a task being stopped (desiredStatus STOPPED, lastStatus DEACTIVATING) is not
  // stopped yet. Read in the caller's transaction, for ecs/drain's holds: one keyed read of an
  // index row for a task desired RUNNING, the record itself only for one desired STOPPED.
  struct ClusterTaskId {
    std::string cluster;
    std::string id;
  };
  StatusOr<std::vector<bool>> NotStopped(store::ReadTxn& txn, const Scope& scope,
                                         const std::vector<ClusterTaskId>& tasks);
  // Applies an agent's report. Only the owning agent may report (AccessDeniedException); a report
  // that would move the task backwards is ignored (OK, nothing changes). STOPPED releases the
  // address, the assignment and the task's resources (its instance's or the node's Fargate
  // capacity) in the same transaction.
  Status ReportState(std::string_view agent_id, std::string_view task_arn, const TaskStateChange& change, TimePoint now);

  // Removes STOPPED tasks stopped more than an hour before `now`. Returns how many.
  StatusOr<size_t> ReapStopped(TimePoint now);

  // ---- Account deletion (`paddock admin delete-account`, cli/account_deletion.h) ----
  // A task its agent has not confirmed gone: not STOPPED yet, or recorded STOPPED while its agent
  // still holds it.
  struct Unconfirmed {
    std::string arn;
    std::string agent;  // the agent id it is assigned to
    std::string last_status;
  };
  // Asks every task of the account to stop, as StopTask does (stopCode UserInitiated, `reason`),
  // and returns those not yet confirmed gone. Idempotent: call it until it returns none.
  StatusOr<std::vector<Unconfirmed>> StopAccount(const AccountId& account, std::string_view reason, TimePoint now);
  // StopAccount for every account (`paddock down`, and `paddock up` at Ctrl-C: cli/stop_tasks.h).
  StatusOr<std::vector<Unconfirmed>> StopAll(std::string_view reason, TimePoint now);
  // A forced DeregisterContainerInstance, inside its transaction (ContainerInstances'
  // DeregistrationHook): every task still assigned to the instance's agent and not yet told to
  // stop gets desiredStatus STOPPED, stopCode UserInitiated and ECS's stoppedReason
  // kForcedDeregistrationReason, as StopTask does — so a service replaces it and its agent, while
  // it still can, stops its containers. What the task holds (its address above all) stays held
  // until that agent confirms it STOPPED (docs/contracts/task.md, "Stopped means gone"): an agent
  // whose credential the deregistration revoked cannot, so its tasks' addresses are never handed
  // out again while their containers may still run. Returns what runs after the commit.
  StatusOr<std::function<void()>> OrphanInstance(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                                 std::string_view instance_id, TimePoint now);

  // The host-loss sweep's part (sched/scheduler.h, SweepLostHosts), inside the caller's
  // transaction (the lease's fence goes first): the container instance `instance_id`, whose agent
  // has been gone longer than the grace time, is lost, and every task still assigned to its agent
  // is recorded STOPPED
  // here, as its agent would have: lastStatus and desiredStatus STOPPED, stoppingAt,
  // executionStoppedAt and stoppedAt, every container STOPPED without an exit code, stopCode
  // kHostLostStopCode and stoppedReason HostLostReason(ec2_instance_id) — unless it was already
  // being stopped, whose stop code and reason stand. What it held (the instance's reservation, its
  // address, the assignment) is released with it: the agent fenced itself before this could run
  // (docs/contracts/task.md, "Losing a host"), and if it comes back its reports about the task
  // change nothing and its driver, finding the task no longer assigned, removes the containers.
  // Returns how many tasks it stopped and, for after the commit, their notifications (the group
  // listener, so the service scheduler replaces them at once).
  struct LostTasks {
    size_t stopped = 0;
    std::function<void()> notify;  // null when nothing was stopped
  };
  StatusOr<LostTasks> StopLostInstance(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                       std::string_view instance_id, std::string_view ec2_instance_id, TimePoint now);
  // The same for a Fargate host (another server's, fargate_capacity.h): the hosts whose offers
  // lapsed at least `grace` before `now`; and, inside the caller's transaction, a lapsed host's
  // offer forgotten and every task assigned to its agent — of any account — recorded STOPPED as
  // above with stoppedReason FargateHostLostReason(), if the offer is still lapsed (nothing, when
  // its server renewed it meanwhile). The host's server fenced itself before (it stops its
  // containers when it cannot renew its offer; docs/contracts/task.md, "Losing a host").
  StatusOr<std::vector<FargateHost>> LapsedFargateHosts(store::ReadTxn& txn, TimePoint now,
                                                        std::chrono::milliseconds grace);
  StatusOr<LostTasks> StopLostFargateHost(store::WriteTxn& txn, const FargateHost& host, TimePoint now,
                                          std::chrono::milliseconds grace);

  enum class ReapMode { kConfirmedOnly, kForce };
  // Removes every task of the account. Its addresses, Fargate capacity and assignments are
  // released first; with
  // kConfirmedOnly only where that is safe — a task no agent has started (PROVISIONING: its
  // agent's first report is then refused, the assignment being its lease) or one whose agent
  // confirmed it STOPPED — and any other task makes it FailedPrecondition, having removed nothing
  // of that task. kForce releases everything (the operator's choice: an agent that still runs a
  // container of it removes it once the task is no longer assigned to it).
  Status ReapAccount(const AccountId& account, ReapMode mode = ReapMode::kConfirmedOnly);

  // `listener` is called (on the caller's thread, after the commit) whenever Run or Stop changed
  // what Assignments returns, so an in-process agent can act at once instead of at its next poll.
  // It must be cheap and must not call back into Tasks. Set it before serving requests.
  void SetChangeListener(std::function<void()> listener);
  // `listener` is called (after the commit) when Run allocated or a report released addresses in
  // the scope's VPC: its network policy changed (vpc::SecurityGroups::NotifyPolicyChanged). Same
  // rules as above.
  void SetAddressListener(std::function<void(const Scope&)> listener);

  // `listener` is called (after the commit) whenever a task of the scope was launched, asked to
  // stop or changed by its agent's report: for readers that follow every task (the edge's ecs
  // provider, which re-reads and routes at once). Same rules as above.
  void SetTaskListener(std::function<void(const Scope&)> listener);

  // Another server on the same database changed tasks (store::Store::SetChangeListener), which ones
  // unknown: calls the change listener, and the task listener with an empty Scope, which stands
  // for every scope. The listeners' rules hold (cheap, no call back into Tasks).
  void NotifyChangedElsewhere();

  taskdef::ReferenceCheck* reference_check() { return &refs_; }
  cluster::ClusterUsage* cluster_usage() { return &usage_; }

 private:
  class Refs final : public taskdef::ReferenceCheck {
   public:
    StatusOr<bool> IsReferenced(store::ReadTxn& txn, const Scope& scope, std::string_view family,
                                uint64_t revision) override;
  };
  class Usage final : public cluster::ClusterUsage {
   public:
    StatusOr<Counts> Count(store::ReadTxn& txn, const Scope& scope, std::string_view cluster) override;
    StatusOr<bool> UsesCapacityProvider(store::ReadTxn& txn, const Scope& scope, std::string_view cluster,
                                        std::string_view provider) override;
  };

  // StopLostInstance's and StopLostFargateHost's work: every task assigned to `agent` recorded
  // STOPPED with kHostLostStopCode and `reason`, what it held released.
  StatusOr<LostTasks> StopLostAgent(store::WriteTxn& txn, const std::string& agent, const std::string& reason,
                                    TimePoint now);

  // Everything RunTask decides before its transaction: the validated request and the pinned
  // revision (tasks.cc).
  // StopAccount and StopAll: every task whose launch record is in `range` (of kLaunch keys).
  StatusOr<std::vector<Unconfirmed>> StopInRange(const store::Range& range, std::string_view reason, TimePoint now);
  // Stop's write, inside `txn`: the task whose record is `task` (not yet told to stop) gets
  // desiredStatus STOPPED with `stop_code` and `reason`; its indexes and registry entry follow.
  struct Stopping {
    std::string record;         // as written
    bool deregistered = false;  // its registry entry changed (Discovery::Published after the commit)
  };
  StatusOr<Stopping> WriteStopping(store::WriteTxn& txn, const Scope& scope, const std::string& cluster,
                                   const std::string& id, boost::json::object task, std::string_view stop_code,
                                   std::string reason, TimePoint now);

  struct RunPlan;
  struct Target;
  StatusOr<RunPlan> PlanRun(const Scope& scope, std::string_view caller_arn, const RunRequest& req,
                            std::string_view action);
  // The run's transaction: clientToken, placement, then PutTask for each task.
  StatusOr<RunResult> Commit(const Scope& scope, std::string_view caller_arn, const RunPlan& plan, TimePoint now);
  StatusOr<std::vector<std::optional<Target>>> Place(store::WriteTxn& txn, const Scope& scope, const RunPlan& plan,
                                                     TimePoint now, RunResult& result,
                                                     std::vector<std::optional<RunResult::Failure>>& refused);
  StatusOr<std::map<std::string, int64_t>> GroupTasksPerInstance(store::ReadTxn& txn, const Scope& scope,
                                                                 std::string_view cluster, std::string_view group);
  StatusOr<std::string> PutTask(store::WriteTxn& txn, const Scope& scope, const RunPlan& plan, size_t index,
                                const Target* target, TimePoint now, RunResult& result);

  store::Store& store_;
  taskdef::TaskDefinitions& task_definitions_;
  std::function<void()> before_commit_;
  std::string overlay_address_;
  cluster::Clusters& clusters_;
  std::string fargate_agent_;
  instance::ContainerInstances* instances_;  // null: no EC2 launch type
  FargateCapacity* fargate_;                 // null: Fargate tasks are not admitted against a capacity
  RoleCheck role_check_;  // set before serving, then read-only
  Discovery* discovery_ = nullptr;  // set before serving, then read-only
  Refs refs_;
  Usage usage_;
  std::mutex listener_mu_;
  std::function<void()> listener_;  // GUARDED_BY(listener_mu_)
  GroupListener group_listener_;    // GUARDED_BY(listener_mu_)
  std::function<void(const Scope&)> address_listener_;  // GUARDED_BY(listener_mu_)
  std::function<void(const Scope&)> task_listener_;     // GUARDED_BY(listener_mu_)

  void NotifyChange();
  void NotifyAddresses(const Scope& scope);
  void NotifyTasks(const Scope& scope);
};

}  // namespace paddock::ecs::task
