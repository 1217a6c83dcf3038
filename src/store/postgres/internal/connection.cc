#include "store/postgres/internal/connection.h"

#include <libpq-fe.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstddef>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "store/postgres/internal/read_cache.h"

namespace paddock::store::postgres_internal {
namespace {

constexpr Oid kByteaOid = 17;
constexpr Oid kInt8Oid = 20;

// A status for libpq's failure at `what`: the connection's loss, PostgreSQL shutting down or out
// of resources is kUnavailable (the next attempt may work); anything else is kInternal.
Status PgError(pg_conn* conn, const PGresult* result, std::string_view what) {
  const char* message = result != nullptr ? PQresultErrorMessage(result) : PQerrorMessage(conn);
  std::string text(message != nullptr ? message : "");
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  const std::string_view sqlstate = state != nullptr ? state : "";
  const bool lost = PQstatus(conn) != CONNECTION_OK || sqlstate.starts_with("08") || sqlstate.starts_with("53") ||
                    sqlstate.starts_with("57");
  std::string full = fmt::format("postgresql: {}: {}", what, text.empty() ? "no answer" : text);
  return lost ? Unavailable(std::move(full)) : Internal(std::move(full));
}

void IgnoreNotice(void*, const char*) {}

// A COMMIT of a transaction that had failed "succeeds" and answers ROLLBACK: nothing committed.
Status CommitAnswer(const PGresult* result) {
  if (std::string_view(PQcmdStatus(const_cast<PGresult*>(result))) == "COMMIT") return OkStatus();
  return Internal("postgresql: COMMIT rolled back: the transaction had failed");
}

Status UnknownTable(std::string_view table) {
  return Internal(fmt::format("store table '{}' is not declared by any module", table));
}

// libpq's binary int8: eight bytes, most significant first.
std::string Int8(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) out[static_cast<size_t>(i)] = static_cast<char>(v & 0xff);
  return out;
}

// A statement's parameters as libpq takes them: every one binary.
template <typename Strings>
struct BinaryParams {
  explicit BinaryParams(const Strings& params) : formats(params.size(), 1) {
    for (const auto& p : params) {
      values.push_back(p.data());
      lengths.push_back(static_cast<int>(p.size()));
    }
  }
  int count() const { return static_cast<int>(values.size()); }
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
};

// A prepared statement's name, "p<table index>_<op>", without allocating.
struct StatementName {
  char text[24] = {};
};
StatementName NameOf(int index, Op op) {
  StatementName n;
  fmt::format_to_n(n.text, sizeof n.text - 1, "p{}_{}", index, static_cast<int>(op));
  return n;
}

}  // namespace

std::string StatementSql(std::string_view table, Op op) {
  const std::string t = fmt::format("\"t_{}\"", table);
  switch (op) {
    case Op::kGet:
      return fmt::format("SELECT v FROM {} WHERE k = $1", t);
    case Op::kPut:
      return fmt::format("INSERT INTO {} (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v", t);
    case Op::kDelete:
      return fmt::format("DELETE FROM {} WHERE k = $1", t);
    case Op::kScanForward:
      return fmt::format("SELECT k, v FROM {} WHERE k >= $1 AND k < $2 ORDER BY k LIMIT $3", t);
    case Op::kScanForwardToEnd:
      return fmt::format("SELECT k, v FROM {} WHERE k >= $1 ORDER BY k LIMIT $2", t);
    case Op::kScanBackward:
      return fmt::format("SELECT k, v FROM {} WHERE k >= $1 AND k < $2 ORDER BY k DESC LIMIT $3", t);
    case Op::kScanBackwardToEnd:
      return fmt::format("SELECT k, v FROM {} WHERE k >= $1 ORDER BY k DESC LIMIT $2", t);
    case Op::kDeleteRange:
      return fmt::format("DELETE FROM {} WHERE k >= $1 AND k < $2", t);
    case Op::kDeleteRangeToEnd:
      return fmt::format("DELETE FROM {} WHERE k >= $1", t);
  }
  return "";
}

