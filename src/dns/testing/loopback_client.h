// dns/testing: a blocking DNS client over loopback sockets for tests and benchmarks — one query,
// one reply, waiting (poll) at most a deadline; never a sleep.
//
//   std::string query = testing::QueryWire("web.internal", 1, /*id=*/7);
//   std::string reply = testing::AskUdp(port, *Encode(query), 2s);   // "" on timeout
//   std::string whole = testing::AskTcp(port, *Encode(query), 2s);
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <optional>
#include <string_view>

#include "dns/message.h"

namespace paddock::dns::testing {

inline sockaddr_in Loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// Waits until `fd` is readable or `timeout` passes.
inline bool WaitReadable(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
}

// A socket of `type` (SOCK_DGRAM, SOCK_STREAM) connected to 127.0.0.1:port (the caller closes
// it), or -1.
inline int ConnectTo(int type, uint16_t port) {
  int fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
  sockaddr_in a = Loopback(port);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}
inline int UdpSocketTo(uint16_t port) { return ConnectTo(SOCK_DGRAM, port); }
inline int TcpConnect(uint16_t port) { return ConnectTo(SOCK_STREAM, port); }

// A query for (name, type) with id and RD set, and an OPT record when `edns` is given.
inline std::string QueryWire(std::string name, uint16_t type, uint16_t id, std::optional<Edns> edns = std::nullopt) {
  Message m;
  m.header.id = id;
  m.header.rd = true;
  m.questions.push_back({std::move(name), type, kClassIn});
  m.edns = edns;
  return *Encode(m);
}

// The next datagram on `fd`, or "" when none came within `timeout`.
inline std::string ReceiveUdp(int fd, std::chrono::milliseconds timeout) {
  if (!WaitReadable(fd, timeout)) return {};
  std::string buffer(65536, '\0');
  ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
  buffer.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return buffer;
}

inline std::string AskUdp(uint16_t port, std::string_view query, std::chrono::milliseconds timeout) {
  int fd = UdpSocketTo(port);
  if (fd < 0) return {};
  std::string reply;
  if (::send(fd, query.data(), query.size(), 0) == static_cast<ssize_t>(query.size())) reply = ReceiveUdp(fd, timeout);
  ::close(fd);
  return reply;
}

// Reads exactly n bytes, or fewer when the peer closes or `timeout` passes between reads.
inline std::string ReadExactly(int fd, size_t n, std::chrono::milliseconds timeout) {
  std::string out;
  while (out.size() < n) {
    if (!WaitReadable(fd, timeout)) break;
    char buffer[4096];
    ssize_t got = ::recv(fd, buffer, std::min(sizeof buffer, n - out.size()), 0);
    if (got <= 0) break;
    out.append(buffer, static_cast<size_t>(got));
  }
  return out;
}

// One length-prefixed query on `fd` and its reply, or "".
inline std::string AskOnTcp(int fd, std::string_view query, std::chrono::milliseconds timeout) {
  std::string message;
  message.push_back(static_cast<char>(query.size() >> 8));
  message.push_back(static_cast<char>(query.size() & 0xFF));
  message.append(query);
  if (::send(fd, message.data(), message.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(message.size())) return {};
  std::string length = ReadExactly(fd, 2, timeout);
  if (length.size() != 2) return {};
  size_t n = static_cast<size_t>(static_cast<uint8_t>(length[0]) << 8 | static_cast<uint8_t>(length[1]));
  std::string reply = ReadExactly(fd, n, timeout);
  return reply.size() == n ? reply : std::string();
}

inline std::string AskTcp(uint16_t port, std::string_view query, std::chrono::milliseconds timeout) {
  int fd = TcpConnect(port);
  if (fd < 0) return {};
  std::string reply = AskOnTcp(fd, query, timeout);
  ::close(fd);
  return reply;
}

}  // namespace paddock::dns::testing
