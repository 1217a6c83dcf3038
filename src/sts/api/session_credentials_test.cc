// sts::Sessions as the API front authenticates them (through sts::api::SessionCredentials and
// the real SigV4 verifier), and the owner's reaping.
#include "sts/api/session_credentials.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "aws/errors.h"
#include "aws/sigv4.h"
#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"
#include "store/sqlite/sqlite_store.h"
#include "sts/schema.h"
#include "sts/sessions.h"

namespace paddock::sts {
namespace {

using namespace std::chrono_literals;

aws::Principal Root(const std::string& account) {
  aws::Principal p;
  p.account = AccountId(account);
  p.arn = "arn:aws:iam::" + account + ":root";
  p.kind = aws::PrincipalKind::kRoot;
  p.user_id = account;
  return p;
}

aws::Principal User(const std::string& account, const std::string& name) {
  aws::Principal p;
  p.account = AccountId(account);
  p.arn = "arn:aws:iam::" + account + ":user/" + name;
  p.kind = aws::PrincipalKind::kUser;
  p.user_id = "AIDAEXAMPLEUSERID0001";
  p.user_name = name;
  return p;
}

AssumableRole Role() {
  return AssumableRole{"arn:aws:iam::123456789012:role/ops/deployer", "AROAEXAMPLEROLEID0001", "deployer", "{}", 7200};
}

// Requests signed with temporary credentials, verified as the API front verifies them.
class SessionAuthTest : public ::testing::Test {
 protected:
  http::Request Signed(const IssuedCredentials& c, std::optional<std::string> token) {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", "localhost:4566"}, {"Content-Type", "application/x-www-form-urlencoded"}};
    if (token) req.headers.push_back({"X-Amz-Security-Token", *token});
    req.body = "Action=GetCallerIdentity&Version=2011-06-15";
    aws::SignRequest(req, {c.access_key_id.str(), c.secret_access_key}, "us-east-1", "sts", clock_.Now());
    return req;
  }

  testing::FakeClock clock_;
  testing::TempStore store_;
  Sessions sessions_{*store_};
  api::SessionCredentials credentials_{sessions_};
  aws::SigV4Verifier verifier_{clock_, credentials_, aws::VerifierOptions{}};
};

TEST_F(SessionAuthTest, MintsAsiaKeysSecretsAndOpaqueTokens) {
  auto c = sessions_.IssueSessionToken(Root("123456789012"), 900s, clock_.Now());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(std::regex_match(c->access_key_id.str(), std::regex("ASIA[A-Z0-9]{16}"))) << c->access_key_id.str();
  EXPECT_EQ(c->secret_access_key.size(), 40u);
  EXPECT_GE(c->session_token.size(), 128u);
  EXPECT_EQ(c->expiration, clock_.Now() + 900s);
  auto d = sessions_.IssueSessionToken(Root("123456789012"), 900s, clock_.Now());
  ASSERT_TRUE(d.ok());
  EXPECT_NE(c->access_key_id, d->access_key_id);
  EXPECT_NE(c->session_token, d->session_token);

  // The store holds the token's hash, never the token.
  auto found = sessions_.Find(c->access_key_id);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->session_token_sha256, aws::Sha256Hex(c->session_token));
  EXPECT_EQ((*found)->expires, c->expiration);
  EXPECT_EQ((*found)->secret_access_key, c->secret_access_key);
  bool token_stored = false;
  ASSERT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
                       auto rows = txn.Scan("sts_sessions", {"", ""}, 100);
                       if (!rows.ok()) return rows.status();
                       for (const auto& row : *rows)
                         if (row.value.find(c->session_token) != std::string::npos) token_stored = true;
                       return OkStatus();
                     })
                  .ok());
  EXPECT_FALSE(token_stored);
}

