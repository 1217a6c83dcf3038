// agent/protocol/messages: the vocabulary a node agent and its control plane exchange
// (docs/agent-protocol.md) — what a task assignment carries, what a state report says, a task
// role's credentials, where the cluster's image store serves an image. Plain data, no behaviour:
// both sides include it, and the protocol module (agent/protocol: these types, their wire forms in
// wire.h and state_json.h) depends only on common/. The ECS owners name these types as their own
// (ecs/task/tasks.h: `using LaunchSpec = agent::protocol::LaunchSpec;`) and convert their records
// into them; the agent never includes an owner's header.
//
//   protocol::LaunchSpec spec = ...;            // Control::Assignments
//   protocol::TaskStateChange change{.last_status = "RUNNING"};
//   control.Report(agent_id, spec.task_arn, change, now);
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"

namespace paddock::agent::protocol {

// The X-Amz-Target prefix of the agent protocol's JSON 1.1 operations (signing name "ecs").
inline constexpr std::string_view kAgentTargetPrefix = "PaddockAgentV20261130";

// A task's lifecycle, in order. Reports never move a task backwards.
inline constexpr std::string_view kLifecycle[] = {"PROVISIONING", "PENDING",  "ACTIVATING",     "RUNNING",
                                                  "DEACTIVATING", "STOPPING", "DEPROVISIONING", "STOPPED"};

// What the agent needs to start a task: a narrow projection, never the stored record.
struct LaunchSpec {
  Scope scope;
  std::string cluster;
  std::string task_arn;
  std::string task_definition_arn;
  std::string definition;  // the pinned containers and volumes, serialized
  std::string overrides;   // TaskOverride, serialized
  std::string desired_status;
  std::string last_status;
  std::string cpu;
  std::string memory;
  struct Network {
    std::string subnet_id;
    std::string ip;  // dotted quad
    int prefix_length = 0;
    std::string gateway;
  };
  std::optional<Network> network;
};

// A published port, as ECS's NetworkBinding: awsvpc reports hostPort = containerPort. A port
// range (containerPortRange) has the ranges ("first-last") instead of the ports (which stay 0):
// awsvpc reports hostPortRange = containerPortRange, bridge the host ports the agent chose.
struct NetworkBinding {
  std::string bind_ip = "0.0.0.0";
  int64_t container_port = 0;
  int64_t host_port = 0;
  std::string protocol = "tcp";
  std::string container_port_range = "";  // empty: one port
  std::string host_port_range = "";
};

struct ContainerStateChange {
  std::string name;
  std::string last_status;
  std::optional<int64_t> exit_code;
  std::optional<std::string> reason;
  std::optional<std::string> runtime_id;
  std::optional<std::string> health_status;  // HEALTHY | UNHEALTHY | UNKNOWN
  std::optional<std::string> image_digest;   // "sha256:…" of the manifest the container runs
  std::optional<std::vector<NetworkBinding>> network_bindings;  // replaces the container's when set
};

struct TaskStateChange {
  std::string last_status;
  std::vector<ContainerStateChange> containers;
  std::optional<std::string> stopped_reason;
  std::optional<std::string> stop_code;
  std::optional<TimePoint> pull_started_at;
  std::optional<TimePoint> pull_stopped_at;
  std::optional<TimePoint> execution_stopped_at;
  std::optional<std::string> health_status;  // the task's, aggregated by the agent from its containers
};

// The agent id an EC2 task is assigned to: its container instance's ARN. (Fargate tasks go to the
// node's Fargate agent, "fargate-local".)
inline std::string InstanceAgentId(std::string_view container_instance_arn) { return std::string(container_instance_arn); }

// The answer to a (long-)poll.
struct AssignmentSet {
  std::vector<LaunchSpec> tasks;
  std::string version;  // AssignmentsVersion(tasks) (agent/control.h)
  // No wait slot was free (or the control plane is shutting down), so the answer came at once
  // though nothing changed: the caller should pause before it polls again.
  bool busy = false;
};

// A task role's credentials, minted by the control plane (a node never holds IAM rights).
struct RoleCredentials {
  std::string role_arn;  // "arn:aws:iam::<acct>:role/<name>"
  std::string access_key_id;  // "ASIA…": an STS role session (sts/service_sessions.h)
  std::string secret_access_key;
  std::string token;
  TimePoint expiration;
};

// GetImageAccess's answer: where the cluster's image store (its registry, registry/
// cluster_registry.h) serves an image, or that it has none by that name.
struct ImageAccess {
  bool found = false;
  std::string registry;    // "HOST:PORT" as the registry listens (a wildcard host: the agent's
                           // endpoint host)
  std::string repository;  // the image's repository there
  std::string digest;      // its manifest digest: what the agent pulls ("sha256:…")
  std::string token;       // a bearer token that pulls that repository only
  TimePoint expires_at;
  std::vector<std::string> near_images;  // not found: the store's names close to it
};

// A container's private registry credentials (repositoryCredentials: the Secrets Manager secret's
// {"username", "password"}), for its image's pull only.
struct RegistryAuth {
  std::string username;
  std::string password;
};

// What a task's start fetched as its execution role (Control::PrepareExecutionResources): its
// containers' secrets and private registry credentials. Values only the task's containers (and
// their pulls) may see: never logged, never in a Task document.
struct ExecutionResources {
  struct Variable {
    std::string name;
    std::string value;
  };
  struct Container {
    std::string name;
    std::vector<Variable> secrets;  // in the definition's order
    std::optional<RegistryAuth> registry_auth;  // its repositoryCredentials, when it has some
  };
  std::vector<Container> containers;  // those with secrets or repositoryCredentials
  // Non-empty: what the task needs could not be had, and it stops TaskFailedToStart with this
  // complete stoppedReason ("ResourceInitializationError: unable to pull secrets or …").
  std::string failure_reason;
};

// One event of a container's output for CloudWatch Logs (the awslogs driver, agent/awslogs.h).
struct LogEvent {
  int64_t timestamp_ms = 0;
  std::string message;
};

// Control::ShipLogs: for `container` of the task, create its log stream (and its group with
// awslogs-create-group) when `create_stream`, else put `events` (one valid PutLogEvents batch)
// into it. The group is the one the control plane's record of the task names for `container`;
// `stream` must be the one it names too.
struct LogsCall {
  std::string container;
  std::string stream;
  bool create_stream = false;
  std::vector<LogEvent> events;
};

// ShipLogs' answer: empty `failure`, done; else CloudWatch's refusal in ECS's words after
// "failed to initialize logging driver: " ("failed to create Cloudwatch log stream:
// ResourceNotFoundException: The specified log group does not exist.").
struct LogsAnswer {
  std::string failure;
  // A stream creation's answer: the account's defaultLogDriverMode ("blocking" or "non-blocking"),
  // the mode of a container whose options name none (awslogs::WithDefaultMode).
  std::string default_mode = {};
};

// ---- Drain before stop (docs/agent-protocol.md "AwaitDrain"; docs/contracts/task.md) ----
// An edge that routes to a task holds it (ecs/drain): the agent, having reported the task
// DEACTIVATING, asks the control plane (Control::AwaitDrain) until it is told to go, and only then
// reports STOPPING and sends SIGTERM.

// The longest drainTimeout a hold may ask for (ALB's longest deregistration delay), and the
// longest an agent keeps a task in DEACTIVATING whatever its control plane answers.
inline constexpr std::chrono::seconds kMaxDrainTimeout{3600};
// The longest lease of an edge's holds: a hold not renewed for this long is dead, so an agent that
// cannot reach its control plane for this long holds a task no longer.
inline constexpr std::chrono::seconds kMaxDrainLease{300};
// The longest wait of one AwaitDrain ask: the agent asks again until it is told to go.
inline constexpr std::chrono::seconds kMaxDrainAsk{20};

enum class DrainVerdict {
  kWait,           // live holds remain and their bound has not passed: ask again
  kNoHolds,        // no edge held the task when its agent first asked: nothing to drain
  kReleased,       // every edge that held the task released it: drained
  kTimedOut,       // the longest drainTimeout of the live holds passed since the agent first asked
  kLeasesExpired,  // the holds left are of edges whose lease lapsed (a dead edge blocks nothing)
};

struct DrainAnswer {
  DrainVerdict verdict = DrainVerdict::kNoHolds;
  // While waiting: when the bound passes (first ask + the longest drainTimeout of the live holds).
  std::optional<TimePoint> deadline;
  int64_t holds = 0;  // live holds when answered
  bool go() const { return verdict != DrainVerdict::kWait; }
};

}  // namespace paddock::agent::protocol
