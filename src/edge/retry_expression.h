// edge/retry_expression: the buffering middleware's `retryExpression` — vulcand/oxy's retry
// predicate (its buffer package, over vulcand/predicate), which Traefik's buffering middleware
// takes as is. After each attempt the proxy asks whether to send the request again.
//
//   ASSIGN_OR_RETURN(RetryExpression e, RetryExpression::Parse("IsNetworkError() && Attempts() <= 2"));
//   if (e.Matches({.method = "GET", .attempt = 1, .response_code = 502})) ... send it again ...
//
// The language is a Go expression: `&&`, `||`, parentheses, and comparisons `==`, `!=`, `<`, `>`,
// `<=`, `>=` of a function on the left with a literal on the right (an integer, or a Go string
// literal for RequestMethod()). Functions:
//   IsNetworkError()  true when the attempt's status is 502 or 504 (Bad Gateway, Gateway Timeout:
//                     what the proxy answers when a server cannot be reached or does not answer)
//   Attempts()        the attempt's number, from 1
//   ResponseCode()    the attempt's status
//   RequestMethod()   the request's method, compared with == or != only
// As oxy: no `!` (oxy's parser defines no NOT), no literal on the left, an int function compared
// with a string (or the reverse) is an error, and so is an expression that is not a predicate
// (`Attempts()` alone). Bounded: at most 4,096 bytes and 64 nested parentheses (edge/oxy_predicate.h).
#pragma once

#include <string_view>

#include "common/status.h"
#include "edge/oxy_predicate.h"

namespace paddock::edge {

struct RetryContext {
  std::string_view method;
  int attempt = 1;        // from 1
  int response_code = 0;  // the attempt's status
};

class RetryExpression {
 public:
  // kInvalidArgument naming what is wrong and where.
  static StatusOr<RetryExpression> Parse(std::string_view text);
  bool Matches(const RetryContext& context) const;

 private:
  explicit RetryExpression(OxyPredicate predicate) : predicate_(std::move(predicate)) {}
  OxyPredicate predicate_;
};

}  // namespace paddock::edge
