// valueFrom forms, the json-key rendering and the stoppedReason texts (docs/contracts/task.md,
// "Secrets").
#include "ecs/execution/value_from.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace paddock::ecs::execution {
namespace {

namespace json = boost::json;

const Scope kTask{AccountId("123456789012"), Region("us-east-1")};

TEST(ParseValueFromTest, ANameIsAnSsmParameterOfTheTasksRegion) {
  for (std::string name : {"db-password", "/app/prod/db", "arn:aws:s3:::bucket/key", "arn:aws:ssm:bad"}) {
    auto ref = ParseValueFrom(name, kTask);
    ASSERT_TRUE(ref.ok()) << ref.status().ToString();
    EXPECT_EQ(ref->source, Source::kSsmParameter);
    EXPECT_EQ(ref->name, name);
    EXPECT_EQ(ref->scope, kTask);
  }
}

TEST(ParseValueFromTest, AnSsmArnNamesItsRegionAccountAndParameter) {
  auto flat = ParseValueFrom("arn:aws:ssm:eu-west-1:123456789012:parameter/db-password", kTask);
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(flat->source, Source::kSsmParameter);
  EXPECT_EQ(flat->name, "db-password");
  EXPECT_EQ(flat->scope, (Scope{AccountId("123456789012"), Region("eu-west-1")}));
  // A hierarchical name's ARN drops its leading slash; the name keeps it.
  auto deep = ParseValueFrom("arn:aws:ssm:us-east-1:210987654321:parameter/app/prod/db", kTask);
  ASSERT_TRUE(deep.ok());
  EXPECT_EQ(deep->name, "/app/prod/db");
  EXPECT_EQ(deep->scope.account, AccountId("210987654321"));
}

TEST(ParseValueFromTest, ASecretsManagerArnWithItsOptionalParts) {
  const std::string secret = "arn:aws:secretsmanager:us-east-1:123456789012:secret:db-AbCdEf";
  auto bare = ParseValueFrom(secret, kTask);
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->source, Source::kSecretsManager);
  EXPECT_EQ(bare->secret_id, secret);
  EXPECT_EQ(bare->json_key, "");

  auto key = ParseValueFrom(secret + ":password::", kTask);
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(key->secret_id, secret);
  EXPECT_EQ(key->json_key, "password");
  EXPECT_EQ(key->version_stage, "");

