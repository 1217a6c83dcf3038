// IP address management for the default VPC's subnets, in the store, inside the caller's
// transaction: the address, the placement and the task record commit together or not at all.
//
//   ASSIGN_OR_RETURN(uint32_t ip, AllocateIp(txn, scope, subnet, "eni-0123"));
//   ...
//   RETURN_IF_ERROR(ReleaseIp(txn, scope, subnet, ip));
//
// Allocation is next-fit from the last address handed out, so a released address is not handed
// out again until the subnet has wrapped around: a late packet for a stopped task does not reach
// its successor. No address is ever held by two owners, across restarts too.
//
// The address pool is the subnet's CIDR, shared by every account and region: each account's
// default VPC is 172.31.0.0/16 (as on AWS), but their tasks share the hosts' bridges, and the host
// must reach every task at its own address. So the same CIDR in two accounts draws from one pool,
// and a task's address is unique on the node whoever owns it. The caller's scope is recorded with
// the owner.
//
// Records (store/schema.h):
//   ipam         (pool cidr, ip) -> "<account> <region> <owner>"
//   ipam_subnets (pool cidr) -> "<cursor> <in use>"
#pragma once

#include <cstdint>
#include <string_view>

#include "common/ids.h"
#include "common/status.h"
#include "store/store.h"
#include "vpc/default_vpc.h"

namespace paddock::vpc {

// The next free address of `subnet`, recorded as held by `owner`. When the subnet is full, fails
// with kResourceExhausted.
StatusOr<uint32_t> AllocateIp(store::WriteTxn& txn, const Scope& scope, const Subnet& subnet, std::string_view owner);

// Frees `ip`. Releasing an address that is not held is not an error (a retried release).
Status ReleaseIp(store::WriteTxn& txn, const Scope& scope, const Subnet& subnet, uint32_t ip);

// How many addresses of `subnet`'s pool are free.
StatusOr<uint32_t> AvailableIps(store::ReadTxn& txn, const Scope& scope, const Subnet& subnet);

}  // namespace paddock::vpc
