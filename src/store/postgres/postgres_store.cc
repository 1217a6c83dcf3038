#include "store/postgres/postgres_store.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <exception>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "common/encoding.h"
#include "store/postgres/internal/change_feed.h"
#include "store/postgres/internal/connection.h"
#include "store/postgres/internal/read_cache.h"

namespace paddock::store {

using postgres_internal::Connection;
using postgres_internal::Txn;

StatusOr<std::unique_ptr<PostgresStore>> PostgresStore::Open(const PostgresOptions& options) {
  if (options.url.empty()) return InvalidArgument("PostgresOptions.url is empty");
  if (options.readers < 1) return InvalidArgument("PostgresOptions.readers must be at least 1");
  if (options.max_batch < 1) return InvalidArgument("PostgresOptions.max_batch must be at least 1");
  ASSIGN_OR_RETURN(auto catalog, internal::TableCatalog::Build(options.schemas));
  ASSIGN_OR_RETURN(auto writer, Connection::Open(options.url, catalog));
  RETURN_IF_ERROR(postgres_internal::Migrate(*writer, *catalog));
  writer->SetDeferWrites(true);
  std::vector<std::unique_ptr<Connection>> readers;
  for (int i = 0; i < options.readers; ++i) {
    ASSIGN_OR_RETURN(auto r, Connection::Open(options.url, catalog));
    readers.push_back(std::move(r));
  }
  std::unique_ptr<Connection> barrier;
  if (options.cache_bytes > 0) {
    ASSIGN_OR_RETURN(barrier, Connection::Open(options.url, catalog));
  }
  return std::unique_ptr<PostgresStore>(
      new PostgresStore(options, std::move(writer), std::move(readers), std::move(barrier)));
}

PostgresStore::PostgresStore(PostgresOptions options, std::unique_ptr<Connection> writer,
                             std::vector<std::unique_ptr<Connection>> readers, std::unique_ptr<Connection> barrier)
    : options_(std::move(options)),
      origin_(RandomString(16, "0123456789abcdef")),
      writer_conn_(std::move(writer)),
      readers_(std::move(readers)),
      writes_(options_.max_batch, [this](const auto& batch) { CommitBatch(batch); }) {
  writes_.Start();
  if (barrier == nullptr) return;
  cache_ = std::make_unique<postgres_internal::ReadCache>(options_.cache_bytes);
  barrier_ = std::make_unique<postgres_internal::GenerationBarrier>(std::move(barrier));
  // The cache serves once the feed listens (before the constructor returns, unless PostgreSQL
  // cannot be reached right now: then from when it can).
  postgres_internal::ReadCache* cache = cache_.get();
  std::lock_guard lock(feed_mu_);
  feed_ = std::make_unique<postgres_internal::ChangeFeed>(
      options_.url, origin_,
      postgres_internal::FeedCallbacks{
          .on_commit = [cache](uint64_t generation, const std::vector<std::string>& tables) { cache->Apply(generation, tables); },
          .on_listening = [cache](uint64_t generation) { cache->Reset(generation); },
          .on_lost = [cache] { cache->Suspend(); },
      });
}

PostgresStore::~PostgresStore() { Close(); }

Status PostgresStore::Write(const std::function<Status(WriteTxn&)>& fn) { return writes_.Submit(fn); }

void PostgresStore::CommitBatch(const std::vector<internal::PendingWrite*>& batch) {
  Connection& conn = *writer_conn_;
  Txn txn(conn);
  const uint64_t round_trips_before = conn.round_trips();
  // Statements go out queued (Connection::Queue, SetDeferWrites) and share round trips: BEGIN and
  // the lock go with the first read; a closure's savepoint, its writes and its RELEASE go with the
  // next read of any closure after it, or with the COMMIT. So a closure that returned OK is pending
  // until every statement of it has been answered (then it commits with the transaction) or one of
  // them failed (then it is undone, and so is every closure after it, whose statements PostgreSQL
  // skipped).
  struct Closure {
    internal::PendingWrite* w;
    uint64_t begin;                   // its SAVEPOINT's position (Connection::next_position)
    uint64_t end;                     // past its RELEASE's
    std::vector<std::string> tables;  // what it wrote, to announce
  };
  std::deque<Closure> pending;
  std::vector<Closure> committing;
  bool open = false;
  uint64_t first_closure = 0;  // the position after BEGIN and the lock
  // The open transaction is gone: nothing in it will be committed.
  auto lose_transaction = [&](const Status& cause) {
    for (Closure& c : committing) c.w->result = cause;
    for (Closure& c : pending) c.w->result = cause;
    committing.clear();
    pending.clear();
    conn.DiscardQueued();
    if (!conn.Idle()) conn.Execute("ROLLBACK").IgnoreError();
    conn.TakeFailure();
    open = false;
  };
  // Decides the pending closures after round trips; returns the first failure they had, if any.
  auto resolve = [&]() -> std::optional<Connection::Failure> {
    std::optional<Connection::Failure> failure = conn.TakeFailure();
    const uint64_t answered = failure ? failure->position : conn.answered();
    while (!pending.empty() && pending.front().end <= answered) {
      committing.push_back(std::move(pending.front()));
      pending.pop_front();
    }
    if (!failure) return failure;
    for (Closure& c : pending) {
      c.w->result = &c == &pending.front() && failure->position >= c.begin
                        ? failure->status
                        : Aborted("postgresql: not written: another write of the same transaction failed; try again");
    }
    pending.clear();
    return failure;
  };
  // Rolls the transaction back to the last savepoint still open: the failed closure's. OK, or
  // the transaction is lost.
  auto undo = [&]() -> bool {
    Status s = OkStatus();
    // What is queued goes out first (a failure there aborts the rest of that round trip, so the
    // undo is sent once more on its own).
    for (int attempt = 0; attempt < 2; ++attempt) {
      conn.Queue("ROLLBACK TO SAVEPOINT w");
      conn.Queue("RELEASE SAVEPOINT w");
      s = conn.Flush();
      if (s.ok()) break;
    }
    // The first attempt's round trip may have carried other closures' statements, and failed.
    std::optional<Connection::Failure> failure = resolve();
    if (s.ok() && failure && failure->position < first_closure) s = failure->status;
    if (s.ok()) return true;
    lose_transaction(s);
    return false;
  };

  for (internal::PendingWrite* w : batch) {
    if (!open) {
      if (Status s = conn.EnsureConnected(); !s.ok()) {
        w->result = s;
        continue;
      }
      conn.TakeFailure();
      conn.Queue("BEGIN");
      // One write transaction at a time on the whole database, whichever server runs it.
      conn.Queue(fmt::format("SELECT pg_advisory_xact_lock({})", postgres_internal::kWriteLock));
      first_closure = conn.next_position();
      open = true;
    }
    const uint64_t begin = conn.next_position();
    conn.Queue("SAVEPOINT w");
    txn.BeginClosure(begin);
    txn.TakeLastError().IgnoreError();
    Status result = internal::RunClosure<WriteTxn>(*w->fn, txn);
    // A closure that ignored a failed Put or Delete must not commit the writes that did work.
    if (Status ignored = txn.TakeLastError(); result.ok() && !ignored.ok()) result = ignored;
    // Its reads' round trips may have decided closures before it.
    if (std::optional<Connection::Failure> failure = resolve(); failure && failure->position < first_closure) {
      w->result = failure->status;  // BEGIN or the lock: nothing of the transaction stands
      lose_transaction(failure->status);
      continue;
    }
    if (result.ok()) {
      conn.Queue("RELEASE SAVEPOINT w");
      pending.push_back(Closure{w, begin, conn.next_position(), conn.TakeWrittenTables()});
      continue;
    }
    w->result = std::move(result);
    conn.TakeWrittenTables();  // undone: nothing of it is announced
    // Nothing of it sent yet: forgetting its statements undoes it. Otherwise the savepoint does
    // (without it, this closure's writes cannot be separated from the others').
    if (!conn.DiscardQueuedFrom(begin)) undo();
  }

  // What the committing closures wrote is announced in the transaction, in the COMMIT's round
  // trip: other servers hear of it once it has committed, and never of an undone closure.
  while (open) {
    if (pending.empty() && committing.empty()) {
      // Nothing to commit: nothing is sent if nothing was (every closure failed before a read).
      conn.DiscardQueued();
      if (!conn.Idle()) conn.Execute("ROLLBACK").IgnoreError();
      break;
    }
    std::vector<std::string> announced;
    for (const Closure& c : committing) announced.insert(announced.end(), c.tables.begin(), c.tables.end());
    for (const Closure& c : pending) announced.insert(announced.end(), c.tables.begin(), c.tables.end());
    std::sort(announced.begin(), announced.end());
    announced.erase(std::unique(announced.begin(), announced.end()), announced.end());
    const uint64_t commit_at = conn.next_position();
    if (!announced.empty())
      conn.Queue(postgres_internal::AnnounceSql(postgres_internal::kChannel, origin_,
                                                postgres_internal::ChangedTables(announced)));
    conn.Queue("COMMIT");
    const Status s = conn.Flush();
    const std::optional<Connection::Failure> failure = resolve();
    if (s.ok() && !failure) {
      for (Closure& c : committing) c.w->result = OkStatus();
      break;
    }
    // A closure's statement failed: it and the closures after it are out (resolve); undo them and
    // commit the others. A failure of the announcement or the COMMIT itself loses the
    // transaction: a COMMIT whose answer is lost may or may not have landed, and is not
    // acknowledged.
    if (failure && failure->position >= first_closure && failure->position < commit_at) {
      if (undo()) continue;
      break;
    }
    lose_transaction(s.ok() ? failure->status : s);
  }
  round_trips_ += conn.round_trips() - round_trips_before;
  ++transactions_;
}

PostgresStore::WriterStats PostgresStore::writer_stats() const {
  return WriterStats{.transactions = transactions_, .round_trips = round_trips_};
}

Status PostgresStore::Read(const std::function<Status(ReadTxn&)>& fn) {
  return readers_.With([&](Connection& conn) -> Status {
    RETURN_IF_ERROR(conn.BeginRead());
    Txn txn(conn);
    Status result = internal::RunClosure<ReadTxn>(fn, txn);
    conn.EndRead();
    return result;
  });
}

namespace {

// A run from the cache alone, as of generation `at`: its first miss ends it (kAborted, and
// missed()), whatever the closure then returns.
class CacheOnlyTxn : public ReadTxn {
 public:
  CacheOnlyTxn(postgres_internal::ReadCache& cache, uint64_t at) : cache_(cache), at_(at) {}
  StatusOr<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    if (!missed_) {
      if (auto hit = cache_.Get(at_, table, key)) return std::move(*hit);
    }
    return Miss();
  }
  StatusOr<std::vector<Row>> Scan(std::string_view table, const Range& range, size_t limit, Direction dir) override {
    if (!missed_) {
      if (auto hit = cache_.Scan(at_, table, range, limit, dir)) return std::move(*hit);
    }
    return Miss();
  }
  bool missed() const { return missed_; }

