// deploy/plan: one reconcile tick's decisions as a pure function of what the tick read (ADR D12,
// D13, D13a; research §5.1 B3-B10) — which services to create, roll, scale, retire and delete,
// which deployments change state, and what to record. The driver (controller.h) reads the cluster
// and the store, calls PlanTick, and carries the plan out; tests read as the rules.
//
//   Plan plan = PlanTick(input);
//   for (const ServiceAction& a : plan.actions) ...   // in order: creates and rolls first
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "deploy/deployments.h"
#include "deploy/render.h"

namespace paddock::deploy {

struct EcsEvent {
  std::string id;
  TimePoint at;
  std::string message;
};

// One ECS service of the tick's cluster snapshot (DescribeServices with TAGS).
struct ServiceView {
  std::string arn;
  std::string name;
  std::string status;            // ACTIVE; DRAINING and INACTIVE ones are left out of the snapshot
  std::string task_definition;   // the ARN the service points at (its PRIMARY deployment's)
  int desired = 0;
  int running = 0;
  int pending = 0;
  int ecs_deployments = 1;       // more than one: ECS is rolling between revisions
  std::optional<TimePoint> primary_created_at;
  std::string rollout_state;     // the PRIMARY deployment's: IN_PROGRESS, COMPLETED, FAILED (circuit breaker)
  std::string rollout_reason;
  int failed_tasks = 0;          // the PRIMARY deployment's failedTasks: its tasks that stopped or never ran
  std::vector<std::string> subnets;
  std::vector<std::string> security_groups;
  std::string assign_public_ip;  // "ENABLED", "DISABLED" or ""
  Ownership owner;
  // Its name is the one the controller's own naming gives its tags (render.h ServiceName): only
  // such a service is ever collected as an orphan — a tag copied onto another service is not enough.
  bool named_by_us = false;
  std::vector<EcsEvent> events;  // newest first, as ECS gives them
};

// One task of a service (DescribeTasks).
struct TaskView {
  std::string arn;
  std::string task_definition;
  std::string last_status;
  std::string desired_status;
  std::string address;           // the ENI's private IPv4, "" before it has one
  std::string stopped_reason;
  std::optional<int> exit_code;  // the service's container's
};

struct DeploymentInput {
  Deployment record;
  // The rendering of its spec, or why it cannot be rendered (a permanent error: the deployment
  // fails while it is Pending or Deploying).
  StatusOr<std::vector<Workload>> workloads = std::vector<Workload>{};
  std::optional<std::string> resize_note;  // D9: the size was rounded up
  // Per service name, its tasks; a service whose tasks could not be read is absent (then its
  // deployment's state is left as it is for the tick, B7).
  std::map<std::string, std::vector<TaskView>> tasks;
};

// What an owned service whose deployment is not among the tick's deployments turned out to be.
enum class OrphanVerdict {
  kGone,     // no such deployment, or it is finished and retired: collect the service
  kUnknown,  // the lookup failed: leave it alone this tick
};

struct PlanInput {
  TimePoint now;
  std::chrono::seconds deploying_timeout{300};
  std::chrono::seconds drain{15};   // how long a retired service stays at 0 before it is deleted
  bool edge_configured = true;      // false: readiness is RUNNING tasks only
  // The edge's servers: "http://10.0.1.5:8080" -> "UP" | "DOWN". Absent = not (yet) seen.
  std::map<std::string, std::string> edge_servers;
  bool edge_read_ok = true;         // false: routed readiness is unknown this tick
  std::vector<DeploymentInput> deployments;  // Deployments::Unfinished
  std::map<std::string, ServiceView> services;  // the snapshot's owned services, by name
  std::map<std::string, OrphanVerdict> orphans;  // by deployment id, for owned services of no input deployment
  std::map<std::string, TimePoint> orphan_retiring_since;  // by service name: scaled to 0 at
};

struct ServiceAction {
  enum class Kind {
    kCreate,        // register workload's revision, CreateService
    kRoll,          // register workload's revision, UpdateService(taskDefinition)
    kScale,         // UpdateService(desiredCount)
    kNetwork,       // UpdateService(networkConfiguration)
    kRetire,        // UpdateService(desiredCount = 0): drain-clean retirement's first step
    kDelete,        // DeleteService(force)
  };
  Kind kind;
  std::string deployment_id;  // "" for an orphan
  std::string service_name;
  std::string service_arn;    // present services
  std::optional<Workload> workload;  // create, roll, scale, network
};
std::string_view KindName(ServiceAction::Kind);

struct PlannedTransition {
  std::string deployment_id;
  State to;
  std::string reason;
};

struct Plan {
  std::vector<ServiceAction> actions;
  std::vector<PlannedTransition> transitions;
  std::vector<std::pair<std::string, NewEvent>> events;  // (deployment id, event)
  std::map<std::string, std::vector<TaskObservation>> observations;  // only when changed
  std::vector<std::string> mark_retiring;  // deployment ids
  std::vector<std::string> mark_retired;
  std::vector<std::string> orphans_retiring;  // service names scaled to 0 this tick
};

Plan PlanTick(const PlanInput& input);

// Whether the deployment's services are converged and serving: "" when ready, otherwise the
// reason it is not ("web: 1 of 2 tasks running", "web: 10.0.1.5:8080 is DOWN at the edge").
std::string Unready(const PlanInput& input, const DeploymentInput& d, const std::vector<Workload>& workloads);

}  // namespace paddock::deploy
