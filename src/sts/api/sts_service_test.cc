#include "aws/errors.h"
#include "sts/api/sts_service.h"

#include <gtest/gtest.h>

#include <map>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "aws/front.h"
#include "aws/sigv4.h"
#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"
#include "sts/api/models/models.h"
#include "sts/api/session_credentials.h"
#include "sts/errors.h"

namespace paddock::sts::api {
namespace {

constexpr char kSessionPolicy[] =
    R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"ecs:Describe*","Resource":"*"}]})";

// What the front answers for a failure of an STS call: STS's table, else the default.
aws::AwsError Answer(const Status& s) {
  std::optional<aws::AwsError> e = StsErrorFor(s);
  return e ? *e : aws::AwsErrorFor(s);
}

using namespace std::chrono_literals;

constexpr char kAccount[] = "123456789012";
constexpr char kRoleArn[] = "arn:aws:iam::123456789012:role/ops/deployer";

// The text of the first <tag>…</tag> in `xml`, or "<absent>".
std::string Element(const std::string& xml, const std::string& tag) {
  size_t open = xml.find("<" + tag + ">");
  if (open == std::string::npos) return "<absent>";
  open += tag.size() + 2;
  size_t close = xml.find("</" + tag + ">", open);
  return close == std::string::npos ? "<absent>" : xml.substr(open, close - open);
}

// A RoleDirectory with one role whose trust admits the principals in `trusted`; remembers the
// context of the last trust question.
class FakeRoles : public RoleDirectory {
 public:
  StatusOr<std::optional<AssumableRole>> FindRole(const AccountId& account, std::string_view arn) override {
    if (account.str() != kAccount || arn != kRoleArn) return std::optional<AssumableRole>();
    return std::optional<AssumableRole>(role);
  }
  Status TrustAdmits(const AssumableRole&, const aws::Principal& caller, const CallOrigin&,
                     const TrustContext& context) override {
    last_context = context;
    for (const auto& t : trusted)
      if (t == caller.arn || t == caller.role_arn) return OkStatus();
    return PermissionDenied("no statement allows it");
  }

  AssumableRole role{kRoleArn, "AROAEXAMPLEROLEID0001", "deployer", "{}", 7200};
  std::vector<std::string> trusted{"arn:aws:iam::123456789012:user/alice", kRoleArn};
  TrustContext last_context;
};

aws::Principal Root() {
  aws::Principal p;
  p.account = AccountId(kAccount);
  p.arn = "arn:aws:iam::123456789012:root";
  p.user_id = kAccount;
  return p;
}

aws::Principal Alice() {
  aws::Principal p;
  p.account = AccountId(kAccount);
  p.arn = "arn:aws:iam::123456789012:user/alice";
  p.kind = aws::PrincipalKind::kUser;
  p.user_id = "AIDAEXAMPLEUSERID0001";
  p.user_name = "alice";
  return p;
}

class StsServiceTest : public ::testing::Test {
 protected:
  StatusOr<std::string> Call(const aws::Principal& who, std::string action, aws::QueryParams params) {
    aws::CallContext ctx;
    ctx.scope = Scope{who.account, Region("eu-west-3")};
    ctx.principal = who;
    ctx.request_id = "req-1";
    ctx.action = action;
    ctx.now = clock_.Now();
    params.emplace_back("Action", action);
    params.emplace_back("Version", "2011-06-15");
    return service_.Call(ctx, params);
  }

  // The principal the credentials in `xml` authenticate as.
  aws::Principal PrincipalOf(const std::string& xml) {
    auto c = sessions_.Find(AccessKeyId(Element(xml, "AccessKeyId")));
    EXPECT_TRUE(c.ok() && c->has_value()) << xml;
    return c.ok() && c->has_value() ? (*c)->principal : aws::Principal();
  }

  void ExpectError(const StatusOr<std::string>& r, std::string_view code, std::string_view message) {
    ASSERT_FALSE(r.ok()) << *r;
    EXPECT_EQ(Answer(r.status()).type, code);
    EXPECT_EQ(r.status().message(), message);
  }

  testing::FakeClock clock_;
  testing::TempStore store_;
  Sessions sessions_{*store_};
  SessionCredentials credentials_{sessions_};
  FakeRoles roles_;
  StsService service_{sessions_, &roles_};
};

