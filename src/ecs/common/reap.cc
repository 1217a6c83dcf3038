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

StatusOr<size_t> ReapDue(store::Store& store, std::string_view table, int64_t cutoff_ms, const RemoveDue& remove) {
  constexpr size_t kBatch = 200;
  size_t removed = 0;
  std::string begin;
  while (true) {
    ASSIGN_OR_RETURN(std::optional<Scope> scope, NextScope(store, table, begin));
    if (!scope) return removed;
    const store::Key prefix = store::Key().Str(scope->account.str()).Str(scope->region.str());
    const store::Range due{store::Key(prefix).Done(),
                           store::Key(prefix).U64(static_cast<uint64_t>(cutoff_ms) + 1).Done()};
    while (true) {
      size_t batch = 0;
      RETURN_IF_ERROR(store.Write([&](store::WriteTxn& txn) -> Status {
        batch = 0;
        ASSIGN_OR_RETURN(auto rows, txn.Scan(table, due, kBatch));
        for (const auto& row : rows) {
          store::KeyReader r(row.key);
          ASSIGN_OR_RETURN(std::string account, r.Str());
          ASSIGN_OR_RETURN(std::string region, r.Str());
          ASSIGN_OR_RETURN(uint64_t due_ms, r.U64());
          (void)due_ms;
          ASSIGN_OR_RETURN(std::string cluster, r.Str());
          ASSIGN_OR_RETURN(std::string id, r.Str());
          RETURN_IF_ERROR(remove(txn, *scope, cluster, id));
          RETURN_IF_ERROR(txn.Delete(table, row.key));
          ++batch;
        }
        return OkStatus();
      }));
      removed += batch;
      if (batch < kBatch) break;
    }
    begin = NextScopeBegin(*scope);
    if (begin.empty()) return removed;
  }
}

}  // namespace paddock::ecs
