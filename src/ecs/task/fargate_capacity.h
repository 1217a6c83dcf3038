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
// Records (ecs/schema.h), written only through this class (by ecs/task):
//   fargate_reservations  (account, region, cluster, task id) -> "<cpu units> <MiB>" on the default
//                         node, "<cpu units> <MiB> <node>" on another
//   fargate_node_usage    (node) -> "<cpu units> <MiB>"   reserved on the node, every account
//   fargate_account_usage (account) -> "<cpu units>"       reserved by the account, every region
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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

class FargateCapacity {
 public:
  // `node`: whose capacity this is (no spaces).
  explicit FargateCapacity(FargateLimits limits, std::string node = std::string(kDefaultFargateNode))
      : limits_(limits), node_(std::move(node)) {}

  const FargateLimits& limits() const { return limits_; }

  // Reserves `demand` for the task, checking the account's quota, then the node's capacity.
  // kAdmitted: the reservation, the node's total and the account's total are written in `txn`.
  // A refusal writes nothing. Repeating it for a task that holds a reservation is kAdmitted and
  // changes nothing. InvalidArgument for a negative demand.
  StatusOr<Admission> Reserve(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                              std::string_view task_id, const FargateDemand& demand);
  // Gives the task's reservation back to the node and the account, in `txn`. No-op when the task
  // holds none (never reserved, or already released), so every stop path may call it.
  Status Release(store::WriteTxn& txn, const Scope& scope, std::string_view cluster, std::string_view task_id);

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
