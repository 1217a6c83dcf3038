#include "store/sqlite/internal/connection.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include <fmt/format.h>

namespace paddock::store::sqlite_internal {
namespace {

constexpr int kBusyTimeoutMs = 10'000;

constexpr const char* kControlSql[kControlCount] = {
    "BEGIN", "BEGIN IMMEDIATE", "SAVEPOINT w", "RELEASE w", "ROLLBACK TO w", "COMMIT", "ROLLBACK",
};

// Resets a statement when it goes out of scope, so no statement stays active between calls (an
// active statement would block COMMIT, RELEASE and ROLLBACK TO).
class ResetOnExit {
 public:
  explicit ResetOnExit(sqlite3_stmt* s) : s_(s) {}
  ~ResetOnExit() { sqlite3_reset(s_); }
  ResetOnExit(const ResetOnExit&) = delete;
  ResetOnExit& operator=(const ResetOnExit&) = delete;

 private:
  sqlite3_stmt* s_;
};

// Binds `bytes` as a BLOB, never as NULL: a null data pointer would bind NULL, so an empty blob
// gets a non-null one.
int BindBlob(sqlite3_stmt* s, int index, std::string_view bytes) {
  const char* data = bytes.empty() ? "" : bytes.data();
  return sqlite3_bind_blob64(s, index, data, bytes.size(), SQLITE_STATIC);
}

std::string ColumnBytes(sqlite3_stmt* s, int column) {
  const void* data = sqlite3_column_blob(s, column);
  int size = sqlite3_column_bytes(s, column);
  if (data == nullptr || size <= 0) return {};
  return std::string(static_cast<const char*>(data), static_cast<size_t>(size));
}

Status Exec(sqlite3* db, const std::string& sql) {
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqliteError(rc, db, sql);
  return OkStatus();
}

}  // namespace

std::string StatementSql(std::string_view table, Op op) {
  std::string t = fmt::format("\"t_{}\"", table);
  switch (op) {
    case Op::kGet:
      return fmt::format("SELECT v FROM {} WHERE k = ?1", t);
    case Op::kPut:
      return fmt::format(
          "INSERT INTO {}(k, v) VALUES (?1, ?2) ON CONFLICT(k) DO UPDATE SET v = excluded.v", t);
    case Op::kDelete:
      return fmt::format("DELETE FROM {} WHERE k = ?1", t);
    case Op::kScanForward:
      return fmt::format("SELECT k, v FROM {} WHERE k >= ?1 AND k < ?2 ORDER BY k ASC LIMIT ?3", t);
    case Op::kScanForwardToEnd:
      return fmt::format("SELECT k, v FROM {} WHERE k >= ?1 ORDER BY k ASC LIMIT ?3", t);
    case Op::kScanBackward:
      return fmt::format("SELECT k, v FROM {} WHERE k >= ?1 AND k < ?2 ORDER BY k DESC LIMIT ?3", t);
    case Op::kScanBackwardToEnd:
      return fmt::format("SELECT k, v FROM {} WHERE k >= ?1 ORDER BY k DESC LIMIT ?3", t);
    case Op::kDeleteRange:
      return fmt::format("DELETE FROM {} WHERE k >= ?1 AND k < ?2", t);
    case Op::kDeleteRangeToEnd:
      return fmt::format("DELETE FROM {} WHERE k >= ?1", t);
  }
  return {};
}

Status SqliteError(int rc, sqlite3* db, std::string_view what) {
  std::string msg = fmt::format("sqlite: {}: {} (code {})", what,
                                db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc), rc);
  switch (rc & 0xFF) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Unavailable(std::move(msg));
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return DataLoss(std::move(msg));
    case SQLITE_FULL:
      return ResourceExhausted(std::move(msg));
    default:
      return Internal(std::move(msg));
  }
}

namespace {

// Runs `sql` and returns the first column of its first row, or nullopt when it has no row.
StatusOr<std::optional<int>> QueryInt(sqlite3* db, const std::string& sql, std::string_view bind = {}) {
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr);
  if (rc != SQLITE_OK) return SqliteError(rc, db, sql);
  if (!bind.empty()) sqlite3_bind_text(s, 1, bind.data(), static_cast<int>(bind.size()), SQLITE_STATIC);
  rc = sqlite3_step(s);
  std::optional<int> out;
  if (rc == SQLITE_ROW) out = sqlite3_column_int(s, 0);
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqliteError(rc, db, sql);
  return out;
}

