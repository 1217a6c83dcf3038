// deploy/deployments: the deploy controller's own records — deployments and their state machine
// (ADR "Lifecycle"), their events and task observations, and each project's env vars — in the
// controller's store (store/store.h; SQLite by default). The only writer of these tables.
//
// A deployment moves Pending -> Deploying -> Healthy <-> Unhealthy, and ends Superseded, Stopped,
// Expired or Failed. Each (project, group) has at most one *active* deployment: the one the edge
// serves. A deployment that first becomes Healthy becomes active, and the group's previous active
// deployment becomes Superseded in the same transaction (never two active, never none in between).
//
// Controller writes carry a Fence (the controller's lease epoch, sched/lease.h): a deposed leader's
// late write is refused with sched::Error::kLeaseLost and changes nothing. User actions (create,
// stop, env) are not fenced.
//
//   Deployments deployments(store, clock);
//   ASSIGN_OR_RETURN(Deployment d, deployments.Create({.project = "shop", .spec = app}));
//   RETURN_IF_ERROR(deployments.Transition(d.id, State::kDeploying, "", fence));
#pragma once

#include <chrono>
#include <functional>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "deploy/spec.h"
#include "sched/lease.h"
#include "store/schema.h"
#include "store/store.h"

namespace paddock::deploy {

inline constexpr store::TableDef kTables[] = {
    {"deploy_lease", 1},        // (class) -> lease               sched/lease.h
    {"deployments", 1},         // (id) -> JSON record
    {"deployments_by_time", 1},  // (created ms, id) -> ""          newest-first listing
    {"deploy_active", 1},        // (project, group) -> id          the active deployment
    {"deploy_events", 1},        // (id, seq) -> JSON event
    {"deploy_event_keys", 1},    // (id, dedupe key) -> seq         forwarded ECS events, once each
    {"deploy_env", 1},           // (project, name) -> JSON {value, secret}
    {"deploy_unfinished", 1},    // (id) -> ""                      the controller's work list
};
inline constexpr store::ModuleSchema kSchema{"deploy", 1, kTables};

enum class State { kPending, kDeploying, kHealthy, kUnhealthy, kSuperseded, kStopped, kExpired, kFailed };
std::string_view StateName(State);  // "Pending", "Deploying", ... as the CLI prints them
std::optional<State> ParseState(std::string_view);
bool IsTerminal(State);               // Superseded, Stopped, Expired, Failed
// Allowed: Pending -> Deploying|Failed|Stopped|Expired; Deploying -> Healthy|Failed|Stopped|Expired;
// Healthy -> Unhealthy|Superseded|Stopped|Expired; Unhealthy -> Healthy|Superseded|Stopped|Expired|Failed.
bool CanTransition(State from, State to);

struct TaskObservation {
  std::string task_arn;
  std::string container;
  std::string last_status;     // ECS lastStatus
  std::string health;          // the edge's verdict for its address: "UP", "DOWN" or "" (absent)
  std::string address;         // "10.0.1.5:8080"
  std::string stopped_reason;
  std::optional<int> exit_code;
};

struct Event {
  uint64_t seq = 0;            // 1, 2, ... per deployment
  TimePoint at;
  std::string kind;            // "state", "ecs", "resize", "failure", "info"
  std::string message;
};

struct NewEvent {
  std::string kind;
  std::string message;
  std::string dedupe_key;      // non-empty: appended once per deployment (an ECS event id)
};

struct Deployment {
  std::string id;              // "20261203-183012-k3x9": UTC time of creation + 4 random [a-z0-9]
  std::string project;
  std::string group = "default";
  std::string environment;     // the [environments.*] table applied, or ""
  std::string from;            // the deployment this one redeploys (--from), or ""
  AppSpec spec;                // resolved (environment applied, images overridden)
  std::map<std::string, std::string> env;      // the project's plain env at creation
  std::map<std::string, std::string> secrets;  // the project's secret env at creation (values)
  State state = State::kPending;
  std::string reason;          // why it Failed/Stopped/Expired, or why it is Unhealthy
  bool active = false;         // the group's active deployment
  TimePoint created_at;
  std::optional<TimePoint> deploying_since;
  std::optional<TimePoint> healthy_since;     // first time Healthy
  std::optional<TimePoint> expires_at;        // --expire
  std::optional<TimePoint> finished_at;       // reached a terminal state
  std::optional<TimePoint> retiring_since;    // its services were scaled to 0 (drain-clean retirement)
  bool retired = false;        // terminal, and its services and secrets are gone
  // container -> task-definition hash rolled out (ADR D4's durable convergence marker).
  std::map<std::string, std::string> applied_hashes;
  std::vector<TaskObservation> tasks;  // the latest per-task observations
  // D8: the SHA-256 (hex) of the deployment's identity credential, which the exchange endpoint
  // authenticates against; set once, after the credential is in SSM and before any revision
  // names it. Empty: none minted yet.
  std::string identity_credential_hash;
};

struct NewDeployment {
  std::string project;
  std::string group = "default";
  std::string environment;
  std::string from;
  AppSpec spec;
  std::optional<std::chrono::seconds> expire_after;
  // Where a (project, group) answers (render.h AppHost): set, Create refuses — in its transaction,
  // so two creates cannot both pass — a deployment whose host another (project, group)'s unfinished
  // deployment already answers at, with kAlreadyExists.
  std::function<std::string(std::string_view project, std::string_view group)> host_of;
};

// Who writes: the controller's lease and the epoch it holds (fenced), or nobody (a user action).
struct Fence {
  const sched::Lease* lease = nullptr;
  uint64_t epoch = 0;
};

struct DeploymentPage {
  std::vector<Deployment> deployments;  // newest first
  std::string next_token;               // empty: no more
};

struct EnvVar {
  std::string name;
  std::string value;  // "" in List for a secret
  bool secret = false;
};

class Deployments {
 public:
  Deployments(store::Store& store, Clock& clock) : store_(store), clock_(clock) {}

