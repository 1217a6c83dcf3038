#include "store/postgres/internal/connection.h"

#include <libpq-fe.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <utility>

#include <fmt/format.h>

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

Status UnknownTable(std::string_view table) {
  return Internal(fmt::format("store table '{}' is not declared by any module", table));
}

// libpq's binary int8: eight bytes, most significant first.
std::string Int8(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) out[static_cast<size_t>(i)] = static_cast<char>(v & 0xff);
  return out;
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

StatusOr<std::unique_ptr<Connection>> Connection::Open(const std::string& url,
                                                       std::shared_ptr<const TableCatalog> catalog) {
  pg_conn* conn = PQconnectdb(url.c_str());
  if (conn == nullptr) return Unavailable("postgresql: out of memory connecting");
  std::unique_ptr<Connection> c(new Connection(conn, url, std::move(catalog)));
  if (PQstatus(conn) != CONNECTION_OK) return PgError(conn, nullptr, "connect");
  PQsetNoticeProcessor(conn, IgnoreNotice, nullptr);
  // An acknowledged write is on PostgreSQL's disk, whatever the server's default says.
  RETURN_IF_ERROR(c->Execute("SET synchronous_commit = on"));
  return c;
}

Connection::Connection(pg_conn* conn, std::string url, std::shared_ptr<const TableCatalog> catalog)
    : conn_(conn), url_(std::move(url)), catalog_(std::move(catalog)), prepared_(catalog_->size() * kOpCount, false) {}

Connection::~Connection() { PQfinish(conn_); }

Status Connection::Execute(std::string_view sql) {
  Settle();
  Result r(PQexec(conn_, std::string(sql).c_str()));
  const ExecStatusType status = PQresultStatus(r.result);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) return PgError(conn_, r.result, sql);
  return OkStatus();
}

StatusOr<std::optional<std::string>> Connection::QueryText(std::string_view sql, const std::vector<std::string>& params) {
  Settle();
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p.c_str());
  Result r(PQexecParams(conn_, std::string(sql).c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                        nullptr, nullptr, 0));
  if (PQresultStatus(r.result) != PGRES_TUPLES_OK) return PgError(conn_, r.result, sql);
  if (PQntuples(r.result) == 0 || PQgetisnull(r.result, 0, 0)) return std::optional<std::string>();
  return std::optional<std::string>(PQgetvalue(r.result, 0, 0));
}

Status Connection::Begin(std::string_view sql) {
  RETURN_IF_ERROR(EnsureConnected());
  Status s = Execute(sql);
  // A connection whose server went away (a restart) only finds out when it is used: nothing has
  // run in it yet, so connecting again and beginning once more is safe.
  if (!s.ok() && PQstatus(conn_) != CONNECTION_OK) {
    RETURN_IF_ERROR(EnsureConnected());
    s = Execute(sql);
  }
  return s;
}

Status Connection::BeginRead() {
  Settle();
  RETURN_IF_ERROR(EnsureConnected());
  deferred_begin_ = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY";
  return OkStatus();
}

