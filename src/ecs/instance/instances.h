// ecs/instance: the one owner of container instances (docs/contracts/container-instance.md).
//
//   ContainerInstances instances(store, clusters);
//   ASSIGN_OR_RETURN(std::string ci, instances.Register(scope, request, now));   // ContainerInstance JSON
//
// Only this module writes container-instance records, their attributes, their tags, their
// resource reservations and the per-cluster count. The task owner places tasks through the seam
// at the bottom (Candidates / Reserve / MarkRunning / Release), each inside ITS OWN write
// transaction, so a launch and the resources it takes commit together or not at all.
//
// Records (ecs/schema.h):
//   container_instances        (account, region, cluster, id) -> the ContainerInstance JSON as
//                              described, without agentConnected, tags and healthStatus (computed)
//   container_instance_counts  (account, region, cluster) -> "<ACTIVE + DRAINING instances>"
//   container_instance_tasks   (account, region, cluster, id, task id) -> reservation JSON
//                              {cpu, memory, ports, udpPorts, state: PENDING|RUNNING}
//   container_instance_inactive(account, region, deregisteredAt ms, cluster, id) -> ""  ReapInactive
//   container_instance_ec2     (account, region, ec2InstanceId, cluster, id) -> {privateIp}: EC2's
//                              DescribeInstances (ec2_instances.cc), until the instance is reaped
//   container_instance_heartbeats (account, region, cluster, id) -> "<ms>": the agent's last call as
//                              some server recorded it, so that every server on one database
//                              (issue 16) sees an agent connected to any of them
// Heartbeats are kept in memory, and written to the store at most every quarter of the agent
// timeout per instance: a server reads agentConnected from the later of its own and the stored
// one, so another server (or this one restarted) may see an agent disconnected up to a quarter
// of the timeout early, never late.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "ec2/instances.h"
#include "ecs/cluster/clusters.h"
#include "ecs/common/tags.h"
#include "ecs/instance/agent_identity.h"
#include "ecs/instance/query.h"
#include "store/store.h"

