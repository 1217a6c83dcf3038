#include "store/postgres/internal/change_feed.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <libpq-fe.h>

#include <fmt/format.h>

#include "store/postgres/internal/connection.h"

namespace paddock::store::postgres_internal {

namespace {

constexpr size_t kMaxPayload = 7999;  // NOTIFY's payload is shorter than 8,000 bytes

void IgnoreNotice(void*, const char*) {}

}  // namespace

std::string ChangePayload(std::string_view origin, const std::vector<std::string>& tables) {
  std::string out = fmt::format("{} ", origin);
  for (size_t i = 0; i < tables.size(); ++i) {
    if (i > 0) out += ',';
    out += tables[i];
  }
  if (out.size() > kMaxPayload || tables.empty()) return fmt::format("{} *", origin);
  return out;
}

bool ParseChangePayload(std::string_view payload, std::string* origin, std::vector<std::string>* tables) {
  const size_t space = payload.find(' ');
  if (space == std::string_view::npos || space == 0) return false;
  *origin = std::string(payload.substr(0, space));
  tables->clear();
  std::string_view rest = payload.substr(space + 1);
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

ChangeFeed::ChangeFeed(std::string url, std::string origin, ChangeListener listener)
    : url_(std::move(url)),
      origin_(std::move(origin)),
      listener_(std::move(listener)),
      wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  thread_ = std::thread([this] { Run(); });
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return first_attempt_done_; });
}

ChangeFeed::~ChangeFeed() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
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
  // Waits for the connection's socket (or, with fd < 0, only for Stop) up to `timeout_ms`.
  auto wait = [&](int fd, int timeout_ms) {
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {fd, POLLIN, 0}};
    (void)poll(fds, fd >= 0 ? 2 : 1, timeout_ms);
  };
  while (!stopping_) {
    if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
      if (conn != nullptr) {
        PQfinish(conn);
        missed = true;
      }
      conn = ConnectBounded(url_);
      bool listening = conn != nullptr && PQstatus(conn) == CONNECTION_OK;
      if (listening) {
        PQsetNoticeProcessor(conn, IgnoreNotice, nullptr);
        PGresult* r = PQexec(conn, fmt::format("LISTEN {}", kChannel).c_str());
        listening = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
      }
      {
        std::lock_guard lock(mu_);
        first_attempt_done_ = true;
      }
      cv_.notify_all();
      if (!listening) {
        if (conn != nullptr) PQfinish(conn);
        conn = nullptr;
        missed = true;
        wait(-1, 1000);
        continue;
      }
      if (missed) listener_({});
      missed = false;
    }
    wait(PQsocket(conn), -1);
    if (stopping_) break;
    if (PQconsumeInput(conn) == 0) {  // lost: reconnect above
      PQfinish(conn);
      conn = nullptr;
      missed = true;
      continue;
    }
    std::string origin;
    std::vector<std::string> tables;
    while (PGnotify* n = PQnotifies(conn)) {
      const bool ours = ParseChangePayload(n->extra, &origin, &tables);
      PQfreemem(n);
      if (ours && origin != origin_) listener_(tables);
    }
  }
  if (conn != nullptr) PQfinish(conn);
}

}  // namespace paddock::store::postgres_internal
