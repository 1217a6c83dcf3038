// Resolver: which values a task's start reads, as whom, in what order, and the stoppedReason of
// each failure (docs/contracts/task.md, "Secrets"). The readers are in-memory fakes that record
// what they were asked; the authorization seam is a table of denials.
#include "ecs/execution/resolver.h"

#include <gtest/gtest.h>

#include <set>

#include <boost/json.hpp>

namespace paddock::ecs::execution {
namespace {

namespace json = boost::json;

const Scope kTask{AccountId("123456789012"), Region("us-east-1")};
const std::string kPrincipal = "arn:aws:sts::123456789012:assumed-role/exec/abc123";
const std::string kPrefix =
    "ResourceInitializationError: unable to pull secrets or registry auth: execution resource retrieval failed: ";
const std::string kDb = "arn:aws:secretsmanager:us-east-1:123456789012:secret:db-AbCdEf";

class FakeParameters : public ParameterReader {
 public:
  StatusOr<Values> Read(const Scope& scope, const std::vector<std::string>& names) override {
    calls.push_back({scope, names});
    if (fail) return Unavailable("store down");
    Values v;
    for (const std::string& n : names) {
      auto it = values.find({scope, n});
      if (it == values.end()) {
        v.missing.push_back(n);
      } else {
        v.found[n] = it->second;
      }
    }
    return v;
  }
  std::map<std::pair<Scope, std::string>, std::string> values;
  std::vector<std::pair<Scope, std::vector<std::string>>> calls;
  bool fail = false;
};

class FakeSecrets : public SecretReader {
 public:
  StatusOr<std::string> FullArn(const Scope& scope, std::string_view id) override {
    scopes.insert(scope);
    for (const auto& [arn, versions] : secrets)
      if (arn == id || arn.substr(0, arn.size() - 7) == id) return arn;
    for (const auto& [arn, versions] : secrets)  // a name: the ARN's name part without its suffix
      if (const size_t at = arn.find(":secret:") + 8; arn.substr(at, arn.size() - 7 - at) == id) return arn;
    return NotFound("no such secret");
  }
  StatusOr<Value> Read(const Scope& scope, std::string_view arn, std::string_view stage, std::string_view version) override {
    scopes.insert(scope);
    ++reads;
    const auto& versions = secrets.at(std::string(arn));
    const std::string want = !version.empty() ? std::string(version) : stage.empty() ? "AWSCURRENT" : std::string(stage);
    auto it = versions.find(want);
    if (it == versions.end())
      return Value{std::nullopt, "ResourceNotFoundException",
                   "Secrets Manager can't find the specified secret value for staging label: " + want};
    return Value{it->second, "", ""};
  }
  std::map<std::string, std::map<std::string, std::string>> secrets;  // ARN → stage or version id → value
  std::set<Scope> scopes;
  int reads = 0;
};

class ResolverTest : public ::testing::Test {
 protected:
  ResolverTest() {
    parameters_.values[{kTask, "/app/db"}] = "pg://db";
    parameters_.values[{kTask, "token"}] = "t0k";
    secrets_.secrets[kDb] = {{"AWSCURRENT", R"({"password":"hunter2","port":5432,"big":12345678})"},
                             {"AWSPREVIOUS", R"({"password":"old"})"}};
  }

  StatusOr<Resolution> Resolve(const std::string& definitions) {
    asked_.clear();
    return resolver_.Resolve(TaskIdentity{kTask, kPrincipal}, json::parse(definitions).as_array(),
                             [this](std::string_view action, std::string_view resource) -> Status {
                               asked_.push_back(std::string(action) + " " + std::string(resource));
                               if (denied_.count(std::string(resource)))
                                 return PermissionDenied("User: " + kPrincipal + " is not authorized to perform: " +
                                                         std::string(action) + " on resource: " +
                                                         std::string(resource) +
                                                         " because no identity-based policy allows the " +
                                                         std::string(action) + " action");
                               return OkStatus();
                             });
  }

  static std::string Container(const std::string& name, const std::string& secrets) {
    return R"({"name":")" + name + R"(","image":"busybox","secrets":)" + secrets + "}";
  }