struct Connection::Result {
  explicit Result(PGresult* r) : result(r) {}
  Result(Result&& o) noexcept : result(std::exchange(o.result, nullptr)) {}
  Result& operator=(Result&&) = delete;
  ~Result() { PQclear(result); }
  PGresult* result;
};

pg_conn* ConnectBounded(const std::string& url) {
  // Earlier keywords are the defaults: the URL, expanded in place of dbname, overrides them.
  const char* const keywords[] = {"keepalives",       "keepalives_idle", "keepalives_interval", "keepalives_count",
                                  "tcp_user_timeout", "connect_timeout", "dbname",              nullptr};
  const char* const values[] = {"1", "5", "2", "2", "10000", "10", url.c_str(), nullptr};
  return PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
}

StatusOr<std::unique_ptr<Connection>> Connection::Open(const std::string& url,
                                                       std::shared_ptr<const TableCatalog> catalog) {
  pg_conn* conn = ConnectBounded(url);
  if (conn == nullptr) return Unavailable("postgresql: out of memory connecting");
  std::unique_ptr<Connection> c(new Connection(conn, url, std::move(catalog)));
  if (PQstatus(conn) != CONNECTION_OK) return PgError(conn, nullptr, "connect");
  PQsetNoticeProcessor(conn, IgnoreNotice, nullptr);
  // An acknowledged write is on PostgreSQL's disk, whatever the server's default says.
  RETURN_IF_ERROR(c->Execute("SET synchronous_commit = on"));
  return c;
}

Connection::Connection(pg_conn* conn, std::string url, std::shared_ptr<const TableCatalog> catalog)
    : conn_(conn),
      url_(std::move(url)),
      catalog_(std::move(catalog)),
      prepared_(catalog_->size() * kOpCount, false),
      written_(catalog_->size(), false) {}

Connection::~Connection() { PQfinish(conn_); }

Status Connection::Execute(std::string_view sql) {
  Settle();
  RETURN_IF_ERROR(Flush());  // what was queued goes first
  ++round_trips_;
  Result r(PQexec(conn_, std::string(sql).c_str()));
  const ExecStatusType status = PQresultStatus(r.result);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) return PgError(conn_, r.result, sql);
  if (sql == "COMMIT") return CommitAnswer(r.result);
  return OkStatus();
}

StatusOr<std::optional<std::string>> Connection::QueryText(std::string_view sql, const std::vector<std::string>& params) {
  Settle();
  ++round_trips_;
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p.c_str());
  Result r(PQexecParams(conn_, std::string(sql).c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                        nullptr, nullptr, 0));
  if (PQresultStatus(r.result) != PGRES_TUPLES_OK) return PgError(conn_, r.result, sql);
  if (PQntuples(r.result) == 0 || PQgetisnull(r.result, 0, 0)) return std::optional<std::string>();
  return std::optional<std::string>(PQgetvalue(r.result, 0, 0));
}

StatusOr<std::optional<std::string>> Connection::QueryPrepared(std::string_view name, std::string_view sql) {
  Settle();
  const std::string statement(name);
  if (std::find(prepared_queries_.begin(), prepared_queries_.end(), statement) == prepared_queries_.end()) {
    ++round_trips_;
    Result p(PQprepare(conn_, statement.c_str(), std::string(sql).c_str(), 0, nullptr));
    if (PQresultStatus(p.result) != PGRES_COMMAND_OK) return PgError(conn_, p.result, sql);
    prepared_queries_.push_back(statement);
  }
  ++round_trips_;
  Result r(PQexecPrepared(conn_, statement.c_str(), 0, nullptr, nullptr, nullptr, 0));
  if (PQresultStatus(r.result) != PGRES_TUPLES_OK) return PgError(conn_, r.result, sql);
  if (PQntuples(r.result) == 0 || PQgetisnull(r.result, 0, 0)) return std::optional<std::string>();
  return std::optional<std::string>(PQgetvalue(r.result, 0, 0));
}

void Connection::Queue(std::string sql) { queue_.push_back(Queued{.sql = std::move(sql)}); }