TEST_F(StsServiceTest, GetCallerIdentityNamesRootUserAndRoleSession) {
  auto root = Call(Root(), "GetCallerIdentity", {});
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(Element(*root, "Arn"), "arn:aws:iam::123456789012:root");
  EXPECT_EQ(Element(*root, "UserId"), kAccount);
  EXPECT_EQ(Element(*root, "Account"), kAccount);
  EXPECT_NE(root->find("<GetCallerIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"),
            std::string::npos);
  EXPECT_EQ(Element(*root, "RequestId"), "req-1");

  auto user = Call(Alice(), "GetCallerIdentity", {});
  ASSERT_TRUE(user.ok());
  EXPECT_EQ(Element(*user, "UserId"), "AIDAEXAMPLEUSERID0001");
  EXPECT_EQ(Element(*user, "Arn"), "arn:aws:iam::123456789012:user/alice");

  auto assumed = Call(Alice(), "AssumeRole", {{"RoleArn", kRoleArn}, {"RoleSessionName", "build-42"}});
  ASSERT_TRUE(assumed.ok()) << assumed.status().ToString();
  auto session = Call(PrincipalOf(*assumed), "GetCallerIdentity", {});
  ASSERT_TRUE(session.ok());
  EXPECT_EQ(Element(*session, "UserId"), "AROAEXAMPLEROLEID0001:build-42");
  EXPECT_EQ(Element(*session, "Arn"), "arn:aws:sts::123456789012:assumed-role/deployer/build-42");
}

TEST_F(StsServiceTest, GetSessionTokenDurations) {
  auto user = Call(Alice(), "GetSessionToken", {});
  ASSERT_TRUE(user.ok());
  EXPECT_EQ(Element(*user, "Expiration"), "2026-05-29T08:26:40Z");  // FakeClock's start (20:26:40Z) + 43200 s
  auto user_long = Call(Alice(), "GetSessionToken", {{"DurationSeconds", "129600"}});
  ASSERT_TRUE(user_long.ok());
  EXPECT_EQ(sessions_.Find(AccessKeyId(Element(*user_long, "AccessKeyId")))->value().expires,
            clock_.Now() + 129600s);
  // Root's sessions are capped at an hour, without an error.
  auto root = Call(Root(), "GetSessionToken", {{"DurationSeconds", "7200"}});
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(sessions_.Find(AccessKeyId(Element(*root, "AccessKeyId")))->value().expires, clock_.Now() + 3600s);
  EXPECT_EQ(PrincipalOf(*root).arn, "arn:aws:iam::123456789012:root");

  ExpectError(Call(Alice(), "GetSessionToken", {{"DurationSeconds", "899"}}), "ValidationError",
              "1 validation error detected: Value '899' at 'durationSeconds' failed to satisfy constraint: Member "
              "must have value greater than or equal to 900");
  ExpectError(Call(Alice(), "GetSessionToken", {{"DurationSeconds", "129601"}}), "ValidationError",
              "1 validation error detected: Value '129601' at 'durationSeconds' failed to satisfy constraint: Member "
              "must have value less than or equal to 129600");
}

TEST_F(StsServiceTest, SessionCredentialsCannotCallGetSessionToken) {
  auto first = Call(Alice(), "GetSessionToken", {});
  ASSERT_TRUE(first.ok());
  ExpectError(Call(PrincipalOf(*first), "GetSessionToken", {}), "AccessDenied",
              "Cannot call GetSessionToken with session credentials");
  auto assumed = Call(Alice(), "AssumeRole", {{"RoleArn", kRoleArn}, {"RoleSessionName", "s1"}});
  ASSERT_TRUE(assumed.ok());
  ExpectError(Call(PrincipalOf(*assumed), "GetSessionToken", {}), "AccessDenied",
              "Cannot call GetSessionToken with session credentials");
}

