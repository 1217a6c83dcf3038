#include "edge/retry_expression.h"

namespace paddock::edge {
namespace {

enum Function : size_t { kIsNetworkError, kAttempts, kResponseCode, kRequestMethod };
constexpr OxyFunction kFunctions[] = {
    {"IsNetworkError", OxyType::kPredicate, ""},
    {"Attempts", OxyType::kInt, ""},
    {"ResponseCode", OxyType::kInt, ""},
    {"RequestMethod", OxyType::kString, ""},
};

}  // namespace

StatusOr<RetryExpression> RetryExpression::Parse(std::string_view text) {
  ASSIGN_OR_RETURN(OxyPredicate predicate, OxyPredicate::Parse(text, kFunctions, "retryExpression"));
  return RetryExpression(std::move(predicate));
}

bool RetryExpression::Matches(const RetryContext& c) const {
  return predicate_.Holds([&c](size_t function, std::span<const OxyValue>) -> OxyValue {
    switch (function) {
      case kIsNetworkError: return static_cast<long long>(c.response_code == 502 || c.response_code == 504);
      case kAttempts: return static_cast<long long>(c.attempt);
      case kResponseCode: return static_cast<long long>(c.response_code);
      default: return std::string(c.method);
    }
  });
}

}  // namespace paddock::edge
