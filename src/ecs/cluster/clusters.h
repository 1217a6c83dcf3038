// ecs/cluster: the one owner of cluster records.
//
//   Clusters clusters(store);
//   ASSIGN_OR_RETURN(std::string c, clusters.Create(scope, input));   // the Cluster JSON
//
// Records (ecs/schema.h):
//   clusters (account, region, name) -> the stored Cluster JSON: clusterArn, clusterName,
//            status, settings, configuration, capacityProviders, defaultCapacityProviderStrategy,
//            serviceConnectDefaults. Counts and statistics are computed when described.
// Tags live in the shared tags table, written only through this owner.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "common/ids.h"
#include "common/status.h"
#include "ecs/capacity/capacity_providers.h"
#include "ecs/common/tags.h"
#include "ecs/setting/account_settings.h"
#include "store/store.h"

namespace paddock::ecs::cluster {

// What else lives in a cluster. Tasks, services and container instances (later modules)
// register one each, so DeleteCluster refuses a cluster that still holds them and
// DescribeClusters reports their counts.
class ClusterUsage {
 public:
  virtual ~ClusterUsage() = default;
  struct Counts {
    int64_t registered_container_instances = 0;
    int64_t running_tasks = 0;
    int64_t pending_tasks = 0;
    int64_t running_ec2_tasks = 0;  // the part of the two above on container instances
    int64_t pending_ec2_tasks = 0;
    int64_t active_services = 0;
    int64_t draining_services = 0;
  };
  virtual StatusOr<Counts> Count(store::ReadTxn& txn, const Scope& scope, std::string_view cluster) = 0;
  // Whether something of the cluster that is not over yet (a task not STOPPED, a service's
  // strategy) uses capacity provider `provider`: PutClusterCapacityProviders then refuses to
  // remove it (ResourceInUseException).
  virtual StatusOr<bool> UsesCapacityProvider(store::ReadTxn& txn, const Scope& scope, std::string_view cluster,
                                              std::string_view provider) {
    (void)txn, (void)scope, (void)cluster, (void)provider;
    return false;
  }
};

struct Include {
  bool attachments = false;
  bool configurations = false;
  bool settings = false;
  bool statistics = false;
  bool tags = false;
};

struct DescribeResult {
  std::vector<std::string> clusters;  // serialized Cluster JSON
  std::vector<std::string> missing;   // ARNs of clusters that do not exist
};

// What another owner's launch path needs of a cluster: the owner's projection of its record, never
// the API's rendering of it (issue 18).
struct ClusterFacts {
  std::string arn;
  std::string status;  // ACTIVE, or INACTIVE once deleted
  std::vector<std::string> capacity_providers;
  boost::json::array default_strategy;  // defaultCapacityProviderStrategy, as stored
};

struct Page {
  std::vector<std::string> arns;
  std::string next;  // position of the next page, empty when done
};

// Parses a cluster reference (a name or an ARN in the caller's scope) into a name. Omitted
// means "default", as in AWS.
StatusOr<std::string> ClusterName(std::optional<std::string_view> ref, const Scope& caller, std::string_view action,
                                  std::string_view caller_arn);

class Clusters {
 public:
  explicit Clusters(store::Store& store) : store_(store) {}

  // REQUIRES: called before serving.
  void AddUsage(ClusterUsage* usage) { usages_.push_back(usage); }
  // The account settings (containerInsights: a new cluster's default) and the capacity providers
  // a cluster may be associated with. REQUIRES: set before serving. Without them a cluster's
  // containerInsights defaults to disabled and only FARGATE and FARGATE_SPOT can be associated.
  void SetAccountSettings(setting::AccountSettings* settings) { settings_ = settings; }
  void SetCapacityProviders(capacity::CapacityProviders* providers) { providers_ = providers; }

  // Creates the cluster, or returns the existing ACTIVE one of that name unchanged. Without a
  // containerInsights setting the cluster takes the one that applies to `caller_arn`
  // (PutAccountSetting; empty: the root user).
  StatusOr<std::string> Create(const Scope& scope, const boost::json::object& input, std::string_view caller_arn = {});
  StatusOr<DescribeResult> Describe(const Scope& scope, const std::vector<std::string>& names, const Include& include);
  // nullopt when the cluster does not exist.
  StatusOr<std::optional<ClusterFacts>> Facts(const Scope& scope, std::string_view name);
  StatusOr<Page> List(const Scope& scope, size_t limit, const std::string& after);
  // ACTIVE -> INACTIVE (still describable); refuses a cluster that holds tasks, services or
  // container instances. Repeating it returns the INACTIVE cluster.
  StatusOr<std::string> Delete(const Scope& scope, std::string_view name);
  // UpdateCluster: settings, configuration, serviceConnectDefaults.
  StatusOr<std::string> Update(const Scope& scope, std::string_view name, const boost::json::object& input);
  StatusOr<std::string> UpdateSettings(const Scope& scope, std::string_view name, const boost::json::array& settings);
  StatusOr<std::string> PutCapacityProviders(const Scope& scope, std::string_view name,
                                             const boost::json::array& providers, const boost::json::array& strategy);

  // Inside a caller's transaction: OK when the cluster exists and is ACTIVE, else
  // ClusterNotFoundException. Launches call it in their own transaction, so a concurrent
  // DeleteCluster either sees their tasks or refuses them.
  Status CheckActive(store::ReadTxn& txn, const Scope& scope, std::string_view name);
  // Inside a caller's transaction: OK when the cluster exists (ACTIVE or INACTIVE), else
  // ClusterNotFoundException. For actions that read a cluster's contents.
  Status CheckExists(store::ReadTxn& txn, const Scope& scope, std::string_view name);
  // The same in a read transaction of its own.
  Status CheckExists(const Scope& scope, std::string_view name);

  // What RunTask needs of an ACTIVE cluster (else ClusterNotFoundException), read straight from
  // its record: no usage counts, no rendering. Launches still CheckActive in their transaction.
  struct LaunchSettings {
    std::vector<std::string> capacity_providers;  // associated with the cluster
    std::vector<std::string> default_strategy;    // defaultCapacityProviderStrategy's providers, in order
  };
  StatusOr<LaunchSettings> ForLaunch(const Scope& scope, std::string_view name);

  Status TagResource(const Scope& scope, std::string_view name, const Tags& tags);
  Status UntagResource(const Scope& scope, std::string_view name, const std::vector<std::string>& keys);
  StatusOr<Tags> ListTags(const Scope& scope, std::string_view name);

  Status ReapAccount(const AccountId& account);

 private:
  StatusOr<std::string> Mutate(const Scope& scope, std::string_view name,
                               const std::function<Status(store::WriteTxn&, boost::json::object&)>& change);
  // The capacity providers of a cluster change from `before` to `after`, in its transaction.
  Status ChangeProviders(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                         const std::vector<std::string>& before, const std::vector<std::string>& after);
  Status DescribeIn(store::ReadTxn& txn, const Scope& scope, const std::vector<std::string>& names,
                    const Include& include, DescribeResult& result);
  Status DescribeChanged(store::ReadTxn& txn, const Scope& scope, std::string_view name, std::string& out);
  store::Store& store_;
  std::vector<ClusterUsage*> usages_;
  setting::AccountSettings* settings_ = nullptr;
  capacity::CapacityProviders* providers_ = nullptr;
};

}  // namespace paddock::ecs::cluster
