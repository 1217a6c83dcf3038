// edge/http_provider: Traefik's http provider (pkg/provider/http) — a GET of `endpoint` every
// `pollInterval` (default 5 s), each bounded by `pollTimeout` (5 s), whose 200 body is a dynamic
// configuration ({"http":{"routers":{...}}}), checked with CheckDynamic (edge/dynamic.h). As in
// Traefik, a body whose 64-bit FNV-1 hash equals the last one's is skipped (a bad body is not
// decoded twice either); a failed poll — connection, timeout, a status other than 200, a body
// that does not parse or check — keeps the last good configuration and is logged once. The body
// is read as JSON; one that is not JSON is read as YAML, as Traefik decodes it (its decoder is
// YAML's, of which JSON is a subset). Endpoints are http:// only: https:// is refused at Start.
//
//   edge::HttpProvider http({.endpoint = "http://127.0.0.1:9000/traefik"});
//   http.SetWake([&] { edge.Wake(); });
//   RETURN_IF_ERROR(http.Start());
//   ASSIGN_OR_RETURN(boost::json::object c, http.Current());
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include <boost/json/object.hpp>

#include "common/status.h"
#include "edge/config_provider.h"
#include "http/client.h"

namespace paddock::edge {

struct HttpEndpoint {
  std::string host;
  uint16_t port = 80;
  std::string target = "/";  // path and query
};
// "http://host[:port][/path][?query]" ("[::1]" for IPv6). InvalidArgument otherwise; https:// is
// refused by name ("https endpoints are not supported yet").
StatusOr<HttpEndpoint> ParseHttpEndpoint(std::string_view url);

// Go's 64-bit FNV-1 (hash/fnv New64), Traefik's body hash.
uint64_t Fnv1Hash64(std::string_view data);

struct HttpProviderOptions {
  std::string endpoint = {};
  std::chrono::milliseconds poll_interval{5000};
  std::chrono::milliseconds poll_timeout{5000};
  // A longer body is an error of that poll (the last good configuration stays).
  uint64_t max_body_bytes = 16 << 20;
};

class HttpProvider final : public ConfigProvider {
 public:
  explicit HttpProvider(HttpProviderOptions options);
  ~HttpProvider() override;

  std::string name() const override { return "http"; }
  StatusOr<boost::json::object> Current() const override;
  void SetWake(std::function<void()> wake) override { wake_ = std::move(wake); }
  // InvalidArgument for an endpoint ParseHttpEndpoint refuses or a poll interval <= 0 (Traefik's
  // Init); then a first Poll on the caller's thread and one every poll_interval on its own.
  Status Start() override;
  void Stop() override;

  // One poll now: true when a new configuration was taken (and the wake called), false when the
  // body was unchanged; the poll's error otherwise (the last good configuration stays). Not to be
  // called concurrently with itself (the provider's thread runs it after Start).
  StatusOr<bool> Poll();

 private:
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
