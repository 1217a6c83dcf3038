// edge/proxy/request_path: what a Traefik v3.7 entry point does to a request's target before
// routing — the path and query the rules see and the server is sent — or the 400 it answers.
//
// In order (Go's net/http server, then the entry point's handlers in pkg/server, outermost first):
//   1. Go's url.ParseRequestURI: a '%' not followed by two hex digits in the path, or a control
//      byte (< 0x20, 0x7f) anywhere in the target, is a malformed request: Go's server answers
//      "400 Bad Request" (text/plain) and closes the connection. The query is not checked further.
//   2. denyFragment: a literal '#' in the path is answered 400 with no body (the connection stays).
//      A '#' in the query, or %23 in the path, is not refused.
//   3. normalizePath: when the path is not already Go's escaping of its decoded form, %XX of an
//      unreserved character (A-Z a-z 0-9 - . _ ~) is decoded and every other %xx upper-cased
//      ("/%7euser/a%2fb" -> "/~user/a%2Fb"). The path is then written as Go's URL.EscapedPath: as
//      is when it only holds characters a path may hold (letters, digits, -._~ !$&'()*+,;=:@[] /
//      and %XX), otherwise re-escaped from its decoded form ('"' -> %22, a byte >= 0x80 -> %XX;
//      an encoded '/' is then no longer told apart: "/a%2Fb\"" -> "/a/b%22", as in Traefik).
//   4. sanitizePath (entryPoints.<ep>.http.sanitizePath, default true; URL.JoinPath): Go's
//      path.Clean on that escaped path — "." segments and empty segments ("//") removed, ".."
//      removes the segment before it and is dropped at the root — keeping one trailing '/' when
//      the path had one ("/a/b/../c/" -> "/a/c/", "/.." -> "/"). Encoded dots were decoded by
//      step 3, so "/a/%2e%2e/b" is "/b"; an encoded '/' is not a separator ("/a%2F../b" stays).
//   5. http.AllowQuerySemicolons (encodeQuerySemicolons false, the default): every ';' in the
//      raw query becomes '&' ("a=1;b=2" -> "a=1&b=2").
// Only origin-form targets (a path starting with '/') get steps 3 and 4; "*" and absolute-form
// targets get steps 1, 2 and 5 and keep their path as received.
//
//   RequestTarget t = SanitizeRequestTarget("/a/b/../c", "x=1;y=2");
//   if (t.refusal != TargetRefusal::kNone) answer 400; else route and forward t.path, t.query.
#pragma once

#include <string>
#include <string_view>

namespace paddock::edge {

enum class TargetRefusal {
  kNone,
  kMalformed,  // step 1: "400 Bad Request" as Go's server writes it, connection closed
  kFragment,   // step 2: 400 with an empty body, connection kept
};

struct RequestTarget {
  std::string path;   // %-encoded, as routed and forwarded; empty when refused
  std::string query;  // raw, after '?', without it
  TargetRefusal refusal = TargetRefusal::kNone;
};

// `path` is the target before its first '?', `query` what follows it. Pure; never throws.
// sanitize_path false skips step 4 (Traefik's sanitizePath: false).
RequestTarget SanitizeRequestTarget(std::string_view path, std::string_view query, bool sanitize_path = true);

}  // namespace paddock::edge
