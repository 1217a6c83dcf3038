// Condition operators, with AWS's documented rules (IAM User Guide, "IAM JSON policy elements:
// Condition operators" and "Conditions with multiple context keys or values"):
//   - Operators, and keys under one operator, are ANDed; the values of one key are ORed; for a
//     negated operator (StringNotEquals, NotIpAddress, ArnNotLike, ...) they are NORed: the
//     condition holds when the request value matches none of them.
//   - A key absent from the request makes the condition false, "If the policy condition requires
//     that the key is not matched, such as StringNotLike or ArnNotLike, and the right key is not
//     present, the condition is true" - except ...IfExists (true when absent) and Null (tests
//     presence itself).
//   - ForAllValues: true when every request value satisfies the operator, and true when the key is
//     absent or empty (AWS warns about exactly this); ForAnyValue: at least one request value
//     satisfies it, false when absent.
//   - ArnEquals/ArnLike compare each of the six colon-separated ARN parts separately, each part
//     with * and ? wildcards; the sixth part (the resource) runs to the end of the string.
//   - Numeric/Date/IP values that do not parse never match (the negated forms then hold).
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "iam/policy/evaluator.h"
#include "iam/policy/internal/compiled.h"

namespace paddock::iam::policy::internal {
namespace {

// Splits an ARN into its first five parts and the rest. False if it has fewer than five colons.
bool SplitArn(std::string_view s, std::string_view (&parts)[6]) {
  size_t start = 0;
  for (int k = 0; k < 5; ++k) {
    const size_t colon = s.find(':', start);
    if (colon == std::string_view::npos) return false;
    parts[k] = s.substr(start, colon - start);
    start = colon + 1;
  }
  parts[5] = s.substr(start);
  return true;
}

bool ArnMatch(std::string_view pattern, std::string_view value) {
  std::string_view p[6], v[6];
  if (!SplitArn(value, v)) return false;
  if (!SplitArn(pattern, p)) return GlobMatch(pattern, value, false);
  for (int k = 0; k < 6; ++k)
    if (!GlobMatch(p[k], v[k], false)) return false;
  return true;
}

bool BoolValue(std::string_view s, bool& out) {
  if (s.size() == 4 && (s[0] | 0x20) == 't' && (s[1] | 0x20) == 'r' && (s[2] | 0x20) == 'u' && (s[3] | 0x20) == 'e') {
    out = true;
    return true;
  }
  if (s.size() == 5 && (s[0] | 0x20) == 'f' && (s[1] | 0x20) == 'a' && (s[2] | 0x20) == 'l' && (s[3] | 0x20) == 's' &&
      (s[4] | 0x20) == 'e') {
    out = false;
    return true;
  }
  return false;
}

template <typename T>
bool Compare(ConditionOp op, T request, T policy) {
  switch (op) {
    case ConditionOp::kNumericEquals:
    case ConditionOp::kDateEquals:
      return request == policy;
    case ConditionOp::kNumericLessThan:
    case ConditionOp::kDateLessThan:
      return request < policy;
    case ConditionOp::kNumericLessThanEquals:
    case ConditionOp::kDateLessThanEquals:
      return request <= policy;
    case ConditionOp::kNumericGreaterThan:
    case ConditionOp::kDateGreaterThan:
      return request > policy;
    case ConditionOp::kNumericGreaterThanEquals:
    case ConditionOp::kDateGreaterThanEquals:
      return request >= policy;
    default:
      return false;
  }
}

// Whether request value `rv` matches one policy value (before negation).
bool MatchOne(const Condition& c, const ConditionValue& pv, const std::string& rv, const RequestContext& ctx) {
  switch (c.op) {
    case ConditionOp::kStringEquals:
    case ConditionOp::kBinaryEquals:
    case ConditionOp::kStringEqualsIgnoreCase:
    case ConditionOp::kStringLike:
    case ConditionOp::kArnLike: {
      const bool fold = c.op == ConditionOp::kStringEqualsIgnoreCase;
      std::optional<std::string> resolved;
      std::string_view pattern = pv.pattern.text;
      if (pv.pattern.has_variables) {
        resolved = pv.pattern.Resolve(ctx, fold);
        if (!resolved) return false;
        pattern = *resolved;
      }
      if (c.op == ConditionOp::kArnLike) return ArnMatch(pattern, rv);
      if (!pv.pattern.has_variables && c.op == ConditionOp::kStringLike) return pv.pattern.Matches(rv, false);
      if (c.op == ConditionOp::kStringLike || fold) return GlobMatch(pattern, rv, fold);
      return pattern == rv;
    }
    case ConditionOp::kNumericEquals:
    case ConditionOp::kNumericLessThan:
    case ConditionOp::kNumericLessThanEquals:
    case ConditionOp::kNumericGreaterThan:
    case ConditionOp::kNumericGreaterThanEquals: {
      const std::optional<double> n = ParseNumber(rv);
      return pv.number && n && Compare(c.op, *n, *pv.number);
    }
    case ConditionOp::kDateEquals:
    case ConditionOp::kDateLessThan:
    case ConditionOp::kDateLessThanEquals:
    case ConditionOp::kDateGreaterThan:
    case ConditionOp::kDateGreaterThanEquals: {
      const std::optional<int64_t> d = ParseDate(rv);
      return pv.date_ms && d && Compare(c.op, *d, *pv.date_ms);
    }
    case ConditionOp::kBool: {
      bool b = false;
      return BoolValue(rv, b) && b == pv.boolean;
    }
    case ConditionOp::kIpAddress: {
      const std::optional<Cidr> ip = ParseIp(rv);
      return pv.cidr && ip && CidrContains(*pv.cidr, *ip);
    }
    case ConditionOp::kNull:
      return false;  // handled by ConditionHolds
  }
  return false;
}

}  // namespace

bool ConditionHolds(const Condition& c, const RequestContext& ctx) {
  const std::vector<std::string>* values = ctx.FindLower(c.key);
  const bool present = values != nullptr && !values->empty();
  if (c.op == ConditionOp::kNull) {
    // "Null": "true" holds when the key is absent; "false" when it is present.
    return std::any_of(c.values.begin(), c.values.end(), [&](const ConditionValue& v) { return v.boolean != present; });
  }
  if (!present) {
    if (c.if_exists) return true;
    if (c.qualifier == SetQualifier::kForAllValues) return true;
    if (c.qualifier == SetQualifier::kForAnyValue) return false;
    return c.negated;
  }
  // Whether request value `rv` satisfies the operator (negation applied per request value).
  auto satisfies = [&](const std::string& rv) {
    const bool any = std::any_of(c.values.begin(), c.values.end(),
                                 [&](const ConditionValue& pv) { return MatchOne(c, pv, rv, ctx); });
    return c.negated ? !any : any;
  };
  switch (c.qualifier) {
    case SetQualifier::kForAllValues:
      return std::all_of(values->begin(), values->end(), satisfies);
    case SetQualifier::kForAnyValue:
      return std::any_of(values->begin(), values->end(), satisfies);
    case SetQualifier::kNone:
      break;
  }
  // A single-valued key (the usual case); a multivalued key without a qualifier is satisfied
  // when any of its values matches (negated: when none does).
  const bool any = std::any_of(values->begin(), values->end(), [&](const std::string& rv) {
    return std::any_of(c.values.begin(), c.values.end(), [&](const ConditionValue& pv) { return MatchOne(c, pv, rv, ctx); });
  });
  return c.negated ? !any : any;
}

}  // namespace paddock::iam::policy::internal
