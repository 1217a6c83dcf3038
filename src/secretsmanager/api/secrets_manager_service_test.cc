// Secrets Manager end to end through the real front: a real SQLite store, a real HTTP server,
// SigV4-signed requests checked against stored account keys, the embedded model validating every
// input, and a recording authorizer standing in for IAM's (the questions the front asks are the
// adapter's; what a policy answers is iam/api's, tested there and in tests/test_secretsmanager.py).
#include "secretsmanager/api/secrets_manager_service.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "kms/keyring.h"
#include "secretsmanager/schema.h"
#include "testing/toy_front_fixture.h"

namespace paddock::secretsmanager {
namespace {

namespace json = boost::json;

class SecretsManagerServiceTest : public testing::ToyFrontTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenStore("secretsmanager"));  // the node's schemas hold secretsmanager's
    keys_ = kms::KeyRing::InMemory({{1, std::string(32, 'k')}});
    secrets_ = std::make_unique<Secrets>(*store_, *keys_, SystemClock::Get());
    service_ = std::make_unique<api::SecretsManagerService>(*secrets_, aws::TokenCodec(std::string(32, 't')));
    aws::FrontOptions options;
    options.authorizer = &authorizer_;
    CreateFront(options);
    front_->AddJsonService(service_.get());  // the registration: one line
    ASSERT_NO_FATAL_FAILURE(StartServer());
  }

  http::Response Call(std::string_view action, const json::object& body, const iam::AccessKey* as = nullptr) {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", "localhost"},
                   {"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", "secretsmanager." + std::string(action)}};
    req.body = json::serialize(body);
    if (as == nullptr) return SignAndSend(std::move(req), "secretsmanager");
    aws::SignRequest(req, {as->id.str(), as->secret}, "eu-west-1", "secretsmanager", SystemClock::Get().Now());
    auto r = client_->Send(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : http::Response{};
  }

  static std::string Type(const http::Response& r) { return std::string(Body(r).at("__type").as_string()); }
  static std::string Message(const http::Response& r) { return std::string(Body(r).at("message").as_string()); }

  testing::RecordingAuthorizer authorizer_;
  std::unique_ptr<kms::KeyRing> keys_;
  std::unique_ptr<Secrets> secrets_;
  std::unique_ptr<api::SecretsManagerService> service_;
};

constexpr std::string_view kToken = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa";

TEST_F(SecretsManagerServiceTest, StringAndBinaryValuesRoundTrip) {
  http::Response made =
      Call("CreateSecret", {{"Name", "db/pw"}, {"SecretString", "hunter2"}, {"ClientRequestToken", kToken}});
  ASSERT_EQ(made.status, 200) << made.body;
  json::object m = Body(made);
  EXPECT_EQ(m.at("Name").as_string(), "db/pw");
  EXPECT_EQ(m.at("VersionId").as_string(), kToken);
  const std::string arn(m.at("ARN").as_string());
  EXPECT_TRUE(arn.starts_with("arn:aws:secretsmanager:eu-west-1:" + key_.account.str() + ":secret:db/pw-")) << arn;

  http::Response got = Call("GetSecretValue", {{"SecretId", arn}});
  ASSERT_EQ(got.status, 200) << got.body;
  json::object g = Body(got);
  EXPECT_EQ(g.at("SecretString").as_string(), "hunter2");
  EXPECT_EQ(g.at("VersionStages"), (json::array{"AWSCURRENT"}));
  EXPECT_TRUE(g.at("CreatedDate").is_double());

  // "AAEC/w==" is the bytes 00 01 02 ff.
  ASSERT_EQ(Call("PutSecretValue", {{"SecretId", "db/pw"}, {"SecretBinary", "AAEC/w=="}}).status, 200);
  http::Response bin = Call("GetSecretValue", {{"SecretId", "db/pw"}});
  ASSERT_EQ(bin.status, 200) << bin.body;
  EXPECT_EQ(Body(bin).at("SecretBinary").as_string(), "AAEC/w==");
  EXPECT_FALSE(Body(bin).contains("SecretString"));
  auto stored = secrets_->GetValue(Scope{key_.account, Region("eu-west-1")}, "db/pw", {});
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->value, SecretValue::Binary(std::string("\0\1\2\xff", 4)));

  http::Response replica =
      Call("CreateSecret", {{"Name", "r"}, {"AddReplicaRegions", json::array{json::object{{"Region", "us-west-2"}}}}});
  EXPECT_EQ(Type(replica), "InvalidParameterException") << replica.body;

  http::Response both =
      Call("PutSecretValue", {{"SecretId", "db/pw"}, {"SecretBinary", "AA=="}, {"SecretString", "x"}});
  EXPECT_EQ(Type(both), "InvalidParameterException") << both.body;
}