 private:
  Status Miss() {
    missed_ = true;
    return Aborted("postgresql: not in the read cache");
  }
  postgres_internal::ReadCache& cache_;
  const uint64_t at_;
  bool missed_ = false;
};

// A run against a database snapshot that fills the cache with what it reads, once the snapshot's
// generation (read in it, on its first round trip) is known.
class FillingTxn : public ReadTxn {
 public:
  FillingTxn(Connection& conn, postgres_internal::ReadCache& cache) : txn_(conn), cache_(cache) {
    conn.QueueQuery(postgres_internal::ReadGenerationSql(), &generation_text_);
  }
  StatusOr<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    ASSIGN_OR_RETURN(std::optional<std::string> value, txn_.Get(table, key));
    if (std::optional<uint64_t> at = Snapshot()) cache_.FillGet(*at, table, key, value);
    return value;
  }
  StatusOr<std::vector<Row>> Scan(std::string_view table, const Range& range, size_t limit, Direction dir) override {
    ASSIGN_OR_RETURN(std::vector<Row> rows, txn_.Scan(table, range, limit, dir));
    if (std::optional<uint64_t> at = Snapshot()) cache_.FillScan(*at, table, range, limit, dir, rows);
    return rows;
  }

 private:
  std::optional<uint64_t> Snapshot() {
    if (!snapshot_ && generation_text_) {
      if (StatusOr<uint64_t> g = postgres_internal::ParseGeneration(*generation_text_); g.ok()) snapshot_ = *g;
    }
    return snapshot_;
  }
  Txn txn_;
  postgres_internal::ReadCache& cache_;
  std::optional<std::string> generation_text_;
  std::optional<uint64_t> snapshot_;
};

}  // namespace

