// A small blocking HTTP/1.1 client with one keep-alive connection, for tests, the CLI, remote
// agents, the load driver and the edge's http provider — plain, or over TLS (HTTPS) with the
// server's certificate verified against the system's CAs or given ones, and an optional client
// certificate (mTLS).
//
//   http::Client client("127.0.0.1", port);
//   ASSIGN_OR_RETURN(http::Response resp, client.Send(req));
//
//   ASSIGN_OR_RETURN(std::unique_ptr<http::Client> tls,
//                    http::Client::Tls("config.example", 443, std::chrono::seconds(5), {.ca_pem = ca}));
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

// How a Client speaks TLS (Go's tls.Config as a client, in the parts Traefik's ClientTLS sets).
// The server's certificate must chain to a trusted one and name the host the Client was given
// (a DNS name, checked against its DNS SANs and sent as SNI; or an IP literal, checked against its
// IP SANs, no SNI) unless `insecure_skip_verify`.
struct ClientTlsOptions {
  // PEM certificates trusted instead of the system's (OpenSSL's default paths); empty: the system's.
  std::string ca_pem;
  // A PEM client certificate (a chain, leaf first) and its PEM private key, presented when the
  // server asks for one; both or neither.
  std::string cert_pem;
  std::string key_pem;
  // Accept any certificate the server presents, for any name (Go's InsecureSkipVerify).
  bool insecure_skip_verify = false;
};

class Client {
 public:
  Client(std::string host, uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // A client whose connections are TLS. InvalidArgument when `tls` does not load: a CA that holds
  // no PEM certificate, a certificate without its key (or the reverse), either not PEM, or a key
  // that is not the certificate's. Send fails with kUnavailable, naming the verification error
  // ("self-signed certificate", "hostname mismatch"), when the handshake does.
  static StatusOr<std::unique_ptr<Client>> Tls(std::string host, uint16_t port, std::chrono::milliseconds timeout,
                                               const ClientTlsOptions& tls);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `req` (Host and Content-Length are filled in) and reads the response, reconnecting
  // once if the kept-alive connection was closed by the server. Fails with kUnavailable on
  // connection errors and timeouts.
  StatusOr<Response> Send(const Request& req);

  // Like Send, but a 2xx response's body is handed to `on_body` piece by piece as it arrives
  // (chunked or not; pieces of any size, never empty) instead of being kept: the Response returned
  // has the status and headers and an empty body. `on_body` returns false to stop reading; the
  // connection is then closed and the Response returned. Any other status's body is read whole
  // into the Response, as Send reads it. The timeout bounds each read, not the whole body, so a
  // stream lasts as long as bytes keep coming (AWS event streams: StartLiveTail), and Cancel ends
  // one at once. A request is sent again only as Send does, before any byte of an answer came.
  StatusOr<Response> Stream(const Request& req, const std::function<bool(std::string_view)>& on_body);

  // Responses whose body is longer than `bytes` fail Send with kResourceExhausted (and close the
  // connection); by default a body has no limit.
  void set_max_response_body(uint64_t bytes);

  // From any thread: makes a Send in progress, and every later one, fail at once with
  // kUnavailable "cancelled". For a long-poll that must stop promptly.
  void Cancel();

 private:
  class Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace paddock::http
