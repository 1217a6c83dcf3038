// edge/http_provider: Traefik's http provider (pkg/provider/http) — a GET of `endpoint` every
// `pollInterval` (default 5 s), each bounded by `pollTimeout` (5 s), whose 200 body is a dynamic
// configuration ({"http":{"routers":{...}}}), checked with CheckDynamic (edge/dynamic.h). As in
// Traefik, a body whose 64-bit FNV-1 hash equals the last one's is skipped (a bad body is not
// decoded twice either); a failed poll — connection, TLS handshake or verification, timeout, a
// status other than 200, a body over max_body_bytes or that does not parse or check — keeps the
// last good configuration and is logged once. The body is read as JSON; one that is not JSON is
// read as YAML, as Traefik decodes it (its decoder is YAML's, of which JSON is a subset).
//
// Endpoints are http:// or https://. Over https the server's certificate is verified against the
// system's CAs and the endpoint's host, unless Traefik's `tls` options say otherwise: `ca` (trusted
// instead of the system's), `cert` + `key` (a client certificate, for mTLS), `insecureSkipVerify`.
// Traefik's `headers` are set on every poll (a `Host` one replaces the request's Host).
//
//   edge::HttpProvider http({.endpoint = "https://config.internal/traefik",
//                            .headers = {{"Authorization", "Bearer t0ken"}},
//                            .tls = edge::HttpProviderTls{.ca = "/etc/paddock/config-ca.pem"}});
//   http.SetWake([&] { edge.Wake(); });
//   RETURN_IF_ERROR(http.Start());
//   ASSIGN_OR_RETURN(boost::json::object c, http.Current());
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/json/object.hpp>

#include "common/status.h"
#include "edge/config_provider.h"
#include "http/client.h"

namespace paddock::edge {

struct HttpEndpoint {
  bool tls = false;  // https://
  std::string host;
  uint16_t port = 80;        // 443 for https:// without a port
  std::string target = "/";  // path and query
};
// "http[s]://host[:port][/path][?query]" ("[::1]" for IPv6). InvalidArgument otherwise.
StatusOr<HttpEndpoint> ParseHttpEndpoint(std::string_view url);

// Go's 64-bit FNV-1 (hash/fnv New64), Traefik's body hash.
uint64_t Fnv1Hash64(std::string_view data);

// Traefik's ClientTLS (providers.http.tls). `ca`, `cert` and `key` each name a PEM file, or are
// the PEM text itself (a value that holds "-----BEGIN"), as Traefik takes either.
struct HttpProviderTls {
  std::string ca = {};    // certificates trusted instead of the system's; empty: the system's
  std::string cert = {};  // a client certificate, presented when the server asks (mTLS); needs `key`
  std::string key = {};   // its private key; needs `cert`
  bool insecure_skip_verify = false;  // accept any server certificate, for any name
};

// Takes Traefik's `--providers.http.headers.<name>=<value>` (or `... .<name> <value>`; the prefix
// in any case, the name kept as written) out of `args` — command-line words the CLI did not
// recognise — into `headers`, a later flag replacing an earlier one of the same name in any case;
// other words stay in `args`, in order. InvalidArgument naming the word for one without a name or
// a value, or whose name is not an HTTP token or whose value holds a control character; `args`
// and `headers` are then unchanged.
Status TakeHttpHeaderFlags(std::vector<std::string>& args, std::map<std::string, std::string>& headers);

// The most an http provider's body may be, whatever maxResponseBodySize says (Traefik's default,
// -1, reads without a bound): docs/contracts/edge.md, Bounds.
inline constexpr uint64_t kMaxHttpProviderBody = 16 << 20;

struct HttpProviderOptions {
  std::string endpoint = {};
  std::chrono::milliseconds poll_interval{5000};
  std::chrono::milliseconds poll_timeout{5000};
  // A longer body is an error of that poll (the last good configuration stays): Traefik's
  // maxResponseBodySize, which Paddock bounds at kMaxHttpProviderBody whatever it is set to.
  uint64_t max_body_bytes = kMaxHttpProviderBody;
  // Traefik's headers: set on every poll, replacing the provider's own (Accept, Host).
  std::map<std::string, std::string> headers = {};
  // Traefik's tls; unset, an https:// endpoint is verified against the system's CAs. Loaded at
  // Start also for an http:// endpoint (where it is unused), as Traefik checks it at Init.
  std::optional<HttpProviderTls> tls = std::nullopt;
};

class HttpProvider final : public ConfigProvider {
 public:
  explicit HttpProvider(HttpProviderOptions options);
  ~HttpProvider() override;

  std::string name() const override { return "http"; }
  StatusOr<boost::json::object> Current() const override;
  void SetWake(std::function<void()> wake) override { wake_ = std::move(wake); }
  // InvalidArgument for an endpoint ParseHttpEndpoint refuses, a poll interval or timeout <= 0
  // (Traefik's Init refuses the interval; a poll of ours is always bounded), a header that is not
  // a valid HTTP field, or `tls` that does not load (a file that cannot be read — named with
  // the option, "tls.ca: cannot read /x.pem: No such file or directory" —, a CA without a PEM
  // certificate, a cert without its key, a key that is not the cert's); then a first Poll on the
  // caller's thread and one every poll_interval on its own.
  Status Start() override;
  void Stop() override;

  // One poll now: true when a new configuration was taken (and the wake called), false when the
  // body was unchanged; the poll's error otherwise (the last good configuration stays). Not to be
  // called concurrently with itself (the provider's thread runs it after Start). Before Start, it
  // first checks the options as Start does, and fails with Start's error.
  StatusOr<bool> Poll();

 private:
  // Checks the options and makes client_ (once); Start's errors.
  Status Prepare();
  void Loop();

  const HttpProviderOptions options_;
  HttpEndpoint endpoint_;
  std::unique_ptr<http::Client> client_;
  std::function<void()> wake_;
  uint64_t last_hash_ = 0;
  bool hashed_ = false;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;            // GUARDED_BY(mu_)
  bool have_ = false;            // GUARDED_BY(mu_)
  boost::json::object current_;  // GUARDED_BY(mu_)
  std::string last_error_;       // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace paddock::edge