Status Connection::BeginRead() {
  Settle();
  RETURN_IF_ERROR(EnsureConnected());
  Queue("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");
  return OkStatus();
}

void Connection::EndRead() {
  if (!queue_.empty()) {  // no statement ran: BEGIN never went out
    queue_.clear();
    return;
  }
  if (PQstatus(conn_) != CONNECTION_OK || PQtransactionStatus(conn_) == PQTRANS_IDLE) return;
  // A read-only transaction's COMMIT cannot fail in a way that matters to the read, which is done.
  if (PQsendQuery(conn_, "COMMIT") == 1) commit_in_flight_ = true;
}

void Connection::Settle() {
  if (!commit_in_flight_) return;
  commit_in_flight_ = false;
  while (PGresult* r = PQgetResult(conn_)) PQclear(r);
}

Status Connection::EnsureConnected() {
  Settle();
  if (PQstatus(conn_) == CONNECTION_OK) return OkStatus();
  PQreset(conn_);
  if (PQstatus(conn_) != CONNECTION_OK) return PgError(conn_, nullptr, "reconnect");
  std::fill(prepared_.begin(), prepared_.end(), false);
  prepared_queries_.clear();
  PQsetNoticeProcessor(conn_, IgnoreNotice, nullptr);
  return Execute("SET synchronous_commit = on");
}

bool Connection::Idle() const { return PQtransactionStatus(conn_) == PQTRANS_IDLE; }

Status Connection::Flush() { return Send(std::nullopt).status(); }

StatusOr<Connection::Result> Connection::Run(std::string_view table, Op op, const std::vector<std::string_view>& params) {
  Settle();
  const int index = catalog_->Index(table);
  if (index < 0) return UnknownTable(table);
  // Nothing queued and the statement prepared: one plain round trip on the caller's own bytes.
  if (queue_.empty() && prepared_[static_cast<size_t>(index) * kOpCount + static_cast<size_t>(op)]) {
    const uint64_t position = sent_++;
    ++round_trips_;
    StatusOr<Result> r = ExecPrepared(index, op, params);
    Answered(position, 1, r.status(), 0);
    return r;
  }
  Queued q{.index = index, .op = op};
  for (std::string_view p : params) q.params.emplace_back(p);
  ASSIGN_OR_RETURN(std::optional<Result> r, Send(std::move(q)));
  if (!r) return PgError(conn_, nullptr, What(Queued{.index = index, .op = op}));
  return std::move(*r);
}

std::vector<std::string> Connection::TakeWrittenTables() {
  std::vector<std::string> out;
  for (size_t i = 0; i < written_.size(); ++i) {
    if (!written_[i]) continue;
    out.push_back(catalog_->name(static_cast<int>(i)));
    written_[i] = false;
  }
  return out;
}

Status Connection::Write(std::string_view table, Op op, const std::vector<std::string_view>& params) {
  const int index = catalog_->Index(table);
  if (index >= 0) written_[static_cast<size_t>(index)] = true;
  if (!defer_writes_) return Run(table, op, params).status();
  if (index < 0) return UnknownTable(table);
  Queued q{.index = index, .op = op};
  for (std::string_view p : params) q.params.emplace_back(p);
  queue_.push_back(std::move(q));
  return OkStatus();
}

StatusOr<std::optional<Connection::Result>> Connection::Send(std::optional<Queued> last) {
  std::vector<Queued> items = std::exchange(queue_, {});
  if (last) items.push_back(std::move(*last));
  if (items.empty()) return std::optional<Result>();
  const uint64_t base = std::exchange(sent_, sent_ + items.size());
  size_t failed = 0;
  StatusOr<std::optional<Result>> r = SendOnce(items, &failed);
  // A transaction's first round trip on a connection whose server went away (a restart) finds out
  // only now; nothing of the transaction ran, so connect again and send it once more.
  const bool begins = items.front().index < 0 && items.front().sql.starts_with("BEGIN");
  if (r.ok() || !begins || PQstatus(conn_) == CONNECTION_OK) {
    Answered(base, items.size(), r.status(), failed);
    return r;
  }
  if (Status s = EnsureConnected(); !s.ok()) {
    Answered(base, items.size(), s, 0);
    return s;
  }
  StatusOr<std::optional<Result>> again = SendOnce(items, &failed);
  Answered(base, items.size(), again.status(), failed);
  return again;
}

