#include "cli/service_discovery.h"

#include <fmt/format.h>

#include "cloudmap/errors.h"

namespace paddock::cli {
namespace {

// A service registry's ARN: arn:aws:servicediscovery:<region>:<account>:service/srv-…, of the
// caller's own scope (an ARN of another account or region names nothing the caller has; a bare
// id is no registryArn).
bool OwnServiceArn(const Scope& scope, std::string_view arn) {
  return arn.starts_with(cloudmap::Registry::ServiceArn(scope, ""));
}

}  // namespace

StatusOr<ecs::task::RegistryFacts> CloudMapDiscovery::Describe(const Scope& scope, std::string_view registry_arn) {
  if (!OwnServiceArn(scope, registry_arn)) return NotFound(fmt::format("No service registry {}", registry_arn));
  StatusOr<cloudmap::Service> service = registry_.GetService(scope, registry_arn);
  if (!service.ok() && IsError(service.status(), cloudmap::Error::kServiceNotFound))
    return NotFound(service.status().message());
  RETURN_IF_ERROR(service.status());
  ecs::task::RegistryFacts facts;
  if (service->dns)
    for (const cloudmap::DnsRecord& r : service->dns->records) facts.srv = facts.srv || r.type == cloudmap::RecordType::kSrv;
  return facts;
}

StatusOr<std::optional<std::string>> CloudMapDiscovery::Register(store::WriteTxn& txn, const Scope& scope,
                                                                 std::string_view registry_arn,
                                                                 std::string_view instance_id,
                                                                 const std::map<std::string, std::string>& attributes) {
  // Only the scope's own services are found: another account's ARN is ServiceNotFound, a refusal.
  Status s = registry_.RegisterIn(txn, scope, registry_arn, instance_id, attributes);
  for (cloudmap::Error refusal : {cloudmap::Error::kServiceNotFound, cloudmap::Error::kInvalidInput,
                                  cloudmap::Error::kResourceLimitExceeded})
    if (IsError(s, refusal)) return std::optional<std::string>(s.message());
  RETURN_IF_ERROR(s);
  return std::optional<std::string>();
}

Status CloudMapDiscovery::Deregister(store::WriteTxn& txn, const Scope& scope, std::string_view registry_arn,
                                     std::string_view instance_id) {
  return registry_.DeregisterIn(txn, scope, registry_arn, instance_id);
}

void CloudMapDiscovery::Published() { registry_.NoteChanged(); }

}  // namespace paddock::cli