namespace paddock::ecs::instance {

// An agent is connected while its last call (registration or Heartbeat) is at most this old.
inline constexpr std::chrono::seconds kAgentTimeout{60};
// A container instance whose agent's last heartbeat is older than this is lost: the scheduler's
// leader records its tasks STOPPED and releases their addresses (sched/scheduler.h,
// SweepLostHosts). Five minutes: an agent restart, an upgrade, a network blip or a server failover
// (lease 10 s) is over well before, so they never cost a workload; a dead host's service tasks are
// replaced within about that much (docs/contracts/task.md, "Losing a host").
inline constexpr std::chrono::seconds kHostLost{300};
// How long a remote agent that cannot reach the control plane keeps its tasks' containers: half of
// what is left of `host_lost` once a stored heartbeat's staleness (a quarter of `agent_timeout`:
// another server may see the agent that much early) is taken off. The agent counts it from when it
// SENT its last answered poll, which the control plane recorded as a heartbeat no earlier; so its
// containers are gone at least this much before any server can find the instance lost and hand
// the addresses out again — time for the teardown (a container's stopTimeout is at most 120 s;
// 142.5 s with the defaults) and for clock skew between servers.
inline std::chrono::milliseconds AgentFenceTime(std::chrono::milliseconds host_lost,
                                                std::chrono::milliseconds agent_timeout) {
  return (host_lost - agent_timeout / 4) / 2;
}
// INACTIVE (deregistered) instances stay describable this long, then ReapInactive removes them.
inline constexpr std::chrono::hours kInactiveRetention{1};
// Custom attributes (names not starting with "ecs." or "com.amazonaws.ecs.") per instance.
inline constexpr size_t kMaxCustomAttributes = 10;

// A container instance reference as the caller wrote it: an id, or an ARN (whose cluster, when it
// names one, must be the request's cluster).
struct InstanceRef {
  std::string text;                    // as given, for failures[]
  std::optional<std::string> cluster;  // from the ARN
  std::string id;
};

// Parses an id or a container-instance ARN of the caller's scope (another account's ARN is
// AccessDeniedException, another region's or another resource's InvalidParameterException).
StatusOr<InstanceRef> ParseInstanceRef(std::string_view text, const Scope& caller, std::string_view action,
                                       std::string_view caller_arn);

std::string ContainerInstanceArn(const Scope& scope, std::string_view cluster, std::string_view id);

struct Attribute {
  std::string name;
  std::optional<std::string> value;
  bool operator==(const Attribute&) const = default;
};
// AWS's rules: name 1-128 of letters, digits, - _ / \ .; value 1-128 of those, @ : and spaces, not
// starting or ending with a space. InvalidParameterException otherwise.
Status ValidateAttribute(const Attribute& a);

struct RegisterRequest {
  std::string cluster;                                   // a name
  std::optional<std::string> identity_document;          // EC2 instance identity document (JSON)
  std::optional<boost::json::array> total_resources;     // Resource list
  std::optional<boost::json::object> version_info;       // VersionInfo
  std::optional<InstanceRef> container_instance;         // re-registration
  std::vector<Attribute> attributes;
  Tags tags;
  // Who runs the instance's agent (agent_identity.h). kNone: ECS's public API. kInProcess: the
  // server's own [[ec2_instance]]. kRemote: `paddock agent` (RegisterAgent), whose new
  // registration gets a credential of its own.
  AgentKind agent = AgentKind::kNone;
  // The caller's Principal::agent_of: set when an agent credential signed the request.
  std::string caller_agent;
  // kRemote only: the overlay address of the agent's host (RegisterAgent's overlayAddress; issue
  // 16 §3), recorded on its binding at every registration; empty: none.
  std::string overlay_address = {};
};

struct Include {
  bool tags = false;
  bool health = false;  // CONTAINER_INSTANCE_HEALTH
};

struct Failure {
  std::string arn;
  std::string reason;
  std::string detail;
};

struct DescribeResult {
  std::vector<std::string> instances;  // serialized ContainerInstance JSON
  std::vector<Failure> failures;
};

struct ListQuery {
  std::string cluster;
  std::optional<std::string> status;  // ACTIVE | DRAINING | REGISTERING | DEREGISTERING | REGISTRATION_FAILED
  std::optional<std::string> filter;  // cluster query language
  size_t limit = 100;
  std::string after;
};

struct Page {
  std::vector<std::string> items;
  std::string next;  // empty when done
};

// One attribute of PutAttributes / DeleteAttributes, and of ListAttributes' answer.
struct TargetedAttribute {
  Attribute attribute;
  InstanceRef target;
};
struct ListedAttribute {
  Attribute attribute;
  std::string target_arn;
};

struct AttributeQuery {
  std::string cluster;
  std::optional<std::string> name;
  std::optional<std::string> value;
  size_t limit = 100;
  std::string after;
};

struct AttributePage {
  std::vector<ListedAttribute> attributes;
  std::string next;
};

// What a task asks of an instance. Ports are host ports.
// Why Reserve refused a task: ECS's placement failure reasons, as the detail of its Status.
enum class Refusal {
  kMissing = 1,  // "MISSING": no such instance
  kInactive,     // "INACTIVE": draining or deregistered
  kCpu,          // "RESOURCE:CPU"
  kMemory,       // "RESOURCE:MEMORY"
  kPorts,        // "RESOURCE:PORTS"
  kPortsUdp,     // "RESOURCE:PORTS_UDP"
};
const ErrorDomain& ErrorDomainOf(Refusal);
// The failure reason ECS reports for a refused reservation ("RESOURCE:CPU"); empty when `status`
// is not a Refusal.
std::string_view RefusalReason(const Status& status);

struct Demand {
  int64_t cpu = 0;     // CPU units (1024 = one core)
  int64_t memory = 0;  // MiB
  std::vector<int64_t> tcp_ports;
  std::vector<int64_t> udp_ports;
};

// An ACTIVE instance a task could be placed on, as placement sees it.
struct Candidate {
  std::string id;
  std::string arn;
  int64_t remaining_cpu = 0;
  int64_t remaining_memory = 0;
  std::vector<std::string> used_tcp_ports;  // remainingResources PORTS: reserved and in use
  std::vector<std::string> used_udp_ports;
  Facts facts;  // attributes, ec2InstanceId, counts, registeredAt, agentConnected: for Query::Matches
};

class ContainerInstances {
 public:
  // `random_hex(n)` gives n lowercase hex digits: ids and generated EC2 instance ids.
  using HexSource = std::function<std::string(size_t)>;
  ContainerInstances(store::Store& store, cluster::Clusters& clusters, HexSource random_hex = nullptr);

