// Evaluate, TrustPolicyAllows and DenialMessage: the specification of IAM's decision rules as
// Paddock implements them (docs/contracts/iam.md, "Policy evaluation").
#include "iam/policy/evaluator.h"

#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace paddock::iam::policy {
namespace {

const AccountId kAccount("123456789012");
const std::string kTaskDef = "arn:aws:ecs:us-east-1:123456789012:task-definition/web:3";
const std::string kBareFamily = "arn:aws:ecs:us-east-1:123456789012:task-definition/web";
const std::string kCluster = "arn:aws:ecs:us-east-1:123456789012:cluster/default";

Policy Parse(const std::string& json, DocumentKind kind = DocumentKind::kIdentity) {
  auto p = ParsePolicy(json, kind);
  if (!p.ok()) {
    ADD_FAILURE() << p.status().ToString() << "\n" << json;
    return *ParsePolicy(R"({"Statement":{"Effect":"Deny","Action":"*","Resource":"*"}})", DocumentKind::kIdentity);
  }
  return *p;
}

Principal Alice() { return Principal::User(kAccount, "alice", "AIDAALICE"); }

RequestContext Ctx(std::string action = "ecs:RunTask", std::string resource = kTaskDef, Principal p = Alice()) {
  return RequestContext(std::move(p), std::move(action), std::move(resource));
}

Decision Decide(const RequestContext& ctx, const std::vector<std::string>& identity) {
  PolicySet set;
  for (const std::string& j : identity) set.identity.push_back({"p", Parse(j)});
  return Evaluate(ctx, set).decision;
}

// ---------------------------------------------------------------------------------------------
// Conditions, table-driven: one Allow statement carrying the condition; the case says whether
// the request with these context keys is allowed.

using Keys = std::vector<std::pair<std::string, std::vector<std::string>>>;

struct ConditionCase {
  std::string name;
  std::string condition;  // the Condition element's JSON
  Keys keys;
  bool allowed;
  Principal principal = Alice();
};

void PrintTo(const ConditionCase& c, std::ostream* os) { *os << c.name; }

class ConditionTest : public ::testing::TestWithParam<ConditionCase> {};

// Every case is decided twice: on the full context, and on one keeping only the keys the policy
// reads (ReadKeys, as the authorizer builds them), which must decide alike.
TEST_P(ConditionTest, Decides) {
  const ConditionCase& c = GetParam();
  const std::string policy = R"({"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"ecs:RunTask",)"
                             R"("Resource":"*","Condition":)" + c.condition + "}}";
  PolicySet set;
  set.identity.push_back({"p", Parse(policy)});
  const std::vector<std::string> kept = ReadKeys(set);
  RequestContext ctx = Ctx("ecs:RunTask", kTaskDef, c.principal);
  RequestContext pruned(c.principal, "ecs:RunTask", kTaskDef, &kept);
  for (const auto& [k, v] : c.keys) {
    ctx.SetMulti(k, v);
    pruned.SetMulti(k, v);
  }
  const Decision want = c.allowed ? Decision::kAllow : Decision::kImplicitDeny;
  EXPECT_EQ(Evaluate(ctx, set).decision, want) << c.condition;
  EXPECT_EQ(Evaluate(pruned, set).decision, want) << "pruned to the read keys: " << c.condition;
}

Keys K(std::string k, std::string v) { return {{std::move(k), {std::move(v)}}}; }
Keys Multi(std::string k, std::vector<std::string> v) { return {{std::move(k), std::move(v)}}; }

