#include "store/postgres/postgres_store.h"

#include <algorithm>
#include <exception>
#include <utility>

#include <fmt/format.h>

#include "common/encoding.h"
#include "store/postgres/internal/change_feed.h"
#include "store/postgres/internal/connection.h"

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
  return std::unique_ptr<PostgresStore>(new PostgresStore(options, std::move(writer), std::move(readers)));
}

PostgresStore::PostgresStore(PostgresOptions options, std::unique_ptr<Connection> writer,
                             std::vector<std::unique_ptr<Connection>> readers)
    : options_(std::move(options)),
      origin_(RandomString(16, "0123456789abcdef")),
      writer_conn_(std::move(writer)),
      readers_(std::move(readers)),
      writes_(options_.max_batch, [this](const auto& batch) { CommitBatch(batch); }) {
  writes_.Start();
}

PostgresStore::~PostgresStore() { Close(); }

Status PostgresStore::Write(const std::function<Status(WriteTxn&)>& fn) { return writes_.Submit(fn); }

void PostgresStore::CommitBatch(const std::vector<internal::PendingWrite*>& batch) {
  Connection& conn = *writer_conn_;
  Txn txn(conn);
  std::vector<internal::PendingWrite*> committing;  // closures that returned OK; their result waits for COMMIT
  std::vector<std::string> announced;  // the tables they wrote (with repeats)
  bool open = false;
  // The open transaction is gone: nothing in it will be committed.
  auto lose_transaction = [&](const Status& cause) {
    for (internal::PendingWrite* w : committing) w->result = cause;
    committing.clear();
    announced.clear();
    if (!conn.Idle()) conn.Execute("ROLLBACK").IgnoreError();
    open = false;
  };
  // Statements go out queued (Connection::Queue, SetDeferWrites): BEGIN, the lock and a closure's
  // savepoint with its first read; its writes with its next read or its end, where one round trip
  // sends them, the RELEASE, and brings back the first failure.
  for (internal::PendingWrite* w : batch) {
    if (!open) {
      if (Status s = conn.EnsureConnected(); !s.ok()) {
        w->result = s;
        continue;
      }
      conn.Queue("BEGIN");
      // One write transaction at a time on the whole database, whichever server runs it.
      conn.Queue(fmt::format("SELECT pg_advisory_xact_lock({})", postgres_internal::kWriteLock));
      open = true;
    }
    conn.Queue("SAVEPOINT w");
    txn.TakeLastError().IgnoreError();
    Status result = internal::RunClosure<WriteTxn>(*w->fn, txn);
    // A closure that ignored a failed Put or Delete must not commit the writes that did work.
    if (Status ignored = txn.TakeLastError(); result.ok() && !ignored.ok()) result = ignored;
    if (result.ok()) {
      conn.Queue("RELEASE SAVEPOINT w");
      Status s = conn.Flush();
      if (s.ok()) {
        committing.push_back(w);
        for (std::string& t : conn.TakeWrittenTables()) announced.push_back(std::move(t));
        continue;
      }
      result = s;
    }
    w->result = std::move(result);
    conn.TakeWrittenTables();  // undone below: nothing of it is announced
    // Undo it: what it queued goes out first (a failure there aborts the rest of that round trip,
    // so the undo is sent once more on its own).
    Status undo = OkStatus();
    for (int attempt = 0; attempt < 2; ++attempt) {
      conn.Queue("ROLLBACK TO SAVEPOINT w");
      conn.Queue("RELEASE SAVEPOINT w");
      undo = conn.Flush();
      if (undo.ok()) break;
    }
    // Without its savepoint, this closure's writes cannot be separated from the others'.
    if (!undo.ok()) lose_transaction(undo);
  }

  if (!open) return;
  // What the committing closures wrote is announced in the transaction, in the COMMIT's round
  // trip: other servers hear of it once it has committed, and never of an undone closure.
  std::string commit = "COMMIT";
  if (!announced.empty()) {
    std::sort(announced.begin(), announced.end());
    announced.erase(std::unique(announced.begin(), announced.end()), announced.end());
    commit = fmt::format("SELECT pg_notify('{}', '{}'); COMMIT", postgres_internal::kChannel,
                         postgres_internal::ChangePayload(origin_, announced));
  }
  // A COMMIT whose answer is lost may or may not have landed: it is not acknowledged.
  if (Status s = conn.Execute(commit); !s.ok()) {
    lose_transaction(s);
    return;
  }
  for (internal::PendingWrite* w : committing) w->result = OkStatus();
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

void PostgresStore::SetChangeListener(ChangeListener listener) {
  std::lock_guard lock(feed_mu_);
  if (closed_ || feed_ || !listener) return;
  feed_ = std::make_unique<postgres_internal::ChangeFeed>(options_.url, origin_, std::move(listener));
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
    writes_.Close();
    readers_.Close();
    writer_conn_.reset();
  });
}

}  // namespace paddock::store