  FakeParameters parameters_;
  FakeSecrets secrets_;
  Resolver resolver_{parameters_, secrets_};
  std::set<std::string> denied_;
  std::vector<std::string> asked_;
};

TEST_F(ResolverTest, EveryFormLandsInItsContainersEnvironmentInOrder) {
  auto r = Resolve("[" +
                   Container("app", R"([{"name":"DB","valueFrom":"/app/db"},
                                       {"name":"PASS","valueFrom":")" + kDb + R"(:password::"},
                                       {"name":"PORT","valueFrom":")" + kDb + R"(:port::"},
                                       {"name":"BIG","valueFrom":")" + kDb + R"(:big::"},
                                       {"name":"OLD","valueFrom":")" + kDb + R"(:password:AWSPREVIOUS:"}])") +
                   "," + R"({"name":"plain","image":"busybox"})" + "," +
                   Container("side", R"([{"name":"T","valueFrom":"arn:aws:ssm:us-east-1:123456789012:parameter/token"},
                                        {"name":"WHOLE","valueFrom":"arn:aws:secretsmanager:us-east-1:123456789012:secret:db"}])") +
                   "]");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->failure_reason, "");
  ASSERT_EQ(r->containers.size(), 2u);
  EXPECT_EQ(r->containers[0].container, "app");
  std::vector<std::pair<std::string, std::string>> app;
  for (const SecretEnv& e : r->containers[0].env) app.emplace_back(e.name, e.value);
  EXPECT_EQ(app, (std::vector<std::pair<std::string, std::string>>{
                     {"DB", "pg://db"}, {"PASS", "hunter2"}, {"PORT", "5432"}, {"BIG", "1.2345678e+07"}, {"OLD", "old"}}));
  EXPECT_EQ(r->containers[1].container, "side");
  ASSERT_EQ(r->containers[1].env.size(), 2u);
  EXPECT_EQ(r->containers[1].env[0].value, "t0k");
  EXPECT_EQ(r->containers[1].env[1].value, secrets_.secrets[kDb]["AWSCURRENT"]);  // a partial ARN, the whole value
  // One GetParameters for the region's two names; each SSM name and secret authorized on its ARN.
  ASSERT_EQ(parameters_.calls.size(), 1u);
  EXPECT_EQ(parameters_.calls[0].second, (std::vector<std::string>{"/app/db", "token"}));
  EXPECT_EQ(asked_[0], "ssm:GetParameters arn:aws:ssm:us-east-1:123456789012:parameter/app/db");
  EXPECT_EQ(asked_[1], "ssm:GetParameters arn:aws:ssm:us-east-1:123456789012:parameter/token");
  EXPECT_EQ(asked_[2], "secretsmanager:GetSecretValue " + kDb);
  // The same secret and stage is read once.
  EXPECT_EQ(secrets_.reads, 3);  // AWSCURRENT, AWSPREVIOUS, and the partial ARN's AWSCURRENT
}

TEST_F(ResolverTest, MissingParametersAreNamedTogether) {
  auto r = Resolve("[" + Container("app", R"([{"name":"A","valueFrom":"/app/db"},{"name":"B","valueFrom":"/nope/1"},
                                              {"name":"C","valueFrom":"nope2"}])") + "]");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->failure_reason, kPrefix + "unable to retrieve secrets from ssm: service call has been retried 1 "
                                         "time(s): invalid ssm parameters: /nope/1,nope2");
  EXPECT_TRUE(r->containers.empty() || r->containers[0].env.empty());
}

TEST_F(ResolverTest, ElevenNamesAreTwoCalls) {
  std::string secrets = "[";
  for (int i = 0; i < 11; ++i) {
    parameters_.values[{kTask, "p" + std::to_string(i)}] = "v" + std::to_string(i);
    secrets += (i ? "," : "") + std::string(R"({"name":"E)") + std::to_string(i) + R"(","valueFrom":"p)" +
               std::to_string(i) + R"("})";
  }
  auto r = Resolve("[" + Container("app", secrets + "]") + "]");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->failure_reason, "");
  ASSERT_EQ(parameters_.calls.size(), 2u);
  EXPECT_EQ(parameters_.calls[0].second.size(), 10u);
  EXPECT_EQ(parameters_.calls[1].second, std::vector<std::string>{"p10"});
  EXPECT_EQ(r->containers[0].env[10].value, "v10");
}

