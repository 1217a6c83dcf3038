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
#include <memory>
#include <string>

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
