// ParsePolicy: what parses, what is rejected and with which MalformedPolicyDocument text, and the
// compiled helpers (globs, dates, CIDRs) the evaluator relies on.
#include "iam/policy/policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "iam/policy/internal/compiled.h"

namespace paddock::iam::policy {
namespace {

struct MalformedCase {
  std::string name;
  DocumentKind kind;
  std::string json;
  std::string message;
};

void PrintTo(const MalformedCase& c, std::ostream* os) { *os << c.name; }

class MalformedTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedTest, RejectedWithAwsText) {
  const MalformedCase& c = GetParam();
  auto p = ParsePolicy(c.json, c.kind);
  ASSERT_FALSE(p.ok()) << c.json;
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(IsError(p.status(), iam::Error::kMalformedPolicyDocument)) << p.status().ToString();
  EXPECT_EQ(p.status().message(), c.message);
}

const std::string kSyntax = "Syntax errors in policy.";

INSTANTIATE_TEST_SUITE_P(
    Policy, MalformedTest,
    ::testing::Values(
        MalformedCase{"NotJson", DocumentKind::kIdentity, "not json", "This policy contains invalid Json"},
        MalformedCase{"NotAnObject", DocumentKind::kIdentity, "[]", kSyntax},
        MalformedCase{"NoStatement", DocumentKind::kIdentity, R"({"Version":"2012-10-17"})", kSyntax},
        MalformedCase{"EmptyStatementList", DocumentKind::kIdentity, R"({"Version":"2012-10-17","Statement":[]})",
                      "Could not parse the policy: Statement is empty!"},
        MalformedCase{"UnknownTopLevelField", DocumentKind::kIdentity,
                      R"({"Version":"2012-10-17","Statment":[],"Statement":{"Effect":"Allow","Action":"*","Resource":"*"}})", kSyntax},
        MalformedCase{"UnknownStatementField", DocumentKind::kIdentity,
                      R"({"Statement":{"Effect":"Allow","Actions":"*","Resource":"*"}})", kSyntax},
        MalformedCase{"BadEffect", DocumentKind::kIdentity, R"({"Statement":{"Effect":"Permit","Action":"*","Resource":"*"}})", kSyntax},
        MalformedCase{"MissingEffect", DocumentKind::kIdentity, R"({"Statement":{"Action":"*","Resource":"*"}})", kSyntax},
        MalformedCase{"ActionAndNotAction", DocumentKind::kIdentity,
                      R"({"Statement":{"Effect":"Allow","Action":"*","NotAction":"iam:*","Resource":"*"}})", kSyntax},
        MalformedCase{"ResourceAndNotResource", DocumentKind::kIdentity,
                      R"({"Statement":{"Effect":"Allow","Action":"*","Resource":"*","NotResource":"*"}})", kSyntax},
        MalformedCase{"ActionNotString", DocumentKind::kIdentity, R"({"Statement":{"Effect":"Allow","Action":7,"Resource":"*"}})", kSyntax},
        MalformedCase{"NoAction", DocumentKind::kIdentity, R"({"Statement":{"Effect":"Allow","Resource":"*"}})",
                      "Policy statement must contain actions."},
        MalformedCase{"EmptyActionList", DocumentKind::kIdentity, R"({"Statement":{"Effect":"Allow","Action":[],"Resource":"*"}})",
                      "Policy statement must contain actions."},
        MalformedCase{"ActionWithoutVendor", DocumentKind::kIdentity, R"({"Statement":{"Effect":"Allow","Action":"RunTask","Resource":"*"}})",
                      "Actions/Conditions must be prefaced by a vendor, e.g., iam, sdb, ec2, etc."},
        MalformedCase{"ActionTwoColons", DocumentKind::kIdentity, R"({"Statement":{"Effect":"Allow","Action":"ecs:Run:Task","Resource":"*"}})",
                      "Actions/Condition can contain only one colon."},
        MalformedCase{"IdentityWithPrincipal", DocumentKind::kIdentity,
                      R"({"Statement":{"Effect":"Allow","Principal":"*","Action":"*","Resource":"*"}})",
                      "Policy document should not specify a principal."},
        MalformedCase{"IdentityWithNotPrincipal", DocumentKind::kIdentity,
                      R"({"Statement":{"Effect":"Deny","NotPrincipal":{"AWS":"123456789012"},"Action":"*","Resource":"*"}})",
                      "Policy document should not specify a principal."},
        MalformedCase{"IdentityWithoutResource", DocumentKind::kIdentity, R"({"Statement":{"Effect":"Allow","Action":"*"}})",
                      "Policy statement must contain resources."},
        MalformedCase{"ResourceNotArn", DocumentKind::kIdentity,
                      R"({"Statement":{"Effect":"Allow","Action":"s3:*","Resource":"my-bucket"}})",
                      "Resource my-bucket must be in ARN format or \"*\"."},
        MalformedCase{"EmptyResource", DocumentKind::kIdentity, R"({"Statement":{"Effect":"Allow","Action":"s3:*","Resource":""}})",
                      "Resource  must be in ARN format or \"*\"."},
        MalformedCase{"TrustWithResource", DocumentKind::kTrust,
                      R"({"Statement":{"Effect":"Allow","Principal":{"Service":"ecs-tasks.amazonaws.com"},"Action":"sts:AssumeRole","Resource":"*"}})",
                      "Has prohibited field Resource"},
        MalformedCase{"TrustWithNotResource", DocumentKind::kTrust,
                      R"({"Statement":{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"sts:AssumeRole","NotResource":"*"}})",
                      "AssumeRole policy must not contain resources."},
        MalformedCase{"TrustWithNonStsAction", DocumentKind::kTrust,
                      R"({"Statement":{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"*"}})",
                      "AssumeRole policy may only specify STS AssumeRole actions."},
        MalformedCase{"TrustAllowWithNotPrincipal", DocumentKind::kTrust,
                      R"({"Statement":{"Effect":"Allow","NotPrincipal":{"AWS":"*"},"Action":"sts:AssumeRole"}})",
                      "Allow with NotPrincipal is not allowed."},
        MalformedCase{"TrustEmptyPrincipal", DocumentKind::kTrust,
                      R"({"Statement":{"Effect":"Allow","Principal":{},"Action":"sts:AssumeRole"}})",
                      "Missing required field Principal cannot be empty!"},
        MalformedCase{"TrustWithoutPrincipal", DocumentKind::kTrust, R"({"Statement":{"Effect":"Allow","Action":"sts:AssumeRole"}})",
                      "Missing required field Principal"},
        MalformedCase{"ResourcePolicyWithoutPrincipal", DocumentKind::kResource,
                      R"({"Statement":{"Effect":"Allow","Action":"secretsmanager:*","Resource":"*"}})",
                      "Missing required field Principal"},
        MalformedCase{"ResourcePolicyWithoutResource", DocumentKind::kResource,
                      R"({"Statement":{"Effect":"Allow","Principal":"*","Action":"secretsmanager:*"}})",
                      "Policy statement must contain resources."},
        MalformedCase{"WildcardRolePrincipal", DocumentKind::kTrust,
                      R"({"Statement":{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:role/*"},"Action":"sts:AssumeRole"}})",
                      "Invalid principal in policy: \"AWS\":\"arn:aws:iam::123456789012:role/*\""},
        MalformedCase{"GarbagePrincipal", DocumentKind::kTrust,
                      R"({"Statement":{"Effect":"Allow","Principal":{"AWS":"alice"},"Action":"sts:AssumeRole"}})",
                      "Invalid principal in policy: \"AWS\":\"alice\""},
        MalformedCase{"UnknownPrincipalType", DocumentKind::kTrust,
                      R"({"Statement":{"Effect":"Allow","Principal":{"Robot":"x"},"Action":"sts:AssumeRole"}})", kSyntax},
        MalformedCase{"PrincipalStringNotStar", DocumentKind::kTrust,
                      R"({"Statement":{"Effect":"Allow","Principal":"123456789012","Action":"sts:AssumeRole"}})", kSyntax},
        MalformedCase{"UnknownVersion", DocumentKind::kIdentity,
                      R"({"Version":"2012-10-18","Statement":{"Effect":"Allow","Action":"*","Resource":"*"}})",
                      "The policy failed legacy parsing"},
        MalformedCase{"UnknownOperator", DocumentKind::kIdentity,
                      R"({"Statement":{"Effect":"Allow","Action":"*","Resource":"*","Condition":{"StringEqualz":{"aws:username":"a"}}}})", kSyntax},
        MalformedCase{"NullIfExists", DocumentKind::kIdentity,
                      R"({"Statement":{"Effect":"Allow","Action":"*","Resource":"*","Condition":{"NullIfExists":{"aws:username":"true"}}}})", kSyntax},
        MalformedCase{"ConditionValueObject", DocumentKind::kIdentity,
                      R"({"Statement":{"Effect":"Allow","Action":"*","Resource":"*","Condition":{"StringEquals":{"aws:username":{"a":1}}}}})", kSyntax},
        MalformedCase{"ConditionValueNull", DocumentKind::kIdentity,
                      R"({"Statement":{"Effect":"Allow","Action":"*","Resource":"*","Condition":{"StringEquals":{"aws:username":null}}}})", kSyntax},
        MalformedCase{"SidNotAlphanumeric", DocumentKind::kIdentity,
                      R"({"Statement":{"Sid":"allow all","Effect":"Allow","Action":"*","Resource":"*"}})",
                      "Statement IDs (SID) must be alpha-numeric. Check that your input satisfies the regular expression [0-9A-Za-z]*"},
        MalformedCase{"DuplicateSid", DocumentKind::kIdentity,
                      R"({"Statement":[{"Sid":"A","Effect":"Allow","Action":"*","Resource":"*"},{"Sid":"A","Effect":"Deny","Action":"*","Resource":"*"}]})",
                      "Statement IDs (SID) in a single policy must be unique."},
        MalformedCase{"ControlCharacter", DocumentKind::kIdentity,
                      R"({"Statement":{"Effect":"Allow","Action":"*","Resource":"arn:aws:s3:::a\u0001b"}})", kSyntax}),
    [](const ::testing::TestParamInfo<MalformedCase>& i) { return i.param.name; });

