// An HTTP/1.1 server: keep-alive, a request-size limit, per-connection timeouts and a graceful
// stop. Connections are served by a few I/O threads; handlers run on a separate pool of worker
// threads, so a handler may block (on a durable store commit, say) without stalling I/O, and
// many blocked handlers let the store batch their commits.
//
//   http::Server server(options, [&](const http::Request& req) { return Handle(req); });
//   ASSIGN_OR_RETURN(uint16_t port, server.Start());  // options.port 0 binds an ephemeral port
//   ...
//   server.Stop();  // stops accepting; in-flight requests finish and are answered
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "http/message.h"

namespace paddock::http {

using Handler = std::function<Response(const Request&)>;

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;                     // 0: pick an ephemeral port
  size_t max_body_bytes = 1 << 20;       // larger bodies get 413 and the connection is closed
  // Requests whose header `large_body_header` has a value this returns true for (decided as the
  // headers end, before the body is read; nothing is copied) may have bodies up to
  // large_body_bytes instead: for the few operations whose legal bodies pass max_body_bytes
  // (CloudWatch Logs' PutLogEvents, named by X-Amz-Target).
  std::string large_body_header;
  std::function<bool(std::string_view value)> allow_large_body;
  size_t large_body_bytes = 0;
  size_t max_header_bytes = 16 << 10;    // larger headers get 431
  std::chrono::milliseconds read_timeout{30'000};  // to receive a whole request once it starts
  std::chrono::milliseconds idle_timeout{60'000};  // keep-alive idle time before close
  int io_threads = 1;
  int worker_threads = 32;
  // 0: no bound. Otherwise a connection from a peer address that already holds this many is
  // closed as soon as it is accepted. For endpoints served to tasks (task metadata): each
  // connection is one of the node process's descriptors, which every agent shares, so a task
  // must not be able to hold them all (docs/security.md, "Limits that hold").
  size_t max_connections_per_peer = 0;
  // Requests for which this returns true run on the I/O thread that read them instead of being
  // handed to a worker: for handlers that never block (reads from the store's WAL snapshot), it
  // saves two thread hand-offs per request. Empty: every request goes to a worker.
  std::function<bool(const Request&)> run_inline;
  // Non-empty: the listening socket is made inside this network namespace (a /var/run/netns/<name>
  // path; common/netns.h), so `host` is an address of that namespace. The server's threads stay
  // where they are: a socket belongs to the namespace it was made in.
  std::string netns_path;
};

class Server {
 public:
  Server(ServerOptions options, Handler handler);
  ~Server();  // Stops if running.
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and starts serving. Returns the bound port.
  StatusOr<uint16_t> Start();

  // Graceful stop: closes the listener, lets in-flight requests finish and sends their
  // responses, closes idle connections, then joins all threads. Idempotent.
  // REQUIRES: not called from a handler (it would wait for itself).
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace paddock::http