Status PostgresStore::ReadRepeatable(const std::function<Status(ReadTxn&)>& fn) {
  if (!cache_) return Read(fn);
  if (reads_closed_) return internal::StoreClosedError();
  // The generation as of after this call: the cache may answer once it has heard that far (it
  // normally has within a millisecond). Otherwise, or on its first miss, the database answers.
  if (StatusOr<uint64_t> barrier = barrier_->Await(); barrier.ok()) {
    if (std::optional<uint64_t> at = cache_->AwaitGeneration(*barrier, std::chrono::milliseconds(10))) {
      CacheOnlyTxn txn(*cache_, *at);
      Status result = internal::RunClosure<ReadTxn>(fn, txn);
      if (!txn.missed()) return result;
      ++reruns_;
    }
  }
  return readers_.With([&](Connection& conn) -> Status {
    RETURN_IF_ERROR(conn.BeginRead());
    FillingTxn txn(conn, *cache_);
    Status result = internal::RunClosure<ReadTxn>(fn, txn);
    conn.EndRead();
    return result;
  });
}

PostgresStore::CacheStats PostgresStore::cache_stats() const {
  if (!cache_) return {};
  const postgres_internal::ReadCache::Stats s = cache_->stats();
  return CacheStats{.hits = s.hits, .misses = s.misses, .generation_reads = barrier_->queries(), .reruns = reruns_};
}

