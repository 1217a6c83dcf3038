// vpc/policy: the network policy of one VPC as the node agents enforce it — which task addresses
// are in which security groups, and each group's rules. Pure data: the vpc owner computes it from
// its records (security groups, and the groups recorded with each address it hands out), the
// agent compiles it into nftables rules inside the VPC's network (agent/net).
//
//   ASSIGN_OR_RETURN(VpcPolicy p, groups.PolicyFor(scope));       // vpc/ (the owner)
//   ... Control::NetworkPolicy hands it to the agent, locally or over the agent protocol ...
//   RETURN_IF_ERROR(net::ApplyVpcPolicy(options, vpc_network, p));  // agent/net
//
// Semantics are EC2's: a packet between two tasks passes when the sender's groups allow it out
// (egress) and the receiver's groups allow it in (ingress); rules only allow, and a task with
// several groups gets the union of their rules. Connections are tracked: a reply is always allowed.
// A rule's source (ingress) or destination (egress) is an IPv4 CIDR or another group of the same
// VPC — meaning the addresses of that group's members, as `members` lists them.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <vector>

namespace paddock::vpc {

// One IpPermission, flattened: a protocol, a port range, and where it applies.
struct PolicyRule {
  // "-1" (all), "tcp", "udp", "icmp", or an IP protocol number as text ("47").
  std::string protocol = "-1";
  // tcp/udp: the port range; icmp: from_port is the ICMP type and to_port the code (-1: any).
  // -1/-1 for "-1" and for protocols without ports.
  int32_t from_port = -1;
  int32_t to_port = -1;
  std::vector<std::string> cidrs;   // IPv4 CIDRs ("0.0.0.0/0", "172.31.0.0/16")
  std::vector<std::string> groups;  // group ids of the same VPC ("sg-0a1b…")

  friend bool operator==(const PolicyRule&, const PolicyRule&) = default;
};

struct PolicyGroup {
  std::string group_id;
  std::vector<PolicyRule> ingress;
  std::vector<PolicyRule> egress;

  friend bool operator==(const PolicyGroup&, const PolicyGroup&) = default;
};

// One task interface (ENI) of the VPC: its address and its groups (at least one).
struct PolicyMember {
  std::string ip;  // dotted quad
  std::vector<std::string> groups;
  // The overlay (underlay) address of the host whose agent runs the interface's task, dotted quad
  // (issue 16 §3: the agents reach another host's tasks of the VPC through a VXLAN overlay to it);
  // empty when its host has none (a one-host node) or it is not placed yet.
  std::string host = {};

  friend bool operator==(const PolicyMember&, const PolicyMember&) = default;
};

struct VpcPolicy {
  std::string vpc_id;
  // Changes whenever anything below changes (a digest of the content); equal versions mean equal
  // policies, so an agent re-applies only when it differs.
  std::string version;
  std::vector<PolicyGroup> groups;    // sorted by group_id
  std::vector<PolicyMember> members;  // sorted by ip
  // The VPC's VXLAN network identifier (1..2^24-1), unique among the store's VPCs; 0: none yet
  // (no overlay for it).
  uint32_t vni = 0;

  friend bool operator==(const VpcPolicy&, const VpcPolicy&) = default;
};

}  // namespace paddock::vpc
