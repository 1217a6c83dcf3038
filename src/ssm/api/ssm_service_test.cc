// SSM's API end to end, as a client sees it: the real API front with SsmService registered by one
// line, a real SQLite store, a real HTTP server on an ephemeral port and SigV4-signed requests.
#include "ssm/api/ssm_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include <fmt/format.h>

#include "aws/sigv4.h"
#include "common/encoding.h"
#include "testing/toy_front_fixture.h"

namespace paddock::ssm {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

class SsmServiceTest : public testing::ToyFrontTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenStore("ssm"));  // ssm's tables are among the node's
    auto keys = kms::KeyRing::Open(dir_);  // a file, as the node's
    ASSERT_TRUE(keys.ok()) << keys.status().ToString();
    keys_ = std::move(*keys);
    auto module = api::SsmModule::Open(*store_, *keys_, "token-key-for-tests");
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    ssm_ = std::move(*module);
    aws::FrontOptions options;
    options.authorizer = &authorizer_;
    authorizer_.Deny([](std::string_view resource) { return resource.ends_with("/denied"); });
    CreateFront(options);
    front_->AddJsonService(&ssm_->service());  // the registration: one line
    ASSERT_NO_FATAL_FAILURE(StartServer());
  }

  http::Response Call(std::string_view action, const json::object& body, const iam::AccessKey* key = nullptr) {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", "localhost"},
                   {"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", "AmazonSSM." + std::string(action)}};
    req.body = json::serialize(body);
    if (key == nullptr) return SignAndSend(std::move(req), "ssm");
    aws::SignRequest(req, {key->id.str(), key->secret}, "eu-west-1", "ssm", SystemClock::Get().Now());
    auto r = client_->Send(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : http::Response{};
  }

  static std::string Type(const http::Response& r) { return std::string(Body(r).at("__type").as_string()); }
  static std::string Message(const http::Response& r) {
    const json::object b = Body(r);
    return b.contains("message") ? std::string(b.at("message").as_string()) : std::string();
  }

  testing::RecordingAuthorizer authorizer_;
  std::unique_ptr<kms::KeyRing> keys_;
  std::unique_ptr<api::SsmModule> ssm_;
};

TEST_F(SsmServiceTest, PutAndGetOverTheWire) {
  http::Response put = Call("PutParameter", {{"Name", "/app/password"}, {"Value", "hunter2"}, {"Type", "SecureString"}});
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(Body(put), (json::object{{"Version", 1}, {"Tier", "Standard"}}));

  http::Response sealed = Call("GetParameter", {{"Name", "/app/password"}});
  ASSERT_EQ(sealed.status, 200) << sealed.body;
  const json::object p = Body(sealed).at("Parameter").as_object();
  EXPECT_EQ(p.at("Name").as_string(), "/app/password");
  EXPECT_EQ(p.at("Type").as_string(), "SecureString");
  EXPECT_NE(p.at("Value").as_string(), "hunter2");
  EXPECT_EQ(p.at("ARN").as_string(), fmt::format("arn:aws:ssm:eu-west-1:{}:parameter/app/password", key_.account.str()));
  EXPECT_EQ(p.at("DataType").as_string(), "text");
  EXPECT_TRUE(p.at("LastModifiedDate").is_double());

  http::Response open = Call("GetParameter", {{"Name", "/app/password:1"}, {"WithDecryption", true}});
  ASSERT_EQ(open.status, 200) << open.body;
  EXPECT_EQ(Body(open).at("Parameter").at("Value").as_string(), "hunter2");
  EXPECT_EQ(Body(open).at("Parameter").at("Selector").as_string(), ":1");

  http::Response missing = Call("GetParameter", {{"Name", "/nope"}});
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(Type(missing), "ParameterNotFound");
  EXPECT_EQ(Message(missing), "");
  http::Response exists = Call("PutParameter", {{"Name", "/app/password"}, {"Value", "x"}});
  EXPECT_EQ(Type(exists), "ParameterAlreadyExists");
  // The model's bounds answer ValidationException, SSM's name for them.
  http::Response empty = Call("PutParameter", {{"Name", ""}, {"Value", "x"}});
  EXPECT_EQ(Type(empty), "ValidationException") << empty.body;
  http::Response reserved = Call("PutParameter", {{"Name", "/aws/x"}, {"Value", "x"}});
  EXPECT_EQ(Type(reserved), "AccessDeniedException");
  EXPECT_EQ(Message(reserved), "No access to reserved parameter name: /aws/x.");

  http::Response many = Call("GetParameters", {{"Names", json::array{"/app/password", "/nope"}}, {"WithDecryption", true}});
  ASSERT_EQ(many.status, 200) << many.body;
  EXPECT_EQ(Body(many).at("Parameters").as_array().size(), 1u);
  EXPECT_EQ(Body(many).at("InvalidParameters"), (json::array{"/nope"}));

  // History and paging through GetParametersByPath with a sealed NextToken.
  for (std::string n : {"/app/a", "/app/b", "/app/c"}) ASSERT_EQ(Call("PutParameter", {{"Name", n}, {"Value", "v"}}).status, 200);
  http::Response first = Call("GetParametersByPath", {{"Path", "/app"}, {"MaxResults", 2}});
  ASSERT_EQ(first.status, 200) << first.body;
  ASSERT_TRUE(Body(first).contains("NextToken"));
  http::Response second = Call("GetParametersByPath", {{"Path", "/app"}, {"MaxResults", 2},
                                                        {"NextToken", Body(first).at("NextToken")}});
  ASSERT_EQ(second.status, 200) << second.body;
  EXPECT_EQ(Body(second).at("Parameters").as_array().size(), 2u);
  EXPECT_FALSE(Body(second).contains("NextToken"));
  http::Response forged = Call("GetParametersByPath", {{"Path", "/app"}, {"NextToken", "bogus"}});
  EXPECT_EQ(Type(forged), "InvalidNextToken");

  http::Response deleted = Call("DeleteParameter", {{"Name", "/app/a"}});
  EXPECT_EQ(deleted.status, 200);
  http::Response gone = Call("DeleteParameter", {{"Name", "/app/a"}});
  EXPECT_EQ(Type(gone), "ParameterNotFound");
  EXPECT_EQ(Message(gone), "Parameter /app/a not found.");
}

