#include "store/postgres/internal/change_feed.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <libpq-fe.h>

#include <fmt/format.h>

#include "store/postgres/internal/connection.h"
#include "store/postgres/internal/read_cache.h"

namespace paddock::store::postgres_internal {

namespace {

// NOTIFY's payload is shorter than 8,000 bytes; the origin (16), a generation (up to 20) and two
// spaces go before the tables.
constexpr size_t kMaxTables = 7999 - 40;

void IgnoreNotice(void*, const char*) {}

}  // namespace

std::string ChangedTables(const std::vector<std::string>& tables) {
  std::string out;
  for (size_t i = 0; i < tables.size(); ++i) {
    if (i > 0) out += ',';
    out += tables[i];
  }
  if (out.size() > kMaxTables || tables.empty()) return "*";
  return out;
}

bool ParseChangePayload(std::string_view payload, std::string* origin, uint64_t* generation,
                        std::vector<std::string>* tables) {
  const size_t space = payload.find(' ');
  if (space == std::string_view::npos || space == 0) return false;
  *origin = std::string(payload.substr(0, space));
  std::string_view rest = payload.substr(space + 1);
  const size_t second = rest.find(' ');
  if (second == std::string_view::npos) return false;
  StatusOr<uint64_t> n = ParseGeneration(rest.substr(0, second));
  if (!n.ok()) return false;
  *generation = *n;
  rest = rest.substr(second + 1);
  tables->clear();
  if (rest == "*") return true;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view name = rest.substr(0, comma);
    if (!name.empty()) tables->emplace_back(name);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return !tables->empty();
}

ChangeFeed::ChangeFeed(std::string url, std::string origin, FeedCallbacks callbacks)
    : url_(std::move(url)),
      origin_(std::move(origin)),
      callbacks_(std::move(callbacks)),
      wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  thread_ = std::thread([this] { Run(); });
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return first_attempt_done_; });
}

ChangeFeed::~ChangeFeed() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

void ChangeFeed::SetListener(ChangeListener listener) {
  std::lock_guard lock(listener_mu_);
  listener_ = std::move(listener);
}

void ChangeFeed::SetMessageListener(std::function<void(std::string_view message)> listener) {
  std::lock_guard lock(listener_mu_);
  message_listener_ = std::move(listener);
}

void ChangeFeed::Stop() {
  if (stopping_.exchange(true)) {
    if (thread_.joinable()) thread_.join();
    return;
  }
  const uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
}

void ChangeFeed::Run() {
  PGconn* conn = nullptr;
  bool missed = false;  // a connection was lost: what it would have delivered is unknown
  const auto lost = [&] {
    missed = true;
    if (callbacks_.on_lost) callbacks_.on_lost();
  };
  const auto tell_listener = [&](const std::vector<std::string>& tables) {
    std::lock_guard lock(listener_mu_);
    if (listener_) listener_(tables);
  };
  // Waits for the connection's socket (or, with fd < 0, only for Stop) up to `timeout_ms`.
  auto wait = [&](int fd, int timeout_ms) {
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {fd, POLLIN, 0}};
    (void)poll(fds, fd >= 0 ? 2 : 1, timeout_ms);
  };
  while (!stopping_) {
    if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
      if (conn != nullptr) {
        PQfinish(conn);
        lost();
      }
      conn = ConnectBounded(url_);
      bool listening = conn != nullptr && PQstatus(conn) == CONNECTION_OK;
      if (listening) {
        PQsetNoticeProcessor(conn, IgnoreNotice, nullptr);
        // Named, for whoever looks at pg_stat_activity (and the tests that cut it).
        PQclear(PQexec(conn, "SET application_name = 'paddock change feed'"));
        PGresult* r = PQexec(conn, fmt::format("LISTEN {}; LISTEN {}", kChannel, kMessageChannel).c_str());
        listening = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
      }
      // Read after LISTEN took effect: a commit after it is announced, one before it is counted.
      uint64_t generation = 0;
      if (listening) {
        PGresult* r = PQexec(conn, ReadGenerationSql().c_str());
        listening = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
        StatusOr<uint64_t> n = listening ? ParseGeneration(PQgetvalue(r, 0, 0)) : uint64_t{0};
        PQclear(r);
        listening = listening && n.ok();
        if (listening) generation = *n;
      }
      {
        std::lock_guard lock(mu_);
        first_attempt_done_ = true;
      }
      cv_.notify_all();
      if (!listening) {
        if (conn != nullptr) PQfinish(conn);
        conn = nullptr;
        lost();
        wait(-1, 1000);
        continue;
      }
      if (callbacks_.on_listening) callbacks_.on_listening(generation);
      if (missed) tell_listener({});
      missed = false;
    }
    wait(PQsocket(conn), -1);
    if (stopping_) break;
    if (PQconsumeInput(conn) == 0) {  // lost: reconnect above
      PQfinish(conn);
      conn = nullptr;
      lost();
      continue;
    }
    std::string origin;
    uint64_t generation = 0;
    std::vector<std::string> tables;
    while (PGnotify* n = PQnotifies(conn)) {
      if (std::string_view(n->relname) == kMessageChannel) {
        const std::string_view payload = n->extra;
        const size_t space = payload.find(' ');
        if (space != std::string_view::npos && payload.substr(0, space) != origin_) {
          std::lock_guard lock(listener_mu_);
          if (message_listener_) message_listener_(payload.substr(space + 1));
        }
        PQfreemem(n);
        continue;
      }
      const bool ours = ParseChangePayload(n->extra, &origin, &generation, &tables);
      PQfreemem(n);
      if (!ours) continue;
      if (callbacks_.on_commit) callbacks_.on_commit(generation, tables);
      if (origin != origin_) tell_listener(tables);
    }
  }
  if (conn != nullptr) PQfinish(conn);
}

}  // namespace paddock::store::postgres_internal
