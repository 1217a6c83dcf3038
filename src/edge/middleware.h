// edge/middleware: Traefik's HTTP middlewares that decide on the request alone — built once from a
// middleware's configuration (Traefik's JSON field names, edge/dynamic.h) and applied per request
// by the proxy (edge/proxy), with no I/O of their own. forwardAuth (a call to an auth server),
// retry, buffering and compress are carried out by the proxy from their parsed configuration
// (ForwardAuthConfig, RetryConfig, BufferingConfig below, CompressConfig in edge/compress.h); the
// rest are Middleware objects.
//
//   ASSIGN_OR_RETURN(edge::BuiltMiddleware m, edge::BuildMiddleware(config));  // {"stripPrefix":{"prefixes":["/api"]}}
//   edge::Exchange x = ...;                       // the request as it goes through the chain
//   if (auto answer = m.middleware->OnRequest(x)) return *answer;   // a redirect, 401, 403, 429
//   ... forward x ...; m.middleware->OnResponse(x, status, response_headers);
//
// Each behaves as Traefik v3's (pkg/middlewares, v3.7), down to its answers' bodies:
//   addPrefix, stripPrefix, stripPrefixRegex, replacePath, replacePathRegex: rewrite the path (Go's
//     URL.EscapedPath form), adding X-Forwarded-Prefix / X-Replaced-Path; a stripped path that
//     Go's path cleaning would change ("//", "/./", "/../") is answered 400 "Bad Request\n".
//   redirectScheme, redirectRegex: 302/301 for GET, 307/308 otherwise, body the status text.
//   headers: customRequestHeaders (an empty value removes), customResponseHeaders, CORS (a
//     preflight OPTIONS answered 200), the security headers (STS on https unless forced),
//     allowedHosts (500 "Bad Host\n").
//   basicAuth: 401 "401 Unauthorized\n" with WWW-Authenticate; bcrypt, $apr1$/$1$ and {SHA} hashes.
//   ipAllowList: 403 "Forbidden" (or rejectStatusCode); rateLimit: 429 "Too Many Requests" with
//     Retry-After and X-Retry-In, or a delay (Exchange::delay).
//   inFlightReq: 429 "max connections reached: N" past N requests of one source under way
//     (oxy's connlimit; a request holds its slot until it is over: Exchange::holds).
//   circuitBreaker: oxy's cbreaker — its expression (NetworkErrorRatio(), ResponseCodeRatio(a, b,
//     c, d), LatencyAtQuantileMS(q)) over the last 10 s of the requests it let through (OnDone),
//     checked at most once a checkPeriod; tripped, it answers responseCode (503) with its status
//     text for fallbackDuration, then lets a growing share through for recoveryDuration.
//   passTLSClientCert: X-Forwarded-Tls-Client-Cert (the certificates the client presented, each
//     base64 DER, comma-separated) and X-Forwarded-Tls-Client-Cert-Info (the fields asked for,
//     query-escaped), as Traefik v3 writes them; nothing without a client certificate.
// Regular expressions are RE2 (Go's syntax; never backtracking), at most 4096 bytes each, and each
// compiled one bounded to 2 MiB. Not taken from Traefik: basicAuth's usersFile (no files read
// here), rateLimit's redis, the deprecated ipWhiteList, CSP's $NONCE (kept literally).
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
#include "edge/retry_expression.h"

struct ssl_st;  // OpenSSL's SSL

namespace paddock::edge {

struct CompressConfig;  // edge/compress.h

using HeaderList = std::vector<std::pair<std::string, std::string>>;  // names as received, in order

// The request as the middleware chain sees and changes it.
struct Exchange {
  std::string method;
  std::string scheme = "http";  // of the entry point: http | https
  std::string host;             // the Host header as received (may carry a port)
  // Before '?', as received (percent-encoded). A middleware that rewrites it leaves it in Go's
  // URL.EscapedPath() form, as Traefik forwards it. stripPrefix of the whole path leaves it
  // empty (as Traefik does); the proxy sends "/" then, as Go's URL.RequestURI() does.
  std::string path;
  std::string raw_query;        // after '?', without it; empty when none
  // Request headers (Host excluded). The proxy adds X-Forwarded-* (Traefik's forwardedheaders,
  // before the chain: redirectScheme reads X-Forwarded-Proto); middlewares add headers under
  // Go's canonical names ("X-Forwarded-Prefix").
  HeaderList headers;
  std::string client_ip;        // the TCP peer's address
  std::chrono::steady_clock::time_point now;  // for rate limits
  // Added to the response by OnResponse-less middlewares at request time (e.g. headers'
  // customResponseHeaders are applied in OnResponse instead); the proxy copies these in.
  HeaderList response_headers_to_set;
  // How long the proxy holds the request before forwarding it: rateLimit shapes traffic as
  // Traefik does, delaying a request whose token is due within 1/(2*rate) (capped at 500ms)
  // rather than refusing it. Several rate limits add up.
  std::chrono::nanoseconds delay{0};
  // headers' customRequestHeaders {"X-Forwarded-For": ""}: the proxy sends no X-Forwarded-For at
  // all, not even the client's address (Go's ReverseProxy nil-header convention Traefik uses).
  bool omit_x_forwarded_for = false;
  // The user basicAuth authenticated (Traefik's access-log ClientUsername); empty otherwise.
  std::string user;
  // The client's TLS connection (null over plain HTTP), where passTLSClientCert reads the
  // certificates the client presented. The proxy's; valid only while the chain runs on the request.
  ssl_st* tls = nullptr;
  // What a middleware holds for as long as the request is served — until its answer's last byte
  // was relayed, or the request failed (inFlightReq's slot). The proxy drops them then; a copy of
  // the exchange made to outlive the request (a mirror's) must not take them.
  std::vector<std::shared_ptr<const void>> holds;
};

// A response a middleware gives instead of forwarding the request. Its headers are Traefik's
// (Content-Type as Go would send or sniff it); the proxy adds Content-Length and Date.
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
  // Called, last middleware first, for every middleware whose OnRequest passed the request on —
  // also when a later middleware answered it (Traefik's response writers wrap: a basicAuth 401
  // after a headers middleware carries its customResponseHeaders), never for the one answering.
  virtual void OnResponse(const Exchange& /*exchange*/, int /*status*/, HeaderList& /*headers*/) const {}
  // Called once the request is over (its answer's last byte relayed, or the answer given up), with
  // the status the client was answered with and the time, for every middleware whose OnRequest
  // passed the request on: what circuitBreaker measures.
  virtual void OnDone(const Exchange& /*exchange*/, int /*status*/,
                      std::chrono::steady_clock::time_point /*done*/) const {}
};

