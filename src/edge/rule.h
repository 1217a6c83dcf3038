// edge/rule: Traefik's v3 router rules and provider constraints — parsed once, matched per request.
//
// A rule is an expression of matchers joined by `&&`, `||`, `!` and parentheses, with `&&` binding
// tighter than `||` (Traefik's pkg/rules, v3 syntax; `ruleSyntax: v2` is not supported):
//   Host(`example.com`)              the request's host (Host header or URL authority, port removed),
//                                    case-insensitive; one argument in v3
//   HostRegexp(`^.+\.example\.com$`) the host against an RE2 regular expression
//   Path(`/a`), PathPrefix(`/a`)     the path (exact; prefix), as received (not unescaped)
//   PathRegexp(`^/a/[0-9]+$`)        the path against a regular expression
//   Method(`GET`)                    the method (case-insensitive)
//   Header(`K`, `v`), HeaderRegexp(`K`, `re`)   some value of header K (name case-insensitive)
//   Query(`k`, `v`), QueryRegexp(`k`, `re`)     some value of query parameter k; Query(`k`) alone:
//                                    the parameter is present
//   ClientIP(`10.0.0.0/8`)           the client's address (the TCP peer) in an IP or CIDR
// Arguments are quoted with backticks or double quotes. Regular expressions are RE2 (the syntax of
// Go's regexp, linear time: a tenant's label can never make the edge backtrack).
//
// Constraints (the ecs provider's `constraints` option) use the same grammar over a container's
// labels: Label(`k`, `v`), LabelRegex(`k`, `re`).
//
//   ASSIGN_OR_RETURN(edge::Rule rule, edge::Rule::Parse("Host(`a.test`) && PathPrefix(`/api`)"));
//   if (rule.Matches(request_facts)) ...
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace paddock::edge {

// What a rule is matched against: views into one request, valid while Matches runs.
struct RequestFacts {
  std::string_view method;
  std::string_view host;    // without port; any case (matching lowercases)
  std::string_view path;    // before '?'
  std::string_view query;   // after '?', raw
  std::string_view client_ip;  // "10.1.2.3" or "::1"
  // Every value of the header `name` (ASCII case-insensitive), in order.
  const std::vector<std::pair<std::string_view, std::string_view>>* headers = nullptr;
};

class Rule {
 public:
  // InvalidArgument with Traefik's words where it has them (an unknown matcher, a wrong number of
  // arguments, a bad regular expression or CIDR, unbalanced parentheses).
  static StatusOr<Rule> Parse(std::string_view text);

  bool Matches(const RequestFacts& request) const;

  const std::string& text() const;

  // Rule(...) objects share their parsed tree (cheap to copy).
  struct Node;

 private:
  explicit Rule(std::shared_ptr<const Node> root, std::string text);
  std::shared_ptr<const Node> root_;
  std::string text_;
};

class Constraint {
 public:
  // Empty text: matches everything.
  static StatusOr<Constraint> Parse(std::string_view text);
  bool Matches(const std::map<std::string, std::string>& labels) const;

 private:
  std::shared_ptr<const Rule::Node> root_;
};

}  // namespace paddock::edge