TEST_F(StsServiceTest, AssumeRoleMintsARoleSession) {
  auto r = Call(Alice(), "AssumeRole",
                {{"RoleArn", kRoleArn},
                 {"RoleSessionName", "build-42"},
                 {"DurationSeconds", "7200"},
                 {"ExternalId", "ext-123"},
                 {"Policy", kSessionPolicy},
                 {"PolicyArns.member.1.arn", "arn:aws:iam::aws:policy/ReadOnlyAccess"},
                 {"Tags.member.1.Key", "team"},
                 {"Tags.member.1.Value", "blue"},
                 {"TransitiveTagKeys.member.1", "team"},
                 {"SourceIdentity", "alice"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Element(*r, "AssumedRoleId"), "AROAEXAMPLEROLEID0001:build-42");
  EXPECT_EQ(Element(*r, "Arn"), "arn:aws:sts::123456789012:assumed-role/deployer/build-42");
  EXPECT_EQ(Element(*r, "Expiration"), "2026-05-28T22:26:40Z");  // start + 7200 s
  EXPECT_EQ(Element(*r, "SourceIdentity"), "alice");
  EXPECT_NE(Element(*r, "PackedPolicySize"), "<absent>");
  EXPECT_TRUE(Element(*r, "AccessKeyId").starts_with("ASIA"));
  EXPECT_GE(Element(*r, "SessionToken").size(), 128u);

  aws::Principal p = PrincipalOf(*r);
  EXPECT_EQ(p.kind, aws::PrincipalKind::kAssumedRole);
  EXPECT_EQ(p.role_arn, kRoleArn);
  EXPECT_EQ(p.session_policy, kSessionPolicy);
  EXPECT_EQ(p.session_policy_arns, std::vector<std::string>{"arn:aws:iam::aws:policy/ReadOnlyAccess"});
  EXPECT_EQ(p.session_tags, (std::vector<std::pair<std::string, std::string>>{{"team", "blue"}}));

  TrustContext want{{"sts:ExternalId", "ext-123"},    {"sts:RoleSessionName", "build-42"},
                    {"sts:SourceIdentity", "alice"},  {"aws:RequestTag/team", "blue"},
                    {"aws:TagKeys", "team"},          {"sts:TransitiveTagKeys", "team"}};
  EXPECT_EQ(roles_.last_context, want);
}

TEST_F(StsServiceTest, AssumeRoleRefusals) {
  const std::string denied =
      "User: arn:aws:iam::123456789012:user/bob is not authorized to perform: sts:AssumeRole on resource: ";
  aws::Principal bob = Alice();
  bob.arn = "arn:aws:iam::123456789012:user/bob";
  ExpectError(Call(bob, "AssumeRole", {{"RoleArn", kRoleArn}, {"RoleSessionName", "s1"}}), "AccessDenied",
              denied + kRoleArn);
  // A role that does not exist reads the same: callers do not learn which roles exist.
  const std::string missing = "arn:aws:iam::123456789012:role/nope";
  ExpectError(Call(bob, "AssumeRole", {{"RoleArn", missing}, {"RoleSessionName", "s1"}}), "AccessDenied",
              denied + missing);
  ExpectError(Call(Alice(), "AssumeRole", {{"RoleArn", missing}, {"RoleSessionName", "s1"}}), "AccessDenied",
              "User: arn:aws:iam::123456789012:user/alice is not authorized to perform: sts:AssumeRole on resource: " +
                  missing);
  ExpectError(Call(Root(), "AssumeRole", {{"RoleArn", kRoleArn}, {"RoleSessionName", "s1"}}), "AccessDenied",
              "Roles may not be assumed by root accounts.");
  ExpectError(Call(Alice(), "AssumeRole", {{"RoleArn", kRoleArn}, {"RoleSessionName", "s1"}, {"DurationSeconds", "7201"}}),
              "ValidationError", "The requested DurationSeconds exceeds the MaxSessionDuration set for this role.");
  ExpectError(Call(Alice(), "AssumeRole", {{"RoleArn", kRoleArn}, {"RoleSessionName", "s1"}, {"DurationSeconds", "43201"}}),
              "ValidationError",
              "1 validation error detected: Value '43201' at 'durationSeconds' failed to satisfy constraint: Member "
              "must have value less than or equal to 43200");
  ExpectError(Call(Alice(), "AssumeRole", {{"RoleArn", kRoleArn}, {"RoleSessionName", "bad name"}}), "ValidationError",
              "1 validation error detected: Value 'bad name' at 'roleSessionName' failed to satisfy constraint: "
              "Member must satisfy regular expression pattern: [\\w+=,.@-]*");
  ExpectError(Call(Alice(), "AssumeRole", {{"RoleSessionName", "s"}}), "ValidationError",
              "2 validation errors detected: Value null at 'roleArn' failed to satisfy constraint: Member must not be "
              "null; Value 's' at 'roleSessionName' failed to satisfy constraint: Member must have length greater "
              "than or equal to 2");
  ExpectError(Call(Alice(), "AssumeRole", {{"RoleArn", kRoleArn}, {"RoleSessionName", "s1"}, {"Policy", "{not json"}}),
              "MalformedPolicyDocument", "This policy contains invalid Json");
  ExpectError(Call(Alice(), "AssumeRole",
                   {{"RoleArn", kRoleArn},
                    {"RoleSessionName", "s1"},
                    {"Policy", R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*"}]})"}}),
              "MalformedPolicyDocument", "Policy statement must contain resources.");
  ExpectError(Call(Alice(), "AssumeRole",
                   {{"RoleArn", kRoleArn},
                    {"RoleSessionName", "s1"},
                    {"Tags.member.1.Key", "Team"},
                    {"Tags.member.1.Value", "a"},
                    {"Tags.member.2.Key", "team"},
                    {"Tags.member.2.Value", "b"}}),
              "InvalidParameterValue", "Duplicate tag keys found. Please note that Tag keys are case insensitive.");
}

TEST_F(StsServiceTest, RoleChainingIsCappedAtAnHour) {
  auto first = Call(Alice(), "AssumeRole", {{"RoleArn", kRoleArn}, {"RoleSessionName", "s1"}});
  ASSERT_TRUE(first.ok());
  aws::Principal session = PrincipalOf(*first);
  ExpectError(Call(session, "AssumeRole", {{"RoleArn", kRoleArn}, {"RoleSessionName", "s2"}, {"DurationSeconds", "3601"}}),
              "ValidationError",
              "The requested DurationSeconds exceeds the 1 hour session limit for roles assumed by role chaining.");
  auto chained = Call(session, "AssumeRole", {{"RoleArn", kRoleArn}, {"RoleSessionName", "s2"}});
  ASSERT_TRUE(chained.ok()) << chained.status().ToString();
  EXPECT_EQ(Element(*chained, "Arn"), "arn:aws:sts::123456789012:assumed-role/deployer/s2");
}

TEST_F(StsServiceTest, IssueRoleSessionIsTheInternalPathForTaskRoles) {
  auto c = sessions_.IssueRoleSession(AccountId(kAccount), roles_.role, RoleSessionSpec{"0123abcd", "", {}, {}, ""},
                                      6h, clock_.Now());
  ASSERT_TRUE(c.ok());
  auto who = Call(c->principal, "GetCallerIdentity", {});
  ASSERT_TRUE(who.ok());
  EXPECT_EQ(Element(*who, "Arn"), "arn:aws:sts::123456789012:assumed-role/deployer/0123abcd");
}

// Through the API front: STS's own error names and statuses for temporary credentials.
class StsFrontTest : public StsServiceTest {
 protected:
  StsFrontTest() {
    front_ = std::make_unique<aws::ApiFront>(aws::FrontOptions{}, clock_, credentials_);
    front_->AddQueryService(&service_);
  }
  http::Response Post(const IssuedCredentials& c, std::optional<std::string> token, std::string body) {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", "localhost:4566"}, {"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
    if (token) req.headers.push_back({"X-Amz-Security-Token", *token});
    req.body = std::move(body);
    aws::SignRequest(req, {c.access_key_id.str(), c.secret_access_key}, "ap-south-2", "sts", clock_.Now());
    return front_->Handle(req);
  }
  std::unique_ptr<aws::ApiFront> front_;
};

TEST_F(StsFrontTest, TemporaryCredentialsNeedTheirTokenAndStopAtExpiry) {
  auto c = sessions_.IssueSessionToken(Alice(), 900s, clock_.Now());
  ASSERT_TRUE(c.ok());
  const std::string body = "Action=GetCallerIdentity&Version=2011-06-15";
  http::Response ok = Post(*c, c->session_token, body);
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(Element(ok.body, "Arn"), "arn:aws:iam::123456789012:user/alice");

  for (const std::optional<std::string>& token : {std::optional<std::string>(), std::optional<std::string>("wrong")}) {
    http::Response r = Post(*c, token, body);
    EXPECT_EQ(r.status, 403);
    EXPECT_EQ(Element(r.body, "Code"), "InvalidClientTokenId");
    EXPECT_EQ(Element(r.body, "Message"), "The security token included in the request is invalid.");
    EXPECT_EQ(r.GetHeader("x-amzn-ErrorType"), "InvalidClientTokenId");
  }
  clock_.Advance(900s);
  http::Response expired = Post(*c, c->session_token, body);
  EXPECT_EQ(expired.status, 403);
  EXPECT_EQ(Element(expired.body, "Code"), "ExpiredToken");
  EXPECT_EQ(Element(expired.body, "Message"), "The security token included in the request is expired");

  http::Response assume = Post(*c, c->session_token, body);  // still expired, any action
  EXPECT_EQ(Element(assume.body, "Code"), "ExpiredToken");
}

TEST_F(StsFrontTest, OtherAuthenticationFailuresUseStsCodes) {
  auto c = sessions_.IssueSessionToken(Alice(), 900s, clock_.Now());
  ASSERT_TRUE(c.ok());
  IssuedCredentials wrong_secret = *c;
  wrong_secret.secret_access_key = "not-the-secret";
  http::Response r = Post(wrong_secret, c->session_token, "Action=GetCallerIdentity&Version=2011-06-15");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(Element(r.body, "Code"), "SignatureDoesNotMatch");
  IssuedCredentials unknown = *c;
  unknown.access_key_id = AccessKeyId("ASIAUNKNOWNKEY000000");
  r = Post(unknown, c->session_token, "Action=GetCallerIdentity&Version=2011-06-15");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(Element(r.body, "Code"), "InvalidClientTokenId");
}

TEST_F(StsFrontTest, AccessDeniedIs403) {
  auto c = sessions_.IssueSessionToken(Alice(), 900s, clock_.Now());
  ASSERT_TRUE(c.ok());
  http::Response r = Post(*c, c->session_token, "Action=GetSessionToken&Version=2011-06-15");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(Element(r.body, "Code"), "AccessDenied");
  EXPECT_EQ(Element(r.body, "Message"), "Cannot call GetSessionToken with session credentials");
}

}  // namespace
}  // namespace paddock::sts::api