INSTANTIATE_TEST_SUITE_P(
    Evaluator, ConditionTest,
    ::testing::Values(
        // String operators.
        ConditionCase{"StringEqualsMatch", R"({"StringEquals":{"aws:RequestTag/env":"prod"}})", K("aws:RequestTag/env", "prod"), true},
        ConditionCase{"StringEqualsIsCaseSensitive", R"({"StringEquals":{"aws:RequestTag/env":"prod"}})", K("aws:RequestTag/env", "Prod"), false},
        ConditionCase{"StringEqualsValuesAreOred", R"({"StringEquals":{"aws:RequestTag/env":["dev","prod"]}})", K("aws:RequestTag/env", "prod"), true},
        ConditionCase{"StringEqualsMissingKeyIsFalse", R"({"StringEquals":{"aws:RequestTag/env":"prod"}})", {}, false},
        ConditionCase{"StringEqualsStarIsLiteral", R"({"StringEquals":{"aws:RequestTag/env":"pr*"}})", K("aws:RequestTag/env", "prod"), false},
        ConditionCase{"StringEqualsStarMatchesStar", R"({"StringEquals":{"aws:RequestTag/env":"pr*"}})", K("aws:RequestTag/env", "pr*"), true},
        ConditionCase{"StringNotEqualsOtherValue", R"({"StringNotEquals":{"aws:RequestTag/env":"prod"}})", K("aws:RequestTag/env", "dev"), true},
        ConditionCase{"StringNotEqualsSameValue", R"({"StringNotEquals":{"aws:RequestTag/env":"prod"}})", K("aws:RequestTag/env", "prod"), false},
        ConditionCase{"StringNotEqualsValuesAreNored", R"({"StringNotEquals":{"aws:RequestTag/env":["dev","prod"]}})", K("aws:RequestTag/env", "dev"), false},
        ConditionCase{"StringNotEqualsMissingKeyIsTrue", R"({"StringNotEquals":{"aws:RequestTag/env":"prod"}})", {}, true},
        ConditionCase{"StringEqualsIgnoreCase", R"({"StringEqualsIgnoreCase":{"aws:RequestTag/env":"PROD"}})", K("aws:RequestTag/env", "pRod"), true},
        ConditionCase{"StringEqualsIgnoreCaseMismatch", R"({"StringEqualsIgnoreCase":{"aws:RequestTag/env":"PROD"}})", K("aws:RequestTag/env", "prods"), false},
        ConditionCase{"StringNotEqualsIgnoreCase", R"({"StringNotEqualsIgnoreCase":{"aws:RequestTag/env":"prod"}})", K("aws:RequestTag/env", "PROD"), false},
        ConditionCase{"StringNotEqualsIgnoreCaseOther", R"({"StringNotEqualsIgnoreCase":{"aws:RequestTag/env":"prod"}})", K("aws:RequestTag/env", "DEV"), true},
        ConditionCase{"StringLikeStar", R"({"StringLike":{"ecs:task-definition":"*:task-definition/web:*"}})", K("ecs:task-definition", kTaskDef), true},
        ConditionCase{"StringLikeQuestion", R"({"StringLike":{"aws:RequestTag/env":"d?v"}})", K("aws:RequestTag/env", "dev"), true},
        ConditionCase{"StringLikeIsCaseSensitive", R"({"StringLike":{"aws:RequestTag/env":"D*"}})", K("aws:RequestTag/env", "dev"), false},
        ConditionCase{"StringNotLike", R"({"StringNotLike":{"aws:RequestTag/env":"prod*"}})", K("aws:RequestTag/env", "dev"), true},
        ConditionCase{"StringNotLikeMatching", R"({"StringNotLike":{"aws:RequestTag/env":"prod*"}})", K("aws:RequestTag/env", "prod-eu"), false},
        ConditionCase{"StringNotLikeMissingKeyIsTrue", R"({"StringNotLike":{"aws:RequestTag/env":"prod*"}})", {}, true},
        ConditionCase{"KeyNamesAreCaseInsensitive", R"({"StringEquals":{"AWS:REQUESTTAG/ENV":"prod"}})", K("aws:requesttag/Env", "prod"), true},
        // Numeric operators.
        ConditionCase{"NumericEquals", R"({"NumericEquals":{"ecs:count":"10"}})", K("ecs:count", "10.0"), true},
        ConditionCase{"NumericEqualsJsonNumber", R"({"NumericEquals":{"ecs:count":10}})", K("ecs:count", "10"), true},
        ConditionCase{"NumericNotEquals", R"({"NumericNotEquals":{"ecs:count":"10"}})", K("ecs:count", "11"), true},
        ConditionCase{"NumericNotEqualsSame", R"({"NumericNotEquals":{"ecs:count":"10"}})", K("ecs:count", "10"), false},
        ConditionCase{"NumericLessThan", R"({"NumericLessThan":{"ecs:count":"10"}})", K("ecs:count", "9"), true},
        ConditionCase{"NumericLessThanEqualIsFalse", R"({"NumericLessThan":{"ecs:count":"10"}})", K("ecs:count", "10"), false},
        ConditionCase{"NumericLessThanEquals", R"({"NumericLessThanEquals":{"ecs:count":"10"}})", K("ecs:count", "10"), true},
        ConditionCase{"NumericGreaterThan", R"({"NumericGreaterThan":{"ecs:count":"10"}})", K("ecs:count", "10.5"), true},
        ConditionCase{"NumericGreaterThanEquals", R"({"NumericGreaterThanEquals":{"ecs:count":"10"}})", K("ecs:count", "9"), false},
        ConditionCase{"NumericNotANumber", R"({"NumericLessThan":{"ecs:count":"10"}})", K("ecs:count", "ten"), false},
        // Date operators: ISO 8601 and epoch seconds, any offset.
        ConditionCase{"DateLessThan", R"({"DateLessThan":{"aws:CurrentTime":"2027-01-01T00:00:00Z"}})", K("aws:CurrentTime", "2026-12-01T12:00:00Z"), true},
        ConditionCase{"DateLessThanAfter", R"({"DateLessThan":{"aws:CurrentTime":"2026-01-01T00:00:00Z"}})", K("aws:CurrentTime", "2026-12-01T12:00:00Z"), false},
        ConditionCase{"DateGreaterThanEpoch", R"({"DateGreaterThan":{"aws:CurrentTime":"1764590000"}})", K("aws:CurrentTime", "2026-12-01T12:00:00Z"), true},
        ConditionCase{"DateEqualsAcrossOffsets", R"({"DateEquals":{"aws:CurrentTime":"2026-12-01T14:00:00+02:00"}})", K("aws:CurrentTime", "2026-12-01T12:00:00Z"), true},
        ConditionCase{"DateNotEquals", R"({"DateNotEquals":{"aws:CurrentTime":"2026-12-01T12:00:00Z"}})", K("aws:CurrentTime", "2026-12-01T12:00:01Z"), true},
        ConditionCase{"DateLessThanEquals", R"({"DateLessThanEquals":{"aws:CurrentTime":"2026-12-01T12:00:00Z"}})", K("aws:CurrentTime", "2026-12-01T12:00:00Z"), true},
        ConditionCase{"DateGreaterThanEquals", R"({"DateGreaterThanEquals":{"aws:CurrentTime":"2026-12-02"}})", K("aws:CurrentTime", "2026-12-01T12:00:00Z"), false},
        // Bool and Binary.
        ConditionCase{"BoolTrue", R"({"Bool":{"aws:SecureTransport":"true"}})", K("aws:SecureTransport", "true"), true},
        ConditionCase{"BoolJsonBoolean", R"({"Bool":{"aws:SecureTransport":true}})", K("aws:SecureTransport", "TRUE"), true},
        ConditionCase{"BoolFalseMismatch", R"({"Bool":{"aws:SecureTransport":"true"}})", K("aws:SecureTransport", "false"), false},
        ConditionCase{"BoolMissingKey", R"({"Bool":{"aws:SecureTransport":"false"}})", {}, false},
        ConditionCase{"BinaryEquals", R"({"BinaryEquals":{"ecs:blob":"QmluYXJ5"}})", K("ecs:blob", "QmluYXJ5"), true},
        ConditionCase{"BinaryEqualsMismatch", R"({"BinaryEquals":{"ecs:blob":"QmluYXJ5"}})", K("ecs:blob", "QmluYXJ6"), false},
        // IP addresses.
        ConditionCase{"IpAddressInCidr", R"({"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}})", K("aws:SourceIp", "10.1.2.3"), true},
        ConditionCase{"IpAddressOutside", R"({"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}})", K("aws:SourceIp", "192.168.1.1"), false},
        ConditionCase{"IpAddressList", R"({"IpAddress":{"aws:SourceIp":["10.0.0.0/8","192.168.0.0/16"]}})", K("aws:SourceIp", "192.168.1.1"), true},
        ConditionCase{"IpAddressV6", R"({"IpAddress":{"aws:SourceIp":"2001:db8::/32"}})", K("aws:SourceIp", "2001:db8::1"), true},
        ConditionCase{"IpAddressV4CidrV6Ip", R"({"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}})", K("aws:SourceIp", "2001:db8::1"), false},
        ConditionCase{"IpAddressBareAddress", R"({"IpAddress":{"aws:SourceIp":"203.0.113.5"}})", K("aws:SourceIp", "203.0.113.5"), true},
        ConditionCase{"NotIpAddress", R"({"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}})", K("aws:SourceIp", "192.168.1.1"), true},
        ConditionCase{"NotIpAddressInside", R"({"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}})", K("aws:SourceIp", "10.0.0.1"), false},
        // ARN operators: each of the six parts separately.
        ConditionCase{"ArnEqualsExact", R"({"ArnEquals":{"ecs:cluster":"arn:aws:ecs:us-east-1:123456789012:cluster/default"}})", K("ecs:cluster", kCluster), true},
        ConditionCase{"ArnEqualsWildcard", R"({"ArnEquals":{"ecs:cluster":"arn:aws:ecs:*:123456789012:cluster/*"}})", K("ecs:cluster", kCluster), true},
        ConditionCase{"ArnLikeOtherAccount", R"({"ArnLike":{"ecs:cluster":"arn:aws:ecs:*:123456789012:cluster/*"}})", K("ecs:cluster", "arn:aws:ecs:us-east-1:999999999999:cluster/default"), false},
        ConditionCase{"ArnLikeSegmentsDoNotBleed", R"({"ArnLike":{"ecs:cluster":"arn:aws:ecs:*:*:cluster/x"}})", K("ecs:cluster", "arn:aws:ecs:us-east-1:123:456:cluster/x"), false},
        ConditionCase{"ArnLikeNotAnArn", R"({"ArnLike":{"ecs:cluster":"arn:aws:ecs:*:*:cluster/*"}})", K("ecs:cluster", "default"), false},
        ConditionCase{"ArnNotEquals", R"({"ArnNotEquals":{"ecs:cluster":"arn:aws:ecs:us-east-1:123456789012:cluster/prod"}})", K("ecs:cluster", kCluster), true},
        ConditionCase{"ArnNotLikeMatching", R"({"ArnNotLike":{"ecs:cluster":"arn:aws:ecs:*:*:cluster/def*"}})", K("ecs:cluster", kCluster), false},
        ConditionCase{"ArnLikeMissingKey", R"({"ArnLike":{"ecs:cluster":"*"}})", {}, false},
        // Null.
        ConditionCase{"NullTrueAbsent", R"({"Null":{"aws:RequestTag/env":"true"}})", {}, true},
        ConditionCase{"NullTruePresent", R"({"Null":{"aws:RequestTag/env":"true"}})", K("aws:RequestTag/env", "x"), false},
        ConditionCase{"NullFalsePresent", R"({"Null":{"aws:RequestTag/env":"false"}})", K("aws:RequestTag/env", "x"), true},
        ConditionCase{"NullFalseAbsent", R"({"Null":{"aws:RequestTag/env":false}})", {}, false},
        ConditionCase{"NullEmptyListIsAbsent", R"({"Null":{"aws:TagKeys":"true"}})", Multi("aws:TagKeys", {}), true},
        // ...IfExists.
        ConditionCase{"IfExistsAbsent", R"({"StringEqualsIfExists":{"aws:RequestTag/env":"prod"}})", {}, true},
        ConditionCase{"IfExistsPresentMismatch", R"({"StringEqualsIfExists":{"aws:RequestTag/env":"prod"}})", K("aws:RequestTag/env", "dev"), false},
        ConditionCase{"IfExistsPresentMatch", R"({"StringEqualsIfExists":{"aws:RequestTag/env":"prod"}})", K("aws:RequestTag/env", "prod"), true},
        ConditionCase{"ArnLikeIfExistsAbsent", R"({"ArnLikeIfExists":{"ecs:cluster":"arn:aws:ecs:*:*:cluster/prod"}})", {}, true},
        ConditionCase{"NumericIfExistsPresent", R"({"NumericLessThanIfExists":{"ecs:count":"3"}})", K("ecs:count", "5"), false},
        ConditionCase{"BoolIfExistsAbsent", R"({"BoolIfExists":{"aws:MultiFactorAuthPresent":"true"}})", {}, true},
        // Set qualifiers on a multivalued key.
        ConditionCase{"ForAllValuesSubset", R"({"ForAllValues:StringEquals":{"aws:TagKeys":["team","env"]}})", Multi("aws:TagKeys", {"team"}), true},
        ConditionCase{"ForAllValuesExtraKey", R"({"ForAllValues:StringEquals":{"aws:TagKeys":["team","env"]}})", Multi("aws:TagKeys", {"team", "owner"}), false},
        ConditionCase{"ForAllValuesAbsentIsTrue", R"({"ForAllValues:StringEquals":{"aws:TagKeys":["team"]}})", {}, true},
        ConditionCase{"ForAllValuesEmptyIsTrue", R"({"ForAllValues:StringEquals":{"aws:TagKeys":["team"]}})", Multi("aws:TagKeys", {}), true},
        ConditionCase{"ForAllValuesStringLike", R"({"ForAllValues:StringLike":{"aws:TagKeys":["team*"]}})", Multi("aws:TagKeys", {"team", "team-x"}), true},
        ConditionCase{"ForAllValuesStringNotEquals", R"({"ForAllValues:StringNotEquals":{"aws:TagKeys":["secret"]}})", Multi("aws:TagKeys", {"team", "secret"}), false},
        ConditionCase{"ForAllValuesStringNotEqualsNone", R"({"ForAllValues:StringNotEquals":{"aws:TagKeys":["secret"]}})", Multi("aws:TagKeys", {"team", "env"}), true},
        ConditionCase{"ForAnyValueOne", R"({"ForAnyValue:StringEquals":{"aws:TagKeys":["team"]}})", Multi("aws:TagKeys", {"env", "team"}), true},
        ConditionCase{"ForAnyValueNone", R"({"ForAnyValue:StringEquals":{"aws:TagKeys":["team"]}})", Multi("aws:TagKeys", {"env"}), false},
        ConditionCase{"ForAnyValueAbsentIsFalse", R"({"ForAnyValue:StringEquals":{"aws:TagKeys":["team"]}})", {}, false},
        ConditionCase{"ForAnyValueStringNotEquals", R"({"ForAnyValue:StringNotEquals":{"aws:TagKeys":["team"]}})", Multi("aws:TagKeys", {"team", "env"}), true},
        ConditionCase{"ForAnyValueStringNotEqualsOnlyListed", R"({"ForAnyValue:StringNotEquals":{"aws:TagKeys":["team"]}})", Multi("aws:TagKeys", {"team"}), false},
        ConditionCase{"ForAnyValueIfExistsAbsent", R"({"ForAnyValue:StringEqualsIfExists":{"aws:TagKeys":["team"]}})", {}, true},
        // AND across operators and keys.
        ConditionCase{"AndAcrossOperatorsBoth", R"({"StringEquals":{"aws:RequestTag/env":"prod"},"Bool":{"aws:SecureTransport":"true"}})",
                      Keys{{"aws:RequestTag/env", {"prod"}}, {"aws:SecureTransport", {"true"}}}, true},
        ConditionCase{"AndAcrossOperatorsOne", R"({"StringEquals":{"aws:RequestTag/env":"prod"},"Bool":{"aws:SecureTransport":"true"}})",
                      Keys{{"aws:RequestTag/env", {"prod"}}, {"aws:SecureTransport", {"false"}}}, false},
        ConditionCase{"AndAcrossKeys", R"({"StringEquals":{"aws:RequestTag/env":"prod","aws:RequestTag/team":"a"}})",
                      Keys{{"aws:RequestTag/env", {"prod"}}, {"aws:RequestTag/team", {"b"}}}, false},
        // Policy variables in condition values.
        ConditionCase{"VariablePrincipalTag", R"({"StringEquals":{"aws:ResourceTag/team":"${aws:PrincipalTag/team}"}})",
                      Keys{{"aws:ResourceTag/team", {"blue"}}, {"aws:PrincipalTag/team", {"blue"}}}, true},
        ConditionCase{"VariablePrincipalTagOther", R"({"StringEquals":{"aws:ResourceTag/team":"${aws:PrincipalTag/team}"}})",
                      Keys{{"aws:ResourceTag/team", {"red"}}, {"aws:PrincipalTag/team", {"blue"}}}, false},
        ConditionCase{"VariableUnresolvableNeverMatches", R"({"StringEquals":{"aws:ResourceTag/team":"${aws:PrincipalTag/team}"}})",
                      K("aws:ResourceTag/team", ""), false},
        ConditionCase{"VariableDefault", R"({"StringEquals":{"aws:ResourceTag/team":"${aws:PrincipalTag/team, 'none'}"}})",
                      K("aws:ResourceTag/team", "none"), true},
        ConditionCase{"VariableUsername", R"({"StringLike":{"ecs:task-definition":"*/${aws:username}-*"}})",
                      K("ecs:task-definition", "arn:aws:ecs:us-east-1:123456789012:task-definition/alice-web:1"), true},
        ConditionCase{"VariableStarIsLiteral", R"({"StringLike":{"aws:RequestTag/env":"a${*}b"}})", K("aws:RequestTag/env", "axb"), false},
        ConditionCase{"VariableStarMatchesStar", R"({"StringLike":{"aws:RequestTag/env":"a${*}b${?}${$}"}})", K("aws:RequestTag/env", "a*b?$"), true},
        ConditionCase{"VariableValueIsNotAWildcard", R"({"StringLike":{"aws:RequestTag/env":"${aws:PrincipalTag/team}"}})",
                      Keys{{"aws:RequestTag/env", {"blue"}}, {"aws:PrincipalTag/team", {"b*"}}}, false},
        ConditionCase{"VariableAnyContextKey", R"({"IpAddress":{"aws:SourceIp":"10.0.0.0/8"},"StringEquals":{"ecs:cluster":"${aws:PrincipalTag/cluster}"}})",
                      Keys{{"aws:SourceIp", {"10.0.0.1"}}, {"ecs:cluster", {"c1"}}, {"aws:PrincipalTag/cluster", {"c1"}}}, true},
        ConditionCase{"VariablePrincipalAccountInArn", R"({"ArnLike":{"ecs:cluster":"arn:aws:ecs:*:${aws:PrincipalAccount}:cluster/*"}})",
                      K("ecs:cluster", kCluster), true},
        ConditionCase{"PrincipalKeysArePopulated", R"({"StringEquals":{"aws:PrincipalArn":"arn:aws:iam::123456789012:user/alice","aws:PrincipalType":"User","aws:userid":"AIDAALICE"}})",
                      {}, true},
        ConditionCase{"RoleSessionPrincipalArnIsTheRole", R"({"ArnEquals":{"aws:PrincipalArn":"arn:aws:iam::123456789012:role/app"}})",
                      {}, true, Principal::AssumedRole(kAccount, "app", "s1", "AROAAPP")}),
    [](const ::testing::TestParamInfo<ConditionCase>& i) { return i.param.name; });

// ---------------------------------------------------------------------------------------------
// Action and Resource matching.

struct MatchCase {
  std::string name;
  std::string statement_tail;  // "Action":...,"Resource":...
  std::string action;
  std::string resource;
  bool allowed;
};

void PrintTo(const MatchCase& c, std::ostream* os) { *os << c.name; }

class MatchTest : public ::testing::TestWithParam<MatchCase> {};

TEST_P(MatchTest, Decides) {
  const MatchCase& c = GetParam();
  const std::string policy = R"({"Version":"2012-10-17","Statement":{"Effect":"Allow",)" + c.statement_tail + "}}";
  EXPECT_EQ(Decide(Ctx(c.action, c.resource), {policy}), c.allowed ? Decision::kAllow : Decision::kImplicitDeny)
      << c.statement_tail;
  // A context keeping only the read keys (variables in the resource included) decides alike.
  PolicySet set;
  set.identity.push_back({"p", Parse(policy)});
  const std::vector<std::string> kept = ReadKeys(set);
  EXPECT_EQ(Evaluate(RequestContext(Alice(), c.action, c.resource, &kept), set).decision,
            c.allowed ? Decision::kAllow : Decision::kImplicitDeny)
      << "pruned: " << c.statement_tail;
}

INSTANTIATE_TEST_SUITE_P(
    Evaluator, MatchTest,
    ::testing::Values(
        MatchCase{"ActionExact", R"("Action":"ecs:RunTask","Resource":"*")", "ecs:RunTask", kTaskDef, true},
        MatchCase{"ActionIsCaseInsensitive", R"("Action":"ECS:runtask","Resource":"*")", "ecs:RunTask", kTaskDef, true},
        MatchCase{"RequestActionIsCaseInsensitive", R"("Action":"ecs:RunTask","Resource":"*")", "ECS:RUNTASK", kTaskDef, true},
        MatchCase{"ActionStar", R"("Action":"ecs:Describe*","Resource":"*")", "ecs:DescribeTaskDefinition", kTaskDef, true},
        // The literal prefix is compared 8 bytes at once, then the rest: differences in the
        // first 8 bytes, at the 8th, right after, and far beyond; and prefixes shorter than 8.
        MatchCase{"ActionPrefixDiffersInFirstWord", R"("Action":"ecs:Update*","Resource":"*")", "ecs:DescribeServices", kTaskDef, false},
        MatchCase{"ActionPrefixDiffersAtEighthByte", R"("Action":"ecs:RunX*","Resource":"*")", "ecs:RunTask", kTaskDef, false},
        MatchCase{"ActionPrefixDiffersAfterFirstWord", R"("Action":"ecs:RunTasx*","Resource":"*")", "ecs:RunTask", kTaskDef, false},
        MatchCase{"ActionPrefixLongerThanWordMatches", R"("Action":"ecs:RunTa*","Resource":"*")", "ECS:RUNTASK", kTaskDef, true},
        MatchCase{"ActionShortPrefixMatches", R"("Action":"ec?:RunTask","Resource":"*")", "Ecs:RunTask", kTaskDef, true},
        MatchCase{"ActionShortPrefixDiffers", R"("Action":"ecx:*","Resource":"*")", "ecs:RunTask", kTaskDef, false},
        MatchCase{"ActionQuestion", R"("Action":"ecs:Run?ask","Resource":"*")", "ecs:RunTask", kTaskDef, true},
        MatchCase{"ActionOtherService", R"("Action":"ec2:*","Resource":"*")", "ecs:RunTask", kTaskDef, false},
        MatchCase{"ActionAll", R"("Action":"*","Resource":"*")", "iam:PassRole", kTaskDef, true},
        MatchCase{"ActionList", R"("Action":["ecs:StopTask","ecs:RunTask"],"Resource":"*")", "ecs:RunTask", kTaskDef, true},
        MatchCase{"NotActionExcluded", R"("NotAction":"iam:*","Resource":"*")", "iam:PassRole", kTaskDef, false},
        MatchCase{"NotActionOther", R"("NotAction":"iam:*","Resource":"*")", "ecs:RunTask", kTaskDef, true},
        MatchCase{"ResourceExact", R"("Action":"ecs:RunTask","Resource":"arn:aws:ecs:us-east-1:123456789012:task-definition/web:3")", "ecs:RunTask", kTaskDef, true},
        MatchCase{"ResourceRevisionWildcard", R"("Action":"ecs:RunTask","Resource":"arn:aws:ecs:*:123456789012:task-definition/web:*")", "ecs:RunTask", kTaskDef, true},
        // The bare-family RunTask gotcha: AWS authorizes a bare-family RunTask against
        // task-definition/web, which "web:*" does not match.
        MatchCase{"BareFamilyNotMatchedByRevisionWildcard", R"("Action":"ecs:RunTask","Resource":"arn:aws:ecs:*:123456789012:task-definition/web:*")", "ecs:RunTask", kBareFamily, false},
        MatchCase{"BareFamilyMatchedByFamilyStar", R"("Action":"ecs:RunTask","Resource":"arn:aws:ecs:*:123456789012:task-definition/web*")", "ecs:RunTask", kBareFamily, true},
        MatchCase{"ResourceStarSpansColonsAndSlashes", R"("Action":"ecs:RunTask","Resource":"arn:aws:ecs:us-east-1:123456789012:*")", "ecs:RunTask", kTaskDef, true},
        MatchCase{"ResourceOtherAccount", R"("Action":"ecs:RunTask","Resource":"arn:aws:ecs:*:999999999999:*")", "ecs:RunTask", kTaskDef, false},
        MatchCase{"ResourceIsCaseSensitive", R"("Action":"iam:GetUser","Resource":"arn:aws:iam::123456789012:user/Bob")", "iam:GetUser", "arn:aws:iam::123456789012:user/bob", false},
        MatchCase{"ResourcePatternDoesNotMatchStarRequest", R"("Action":"ecs:ListClusters","Resource":"arn:aws:ecs:*:*:cluster/*")", "ecs:ListClusters", "*", false},
        MatchCase{"ResourceStarMatchesStarRequest", R"("Action":"ecs:ListClusters","Resource":"*")", "ecs:ListClusters", "*", true},
        MatchCase{"NotResourceExcluded", R"("Action":"ecs:*","NotResource":"arn:aws:ecs:*:*:task-definition/web:*")", "ecs:RunTask", kTaskDef, false},
        MatchCase{"NotResourceOther", R"("Action":"ecs:*","NotResource":"arn:aws:ecs:*:*:task-definition/api:*")", "ecs:RunTask", kTaskDef, true},
        MatchCase{"ResourceVariableUsername", R"("Action":"iam:*AccessKey*","Resource":"arn:aws:iam::*:user/${aws:username}")", "iam:CreateAccessKey", "arn:aws:iam::123456789012:user/alice", true},
        MatchCase{"ResourceVariableOtherUser", R"("Action":"iam:*AccessKey*","Resource":"arn:aws:iam::*:user/${aws:username}")", "iam:CreateAccessKey", "arn:aws:iam::123456789012:user/bob", false},
        MatchCase{"ResourceVariableAccountAndUserid", R"("Action":"s3:GetObject","Resource":"arn:aws:s3:::b/${aws:PrincipalAccount}/${aws:userid}/*")", "s3:GetObject", "arn:aws:s3:::b/123456789012/AIDAALICE/x", true}),
    [](const ::testing::TestParamInfo<MatchCase>& i) { return i.param.name; });

TEST(EvaluatorTest, VariablesAreLiteralUnderVersion2008) {
  const std::string policy = R"({"Version":"2008-10-17","Statement":{"Effect":"Allow","Action":"iam:GetUser",)"
                             R"("Resource":"arn:aws:iam::*:user/${aws:username}"}})";
  EXPECT_EQ(Decide(Ctx("iam:GetUser", "arn:aws:iam::123456789012:user/alice"), {policy}), Decision::kImplicitDeny);
  EXPECT_EQ(Decide(Ctx("iam:GetUser", "arn:aws:iam::123456789012:user/${aws:username}"), {policy}), Decision::kAllow);
}

TEST(EvaluatorTest, UnresolvableVariableMakesResourceNotMatch) {
  // A role session has no aws:username: the element does not match, unless a default is given.
  const Principal session = Principal::AssumedRole(kAccount, "app", "s1", "AROAAPP");
  const std::string plain = R"({"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"s3:GetObject",)"
                            R"("Resource":"arn:aws:s3:::b/${aws:username}/*"}})";
  const std::string with_default = R"({"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"s3:GetObject",)"
                                   R"("Resource":"arn:aws:s3:::b/${aws:username, 'shared'}/*"}})";
  EXPECT_EQ(Decide(Ctx("s3:GetObject", "arn:aws:s3:::b/shared/x", session), {plain}), Decision::kImplicitDeny);
  EXPECT_EQ(Decide(Ctx("s3:GetObject", "arn:aws:s3:::b/shared/x", session), {with_default}), Decision::kAllow);
  EXPECT_EQ(Decide(Ctx("s3:GetObject", "arn:aws:s3:::b/alice/x"), {with_default}), Decision::kAllow);
}

// ---------------------------------------------------------------------------------------------
// Layers: explicit deny, identity, permissions boundary, session policies, resource policies.

const std::string kAllowRunTask =
    R"({"Version":"2012-10-17","Statement":{"Sid":"Run","Effect":"Allow","Action":"ecs:RunTask","Resource":"*"}})";
const std::string kAllowEcs = R"({"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"ecs:*","Resource":"*"}})";
const std::string kAllowDescribe =
    R"({"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"ecs:Describe*","Resource":"*"}})";
const std::string kDenyRunTask = R"({"Version":"2012-10-17","Statement":{"Effect":"Deny","Action":"ecs:RunTask","Resource":"*"}})";

TEST(EvaluatorTest, NoPoliciesIsImplicitDeny) {
  EvaluationResult r = Evaluate(Ctx(), PolicySet{});
  EXPECT_EQ(r.decision, Decision::kImplicitDeny);
  EXPECT_EQ(r.decided_by, PolicyType::kIdentity);
  EXPECT_TRUE(r.matched.empty());
  EXPECT_FALSE(r.allowed_by_boundary.has_value());
}

TEST(EvaluatorTest, ExplicitDenyBeatsAllowInSamePolicy) {
  const std::string both = R"({"Version":"2012-10-17","Statement":[
      {"Effect":"Allow","Action":"ecs:*","Resource":"*"},
      {"Sid":"NoRun","Effect":"Deny","Action":"ecs:RunTask","Resource":"*"}]})";
  PolicySet set;
  set.identity.push_back({"both", Parse(both)});
  EvaluationResult r = Evaluate(Ctx(), set);
  EXPECT_EQ(r.decision, Decision::kExplicitDeny);
  EXPECT_EQ(r.decided_by, PolicyType::kIdentity);
  ASSERT_EQ(r.matched.size(), 1u);
  EXPECT_EQ(r.matched[0].statement_index, 1u);
  EXPECT_EQ(set.identity[0].policy.sid(r.matched[0].statement_index), "NoRun");
}

TEST(EvaluatorTest, ExplicitDenyInAnotherPolicyWins) {
  EXPECT_EQ(Decide(Ctx(), {kAllowEcs, kDenyRunTask}), Decision::kExplicitDeny);
  EXPECT_EQ(Decide(Ctx(), {kDenyRunTask, kAllowEcs}), Decision::kExplicitDeny);
  EXPECT_EQ(Decide(Ctx("ecs:StopTask"), {kDenyRunTask, kAllowEcs}), Decision::kAllow);
}

TEST(EvaluatorTest, DenyWithFailingConditionDoesNotApply) {
  const std::string deny = R"({"Version":"2012-10-17","Statement":{"Effect":"Deny","Action":"*","Resource":"*",
      "Condition":{"Bool":{"aws:SecureTransport":"false"}}}})";
  RequestContext ctx = Ctx();
  ctx.Set("aws:SecureTransport", "true");
  EXPECT_EQ(Decide(ctx, {kAllowEcs, deny}), Decision::kAllow);
  ctx.Set("aws:SecureTransport", "false");
  EXPECT_EQ(Decide(ctx, {kAllowEcs, deny}), Decision::kExplicitDeny);
}

TEST(EvaluatorTest, AllowListsTheMatchedStatements) {
  PolicySet set;
  set.identity.push_back({"describe", Parse(kAllowDescribe)});
  set.identity.push_back({"run", Parse(kAllowRunTask)});
  set.identity.push_back({"ecs", Parse(kAllowEcs)});
  EvaluationResult r = Evaluate(Ctx(), set);
  EXPECT_EQ(r.decision, Decision::kAllow);
  EXPECT_EQ(r.decided_by, PolicyType::kIdentity);
  ASSERT_EQ(r.matched.size(), 2u);
  EXPECT_EQ(r.matched[0].policy_index, 1u);
  EXPECT_EQ(r.matched[1].policy_index, 2u);
}

TEST(EvaluatorTest, PermissionsBoundaryGates) {
  PolicySet set;
  set.identity.push_back({"ecs", Parse(kAllowEcs)});
  set.boundary = NamedPolicy{"boundary", Parse(kAllowDescribe)};
  // Identity allows RunTask, the boundary does not: implicit deny by the boundary.
  EvaluationResult r = Evaluate(Ctx(), set);
  EXPECT_EQ(r.decision, Decision::kImplicitDeny);
  EXPECT_EQ(r.decided_by, PolicyType::kPermissionsBoundary);
  // Both allow DescribeTaskDefinition.
  EXPECT_EQ(Evaluate(Ctx("ecs:DescribeTaskDefinition"), set).decision, Decision::kAllow);
  // A boundary grants nothing by itself.
  PolicySet only_boundary;
  only_boundary.boundary = NamedPolicy{"boundary", Parse(kAllowEcs)};
  r = Evaluate(Ctx(), only_boundary);
  EXPECT_EQ(r.decision, Decision::kImplicitDeny);
  EXPECT_EQ(r.decided_by, PolicyType::kIdentity);
  EXPECT_EQ(Evaluate(Ctx(), set).allowed_by_boundary, std::optional<bool>(false));
  EXPECT_EQ(Evaluate(Ctx("ecs:DescribeTaskDefinition"), set).allowed_by_boundary, std::optional<bool>(true));
  // A Deny in the boundary is an explicit deny named after the boundary.
  set.boundary = NamedPolicy{"boundary", Parse(kDenyRunTask)};
  r = Evaluate(Ctx(), set);
  EXPECT_EQ(r.allowed_by_boundary, std::optional<bool>(false));
  EXPECT_EQ(r.decision, Decision::kExplicitDeny);
  EXPECT_EQ(r.decided_by, PolicyType::kPermissionsBoundary);
  ASSERT_EQ(r.matched.size(), 1u);
  EXPECT_EQ(r.matched[0].type, PolicyType::kPermissionsBoundary);
}

TEST(EvaluatorTest, SessionPolicyGates) {
  const Principal session = Principal::AssumedRole(kAccount, "app", "s1", "AROAAPP");
  PolicySet set;
  set.identity.push_back({"ecs", Parse(kAllowEcs)});
  set.session.push_back({"session", Parse(kAllowDescribe)});
  EvaluationResult r = Evaluate(Ctx("ecs:RunTask", kTaskDef, session), set);
  EXPECT_EQ(r.decision, Decision::kImplicitDeny);
  EXPECT_EQ(r.decided_by, PolicyType::kSession);
  EXPECT_EQ(Evaluate(Ctx("ecs:DescribeTasks", "*", session), set).decision, Decision::kAllow);
  // Several session policies: any one of them allowing is enough.
  set.session.push_back({"session2", Parse(kAllowRunTask)});
  EXPECT_EQ(Evaluate(Ctx("ecs:RunTask", kTaskDef, session), set).decision, Decision::kAllow);
  // A session policy grants nothing by itself.
  PolicySet only_session;
  only_session.session.push_back({"session", Parse(kAllowEcs)});
  r = Evaluate(Ctx("ecs:RunTask", kTaskDef, session), only_session);
  EXPECT_EQ(r.decision, Decision::kImplicitDeny);
  EXPECT_EQ(r.decided_by, PolicyType::kIdentity);
  // Deny in a session policy.
  set.session = {{"deny", Parse(kDenyRunTask)}};
  r = Evaluate(Ctx("ecs:RunTask", kTaskDef, session), set);
  EXPECT_EQ(r.decision, Decision::kExplicitDeny);
  EXPECT_EQ(r.decided_by, PolicyType::kSession);
}

std::string SecretPolicy(const std::string& principal) {
  return R"({"Version":"2012-10-17","Statement":{"Effect":"Allow","Principal":)" + principal +
         R"(,"Action":"secretsmanager:GetSecretValue","Resource":"*"}})";
}

TEST(EvaluatorTest, SameAccountResourcePolicy) {
  const std::string secret = "arn:aws:secretsmanager:us-east-1:123456789012:secret:db-AbCdEf";
  const Principal session = Principal::AssumedRole(kAccount, "app", "s1", "AROAAPP");
  auto eval = [&](const std::string& principal, const Principal& who, bool with_boundary) {
    PolicySet set;
    set.resource = NamedPolicy{"secret", Parse(SecretPolicy(principal), DocumentKind::kResource)};
    if (with_boundary) set.boundary = NamedPolicy{"boundary", Parse(kAllowDescribe)};
    return Evaluate(Ctx("secretsmanager:GetSecretValue", secret, who), set);
  };
  // Naming the user grants without any identity policy, and the boundary does not limit it.
  EXPECT_EQ(eval(R"({"AWS":"arn:aws:iam::123456789012:user/alice"})", Alice(), false).decision, Decision::kAllow);
  EvaluationResult r = eval(R"({"AWS":"arn:aws:iam::123456789012:user/alice"})", Alice(), true);
  EXPECT_EQ(r.decision, Decision::kAllow);
  EXPECT_EQ(r.decided_by, PolicyType::kResource);
  // Naming the role grants to its sessions, but the boundary still gates.
  EXPECT_EQ(eval(R"({"AWS":"arn:aws:iam::123456789012:role/app"})", session, false).decision, Decision::kAllow);
  r = eval(R"({"AWS":"arn:aws:iam::123456789012:role/app"})", session, true);
  EXPECT_EQ(r.decision, Decision::kImplicitDeny);
  EXPECT_EQ(r.decided_by, PolicyType::kPermissionsBoundary);
  // Naming only the account delegates to identity policies: no grant alone.
  r = eval(R"({"AWS":"123456789012"})", Alice(), false);
  EXPECT_EQ(r.decision, Decision::kImplicitDeny);
  EXPECT_EQ(r.decided_by, PolicyType::kIdentity);
  // Another user is not named.
  EXPECT_EQ(eval(R"({"AWS":"arn:aws:iam::123456789012:user/bob"})", Alice(), false).decision, Decision::kImplicitDeny);
}

TEST(EvaluatorTest, CrossAccountNeedsBothSides) {
  const std::string secret = "arn:aws:secretsmanager:us-east-1:999999999999:secret:db-AbCdEf";
  const std::string identity = R"({"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"secretsmanager:*","Resource":"*"}})";
  PolicySet set;
  set.resource_account = AccountId("999999999999");
  set.resource = NamedPolicy{"secret", Parse(SecretPolicy(R"({"AWS":"123456789012"})"), DocumentKind::kResource)};
  EvaluationResult r = Evaluate(Ctx("secretsmanager:GetSecretValue", secret), set);
  EXPECT_EQ(r.decision, Decision::kImplicitDeny);
  EXPECT_EQ(r.decided_by, PolicyType::kIdentity);
  set.identity.push_back({"id", Parse(identity)});
  EXPECT_EQ(Evaluate(Ctx("secretsmanager:GetSecretValue", secret), set).decision, Decision::kAllow);
  set.resource = NamedPolicy{"secret", Parse(SecretPolicy(R"({"AWS":"111111111111"})"), DocumentKind::kResource)};
  r = Evaluate(Ctx("secretsmanager:GetSecretValue", secret), set);
  EXPECT_EQ(r.decision, Decision::kImplicitDeny);
  EXPECT_EQ(r.decided_by, PolicyType::kResource);
}

TEST(EvaluatorTest, ResourcePolicyDenyIsExplicit) {
  const std::string deny = R"({"Version":"2012-10-17","Statement":{"Effect":"Deny","Principal":"*",
      "Action":"secretsmanager:*","Resource":"*"}})";
  PolicySet set;
  set.identity.push_back({"id", Parse(kAllowEcs)});
  set.resource = NamedPolicy{"secret", Parse(deny, DocumentKind::kResource)};
  EvaluationResult r = Evaluate(Ctx("secretsmanager:GetSecretValue", "arn:aws:secretsmanager:us-east-1:123456789012:secret:x"), set);
  EXPECT_EQ(r.decision, Decision::kExplicitDeny);
  EXPECT_EQ(r.decided_by, PolicyType::kResource);
}

TEST(EvaluatorTest, PassRoleWithPassedToServiceCondition) {
  // The policy ADR-0005's controller holds: PassRole only to ECS tasks.
  const std::string pass = R"({"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"iam:PassRole",
      "Resource":"arn:aws:iam::123456789012:role/app-*",
      "Condition":{"StringEquals":{"iam:PassedToService":"ecs-tasks.amazonaws.com"}}}})";
  RequestContext ctx = Ctx("iam:PassRole", "arn:aws:iam::123456789012:role/app-task");
  EXPECT_EQ(Decide(ctx, {pass}), Decision::kImplicitDeny);  // no iam:PassedToService key
  ctx.Set("iam:PassedToService", "ecs-tasks.amazonaws.com");
  EXPECT_EQ(Decide(ctx, {pass}), Decision::kAllow);
  ctx.Set("iam:PassedToService", "lambda.amazonaws.com");
  EXPECT_EQ(Decide(ctx, {pass}), Decision::kImplicitDeny);
  RequestContext other = Ctx("iam:PassRole", "arn:aws:iam::123456789012:role/admin");
  other.Set("iam:PassedToService", "ecs-tasks.amazonaws.com");
  EXPECT_EQ(Decide(other, {pass}), Decision::kImplicitDeny);
}

TEST(EvaluatorTest, TagResourceHasNoClusterKey) {
  // ECS scopes writes with ArnEquals ecs:cluster, but ecs:TagResource carries no ecs:cluster key:
  // the condition is false there (the caller must not invent the key).
  const std::string scoped = R"({"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":["ecs:RunTask","ecs:TagResource"],
      "Resource":"*","Condition":{"ArnEquals":{"ecs:cluster":"arn:aws:ecs:us-east-1:123456789012:cluster/default"}}}})";
  RequestContext run = Ctx();
  run.Set("ecs:cluster", kCluster);
  EXPECT_EQ(Decide(run, {scoped}), Decision::kAllow);
  EXPECT_EQ(Decide(Ctx("ecs:TagResource", kTaskDef), {scoped}), Decision::kImplicitDeny);
}

// ---------------------------------------------------------------------------------------------
// Trust policies.

TEST(TrustPolicyTest, ServicePrincipal) {
  const Policy trust = Parse(R"({"Version":"2012-10-17","Statement":{"Effect":"Allow",
      "Principal":{"Service":"ecs-tasks.amazonaws.com"},"Action":"sts:AssumeRole"}})",
                             DocumentKind::kTrust);
  const std::string role = "arn:aws:iam::123456789012:role/app";
  EXPECT_TRUE(TrustPolicyAllows(trust, RequestContext(Principal::Service("ecs-tasks.amazonaws.com"), "sts:AssumeRole", role)));
  EXPECT_FALSE(TrustPolicyAllows(trust, RequestContext(Principal::Service("lambda.amazonaws.com"), "sts:AssumeRole", role)));
  EXPECT_FALSE(TrustPolicyAllows(trust, RequestContext(Alice(), "sts:AssumeRole", role)));
  EXPECT_FALSE(TrustPolicyAllows(trust, RequestContext(Principal::Service("ecs-tasks.amazonaws.com"), "sts:TagSession", role)));
}

TEST(TrustPolicyTest, AwsPrincipals) {
  const std::string role = "arn:aws:iam::123456789012:role/app";
  auto allows = [&](const std::string& principal, const Principal& who) {
    const Policy trust = Parse(R"({"Version":"2012-10-17","Statement":{"Effect":"Allow","Principal":{"AWS":)" + principal +
                                   R"(},"Action":"sts:AssumeRole"}})",
                               DocumentKind::kTrust);
    return TrustPolicyAllows(trust, RequestContext(who, "sts:AssumeRole", role));
  };
  const Principal bob_elsewhere = Principal::User(AccountId("999999999999"), "bob", "AIDABOB");
  const Principal session = Principal::AssumedRole(kAccount, "ci", "run-1", "AROACI", "/build/");
  EXPECT_TRUE(allows(R"("123456789012")", Alice()));
  EXPECT_TRUE(allows(R"("arn:aws:iam::123456789012:root")", Alice()));
  EXPECT_FALSE(allows(R"("arn:aws:iam::123456789012:root")", bob_elsewhere));
  EXPECT_TRUE(allows(R"("arn:aws:iam::123456789012:user/alice")", Alice()));
  EXPECT_FALSE(allows(R"("arn:aws:iam::123456789012:user/alicia")", Alice()));
  EXPECT_TRUE(allows(R"("arn:aws:iam::123456789012:role/build/ci")", session));
  EXPECT_FALSE(allows(R"("arn:aws:iam::123456789012:role/ci")", session));  // the path is part of the ARN
  EXPECT_TRUE(allows(R"("arn:aws:sts::123456789012:assumed-role/ci/run-1")", session));
  EXPECT_TRUE(allows(R"("*")", bob_elsewhere));
}

TEST(TrustPolicyTest, ExternalIdConditionAndDeny) {
  const Policy trust = Parse(R"({"Version":"2012-10-17","Statement":[
      {"Effect":"Allow","Principal":{"AWS":"999999999999"},"Action":"sts:AssumeRole",
       "Condition":{"StringEquals":{"sts:ExternalId":"s3cret"}}},
      {"Effect":"Deny","Principal":{"AWS":"arn:aws:iam::999999999999:user/mallory"},"Action":"sts:*"}]})",
                             DocumentKind::kTrust);
  const std::string role = "arn:aws:iam::123456789012:role/app";
  RequestContext bob(Principal::User(AccountId("999999999999"), "bob", "AIDABOB"), "sts:AssumeRole", role);
  EXPECT_FALSE(TrustPolicyAllows(trust, bob));
  bob.Set("sts:ExternalId", "wrong");
  EXPECT_FALSE(TrustPolicyAllows(trust, bob));
  bob.Set("sts:ExternalId", "s3cret");
  EXPECT_TRUE(TrustPolicyAllows(trust, bob));
  RequestContext mallory(Principal::User(AccountId("999999999999"), "mallory", "AIDAM"), "sts:AssumeRole", role);
  mallory.Set("sts:ExternalId", "s3cret");
  EXPECT_FALSE(TrustPolicyAllows(trust, mallory));
}

TEST(TrustPolicyTest, NotPrincipal) {
  const Policy trust = Parse(R"({"Version":"2012-10-17","Statement":[
      {"Effect":"Allow","Principal":"*","Action":"sts:AssumeRole"},
      {"Effect":"Deny","NotPrincipal":{"AWS":"arn:aws:iam::123456789012:user/alice"},"Action":"sts:AssumeRole"}]})",
                             DocumentKind::kTrust);
  const std::string role = "arn:aws:iam::123456789012:role/app";
  EXPECT_TRUE(TrustPolicyAllows(trust, RequestContext(Alice(), "sts:AssumeRole", role)));
  EXPECT_FALSE(TrustPolicyAllows(trust, RequestContext(Principal::User(kAccount, "bob", "AIDABOB"), "sts:AssumeRole", role)));
}

// ---------------------------------------------------------------------------------------------
// Denial texts.

TEST(DenialMessageTest, AwsTexts) {
  const std::string user = "arn:aws:iam::123456789012:user/alice";
  const std::string role = "arn:aws:iam::123456789012:role/app";
  EXPECT_EQ(DenialMessage(user, "iam:PassRole", role, Decision::kImplicitDeny, PolicyType::kIdentity),
            "User: arn:aws:iam::123456789012:user/alice is not authorized to perform: iam:PassRole on resource: "
            "arn:aws:iam::123456789012:role/app because no identity-based policy allows the iam:PassRole action");
  EXPECT_EQ(DenialMessage(user, "iam:PassRole", role, Decision::kExplicitDeny, PolicyType::kIdentity),
            "User: arn:aws:iam::123456789012:user/alice is not authorized to perform: iam:PassRole on resource: "
            "arn:aws:iam::123456789012:role/app with an explicit deny in an identity-based policy");
  EXPECT_EQ(DenialMessage(user, "ecs:RunTask", "*", Decision::kImplicitDeny, PolicyType::kPermissionsBoundary),
            "User: arn:aws:iam::123456789012:user/alice is not authorized to perform: ecs:RunTask on resource: * "
            "because no permissions boundary allows the ecs:RunTask action");
  EXPECT_EQ(DenialMessage(user, "ecs:RunTask", "*", Decision::kExplicitDeny, PolicyType::kPermissionsBoundary),
            "User: arn:aws:iam::123456789012:user/alice is not authorized to perform: ecs:RunTask on resource: * "
            "with an explicit deny in a permissions boundary");
  EXPECT_EQ(DenialMessage(user, "ecs:RunTask", "*", Decision::kImplicitDeny, PolicyType::kSession),
            "User: arn:aws:iam::123456789012:user/alice is not authorized to perform: ecs:RunTask on resource: * "
            "because no session policy allows the ecs:RunTask action");
  EXPECT_EQ(DenialMessage(user, "ecs:RunTask", "*", Decision::kExplicitDeny, PolicyType::kSession),
            "User: arn:aws:iam::123456789012:user/alice is not authorized to perform: ecs:RunTask on resource: * "
            "with an explicit deny in a session policy");
  EXPECT_EQ(DenialMessage(user, "s3:GetObject", "arn:aws:s3:::b/k", Decision::kExplicitDeny, PolicyType::kResource),
            "User: arn:aws:iam::123456789012:user/alice is not authorized to perform: s3:GetObject on resource: "
            "arn:aws:s3:::b/k with an explicit deny in a resource-based policy");
  EXPECT_EQ(DenialMessage(user, "s3:GetObject", "arn:aws:s3:::b/k", Decision::kImplicitDeny, PolicyType::kResource),
            "User: arn:aws:iam::123456789012:user/alice is not authorized to perform: s3:GetObject on resource: "
            "arn:aws:s3:::b/k because no resource-based policy allows the s3:GetObject action");
}

TEST(DenialMessageTest, AnEmptyResourceNamesNone) {
  const std::string user = "arn:aws:iam::123456789012:user/alice";
  EXPECT_EQ(DenialMessage(user, "ec2:DescribeVpcs", "", Decision::kImplicitDeny, PolicyType::kIdentity),
            "User: arn:aws:iam::123456789012:user/alice is not authorized to perform: ec2:DescribeVpcs because no "
            "identity-based policy allows the ec2:DescribeVpcs action");
  EXPECT_EQ(DenialMessage(user, "ec2:DescribeVpcs", "", Decision::kExplicitDeny, PolicyType::kIdentity),
            "User: arn:aws:iam::123456789012:user/alice is not authorized to perform: ec2:DescribeVpcs with an "
            "explicit deny in an identity-based policy");
}

TEST(DenialMessageTest, FromAnEvaluation) {
  RequestContext ctx = Ctx("ecs:RunTask", kBareFamily);
  const std::string revisions = R"({"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"ecs:RunTask",)"
                                R"("Resource":"arn:aws:ecs:*:123456789012:task-definition/web:*"}})";
  PolicySet set;
  set.identity.push_back({"p", Parse(revisions)});
  EvaluationResult r = Evaluate(ctx, set);
  EXPECT_EQ(DenialMessage(ctx, r),
            "User: arn:aws:iam::123456789012:user/alice is not authorized to perform: ecs:RunTask on resource: "
            "arn:aws:ecs:us-east-1:123456789012:task-definition/web because no identity-based policy allows the "
            "ecs:RunTask action");
}

TEST(RequestContextTest, KeysAreCaseInsensitiveAndReplaced) {
  RequestContext ctx = Ctx();
  ctx.Set("aws:RequestTag/Env", "a");
  ctx.Set("AWS:REQUESTTAG/ENV", "b");
  ASSERT_NE(ctx.Find("aws:requesttag/env"), nullptr);
  EXPECT_EQ(*ctx.Find("Aws:RequestTag/Env"), std::vector<std::string>{"b"});
  EXPECT_EQ(ctx.Find("aws:username")->front(), "alice");
  EXPECT_EQ(ctx.Find("aws:PrincipalAccount")->front(), kAccount.str());
  EXPECT_EQ(ctx.Find("ecs:cluster"), nullptr);
  RequestContext s = Ctx("ecs:RunTask", kTaskDef, Principal::AssumedRole(kAccount, "app", "s1", "AROAAPP", "/svc/"));
  EXPECT_EQ(s.principal().arn, "arn:aws:sts::123456789012:assumed-role/app/s1");
  EXPECT_EQ(s.Find("aws:PrincipalArn")->front(), "arn:aws:iam::123456789012:role/svc/app");
  EXPECT_EQ(s.Find("aws:userid")->front(), "AROAAPP:s1");
  EXPECT_EQ(s.Find("aws:username"), nullptr);
}

// ReadKeys: every key a set's policies read — condition keys and variables, in resources and in
// condition values, across every layer — lowercase, sorted, once each.
TEST(ReadKeysTest, EveryLayersConditionKeysAndVariables) {
  PolicySet set;
  set.identity.push_back({"a", Parse(R"({"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"*",
    "Resource":"arn:aws:ecs:*:*:service/${aws:username}/*","Condition":{"StringEquals":{"aws:RequestTag/Team":"${aws:PrincipalTag/Team}"}}}})")});
  set.boundary = NamedPolicy{"b", Parse(R"({"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"*",
    "Resource":"*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}})")};
  set.session.push_back({"s", Parse(R"({"Version":"2012-10-17","Statement":{"Effect":"Deny","Action":"*",
    "Resource":"*","Condition":{"Null":{"ECS:cluster":"true"}}}})")});
  EXPECT_EQ(ReadKeys(set), (std::vector<std::string>{"aws:principaltag/team", "aws:requesttag/team", "aws:sourceip",
                                                     "aws:username", "ecs:cluster"}));
}

// A context made with `kept` holds only those keys; its decision key covers the action (any
// case), the resource and each kept key's values, with boundaries no two contexts can share.
TEST(RequestContextTest, AKeptContextDropsOtherKeysAndItsDecisionKeyIsUnambiguous) {
  const std::vector<std::string> kept = {"aws:requesttag/a", "aws:username"};
  RequestContext ctx(Alice(), "ECS:RunTask", kTaskDef, &kept);
  ctx.Set("aws:RequestTag/A", "x");
  ctx.Set("aws:SourceIp", "10.0.0.1");
  ctx.SetLower("aws:currenttime", "2026-01-01T00:00:00Z");
  EXPECT_EQ(ctx.Find("aws:username")->front(), "alice");
  EXPECT_EQ(ctx.Find("aws:requesttag/a")->front(), "x");
  EXPECT_EQ(ctx.Find("aws:SourceIp"), nullptr);
  EXPECT_EQ(ctx.Find("aws:currenttime"), nullptr);
  EXPECT_EQ(ctx.Find("aws:PrincipalArn"), nullptr);

  auto key = [](const RequestContext& c) {
    std::string out;
    c.AppendDecisionKey(out);
    return out;
  };
  auto with = [&](std::string action, std::string resource, std::vector<std::string> a) {
    RequestContext c(Alice(), std::move(action), std::move(resource), &kept);
    c.SetMulti("aws:RequestTag/A", std::move(a));
    return key(c);
  };
  const std::string base = with("ecs:runtask", kTaskDef, {"x"});
  EXPECT_EQ(base, key(ctx));  // the action's case and the dropped keys do not count
  EXPECT_NE(base, with("ecs:runtask", kTaskDef, {"y"}));
  EXPECT_NE(base, with("ecs:stoptask", kTaskDef, {"x"}));
  EXPECT_NE(base, with("ecs:runtask", kBareFamily, {"x"}));
  EXPECT_NE(with("ecs:runtask", kTaskDef, {"ab", "c"}), with("ecs:runtask", kTaskDef, {"a", "bc"}));
  EXPECT_NE(with("ecs:runtask", kTaskDef, {"x", "y"}), with("ecs:runtask", kTaskDef, {"xy"}));
  // An empty list is an absent key, as the evaluator reads it.
  RequestContext absent(Alice(), "ecs:runtask", kTaskDef, &kept);
  EXPECT_EQ(with("ecs:runtask", kTaskDef, {}), key(absent));
}

// A statement with many action patterns is matched through its ActionIndex; it must decide as
// trying every pattern does: here each pattern alone in a statement of its own (not indexed), for
// Action and NotAction, over actions of every shape (any case, no ':', services sharing a prefix).
TEST(ActionIndexTest, DecidesAsTryingEveryPattern) {
  const std::vector<std::string> patterns = {
      "ecs:Describe*", "ECS:ListTasks", "ssm:Get*", "*:GetCallerIdentity", "s?s:List*", "logs:*",
      "ec2:Describe*", "ec*:Get*", "sts:AssumeRole", "svc:Read", "svc2:Read?", "elasticloadbalancing:Describe*",
      "a4b:Get*", "a4b:List*", "ecr:BatchGetImage", "secretsmanager:GetSecretValue"};
  ASSERT_GE(patterns.size(), 16u);  // internal::kIndexActionsFrom
  const std::vector<std::string> actions = {
      "ecs:DescribeServices", "ECS:describeservices", "ecs:RunTask", "ecs:ListTasks", "ecs:ListTasksX", "ssm:GetParameter",
      "ssm:PutParameter", "sts:GetCallerIdentity", "iam:GetCallerIdentity", "sqs:ListQueues", "sns:ListTopics",
      "sts:ListX", "iam", "IAM", "iam:ListRoles", "logs:PutLogEvents", "logs", "ec2:DescribeVpcs", "ecr:GetLoginPassword",
      "ecs:GetTaskProtection", "eks:GetX", "svc:Read", "svc:ReadX", "svc2:ReadX", "svc2:Read", "svc:", ":Read", "",
      "elasticloadbalancing:DescribeLoadBalancers", "a4b:GetDevice", "secretsmanager:GetSecretValue", "nocolon"};
  auto quoted = [](const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& a : v) out += (out.empty() ? "\"" : ",\"") + a + "\"";
    return out;
  };
  for (const char* element : {"Action", "NotAction"}) {
    const std::string indexed = std::string(R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow",")") + element +
                                R"(":[)" + quoted(patterns) + R"(],"Resource":"*"}]})";
    for (const std::string& action : actions) {
      bool any = false;
      for (const std::string& pattern : patterns) {
        const std::string one =
            R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":")" + pattern + R"(","Resource":"*"}]})";
        any = any || Decide(Ctx(action, "*"), {one}) == Decision::kAllow;
      }
      const bool expected = std::string(element) == "Action" ? any : !any;
      EXPECT_EQ(Decide(Ctx(action, "*"), {indexed}) == Decision::kAllow, expected) << element << " " << action;
    }
  }
}

}  // namespace
}  // namespace paddock::iam::policy
