// The store tables ecs/ owns, every resource owner's (store/schema.h says how modules declare
// them).
#pragma once

#include "store/schema.h"

namespace paddock::ecs {

inline constexpr store::TableDef kTables[] = {
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
    {"task_by_group", 3},     // (account, region, cluster, group, desiredStatus, id) -> stamp   index: serviceName;
                              // the stamp "<version>[/<protection ms>]" (ecs/task/internal/group_index.h)
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
    {"fargate_hosts", 11},  // (node) -> "<expires ms> <cpu> <memory> <agent> <overlay address|->"   a server's offer
    // ecs/instance (docs/contracts/container-instance.md)
    {"container_instances", 4},        // (account, region, cluster, id) -> ContainerInstance JSON
    {"container_instance_counts", 4},  // (account, region, cluster) -> "<ACTIVE + DRAINING>"   ClusterUsage
    {"container_instance_tasks", 4},   // (account, region, cluster, id, task id) -> reservation   Reserve/Release
    {"container_instance_inactive", 4},  // (account, region, deregisteredAt ms, cluster, id) -> ""   ReapInactive
    {"container_instance_agents", 8},  // (account, region, cluster, id) -> {kind, accessKeyId?}   agent binding
    {"agent_credentials", 8},          // (access key id) -> {account, region, cluster, id, secret}   node-wide
    {"container_instance_ec2", 9},     // (account, region, ec2 instance id, cluster, id) -> {privateIp}   EC2 DescribeInstances
    {"container_instance_heartbeats", 10},  // (account, region, cluster, id) -> "<ms>"   the agent's last call, shared by servers
    // ecs/service (docs/contracts/service.md)
    {"services", 5},              // (account, region, cluster, name) -> service record JSON
    {"service_by_status", 5},     // (account, region, cluster, status, name) -> ""   index: ListServices
    {"service_inactive", 5},      // (account, region, inactiveAt ms, cluster, name) -> ""   ReapInactive
    {"service_refs", 5},          // (account, region, family, revision, cluster, name) -> ""   ReferenceCheck
    {"service_tokens", 5},        // (account, region, cluster, name) -> {clientToken, request}   idempotency
    {"service_deployments", 5},   // (account, region, cluster, service, id) -> ServiceDeployment JSON
    {"service_revisions", 5},     // (account, region, cluster, service, id) -> ServiceRevision JSON
    // ecs/ tags, through each resource's owner
    {"tags", 1},              // (account, region, resource arn, key) -> value
};
// Versions up to 9 are the store-wide versions from before per-module versions.
inline constexpr store::ModuleSchema kSchema{"ecs", 11, kTables};

}  // namespace paddock::ecs
