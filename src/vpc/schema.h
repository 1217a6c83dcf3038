// The store tables vpc/ owns (store/schema.h says how modules declare them).
#pragma once

#include "store/schema.h"

namespace paddock::vpc {

inline constexpr store::TableDef kTables[] = {
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
    // vpc/: the overlay's VXLAN network identifiers (vpc/ipam.h, issue 16 §3)
    {"vpc_vnis", 10},     // (account, region) -> "<vni>"   the VPC's, given with its first address
    {"vpc_vni_next", 10},  // () -> "<vni>"   the next one to give: store-wide, never reused
};
// Versions up to 9 are the store-wide versions from before per-module versions. 10: the vnis.
inline constexpr store::ModuleSchema kSchema{"vpc", 10, kTables};

}  // namespace paddock::vpc
