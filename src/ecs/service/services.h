// ecs/service: the one owner of service records (docs/contracts/service.md).
//
// Only this module writes services, their deployments, task sets, events, service deployments,
// service revisions, their indexes and their tags. The API actions (CreateService, UpdateService,
// DeleteService, DescribeServices, ListServices, ListServicesByNamespace, the task-set actions and
// the service-deployment actions) validate, resolve the task definition once and write in one
// transaction. The scheduler (sched/) never touches the record directly: it reads and writes the
// typed projection in state.h through LoadState / StoreState, inside transactions that also carry
// its launches and its lease check.
//
//   Services services(store, task_definitions, clusters);
//   ASSIGN_OR_RETURN(std::string svc, services.Create(scope, caller_arn, input, now));  // Service JSON
//
// Records (ecs/schema.h):
//   services         (account, region, cluster, name) -> the service record (JSON: the Service
//                    shape's stored members + events + the scheduler's private members + version)
//   service_by_status (account, region, cluster, status, name) -> ""   ACTIVE (ListServices) and
//                    DRAINING (with ACTIVE: ClusterUsage, the services-per-cluster quota)
//   service_inactive (account, region, inactiveAt ms, cluster, name) -> ""   ReapInactive's list
//   service_refs     (account, region, family, revision, cluster, name) -> ""   ReferenceCheck
//   service_tokens   (account, region, cluster, name) -> {clientToken, request}   CreateService idempotency
//   service_deployments (account, region, cluster, service, id) -> ServiceDeployment JSON
//   service_revisions (account, region, cluster, service, id) -> ServiceRevision JSON
// The record's members and the index upkeep: internal/record.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "ecs/cluster/clusters.h"
#include "ecs/common/tags.h"
#include "ecs/service/state.h"
#include "ecs/task/discovery.h"
#include "ecs/taskdef/taskdefs.h"
#include "store/store.h"

namespace paddock::ecs::service {

// Configurable limits (AWS's defaults; docs/contracts/service.md).
struct Quotas {
  int64_t services_per_cluster = 5000;
  int64_t tasks_per_service = 5000;
  int64_t task_sets_per_service = 5;
};

// The service-deployment history a service keeps (ListServiceDeployments,
// DescribeServiceDeployments, DescribeServiceRevisions): its kServiceDeploymentHistory newest
// service deployments, less the finished ones created before the retention (AWS: "You can see the
// most recent 90-day history"); unfinished ones and the ones its deployments run always stay.
// Pruned when a deployment starts (docs/contracts/service.md, "Service deployments").
inline constexpr int64_t kServiceDeploymentHistory = 100;
inline constexpr std::chrono::hours kServiceDeploymentRetention{24 * 90};

struct DescribeResult {
  std::vector<std::string> services;  // serialized Service JSON
  struct Failure {
    std::string arn;
    std::string reason;  // MISSING
    std::string detail;
  };
  std::vector<Failure> failures;
};

struct ListQuery {
  std::optional<std::string> cluster;
  std::optional<std::string> launch_type;
  std::optional<std::string> scheduling_strategy;
  size_t limit = 10;  // ListServices' default page
  std::string after;
};

struct Page {
  std::vector<std::string> arns;
  std::string next;  // empty when done
};

// ListServiceDeployments' query (the service by name or ARN; `cluster` as in every action).
struct DeploymentQuery {
  std::optional<std::string> cluster;
  std::string service;
  std::vector<std::string> statuses;  // empty: every status
  std::optional<TimePoint> created_after;
  std::optional<TimePoint> created_before;
  size_t limit = 20;  // ListServiceDeployments' default page
  std::string after;
};

struct ItemPage {
  std::vector<std::string> items;  // serialized JSON (ServiceDeploymentBrief, ...)
  std::string next;                // empty when done
};

// DescribeServiceDeployments / DescribeServiceRevisions.
struct DescribedItems {
  std::vector<std::string> items;  // serialized ServiceDeployment / ServiceRevision JSON
  std::vector<DescribeResult::Failure> failures;
};

class Services {
 public:
  Services(store::Store& store, taskdef::TaskDefinitions& task_definitions, cluster::Clusters& clusters,
           Quotas quotas = {})
      : store_(store), task_definitions_(task_definitions), clusters_(clusters), quotas_(quotas) {}

  // The registries serviceRegistries may name (ecs/task/discovery.h): Create and Update check an
  // entry against its registry's records (SRV needs a port). Null: registries are checked against
  // the task definition only. Set before serving.
  void SetDiscovery(task::Discovery* discovery) { discovery_ = discovery; }

