// The built-in default VPC of every (account, region), as AWS creates one for each new account:
// 172.31.0.0/16 with one /20 subnet per availability zone (a, b, c) and a default security group.
// It is computed, not stored: the same scope always gets the same ids.
//
//   DefaultVpc vpc = DefaultVpcFor(scope);
//   const Subnet* s = vpc.FindSubnet("subnet-0a1b...");
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/ids.h"

namespace paddock::vpc {

struct Subnet {
  std::string id;          // "subnet-" + 17 hex digits
  std::string arn;         // arn:aws:ec2:{region}:{account}:subnet/{id}
  std::string az;          // "us-east-1a"
  std::string az_id;       // "use1-az1"
  uint32_t network = 0;    // 172.31.0.0 as a host-order integer
  int prefix_length = 20;

  std::string Cidr() const;
  // AWS reserves the first four addresses and the last one of every subnet.
  uint32_t FirstUsable() const { return network + 4; }
  uint32_t LastUsable() const { return network + (1u << (32 - prefix_length)) - 2; }
  uint32_t UsableCount() const { return LastUsable() - FirstUsable() + 1; }
  bool Contains(uint32_t ip) const { return (ip >> (32 - prefix_length)) == (network >> (32 - prefix_length)); }
};

struct DefaultVpc {
  std::string vpc_id;             // "vpc-" + 17 hex digits
  std::string cidr = "172.31.0.0/16";
  std::string dhcp_options_id;    // "dopt-" + 17 hex digits
  std::string security_group_id;  // "sg-" + 17 hex digits
  std::string security_group_arn;
  std::vector<Subnet> subnets;    // zones a, b, c

  const Subnet* FindSubnet(std::string_view id) const;
};

DefaultVpc DefaultVpcFor(const Scope& scope);

// A stable EC2-style id ("<prefix>-0" + 16 hex digits) for `label` in the scope: the same inputs
// always give the same id, and different scopes different ids.
std::string StableId(std::string_view prefix, const Scope& scope, std::string_view label);

std::string Ipv4ToString(uint32_t ip);
// Parses dotted-quad IPv4; false on anything else.
bool ParseIpv4(std::string_view text, uint32_t* ip);
// Whether `ip` is a unicast address another host can send to: not 0/8 ("this network"), loopback,
// link-local, multicast or reserved (240/4, the broadcast address). An overlay address must be
// (issue 16 §3: RegisterAgent's overlayAddress, [agent] overlay_address).
bool IsHostAddressOtherHostsReach(uint32_t ip);

}  // namespace paddock::vpc