  // A new Pending deployment with the project's env snapshotted into it, and a "state" event.
  // `spec.project` must equal `project`. A `from` that does not exist is kNotFound. With `from`, the
  // env and secrets are the earlier deployment's; a secret it no longer holds (it is retired) is
  // taken from the project's current value, and one the project no longer has is kFailedPrecondition.
  StatusOr<Deployment> Create(const NewDeployment& d);
  // kNotFound: "Deployment <id> not found."
  StatusOr<Deployment> Get(std::string_view id);
  // Newest first; `project` / `group` empty: any. limit 1..100. A bad token is kInvalidArgument.
  StatusOr<DeploymentPage> List(std::string_view project, std::string_view group, std::string_view next_token,
                                int limit);
  // Every deployment the controller still has work for: not terminal, or terminal and not retired —
  // read from an index of those alone, so a long history costs nothing per tick.
  StatusOr<std::vector<Deployment>> Unfinished();

  // Guarded: a transition CanTransition refuses is kFailedPrecondition naming both states; to the
  // same state is a no-op. Appends a "state" event with `reason`. Healthy for the first time makes
  // the deployment active and supersedes the group's previous active one, in one transaction.
  // A terminal state sets finished_at and clears active (the group keeps no active deployment
  // when its active one is stopped).
  Status Transition(std::string_view id, State to, std::string_view reason, const Fence& fence);
  // User stop: any non-terminal -> Stopped. A terminal one is kFailedPrecondition.
  Status Stop(std::string_view id, std::string_view reason);

  Status RecordApplied(std::string_view id, std::string_view container, std::string_view hash, const Fence& fence);
  Status RecordTasks(std::string_view id, const std::vector<TaskObservation>& tasks, const Fence& fence);
  Status MarkRetiring(std::string_view id, const Fence& fence);  // sets retiring_since once
  // Sets identity_credential_hash once: a deployment that has one keeps it (kAlreadyExists when
  // `hash` differs), so a persisted credential is never replaced.
  Status SetIdentityCredentialHash(std::string_view id, std::string_view hash, const Fence& fence);
  // Retired: off the work list, and its secret values forgotten (their names kept), so the store
  // holds no secret of a deployment that no longer runs.
  Status MarkRetired(std::string_view id, const Fence& fence);

  // Appends events, skipping any whose dedupe_key this deployment already has.
  Status AppendEvents(std::string_view id, const std::vector<NewEvent>& events, const Fence& fence);
  // Events with seq > after_seq, oldest first, at most `limit`.
  StatusOr<std::vector<Event>> Events(std::string_view id, uint64_t after_seq, int limit);

  // A project's env: names as ContainerSpec::env's rule; a value at most 4096 bytes. Set replaces.
  Status SetEnv(std::string_view project, std::string_view name, std::string_view value, bool secret);
  Status UnsetEnv(std::string_view project, std::string_view name);  // absent: kNotFound
  StatusOr<std::vector<EnvVar>> ListEnv(std::string_view project);    // by name; secret values ""

 private:
  store::Store& store_;
  Clock& clock_;
};

}  // namespace paddock::deploy
