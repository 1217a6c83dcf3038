// Private to store/postgres: what a PostgresStore has read, kept to answer later reads without a
// round trip, and exact however many servers write the database.
//
// Every write transaction that changes a table bumps the database's generation (one row,
// `store_generation`, updated under the write lock, so generations follow commit order) and
// announces the new generation with the tables it wrote (change_feed.h). The cache applies those
// announcements in order, so at generation G it knows which tables changed after any G' <= G.
// A Read first learns the generation from a query that began after the Read did (a
// GenerationBarrier, shared by the Reads waiting beside it), waits until the cache has applied it,
// and is then answered as of the cache's generation `at`: a table's entry serves only if the table
// did not change after `at`. So a Read sees every write acknowledged before it began, on any
// server, and one consistent state, like a snapshot of the database.
//
// Fills come from the database's own snapshots, whose generation is read in them; a fill is kept
// only if the cache is at exactly that generation, i.e. it is what the table still holds.
//
//   ReadCache cache(64 << 20);
//   cache.Reset(generation);                  // the feed listens (again)
//   cache.Apply(generation + 1, {"tasks"});   // a commit's announcement
//   if (auto at = cache.AwaitGeneration(barrier_generation, 10ms)) { auto hit = cache.Get(*at, ...); }
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/store.h"

namespace paddock::store::postgres_internal {

class Connection;

class ReadCache {
 public:
  // Holds at most about `max_bytes` of keys and values; past that it forgets everything it holds.
  explicit ReadCache(size_t max_bytes);

  // The announcements are heard from `generation` on (a feed listens, again): everything held is
  // forgotten, and lookups serve from then on.
  void Reset(uint64_t generation);
  // The announcements are no longer heard (the feed's connection is lost): nothing is served or
  // kept until Reset.
  void Suspend();
  // A commit's announcement, in commit order: `tables` changed at `generation` (none: any table
  // may have). One out of order — a generation skipped — forgets everything.
  void Apply(uint64_t generation, const std::vector<std::string>& tables);
  // Waits up to `timeout` for the cache to be serving at `generation` or later; returns its
  // generation then, or nullopt.
  std::optional<uint64_t> AwaitGeneration(uint64_t generation, std::chrono::microseconds timeout);

  // What the database held at generation `at` (from AwaitGeneration), if known; nullopt: a miss.
  std::optional<std::optional<std::string>> Get(uint64_t at, std::string_view table, std::string_view key);
  std::optional<std::vector<Row>> Scan(uint64_t at, std::string_view table, const Range& range, size_t limit,
                                       Direction dir);
  // Whether `table` may have changed after generation `at`, as far as the cache has heard: false
  // means it held the same rows from `at` to the cache's generation.
  bool ChangedAfter(uint64_t at, std::string_view table);

  // What a snapshot at generation `at` read: kept only if the cache is serving at exactly `at`.
  void FillGet(uint64_t at, std::string_view table, std::string_view key, const std::optional<std::string>& value);
  void FillScan(uint64_t at, std::string_view table, const Range& range, size_t limit, Direction dir,
                const std::vector<Row>& rows);

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t fills = 0;
    uint64_t forgets = 0;  // entries dropped by announcements, Reset, Suspend or the size bound
  };
  Stats stats() const;

 private:
  struct Table {
    uint64_t changed_at = 0;
    std::map<std::string, std::optional<std::string>, std::less<>> gets;
    std::map<std::string, std::vector<Row>, std::less<>> scans;  // by ScanKey
  };
  Table& TableLocked(std::string_view table);
  bool ServesLocked(uint64_t at, std::string_view table, const Table** out) const;
  // Sets what AwaitGeneration waits for, and wakes it.
  void Publish(bool serving, uint64_t generation);
  void ForgetEntriesLocked();
  void Admit(size_t bytes);

  const size_t max_bytes_;
  // Lookups share it; announcements and fills take it alone.
  mutable std::shared_mutex mu_;
  std::mutex wait_mu_;  // AwaitGeneration's, with `advanced_`
  std::condition_variable advanced_;  // the generation moved or serving began
  // Written under mu_ (and wait_mu_), read without: AwaitGeneration's fast path.
  std::atomic<bool> serving_ = false;
  std::atomic<uint64_t> generation_ = 0;
  uint64_t base_ = 0;  // a table not in tables_ changed at most here
  std::map<std::string, Table, std::less<>> tables_;
  size_t bytes_ = 0;
  std::atomic<uint64_t> hits_ = 0, misses_ = 0;
  Stats stats_;  // fills and forgets
};

// The database's generation as of a query that began after Await was called. Callers that arrive
// while a query is in flight share the next one: one round trip serves every Read waiting.
class GenerationBarrier {
 public:
  explicit GenerationBarrier(std::unique_ptr<Connection> conn);
  ~GenerationBarrier();
  GenerationBarrier(const GenerationBarrier&) = delete;
  GenerationBarrier& operator=(const GenerationBarrier&) = delete;

  StatusOr<uint64_t> Await();
  // Round trips so far.
  uint64_t queries() const;

 private:
  std::unique_ptr<Connection> conn_;
  mutable std::mutex mu_;
  std::condition_variable done_;
  bool in_flight_ = false;
  uint64_t started_ = 0;    // queries begun
  uint64_t completed_ = 0;  // queries answered
  StatusOr<uint64_t> last_ = uint64_t{0};
};

// The generation row's SQL, and the write transaction's announcement: it bumps the generation and
// notifies (change_feed.h) in one statement.
inline constexpr std::string_view kGenerationTable = "store_generation";
std::string ReadGenerationSql();
std::string AnnounceSql(std::string_view channel, std::string_view origin, std::string_view tables_part);
// The generation as PostgreSQL prints it; kInternal if it is not a number.
StatusOr<uint64_t> ParseGeneration(std::string_view text);

}  // namespace paddock::store::postgres_internal
