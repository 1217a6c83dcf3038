// A small blocking HTTP/1.1 client with one keep-alive connection, for tests, the CLI, remote
// agents and the load driver.
//
//   http::Client client("127.0.0.1", port);
//   ASSIGN_OR_RETURN(http::Response resp, client.Send(req));
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "http/message.h"

namespace paddock::http {

class Client {
 public:
  Client(std::string host, uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `req` (Host and Content-Length are filled in) and reads the response, reconnecting
  // once if the kept-alive connection was closed by the server. Fails with kUnavailable on
  // connection errors and timeouts.
  StatusOr<Response> Send(const Request& req);

  // Responses whose body is longer than `bytes` fail Send with kResourceExhausted (and close the
  // connection); by default a body has no limit.
  void set_max_response_body(uint64_t bytes);

  // From any thread: makes a Send in progress, and every later one, fail at once with
  // kUnavailable "cancelled". For a long-poll that must stop promptly.
  void Cancel();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace paddock::http
