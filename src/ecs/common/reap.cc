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

StatusOr<std::optional<Scope>> NextScope(store::Store& store, std::string_view table, std::string_view begin) {
  std::optional<Scope> scope;
  RETURN_IF_ERROR(store.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(table, {std::string(begin), ""}, 1));
    if (rows.empty()) return OkStatus();
    store::KeyReader r(rows[0].key);
    ASSIGN_OR_RETURN(std::string account, r.Str());
    ASSIGN_OR_RETURN(std::string region, r.Str());
    scope = Scope{AccountId(std::move(account)), Region(std::move(region))};
    return OkStatus();
  }));
  return scope;
}

std::string NextScopeBegin(const Scope& scope) {
  return store::PrefixRange(store::Key().Str(scope.account.str()).Str(scope.region.str()).Done()).end;
}

}  // namespace paddock::ecs
