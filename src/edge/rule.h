// edge/rule: Traefik's v3 router rules and provider constraints — parsed once, matched per request.
//
// A rule is an expression of matchers joined by `&&`, `||`, `!` and parentheses, with `&&` binding
// tighter than `||` (Traefik's pkg/rules on vulcand/predicate, i.e. Go's expression grammar; v3
// syntax only, `ruleSyntax: v2` is not supported). What each matcher compares, as Traefik v3.7's
// pkg/muxer/http/matcher.go does:
//   Host(`example.com`)              the request's host (port removed, ASCII case-insensitive); one
//                                    argument. `*.example.com` matches exactly one extra label;
//                                    `*` alone matches every request; one trailing dot on either
//                                    side is ignored. ASCII only.
//   HostRegexp(`^.+\.example\.com$`) the lowercased host against a regular expression (unanchored).
//                                    As in Traefik, a pattern that matches "" matches every request
//                                    (Traefik also tries the empty CNAME-flattened host).
//   Path(`/a`), PathPrefix(`/a`)     the routing path: exact; plain string prefix (`/a` matches
//                                    `/ab`). Must start with '/'.
//   PathRegexp(`^/a/[0-9]+$`)        the routing path against a regular expression (unanchored).
//   Method(`GET`)                    the method; the argument is uppercased, the request's method is
//                                    compared as sent (a request `get` does not match).
//   Header(`K`, `v`), HeaderRegexp(`K`, `re`)   some value (one header line) of header K (name
//                                    ASCII case-insensitive, value exact). As in Go's server, Host
//                                    and Transfer-Encoding are not headers: they never match.
//   Query(`k`, `v`), QueryRegexp(`k`, `re`)     some value of query parameter k, decoded as Go's
//                                    url.ParseQuery does. Query(`k`) alone matches a parameter k
//                                    with an EMPTY value (`?k` or `?k=`), not any k.
//   ClientIP(`10.0.0.0/8`)           the client's address (the TCP peer) equal to an IP or inside a
//                                    CIDR, IPv4 or IPv6; one argument. An IPv4-mapped IPv6 client
//                                    is an IPv4 client.
// Matcher names are accepted as written, all lower case, all upper case, or capitalised
// (`Host`, `host`, `HOST`; `PathPrefix`, `pathprefix`, `PATHPREFIX`, `Pathprefix`). Every argument
// must be non-empty. Arguments are Go string literals: backticks (raw; '\r' dropped) or double
// quotes (Go escapes). Regular expressions are RE2 — the syntax of Go's regexp, linear time: a
// tenant's label can never make the edge backtrack.
//
// The routing path (Traefik's withRoutingPath over Go's URL.EscapedPath after the entry point's
// normalizePath): the request path with every %XX decoded except the reserved characters
// : / ? # [ ] @ ! $ & ' ( ) * + , ; = %, which stay encoded in upper case. So PathPrefix(`/a b`)
// matches /a%20b and /a%2fb is "/a%2Fb", not "/a/b". It is neither the raw path nor Go's
// fully-unescaped req.URL.Path.
//
// Constraints (the ecs provider's `constraints` option; pkg/provider/constraints) use the same
// grammar over a container's labels: Label(`k`, `v`) — the label's value equals v, an absent label
// being "" — and LabelRegex(`k`, `re`) — the value (or "") contains a match (unanchored, as Go's
// regexp.MatchString). Names are exact here (no `label`), arguments may be empty, and a
// LabelRegex whose pattern does not compile matches nothing, as in Traefik.
//
// Bounds (rules come from tenants' labels): a text over kMaxRuleBytes or nesting deeper than
// kMaxNesting (parentheses, `!`, calls) is refused; parsing and matching recurse at most that deep.
// Each regular expression is at most kMaxPatternBytes and compiles within kRegexpMaxMem; a rule
// holds at most kMaxRegexps of them. Matching allocates only to decode a path, a query value or
// a host that needs it.
//
//   ASSIGN_OR_RETURN(edge::Rule rule, edge::Rule::Parse("Host(`a.test`) && PathPrefix(`/api`)"));
//   if (rule.Matches(request_facts)) ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace paddock::edge {

inline constexpr std::size_t kMaxRuleBytes = 64 * 1024;
inline constexpr int kMaxNesting = 100;
inline constexpr std::size_t kMaxPatternBytes = 4096;
inline constexpr std::int64_t kRegexpMaxMem = 512 * 1024;  // RE2::Options::max_mem: program + DFA cache
inline constexpr int kMaxRegexps = 32;                      // per rule or constraint

// What a rule is matched against: views into one request, valid while Matches runs. The entry
// point has already done what Traefik's does before routing, since it also changes what is
// forwarded (proxy/request_path.h): 400 for a bad %-escape or a '#' in the path, %-encoding
// normalised, dot-segment and '//' removal (sanitizePath), ';' in the query turned into '&'.
struct RequestFacts {
  std::string_view method;
  // Go's req.Host: the Host header, or the authority of an absolute-form target; a port, brackets
  // around an IPv6 literal and surrounding spaces are removed here, as Traefik does.
  std::string_view host;
  std::string_view path;   // before '?', %-encoded (as the entry point left it)
  std::string_view query;  // after '?', raw
  // The TCP peer: "10.1.2.3", "::1", or with a port ("10.1.2.3:5000", "[::1]:5000").
  std::string_view client_ip;
  // Every header line as (name, value), in order; values without surrounding whitespace.
  const std::vector<std::pair<std::string_view, std::string_view>>* headers = nullptr;
};

class Rule {
 public:
  // InvalidArgument with Traefik's words (as its API shows a router's error), e.g.
  //   error while parsing rule Foo(`a`): parsing rule Foo(`a`): unsupported function: Foo
  //   error while parsing rule Host(`a`, `b`): adding rule Host(`a`, `b`): error while adding rule
  //     Host: unexpected number of parameters; got 2, expected one of [1]
  // Syntax errors carry Go's line:column and our own wording; bounds exceeded have our words. The
  // rule is quoted whole, as Traefik does, up to 1 KiB (then cut, with its length).
  static StatusOr<Rule> Parse(std::string_view text);

  // Thread-safe: a parsed rule is immutable.
  bool Matches(const RequestFacts& request) const;

  const std::string& text() const;

  // Traefik's ParseDomains: the argument of every Host matcher, lower-cased, in the rule's order
  // (negated ones too, as Traefik's); "*" for Host(`*`). What a TLS router's options apply to.
  std::vector<std::string> Domains() const;

  // The priority Traefik gives a router without one: len(rule), the rule text's length in bytes.
  int DefaultPriority() const;

  // Rule(...) objects share their parsed tree (cheap to copy).
  struct Node;

 private:
  explicit Rule(std::shared_ptr<const Node> root, std::string text);
  std::shared_ptr<const Node> root_;
  std::string text_;
};

class Constraint {
 public:
  // Empty text: matches everything. Errors are Traefik's (predicate's) words, e.g.
  // "unsupported function: Foo".
  static StatusOr<Constraint> Parse(std::string_view text);
  bool Matches(const std::map<std::string, std::string>& labels) const;

 private:
  explicit Constraint(std::shared_ptr<const Rule::Node> root);
  std::shared_ptr<const Rule::Node> root_;  // null: the empty constraint
};

}  // namespace paddock::edge