  // ---- The API (each validated against botocore's input shape first) ----
  // `check` authorizes the revision the service pins (taskdef::LaunchCheck), as in Update and
  // CreateTaskSet.
  StatusOr<std::string> Create(const Scope& scope, std::string_view caller_arn, const boost::json::object& input,
                               TimePoint now, const taskdef::LaunchCheck& check = {});
  StatusOr<std::string> Update(const Scope& scope, std::string_view caller_arn, const boost::json::object& input,
                               TimePoint now, const taskdef::LaunchCheck& check = {});
  StatusOr<std::string> Delete(const Scope& scope, std::string_view caller_arn, const boost::json::object& input,
                               TimePoint now);
  StatusOr<DescribeResult> Describe(const Scope& scope, std::string_view caller_arn, const boost::json::object& input);
  StatusOr<Page> List(const Scope& scope, std::string_view caller_arn, const ListQuery& q);
  // ListServicesByNamespace of a namespace the scope does not have: NamespaceNotFoundException
  // (docs/contracts/service.md).
  StatusOr<Page> ListByNamespace(const Scope& scope, std::string_view caller_arn, const boost::json::object& input);
  // ListServicesByNamespace of an existing namespace: the ACTIVE services of every cluster of the
  // scope whose serviceRegistries name one of `registry_arns` (the namespace's Cloud Map services),
  // by cluster and name, `limit` per page from `after` (a Page::next).
  StatusOr<Page> ListByRegistries(const Scope& scope, const std::vector<std::string>& registry_arns, size_t limit,
                                  const std::string& after);

  // ---- Service deployments and revisions (service_deployments.cc) ----
  StatusOr<ItemPage> ListServiceDeployments(const Scope& scope, std::string_view caller_arn, const DeploymentQuery& q);
  StatusOr<DescribedItems> DescribeServiceDeployments(const Scope& scope, std::string_view caller_arn,
                                                      const std::vector<std::string>& arns);
  StatusOr<DescribedItems> DescribeServiceRevisions(const Scope& scope, std::string_view caller_arn,
                                                    const std::vector<std::string>& arns);
  // StopServiceDeployment (stopType ROLLBACK): returns the service deployment's ARN.
  StatusOr<std::string> StopServiceDeployment(const Scope& scope, std::string_view caller_arn,
                                              const boost::json::object& input, TimePoint now);
  // ContinueServiceDeployment resumes (CONTINUE) or rolls back (ROLLBACK) a deployment paused at a
  // PAUSE lifecycle hook. Paddock's deployments are ROLLING and take no lifecycle hooks
  // (deploymentConfiguration.lifecycleHooks is refused), so none is ever paused: a service
  // deployment of the caller's answers InvalidParameterException naming the hook, an unknown one
  // ServiceDeploymentNotFoundException. Nothing changes.
  StatusOr<std::string> ContinueServiceDeployment(const Scope& scope, std::string_view caller_arn, std::string_view arn,
                                                  std::string_view hook_id, std::string_view action);

  // ---- Task sets (task_sets.cc) ----
  // Services whose deploymentController is EXTERNAL only. Each set is an entry of the record's
  // deployments (ServiceState.deployments: desired_count = computedDesiredCount). Create, Update,
  // Delete and UpdateServicePrimaryTaskSet return the TaskSet JSON and commit in one transaction,
  // then NotifyChange. DescribeTaskSets' items are TaskSet JSON; unknown sets are MISSING failures.
  StatusOr<std::string> CreateTaskSet(const Scope& scope, std::string_view caller_arn, const boost::json::object& input,
                                      TimePoint now, const taskdef::LaunchCheck& check = {});
  StatusOr<std::string> UpdateTaskSet(const Scope& scope, std::string_view caller_arn, const boost::json::object& input,
                                      TimePoint now);
  StatusOr<std::string> DeleteTaskSet(const Scope& scope, std::string_view caller_arn, const boost::json::object& input,
                                      TimePoint now);
  StatusOr<std::string> UpdateServicePrimaryTaskSet(const Scope& scope, std::string_view caller_arn,
                                                    const boost::json::object& input, TimePoint now);
  StatusOr<DescribedItems> DescribeTaskSets(const Scope& scope, std::string_view caller_arn,
                                            const boost::json::object& input);
  // computedDesiredCount: desired × scale% / 100, always rounded up (1.2 -> 2).
  static int64_t TaskSetDesiredCount(int64_t desired, double scale_percent);

 private:
  // Update, Delete, UpdateServicePrimaryTaskSet: the set named by input[member], changed by
  // `change` (true: write) in one transaction.
  StatusOr<std::string> ChangeTaskSet(
      const Scope& scope, std::string_view caller_arn, const boost::json::object& input, std::string_view action,
      std::string_view member,
      const std::function<StatusOr<bool>(boost::json::object&, std::vector<Deployment>&, Deployment&)>& change);
  // task_sets.cc: a task set's tags by its ARN, after `change` (null: read only) edits them in
  // the same write.
  StatusOr<Tags> TaskSetTags(const Scope& scope, std::string_view arn, const std::function<Status(Tags&)>* change);

