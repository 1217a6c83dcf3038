// ecs/instance/agent_identity: who may speak for a container instance's agent
// (docs/agent-protocol.md, "Identity").
//
// Every container instance has one of three agent bindings:
//   kNone       registered through ECS's public RegisterContainerInstance: no Paddock agent runs
//               it, and nobody may poll its assignments or report its tasks.
//   kInProcess  an [[ec2_instance]] of the server itself: its agent runs inside the server and
//               reports in process; no credential exists, so nothing over HTTP speaks for it.
//   kRemote     registered by `paddock agent` (PaddockAgentV20261130.RegisterAgent): it holds
//               one agent credential, an access key of its own (ASIA…), which is the only
//               identity its assignments, reports and re-registrations are accepted from.
//
// The binding and the credential are part of the instance's records: issued in the
// registration's transaction, revoked in the deregistration's, reaped with the account.
//
//   AgentIdentities agents(store);
//   ASSIGN_OR_RETURN(AgentCredential c, agents.Issue(txn, scope, "prod", id));   // in Register's txn
//   ASSIGN_OR_RETURN(auto who, agents.Lookup("ASIA…"));                            // the front's resolver
//
// Records (ecs/schema.h):
//   container_instance_agents (account, region, cluster, id) -> {"kind", "accessKeyId"?,
//                             "overlayAddress"?}   the last an agent's host's overlay address
//                             (issue 16 §3), given by the agent at each RegisterAgent: never
//                             by ECS's public API, so no tenant names where the overlay sends
//   agent_credentials         (access key id) -> {"account", "region", "cluster", "id", "secret"}
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/ids.h"
#include "common/status.h"
#include "store/store.h"

namespace paddock::ecs::instance {

enum class AgentKind { kNone, kInProcess, kRemote };

// Every agent credential's access key id starts with this (AWS's prefix for temporary, role
// session credentials): the front's resolver sends these to AgentIdentities::Lookup.
inline constexpr std::string_view kAgentKeyPrefix = "ASIA";

struct AgentCredential {
  std::string access_key_id;
  std::string secret_access_key;
};

// What an agent credential authenticates as.
struct AgentPrincipal {
  Scope scope;
  std::string cluster;
  std::string id;            // the container instance's id
  std::string instance_arn;  // its ARN: the agent id its tasks are assigned to
  std::string secret;
};

// The principal ARN an instance's agent is reported as in error messages, like an EC2 instance
// role's session: "arn:aws:sts::123456789012:assumed-role/paddock-container-instance/<id>".
std::string AgentPrincipalArn(const Scope& scope, std::string_view instance_id);

// Who runs an instance's agent, and for a remote agent its host's overlay address (issue 16 §3;
// empty when it has none).
struct AgentBinding {
  AgentKind kind = AgentKind::kNone;
  std::string overlay_address;
};

class AgentIdentities {
 public:
  explicit AgentIdentities(store::Store& store) : store_(store) {}

  // The binding of instance `id` (kNone when it has none).
  StatusOr<AgentKind> KindOf(store::ReadTxn& txn, const Scope& scope, std::string_view cluster, std::string_view id);
  // Binds the instance to the server's own in-process agent.
  Status BindInProcess(store::WriteTxn& txn, const Scope& scope, std::string_view cluster, std::string_view id);
  // Binds the instance to a remote agent and makes its credential, replacing (revoking) any
  // earlier one.
  StatusOr<AgentCredential> Issue(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                  std::string_view id);
  // Records the overlay address (dotted quad; empty: none) of the remote agent's host on its
  // binding. kFailedPrecondition when the instance has no remote binding.
  Status SetOverlayAddress(store::WriteTxn& txn, const Scope& scope, std::string_view cluster, std::string_view id,
                           std::string_view address);
  // Who runs the instance's agent, and for a remote agent its host's overlay address (empty when
  // it has none): one read of the binding.
  StatusOr<AgentBinding> BindingOf(store::ReadTxn& txn, const Scope& scope, std::string_view cluster, std::string_view id);
  // Removes the binding and the credential: from the commit on, the credential authenticates
  // nothing. No-op for an unbound instance.
  Status Revoke(store::WriteTxn& txn, const Scope& scope, std::string_view cluster, std::string_view id);
  // The instance `access_key_id` speaks for, or nullopt (unknown or revoked). One store read, no
  // cache: a revocation holds from its commit on, in every process on the store.
  StatusOr<std::optional<AgentPrincipal>> Lookup(std::string_view access_key_id);
  // Removes every binding and credential of the account's instances.
  Status ReapAccount(const AccountId& account);

 private:
  store::Store& store_;
};

}  // namespace paddock::ecs::instance
