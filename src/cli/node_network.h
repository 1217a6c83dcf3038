// cli/node_network: the node's network identity, which its agents name their VPC namespaces by.
//
//   ASSIGN_OR_RETURN(std::string id, NetworkIdentity(store));         // Node::Open
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "store/store.h"

namespace paddock::cli {

// The node's network identity (agent::Control::NetworkIdentity): 16 random hex digits made once
// per store and kept in its `meta` table, so that a restarted server, and servers sharing a
// store, keep their agents' VPC namespaces, and two servers with their own stores never share one.
StatusOr<std::string> NetworkIdentity(store::Store& store);

// The value kept under `name` in the store's `meta` table, made by `make` (in the same
// transaction) the first time it is asked for.
StatusOr<std::string> KeptMetaValue(store::Store& store, std::string_view name,
                                    const std::function<std::string()>& make);

}  // namespace paddock::cli
