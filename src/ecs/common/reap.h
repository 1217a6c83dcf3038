// Removing every record of an account from a table whose keys start with the account.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/ids.h"
#include "common/status.h"
#include "store/store.h"

namespace paddock::ecs {

// Deletes every row of `table` whose key starts with Key().Str(account), in batches of
// transactions, so an account with millions of records is reaped without one huge transaction.
Status ReapAccountRows(store::Store& store, std::string_view table, const AccountId& account);

// The first (account, region) with a row in `table` at or after `begin`, for tables keyed by
// (account, region, ...): how the periodic reapers visit every scope with work, one at a time.
// nullopt when there is none. The next call's `begin` is NextScopeBegin(scope).
StatusOr<std::optional<Scope>> NextScope(store::Store& store, std::string_view table, std::string_view begin);
// Where the scope after `scope` starts; empty when `scope` is the last possible one.
std::string NextScopeBegin(const Scope& scope);

// Works off an expiry list: a table keyed (account, region, due ms, cluster, id) -> "". Every row
// due at or before `cutoff_ms`, scope by scope and oldest first, in write transactions of at most
// 200 rows, is handed to `remove`, which deletes what the row stands for (its own records, their
// indexes and tags); ReapDue then deletes the row in the same transaction. Returns how many.
using RemoveDue = std::function<Status(store::WriteTxn& txn, const Scope& scope, const std::string& cluster,
                                       const std::string& id)>;
StatusOr<size_t> ReapDue(store::Store& store, std::string_view table, int64_t cutoff_ms, const RemoveDue& remove);

}  // namespace paddock::ecs
