// A Paddock node: the store, the owners, the API front and the HTTP server, wired together.
// `paddock server` and `paddock up` run one; tests start one in-process on port 0.
//
//   ASSIGN_OR_RETURN(auto node, Node::Open(config));
//   ASSIGN_OR_RETURN(uint16_t port, node->Start());
//   node->Stop();   // graceful: in-flight requests finish, the store closes cleanly
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/config.h"
#include "console/change_feed.h"
#include "console/console_service.h"
#include "cli/host_checks.h"
#include "cli/node_owner.h"
#include "common/status.h"
#include "http/message.h"
#include "iam/accounts.h"

namespace paddock::store { class Store; }
namespace paddock::ecs::service { class Services; }
namespace paddock::ecs::task { class Tasks; }
namespace paddock::ecs::drain { class DrainHolds; }

namespace paddock::cli {

// The control plane's store as `config` names it (--store: PostgreSQL; else the state directory's
// SQLite file paddock.db), opened and migrated to this build's modules (cli/schemas.h).
StatusOr<std::unique_ptr<store::Store>> OpenNodeStore(const ServerConfig& config);

class Node {
 public:
  // Opens (creating) the state directory and its store; does not listen yet.
  static StatusOr<std::unique_ptr<Node>> Open(const ServerConfig& config);
  ~Node();

  StatusOr<uint16_t> Start();
  void Stop();

  iam::Accounts& accounts();
  // `paddock up`'s account and key (cli/node_owner.h EnsureBootstrapAccount), made or found on the
  // first call and kept. `paddock up` calls it before Start, so in-process EC2 instances without
  // an `account` key find their owner at once.
  StatusOr<BootstrapIdentity> BootstrapAccount();
  // The reapers `DeleteAccount` must run: every owner of account-scoped records.
  std::vector<iam::AccountReaper*> reapers();
  // What `paddock admin delete-account` drives (cli/account_deletion.h).
  store::Store& store();
  ecs::service::Services& services();
  ecs::task::Tasks& tasks();
  // Issue 14: the edges' drain holds (ecs/drain/drain_holds.h), for an edge run in this process
  // (Put on its heartbeat, Release once a task is drained); every agent of the node waits on them.
  ecs::drain::DrainHolds& drain_holds();
  // A one-layer image from the tree at `rootfs` into the node's image store, as `reference`
  // (ImageStore::ImportRootfs): what `paddock up` gives the identity sidecar.
  Status ImportRootfs(const std::string& rootfs, const std::string& reference);
  // The metadata endpoint's door to the deploy controller (MetadataService::SetControllerDoor);
  // nothing when the node serves no metadata endpoint (no container runtime).
  void SetControllerDoor(std::function<http::Response(const http::Request&)> door);
  // The actions the ECS adapter implements.
  std::vector<std::string> ImplementedEcsActions() const;

  // ---- Issue 17: the console (console/) ----
  // What the console shows beyond the AWS APIs: `paddock up` hands it its edge, controller and
  // images once they run. Thread-safe.
  void SetConsoleParts(console::NodeParts parts);
  // Which accounts' resources changed, for the console's live views: the node publishes API writes,
  // task and service changes itself; `paddock up` adds its deploy controller's ticks.
  console::ChangeFeed& change_feed();
  // Called (after the commit) whenever a task of the scope was launched, asked to stop or changed
  // by its agent's report, besides the console's feed (Tasks::SetTaskListener's rules): the
  // in-process edge. Thread-safe.
  void SetTaskListener(std::function<void(const Scope&)> listener);

  // ---- Issue 10: a host that cannot run containers; stopping every task ----
  // What the host checks (cli/host_checks.h) found when Start started the agents, with the
  // container runtime's own failure appended when it could not start although they passed. When
  // containers cannot run, the Fargate agent is agent/no_runtime_agent.h's stand-in: every task
  // placed on it stops at once, its stoppedReason saying what is missing. Empty before Start.
  const std::vector<HostCheck>& host_checks() const;
  // Stops the service scheduler, the reaper and the in-process instances' registration loop
  // (idempotent; Stop finishes the rest): from now on no task is launched or replaced and the
  // node's set of agents is fixed, so that what is stopped stays stopped (cli/stop_tasks.h).
  void Quiesce();
  // Whether this process can get the tasks of agent `agent_id` confirmed STOPPED: its own in-process
  // agents that run containers, and — while it serves the API — `paddock agent`s.
  bool CanConfirm(std::string_view agent_id) const;
  // `paddock down` with no server running: starts, without the API or the scheduler, this node's
  // agents among `agent_ids` — the Fargate agent and in-process container instances (their ARNs);
  // remote instances' ids are skipped — so that they re-adopt their tasks, stop those marked
  // STOPPED and confirm it. REQUIRES: not started.
  Status StartAgentsOnly(const std::vector<std::string>& agent_ids);

  class Impl;

 private:
  explicit Node(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Creates an account and key on first start (Node::BootstrapAccount) and writes
// .paddock/credentials and .paddock/config (one profile, with the endpoint URL); with
// `update_home` also adds the profile to the user's AWS files ($AWS_SHARED_CREDENTIALS_FILE /
// $AWS_CONFIG_FILE, else ~/.aws), so `--profile <profile>` works with no set-up. The profile is
// "paddock" unless those files hold another Paddock's "paddock" profile, which is never
// overwritten: then it is named after the state directory (cli/aws_profile.h), and a note says so.
struct BootstrapResult {
  std::string account;
  std::string access_key_id;
  std::string profile;
  std::string credentials_path;
  std::string config_path;
  std::vector<std::string> notes;
};
StatusOr<BootstrapResult> Bootstrap(Node& node, const ServerConfig& config, const std::string& endpoint,
                                    bool update_home);

}  // namespace paddock::cli