TEST_F(SecretsManagerServiceTest, OwnerFailuresCarrySecretsManagersCodesAndTexts) {
  http::Response missing = Call("GetSecretValue", {{"SecretId", "nothing"}});
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(Type(missing), "ResourceNotFoundException");
  EXPECT_EQ(Message(missing), "Secrets Manager can't find the specified secret.");

  ASSERT_EQ(Call("CreateSecret", {{"Name", "s"}, {"SecretString", "v"}, {"ClientRequestToken", kToken}}).status, 200);
  http::Response retry = Call("CreateSecret", {{"Name", "s"}, {"SecretString", "v"}, {"ClientRequestToken", kToken}});
  EXPECT_EQ(retry.status, 200) << retry.body;
  http::Response conflict =
      Call("CreateSecret", {{"Name", "s"}, {"SecretString", "other"}, {"ClientRequestToken", kToken}});
  EXPECT_EQ(Type(conflict), "ResourceExistsException") << conflict.body;

  ASSERT_EQ(Call("DeleteSecret", {{"SecretId", "s"}, {"RecoveryWindowInDays", 7}}).status, 200);
  http::Response marked = Call("GetSecretValue", {{"SecretId", "s"}});
  EXPECT_EQ(Type(marked), "InvalidRequestException");
  EXPECT_EQ(Message(marked), "You can't perform this operation on the secret because it was marked for deletion.");
  http::Response described = Call("DescribeSecret", {{"SecretId", "s"}});
  ASSERT_EQ(described.status, 200) << described.body;
  EXPECT_TRUE(Body(described).contains("DeletedDate"));
  http::Response window =
      Call("DeleteSecret", {{"SecretId", "s"}, {"RecoveryWindowInDays", 7}, {"ForceDeleteWithoutRecovery", true}});
  EXPECT_EQ(Type(window), "InvalidParameterException") << window.body;
  ASSERT_EQ(Call("RestoreSecret", {{"SecretId", "s"}}).status, 200);
  EXPECT_EQ(Call("GetSecretValue", {{"SecretId", "s"}}).status, 200);

  // The model refuses a token outside 32-64 characters before the owner sees it.
  http::Response short_token =
      Call("PutSecretValue", {{"SecretId", "s"}, {"SecretString", "v"}, {"ClientRequestToken", "short"}});
  EXPECT_EQ(short_token.status, 400) << short_token.body;
}

TEST_F(SecretsManagerServiceTest, AnotherAccountNeitherReadsNorListsNorChangesASecret) {
  http::Response made = Call("CreateSecret", {{"Name", "mine"}, {"SecretString", "v"}});
  ASSERT_EQ(made.status, 200) << made.body;
  const std::string arn(Body(made).at("ARN").as_string());

  auto other = accounts_->CreateAccount(std::nullopt, "other");
  ASSERT_TRUE(other.ok());
  auto other_key = accounts_->CreateAccessKey(other->id);
  ASSERT_TRUE(other_key.ok());
  for (const std::string& id : {arn, std::string("mine")}) {
    for (std::string_view action : {"GetSecretValue", "DescribeSecret", "ListSecretVersionIds", "RestoreSecret"}) {
      http::Response r = Call(action, {{"SecretId", id}}, &*other_key);
      EXPECT_EQ(Type(r), "ResourceNotFoundException") << action << " " << id << ": " << r.body;
    }
    EXPECT_EQ(Type(Call("PutSecretValue", {{"SecretId", id}, {"SecretString", "x"}}, &*other_key)),
              "ResourceNotFoundException");
    EXPECT_EQ(Type(Call("DeleteSecret", {{"SecretId", id}, {"ForceDeleteWithoutRecovery", true}}, &*other_key)),
              "ResourceNotFoundException");
    EXPECT_EQ(
        Type(Call("TagResource", {{"SecretId", id}, {"Tags", json::array{json::object{{"Key", "k"}, {"Value", "v"}}}}},
                  &*other_key)),
        "ResourceNotFoundException");
  }
  http::Response listed = Call("ListSecrets", {{"IncludePlannedDeletion", true}}, &*other_key);
  ASSERT_EQ(listed.status, 200) << listed.body;
  EXPECT_TRUE(Body(listed).at("SecretList").as_array().empty());
  // The owner's secret is untouched.
  http::Response got = Call("GetSecretValue", {{"SecretId", arn}});
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(Body(got).at("SecretString").as_string(), "v");
  EXPECT_FALSE(Body(Call("DescribeSecret", {{"SecretId", arn}})).contains("Tags"));
}

