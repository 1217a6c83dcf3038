// ecs/task/fargate_capacity: the node's Fargate capacity and each account's Fargate vCPU quota,
// reserved per task inside the task owner's transaction (docs/contracts/task.md, "Fargate
// capacity").
//
// Every FARGATE task of this node runs on this host (the in-process agent `fargate-local`), so the
// host's CPU and memory are a finite pool, as an EC2 instance's are. Tasks::Run reserves each
// Fargate task's cpu and memory here in the run's own transaction; the STOPPED report (or the
// account's deletion) gives them back in its own. A task that does not fit is not an error but a
// RunTask failures[] entry with ECS's reason, and the tasks of the same run that fit still start.
//
//   FargateCapacity capacity(FargateLimits{.cpu = 2048, .memory = 3840, .vcpus_per_account = 4000});
//   Tasks tasks(store, task_definitions, clusters, "fargate-local", &instances, &capacity);
//   // inside Tasks' write transaction:
//   ASSIGN_OR_RETURN(Admission a, capacity.Reserve(txn, scope, cluster, task_id, {256, 512}));
//   if (a != Admission::kAdmitted) failures.push_back({"", std::string(FailureReason(a)), ""});
//
// Both checks read and write one row each (O(1) per task, no scan): the node's reserved total and
// the account's. Order: the account's quota first (an account over its quota learns that, not
// whether the node is full), then the node's capacity. Admission is first come, first served
// within each account's quota: an operator who sets the quota at or below the node's capacity
// divided by the number of accounts guarantees every account its whole quota.
//
// Several servers on one PostgreSQL database (docs/scaling.md, "Several servers") each run their
// own Fargate agent on their own host, so each has a capacity of its own: `node` names it (the
// server's Fargate agent id); a single server's is kDefaultFargateNode. A reservation remembers its
// node, so whichever server releases it gives it back to the node that took it.
//
// Fargate across hosts (issue 16 §3): each such server offers its host's capacity to the others
// (Offer, renewed every few seconds with a time to live; Withdraw at a clean stop), and Reserve
// places a task on the live host with the most room left after it — this server's own or another's
// — so Fargate tasks spread over the hosts that offer capacity and a full host's task goes to
// another instead of failing. The placement names the agent that runs the task and its host's
// overlay address. A server alone on its store has no offers but its own: nothing changes.
//
//   capacity.Offer(store, now, std::chrono::seconds(6), "fargate-local@h1:…", "10.0.0.11");
//   ASSIGN_OR_RETURN(FargatePlacement p, capacity.Reserve(txn, scope, cluster, task_id, {256, 512}, now));
//   // p.elsewhere: another server's host runs it (its agent, its overlay address); empty: ours.
//
// Records (ecs/schema.h), written only through this class (by ecs/task):
//   fargate_reservations  (account, region, cluster, task id) -> "<cpu units> <MiB>" on the default
//                         node, "<cpu units> <MiB> <node>" on another
//   fargate_node_usage    (node) -> "<cpu units> <MiB>"   reserved on the node, every account
//   fargate_account_usage (account) -> "<cpu units>"       reserved by the account, every region
//   fargate_hosts         (node) -> "<expires ms> <cpu units> <MiB> <agent> <overlay address|->"
//                         what a live server's host offers (expiry judged on each reader's clock)
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "store/store.h"