struct ForwardAuthConfig {
  std::string address;
  bool trust_forward_header = false;
  std::vector<std::string> auth_response_headers;
  std::string auth_response_headers_regex;
  std::vector<std::string> auth_request_headers;
  std::vector<std::string> add_auth_cookies_to_response;
  bool forward_body = false;
  int64_t max_body_size = -1;           // -1: no limit
  int64_t max_response_body_size = -1;  // of the auth server's answer; -1: no limit
  std::string header_field;
  bool preserve_location_header = false;
  bool preserve_request_method = false;
  std::string auth_signin_url;
  // tls: ca, cert, key, insecureSkipVerify
  std::string tls_ca, tls_cert, tls_key;
  bool tls_insecure_skip_verify = false;
};

// Traefik's retry: `attempts` >= 1. The first wait is `initial_interval`, growing to twice it
// by the last attempt; 0 — Traefik's default, whatever its examples show — retries at once.
struct RetryConfig {
  int attempts = 0;
  std::chrono::milliseconds initial_interval{0};
  std::chrono::milliseconds timeout{0};       // over all attempts; 0: none
  int64_t max_request_body_bytes = 2 << 20;   // a larger body is not retried
  std::vector<std::pair<int, int>> status;    // retry on these response codes (inclusive ranges)
  bool disable_retry_on_network_error = false;
  bool retry_non_idempotent_method = false;
};

struct BufferingConfig {
  int64_t max_request_body_bytes = 0;  // 0: no limit
  int64_t mem_request_body_bytes = 1 << 20;
  int64_t max_response_body_bytes = 0;
  int64_t mem_response_body_bytes = 1 << 20;
  std::string retry_expression;
  // retry_expression parsed (edge/retry_expression.h); null when there is none. The proxy sends the
  // request again while it holds after an attempt (oxy: at most 10 attempts).
  std::shared_ptr<const RetryExpression> retry = nullptr;
};

// Traefik's errors (customErrors), carried out by the proxy: a response — the server's, a later
// middleware's or the edge's own — whose status is in `status` is replaced by what `service`
// answers for `query`, given the status (rewritten by `rewrites`, the first range that has it).
struct ErrorPagesConfig {
  std::vector<std::pair<int, int>> status;
  std::vector<std::pair<std::vector<std::pair<int, int>>, int>> rewrites;  // in the configuration's order
  std::string service;  // as configured (the compiler qualifies it with the middleware's provider)
  std::string query;    // {status}, {originalStatus}, {url}
  std::optional<std::vector<std::string>> request_headers;  // nullopt: every header of the request
};

// One middleware built from its configuration: exactly one of the members is set, except for a
// chain, which lists its members' names in `chain` (resolved by the caller, who owns the names).
struct BuiltMiddleware {
  std::shared_ptr<const Middleware> middleware;
  std::optional<ForwardAuthConfig> forward_auth;
  std::optional<RetryConfig> retry;
  std::optional<BufferingConfig> buffering;
  std::shared_ptr<const CompressConfig> compress;  // carried out by the proxy (edge/compress.h)
  std::optional<ErrorPagesConfig> errors;
  std::vector<std::string> chain;
};

// `config` is one middleware's object ({"stripPrefix": {...}}) as edge/dynamic.h checks it.
// InvalidArgument with Traefik's words for a configuration it would refuse (a bad regex, a
// malformed CIDR, a users entry that is not "name:hash", ...).
StatusOr<BuiltMiddleware> BuildMiddleware(const boost::json::object& config);

}  // namespace paddock::edge
