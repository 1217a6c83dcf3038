// The vpc module's tables and key layouts, shared by its owners (ipam.cc, security_groups.cc).
// Nothing outside src/vpc/ includes this: other modules go through vpc/ipam.h and
// vpc/security_groups.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/ids.h"
#include "common/status.h"
#include "store/key.h"
#include "store/store.h"

namespace paddock::vpc::internal {

// Addresses (vpc/ipam.h).
inline constexpr std::string_view kAddresses = "vpc_addresses";     // (account, region, subnet, ip)
inline constexpr std::string_view kPools = "vpc_address_pools";     // (account, region, subnet)
inline constexpr std::string_view kNodeAddresses = "node_addresses";  // (ip, account, region)
inline constexpr std::string_view kLegacyAddresses = "ipam";        // (pool cidr, ip), before schema 7
inline constexpr std::string_view kLegacyPools = "ipam_subnets";    // (pool cidr), before schema 7
inline constexpr std::string_view kVnis = "vpc_vnis";               // (account, region)
inline constexpr std::string_view kVniNext = "vpc_vni_next";        // ()

// Security groups (vpc/security_groups.h).
inline constexpr std::string_view kGroups = "security_groups";         // (account, region, group)
inline constexpr std::string_view kGroupNames = "security_group_names";  // (account, region, vpc, name)
inline constexpr std::string_view kRuleIndex = "security_group_rules";   // (account, region, rule)
inline constexpr std::string_view kGroupRefs = "security_group_refs";    // (account, region, referenced, referencing, rule)
inline constexpr std::string_view kMembers = "security_group_members";   // (account, region, group, ip)

inline store::Key ScopeKey(const Scope& scope) { return store::Key().Str(scope.account.str()).Str(scope.region.str()); }

inline std::string MemberKey(const Scope& scope, std::string_view group_id, uint32_t ip) {
  return ScopeKey(scope).Str(group_id).U64(ip).Done();
}

// Whether `group_id` names a security group of the scope's VPC (its default group always does).
// Defined in security_groups.cc.
StatusOr<bool> GroupExists(store::ReadTxn& txn, const Scope& scope, std::string_view group_id);

}  // namespace paddock::vpc::internal