void Connection::Answered(uint64_t base, size_t count, const Status& status, size_t failed) {
  if (status.ok()) {
    answered_ = base + count;
    return;
  }
  answered_ = base + failed;
  if (!failure_) failure_ = Failure{base + failed, status};
}

StatusOr<std::optional<Connection::Result>> Connection::SendOnce(const std::vector<Queued>& items, size_t* failed) {
  *failed = 0;
  ++round_trips_;
  // One statement alone: a plain round trip.
  if (items.size() == 1 && items[0].index >= 0 && prepared_[Slot(items[0])]) {
    ASSIGN_OR_RETURN(Result r, ExecPrepared(items[0].index, items[0].op, items[0].params));
    return std::optional<Result>(std::move(r));
  }
  // Otherwise one pipeline: every item (each statement prepared first if this connection has not
  // yet), then a sync; the answers come back in order, each followed by a null, then the sync's.
  if (PQenterPipelineMode(conn_) != 1) return PgError(conn_, nullptr, "pipeline mode");
  // What each answer is (its text is made only for a failure's message).
  struct Expected {
    const Queued* item;
    bool keep = false;           // the last item's answer, returned
    size_t prepares = SIZE_MAX;  // a prepare's statement slot, marked prepared once it succeeded
  };
  const auto what = [&](const Expected& e) {
    if (e.item->index < 0) return e.item->sql;
    return e.prepares != SIZE_MAX ? std::string("PREPARE ") + NameOf(e.item->index, e.item->op).text : What(*e.item);
  };
  std::vector<Expected> expected;
  std::vector<size_t> preparing;  // slots this pipeline prepares (once each)
  bool sent = true;
  for (size_t i = 0; i < items.size() && sent; ++i) {
    const Queued& q = items[i];
    if (q.index < 0) {
      sent = PQsendQueryParams(conn_, q.sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0) == 1;
      expected.push_back({&q, false});
      continue;
    }
    if (!prepared_[Slot(q)] && std::find(preparing.begin(), preparing.end(), Slot(q)) == preparing.end()) {
      preparing.push_back(Slot(q));
      std::vector<Oid> types(q.params.size(), kByteaOid);
      if (q.op == Op::kScanForward || q.op == Op::kScanForwardToEnd || q.op == Op::kScanBackward ||
          q.op == Op::kScanBackwardToEnd)
        types.back() = kInt8Oid;
      const std::string sql = StatementSql(catalog_->name(q.index), q.op);
      sent = PQsendPrepare(conn_, NameOf(q.index, q.op).text, sql.c_str(), static_cast<int>(types.size()), types.data()) == 1;
      expected.push_back({&q, false, Slot(q)});
      if (!sent) break;
    }
    const BinaryParams p(q.params);
    sent = PQsendQueryPrepared(conn_, NameOf(q.index, q.op).text, p.count(), p.values.data(), p.lengths.data(), p.formats.data(),
                               1) == 1;
    expected.push_back({&q, i + 1 == items.size()});
  }
  if (sent) sent = PQpipelineSync(conn_) == 1;
  Status failure = sent ? OkStatus() : PgError(conn_, nullptr, "send");
  std::optional<Result> kept;
  // The first item whose answer failed or was not read (with nothing read, the first).
  const auto index_of = [&](const Expected& e) { return static_cast<size_t>(e.item - items.data()); };
  for (size_t i = 0; sent && i < expected.size(); ++i) {
    PGresult* r = PQgetResult(conn_);
    if (r == nullptr) {  // the connection is gone
      if (failure.ok()) {
        failure = PgError(conn_, nullptr, what(expected[i]));
        *failed = index_of(expected[i]);
      }
      break;
    }
    const ExecStatusType status = PQresultStatus(r);
    bool ok = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
    // Prepared only if its prepare ran: one skipped in an aborted pipeline is prepared next time.
    if (ok && expected[i].prepares != SIZE_MAX) prepared_[expected[i].prepares] = true;
    const Queued& item = *expected[i].item;
    if (ok && item.index < 0 && item.sql == "COMMIT") {
      if (Status c = CommitAnswer(r); !c.ok()) {
        ok = false;
        if (failure.ok()) {
          failure = c;
          *failed = index_of(expected[i]);
        }
      }
    }
    if (!ok && failure.ok()) {
      failure = PgError(conn_, status == PGRES_PIPELINE_ABORTED ? nullptr : r, what(expected[i]));
      *failed = index_of(expected[i]);
    }
    if (ok && item.into != nullptr)
      *item.into = PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) ? std::optional<std::string>(PQgetvalue(r, 0, 0))
                                                              : std::nullopt;
    if (expected[i].keep)
      kept.emplace(r);
    else
      PQclear(r);
    while (PGresult* extra = PQgetResult(conn_)) PQclear(extra);  // the null that ends each answer
  }
  // The sync's answer; then out of pipeline mode.
  while (sent && PQstatus(conn_) == CONNECTION_OK) {
    PGresult* r = PQgetResult(conn_);
    if (r == nullptr) continue;
    const bool sync = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
    PQclear(r);
    if (sync) break;
  }
  if (PQpipelineStatus(conn_) != PQ_PIPELINE_OFF) PQexitPipelineMode(conn_);
  if (!failure.ok()) return failure;
  return kept;
}