TEST(ParsePolicyTest, AcceptsTheShapesAwsAccepts) {
  // Statement as one object; Action and Resource as strings; no Version.
  auto a = ParsePolicy(R"({"Statement":{"Effect":"Allow","Action":"ecs:*","Resource":"*"}})", DocumentKind::kIdentity);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->version(), PolicyVersion::k2008_10_17);
  EXPECT_EQ(a->statement_count(), 1u);
  // Statement array with Sids, Id, NotAction/NotResource, conditions with numbers and booleans.
  auto b = ParsePolicy(R"({"Version":"2012-10-17","Id":"x","Statement":[
      {"Sid":"One","Effect":"Allow","NotAction":["iam:*"],"NotResource":["arn:aws:ecs:*:*:cluster/prod"]},
      {"Sid":"Two","Effect":"Deny","Action":"ecs:RunTask","Resource":"*",
       "Condition":{"NumericLessThan":{"ecs:count":10},"Bool":{"aws:SecureTransport":false},
                    "ForAllValues:StringEquals":{"aws:TagKeys":["a","b"]}}}]})",
                       DocumentKind::kIdentity);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->version(), PolicyVersion::k2012_10_17);
  EXPECT_EQ(b->statement_count(), 2u);
  EXPECT_EQ(b->sid(1), "Two");
  // A trust policy with every principal form.
  auto t = ParsePolicy(R"({"Version":"2012-10-17","Statement":[
      {"Effect":"Allow","Principal":{"Service":["ecs-tasks.amazonaws.com"]},"Action":"sts:AssumeRole"},
      {"Effect":"Allow","Principal":{"AWS":["123456789012","arn:aws:iam::123456789012:root",
          "arn:aws:iam::123456789012:user/alice","arn:aws:iam::123456789012:role/path/app",
          "arn:aws:sts::123456789012:assumed-role/app/s1","*"]},"Action":"sts:AssumeRole"},
      {"Effect":"Allow","Principal":{"Federated":"accounts.google.com"},"Action":"sts:AssumeRoleWithWebIdentity"},
      {"Effect":"Allow","Principal":"*","Action":["sts:AssumeRole","sts:TagSession"]}]})",
                       DocumentKind::kTrust);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  // Resource-based policies allow Sids with spaces (other services' rules, not IAM's).
  auto r = ParsePolicy(R"({"Statement":{"Sid":"read it","Effect":"Allow","Principal":{"AWS":"123456789012"},
      "Action":"secretsmanager:GetSecretValue","Resource":"*"}})",
                       DocumentKind::kResource);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

