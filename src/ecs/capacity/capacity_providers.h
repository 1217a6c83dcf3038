// ecs/capacity: the one owner of capacity providers (docs/contracts/capacity-provider.md).
//
//   CapacityProviders providers(store);
//   CreateRequest r{.name = "spot-fleet", .asg = AsgProvider{.auto_scaling_group_arn = "my-asg"}};
//   ASSIGN_OR_RETURN(CapacityProvider cp, providers.Create(scope, r));
//
// Two kinds exist. FARGATE and FARGATE_SPOT are built in: every account has them, they are always
// describable and never stored. An Auto Scaling group provider (EC2_AUTOSCALING) is the account's
// own: Paddock has no Auto Scaling, so the group is only named and its settings stored and
// validated; a task launched through such a provider runs on the cluster's EC2 container
// instances (launch type EC2, capacityProviderName the provider's). Amazon ECS Managed Instances
// providers are refused (UnsupportedFeatureException).
//
// Clusters associate providers (CreateCluster, PutClusterCapacityProviders) through the seam at
// the bottom, inside their own transaction; an associated provider cannot be deleted.
//
// Records (ecs/schema.h):
//   capacity_providers         (account, region, name) -> provider record JSON
//   capacity_provider_asgs     (account, region, Auto Scaling group ARN or name) -> provider name
//   capacity_provider_clusters (account, region, provider, cluster) -> ""
// Tags live in the shared tags table under the provider's ARN, written only through this owner.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/ids.h"
#include "common/status.h"
#include "ecs/common/tags.h"
#include "store/store.h"

namespace paddock::ecs::capacity {

// FARGATE or FARGATE_SPOT: the providers every account has, which launch on Fargate.
inline bool IsFargateProvider(std::string_view name) { return name == "FARGATE" || name == "FARGATE_SPOT"; }

std::string CapacityProviderArn(const Scope& scope, std::string_view name);

// The launch type of a capacity provider strategy's tasks: FARGATE when its providers are FARGATE
// and FARGATE_SPOT, EC2 when they are Auto Scaling group providers; a mix of both is
// InvalidParameterException (AWS's text), as is an empty list.
StatusOr<std::string> StrategyLaunchType(const std::vector<std::string>& providers);

// ManagedScaling, with AWS's defaults filled in (aws-cli's create-capacity-provider example).
struct ManagedScaling {
  bool enabled = false;
  int64_t target_capacity = 100;
  int64_t minimum_scaling_step_size = 1;
  int64_t maximum_scaling_step_size = 10000;
  int64_t instance_warmup_period = 300;
};

struct AsgProvider {
  std::string auto_scaling_group_arn;  // an ARN of the caller's account and region, or a group name
  ManagedScaling managed_scaling;
  bool managed_termination_protection = false;
  bool managed_draining = true;  // ECS turns managed draining on by default
};

// AutoScalingGroupProviderUpdate: what is given replaces what is stored.
struct ManagedScalingUpdate {
  std::optional<bool> enabled;
  std::optional<int64_t> target_capacity;
  std::optional<int64_t> minimum_scaling_step_size;
  std::optional<int64_t> maximum_scaling_step_size;
  std::optional<int64_t> instance_warmup_period;
};
struct AsgProviderUpdate {
  std::optional<ManagedScalingUpdate> managed_scaling;
  std::optional<bool> managed_termination_protection;
  std::optional<bool> managed_draining;
};

enum class ProviderType { kEc2AutoScaling, kFargate, kFargateSpot };
std::string_view ProviderTypeText(ProviderType type);  // "EC2_AUTOSCALING", "FARGATE", "FARGATE_SPOT"

struct CapacityProvider {
  std::string arn;
  std::string name;
  std::string status;  // ACTIVE | INACTIVE (deleted)
  ProviderType type = ProviderType::kEc2AutoScaling;
  std::optional<AsgProvider> asg;
  std::string update_status;         // "" | UPDATE_COMPLETE | DELETE_COMPLETE | DELETE_FAILED
  std::string update_status_reason;
  std::optional<Tags> tags;  // with include TAGS, and in Create's answer
};

struct CreateRequest {
  std::string name;
  std::optional<AsgProvider> asg;
  bool managed_instances = false;    // managedInstancesProvider was given
  std::optional<std::string> cluster;  // only meaningful for Managed Instances
  Tags tags;
};

struct UpdateRequest {
  std::string name;  // a name or an ARN
  std::optional<AsgProviderUpdate> asg;
  bool managed_instances = false;
};

struct DescribeQuery {
  std::vector<std::string> refs;       // names or ARNs; empty: list
  // With a cluster: only the providers associated with it (the cluster's capacityProviders).
  std::optional<std::vector<std::string>> only;
  bool include_tags = false;
  size_t limit = 10;                   // 1..10, listing only
  std::string after;                   // listing position
};

struct DescribeResult {
  std::vector<CapacityProvider> providers;
  struct Failure {
    std::string arn;
    std::string reason;
  };
  std::vector<Failure> failures;
  std::string next;
};

class CapacityProviders {
 public:
  explicit CapacityProviders(store::Store& store) : store_(store) {}

  // CreateCapacityProvider. Names: 1-255 letters, digits, '_' and '-', not prefixed with "aws",
  // "ecs" or "fargate" (any case). A name or an Auto Scaling group already used by an ACTIVE
  // provider is ClientException (AWS's texts). Answers the provider with its tags.
  StatusOr<CapacityProvider> Create(const Scope& scope, const CreateRequest& request);
  StatusOr<DescribeResult> Describe(const Scope& scope, const DescribeQuery& q);
  // UpdateCapacityProvider: an ACTIVE Auto Scaling group provider's settings.
  StatusOr<CapacityProvider> Update(const Scope& scope, const UpdateRequest& request);
  // DeleteCapacityProvider. One associated with a cluster is not deleted: the answer (200, as on
  // AWS) is the provider, ACTIVE, with updateStatus DELETE_FAILED and the reason naming the
  // cluster. Otherwise it is removed with its tags and answered INACTIVE, DELETE_COMPLETE; its
  // name and Auto Scaling group are free again.
  StatusOr<CapacityProvider> Delete(const Scope& scope, std::string_view ref);

  Status TagResource(const Scope& scope, std::string_view name, const Tags& tags);
  Status UntagResource(const Scope& scope, std::string_view name, const std::vector<std::string>& keys);
  StatusOr<Tags> ListTags(const Scope& scope, std::string_view name);

  // ---- The cluster seam, inside the cluster owner's transaction ----
  // OK when `name` may be associated with `cluster`: FARGATE, FARGATE_SPOT, or an ACTIVE provider
  // of the account not associated with another cluster. InvalidParameterException otherwise.
  Status CheckAssociable(store::ReadTxn& txn, const Scope& scope, std::string_view cluster, std::string_view name);
  // Records that `cluster`'s providers changed from `before` to `after` (names).
  Status Associate(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                   const std::vector<std::string>& before, const std::vector<std::string>& after);

  Status ReapAccount(const AccountId& account);

 private:
  StatusOr<std::optional<CapacityProvider>> Load(store::ReadTxn& txn, const Scope& scope, std::string_view name);
  store::Store& store_;
};

// The provider name a reference names: a name, or an ARN of the caller's scope (another
// account's ARN is AccessDeniedException, a malformed one InvalidParameterException).
StatusOr<std::string> ProviderName(std::string_view ref, const Scope& caller, std::string_view action,
                                   std::string_view caller_arn);

}  // namespace paddock::ecs::capacity