TEST_F(SsmServiceTest, EveryCallIsAuthorizedOnTheParametersArn) {
  const std::string arn = fmt::format("arn:aws:ssm:eu-west-1:{}:parameter", key_.account.str());
  ASSERT_EQ(Call("PutParameter", {{"Name", "/a/b"}, {"Value", "v"}}).status, 200);
  ASSERT_EQ(Call("GetParameter", {{"Name", "/a/b:1"}}).status, 200);
  ASSERT_EQ(Call("GetParameters", {{"Names", json::array{"/a/b", "top"}}}).status, 200);
  ASSERT_EQ(Call("GetParametersByPath", {{"Path", "/a"}}).status, 200);
  ASSERT_EQ(Call("DescribeParameters", json::object{}).status, 200);
  ASSERT_EQ(Call("ListTagsForResource", {{"ResourceType", "Parameter"}, {"ResourceId", "/a/b"}}).status, 200);
  EXPECT_THAT(authorizer_.Take(),
              ElementsAre("ssm:PutParameter " + arn + "/a/b", "ssm:GetParameter " + arn + "/a/b",
                          "ssm:GetParameters " + arn + "/a/b", "ssm:GetParameters " + arn + "/top",
                          "ssm:GetParametersByPath " + arn + "/a", "ssm:DescribeParameters *",
                          "ssm:ListTagsForResource " + arn + "/a/b"));

  // A denied call reaches no owner: nothing is written.
  http::Response denied = Call("PutParameter", {{"Name", "/denied"}, {"Value", "v"}});
  EXPECT_EQ(denied.status, 400) << denied.body;
  EXPECT_EQ(Type(denied), "AccessDeniedException");
  EXPECT_THAT(Message(denied), ::testing::HasSubstr("ssm:PutParameter on resource: " + arn + "/denied"));
  EXPECT_FALSE(ssm_->parameters().Get(Scope{key_.account, Region("eu-west-1")}, "/denied", Decryption::kNo).ok());
  // One denied name fails the whole batch.
  EXPECT_EQ(Type(Call("GetParameters", {{"Names", json::array{"/a/b", "/denied"}}})), "AccessDeniedException");
}

TEST_F(SsmServiceTest, AnotherAccountSeesNoneOfThisAccountsParameters) {
  ASSERT_EQ(Call("PutParameter", {{"Name", "/team/secret"}, {"Value", "s3cr3t"}, {"Type", "SecureString"}}).status, 200);
  auto other_account = accounts_->CreateAccount(std::nullopt, "other");
  ASSERT_TRUE(other_account.ok());
  auto other = accounts_->CreateAccessKey(other_account->id);
  ASSERT_TRUE(other.ok());
  const std::string arn = fmt::format("arn:aws:ssm:eu-west-1:{}:parameter/team/secret", key_.account.str());

  EXPECT_EQ(Type(Call("GetParameter", {{"Name", "/team/secret"}, {"WithDecryption", true}}, &*other)),
            "ParameterNotFound");
  EXPECT_EQ(Type(Call("GetParameter", {{"Name", arn}, {"WithDecryption", true}}, &*other)), "ParameterNotFound");
  http::Response many = Call("GetParameters", {{"Names", json::array{"/team/secret", arn}}}, &*other);
  ASSERT_EQ(many.status, 200) << many.body;
  EXPECT_THAT(Body(many).at("Parameters").as_array(), IsEmpty());
  EXPECT_EQ(Body(many).at("InvalidParameters").as_array().size(), 2u);
  http::Response listed = Call("DescribeParameters", json::object{}, &*other);
  EXPECT_THAT(Body(listed).at("Parameters").as_array(), IsEmpty());
  http::Response by_path = Call("GetParametersByPath", {{"Path", "/"}, {"Recursive", true}}, &*other);
  EXPECT_THAT(Body(by_path).at("Parameters").as_array(), IsEmpty());
  EXPECT_EQ(Type(Call("GetParameterHistory", {{"Name", "/team/secret"}}, &*other)), "ParameterNotFound");
  EXPECT_EQ(Type(Call("DeleteParameter", {{"Name", "/team/secret"}}, &*other)), "ParameterNotFound");
  EXPECT_EQ(Type(Call("ListTagsForResource", {{"ResourceType", "Parameter"}, {"ResourceId", "/team/secret"}}, &*other)),
            "InvalidResourceId");
  // Its own parameter of the same name is version 1 and leaves this account's alone.
  http::Response own = Call("PutParameter", {{"Name", "/team/secret"}, {"Value", "theirs"}}, &*other);
  EXPECT_EQ(Body(own).at("Version").as_int64(), 1);
  http::Response mine = Call("GetParameter", {{"Name", "/team/secret"}, {"WithDecryption", true}});
  EXPECT_EQ(Body(mine).at("Parameter").at("Value").as_string(), "s3cr3t");
}

}  // namespace
}  // namespace paddock::ssm
