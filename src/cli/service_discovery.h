// cli/service_discovery: ECS's service registries (ecs/task/discovery.h) over the node's Cloud Map
// owner (cloudmap::Registry) — the one place the two modules meet (issue 13 §2).
//
//   CloudMapDiscovery discovery(cloudmap_registry);
//   tasks.SetDiscovery(&discovery);
//   services.SetDiscovery(&discovery);
#pragma once

#include "cloudmap/registry.h"
#include "ecs/task/discovery.h"

namespace paddock::cli {

class CloudMapDiscovery final : public ecs::task::Discovery {
 public:
  // `registry` outlives this.
  explicit CloudMapDiscovery(cloudmap::Registry& registry) : registry_(registry) {}

  StatusOr<ecs::task::RegistryFacts> Describe(const Scope& scope, std::string_view registry_arn) override;
  StatusOr<std::optional<std::string>> Register(store::WriteTxn& txn, const Scope& scope,
                                                std::string_view registry_arn, std::string_view instance_id,
                                                const std::map<std::string, std::string>& attributes) override;
  Status Deregister(store::WriteTxn& txn, const Scope& scope, std::string_view registry_arn,
                    std::string_view instance_id) override;
  // The DNS answers cached from the registry are stale from now (cloudmap::Registry::NoteChanged).
  void Published() override;

 private:
  cloudmap::Registry& registry_;
};

}  // namespace paddock::cli
