#include "sched/presence.h"

#include <charconv>
#include <cstdint>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "store/key.h"

namespace paddock::sched {
namespace {

constexpr std::string_view kTable = "server_presence";
// More servers than one database ever serves: a scan this long reads the whole table.
constexpr size_t kMaxRows = 10'000;

StatusOr<int64_t> ExpiresMs(std::string_view v) {
  int64_t ms = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), ms);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size())
    return DataLoss(fmt::format("corrupt server presence record: \"{}\"", v));
  return ms;
}

// This server and the others whose rows are live at `now_ms`; `expired` (when given) collects
// the keys of the others' rows that are not.
StatusOr<int> Live(store::ReadTxn& txn, const std::string& own_key, int64_t now_ms,
                   std::vector<std::string>* expired) {
  ASSIGN_OR_RETURN(std::vector<store::Row> rows, txn.Scan(kTable, store::Range{}, kMaxRows));
  int live = 1;
  for (const store::Row& row : rows) {
    if (row.key == own_key) continue;
    ASSIGN_OR_RETURN(int64_t expires_ms, ExpiresMs(row.value));
    if (now_ms < expires_ms) {
      ++live;
    } else if (expired) {
      expired->push_back(row.key);
    }
  }
  return live;
}

}  // namespace

StatusOr<int> Presence::Renew(TimePoint now) {
  const std::string own_key = store::Key().Str(server_).Done();
  const int64_t now_ms = EpochMillis(now);
  int live = 1;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    std::vector<std::string> expired;
    ASSIGN_OR_RETURN(live, Live(txn, own_key, now_ms, &expired));
    for (const std::string& key : expired) RETURN_IF_ERROR(txn.Delete(kTable, key));
    return txn.Put(kTable, own_key, std::to_string(now_ms + ttl_.count()));
  }));
  return live;
}

StatusOr<int> Presence::Count(TimePoint now) const {
  const std::string own_key = store::Key().Str(server_).Done();
  int live = 1;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(live, Live(txn, own_key, EpochMillis(now), nullptr));
    return OkStatus();
  }));
  return live;
}

Status Presence::Leave() {
  return store_.Write([&](store::WriteTxn& txn) { return txn.Delete(kTable, store::Key().Str(server_).Done()); });
}

}  // namespace paddock::sched