StatusOr<bool> TableExists(sqlite3* db, std::string_view name) {
  ASSIGN_OR_RETURN(auto found, QueryInt(db, "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1", name));
  return found.has_value();
}

// The store-wide version of a store from before per-module versions (or kPerModuleFormat, or a
// newer format's number), 0 when it has none.
StatusOr<int> StoreWideVersion(sqlite3* db) {
  ASSIGN_OR_RETURN(bool exists, TableExists(db, "schema_version"));
  if (!exists) return 0;
  ASSIGN_OR_RETURN(auto v, QueryInt(db, "SELECT version FROM schema_version WHERE id = 0"));
  return v.value_or(0);
}

std::string StoreFile(sqlite3* db) {
  const char* file = sqlite3_db_filename(db, "main");
  return file != nullptr ? file : "?";
}

}  // namespace

StatusOr<int> ModuleVersion(sqlite3* db, std::string_view module) {
  ASSIGN_OR_RETURN(bool exists, TableExists(db, "schema_modules"));
  if (!exists) return 0;
  ASSIGN_OR_RETURN(auto v, QueryInt(db, "SELECT version FROM schema_modules WHERE module = ?1", module));
  return v.value_or(0);
}

Status Migrate(sqlite3* db, const TableCatalog& catalog) {
  RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE"));
  Status s = [&]() -> Status {
    ASSIGN_OR_RETURN(int store_wide, StoreWideVersion(db));
    if (store_wide > kPerModuleFormat) {
      return FailedPrecondition(fmt::format(
          "store {} has schema format {}, newer than the {} this Paddock build supports; run a newer "
          "Paddock or point it at another state directory",
          StoreFile(db), store_wide, kPerModuleFormat));
    }
    RETURN_IF_ERROR(Exec(db,
                         "CREATE TABLE IF NOT EXISTS schema_modules("
                         "module TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID"));
    for (const ModuleSchema& m : catalog.modules()) {
      ASSIGN_OR_RETURN(const int recorded, ModuleVersion(db, m.module));
      int stored = recorded;
      if (stored == 0 && store_wide > 0 && store_wide <= kLastStoreWideVersion) {
        // A store from before per-module versions: the module is at the store-wide version if
        // the store holds any of its tables (it then holds every table up to that version).
        for (const TableDef& t : m.tables) {
          ASSIGN_OR_RETURN(bool exists, TableExists(db, fmt::format("t_{}", t.name)));
          if (exists) {
            stored = store_wide;
            break;
          }
        }
      }
      if (stored > m.version) {
        return FailedPrecondition(fmt::format(
            "store {} has version {} of the '{}' tables, newer than the {} this Paddock build supports; run a "
            "newer Paddock or point it at another state directory",
            StoreFile(db), stored, m.module, m.version));
      }
      // A module found at the store-wide version still gets its row: once the legacy row says
      // kPerModuleFormat, the row is all that records it.
      if (stored == m.version && recorded == m.version) continue;
      for (const TableDef& t : m.tables) {
        if (t.since_version <= stored) continue;
        RETURN_IF_ERROR(Exec(db, fmt::format("CREATE TABLE IF NOT EXISTS \"t_{}\"("
                                             "k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID",
                                             t.name)));
      }
      RETURN_IF_ERROR(Exec(db, fmt::format("INSERT INTO schema_modules(module, version) VALUES ('{}', {}) "
                                           "ON CONFLICT(module) DO UPDATE SET version = excluded.version",
                                           m.module, m.version)));
    }
    if (store_wide == kPerModuleFormat) return OkStatus();
    RETURN_IF_ERROR(Exec(db,
                         "CREATE TABLE IF NOT EXISTS schema_version("
                         "id INTEGER PRIMARY KEY CHECK (id = 0), version INTEGER NOT NULL)"));
    return Exec(db, fmt::format("INSERT INTO schema_version(id, version) VALUES (0, {}) "
                                "ON CONFLICT(id) DO UPDATE SET version = excluded.version",
                                kPerModuleFormat));
  }();
  if (!s.ok()) {
    Exec(db, "ROLLBACK").IgnoreError();
    return s;
  }
  return Exec(db, "COMMIT");
}

