// agent/vpc_networks: the VPCs an agent's awsvpc tasks are attached to on this host — their VPC
// router namespaces (agent/net), the security-group policies enforced there, and the task
// metadata endpoint and the DNS server (agent/dns_service.h) served inside each.
//
//   VpcNetworks vpcs(control, {.agent_id = id, .network = options, .metadata = &service});
//   ASSIGN_OR_RETURN(VpcNetworks::Attachment a, vpcs.Attach(spec, task_id, ip, 20, gateway));
//   ... containers join a.network.netns_path; their metadata URIs are on a.metadata_network ...
//   vpcs.Refresh();                                  // every pass of the agent's loop
//   RETURN_IF_ERROR(vpcs.Detach(spec.scope, task_id, a.network));
//
// A task's VPC is its account's default VPC in its region (the task's scope); the policy comes
// from Control::NetworkPolicy and names the VPC, the node identity from Control::NetworkIdentity.
// Attach fetches the policy first (it lists the new task's address) and makes the task's network
// with it in force, so the task is never reachable without its rules. Refresh fetches the policy
// of every VPC that has tasks of this agent and applies it when it changed (agent/net makes that
// cheap when it did not), so that rule changes reach running tasks within one pass; it also
// removes, once they have had no task of this agent for `linger`, the VPC namespaces no agent
// uses any more (agent/net checks under the host-wide lock).
//
// Thread safety: thread-safe. Attach, Readopt and Detach for one task must not run concurrently.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "agent/control.h"
#include "agent/dns_service.h"
#include "agent/metadata/metadata.h"
#include "agent/net/net.h"
#include "common/ids.h"
#include "common/status.h"

namespace paddock::agent {

class VpcNetworks {
 public:
  struct Options {
    std::string agent_id;
    net::NetworkOptions network;
    // Null: no metadata endpoint in the VPC namespaces.
    metadata::MetadataService* metadata = nullptr;
    // Null: no DNS server in the VPC namespaces (tasks keep the host's nameservers).
    DnsService* dns = nullptr;
    // How long a VPC namespace stays after this agent's last task in it went: a VPC whose tasks
    // come and go (a service being replaced, a test suite) keeps its namespace instead of paying
    // for a new one each time.
    std::chrono::milliseconds linger = std::chrono::seconds(30);
  };

  struct Attachment {
    net::TaskNetwork network;
    // The metadata endpoint's network to register the task's containers with
    // (MetadataService::RegisterContainer); empty when not served.
    std::string metadata_network;
    // The VPC's DNS server serves the task's namespace: its resolv.conf may name net::kDnsAddress.
    bool dns = false;
    std::string vpc_id;  // the task's VPC ("vpc-…"), for the metadata endpoint's VPCID
  };

  VpcNetworks(Control& control, Options options);
  ~VpcNetworks();

  // For a task just assigned: makes its VPC's namespace if needed and applies the VPC's policy
  // now (net::PrepareVpcNetwork), while the task's driver resolves its images, so that Attach
  // usually finds both done. Failures are left for Attach to meet (and report).
  void Prepare(const Scope& scope);

  // Makes the network of a task about to start in its VPC (see above) and serves the metadata
  // endpoint there. Errors: Control::NetworkPolicy's (the control plane unreachable), agent/net's
  // CreateTaskNetwork's; nothing of the task is left then.
  StatusOr<Attachment> Attach(const protocol::LaunchSpec& spec, std::string_view task_id, uint32_t ip,
                              int prefix_length, uint32_t gateway);

  // A running task an earlier agent attached: counted, its policy refreshed and the metadata
  // endpoint served again, its network left as it is. On an error (the policy could not be
  // fetched) the task is still counted, and Refresh keeps trying to enforce its VPC's policy.
  StatusOr<Attachment> Readopt(const protocol::LaunchSpec& spec, std::string_view task_id, uint32_t ip);

  // Deletes the task's network (`network`, else found by its id) and stops counting it. Idempotent.
  // A task of a VPC this agent never attached a task in (one it found stopping when it started, as
  // `paddock down` does) makes it track that VPC's namespace from then on, so that it goes with the
  // agent's last task there like any other (after the linger, or at Stop).
  Status Detach(const Scope& scope, std::string_view task_id, const std::optional<net::TaskNetwork>& network);

  // One pass; see above. Failures are logged (once per distinct failure) and retried next pass.
  void Refresh();

  // Removes, at once, the VPC namespaces this agent has no task in any more and no other agent
  // uses (the agent is stopping: no pass will come to remove them after their linger).
  void RemoveUnused();

  // The VPC namespaces this agent has tasks in now (for tests).
  std::set<std::string> Namespaces();

 private:
  struct Vpc {
    Scope scope;
    std::optional<net::VpcNetwork> network;  // known once a policy named the VPC
    std::set<std::string> tasks;             // task ids attached
    // The namespace (netns::NamespaceId) this agent serves the metadata endpoint in (one
    // ServeNetwork, kept while the entry lingers: tasks coming and going do not restart it); 0: none.
    uint64_t served_ns = 0;
    uint64_t dns_ns = 0;  // the same for the DNS server (DnsService::ServeNetwork)
    std::optional<std::chrono::steady_clock::time_point> empty_since;
    std::string last_error;  // logged once
  };

  // The policy of `scope`'s VPC and the VPC's names, fetched now.
  StatusOr<std::pair<net::FetchedPolicy, net::VpcNetwork>> Fetch(const Scope& scope);
  // Detach's tracking of a VPC it did not know (see there).
  void TrackUnattached(const Scope& scope);
  // Serves the metadata endpoint and the DNS server in `vpc` (of `scope`) unless they are served
  // there already; the attachment of `tn` says which are (failures are logged).
  Attachment Serve(const Scope& scope, const net::VpcNetwork& vpc, net::TaskNetwork tn, std::string_view task_id);
  // One of them: `serve` unless the entry's `served` is namespace `id` already, then `release`
  // when another task served it meanwhile. Whether it is served.
  bool ServeOnce(const Scope& scope, uint64_t Vpc::*served, uint64_t id, const std::function<Status()>& serve,
                 const std::function<void()>& release);
  // Stops serving them for an entry that is going (REQUIRES: both ids taken out of the entry).
  void Unserve(const net::VpcNetwork& vpc, uint64_t served_ns, uint64_t dns_ns);
  static std::string KeyOf(const Scope& scope);

  Control& control_;
  const Options options_;

  std::mutex mu_;
  std::map<std::string, Vpc> vpcs_;  // GUARDED_BY(mu_), by KeyOf(scope)
};

}  // namespace paddock::agent
