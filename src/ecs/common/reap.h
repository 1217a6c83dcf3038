// Removing every record of an account from a table whose keys start with the account.
#pragma once

#include <string_view>

#include "common/ids.h"
#include "common/status.h"
#include "store/store.h"

namespace paddock::ecs {

// Deletes every row of `table` whose key starts with Key().Str(account), in batches of
// transactions, so an account with millions of records is reaped without one huge transaction.
Status ReapAccountRows(store::Store& store, std::string_view table, const AccountId& account);

}  // namespace paddock::ecs
