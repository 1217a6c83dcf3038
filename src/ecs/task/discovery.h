// ecs/task/discovery: what ECS needs of a service registry (Cloud Map) to keep a service's tasks
// registered (issue 13 §2) — one small seam, implemented over cloudmap::Registry where the node
// is wired (cli/), so neither module includes the other.
//
//   tasks.SetDiscovery(&discovery);     // the owner registers and deregisters in its own transactions
//   services.SetDiscovery(&discovery);  // CreateService and UpdateService check serviceRegistries
//
// Register and Deregister run inside the task owner's transaction (the task's RUNNING report, its
// stop, its DEACTIVATING report), so the registry and the task record change together: a crash
// never leaves a stopped task registered. Published() is called after such a transaction commits:
// answers cached from the registry (the DNS server's) are stale from then on.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/ids.h"
#include "common/status.h"
#include "store/store.h"

namespace paddock::ecs::task {

// What serviceRegistries' validation needs of a registry: whether it has an SRV record (which
// needs a port; A and AAAA records take none and need the awsvpc network mode).
struct RegistryFacts {
  bool srv = false;
};

class Discovery {
 public:
  virtual ~Discovery() = default;

  // The registry `registry_arn` of `scope` (a Cloud Map service ARN); NotFound when the scope has
  // no such registry.
  virtual StatusOr<RegistryFacts> Describe(const Scope& scope, std::string_view registry_arn) = 0;

  // Registers (or updates) instance `instance_id` with `attributes` in the caller's transaction.
  // A refusal of the registry's own (the registry is gone, its instance quota is full, an
  // attribute its records need is missing) is the returned reason, with nothing written; an
  // error is the store's.
  virtual StatusOr<std::optional<std::string>> Register(store::WriteTxn& txn, const Scope& scope,
                                                        std::string_view registry_arn, std::string_view instance_id,
                                                        const std::map<std::string, std::string>& attributes) = 0;
  // Removes the instance in the caller's transaction; one that is not there (or a registry that
  // is gone) is not an error.
  virtual Status Deregister(store::WriteTxn& txn, const Scope& scope, std::string_view registry_arn,
                            std::string_view instance_id) = 0;

  // A transaction that called Register or Deregister has committed.
  virtual void Published() = 0;
};

}  // namespace paddock::ecs::task
