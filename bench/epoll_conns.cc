#include "epoll_conns.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

namespace paddock::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Conn {
  int fd = -1;
  std::string out;
  size_t sent = 0;
  std::string in;
  bool busy = false;  // a request is outstanding
  bool done = false;  // no more requests
  Clock::time_point started;
};

int Connect(const EpollLoopOptions& o) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(o.port);
  std::string host = o.host == "localhost" ? "127.0.0.1" : o.host;
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1 ||
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if ((a[i] | 0x20) != (b[i] | 0x20)) return false;
  return true;
}

// If `in` holds a whole response, returns its length and sets status, body and whether the
// server will close the connection after it.
std::optional<size_t> CompleteResponse(std::string_view in, int* status, std::string_view* body, bool* close) {
  size_t end = in.find("\r\n\r\n");
  if (end == std::string_view::npos) return std::nullopt;
  std::string_view head = in.substr(0, end);
  if (head.size() < 12) return std::nullopt;
  std::from_chars(head.data() + 9, head.data() + 12, *status);
  size_t length = 0;
  size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos && pos < head.size()) {
    size_t next = head.find("\r\n", pos + 2);
    std::string_view line = head.substr(pos + 2, (next == std::string_view::npos ? head.size() : next) - pos - 2);
    size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      std::string_view name = line.substr(0, colon);
      std::string_view v = line.substr(colon + 1);
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      if (IEquals(name, "content-length")) std::from_chars(v.data(), v.data() + v.size(), length);
      if (IEquals(name, "connection") && IEquals(v, "close")) *close = true;
    }
    pos = next;
  }
  if (in.size() < end + 4 + length) return std::nullopt;
  *body = in.substr(end + 4, length);
  return end + 4 + length;
}

}  // namespace

std::optional<std::string> RunEpollLoop(const EpollLoopOptions& o, const EpollCallbacks& cb) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  std::vector<Conn> conns(static_cast<size_t>(o.connections));
  auto cleanup = [&] {
    for (auto& c : conns)
      if (c.fd >= 0) close(c.fd);
    close(ep);
  };
  int active = 0;

  // Starts the connection's next request, or marks it done. Returns false on a write error.
  auto start_next = [&](Conn& c) {
    std::optional<std::string> req = cb.next_request();
    if (!req) {
      c.done = true;
      --active;
      return true;
    }
    c.out = std::move(*req);
    c.sent = 0;
    c.busy = true;
    c.started = Clock::now();
    while (c.sent < c.out.size()) {
      ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
      if (n > 0) {
        c.sent += static_cast<size_t>(n);
      } else if (n < 0 && errno == EAGAIN) {
        epoll_event ev{EPOLLIN | EPOLLOUT, {.ptr = &c}};
        epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
        return true;
      } else {
        return false;
      }
    }
    return true;
  };

  // Replaces the connection with a new one and starts its next request. A request still
  // outstanding on the old one is reported as a transport error.
  auto fail = [&](Conn& c) -> std::optional<std::string> {
    if (c.busy) cb.on_response(0, {}, Clock::now() - c.started);
    epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    c.fd = Connect(o);
    c.in.clear();
    c.busy = false;
    if (c.fd < 0) return fmt::format("reconnecting to {}:{} failed: {}", o.host, o.port, std::strerror(errno));
    epoll_event ev{EPOLLIN, {.ptr = &c}};
    epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
    if (!start_next(c)) return std::string("write failed right after reconnecting");
    return std::nullopt;
  };

  for (auto& c : conns) {
    c.fd = Connect(o);
    if (c.fd < 0) {
      std::string err = fmt::format("cannot connect to {}:{}: {}", o.host, o.port, std::strerror(errno));
      cleanup();
      return err;
    }
    epoll_event ev{EPOLLIN, {.ptr = &c}};
    epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
    ++active;
  }
  for (auto& c : conns) {
    if (!start_next(c)) {
      if (auto err = fail(c)) {
        cleanup();
        return err;
      }
    }
  }

  std::vector<epoll_event> events(static_cast<size_t>(o.connections));
  char buf[64 * 1024];
  while (active > 0) {
    int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 1000);
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < n; ++i) {
      Conn& c = *static_cast<Conn*>(events[i].data.ptr);
      if (c.done) continue;
      if (events[i].events & EPOLLOUT) {
        while (c.sent < c.out.size()) {
          ssize_t w = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
          if (w <= 0) break;
          c.sent += static_cast<size_t>(w);
        }
        if (c.sent == c.out.size()) {
          epoll_event ev{EPOLLIN, {.ptr = &c}};
          epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
        }
      }
      if (!(events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))) continue;
      bool broken = false;
      for (;;) {
        ssize_t r = recv(c.fd, buf, sizeof(buf), 0);
        if (r > 0) {
          c.in.append(buf, static_cast<size_t>(r));
          continue;
        }
        if (r < 0 && errno == EAGAIN) break;
        broken = true;  // closed or failed
        break;
      }
      int status = 0;
      std::string_view body;
      bool close_after = false;
      if (std::optional<size_t> len = c.busy ? CompleteResponse(c.in, &status, &body, &close_after) : std::nullopt) {
        cb.on_response(status, body, Clock::now() - c.started);
        c.in.erase(0, *len);
        c.busy = false;
        broken = broken || close_after;  // the server closes after this response: reconnect
        if (!broken && !start_next(c)) broken = true;
        if (!broken) continue;
      }
      if (broken && !c.done) {
        if (auto err = fail(c)) {
          cleanup();
          return err;
        }
      }
    }
  }
  cleanup();
  return std::nullopt;
}

}  // namespace paddock::bench