StatusOr<std::unique_ptr<Connection>> Connection::Open(const std::string& path, Mode mode, bool durable,
                                                      std::shared_ptr<const TableCatalog> catalog) {
  // No allocation statistics: with them every sqlite3_malloc and free takes one process-wide
  // mutex, which the I/O threads' reads then contend on. Only takes effect before SQLite
  // initializes (the first open); later calls answer SQLITE_MISUSE, which changes nothing.
  static const int memstatus_off [[maybe_unused]] = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  int flags = SQLITE_OPEN_NOMUTEX;
  flags |= mode == Mode::kReadWrite ? (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) : SQLITE_OPEN_READONLY;
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    Status s = SqliteError(rc, db, fmt::format("open {}", path));
    sqlite3_close_v2(db);
    return s;
  }
  std::unique_ptr<Connection> conn(new Connection(db, std::move(catalog)));
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  RETURN_IF_ERROR(Exec(db, "PRAGMA foreign_keys = OFF"));
  // Reads map the database file instead of copying each page out of the OS cache (a scheduler
  // resync reads every service's record). Writes and the WAL are unaffected.
  RETURN_IF_ERROR(Exec(db, "PRAGMA mmap_size = 1073741824"));
  if (mode == Mode::kReadWrite) {
    // 8 KiB pages keep a typical record (a 1-3 KiB task definition) inside its B-tree leaf
    // instead of spilling into an overflow page of its own. Only a new, empty database takes
    // it; it must precede the switch to WAL.
    RETURN_IF_ERROR(Exec(db, "PRAGMA page_size = 8192"));
    // journal_mode answers with the mode in effect, which is not WAL if the switch failed.
    std::string journal_mode;
    rc = sqlite3_exec(
        db, "PRAGMA journal_mode = WAL",
        [](void* out, int n, char** values, char**) {
          if (n > 0 && values[0] != nullptr) *static_cast<std::string*>(out) = values[0];
          return 0;
        },
        &journal_mode, nullptr);
    if (rc != SQLITE_OK) return SqliteError(rc, db, "PRAGMA journal_mode = WAL");
    if (journal_mode != "wal")
      return Internal(fmt::format("sqlite: {} stays in journal mode '{}', not WAL", path, journal_mode));
    RETURN_IF_ERROR(Exec(db, durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = OFF"));

  }
  for (int i = 0; i < kControlCount; ++i) {
    rc = sqlite3_prepare_v3(db, kControlSql[i], -1, SQLITE_PREPARE_PERSISTENT, &conn->control_[i],
                            nullptr);
    if (rc != SQLITE_OK) return SqliteError(rc, db, kControlSql[i]);
  }
  return conn;
}

Connection::Connection(sqlite3* db, std::shared_ptr<const TableCatalog> catalog)
    : db_(db), catalog_(std::move(catalog)), statements_(catalog_->size() * kOpCount, nullptr) {}

Connection::~Connection() {
  for (sqlite3_stmt* s : control_) sqlite3_finalize(s);
  for (sqlite3_stmt* s : statements_) sqlite3_finalize(s);
  sqlite3_close_v2(db_);
}

Status Connection::Run(Control c) {
  sqlite3_stmt* s = control_[static_cast<int>(c)];
  ResetOnExit reset(s);
  int rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return SqliteError(rc, db_, kControlSql[static_cast<int>(c)]);
  return OkStatus();
}

Status Connection::Execute(const std::string& sql) { return Exec(db_, sql); }

StatusOr<bool> Connection::Checkpoint(bool restart) {
  int log_frames = 0, checkpointed = 0;
  int rc = sqlite3_wal_checkpoint_v2(db_, "main", restart ? SQLITE_CHECKPOINT_RESTART : SQLITE_CHECKPOINT_PASSIVE,
                                     &log_frames, &checkpointed);
  if (rc == SQLITE_BUSY) return false;  // another checkpoint is running
  if (rc != SQLITE_OK) return SqliteError(rc, db_, "wal checkpoint");
  return log_frames >= 0 && checkpointed == log_frames;
}

void Connection::OnCommit(std::function<void(int wal_pages)> fn) {
  on_commit_ = std::move(fn);
  sqlite3_wal_hook(
      db_,
      [](void* self, sqlite3*, const char*, int pages) {
        static_cast<Connection*>(self)->on_commit_(pages);
        return SQLITE_OK;
      },
      this);
}

bool Connection::InAutocommit() const { return sqlite3_get_autocommit(db_) != 0; }

StatusOr<sqlite3_stmt*> Connection::Statement(std::string_view table, Op op) {
  int t = catalog_->Index(table);
  if (t < 0) return Internal(fmt::format("store table '{}' is declared by no module of this store", table));
  sqlite3_stmt*& s = statements_[static_cast<size_t>(t) * kOpCount + static_cast<size_t>(op)];
  if (s == nullptr) {
    std::string sql = StatementSql(table, op);
    int rc = sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr);
    if (rc != SQLITE_OK) {
      s = nullptr;
      return SqliteError(rc, db_, sql);
    }
  }
  return s;
}