TEST_F(ResolverTest, ADeniedParameterIsNeverRead) {
  denied_.insert("arn:aws:ssm:us-east-1:123456789012:parameter/app/db");
  auto r = Resolve("[" + Container("app", R"([{"name":"A","valueFrom":"/app/db"}])") + "]");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(parameters_.calls.empty());
  const std::string head = kPrefix +
                           "unable to retrieve secrets from ssm: service call has been retried 1 time(s): "
                           "AccessDeniedException: User: " + kPrincipal +
                           " is not authorized to perform: ssm:GetParameters on resource: "
                           "arn:aws:ssm:us-east-1:123456789012:parameter/app/db because no identity-based policy "
                           "allows the ssm:GetParameters action status code: 400, request id: ";
  EXPECT_EQ(r->failure_reason.substr(0, head.size()), head);
  EXPECT_EQ(r->failure_reason.size(), head.size() + 36);  // a UUID
}

// Another account's parameter or secret is refused before any reader is asked: no resource
// policy can admit it here.
TEST_F(ResolverTest, AnotherAccountsValuesAreRefusedUnread) {
  const Scope other{AccountId("210987654321"), Region("us-east-1")};
  parameters_.values[{other, "/their/db"}] = "theirs";
  auto p = Resolve("[" + Container("app", R"([{"name":"A","valueFrom":"arn:aws:ssm:us-east-1:210987654321:parameter/their/db"}])") + "]");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(parameters_.calls.empty());
  EXPECT_NE(p->failure_reason.find("AccessDeniedException: User: " + kPrincipal +
                                   " is not authorized to perform: ssm:GetParameters on resource: "
                                   "arn:aws:ssm:us-east-1:210987654321:parameter/their/db because no resource-based "
                                   "policy allows the ssm:GetParameters action"),
            std::string::npos)
      << p->failure_reason;

  const std::string theirs = "arn:aws:secretsmanager:us-east-1:210987654321:secret:db-XyZxYz";
  secrets_.secrets[theirs] = {{"AWSCURRENT", "theirs"}};
  auto s = Resolve("[" + Container("app", R"([{"name":"A","valueFrom":")" + theirs + R"("}])") + "]");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(secrets_.reads, 0);
  EXPECT_TRUE(secrets_.scopes.empty());
  EXPECT_NE(s->failure_reason.find("failed to fetch secret " + theirs +
                                   " from secrets manager: AccessDeniedException: User: " + kPrincipal +
                                   " is not authorized to perform: secretsmanager:GetSecretValue on resource: " +
                                   theirs + " because no resource-based policy allows"),
            std::string::npos)
      << s->failure_reason;
}

TEST_F(ResolverTest, SecretFailuresInEcsWords) {
  const std::string missing = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gone-AbCdEf";
  auto nf = Resolve("[" + Container("app", R"([{"name":"A","valueFrom":")" + missing + R"("}])") + "]");
  ASSERT_TRUE(nf.ok());
  EXPECT_EQ(nf->failure_reason, kPrefix + "unable to retrieve secret from asm: service call has been retried 1 "
                                          "time(s): failed to fetch secret " + missing +
                                          " from secrets manager: ResourceNotFoundException: Secrets Manager can't "
                                          "find the specified secret.");
  // A role that may not read it is told so, whether or not it exists.
  denied_.insert(missing);
  auto hidden = Resolve("[" + Container("app", R"([{"name":"A","valueFrom":")" + missing + R"("}])") + "]");
  ASSERT_TRUE(hidden.ok());
  EXPECT_NE(hidden->failure_reason.find("AccessDeniedException"), std::string::npos) << hidden->failure_reason;

  auto key = Resolve("[" + Container("app", R"([{"name":"A","valueFrom":")" + kDb + R"(:user::"}])") + "]");
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(key->failure_reason, kPrefix + "unable to retrieve secret from asm: service call has been retried 1 "
                                           "time(s): retrieved secret from Secrets Manager did not contain json key "
                                           "user");
  auto stage = Resolve("[" + Container("app", R"([{"name":"A","valueFrom":")" + kDb + R"(::AWSPENDING:"}])") + "]");
  ASSERT_TRUE(stage.ok());
  EXPECT_NE(stage->failure_reason.find("failed to fetch secret " + kDb +
                                       " from secrets manager: ResourceNotFoundException: Secrets Manager can't find "
                                       "the specified secret value for staging label: AWSPENDING status code: 400"),
            std::string::npos)
      << stage->failure_reason;
}

TEST_F(ResolverTest, AReadersOwnFailureIsRetriedNotAReason) {
  parameters_.fail = true;
  auto r = Resolve("[" + Container("app", R"([{"name":"A","valueFrom":"/app/db"}])") + "]");
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
}

