// ecs/service/internal/common: what the service owner's translation units (services.cc,
// service_deployments.cc, task_sets.cc, record.cc) share besides the record codec: its errors,
// the name rule, and the canonical form a clientToken remembers. Not an API.
#pragma once

#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "ecs/common/tags.h"
#include "ecs/common/errors.h"
#include "store/store.h"

namespace paddock::ecs::service::internal {

inline Status ServiceNotFound() { return NotFound("Service not found.", ecs::Error::kServiceNotFound); }
inline Status ServiceNotActive() { return FailedPrecondition("Service was not ACTIVE.", ecs::Error::kServiceNotActive); }

// 1-255 letters, digits, hyphens and underscores.
bool IsServiceName(std::string_view s);

// `v` with every object's members sorted by name: what a clientToken remembers of a request.
boost::json::value Canonical(const boost::json::value& v);

// Drops the service deployments the service's history no longer keeps (services.h:
// kServiceDeploymentHistory, kServiceDeploymentRetention) and the service revisions nothing kept
// names. `record` is the service as the transaction writes it: the service deployments and
// revisions its deployments and lastCompleted use always stay, as do unfinished ones. Run where a
// deployment starts, the only change that adds to the history (service_deployments.cc).
Status PruneServiceHistory(store::WriteTxn& txn, const Scope& scope, std::string_view cluster, std::string_view name,
                           const boost::json::object& record, TimePoint now);

}  // namespace paddock::ecs::service::internal