namespace paddock::sts {
namespace {

TEST(QueryModelTest, DecodesListsOfStructuresAndReportsNestedErrors) {
  auto model = aws::QueryModel::Parse(StsModelJson(), sts::Error::kValidation);
  ASSERT_TRUE(model.ok());
  auto in = (*model)->Decode("AssumeRole", {{"RoleArn", "arn:aws:iam::123456789012:role/r"},
                                            {"RoleSessionName", "s1"},
                                            {"Tags.member.1.Key", "a"},
                                            {"Tags.member.1.Value", "1"},
                                            {"Tags.member.2.Key", "b"},
                                            {"Tags.member.2.Value", ""},
                                            {"PolicyArns.member.1.arn", "arn:aws:iam::aws:policy/ReadOnlyAccess"},
                                            {"DurationSeconds", "900"},
                                            {"Unknown", "dropped"}});
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(boost::json::serialize(*in),
            R"({"DurationSeconds":900,"PolicyArns":[{"arn":"arn:aws:iam::aws:policy/ReadOnlyAccess"}],)"
            R"("RoleArn":"arn:aws:iam::123456789012:role/r","RoleSessionName":"s1",)"
            R"("Tags":[{"Key":"a","Value":"1"},{"Key":"b","Value":""}]})");

  auto missing = (*model)->Decode("AssumeRole", {{"RoleArn", "arn:aws:iam::123456789012:role/r"},
                                                 {"RoleSessionName", "s1"},
                                                 {"Tags.member.1.Key", "a"},
                                                 {"DurationSeconds", "x"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(api::Answer(missing.status()).type, "ValidationError");
  EXPECT_EQ(missing.status().message(),
            "2 validation errors detected: Value 'x' at 'durationSeconds' failed to satisfy constraint: Member must "
            "be a number; Value null at 'tags.1.member.value' failed to satisfy constraint: Member must not be null");

  aws::QueryParams many = {{"RoleArn", "arn:aws:iam::123456789012:role/r"}, {"RoleSessionName", "s1"}};
  for (int i = 1; i <= 51; ++i) {
    many.emplace_back(fmt::format("Tags.member.{}.Key", i), fmt::format("k{}", i));
    many.emplace_back(fmt::format("Tags.member.{}.Value", i), "v");
  }
  auto too_many = (*model)->Decode("AssumeRole", many);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("at 'tags' failed to satisfy constraint: Member must have length less "
                                             "than or equal to 50"),
            std::string::npos)
      << too_many.status().message();
}

}  // namespace
}  // namespace paddock::sts
