// IP address management for the default VPC's subnets, in the store, inside the caller's
// transaction: the address, its security groups, the placement and the task record commit
// together or not at all.
//
//   ASSIGN_OR_RETURN(uint32_t ip, AllocateIp(txn, scope, subnet, task_arn, {"sg-0123…"}));
//   ...
//   RETURN_IF_ERROR(ReleaseIp(txn, scope, subnet, ip));
//
// Each VPC has its own pools: every account's default VPC is 172.31.0.0/16 (as on AWS), and the
// same address may be held in two VPCs at once, as their networks are separate (the agent gives
// each VPC its own network; docs/contracts/default-vpc.md). Within a subnet of one VPC no address
// is ever held by two owners, across restarts too.
//
// Allocation is next-fit from the last address handed out in that subnet of that VPC, so a
// released address is not handed out again until the subnet has wrapped around: a late packet
// for a stopped task does not reach its successor. A VPC's first cursor is a hash of the VPC and
// subnet, so VPCs start in different places. Among the VPC's free addresses, one that no other
// VPC of this store holds is preferred (the agent routes each task's /32 from the node into its
// VPC, which works only for addresses unique on the node); when there is none, any free address of
// the VPC is taken, and that task is not reachable from the node by its address.
//
// The overlay (issue 16 §3). Each address records the overlay address of the host whose agent
// runs its owner (`host`, empty on a one-host node), so that every host's agent routes the VPC's
// addresses on other hosts through the VPC's VXLAN network (agent/net). A VPC gets its VXLAN
// network identifier (vni) with its first address: the next of a store-wide counter, never given
// twice, so no two VPCs of the store share one (a hash of the VPC id could collide).
//
// Records (vpc/schema.h; keys in vpc/internal/tables.h):
//   vpc_addresses          (account, region, subnet id, ip) -> "<owner> <group>,<group>…[ <host>]"
//   vpc_vnis               (account, region) -> "<vni>"
//   vpc_vni_next           () -> "<vni>"
//   vpc_address_pools      (account, region, subnet id) -> "<cursor> <in use>"
//   node_addresses         (ip, account, region) -> ""                  which VPCs hold an address
//   security_group_members (account, region, group id, ip) -> owner     (with vpc/security_groups)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/ids.h"
#include "common/status.h"
#include "store/store.h"
#include "vpc/default_vpc.h"

namespace paddock::vpc {

// The next free address of `subnet` in the scope's VPC, recorded as held by `owner` with the
// security groups `groups` (ids of the scope's VPC; empty: its default group, as an interface
// without groups gets on AWS; duplicates are dropped), on the host whose overlay address is
// `host` (dotted quad; empty: none). Gives the VPC its vni when it has none yet. A group that does not exist fails with
// vpc::Error::kGroupNotFound and allocates nothing. A full subnet fails with kResourceExhausted.
// The change alters the VPC's policy: the caller tells SecurityGroups::NotifyPolicyChanged after
// its commit.
StatusOr<uint32_t> AllocateIp(store::WriteTxn& txn, const Scope& scope, const Subnet& subnet, std::string_view owner,
                              const std::vector<std::string>& groups, std::string_view host = {});

// The scope's VPC's vni; 0 when it has none yet (no address was ever allocated in it).
StatusOr<uint32_t> VniOf(store::ReadTxn& txn, const Scope& scope);

// Frees `ip` (and its group memberships). Releasing an address that is not held is not an error
// (a retried release).
Status ReleaseIp(store::WriteTxn& txn, const Scope& scope, const Subnet& subnet, uint32_t ip);

// How many addresses of `subnet` are free in the scope's VPC.
StatusOr<uint32_t> AvailableIps(store::ReadTxn& txn, const Scope& scope, const Subnet& subnet);

// One interface of a VPC: an address and its groups.
struct HeldAddress {
  uint32_t ip = 0;
  std::string owner;
  std::vector<std::string> groups;
  std::string host = {};  // the overlay address of its owner's host; empty: none
};

// Every address held in the scope's VPC, by subnet then address.
StatusOr<std::vector<HeldAddress>> HeldAddresses(store::ReadTxn& txn, const Scope& scope);

// Moves the address records of a state directory written before schema 7 (one node-wide pool per
// subnet CIDR, tables `ipam` and `ipam_subnets`) into each VPC's pools, with the VPC's default
// group (the only group a task could have then). Each VPC's cursor starts where the node-wide
// one was. Idempotent and cheap when there is nothing to move: run it at every start, before
// serving. One transaction.
Status UpgradeLegacyIpam(store::Store& store);

}  // namespace paddock::vpc