  // RegisterContainerInstance: a new ACTIVE instance in an ACTIVE cluster, or (with
  // container_instance) the same instance with its resources, versions and attributes replaced.
  // Either way the agent counts as connected from `now`.
  // Who may (AccessDeniedException otherwise): a new instance, an account's key (never an agent
  // credential); again, an instance bound to a remote agent only its own credential, one bound to
  // the server's agent only the server (request.agent kInProcess), an unbound one the account
  // (and request.agent kRemote then binds it). With request.agent kRemote, a new or newly bound
  // instance's credential is made in the same transaction and returned in `*issued`.
  StatusOr<std::string> Register(const Scope& scope, const RegisterRequest& request, TimePoint now,
                                 std::optional<AgentCredential>* issued = nullptr);
  StatusOr<DescribeResult> Describe(const Scope& scope, std::string_view cluster, const std::vector<InstanceRef>& refs,
                                    const Include& include, TimePoint now);
  StatusOr<Page> List(const Scope& scope, const ListQuery& q, TimePoint now);
  // ACTIVE|DRAINING -> INACTIVE. Refused while tasks hold resources on it unless `force`. Revokes
  // the instance's agent credential in the same transaction.
  StatusOr<std::string> Deregister(const Scope& scope, std::string_view cluster, const InstanceRef& ref, bool force,
                                   TimePoint now);
  StatusOr<DescribeResult> UpdateState(const Scope& scope, std::string_view cluster, const std::vector<InstanceRef>& refs,
                                       std::string_view status, TimePoint now);
  // UpdateContainerAgent: Paddock ships no agent updates. MissingVersionException without an
  // agentVersion, NoUpdateAvailableException otherwise.
  StatusOr<std::string> UpdateAgent(const Scope& scope, std::string_view cluster, const InstanceRef& ref, TimePoint now);

  // PutAttributes / DeleteAttributes: all or nothing, one transaction. Answers the attributes with
  // their targets' full ARNs.
  StatusOr<std::vector<ListedAttribute>> PutAttributes(const Scope& scope, std::string_view cluster,
                                                       const std::vector<TargetedAttribute>& attributes);
  StatusOr<std::vector<ListedAttribute>> DeleteAttributes(const Scope& scope, std::string_view cluster,
                                                          const std::vector<TargetedAttribute>& attributes);
  StatusOr<AttributePage> ListAttributes(const Scope& scope, const AttributeQuery& q);

  // agentConnected holds while the last heartbeat is at most this old (default kAgentTimeout).
  // Set before serving (tests shorten it).
  void SetAgentTimeout(std::chrono::milliseconds timeout) { agent_timeout_ = timeout; }

