// Every table in the store, with the version that introduced it. Migrations create tables in
// version order; the store records the applied version, so a newer binary upgrades an older
// state directory and an older binary refuses a newer one.
//
// Key and value layouts are documented where the owning module defines its records.
#pragma once

#include <span>
#include <string_view>

namespace paddock::store {

struct TableDef {
  std::string_view name;
  int since_version;
};

// The current schema version.
inline constexpr int kSchemaVersion = 10;

inline constexpr TableDef kTables[] = {
    // iam/: accounts and access keys.
    {"accounts", 1},          // (account) -> Account
    {"access_keys", 1},       // (access_key_id) -> AccessKey
    {"account_keys", 1},      // (account, access_key_id) -> ""            index
    // iam/: roles, users, policies (issue 11); layouts in iam/directory.h
    {"user_access_keys", 10},     // (account, lowercased user name, access_key_id) -> ""   index: a user's keys
    {"iam_roles", 10},            // (account, lowercased name) -> Role JSON
    {"iam_users", 10},            // (account, lowercased name) -> User JSON
    {"iam_policies", 10},         // (account, lowercased name) -> ManagedPolicy JSON (customer-managed)
    {"iam_policy_versions", 10},  // (account, lowercased policy name, version number) -> {document, createdAt}
    {"iam_inline", 10},           // (account, "role"|"user", lowercased principal, policy name) -> document
    {"iam_attached", 10},         // (account, "role"|"user", lowercased principal, policy arn) -> ""
    {"iam_attachments", 10},      // (account, policy arn, "role"|"user", lowercased principal) -> ""   index
    {"iam_boundaries", 10},       // (account, policy arn, "role"|"user", lowercased principal) -> ""   index
    // ecs/setting (docs/contracts/account-setting.md)
    {"account_settings", 9},  // (account, region, principal arn, setting name) -> value
    // ecs/capacity (docs/contracts/capacity-provider.md)
    {"capacity_providers", 9},      // (account, region, name) -> CapacityProvider record JSON
    {"capacity_provider_asgs", 9},  // (account, region, Auto Scaling group ARN or name) -> provider name
    {"capacity_provider_clusters", 9},  // (account, region, provider, cluster) -> ""   associations
    // ecs/cluster
    {"clusters", 1},          // (account, region, name) -> Cluster
    {"clusters_active", 1},   // (account, region, name) -> ""             index: ListClusters
    // ecs/taskdef
    {"taskdefs", 1},          // (account, region, family, revision) -> TaskDefinition JSON
    {"taskdef_families", 1},  // (account, region, family) -> Family counters
    {"taskdef_by_status", 1},  // (account, region, status, family, revision) -> ""   index
    {"taskdef_family_by_status", 1},  // (account, region, ACTIVE|INACTIVE, family) -> ""   index
    {"taskdef_deleting", 1},  // (account, region, family, revision) -> ""  reaper work list
    // ecs/task (docs/contracts/task.md)
    {"tasks", 3},             // (account, region, cluster, id) -> Task JSON
    {"task_launch", 3},       // (account, region, cluster, id) -> launch record (agent, ip, pinned definition)
    {"task_by_status", 3},    // (account, region, cluster, desiredStatus, id) -> ""   index: ListTasks
    {"task_by_family", 3},    // (account, region, cluster, family, desiredStatus, id) -> ""   index
    {"task_by_started_by", 3},  // (account, region, cluster, startedBy, desiredStatus, id) -> ""   index
    {"task_by_group", 3},     // (account, region, cluster, group, desiredStatus, id) -> ""   index: serviceName
    {"task_by_launch_type", 3},  // (account, region, cluster, launchType, desiredStatus, id) -> ""   index
    {"task_assignments", 3},  // (agent id, account, region, cluster, id) -> ""   the agent's tasks
    {"task_refs", 3},         // (account, region, family, revision, cluster, id) -> ""   ReferenceCheck
    {"task_counts", 3},       // (account, region, cluster) -> "<pending> <running> [<pending EC2> <running EC2>]"   ClusterUsage
    {"task_stopped", 3},      // (account, region, stoppedAt ms, cluster, id) -> ""   ReapStopped
    {"task_tokens", 3},       // (account, region, clientToken) -> {request, arns, expires}
    {"task_protection", 9},   // (account, region, cluster, id) -> "<expires ms>"   scale-in protection
    // ecs/task: the node's Fargate capacity (ecs/task/fargate_capacity.h)
    {"fargate_reservations", 6},   // (account, region, cluster, task id) -> "<cpu> <memory>"   a task's reservation
    {"fargate_node_usage", 6},     // ("node") -> "<cpu> <memory>"   reserved on this node
    {"fargate_account_usage", 6},  // (account) -> "<cpu>"   reserved by the account: the vCPU quota's count
    // ecs/instance (docs/contracts/container-instance.md)
    {"container_instances", 4},        // (account, region, cluster, id) -> ContainerInstance JSON
    {"container_instance_counts", 4},  // (account, region, cluster) -> "<ACTIVE + DRAINING>"   ClusterUsage
    {"container_instance_tasks", 4},   // (account, region, cluster, id, task id) -> reservation   Reserve/Release
    {"container_instance_inactive", 4},  // (account, region, deregisteredAt ms, cluster, id) -> ""   ReapInactive
    {"container_instance_agents", 8},  // (account, region, cluster, id) -> {kind, accessKeyId?}   agent binding
    {"agent_credentials", 8},          // (access key id) -> {account, region, cluster, id, secret}   node-wide
    {"container_instance_ec2", 9},     // (account, region, ec2 instance id, cluster, id) -> {privateIp}   EC2 DescribeInstances
    // ecs/service (docs/contracts/service.md)
    {"services", 5},              // (account, region, cluster, name) -> service record JSON
    {"service_by_status", 5},     // (account, region, cluster, status, name) -> ""   index: ListServices
    {"service_inactive", 5},      // (account, region, inactiveAt ms, cluster, name) -> ""   ReapInactive
    {"service_refs", 5},          // (account, region, family, revision, cluster, name) -> ""   ReferenceCheck
    {"service_tokens", 5},        // (account, region, cluster, name) -> {clientToken, request}   idempotency
    {"service_deployments", 5},   // (account, region, cluster, service, id) -> ServiceDeployment JSON
    {"service_revisions", 5},     // (account, region, cluster, service, id) -> ServiceRevision JSON
    // sched/
    {"scheduler_lease", 5},       // ("scheduler") -> "<holder> <epoch> <expires ms>"
    // vpc/: IP addresses of the default VPC's subnets (vpc/ipam.h)
    {"ipam", 1},              // legacy (pool cidr, ip) -> "<account> <region> <owner>"; moved by vpc::UpgradeLegacyIpam (schema 7)
    {"ipam_subnets", 1},      // legacy (pool cidr) -> "<cursor> <in use>"; emptied by vpc::UpgradeLegacyIpam
    {"vpc_addresses", 7},     // (account, region, subnet id, ip) -> "<owner> <group id>,<group id>…"
    {"vpc_address_pools", 7},  // (account, region, subnet id) -> "<cursor> <in use>"
    {"node_addresses", 7},    // (ip, account, region) -> ""   index: which VPCs of this store hold an address
    // vpc/: security groups (vpc/security_groups.h)
    {"security_groups", 7},         // (account, region, group id) -> group record JSON (rules included)
    {"security_group_names", 7},    // (account, region, vpc id, name) -> group id   user groups only
    {"security_group_rules", 7},    // (account, region, rule id) -> group id
    {"security_group_refs", 7},     // (account, region, referenced group, referencing group, rule id) -> ""
    {"security_group_members", 7},  // (account, region, group id, ip) -> owner   the interfaces in a group
    // ecs/ tags, through each resource's owner
    {"tags", 1},              // (account, region, resource arn, key) -> value
    // agent/images: the node's local image store (node-local, not per account)
    {"images", 2},            // (reference "domain/path:tag") -> image record JSON
    {"image_digests", 2},     // (repository, manifest digest, reference) -> ""  index: name@sha256:
    // aws/ idempotency and misc.
    {"meta", 1},              // (name) -> value   e.g. the pagination-token key
};

inline bool IsKnownTable(std::string_view name) {
  for (const auto& t : kTables)
    if (t.name == name) return true;
  return false;
}

}  // namespace paddock::store
