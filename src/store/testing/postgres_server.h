// A PostgreSQL server of a test's own: a new cluster (initdb) in a temp dir, listening only on a
// Unix socket in that dir (no TCP port to collide on), stopped and removed on destruction. Run as
// the `postgres` system user when the test runs as root (PostgreSQL refuses root). Debian's
// postgresql-15 package provides the binaries (scripts/setup installs it).
//
//   ASSIGN_OR_RETURN(auto pg, PostgresServer::Start());
//   RETURN_IF_ERROR(pg->CreateDatabase("t1"));
//   auto store = PostgresStore::Open({.url = pg->Url("t1")});
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace paddock::store::testing {

class PostgresServer {
 public:
  // kUnavailable (naming what is missing) when PostgreSQL's binaries are not installed.
  static StatusOr<std::unique_ptr<PostgresServer>> Start();
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // A libpq connection string for `database`.
  std::string Url(std::string_view database) const;
  // Creates `database` (an identifier of [a-z0-9_]); an existing one is fine.
  Status CreateDatabase(std::string_view database);
  // The postmaster's pid (kill -9 it to crash the server).
  pid_t pid() const { return pid_; }
  // Starts the server again on the same data after it died (reaps the old postmaster first).
  Status Restart();

 private:
  PostgresServer() = default;
  Status Launch();

  std::string dir_;     // temp dir: data/, the socket, postgres.log
  std::string bindir_;  // where initdb and postgres are
  pid_t pid_ = -1;
};

}  // namespace paddock::store::testing
