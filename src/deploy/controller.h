// deploy/controller: the reconcile driver (ADR D1, D13) — each tick it takes or renews the
// controller class's lease, reads the cluster once (ListServices + DescribeServices ×10 with TAGS),
// the deployments the store still has work for, their tasks and the edge's server status; asks
// plan.h what to do; and does it, re-checking the lease before every write. Throttling never fails
// a deployment: the tick stops acting and the next one comes later (exponential backoff, jittered).
// RegisterTaskDefinition goes out at most once a second. Before a deployment's first revision its
// project's task role is read (or made) through IAM; a refused call is an event naming the action.
//
//   Controller controller(store, deployments, aws, &edge, clock, options);
//   std::jthread loop([&](std::stop_token st) { controller.Run(st); });
//   controller.Nudge();  // a deployment was created: tick now
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "deploy/aws.h"
#include "deploy/deployments.h"
#include "deploy/plan.h"
#include "deploy/render.h"
#include "sched/lease.h"
#include "store/store.h"

namespace paddock::deploy {

// The edge's view of its servers (Traefik's API, GET /api/http/services: each service's
// serverStatus): "http://10.0.1.5:8080" -> "UP" | "DOWN".
class EdgeView {
 public:
  virtual ~EdgeView() = default;
  virtual StatusOr<std::map<std::string, std::string>> Servers() = 0;
};

// Reads a Traefik-compatible API (Paddock's edge or Traefik's own) over HTTP.
class HttpEdgeView final : public EdgeView {
 public:
  HttpEdgeView(std::string host, uint16_t port);
  ~HttpEdgeView() override;
  StatusOr<std::map<std::string, std::string>> Servers() override;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

struct ControllerOptions {
  ControllerSettings settings;
  std::chrono::milliseconds interval{30'000};      // between ticks, ±20% jitter
  // Between ticks while a deployment is on its way (Pending, Deploying or retiring) or the last tick
  // acted; 0: `interval` always. A developer's `paddock up` sets it short, so a deploy is Healthy
  // moments after its tasks are; against AWS's read budget it stays at 0.
  std::chrono::milliseconds busy_interval{0};
  std::chrono::seconds deploying_timeout{300};     // Deploying longer than this fails; the Healthy hold's cap
  std::chrono::seconds drain{15};                  // a retired service waits this long at 0 before deletion
  std::chrono::milliseconds lease_ttl{30'000};
  std::string holder = "controller";               // this replica's name in the lease
  // A prefix of holder names that are this replica's own earlier lives: their live lease is taken
  // over at once (sched/lease.h). Only for a process that holds its state directory's lock
  // (`paddock up`), which makes the name its alone. Empty: none.
  std::string successor_of;
  // Holder names known dead (sched::Lease::TakeOverWhen): a replica sharing this store whose
  // process is gone loses its live lease at once. `paddock controller`: same host and state
  // directory, and its pid no longer runs. Unset: a live lease is always waited out.
  std::function<bool(std::string_view holder)> holder_gone;
  std::string ssm_prefix = "paddock";              // secrets: /<prefix>/<class>/<project>/<group>/<deployment>/<KEY>
  std::chrono::milliseconds register_spacing{1000};  // RegisterTaskDefinition at most once per this
  // Revision GC: when a deployment is retired, each of its task-definition families keeps its
  // newest `keep_revisions` ACTIVE revisions (and every revision a live service runs); older ones
  // are deregistered and deleted. 0: none is ever removed.
  int keep_revisions = 10;
  // D10: with settings.cloudmap_namespace, the private DNS namespace of that name; when it does not
  // exist and this is set, it is created in this VPC (`paddock up`: the account's default VPC).
  std::string namespace_vpc;
  // A missing cluster is created with the first service (`paddock up`, a developer's machine);
  // otherwise the deployment fails with ECS's ClusterNotFoundException.
  bool create_cluster = false;
  // Called after each tick of Run that was busy (a deployment on its way, or the tick acted): for
  // readers that follow deployments (the console's change feed). Cheap; must not call into the
  // controller.
  std::function<void()> ticked = nullptr;
  // A project's task role (settings.task_role_pattern, render.h TaskRoleArn) that does not exist is
  // created — CreateRole trusting ecs-tasks.amazonaws.com only, with no permissions — before its
  // first service (`paddock up`; `paddock controller --create-task-roles`). Otherwise a missing
  // role fails the deployment at once, naming the role and how to make it.
  bool create_task_roles = false;
  // How the driver waits between registrations (tests: a no-op that advances a fake clock).
  std::function<void(std::chrono::milliseconds)> sleep;
};

struct TickReport {
  bool led = false;
  int reads = 0;    // AWS read calls
  int writes = 0;   // AWS write calls
  bool throttled = false;
  bool busy = false;  // a deployment is on its way, or the tick acted: tick again soon (busy_interval)
  Plan plan;
};

// The parameter name of a deployment's secret KEY (D7):
// /<ssm prefix>/<class>/<project>/<group>/<deployment>/<KEY>.
std::string SecretParameterName(const ControllerOptions& options, const Deployment& d, std::string_view key);
// Whether a role's trust policy (the JSON document) lets ECS's tasks assume it: a statement with
// Effect Allow, an Action matching sts:AssumeRole (IAM's wildcards, any case) and a Principal whose
// Service names ecs-tasks.amazonaws.com (or Principal "*"), and no Deny statement that matches the
// same without a Condition. The Allow's own Conditions (aws:SourceAccount, …) are ECS's to meet and
// do not count against it. Text that is no policy trusts nobody.
bool TrustsEcsTasks(std::string_view trust_policy);
// What a deployment becomes on ECS: its spec rendered (render.h) at its size, with its env in every
// container (a container's own value wins) and its secrets as parameter references. With
// `resize_note`, the Fargate round-up's sentence when there is one.
StatusOr<std::vector<Workload>> RenderDeployment(const ControllerOptions& options, const Deployment& d,
                                                 std::optional<std::string>* resize_note = nullptr);

class Controller {
 public:
  // `iam` (may be null: task roles are then neither checked nor made) answers IAM's GetRole and
  // CreateRole; `aws`, `iam` and `edge` outlive the controller.
  Controller(store::Store& store, Deployments& deployments, Aws& aws, EdgeView* edge, Clock& clock,
             ControllerOptions options, QueryAws* iam = nullptr);

  // One tick. Not leading is not an error (report.led false). A failed cluster read ends the tick
  // with that error and nothing done; a throttled one ends it with nothing done and
  // report.throttled set (the next tick backs off).
  StatusOr<TickReport> Tick();
  // Ticks until `stop`, every interval (±20%), at once after Nudge, later after throttling.
  void Run(std::stop_token stop);
  void Nudge();
  // Gives the lease up (a clean shutdown), so a peer leads at once.
  void Release();

  // The secret parameter path of a deployment's KEY (D7).
  std::string SecretName(const Deployment& d, std::string_view key) const;

 private:
  class Tick_;
  store::Store& store_;
  Deployments& deployments_;
  Aws& aws_;
  QueryAws* iam_;
  EdgeView* edge_;
  Clock& clock_;
  ControllerOptions options_;
  sched::Lease lease_;
  std::map<std::string, TimePoint> orphan_retiring_since_;  // only the Run thread touches it
  std::map<std::string, std::set<std::string>> forwarded_;   // deployment -> ECS event ids in the store
  struct Rendering {
    StatusOr<std::vector<Workload>> workloads = std::vector<Workload>{};
    std::optional<std::string> resize_note;
    std::map<std::string, std::string> registered;  // workload hash -> the revision registered for it
    bool task_role_ready = false;  // its task role was found (or made) and trusts ecs-tasks.amazonaws.com
  };
  std::map<std::string, Rendering> rendered_;  // unfinished deployment -> its rendering
  std::string namespace_id_;                   // D10: the namespace's id, once found
  struct Registry {
    std::string id;
    std::string arn;
  };
  std::map<std::string, Registry> registries_;  // D10: Cloud Map service name -> its id and ARN
  TimePoint last_register_{};
  int backoff_ = 0;  // consecutive throttled ticks
  std::mutex mu_;
  std::condition_variable_any cv_;
  bool nudged_ = false;  // guarded by mu_
};

}  // namespace paddock::deploy