  auto all = ParseValueFrom(secret + ":password:AWSPREVIOUS:0123456789abcdef0123456789abcdef", kTask);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->json_key, "password");
  EXPECT_EQ(all->version_stage, "AWSPREVIOUS");
  EXPECT_EQ(all->version_id, "0123456789abcdef0123456789abcdef");

  // A partial ARN (no random suffix) in another region.
  auto partial = ParseValueFrom("arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db::AWSCURRENT:", kTask);
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->secret_id, "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db");
  EXPECT_EQ(partial->version_stage, "AWSCURRENT");
  EXPECT_EQ(partial->scope.region, Region("eu-west-1"));

  auto extra = ParseValueFrom(secret + ":a:b:c:d", kTask);
  EXPECT_EQ(extra.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseValueFrom("arn:aws:secretsmanager:us-east-1:123456789012:secret:", kTask).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(GoValueTextTest, AsTheEcsAgentsPercentV) {
  auto text = [](std::string_view j) { return GoValueText(json::parse(j)); };
  EXPECT_EQ(text(R"("s3cr3t")"), "s3cr3t");
  EXPECT_EQ(text("42"), "42");
  EXPECT_EQ(text("-7"), "-7");
  EXPECT_EQ(text("1.5"), "1.5");
  EXPECT_EQ(text("123456"), "123456");
  EXPECT_EQ(text("1000000"), "1e+06");
  EXPECT_EQ(text("12345678"), "1.2345678e+07");
  EXPECT_EQ(text("0.0001"), "0.0001");
  EXPECT_EQ(text("0.00001"), "1e-05");
  EXPECT_EQ(text("1e100"), "1e+100");
  EXPECT_EQ(text("0"), "0");
  EXPECT_EQ(text("true"), "true");
  EXPECT_EQ(text("null"), "<nil>");
  EXPECT_EQ(text(R"([1,"a",[true]])"), "[1 a [true]]");
  EXPECT_EQ(text(R"({"b":2,"a":{"y":null,"x":"v"}})"), "map[a:map[x:v y:<nil>] b:2]");
}

TEST(StoppedReasonTest, TextsInTheFargateFamily) {
  const std::string prefix =
      "ResourceInitializationError: unable to pull secrets or registry auth: execution resource retrieval failed: ";
  EXPECT_EQ(SsmParametersMissing({"/app/db"}),
            prefix + "unable to retrieve secrets from ssm: service call has been retried 1 time(s): invalid ssm "
                     "parameters: /app/db");
  EXPECT_TRUE(SsmParametersMissing({"a", "b"}).ends_with("invalid ssm parameters: a,b"));
  EXPECT_EQ(SsmDenied("User: u is not authorized", "r-1"),
            prefix + "unable to retrieve secrets from ssm: service call has been retried 1 time(s): "
                     "AccessDeniedException: User: u is not authorized status code: 400, request id: r-1");
  EXPECT_EQ(SecretNotFound("arn:s"),
            prefix + "unable to retrieve secret from asm: service call has been retried 1 time(s): failed to fetch "
                     "secret arn:s from secrets manager: ResourceNotFoundException: Secrets Manager can't find the "
                     "specified secret.");
  EXPECT_EQ(SecretDenied("arn:s", "Access to KMS is not allowed", "r-2"),
            prefix + "unable to retrieve secret from asm: service call has been retried 1 time(s): failed to fetch "
                     "secret arn:s from secrets manager: AccessDeniedException: Access to KMS is not allowed status "
                     "code: 400, request id: r-2");
  EXPECT_EQ(SecretJsonKeyMissing("password"),
            prefix + "unable to retrieve secret from asm: service call has been retried 1 time(s): retrieved secret "
                     "from Secrets Manager did not contain json key password");
}

// repositoryCredentials (issue 12 §3): a secret's full or partial ARN, or its name in the task's
// region; its SecretString decoded as the ECS agent's asm.go does.
TEST(RegistryCredentialsTest, ParameterIsAnArnOrANameAsWritten) {
  const Scope task{AccountId("123456789012"), Region("us-east-1")};
  SecretRef by_name = ParseCredentialsParameter("registry/dockerhub", task);
  EXPECT_EQ(by_name.source, Source::kSecretsManager);
  EXPECT_EQ(by_name.secret_id, "registry/dockerhub");
  EXPECT_EQ(by_name.scope, task);
  SecretRef by_arn =
      ParseCredentialsParameter("arn:aws:secretsmanager:eu-west-1:210987654321:secret:registry/hub-AbCdEf", task);
  EXPECT_EQ(by_arn.secret_id, "arn:aws:secretsmanager:eu-west-1:210987654321:secret:registry/hub-AbCdEf");
  EXPECT_EQ(by_arn.scope, (Scope{AccountId("210987654321"), Region("eu-west-1")}));
}

TEST(RegistryCredentialsTest, DecodedAsTheEcsAgentDoes) {
  auto ok = ParseRegistryCredentials(R"({"username":"alice","password":"pw","registry":"ignored"})");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->username, "alice");
  EXPECT_EQ(ok->password, "pw");
  auto cased = ParseRegistryCredentials(R"({"UserName":"bob","PASSWORD":"x"})");  // encoding/json ignores case
  ASSERT_TRUE(cased.ok());
  EXPECT_EQ(cased->username, "bob");
  auto text = [](std::string_view value) { return std::string(ParseRegistryCredentials(value).status().message()); };
  const std::string invalid = "asm fetching authorization data: unable to unmarshal secret value, invalid schema";
  EXPECT_EQ(text("not json"), invalid);
  EXPECT_EQ(text(R"(["alice","pw"])"), invalid);
  EXPECT_EQ(text(R"({"username":1,"password":"pw"})"), invalid);
  EXPECT_EQ(text(""), "asm fetching authorization data: empty secrets value");
  EXPECT_EQ(text(R"({"password":"pw"})"), "asm fetching username: AuthorizationData is malformed, empty field");
  EXPECT_EQ(text("null"), "asm fetching username: AuthorizationData is malformed, empty field");
  EXPECT_EQ(text(R"({"username":"alice","password":""})"),
            "asm fetching password: AuthorizationData is malformed, empty field");
}

TEST(RegistryCredentialsTest, StoppedReasons) {
  const std::string prefix =
      "ResourceInitializationError: unable to pull secrets or registry auth: execution resource retrieval failed: "
      "unable to get registry auth from asm: service call has been retried 1 time(s): ";
  EXPECT_EQ(RegistryAuthReadFailed("hub", "ResourceNotFoundException", "Secrets Manager can't find the specified secret.",
                                   ""),
            prefix + "asm fetching secret from the service for hub: ResourceNotFoundException: Secrets Manager can't "
                     "find the specified secret.");
  EXPECT_EQ(RegistryAuthReadFailed("hub", "AccessDeniedException", "User: u is not authorized", "r-1"),
            prefix + "asm fetching secret from the service for hub: AccessDeniedException: User: u is not authorized "
                     "status code: 400, request id: r-1");
  EXPECT_EQ(RegistryAuthFailed("asm fetching password: AuthorizationData is malformed, empty field"),
            prefix + "asm fetching password: AuthorizationData is malformed, empty field");
}

}  // namespace
}  // namespace paddock::ecs::execution
