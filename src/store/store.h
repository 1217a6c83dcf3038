// The Store: Paddock's durable state, as ordered key spaces ("tables") with transactions.
//
// Every owner keeps its records in tables its module declares (store/schema.h says how). A table maps byte-string
// keys to byte-string values and is ordered by key (memcmp order), so owners build their primary
// records and secondary indexes as tables whose keys are tuples (store/key.h), and every list is a
// range scan that touches only one page of rows. Nothing SQLite- or PostgreSQL-specific is visible
// here: both implementations pass the same suite (store/testing/store_conformance.h).
//
//   Status s = store.Write([&](WriteTxn& txn) -> Status {
//     ASSIGN_OR_RETURN(auto old, txn.Get(kTable, key));
//     if (old) return AlreadyExists("...");
//     return txn.Put(kTable, key, value);
//   });
//   // s.ok() means the write is durable (fsync'd) and visible to every later Read.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace paddock::store {

struct Row {
  std::string key;
  std::string value;
};

enum class Direction { kForward, kBackward };

// Keys k with begin <= k < end. An empty `end` means "no upper bound".
struct Range {
  std::string begin;
  std::string end;
};

class ReadTxn {
 public:
  virtual ~ReadTxn() = default;
  // The value under `key`, or nullopt.
  virtual StatusOr<std::optional<std::string>> Get(std::string_view table, std::string_view key) = 0;
  // Up to `limit` rows of `range` in key order (kBackward: descending).
  virtual StatusOr<std::vector<Row>> Scan(std::string_view table, const Range& range, size_t limit,
                                          Direction dir = Direction::kForward) = 0;
};

class WriteTxn : public ReadTxn {
 public:
  // Inserts or replaces.
  virtual Status Put(std::string_view table, std::string_view key, std::string_view value) = 0;
  // Removes `key` if present (absent is not an error).
  virtual Status Delete(std::string_view table, std::string_view key) = 0;
  // Removes every row of `range` (begin <= k < end; an empty end has no upper bound), in one
  // statement however many rows it holds: for retention, whole-owner deletes and account reaping,
  // where a Scan-then-Delete loop would read every row first. An empty or inverted range removes
  // nothing. Like every other write, it takes effect only if the transaction commits.
  virtual Status DeleteRange(std::string_view table, const Range& range) = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  // Runs `fn` against a consistent snapshot. Returns fn's status, or the store's failure.
  virtual Status Read(const std::function<Status(ReadTxn&)>& fn) = 0;

  // Read, for a closure that may be run more than once: each run starts over (it assigns what it
  // reads, never appends to what an earlier run left) and only the last run's outcome counts. A
  // store may then answer it from memory and run it again against a snapshot when memory cannot
  // answer it all (PostgresStore's read cache). The hot Describe paths use it.
  virtual Status ReadRepeatable(const std::function<Status(ReadTxn&)>& fn) { return Read(fn); }

  // Runs `fn` in a serializable read-write transaction, exactly once. If fn returns an error,
  // none of its writes take effect and that error is returned; the same if fn returns OK after
  // one of its operations failed (an ignored error does not commit a partial change). An OK
  // return means the transaction is committed and durable: it survives kill -9 and power loss.
  // REQUIRES: fn does not call back into this Store.
  virtual Status Write(const std::function<Status(WriteTxn&)>& fn) = 0;

  // Stops accepting work, finishes what was accepted, and closes cleanly.
  virtual void Close() = 0;
};

}  // namespace paddock::store