 public:
  // Tests: deterministic ids. `gen(n, alphabet)` returns n characters of `alphabet`; unset:
  // cryptographically random. Set before serving.
  void SetIdGenerator(std::function<std::string(size_t, std::string_view)> gen) { id_gen_ = std::move(gen); }

  // A service's or a task set's tags, by its ARN: a service's long ARN (service/<cluster>/<name>),
  // or a task set's (task-set/<cluster>/<service>/ecs-svc/<digits>), whose tags live in the
  // service record's taskSetExtras. An INACTIVE service, or a set it no longer has, is
  // ResourceNotFoundException.
  Status TagResource(const Scope& scope, std::string_view arn, const Tags& tags);
  Status UntagResource(const Scope& scope, std::string_view arn, const std::vector<std::string>& keys);
  StatusOr<Tags> ListTags(const Scope& scope, std::string_view arn);

  // ---- The scheduler's side ----
  // The typed state of one service (nullopt when there is no record). INACTIVE services load too.
  StatusOr<std::optional<ServiceState>> LoadState(store::ReadTxn& txn, const ServiceKey& key);
  // Writes the scheduler-owned parts of `state` back: status (DRAINING -> INACTIVE only),
  // desired_count (DAEMON only), deployments, new_events. Fails with kAborted (writing nothing)
  // when the record's version is no longer state.version.
  Status StoreState(store::WriteTxn& txn, const ServiceState& state, TimePoint now);
  // Up to `limit` service keys after `after` (a position from the previous call; empty: from the
  // start), across every account: the scheduler's resync walks them in pages.
  struct KeyPage {
    std::vector<ServiceKey> keys;
    std::vector<std::string> records;  // keys[i]'s stored record, for StateOf (read once)
    std::string next;                  // empty when done
  };
  StatusOr<KeyPage> ListAllKeys(store::ReadTxn& txn, size_t limit, const std::string& after);
  // LoadState on a record already read (a KeyPage's): nullopt never, errors for a corrupt record.
  StatusOr<ServiceState> StateOf(store::ReadTxn& txn, const ServiceKey& key, std::string_view record);

  // Called after the commit of every API change to a service (create, update, delete, task-set
  // changes, a stopped deployment), so the scheduler can act at once. Set before serving; cheap;
  // must not call back into Services.
  void SetChangeListener(std::function<void(const ServiceKey&)> listener);

  // Removes INACTIVE services that became INACTIVE more than an hour before `now`.
  StatusOr<size_t> ReapInactive(TimePoint now);
  Status ReapAccount(const AccountId& account);

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

  void NotifyChange(const ServiceKey& key);

  // services.cc: what Create and Update decide before their transaction.
  struct Cluster;  // internal/resolved.h
  struct Launch;
  StatusOr<Cluster> ClusterFor(const Scope& scope, std::string_view name);
  StatusOr<Launch> ResolveLaunch(const Scope& scope, const Cluster& cluster, const boost::json::object& in,
                                 const std::optional<taskdef::LaunchView>& view, std::string_view network_mode,
                                 const std::vector<std::string>& compatibilities, std::string_view scheduling,
                                 bool external_controller);
  std::string NewId(size_t n, std::string_view alphabet);
  // A new PRIMARY deployment with its ServiceDeployment and ServiceRevision, written in `txn`;
  // `record` gets the deployment in front (the previous PRIMARY becomes ACTIVE). `definition` is
  // the revision it runs, as the owner projects it (its containers and placement constraints).
  Status StartDeployment(store::WriteTxn& txn, const Scope& scope, const std::string& cluster, boost::json::object& record,
                         const taskdef::LaunchView& definition, const LaunchConfig& launch, TimePoint now);
  // StoreState's upkeep of ServiceDeployment records when rollout states change.
  Status SyncServiceDeployments(store::WriteTxn& txn, const ServiceState& state, const boost::json::object& old_record,
                                TimePoint now);

  // serviceRegistries (at most one entry, CheckUnsupported) as ECS checks it against the task
  // definition the service runs (`network_mode`, its `containers`; none when it is not known) and the
  // registry's records.
  Status CheckRegistries(const Scope& scope, const boost::json::array& registries, std::string_view network_mode,
                         const std::vector<taskdef::ContainerView>& containers);

  store::Store& store_;
  taskdef::TaskDefinitions& task_definitions_;
  cluster::Clusters& clusters_;
  Quotas quotas_;
  task::Discovery* discovery_ = nullptr;  // set before serving, then read-only
  Refs refs_;
  Usage usage_;
  std::mutex listener_mu_;
  std::function<void(const ServiceKey&)> listener_;  // GUARDED_BY(listener_mu_)
  std::function<std::string(size_t, std::string_view)> id_gen_;
};

}  // namespace paddock::ecs::service