template <typename Strings>
StatusOr<Connection::Result> Connection::ExecPrepared(int index, Op op, const Strings& params) {
  const BinaryParams p(params);
  Result r(PQexecPrepared(conn_, NameOf(index, op).text, p.count(), p.values.data(), p.lengths.data(),
                          p.formats.data(), 1));
  const ExecStatusType status = PQresultStatus(r.result);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
    return PgError(conn_, r.result, What(Queued{.index = index, .op = op}));
  return r;
}

size_t Connection::Slot(const Queued& q) const {
  return static_cast<size_t>(q.index) * kOpCount + static_cast<size_t>(q.op);
}

std::string Connection::What(const Queued& q) const {
  return fmt::format("{} on {}", StatementSql(catalog_->name(q.index), q.op).substr(0, 6), catalog_->name(q.index));
}

StatusOr<std::optional<std::string>> Connection::Get(std::string_view table, std::string_view key) {
  ASSIGN_OR_RETURN(Result r, Run(table, Op::kGet, {key}));
  if (PQntuples(r.result) == 0) return std::optional<std::string>();
  return std::optional<std::string>(std::in_place, PQgetvalue(r.result, 0, 0),
                                    static_cast<size_t>(PQgetlength(r.result, 0, 0)));
}

StatusOr<std::vector<Row>> Connection::Scan(std::string_view table, const Range& range, size_t limit, Direction dir) {
  // LIMIT is a signed int8: "no limit" (SIZE_MAX) is its largest value.
  const std::string n = Int8(std::min<uint64_t>(limit, static_cast<uint64_t>(INT64_MAX)));
  const bool to_end = range.end.empty();
  const Op op = dir == Direction::kForward ? (to_end ? Op::kScanForwardToEnd : Op::kScanForward)
                                           : (to_end ? Op::kScanBackwardToEnd : Op::kScanBackward);
  std::vector<std::string_view> params = {range.begin};
  if (!to_end) params.push_back(range.end);
  params.push_back(n);
  ASSIGN_OR_RETURN(Result r, Run(table, op, params));
  std::vector<Row> rows;
  const int count = PQntuples(r.result);
  rows.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i)
    rows.push_back(Row{std::string(PQgetvalue(r.result, i, 0), static_cast<size_t>(PQgetlength(r.result, i, 0))),
                       std::string(PQgetvalue(r.result, i, 1), static_cast<size_t>(PQgetlength(r.result, i, 1)))});
  return rows;
}

Status Connection::Put(std::string_view table, std::string_view key, std::string_view value) {
  return Write(table, Op::kPut, {key, value});
}