TEST(ParsePolicyTest, NeverCrashesOnTruncatedDocuments) {
  const std::string doc = R"({"Version":"2012-10-17","Statement":[{"Sid":"A","Effect":"Allow","Action":["ecs:Run*"],)"
                          R"("Resource":"arn:aws:ecs:*:${aws:PrincipalAccount}:task-definition/${aws:username, 'x'}:*",)"
                          R"("Condition":{"IpAddress":{"aws:SourceIp":["10.0.0.0/8","2001:db8::/32"]}}}]})";
  ASSERT_TRUE(ParsePolicy(doc, DocumentKind::kIdentity).ok());
  for (size_t n = 0; n < doc.size(); ++n) {
    auto p = ParsePolicy(doc.substr(0, n), DocumentKind::kIdentity);
    EXPECT_FALSE(p.ok());
  }
}

TEST(ParsePolicyTest, StatementPositions) {
  // Lines and columns are 1-based; the end is the column just past the statement's '}'.
  const std::string doc =
      "{\n"
      "  \"Version\": \"2012-10-17\",\n"
      "  \"Statement\": [\n"
      "    {\"Effect\": \"Allow\", \"Action\": \"ecs:*\", \"Resource\": \"*\",\n"
      "     \"Condition\": {\"StringEquals\": {\"aws:RequestTag/a\": \"}]{\\\"\"}}},\n"
      "    {\n"
      "      \"Effect\": \"Deny\",\n"
      "      \"Action\": \"iam:*\",\n"
      "      \"Resource\": \"*\"\n"
      "    }\n"
      "  ]\n"
      "}\n";
  auto p = ParsePolicy(doc, DocumentKind::kIdentity);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->statement_count(), 2u);
  EXPECT_EQ(p->start(0), (TextPosition{4, 5}));
  EXPECT_EQ(p->end(0), (TextPosition{5, 67}));
  EXPECT_EQ(p->start(1), (TextPosition{6, 5}));
  EXPECT_EQ(p->end(1), (TextPosition{10, 6}));
  // A single statement object.
  auto one = ParsePolicy(R"({"Statement":{"Effect":"Allow","Action":"*","Resource":"*"}})", DocumentKind::kIdentity);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->start(0), (TextPosition{1, 14}));
  EXPECT_EQ(one->end(0), (TextPosition{1, 60}));
}