TEST_F(SessionAuthTest, GetSessionTokenActsAsTheCaller) {
  auto c = sessions_.IssueSessionToken(User("123456789012", "alice"), 3600s, clock_.Now());
  ASSERT_TRUE(c.ok());
  auto who = verifier_.Verify(Signed(*c, c->session_token), "sts");
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_EQ(who->principal.arn, "arn:aws:iam::123456789012:user/alice");
  EXPECT_EQ(who->principal.kind, aws::PrincipalKind::kFederatedUser);
  EXPECT_EQ(who->principal.user_id, "AIDAEXAMPLEUSERID0001");
  EXPECT_EQ(who->principal.user_name, "alice");
  EXPECT_EQ(who->principal.access_key_id, c->access_key_id);
  EXPECT_EQ(who->principal.account, AccountId("123456789012"));

  // A session may not mint another session.
  auto again = sessions_.IssueSessionToken(who->principal, 3600s, clock_.Now());
  EXPECT_EQ(again.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(again.status().message(), "Cannot call GetSessionToken with session credentials");
}

TEST_F(SessionAuthTest, RoleSessionsAreAssumedRolePrincipals) {
  RoleSessionSpec spec;
  spec.session_name = "build-42";
  spec.session_policy = R"({"Version":"2012-10-17","Statement":[]})";
  spec.policy_arns = {"arn:aws:iam::aws:policy/ReadOnlyAccess"};
  spec.tags = {{"team", "blue"}};
  spec.source_identity = "alice";
  auto c = sessions_.IssueRoleSession(AccountId("123456789012"), Role(), spec, 3600s, clock_.Now());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto who = verifier_.Verify(Signed(*c, c->session_token), "sts");
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  const aws::Principal& p = who->principal;
  EXPECT_EQ(p.kind, aws::PrincipalKind::kAssumedRole);
  EXPECT_EQ(p.arn, "arn:aws:sts::123456789012:assumed-role/deployer/build-42");
  EXPECT_EQ(p.user_id, "AROAEXAMPLEROLEID0001:build-42");
  EXPECT_EQ(p.role_arn, "arn:aws:iam::123456789012:role/ops/deployer");
  EXPECT_EQ(p.session_name, "build-42");
  EXPECT_EQ(p.session_policy, spec.session_policy);
  EXPECT_EQ(p.session_policy_arns, spec.policy_arns);
  EXPECT_EQ(p.session_tags, spec.tags);
  EXPECT_EQ(p.source_identity, "alice");
}

// The attack: someone holding a session's access key id and secret (a log, a leaked env var)
// but not its token, or a token from another session, is refused.
TEST_F(SessionAuthTest, MissingOrWrongTokenIsRefused) {
  auto c = sessions_.IssueSessionToken(Root("123456789012"), 3600s, clock_.Now());
  auto other = sessions_.IssueSessionToken(Root("123456789012"), 3600s, clock_.Now());
  ASSERT_TRUE(c.ok() && other.ok());
  for (const std::optional<std::string>& token :
       {std::optional<std::string>(), std::optional<std::string>(other->session_token),
        std::optional<std::string>(c->session_token + "x"), std::optional<std::string>("")}) {
    auto who = verifier_.Verify(Signed(*c, token), "sts");
    ASSERT_FALSE(who.ok());
    EXPECT_EQ(aws::AwsErrorFor(who.status()).type, "UnrecognizedClientException");
    EXPECT_EQ(who.status().message(), "The security token included in the request is invalid.");
  }
  EXPECT_TRUE(verifier_.Verify(Signed(*c, c->session_token), "sts").ok());
}

TEST_F(SessionAuthTest, StopsAuthenticatingAtExpiry) {
  auto c = sessions_.IssueSessionToken(Root("123456789012"), 900s, clock_.Now());
  ASSERT_TRUE(c.ok());
  clock_.Advance(899s);
  EXPECT_TRUE(verifier_.Verify(Signed(*c, c->session_token), "sts").ok());
  clock_.Advance(1s);
  auto who = verifier_.Verify(Signed(*c, c->session_token), "sts");
  ASSERT_FALSE(who.ok());
  EXPECT_EQ(aws::AwsErrorFor(who.status()).type, "ExpiredTokenException");
  EXPECT_EQ(who.status().message(), "The security token included in the request is expired");
  // A wrong token on an expired session still reads as invalid: expiry is told only to holders.
  auto wrong = verifier_.Verify(Signed(*c, std::string("nope")), "sts");
  EXPECT_EQ(aws::AwsErrorFor(wrong.status()).type, "UnrecognizedClientException");
}

TEST_F(SessionAuthTest, ReapExpiredIsBoundedAndKeepsTheRecentlyExpired) {
  std::vector<IssuedCredentials> issued;
  for (int i = 0; i < 5; ++i) {
    auto c = sessions_.IssueSessionToken(Root("123456789012"), 900s, clock_.Now());
    ASSERT_TRUE(c.ok());
    issued.push_back(*c);
  }
  auto live = sessions_.IssueSessionToken(Root("123456789012"), 36h, clock_.Now());
  ASSERT_TRUE(live.ok());
  clock_.Advance(901s);
  auto none = sessions_.ReapExpired(clock_.Now());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0u);  // expired, but within kExpiredRetention: still answers ExpiredToken
  EXPECT_TRUE(sessions_.Find(issued[0].access_key_id)->has_value());

  clock_.Advance(Sessions::kExpiredRetention);
  auto first = sessions_.ReapExpired(clock_.Now(), 3);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 3u);
  auto rest = sessions_.ReapExpired(clock_.Now(), 3);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(*rest, 2u);
  for (const auto& c : issued) EXPECT_FALSE(sessions_.Find(c.access_key_id)->has_value());
  EXPECT_TRUE(sessions_.Find(live->access_key_id)->has_value());
  EXPECT_TRUE(verifier_.Verify(Signed(*live, live->session_token), "sts").ok());
}

