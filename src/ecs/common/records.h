// What every ECS owner needs to keep its records: ECS's error details (ecs/common/errors.h), the
// (account, region) key prefix every record starts with, and decoding a stored JSON record.
#pragma once

#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "common/ids.h"
#include "common/status.h"
#include "ecs/common/errors.h"
#include "store/key.h"

namespace paddock::ecs {

// ECS's two generic client errors: a value's form (Error::kInvalidParameter) and the rest
// (Error::kClient).
inline Status ParamError(std::string message) { return InvalidArgument(std::move(message), ecs::Error::kInvalidParameter); }
inline Status ClientError(std::string message) { return InvalidArgument(std::move(message), ecs::Error::kClient); }
inline Status ClusterNotFoundError() { return NotFound("Cluster not found.", ecs::Error::kClusterNotFound); }

// Key().Str(account).Str(region): the start of every account-scoped record's key.
inline store::Key ScopeKey(const Scope& s) { return std::move(store::Key().Str(s.account.str()).Str(s.region.str())); }

// Parses a stored record that must be a JSON object; anything else is kDataLoss naming `what`.
StatusOr<boost::json::object> ParseRecordObject(std::string_view text, std::string_view what);

}  // namespace paddock::ecs