TEST(ContextKeysTest, ConditionKeysAndVariablesOnceAsWritten) {
  auto p = ParsePolicy(R"({"Version":"2012-10-17","Statement":[
      {"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::b/${aws:username}/${*}",
       "Condition":{"StringEquals":{"aws:RequestTag/Team":"${aws:PrincipalTag/team}","AWS:USERNAME":"x"}}},
      {"Effect":"Deny","Action":"*","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":"false"},
       "ForAllValues:StringEquals":{"aws:TagKeys":["a"]}}}]})",
                       DocumentKind::kIdentity);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(ContextKeys(*p), (std::vector<std::string>{"aws:username", "aws:RequestTag/Team", "aws:PrincipalTag/team",
                                                       "aws:SecureTransport", "aws:TagKeys"}));
  auto none = ParsePolicy(R"({"Statement":{"Effect":"Allow","Action":"*","Resource":"*"}})", DocumentKind::kIdentity);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(ContextKeys(*none).empty());
}

using internal::GlobMatch;
using internal::kQuestion;
using internal::kStar;

TEST(GlobTest, StarSpansEverythingQuestionOneCharacter) {
  const std::string star(1, kStar), q(1, kQuestion);
  EXPECT_TRUE(GlobMatch(star, "", false));
  EXPECT_TRUE(GlobMatch(star, "a:b/c", false));
  EXPECT_TRUE(GlobMatch("a" + star + "c", "a:b/c", false));
  EXPECT_FALSE(GlobMatch("a" + star + "c", "a:b/cd", false));
  EXPECT_TRUE(GlobMatch("a" + q + "c", "abc", false));
  EXPECT_FALSE(GlobMatch("a" + q + "c", "ac", false));
  EXPECT_TRUE(GlobMatch(star + "b" + star + "b" + star, "abxbyb", false));
  EXPECT_FALSE(GlobMatch("abc", "ABC", false));
  EXPECT_TRUE(GlobMatch("abc", "ABC", true));
  // Literal '*' and '?' (as ${*} produces) match only themselves.
  EXPECT_TRUE(GlobMatch("a*b", "a*b", false));
  EXPECT_FALSE(GlobMatch("a*b", "axb", false));
}