TEST_F(SessionAuthTest, ReapAccountRemovesOnlyThatAccountsSessions) {
  auto mine = sessions_.IssueSessionToken(Root("123456789012"), 3600s, clock_.Now());
  auto role = sessions_.IssueRoleSession(AccountId("123456789012"), Role(), RoleSessionSpec{"s1", "", {}, {}, ""},
                                         3600s, clock_.Now());
  auto theirs = sessions_.IssueSessionToken(Root("210987654321"), 3600s, clock_.Now());
  ASSERT_TRUE(mine.ok() && role.ok() && theirs.ok());
  ASSERT_TRUE(sessions_.ReapAccount(AccountId("123456789012")).ok());
  EXPECT_FALSE(sessions_.Find(mine->access_key_id)->has_value());
  EXPECT_FALSE(sessions_.Find(role->access_key_id)->has_value());
  EXPECT_TRUE(sessions_.Find(theirs->access_key_id)->has_value());
  auto who = verifier_.Verify(Signed(*mine, mine->session_token), "sts");
  EXPECT_EQ(aws::AwsErrorFor(who.status()).type, "UnrecognizedClientException");
  // The expiry index went with them: a later sweep finds nothing of theirs.
  clock_.Advance(48h);
  auto reaped = sessions_.ReapExpired(clock_.Now());
  ASSERT_TRUE(reaped.ok());
  EXPECT_EQ(*reaped, 1u);
}

TEST(SessionsStoreTest, SessionsSurviveReopeningTheStore) {
  std::string dir = (std::filesystem::temp_directory_path() / "paddock-sts-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  store::SqliteOptions options;
  options.path = dir + "/state.db";
  options.schemas = {kSchema};
  testing::FakeClock clock;
  IssuedCredentials issued;
  {
    auto store = store::SqliteStore::Open(options);
    ASSERT_TRUE(store.ok());
    Sessions sessions(**store);
    auto c = sessions.IssueRoleSession(AccountId("123456789012"), Role(), RoleSessionSpec{"s1", "", {}, {{"k", "v"}}, ""},
                                       3600s, clock.Now());
    ASSERT_TRUE(c.ok());
    issued = *c;
    (*store)->Close();
  }
  {
    auto store = store::SqliteStore::Open(options);
    ASSERT_TRUE(store.ok());
    Sessions sessions(**store);
    auto found = sessions.Find(issued.access_key_id);
    ASSERT_TRUE(found.ok() && found->has_value());
    EXPECT_EQ((*found)->principal.arn, "arn:aws:sts::123456789012:assumed-role/deployer/s1");
    EXPECT_EQ((*found)->principal.session_tags, (std::vector<std::pair<std::string, std::string>>{{"k", "v"}}));
    EXPECT_EQ((*found)->session_token_sha256, aws::Sha256Hex(issued.session_token));
    EXPECT_EQ((*found)->expires, issued.expiration);
    (*store)->Close();
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace paddock::sts
