#include "ecs/common/reap.h"

#include "store/key.h"

namespace paddock::ecs {

Status ReapAccountRows(store::Store& store, std::string_view table, const AccountId& account) {
  const store::Range range = store::PrefixRange(store::Key().Str(account.str()).Done());
  while (true) {
    size_t deleted = 0;
    RETURN_IF_ERROR(store.Write([&](store::WriteTxn& txn) -> Status {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(table, range, 1000));
      for (const auto& row : rows) RETURN_IF_ERROR(txn.Delete(table, row.key));
      deleted = rows.size();
      return OkStatus();
    }));
    if (deleted == 0) return OkStatus();
  }
}

}  // namespace paddock::ecs