// MayMatch (the 8-byte pre-filter Scan runs before Matches) may only rule out: wherever Matches
// holds, MayMatch does; and it rules out a difference within the first 8 literal bytes.
TEST(TemplateTest, MayMatchNeverRulesOutAMatch) {
  const std::string star(1, kStar), q(1, kQuestion);
  const std::vector<std::string> patterns = {"",       star,           "e" + star,        "ecs:" + star,
                                             "ecs:r" + q + "ntask", "ecs:runtask", "ecs:runtas" + star,
                                             "ecs:runtaskx",        "ecs:r",       "logs:putlogevents",
                                             q + "cs:runtask"};
  const std::vector<std::string> inputs = {"", "e", "ecs:r", "ecs:run", "ecs:runt", "ecs:runtask", "ecs:runtaskx",
                                           "ecs:describetaskdefinition", "logs:putlogevents", "xcs:runtask"};
  for (const std::string& text : patterns) {
    internal::Template t;
    t.text = text;
    t.Finish();
    for (const std::string& s : inputs) {
      if (t.Matches(s, false)) {
        EXPECT_TRUE(t.MayMatch(internal::Head(s))) << text << " / " << s;
      }
      // Within the first 8 literal bytes, MayMatch decides exactly as the prefix compare does.
      const size_t n = std::min<size_t>(t.prefix, 8);
      const bool head_equal = s.size() >= n && s.compare(0, n, text, 0, n) == 0;
      EXPECT_EQ(t.MayMatch(internal::Head(s)), head_equal) << text << " / " << s;
    }
  }
}

