// A test server for switched (WebSocket) connections through the edge: the proxy's and the TLS
// entry points' tests share it.
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

// A server that switches every connection to `protocol` (answering its 101 with `extra` after the
// head), then echoes each byte it reads back until the edge closes; it records the request heads.
class SwitchingUpstream {
 public:
  explicit SwitchingUpstream(std::string protocol, std::string extra = "")
      : protocol_(std::move(protocol)), extra_(std::move(extra)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    EXPECT_EQ(::listen(fd_, 16), 0);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        std::string got;
        char buf[4096];
        while (got.find("\r\n\r\n") == std::string::npos) {
          const ssize_t n = ::recv(c, buf, sizeof(buf), 0);
          if (n <= 0) break;
          got.append(buf, static_cast<size_t>(n));
        }
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
  int fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  uint16_t port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<std::string> heads_;
  std::atomic<int> closed_{0};
};

}  // namespace paddock::edge::testing
