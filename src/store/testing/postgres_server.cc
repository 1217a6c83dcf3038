#include "store/testing/postgres_server.h"

#include <fcntl.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace paddock::store::testing {
namespace {

// Debian's layout: /usr/lib/postgresql/<major>/bin, the newest major found.
std::string FindBinDir() {
  std::string best;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string bin = e.path().string() + "/bin";
    if (std::filesystem::exists(bin + "/postgres") && bin > best) best = bin;
  }
  return best;
}

// Forks `argv` (as `user` when running as root), its output appended to `log`. Returns its pid.
StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const std::string& log) {
  const passwd* pw = ::geteuid() == 0 ? ::getpwnam("postgres") : nullptr;
  if (::geteuid() == 0 && pw == nullptr) return Unavailable("no 'postgres' user to run PostgreSQL as");
  const pid_t pid = ::fork();
  if (pid < 0) return Unavailable("fork failed");
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    if (pw != nullptr && (::setgid(pw->pw_gid) != 0 || ::setuid(pw->pw_uid) != 0)) _exit(126);
    // A test binary that dies (a crash, a ctest timeout) takes its PostgreSQL with it: immediate
    // shutdown. Set after setuid, which clears it; the forking thread is the test's main thread.
    ::prctl(PR_SET_PDEATHSIG, SIGQUIT);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

Status RunToEnd(const std::vector<std::string>& argv, const std::string& log) {
  ASSIGN_OR_RETURN(pid_t pid, Spawn(argv, log));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Unavailable(fmt::format("{} failed (see {})", argv[0], log));
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<PostgresServer>> PostgresServer::Start() {
  std::unique_ptr<PostgresServer> s(new PostgresServer());
  s->bindir_ = FindBinDir();
  if (s->bindir_.empty()) return Unavailable("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres)");
  // Under /tmp whatever TMPDIR says: the `postgres` user must reach it, and its socket's path must
  // stay within a Unix socket's 107 bytes.
  std::string tmpl = "/tmp/paddock-pg-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return Unavailable("mkdtemp failed");
  s->dir_ = tmpl;
  if (::geteuid() == 0) {
    const passwd* pw = ::getpwnam("postgres");
    if (pw == nullptr || ::chown(s->dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0)
      return Unavailable("cannot give the test's PostgreSQL dir to the 'postgres' user");
  }
  RETURN_IF_ERROR(RunToEnd({s->bindir_ + "/initdb", "-D", s->dir_ + "/data", "-U", "postgres", "--auth=trust",
                            "--no-sync", "-E", "UTF8", "--locale=C"},
                           s->dir_ + "/initdb.log"));
  RETURN_IF_ERROR(s->Launch());
  return s;
}

Status PostgresServer::Launch() {
  ASSIGN_OR_RETURN(pid_, Spawn({bindir_ + "/postgres", "-D", dir_ + "/data", "-k", dir_, "-c", "listen_addresses=",
                                "-p", "5432", "-c", "max_connections=200", "-c", "shared_buffers=32MB"},
                               dir_ + "/postgres.log"));
  // Ready when it answers (PQping polls the socket; an unready server says PQPING_REJECT).
  const std::string url = Url("postgres");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (PQping(url.c_str()) == PQPING_OK) return OkStatus();
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return Unavailable(fmt::format("postgres exited at start (see {}/postgres.log)", dir_));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Unavailable(fmt::format("postgres did not become ready (see {}/postgres.log)", dir_));
}

Status PostgresServer::Restart() {
  if (pid_ > 0) {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  // The old server's backends leave when they see their postmaster gone; until then a new one
  // refuses the data dir (its shared memory is still in use): try again for a while.
  Status last = Unavailable("not started");
  for (int attempt = 0; attempt < 50; ++attempt) {
    last = Launch();
    if (last.ok()) return last;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return last;
}

PostgresServer::~PostgresServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGQUIT);  // immediate shutdown
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

std::string PostgresServer::Url(std::string_view database) const {
  return fmt::format("host={} port=5432 user=postgres dbname={}", dir_, database);
}

Status PostgresServer::CreateDatabase(std::string_view database) {
  for (char c : database)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return InvalidArgument(fmt::format("bad test database name '{}'", database));
  PGconn* conn = PQconnectdb(Url("postgres").c_str());
  Status s = OkStatus();
  if (PQstatus(conn) != CONNECTION_OK) {
    s = Unavailable(fmt::format("connect: {}", PQerrorMessage(conn)));
  } else {
    PGresult* r = PQexec(conn, fmt::format("CREATE DATABASE {}", database).c_str());
    const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && !(state != nullptr && std::string_view(state) == "42P04"))
      s = Unavailable(fmt::format("create database: {}", PQresultErrorMessage(r)));
    PQclear(r);
  }
  PQfinish(conn);
  return s;
}

}  // namespace paddock::store::testing