TEST_F(SecretsManagerServiceTest, TheFrontAuthorizesEachCallOnTheSecretsArn) {
  http::Response made = Call("CreateSecret", {{"Name", "app/key"}, {"SecretString", "v"},
                                              {"Tags", json::array{json::object{{"Key", "team"}, {"Value", "red"}}}}});
  ASSERT_EQ(made.status, 200) << made.body;
  const std::string arn(Body(made).at("ARN").as_string());
  {
    const std::vector<aws::AuthRequest> asked = authorizer_.TakeRequests();
    ASSERT_EQ(asked.size(), 1u);
    const aws::AuthRequest& q = asked[0];
    EXPECT_EQ(q.action, "secretsmanager:CreateSecret");
    EXPECT_EQ(q.resource, "arn:aws:secretsmanager:eu-west-1:" + key_.account.str() + ":secret:app/key-??????");
    EXPECT_NE(std::find(q.context.begin(), q.context.end(),
                        std::pair<std::string, std::string>{"aws:RequestTag/team", "red"}),
              q.context.end());
  }
  // By name, partial ARN and full ARN, the question names the full ARN, with its tags.
  for (const std::string& id : {std::string("app/key"), arn.substr(0, arn.size() - 7), arn}) {
    ASSERT_EQ(Call("GetSecretValue", {{"SecretId", id}}).status, 200);
    const std::vector<aws::AuthRequest> asked = authorizer_.TakeRequests();
    ASSERT_EQ(asked.size(), 1u);
    EXPECT_EQ(asked[0].action, "secretsmanager:GetSecretValue");
    EXPECT_EQ(asked[0].resource, arn);
    auto tags = asked[0].resource_tags();
    ASSERT_TRUE(tags.ok());
    EXPECT_EQ(*tags, (std::vector<std::pair<std::string, std::string>>{{"team", "red"}}));
  }
  // A denial answers AccessDeniedException and runs nothing.
  authorizer_.Deny([arn](std::string_view resource) { return resource == arn; });
  http::Response denied = Call("PutSecretValue", {{"SecretId", "app/key"}, {"SecretString", "new"}});
  EXPECT_EQ(Type(denied), "AccessDeniedException") << denied.body;
  authorizer_.Deny(nullptr);
  EXPECT_EQ(Body(Call("GetSecretValue", {{"SecretId", "app/key"}})).at("SecretString").as_string(), "v");
  // ListSecrets names no resource.
  authorizer_.TakeRequests();
  ASSERT_EQ(Call("ListSecrets", {}).status, 200);
  const std::vector<aws::AuthRequest> asked = authorizer_.TakeRequests();
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].resource, "*");
}

TEST_F(SecretsManagerServiceTest, ListSecretsPagesWithSealedTokens) {
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Call("CreateSecret", {{"Name", "s" + std::to_string(i)}}).status, 200);
  std::vector<std::string> names;
  json::object request{{"MaxResults", 2}};
  for (int pages = 0; pages < 10; ++pages) {
    http::Response page = Call("ListSecrets", request);
    ASSERT_EQ(page.status, 200) << page.body;
    const json::object body = Body(page);
    for (const json::value& s : body.at("SecretList").as_array()) names.emplace_back(s.at("Name").as_string());
    if (!body.contains("NextToken")) break;
    request["NextToken"] = body.at("NextToken");
  }
  EXPECT_EQ(names, (std::vector<std::string>{"s0", "s1", "s2", "s3", "s4"}));
  http::Response bad = Call("ListSecrets", {{"NextToken", "bogus"}});
  EXPECT_EQ(Type(bad), "InvalidNextTokenException") << bad.body;
  // A token is bound to its filters.
  http::Response first = Call("ListSecrets", {{"MaxResults", 1}});
  json::object filtered{{"NextToken", Body(first).at("NextToken")},
                        {"Filters", json::array{json::object{{"Key", "name"}, {"Values", json::array{"s"}}}}}};
  EXPECT_EQ(Type(Call("ListSecrets", filtered)), "InvalidNextTokenException");
}

}  // namespace
}  // namespace paddock::secretsmanager
