// Raw-socket test servers for the proxy's tests: one bound on loopback that reads a request's head
// (RawUpstream's and SwitchingUpstream's), and one that switches protocols (WebSockets through the
// edge), which the proxy's and the TLS entry points' tests share.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace paddock::edge::testing {

// A TCP socket bound on 127.0.0.1 at a port of the kernel's choosing, in `*port` (not listening yet).
inline int BindLoopback(uint16_t* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  *port = ntohs(addr.sin_port);
  return fd;
}

// What connection `c` sends until a request's head has ended (or it closes): the head and the
// bytes after it.
inline std::string ReadThroughHead(int c) {
  std::string got;
  char buf[4096];
  while (got.find("\r\n\r\n") == std::string::npos) {
    const ssize_t n = ::recv(c, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

// A server that switches every connection to `protocol` (answering its 101 with `extra` after the
// head), then echoes each byte it reads back until the edge closes; it records the request heads.
class SwitchingUpstream {
 public:
  explicit SwitchingUpstream(std::string protocol, std::string extra = "")
      : protocol_(std::move(protocol)), extra_(std::move(extra)), fd_(BindLoopback(&port_)) {
    EXPECT_EQ(::listen(fd_, 16), 0);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        const std::string got = ReadThroughHead(c);
        char buf[4096];
        const size_t end = got.find("\r\n\r\n");
        {
          std::lock_guard lock(mu_);
          heads_.push_back(got.substr(0, end));
        }
        const std::string answer = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: " + protocol_ +
                                   "\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: abc\r\n\r\n" + extra_ +
                                   (end == std::string::npos ? "" : got.substr(end + 4));
        ::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
        for (ssize_t n; (n = ::recv(c, buf, sizeof(buf), 0)) > 0;) ::send(c, buf, static_cast<size_t>(n), MSG_NOSIGNAL);
        ::close(c);
        closed_.fetch_add(1);
      }
    });
  }
  ~SwitchingUpstream() {
    ::shutdown(fd_, SHUT_RDWR);  // ends a blocked accept
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  uint16_t port() const { return port_; }
  std::vector<std::string> heads() const {
    std::lock_guard lock(mu_);
    return heads_;
  }
  int closed() const { return closed_.load(); }

 private:
  std::string protocol_, extra_;
  uint16_t port_ = 0;
  int fd_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<std::string> heads_;
  std::atomic<int> closed_{0};
};

}  // namespace paddock::edge::testing