TEST_F(ResolverTest, NoSecretsNoReads) {
  auto r = Resolve(R"([{"name":"app","image":"busybox"}])");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->failure_reason, "");
  EXPECT_TRUE(r->containers.empty());
  EXPECT_TRUE(asked_.empty());
}

// repositoryCredentials: each container's secret read as the execution role, by name or ARN,
// decoded into its registry credentials; the failures in the ECS agent's asm words.
TEST_F(ResolverTest, RegistryCredentialsReachTheirContainer) {
  const std::string hub = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hub-AbCdEf";
  secrets_.secrets[hub] = {{"AWSCURRENT", R"({"username":"alice","password":"s3cret"})"}};
  auto r = Resolve(R"([{"name":"plain","image":"busybox"},
                       {"name":"app","image":"reg.example/app:1","repositoryCredentials":{"credentialsParameter":"hub"}},
                       )" + Container("side", R"([{"name":"DB","valueFrom":"/app/db"}])") + R"(,
                       {"name":"again","image":"reg.example/b:1","repositoryCredentials":{"credentialsParameter":")" +
                   hub + R"("}}])");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->failure_reason, "");
  ASSERT_EQ(r->containers.size(), 3u);
  EXPECT_EQ(r->containers[0].container, "side");  // the secrets' containers first
  EXPECT_FALSE(r->containers[0].registry_auth.has_value());
  EXPECT_EQ(r->containers[1].container, "app");
  ASSERT_TRUE(r->containers[1].registry_auth.has_value());
  EXPECT_EQ(r->containers[1].registry_auth->username, "alice");
  EXPECT_EQ(r->containers[1].registry_auth->password, "s3cret");
  EXPECT_EQ(r->containers[2].container, "again");
  ASSERT_TRUE(r->containers[2].registry_auth.has_value());
  EXPECT_EQ(asked_.back(), "secretsmanager:GetSecretValue " + hub);  // authorized on the full ARN
}

TEST_F(ResolverTest, RegistryCredentialFailuresInEcsWords) {
  const std::string asm_prefix = kPrefix + "unable to get registry auth from asm: service call has been retried 1 "
                                           "time(s): ";
  auto with = [&](const std::string& parameter) {
    auto r = Resolve(R"([{"name":"app","image":"reg.example/app:1","repositoryCredentials":{"credentialsParameter":")" +
                     parameter + R"("}}])");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->failure_reason : std::string();
  };
  EXPECT_EQ(with("nope"), asm_prefix + "asm fetching secret from the service for nope: ResourceNotFoundException: "
                                       "Secrets Manager can't find the specified secret.");
  // A name that names no secret is authorized on the ARN it would have.
  EXPECT_EQ(asked_.back(), "secretsmanager:GetSecretValue arn:aws:secretsmanager:us-east-1:123456789012:secret:nope");
  const std::string bad = "arn:aws:secretsmanager:us-east-1:123456789012:secret:bad-AbCdEf";
  secrets_.secrets[bad] = {{"AWSCURRENT", R"({"username":"alice"})"}};
  EXPECT_EQ(with(bad), asm_prefix + "asm fetching password: AuthorizationData is malformed, empty field");
  secrets_.secrets[bad] = {{"AWSCURRENT", "alice:pw"}};
  EXPECT_EQ(with(bad), asm_prefix + "asm fetching authorization data: unable to unmarshal secret value, invalid schema");
  denied_.insert(bad);
  const int reads = secrets_.reads;
  EXPECT_TRUE(with(bad).starts_with(asm_prefix + "asm fetching secret from the service for " + bad +
                                    ": AccessDeniedException: User: " + kPrincipal));
  EXPECT_EQ(secrets_.reads, reads);  // denied: never read
  const std::string theirs = "arn:aws:secretsmanager:us-east-1:210987654321:secret:hub-AbCdEf";
  EXPECT_NE(with(theirs).find("because no resource-based policy allows the secretsmanager:GetSecretValue action"),
            std::string::npos);
  EXPECT_EQ(secrets_.scopes.count(Scope{AccountId("210987654321"), Region("us-east-1")}), 0u);  // refused unread
}

TEST(ExecutionPrincipalTest, IsTheRolesSessionNamedAfterTheTask) {
  EXPECT_EQ(Resolver::ExecutionPrincipalArn(AccountId("123456789012"), "arn:aws:iam::123456789012:role/ops/exec",
                                            "abc123"),
            "arn:aws:sts::123456789012:assumed-role/exec/abc123");
}

}  // namespace
}  // namespace paddock::ecs::execution