Status Connection::Delete(std::string_view table, std::string_view key) { return Write(table, Op::kDelete, {key}); }

Status Connection::DeleteRange(std::string_view table, const Range& range) {
  if (!range.end.empty()) {
    if (range.end <= range.begin) {
      if (catalog_->Index(table) < 0) return UnknownTable(table);
      return OkStatus();  // empty or inverted: nothing
    }
    return Write(table, Op::kDeleteRange, {range.begin, range.end});
  }
  return Write(table, Op::kDeleteRangeToEnd, {range.begin});
}

StatusOr<std::optional<std::string>> Txn::Get(std::string_view table, std::string_view key) {
  auto r = conn_.Get(table, key);
  if (!r.ok()) return Note(r.status());
  return r;
}

StatusOr<std::vector<Row>> Txn::Scan(std::string_view table, const Range& range, size_t limit, Direction dir) {
  auto r = conn_.Scan(table, range, limit, dir);
  if (!r.ok()) return Note(r.status());
  return r;
}

Status Txn::Put(std::string_view table, std::string_view key, std::string_view value) {
  return Note(conn_.Put(table, key, value));
}

Status Txn::Delete(std::string_view table, std::string_view key) { return Note(conn_.Delete(table, key)); }

Status Txn::DeleteRange(std::string_view table, const Range& range) { return Note(conn_.DeleteRange(table, range)); }

Status Txn::Note(Status s) {
  if (s.ok()) return s;
  if (const auto& f = conn_.failure(); f && f->position < closure_begin_)
    s = Aborted("postgresql: not written: another write of the same transaction failed; try again");
  if (last_error_.ok()) last_error_ = s;
  return s;
}

Status Txn::TakeLastError() { return std::exchange(last_error_, OkStatus()); }

Status Migrate(Connection& conn, const TableCatalog& catalog) {
  RETURN_IF_ERROR(conn.Execute("BEGIN"));
  Status s = [&]() -> Status {
    RETURN_IF_ERROR(conn.Execute(fmt::format("SELECT pg_advisory_xact_lock({})", kMigrationLock)));
    RETURN_IF_ERROR(conn.Execute("CREATE TABLE IF NOT EXISTS schema_modules(module text PRIMARY KEY, version integer NOT NULL)"));
    // The database's generation (read_cache.h): one row, which every announcing write bumps.
    RETURN_IF_ERROR(conn.Execute(fmt::format("CREATE TABLE IF NOT EXISTS {}(n bigint NOT NULL)", kGenerationTable)));
    RETURN_IF_ERROR(conn.Execute(fmt::format("INSERT INTO {0} SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM {0})", kGenerationTable)));
    for (const ModuleSchema& m : catalog.modules()) {
      ASSIGN_OR_RETURN(auto text, conn.QueryText("SELECT version FROM schema_modules WHERE module = $1",
                                                 {std::string(m.module)}));
      int stored = 0;
      if (text) std::from_chars(text->data(), text->data() + text->size(), stored);
      if (stored > m.version)
        return FailedPrecondition(fmt::format(
            "the database has version {} of the '{}' tables, newer than the {} this Paddock build supports; run a "
            "newer Paddock or point it at another database",
            stored, m.module, m.version));
      if (stored == m.version) continue;
      for (const TableDef& t : m.tables) {
        if (t.since_version <= stored) continue;
        RETURN_IF_ERROR(conn.Execute(
            fmt::format("CREATE TABLE IF NOT EXISTS \"t_{}\"(k bytea PRIMARY KEY, v bytea NOT NULL)", t.name)));
      }
      RETURN_IF_ERROR(conn.Execute(fmt::format("INSERT INTO schema_modules(module, version) VALUES ('{}', {}) "
                                               "ON CONFLICT (module) DO UPDATE SET version = EXCLUDED.version",
                                               m.module, m.version)));
    }
    return OkStatus();
  }();
  if (!s.ok()) {
    conn.Execute("ROLLBACK").IgnoreError();
    return s;
  }
  return conn.Execute("COMMIT");
}

}  // namespace paddock::store::postgres_internal
