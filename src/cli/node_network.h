// cli/node_network: what the node tells its agents about networks — its network identity and,
// until vpc/'s security groups land (issue 9, branch i9-sg), a stand-in for their policies.
//
//   ASSIGN_OR_RETURN(std::string id, NetworkIdentity(store));         // Node::Open
//   control.SetNetworkPolicyProvider([&](const Scope& s) { return DefaultGroupPolicy(store, s); });
#pragma once

#include <string>

#include "common/ids.h"
#include "common/status.h"
#include "store/store.h"
#include "vpc/policy.h"

namespace paddock::cli {

// The node's network identity (agent::Control::NetworkIdentity): 16 random hex digits made once
// per store and kept in its `meta` table, so that a restarted server, and servers sharing a
// store, keep their agents' VPC namespaces, and two servers with their own stores never share one.
StatusOr<std::string> NetworkIdentity(store::Store& store);

// STAND-IN, until vpc/'s SecurityGroups::PolicyFor: the policy of `scope`'s default VPC with
// every address the VPC has handed out (vpc/ipam's records of the scope) in the VPC's default
// security group, whose rules are AWS's defaults: inbound from the group's members, all outbound.
StatusOr<vpc::VpcPolicy> DefaultGroupPolicy(store::Store& store, const Scope& scope);

}  // namespace paddock::cli
