#include "iam/api/iam_service.h"

#include <gtest/gtest.h>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"

namespace paddock::iam::api {
namespace {

constexpr char kTrust[] = R"({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"}, "Action": "sts:AssumeRole"}]})";

class IamServiceTest : public ::testing::Test {
 protected:
  IamServiceTest() : dir_(*store_, clock_), accounts_(*store_, clock_) {
    account_ = accounts_.CreateAccount(std::nullopt, "dev")->id;
    service_ = std::move(IamService::Create(dir_, accounts_).value());
  }
  StatusOr<std::string> Call(const std::string& action, aws::QueryParams params) {
    aws::CallContext ctx;
    ctx.scope = Scope{account_, Region("us-east-1")};
    ctx.principal.account = account_;
    ctx.principal.arn = RootArn(account_);
    ctx.request_id = "req-1";
    ctx.action = action;
    params.emplace_back("Action", action);
    return service_->Call(ctx, params);
  }

  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  Directory dir_;
  Accounts accounts_;
  AccountId account_;
  std::unique_ptr<IamService> service_;
};

TEST_F(IamServiceTest, CreateRoleAnswersXmlWithUrlEncodedDocument) {
  auto body = Call("CreateRole", {{"RoleName", "app"},
                                  {"AssumeRolePolicyDocument", kTrust},
                                  {"Tags.member.1.Key", "team"},
                                  {"Tags.member.1.Value", "a b"}});
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_NE(body->find("<CreateRoleResponse xmlns=\"https://iam.amazonaws.com/doc/2010-05-08/\"><CreateRoleResult><Role>"),
            std::string::npos);
  EXPECT_NE(body->find("<AssumeRolePolicyDocument>%7B%22Version%22%3A%20%222012-10-17%22%2C%20%22Statement%22%3A%20%5B%7B%22Effect%22%3A%20%22Allow%22%2C%20%22Principal%22%3A%20%7B%22Service%22%3A%20%22ecs-tasks.amazonaws.com%22%7D%2C%20%22Action%22%3A%20%22sts%3AAssumeRole%22%7D%5D%7D"
                       "</AssumeRolePolicyDocument>"),
            std::string::npos);
  EXPECT_NE(body->find("<Tags><member><Key>team</Key><Value>a b</Value></member></Tags>"), std::string::npos);
  EXPECT_NE(body->find("<ResponseMetadata><RequestId>req-1</RequestId></ResponseMetadata></CreateRoleResponse>"),
            std::string::npos);
}

TEST_F(IamServiceTest, ModelValidationGivesIamsMessages) {
  auto missing = Call("CreateRole", {{"RoleName", "app"}});
  EXPECT_TRUE(IsError(missing.status(), Error::kValidation));
  EXPECT_EQ(missing.status().message(),
            "1 validation error detected: Value null at 'assumeRolePolicyDocument' failed to satisfy constraint: Member "
            "must not be null");
  auto pattern = Call("CreateRole", {{"RoleName", "bad name!"}, {"AssumeRolePolicyDocument", kTrust}});
  EXPECT_EQ(pattern.status().message(),
            "1 validation error detected: Value 'bad name!' at 'roleName' failed to satisfy constraint: Member must "
            "satisfy regular expression pattern: [\\w+=,.@-]+");
  auto range = Call("CreateRole", {{"RoleName", "app"}, {"AssumeRolePolicyDocument", kTrust}, {"MaxSessionDuration", "60"}});
  EXPECT_EQ(range.status().message(),
            "1 validation error detected: Value '60' at 'maxSessionDuration' failed to satisfy constraint: Member must "
            "have value greater than or equal to 3600");
  auto path = Call("CreateRole", {{"RoleName", "app"}, {"AssumeRolePolicyDocument", kTrust}, {"Path", "/no-trailing"}});
  EXPECT_TRUE(IsError(path.status(), Error::kValidation));
  EXPECT_TRUE(Call("CreateRole", {{"RoleName", "app"}, {"AssumeRolePolicyDocument", kTrust}, {"Path", "/a/b/"}}).ok());
}

// GetContextKeysFor*Policy: the keys the policies read, as first written, each once ignoring case,
// the entity's stored policies before PolicyInputList.
TEST_F(IamServiceTest, ContextKeysAreThePoliciesKeysOnceAsFirstWritten) {
  constexpr char kTagged[] = R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"ecs:*",)"
                             R"("Resource":"arn:aws:ecs:*:*:cluster/${aws:username}",)"
                             R"("Condition":{"StringEquals":{"aws:ResourceTag/Team":"blue"}}}]})";
  constexpr char kInput[] = R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*",)"
                            R"("Resource":"*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"},)"
                            R"("StringLike":{"aws:resourcetag/team":"b*"}}}]})";
  auto custom = Call("GetContextKeysForCustomPolicy", {{"PolicyInputList.member.1", kInput}});
  ASSERT_TRUE(custom.ok()) << custom.status().ToString();
  EXPECT_NE(custom->find("<GetContextKeysForCustomPolicyResult><ContextKeyNames><member>aws:SourceIp</member>"
                         "<member>aws:resourcetag/team</member></ContextKeyNames></GetContextKeysForCustomPolicyResult>"),
            std::string::npos)
      << *custom;
  ASSERT_TRUE(Call("CreateUser", {{"UserName", "alice"}}).ok());
  ASSERT_TRUE(Call("PutUserPolicy", {{"UserName", "alice"}, {"PolicyName", "p"}, {"PolicyDocument", kTagged}}).ok());
  auto principal = Call("GetContextKeysForPrincipalPolicy",
                        {{"PolicySourceArn", "arn:aws:iam::" + account_.str() + ":user/alice"},
                         {"PolicyInputList.member.1", kInput}});
  ASSERT_TRUE(principal.ok()) << principal.status().ToString();
  EXPECT_NE(principal->find("<ContextKeyNames><member>aws:username</member><member>aws:ResourceTag/Team</member>"
                            "<member>aws:SourceIp</member></ContextKeyNames>"),
            std::string::npos)
      << *principal;
  auto bad = Call("GetContextKeysForCustomPolicy", {{"PolicyInputList.member.1", "{"}});
  EXPECT_TRUE(IsError(bad.status(), Error::kInvalidInput));
  EXPECT_EQ(bad.status().message(), "PolicyInputList.1: This policy contains invalid Json");
}

TEST_F(IamServiceTest, GetUserWithoutNameIsTheRootUser) {
  auto body = Call("GetUser", {});
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_NE(body->find("<User><UserId>" + account_.str() + "</UserId><Arn>arn:aws:iam::" + account_.str() + ":root</Arn>"),
            std::string::npos);
}

}  // namespace
}  // namespace paddock::iam::api