Status Txn::Fail(Status s) {
  last_error_ = s;
  return s;
}

Status Txn::TakeLastError() { return std::exchange(last_error_, OkStatus()); }

StatusOr<sqlite3_stmt*> Txn::Prepare(std::string_view table, Op op) {
  StatusOr<sqlite3_stmt*> s = conn_.Statement(table, op);
  if (!s.ok()) return Fail(s.status());
  return s;
}

StatusOr<std::optional<std::string>> Txn::Get(std::string_view table, std::string_view key) {
  ASSIGN_OR_RETURN(sqlite3_stmt* s, Prepare(table, Op::kGet));
  ResetOnExit reset(s);
  int rc = BindBlob(s, 1, key);
  if (rc != SQLITE_OK) return Fail(SqliteError(rc, conn_.db(), "bind key"));
  rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) return std::optional<std::string>();
  if (rc != SQLITE_ROW) return Fail(SqliteError(rc, conn_.db(), fmt::format("get from {}", table)));
  return std::optional<std::string>(ColumnBytes(s, 0));
}

StatusOr<std::vector<Row>> Txn::Scan(std::string_view table, const Range& range, size_t limit,
                                     Direction dir) {
  bool to_end = range.end.empty();
  Op op = dir == Direction::kForward ? (to_end ? Op::kScanForwardToEnd : Op::kScanForward)
                                     : (to_end ? Op::kScanBackwardToEnd : Op::kScanBackward);
  ASSIGN_OR_RETURN(sqlite3_stmt* s, Prepare(table, op));
  std::vector<Row> rows;
  if (limit == 0) return rows;
  ResetOnExit reset(s);
  int rc = BindBlob(s, 1, range.begin);
  if (rc == SQLITE_OK && !to_end) rc = BindBlob(s, 2, range.end);
  constexpr uint64_t kMaxLimit = static_cast<uint64_t>(std::numeric_limits<sqlite3_int64>::max());
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_int64(s, 3, static_cast<sqlite3_int64>(std::min<uint64_t>(limit, kMaxLimit)));
  if (rc != SQLITE_OK) return Fail(SqliteError(rc, conn_.db(), "bind scan range"));
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) rows.push_back(Row{ColumnBytes(s, 0), ColumnBytes(s, 1)});
  if (rc != SQLITE_DONE) return Fail(SqliteError(rc, conn_.db(), fmt::format("scan {}", table)));
  return rows;
}

Status Txn::Put(std::string_view table, std::string_view key, std::string_view value) {
  ASSIGN_OR_RETURN(sqlite3_stmt* s, Prepare(table, Op::kPut));
  ResetOnExit reset(s);
  int rc = BindBlob(s, 1, key);
  if (rc == SQLITE_OK) rc = BindBlob(s, 2, value);
  if (rc != SQLITE_OK) return Fail(SqliteError(rc, conn_.db(), "bind put"));
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return Fail(SqliteError(rc, conn_.db(), fmt::format("put into {}", table)));
  return OkStatus();
}

Status Txn::Delete(std::string_view table, std::string_view key) {
  ASSIGN_OR_RETURN(sqlite3_stmt* s, Prepare(table, Op::kDelete));
  ResetOnExit reset(s);
  int rc = BindBlob(s, 1, key);
  if (rc != SQLITE_OK) return Fail(SqliteError(rc, conn_.db(), "bind key"));
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return Fail(SqliteError(rc, conn_.db(), fmt::format("delete from {}", table)));
  return OkStatus();
}

Status Txn::DeleteRange(std::string_view table, const Range& range) {
  bool to_end = range.end.empty();
  ASSIGN_OR_RETURN(sqlite3_stmt* s, Prepare(table, to_end ? Op::kDeleteRangeToEnd : Op::kDeleteRange));
  ResetOnExit reset(s);
  int rc = BindBlob(s, 1, range.begin);
  if (rc == SQLITE_OK && !to_end) rc = BindBlob(s, 2, range.end);
  if (rc != SQLITE_OK) return Fail(SqliteError(rc, conn_.db(), "bind delete range"));
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return Fail(SqliteError(rc, conn_.db(), fmt::format("delete range from {}", table)));
  return OkStatus();
}

}  // namespace paddock::store::sqlite_internal