TEST(ParseDateTest, IsoAndEpoch) {
  using internal::ParseDate;
  EXPECT_EQ(ParseDate("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(ParseDate("1970-01-02"), 86400000);
  EXPECT_EQ(ParseDate("86400"), 86400000);
  EXPECT_EQ(ParseDate("2026-12-01T12:00:00Z"), ParseDate("2026-12-01T14:00:00+02:00"));
  EXPECT_EQ(ParseDate("2026-12-01T12:00:00Z"), ParseDate("2026-12-01T07:00:00-0500"));
  EXPECT_EQ(*ParseDate("2026-12-01T12:00:00.250Z") - *ParseDate("2026-12-01T12:00:00Z"), 250);
  EXPECT_EQ(ParseDate("2026-12-01T12:00Z"), ParseDate("2026-12-01T12:00:00Z"));
  EXPECT_EQ(ParseDate("2000-03-01"), ParseDate("951868800"));  // across a leap day
  EXPECT_FALSE(ParseDate(""));
  EXPECT_FALSE(ParseDate("yesterday"));
  EXPECT_FALSE(ParseDate("2026-13-01"));
  EXPECT_FALSE(ParseDate("2026-12-01T25:00:00Z"));
  EXPECT_FALSE(ParseDate("2026-12-01T12:00:00Zjunk"));
}

TEST(CidrTest, V4AndV6) {
  using internal::CidrContains;
  using internal::ParseCidr;
  using internal::ParseIp;
  EXPECT_TRUE(CidrContains(*ParseCidr("10.0.0.0/8"), *ParseIp("10.255.1.2")));
  EXPECT_FALSE(CidrContains(*ParseCidr("10.0.0.0/8"), *ParseIp("11.0.0.1")));
  EXPECT_TRUE(CidrContains(*ParseCidr("192.168.1.0/25"), *ParseIp("192.168.1.127")));
  EXPECT_FALSE(CidrContains(*ParseCidr("192.168.1.0/25"), *ParseIp("192.168.1.128")));
  EXPECT_TRUE(CidrContains(*ParseCidr("203.0.113.5"), *ParseIp("203.0.113.5")));
  EXPECT_TRUE(CidrContains(*ParseCidr("0.0.0.0/0"), *ParseIp("8.8.8.8")));
  EXPECT_TRUE(CidrContains(*ParseCidr("2001:db8::/32"), *ParseIp("2001:db8:1::1")));
  EXPECT_FALSE(CidrContains(*ParseCidr("2001:db8::/32"), *ParseIp("2001:db9::1")));
  EXPECT_FALSE(CidrContains(*ParseCidr("10.0.0.0/8"), *ParseIp("::ffff:10.0.0.1")));
  EXPECT_FALSE(ParseCidr("10.0.0.0/33"));
  EXPECT_FALSE(ParseCidr("10.0.0.0/"));
  EXPECT_FALSE(ParseCidr("ten/8"));
}

// A statement with many action patterns groups them by the service their literal prefix names;
// patterns with a wildcard before their ':' (or no ':') are kept apart, since any service's action
// may match them. Few patterns are not indexed.
TEST(ActionIndexTest, GroupsPatternsByTheServiceTheirLiteralPrefixNames) {
  std::string actions = R"("ECS:Describe*","ssm:Get*","*:Get*","s?s:List*","*","ecs:ListTasks","logs:*")";
  for (int i = 0; i < 13; ++i) actions += ",\"svc" + std::to_string(i % 5) + ":Read" + std::to_string(i) + "\"";
  auto p = ParsePolicy(R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":[)" + actions +
                           R"(],"Resource":"*"},{"Effect":"Allow","Action":["ecs:RunTask","ssm:Get*"],"Resource":"*"}]})",
                       DocumentKind::kIdentity);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const internal::Statement& many = p->compiled().statements[0];
  ASSERT_EQ(many.actions.size(), 20u);
  ASSERT_TRUE(many.action_index.has_value());
  std::vector<std::string> services;
  for (const auto& s : many.action_index->services) services.push_back(s.name);
  EXPECT_EQ(services, (std::vector<std::string>{"ecs", "logs", "ssm", "svc0", "svc1", "svc2", "svc3", "svc4"}));
  EXPECT_EQ(many.action_index->services[0].patterns, (std::vector<uint32_t>{0, 5}));
  EXPECT_EQ(many.action_index->unkeyed, (std::vector<uint32_t>{2, 3, 4}));
  EXPECT_FALSE(p->compiled().statements[1].action_index.has_value());
}

}  // namespace
}  // namespace paddock::iam::policy