void PostgresStore::SetChangeListener(ChangeListener listener) {
  std::lock_guard lock(feed_mu_);
  if (closed_ || !listener) return;
  if (!feed_) feed_ = std::make_unique<postgres_internal::ChangeFeed>(options_.url, origin_, postgres_internal::FeedCallbacks{});
  feed_->SetListener(std::move(listener));
}

Status PostgresStore::Broadcast(std::string_view message) {
  if (message.size() > kMaxMessage) return InvalidArgument("a broadcast message is larger than kMaxMessage");
  return readers_.With([&](Connection& conn) -> Status {
    return conn
        .QueryText("SELECT pg_notify($1, $2)",
                   {std::string(postgres_internal::kMessageChannel), fmt::format("{} {}", origin_, message)})
        .status();
  });
}

void PostgresStore::SetMessageListener(MessageListener listener) {
  std::lock_guard lock(feed_mu_);
  if (closed_ || !listener) return;
  if (!feed_) feed_ = std::make_unique<postgres_internal::ChangeFeed>(options_.url, origin_, postgres_internal::FeedCallbacks{});
  feed_->SetMessageListener(std::move(listener));
}

void PostgresStore::Close() {
  std::call_once(close_once_, [this] {
    std::unique_ptr<postgres_internal::ChangeFeed> feed;
    {
      std::lock_guard lock(feed_mu_);
      closed_ = true;
      feed = std::move(feed_);
    }
    feed.reset();  // joins its thread: no call after Close
    if (cache_) cache_->Suspend();
    reads_closed_ = true;
    writes_.Close();
    readers_.Close();
    writer_conn_.reset();
  });
}

}  // namespace paddock::store