  // ---- Losing a host (docs/contracts/container-instance.md; sched/scheduler.h runs the sweep) ----
  // The ACTIVE and DRAINING instances of every account whose agent's last heartbeat (the later of
  // this process's and the stored one) is more than `grace` before `now`, read in the caller's
  // transaction. An instance with no heartbeat known at all is left out: nothing says how long it
  // has been gone. So is a server's own [[ec2_instance]] (AgentKind::kInProcess) unless
  // SetSweepInProcess: on a store of its own a server is the only one to sweep, and its instances'
  // agents are the server itself (restarted after any downtime, it re-adopts their tasks); on a
  // shared store a server whose instances' heartbeats stop is lost like any host (its fence and
  // its watchdog stop their containers first; a clean stop forgets their heartbeats:
  // ForgetHeartbeat). One scan of every instance record: hosts are few, and the sweep runs seconds
  // apart.
  struct Lost {
    Scope scope;
    std::string cluster;
    std::string id;
    std::string ec2_instance_id;
  };
  StatusOr<std::vector<Lost>> LostInstances(store::ReadTxn& txn, TimePoint now, std::chrono::milliseconds grace);
  // Whether servers' own instances are swept too (above). Set before serving.
  void SetSweepInProcess(bool sweep) { sweep_in_process_ = sweep; }
  // Forgets the instance's heartbeat, stored and in memory: until its agent calls again nothing
  // says how long it has been gone, so it is never found lost (a server's clean stop, for its own
  // instances).
  Status ForgetHeartbeat(const Scope& scope, std::string_view cluster, std::string_view id);
  // Whether `lost` still is, read again in the caller's transaction (its agent may have called
  // since the list was read).
  StatusOr<bool> StillLost(store::ReadTxn& txn, const Lost& lost, TimePoint now, std::chrono::milliseconds grace);

  // The agent side: the instance's agent is alive at `now`. NotFound for unknown or INACTIVE.
  Status Heartbeat(const Scope& scope, std::string_view cluster, std::string_view id, TimePoint now);

  Status TagResource(const Scope& scope, std::string_view cluster, std::string_view id, const Tags& tags);
  Status UntagResource(const Scope& scope, std::string_view cluster, std::string_view id,
                       const std::vector<std::string>& keys);
  StatusOr<Tags> ListTags(const Scope& scope, std::string_view cluster, std::string_view id);

  // ---- The placement seam, inside the caller's transaction ----
  // ACTIVE instances of the cluster, in id order.
  StatusOr<std::vector<Candidate>> Candidates(store::ReadTxn& txn, const Scope& scope, std::string_view cluster,
                                              TimePoint now);
  // Takes `demand` from the ACTIVE instance for `task_id` (counted as pending). Repeating it for
  // the same task is a no-op. Refusals are FailedPrecondition with a Refusal detail (kCpu,
  // kMemory, kPorts, kPortsUdp, or kInactive: not ACTIVE), NotFound with Refusal::kMissing for no
  // such instance; RefusalReason names them as ECS does.
  Status Reserve(store::WriteTxn& txn, const Scope& scope, std::string_view cluster, std::string_view id,
                 std::string_view task_id, const Demand& demand);
  // Whether the instance could take a task at all, as Reserve judges it before the resources:
  // OK when ACTIVE, NotFound with Refusal::kMissing for no such instance, FailedPrecondition with
  // Refusal::kInactive (message "The container instance is DRAINING.") when DRAINING or
  // deregistered. StartTask names instances that Candidates leaves out: this says why.
  Status CheckPlaceable(store::ReadTxn& txn, const Scope& scope, std::string_view cluster, std::string_view id);
  // The task's reservation moves from pending to running. No-op when already running, and when
  // there is no reservation or no instance (reaped after a forced deregistration).
  Status MarkRunning(store::WriteTxn& txn, const Scope& scope, std::string_view cluster, std::string_view id,
                     std::string_view task_id);
  // Gives the reservation back (also on a deregistered instance). No-op when there is none.
  Status Release(store::WriteTxn& txn, const Scope& scope, std::string_view cluster, std::string_view id,
                 std::string_view task_id);

  // Removes INACTIVE instances deregistered more than kInactiveRetention before `now`.
  StatusOr<size_t> ReapInactive(TimePoint now);
  // Removes every instance of the account (its tags go with the cluster reaper's tag sweep too).
  Status ReapAccount(const AccountId& account);

  cluster::ClusterUsage* cluster_usage() { return &usage_; }
  // The instances' agent bindings and credentials (the front's resolver looks agent keys up here).
  AgentIdentities& agents() { return agents_; }
  // The instances' hosts as EC2's DescribeInstances shows them (ec2_instances.cc): an ACTIVE or
  // DRAINING instance is running, a deregistered one terminated until it is reaped; the private
  // IP is the identity document's privateIp (what the registering agent reported).
  ec2::InstanceSource* ec2_instances() { return &ec2_; }