void Connection::EndRead() {
  if (!deferred_begin_.empty()) {  // no statement ran: BEGIN never went out
    deferred_begin_.clear();
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
  PQsetNoticeProcessor(conn_, IgnoreNotice, nullptr);
  return Execute("SET synchronous_commit = on");
}

bool Connection::Idle() const { return PQtransactionStatus(conn_) == PQTRANS_IDLE; }

StatusOr<Connection::Result> Connection::Run(std::string_view table, Op op, const std::vector<std::string_view>& params) {
  Settle();
  const int index = catalog_->Index(table);
  if (index < 0) return UnknownTable(table);
  const std::string begin = std::exchange(deferred_begin_, std::string());
  StatusOr<Result> r = RunOnce(index, op, params, begin);
  // A transaction's first statement on a connection whose server went away (a restart) finds out
  // only now; nothing ran in the transaction, so connect again and begin once more.
  if (r.ok() || begin.empty() || PQstatus(conn_) == CONNECTION_OK) return r;
  RETURN_IF_ERROR(EnsureConnected());
  return RunOnce(index, op, params, begin);
}

StatusOr<Connection::Result> Connection::RunOnce(int index, Op op, const std::vector<std::string_view>& params,
                                                 const std::string& begin) {
  const size_t slot = static_cast<size_t>(index) * kOpCount + static_cast<size_t>(op);
  const std::string name = fmt::format("p{}_{}", index, static_cast<int>(op));
  const std::string& table = catalog_->name(index);
  if (!prepared_[slot]) {
    std::vector<Oid> types(params.size(), kByteaOid);
    const bool limited = op == Op::kScanForward || op == Op::kScanForwardToEnd || op == Op::kScanBackward ||
                         op == Op::kScanBackwardToEnd;
    if (limited) types.back() = kInt8Oid;
    const std::string sql = StatementSql(table, op);
    Result r(PQprepare(conn_, name.c_str(), sql.c_str(), static_cast<int>(types.size()), types.data()));
    if (PQresultStatus(r.result) != PGRES_COMMAND_OK) return PgError(conn_, r.result, sql);
    prepared_[slot] = true;
  }
  std::vector<const char*> values;
  std::vector<int> lengths;
  const std::vector<int> formats(params.size(), 1);
  for (std::string_view p : params) {
    values.push_back(p.data());
    lengths.push_back(static_cast<int>(p.size()));
  }
  const auto what = [&] { return fmt::format("{} on {}", StatementSql(table, op).substr(0, 6), table); };
  if (begin.empty()) {
    Result r(PQexecPrepared(conn_, name.c_str(), static_cast<int>(params.size()), values.data(), lengths.data(),
                            formats.data(), 1));
    const ExecStatusType status = PQresultStatus(r.result);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) return PgError(conn_, r.result, what());
    return r;
  }
  // BEGIN and the statement in one pipeline: their results, each followed by a null, then the sync.
  if (PQenterPipelineMode(conn_) != 1) return PgError(conn_, nullptr, "pipeline mode");
  const bool sent = PQsendQueryParams(conn_, begin.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0) == 1 &&
                    PQsendQueryPrepared(conn_, name.c_str(), static_cast<int>(params.size()), values.data(),
                                        lengths.data(), formats.data(), 1) == 1 &&
                    PQpipelineSync(conn_) == 1;
  Status failure = sent ? OkStatus() : PgError(conn_, nullptr, begin);
  std::optional<Result> statement;
  for (int ended = 0; sent;) {
    PGresult* r = PQgetResult(conn_);
    if (r == nullptr) {
      if (PQstatus(conn_) != CONNECTION_OK || ++ended > 2) break;
      continue;
    }
    const ExecStatusType status = PQresultStatus(r);
    if (status == PGRES_PIPELINE_SYNC) {
      PQclear(r);
      break;
    }
    if (ended == 0) {  // BEGIN's
      if (status != PGRES_COMMAND_OK && failure.ok()) failure = PgError(conn_, r, begin);
      PQclear(r);
    } else if (ended == 1 && !statement) {
      statement.emplace(r);
      if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && failure.ok()) failure = PgError(conn_, r, what());
    } else {
      PQclear(r);
    }
  }
  if (PQpipelineStatus(conn_) != PQ_PIPELINE_OFF) PQexitPipelineMode(conn_);
  if (!failure.ok()) return failure;
  if (!statement) return PgError(conn_, nullptr, what());
  return std::move(*statement);
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
  return Run(table, Op::kPut, {key, value}).status();
}

Status Connection::Delete(std::string_view table, std::string_view key) {
  return Run(table, Op::kDelete, {key}).status();
}

Status Connection::DeleteRange(std::string_view table, const Range& range) {
  if (!range.end.empty()) {
    if (range.end <= range.begin) {
      if (catalog_->Index(table) < 0) return UnknownTable(table);
      return OkStatus();  // empty or inverted: nothing
    }
    return Run(table, Op::kDeleteRange, {range.begin, range.end}).status();
  }
  return Run(table, Op::kDeleteRangeToEnd, {range.begin}).status();
}

StatusOr<std::optional<std::string>> Txn::Get(std::string_view table, std::string_view key) {
  auto r = conn_.Get(table, key);
  if (!r.ok()) Note(r.status()).IgnoreError();
  return r;
}

StatusOr<std::vector<Row>> Txn::Scan(std::string_view table, const Range& range, size_t limit, Direction dir) {
  auto r = conn_.Scan(table, range, limit, dir);
  if (!r.ok()) Note(r.status()).IgnoreError();
  return r;
}

Status Txn::Put(std::string_view table, std::string_view key, std::string_view value) {
  return Note(conn_.Put(table, key, value));
}

Status Txn::Delete(std::string_view table, std::string_view key) { return Note(conn_.Delete(table, key)); }

Status Txn::DeleteRange(std::string_view table, const Range& range) { return Note(conn_.DeleteRange(table, range)); }

Status Txn::Note(Status s) {
  if (!s.ok() && last_error_.ok()) last_error_ = s;
  return s;
}

Status Txn::TakeLastError() { return std::exchange(last_error_, OkStatus()); }

Status Migrate(Connection& conn, const TableCatalog& catalog) {
  RETURN_IF_ERROR(conn.Execute("BEGIN"));
  Status s = [&]() -> Status {
    RETURN_IF_ERROR(conn.Execute(fmt::format("SELECT pg_advisory_xact_lock({})", kMigrationLock)));
    RETURN_IF_ERROR(conn.Execute("CREATE TABLE IF NOT EXISTS schema_modules(module text PRIMARY KEY, version integer NOT NULL)"));
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
