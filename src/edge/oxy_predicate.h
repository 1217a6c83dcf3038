// edge/oxy_predicate: the expression language of vulcand/oxy's predicates (vulcand/predicate over
// Go's expression syntax), which Traefik takes as is in buffering's `retryExpression` and the
// circuitBreaker's `expression`. Each user gives the functions it knows; an expression is parsed
// once and evaluated with the functions' values of the moment.
//
//   static constexpr OxyFunction kFunctions[] = {{"NetworkErrorRatio", OxyType::kFloat, ""},
//                                                {"LatencyAtQuantileMS", OxyType::kInt, "f"}};
//   ASSIGN_OR_RETURN(OxyPredicate p, OxyPredicate::Parse("NetworkErrorRatio() > 0.5", kFunctions, "expression"));
//   bool tripped = p.Holds([&](size_t function, std::span<const OxyValue> args) -> OxyValue { ... });
//
// The language: `&&`, `||` (looser), parentheses, and comparisons `==`, `!=`, `<`, `>`, `<=`, `>=` of
// a function's value on the left with a literal of its type on the right — an integer (decimal or
// 0x hex), a float (Go's: `0.5`, `.5`, `1e3`, `5.`), or a Go string literal (`"…"`, `` `…` ``)
// compared with == and != only. A function is called with literals of its parameters' types
// (predicate's reflection call: no conversion of an int to a float). As oxy: no `!`, no literal on
// the left, and the whole must be a predicate. Bounded: at most 4,096 bytes and 64 nested
// parentheses.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "common/status.h"

namespace paddock::edge {

enum class OxyType { kPredicate, kInt, kFloat, kString };

// One function of the language: its name, what it gives (kPredicate: it is a predicate itself),
// and its parameters' types, one letter each: 'i' an int, 'f' a float.
struct OxyFunction {
  std::string_view name;
  OxyType result;
  std::string_view params;
};

// A literal or a function's value: int, float or string; a predicate function's is an int, 0 or 1.
using OxyValue = std::variant<long long, double, std::string>;

class OxyPredicate {
 public:
  // kInvalidArgument naming `what` (the option: "retryExpression"), the problem and where.
  static StatusOr<OxyPredicate> Parse(std::string_view text, std::span<const OxyFunction> functions,
                                      std::string_view what);
  // Whether it holds, given each called function's value: `value(index in functions, arguments)`.
  using Values = std::function<OxyValue(size_t function, std::span<const OxyValue> arguments)>;
  bool Holds(const Values& value) const;

  struct Node;

 private:
  explicit OxyPredicate(std::shared_ptr<const Node> root) : root_(std::move(root)) {}
  std::shared_ptr<const Node> root_;
};

}  // namespace paddock::edge
