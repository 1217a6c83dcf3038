// cli/node_network: what a node keeps of itself in its store's `meta` table — its network identity,
// which its agents name their VPC namespaces by, and the check that every server on a store seals
// with one node key.
//
//   ASSIGN_OR_RETURN(std::string id, NetworkIdentity(store));         // Node::Open
//   RETURN_IF_ERROR(CheckNodeKeyOfStore(store, keys));                // Node::Open
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "kms/keyring.h"
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

// Issue 16 §2: the servers of one store must seal with one node key (kms/keyring.h), or each reads
// only what it sealed itself. The first server keeps a MAC under its key in the store; a server
// whose key does not make that MAC (under any of its versions) is refused, before it serves, with
// kFailedPrecondition naming the key file to copy. Idempotent; one transaction.
Status CheckNodeKeyOfStore(store::Store& store, const kms::KeyRing& keys);

}  // namespace paddock::cli
