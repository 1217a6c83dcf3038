// edge/middleware: Traefik's HTTP middlewares that decide on the request alone — built once from a
// middleware's configuration (Traefik's JSON field names, edge/dynamic.h) and applied per request
// by the proxy (edge/proxy), with no I/O of their own. forwardAuth (a call to an auth server),
// retry and buffering are carried out by the proxy from their parsed configuration
// (ForwardAuthConfig, RetryConfig, BufferingConfig below); the rest are Middleware objects.
//
//   ASSIGN_OR_RETURN(edge::BuiltMiddleware m, edge::BuildMiddleware(config));  // {"stripPrefix":{"prefixes":["/api"]}}
//   edge::Exchange x = ...;                       // the request as it goes through the chain
//   if (auto answer = m.middleware->OnRequest(x)) return *answer;   // a redirect, 401, 403, 429
//   ... forward x ...; m.middleware->OnResponse(x, response_headers);
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>

#include "common/status.h"

namespace paddock::edge {

using HeaderList = std::vector<std::pair<std::string, std::string>>;  // names as received, in order

// The request as the middleware chain sees and changes it.
struct Exchange {
  std::string method;
  std::string scheme = "http";  // of the entry point: http | https
  std::string host;             // the Host header as received (may carry a port)
  std::string path;             // before '?', as received (percent-encoded)
  std::string raw_query;        // after '?', without it; empty when none
  HeaderList headers;           // request headers (Host excluded)
  std::string client_ip;        // the TCP peer's address
  std::chrono::steady_clock::time_point now;  // for rate limits
  // Added to the response by OnResponse-less middlewares at request time (e.g. headers'
  // customResponseHeaders are applied in OnResponse instead); the proxy copies these in.
  HeaderList response_headers_to_set;
  // stripPrefix/stripPrefixRegex record what they removed (X-Forwarded-Prefix is set from it).
};

// A response a middleware gives instead of forwarding the request.
struct Answer {
  int status = 200;
  HeaderList headers;
  std::string body;
};

class Middleware {
 public:
  virtual ~Middleware() = default;
  // Changes the request, or answers it (the chain stops there). Thread-safe: called concurrently.
  virtual std::optional<Answer> OnRequest(Exchange& exchange) const = 0;
  // Changes the response's headers before they go to the client (status as the backend sent it).
  virtual void OnResponse(const Exchange& /*exchange*/, int /*status*/, HeaderList& /*headers*/) const {}
};

struct ForwardAuthConfig {
  std::string address;
  bool trust_forward_header = false;
  std::vector<std::string> auth_response_headers;
  std::string auth_response_headers_regex;
  std::vector<std::string> auth_request_headers;
  std::vector<std::string> add_auth_cookies_to_response;
  bool forward_body = false;
  int64_t max_body_size = -1;
  std::string header_field;
  bool preserve_location_header = false;
  bool preserve_request_method = false;
  std::string auth_signin_url;
  // tls: ca, cert, key, insecureSkipVerify
  std::string tls_ca, tls_cert, tls_key;
  bool tls_insecure_skip_verify = false;
};

struct RetryConfig {
  int attempts = 0;
  std::chrono::milliseconds initial_interval{100};
};

struct BufferingConfig {
  int64_t max_request_body_bytes = 0;  // 0: no limit
  int64_t mem_request_body_bytes = 1 << 20;
  int64_t max_response_body_bytes = 0;
  int64_t mem_response_body_bytes = 1 << 20;
  std::string retry_expression;
};

// One middleware built from its configuration: exactly one of the members is set, except for a
// chain, which lists its members' names in `chain` (resolved by the caller, who owns the names).
struct BuiltMiddleware {
  std::shared_ptr<const Middleware> middleware;
  std::optional<ForwardAuthConfig> forward_auth;
  std::optional<RetryConfig> retry;
  std::optional<BufferingConfig> buffering;
  std::vector<std::string> chain;
};

// `config` is one middleware's object ({"stripPrefix": {...}}) as edge/dynamic.h checks it.
// InvalidArgument with Traefik's words for a configuration it would refuse (a bad regex, a
// malformed CIDR, a users entry that is not "name:hash", ...).
StatusOr<BuiltMiddleware> BuildMiddleware(const boost::json::object& config);

}  // namespace paddock::edge
