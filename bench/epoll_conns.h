// Event-driven keep-alive HTTP/1.1 connections for the load driver: one thread multiplexes many
// connections with epoll, so the driver spends its CPU on requests rather than on waking a
// thread per connection (on a 2-core machine shared with the server, that matters).
//
// Each connection runs closed-loop: send a request, read the whole response, send the next.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace paddock::bench {

struct EpollLoopOptions {
  std::string host;  // IPv4 literal or "localhost"
  uint16_t port = 0;
  int connections = 1;
};

struct EpollCallbacks {
  // The serialized request for sequence number `seq`, or nullopt to stop this connection.
  std::function<std::optional<std::string>()> next_request;
  // Called with the response's status and body and its latency; `status` 0 is a transport error.
  std::function<void(int status, std::string_view body, std::chrono::nanoseconds latency)> on_response;
};

// Runs until every connection's next_request returned nullopt and its last response arrived.
// Returns an error message when connecting fails.
std::optional<std::string> RunEpollLoop(const EpollLoopOptions& options, const EpollCallbacks& callbacks);

}  // namespace paddock::bench