  // A deregistration's part for the instance's tasks (the task owner installs it: ecs/task's
  // Tasks::OrphanInstance): called inside the transaction that makes the instance INACTIVE (a
  // forced deregistration leaves tasks on it), its error fails the deregistration; what it returns
  // runs after the commit (notifications). Set before serving; null: none.
  using DeregistrationHook = std::function<StatusOr<std::function<void()>>(
      store::WriteTxn& txn, const Scope& scope, std::string_view cluster, std::string_view id, TimePoint now)>;
  void SetDeregistrationHook(DeregistrationHook hook) { deregistration_hook_ = std::move(hook); }

  // `listener` is called after a commit that changed which instances of a cluster are ACTIVE
  // (register, deregister, UpdateContainerInstancesState), so the service scheduler can place
  // DAEMON tasks and replace tasks on draining instances at once. Set before serving; cheap.
  void SetChangeListener(std::function<void(const Scope&, const std::string& cluster)> listener) {
    listener_ = std::move(listener);
  }

 private:
  class Usage final : public cluster::ClusterUsage {
   public:
    StatusOr<Counts> Count(store::ReadTxn& txn, const Scope& scope, std::string_view cluster) override;
  };
  class Ec2View final : public ec2::InstanceSource {
   public:
    explicit Ec2View(store::Store& store) : store_(store) {}
    StatusOr<std::vector<ec2::Instance>> Find(const Scope& scope, const std::vector<std::string>& ids) override;
    StatusOr<std::vector<ec2::Instance>> List(const Scope& scope, const std::string& after, size_t limit,
                                                 bool* more) override;

   private:
    store::Store& store_;
  };
  // The EC2 index row of an instance: moved when its ec2InstanceId changes, its private IP kept
  // unless a new one is reported. Inside the registration's transaction.
  static Status IndexEc2(store::WriteTxn& txn, const Scope& scope, std::string_view cluster, std::string_view id,
                         std::string_view previous_ec2_id, std::string_view ec2_id, std::string_view private_ip);

  void NotifyChange(const Scope& scope, std::string_view cluster) {
    if (listener_) listener_(scope, std::string(cluster));
  }
  std::function<void(const Scope&, const std::string&)> listener_;  // set before serving
  DeregistrationHook deregistration_hook_;                          // set before serving
  StatusOr<bool> Connected(store::ReadTxn& txn, const std::string& key, TimePoint now);
  // The later of this process's heartbeat and the stored one.
  StatusOr<std::optional<TimePoint>> LastHeartbeat(store::ReadTxn& txn, const std::string& key);
  void SetHeartbeat(const std::string& key, std::optional<TimePoint> t);
  // Whether this process last stored the instance's heartbeat more than a quarter of the agent
  // timeout before `now` (or never): then Heartbeat stores it again.
  bool HeartbeatDue(const std::string& key, TimePoint now);
  StatusOr<std::string> Render(store::ReadTxn& txn, const Scope& scope, const boost::json::object& record,
                               const Include& include, TimePoint now);
  // Finds the instance of `ref` in `cluster`; nullopt (not an error) when there is none.
  StatusOr<std::optional<boost::json::object>> Find(store::ReadTxn& txn, const Scope& scope, std::string_view cluster,
                                                    const InstanceRef& ref);
  Status Save(store::WriteTxn& txn, const Scope& scope, std::string_view cluster, boost::json::object& record);
  Status AddCount(store::WriteTxn& txn, const Scope& scope, std::string_view cluster, int64_t delta);

  store::Store& store_;
  cluster::Clusters& clusters_;
  HexSource random_hex_;
  Usage usage_;
  Ec2View ec2_{store_};
  AgentIdentities agents_;
  std::mutex mu_;
  std::map<std::string, TimePoint> heartbeats_;  // GUARDED_BY(mu_), by record key
  std::map<std::string, TimePoint> stored_;      // GUARDED_BY(mu_): when this process last stored each
  std::chrono::milliseconds agent_timeout_ = kAgentTimeout;
  bool sweep_in_process_ = false;
};

}  // namespace paddock::ecs::instance