namespace paddock::ecs::task {

// RunTask's failures[] reasons (the entry has no arn), in ECS's words. A service that cannot
// place a task writes them into its event (sched/plan.h RecordLaunchRefused).
inline constexpr std::string_view kCapacityUnavailableReason =
    "Capacity is unavailable at this time. Please try again later or in a different availability zone";
// ECS writes it with a typographic apostrophe (U+2019).
inline constexpr std::string_view kVcpuLimitReachedReason =
    "You\u2019ve reached the limit on the number of vCPUs you can run concurrently";

// True for the two reasons above.
bool IsFargateAdmissionReason(std::string_view reason);

struct FargateLimits {
  int64_t cpu = 0;                // CPU units the node admits (1024 per vCPU), overcommit applied
  int64_t memory = 0;             // MiB the node admits, overcommit applied
  int64_t vcpus_per_account = 0;  // each account's quota over all its regions, in vCPUs
};

// What one task takes.
struct FargateDemand {
  int64_t cpu = 0;     // CPU units
  int64_t memory = 0;  // MiB
};

// Reserved amounts, as recorded.
struct FargateUsage {
  int64_t cpu = 0;
  int64_t memory = 0;
  bool operator==(const FargateUsage&) const = default;
};

enum class Admission { kAdmitted, kVcpuLimitReached, kCapacityUnavailable };

// RunTask's failure reason for a refusal (empty for kAdmitted).
std::string_view FailureReason(Admission a);

// The node of a server that has its store to itself.
inline constexpr std::string_view kDefaultFargateNode = "node";

// Another server's host, as its offer says (fargate_hosts).
struct FargateHost {
  std::string node;             // its capacity's name (fargate_node_usage)
  std::string agent;            // the agent that runs the tasks placed on it
  std::string overlay_address;  // where other hosts' overlay reaches its tasks; "" none
  FargateUsage capacity;        // what it admits
  bool operator==(const FargateHost&) const = default;
};

// Where Reserve put a task.
struct FargatePlacement {
  Admission admission = Admission::kAdmitted;
  // Admitted on another server's host: that host. Empty: on this server's own.
  std::optional<FargateHost> elsewhere;
};

class FargateCapacity {
 public:
  // `node`: whose capacity this is (no spaces).
  explicit FargateCapacity(FargateLimits limits, std::string node = std::string(kDefaultFargateNode))
      : limits_(limits), node_(std::move(node)) {}

  const FargateLimits& limits() const { return limits_; }

  // Reserves `demand` for the task, checking the account's quota, then the hosts' capacity: of
  // this node and of the hosts live at `now` (others' offers), the one whose larger share (cpu or
  // memory) reserved after the task is smallest takes it; on a tie this node, then the first by
  // name. kAdmitted: the reservation, the host's total and the account's total are written in
  // `txn`. kCapacityUnavailable: no host has room. A refusal writes nothing. Repeating it for a
  // task that holds a reservation is kAdmitted (on the host it holds) and changes nothing.
  // InvalidArgument for a negative demand.
  StatusOr<FargatePlacement> Reserve(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                     std::string_view task_id, const FargateDemand& demand, TimePoint now);
  // Gives the task's reservation back to the node and the account, in `txn`. No-op when the task
  // holds none (never reserved, or already released), so every stop path may call it.
  Status Release(store::WriteTxn& txn, const Scope& scope, std::string_view cluster, std::string_view task_id);

  // Offers this node's capacity to the other servers of the store until `now` + `ttl`: its
  // agent runs what they place on it, reached by the overlay at `overlay_address` ("" none).
  // Renew it well within `ttl`. An offer that lapses stays in the store until the host-loss sweep
  // forgets it (LapsedHosts, Forget).
  Status Offer(store::Store& store, TimePoint now, std::chrono::milliseconds ttl, std::string_view agent,
               std::string_view overlay_address);
  // Withdraws this node's offer (a clean stop): no server places a task here from then on, and
  // the host is not lost — its tasks wait for its server's return.
  Status Withdraw(store::Store& store);
  // The other servers' hosts whose offers are live at `now`, by node.
  StatusOr<std::vector<FargateHost>> OtherHosts(store::ReadTxn& txn, TimePoint now);

  // Losing a host (issue 16 §3; sched/scheduler.h, SweepLostHosts): the other hosts whose offers
  // lapsed at least `grace` before `now` — their servers renewed nothing for that long.
  StatusOr<std::vector<FargateHost>> LapsedHosts(store::ReadTxn& txn, TimePoint now, std::chrono::milliseconds grace);
  // Forgets `node`'s offer if it is still lapsed by `grace` at `now`, in `txn`: true then (its
  // tasks are to be recorded STOPPED in the same transaction), false when it was renewed
  // meanwhile (or is gone).
  StatusOr<bool> Forget(store::WriteTxn& txn, std::string_view node, TimePoint now, std::chrono::milliseconds grace);

  // What is reserved now: on this node, and by `account` (cpu only: the quota counts vCPUs).
  StatusOr<FargateUsage> NodeUsage(store::ReadTxn& txn);
  StatusOr<int64_t> AccountCpu(store::ReadTxn& txn, const AccountId& account);

  // Releases every reservation of the account (in transactions of at most 200) and removes its
  // total: what the node gets back when the account is deleted.
  Status ReapAccount(store::Store& store, const AccountId& account);

 private:
  FargateLimits limits_;
  std::string node_;
};

}  // namespace paddock::ecs::task
