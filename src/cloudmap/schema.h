// The store tables Cloud Map's owner (cloudmap::Registry) keeps. Keys start with the account and
// region; values are JSON.
#pragma once

#include "store/schema.h"

namespace paddock::cloudmap {

inline constexpr store::TableDef kTables[] = {
    // (account, region, namespace id) -> the namespace: name, type, description, vpc, SOA TTL, ...
    {"cloudmap_namespaces", 1},
    // (account, region, name) -> namespace id: names are unique per scope; reserved when a
    // CreateNamespace is submitted, so a second create of the name fails at once.
    {"cloudmap_namespace_names", 1},
    // (account, region, service id) -> the service: name, namespace id, DnsConfig, health, revision.
    {"cloudmap_services", 1},
    // (account, region, namespace id, service name) -> service id.
    {"cloudmap_service_names", 1},
    // (account, region, service id, instance id) -> the instance: attributes, health, request id.
    {"cloudmap_instances", 1},
    // (account, region, operation id) -> the operation: type, status, dates, targets, its work.
    {"cloudmap_operations", 1},
    // (sequence, account, region, operation id) -> "": the operations not yet SUCCESS or FAIL, in
    // the order they were accepted (the worker's queue).
    {"cloudmap_pending", 1},
    // (account, region, operation id) -> "": the scope's operations in cloudmap_pending, counted
    // against Registry::kMaxQueuedOperations.
    {"cloudmap_queued", 1},
    // (account, region, finished at ms, operation id) -> "": the scope's SUCCESS and FAIL operations,
    // oldest first, for their retention (Registry::kMaxFinishedOperations, kFinishedRetention).
    {"cloudmap_finished", 2},
    // (account, region) -> how many rows of cloudmap_finished the scope has (decimal).
    {"cloudmap_finished_count", 2},
    // (account, region, resource ARN, tag key) -> tag value.
    {"cloudmap_tags", 1},
    // (account, region, kind, CreatorRequestId) -> what the request made (an operation id for a
    // namespace create or a registration, a service id): a retry answers it again.
    {"cloudmap_requests", 1},
};
inline constexpr store::ModuleSchema kSchema{"cloudmap", 2, kTables};

}  // namespace paddock::cloudmap
