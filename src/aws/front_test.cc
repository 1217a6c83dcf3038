#include "aws/front.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "aws/testdata/test_model.h"
#include "common/testing/fake_clock.h"

namespace paddock::aws {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr char kPrefix[] = "AmazonEC2ContainerServiceV20141113";

class MapResolver : public CredentialResolver {
 public:
  MapResolver() {
    Credential c;
    c.secret_access_key = "secret";
    c.principal = Principal();
    c.principal.account = AccountId("123456789012");
    c.principal.arn = "arn:aws:iam::123456789012:user/alice";
    c.principal.access_key_id = AccessKeyId("AKIDALICE");
    c.principal.kind = PrincipalKind::kUser;
    creds_["AKIDALICE"] = c;
    // A container instance's agent credential (docs/agent-protocol.md, "Identity").
    c.principal = Principal();
    c.principal.account = AccountId("123456789012");
    c.principal.arn = "arn:aws:sts::123456789012:assumed-role/paddock-container-instance/0123";
    c.principal.access_key_id = AccessKeyId("ASIAAGENT");
    c.principal.agent_of = "arn:aws:ecs:eu-west-1:123456789012:container-instance/prod/0123";
    creds_["ASIAAGENT"] = c;
  }
  StatusOr<std::optional<Credential>> Lookup(const AccessKeyId& id) override {
    auto it = creds_.find(id.str());
    if (it == creds_.end()) return std::optional<Credential>();
    return std::optional<Credential>(it->second);
  }

 private:
  std::map<std::string, Credential> creds_;
};

// A stand-in ECS's error vocabulary and its table (as ecs/api/errors.cc is ECS's).
enum class FakeError { kClusterNotFound = 1, kUnmapped };
const ErrorDomain& ErrorDomainOf(FakeError) {
  static constexpr ErrorDomain kDomain{"fake", [](int) -> std::string_view { return "Fake"; }};
  return kDomain;
}

// A stand-in ECS: echoes its input, or fails as told.
class FakeEcs : public JsonService {
 public:
  std::string_view TargetPrefix() const override { return kPrefix; }
  std::string_view SigningName() const override { return "ecs"; }
  const ServiceModel& Model() const override { return testdata::TestServiceModel(); }
  bool Implements(std::string_view action) const override { return action != "CreateDaemon"; }
  bool AgentMay(std::string_view action) const override { return action == "DescribeClusters"; }
  std::optional<ThrottleGroup> ThrottleGroupFor(std::string_view action) const override {
    if (action == "ListClusters") return ThrottleGroup{"ecs:cluster-read", {2, 1}};
    return std::nullopt;
  }
  StatusOr<std::string> Call(const CallContext& ctx, json::object& input) override {
    last_ctx = ctx;
    if (ctx.action == "DeleteCluster") {
      std::string_view cluster = input.at("cluster").as_string();
      if (cluster == "missing") return NotFound("Cluster not found.", FakeError::kClusterNotFound);
      if (cluster == "unmapped") return NotFound("Cluster not found.", FakeError::kUnmapped);
      if (cluster == "internal") return Internal("disk on fire");
      if (cluster == "throw") throw std::runtime_error("boom");
      if (cluster == "in-use") return FailedPrecondition("The Cluster cannot be deleted while Services are active.");
    }
    return json::serialize(input);
  }
  std::optional<AwsError> ErrorFor(const Status& status) const override {
    if (IsError(status, FakeError::kClusterNotFound)) return AwsError{"ClusterNotFoundException", 400};
    return std::nullopt;
  }
  std::vector<AuthRequest> AuthorizationFor(const CallContext& ctx, const json::object& input) const override {
    ++questions_built;
    return JsonService::AuthorizationFor(ctx, input);
  }
  CallContext last_ctx;
  mutable int questions_built = 0;
};

// Refuses every ecs:DeleteCluster of the principals it evaluates; evaluates them all unless told.
class FakeAuthorizer : public Authorizer {
 public:
  Status Authorize(const CallContext& call, const AuthRequest& request) override {
    ++asked;
    if (request.action == "ecs:DeleteCluster")
      return PermissionDenied(fmt::format("User: {} is not authorized", call.principal.arn));
    return OkStatus();
  }
  bool Evaluates(const Principal& principal) const override {
    (void)principal;
    return evaluates;
  }
  bool evaluates = true;
  int asked = 0;
};

class ApiFrontTest : public ::testing::Test {
 protected:
  ApiFrontTest() : clock_(std::chrono::sys_days(std::chrono::year(2026) / 1 / 15) + 10h) { MakeFront({}); }

  void MakeFront(FrontOptions options) {
    front_ = std::make_unique<ApiFront>(std::move(options), clock_, resolver_);
    front_->AddJsonService(&ecs_);
  }

  http::Request Request(std::string_view action, std::string body, std::string_view key = "AKIDALICE",
                        std::string_view secret = "secret") {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", "localhost:4566"},
                   {"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", fmt::format("{}.{}", kPrefix, action)}};
    req.body = std::move(body);
    SignRequest(req, {std::string(key), std::string(secret)}, "eu-west-1", "ecs", clock_.Now());
    return req;
  }

  static void ExpectError(const http::Response& r, int status, std::string_view type, std::string_view message = {}) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.GetHeader("x-amzn-ErrorType"), type);
    EXPECT_EQ(r.GetHeader("Content-Type"), "application/x-amz-json-1.1");
    EXPECT_EQ(r.GetHeader("x-amzn-RequestId").size(), 36u);
    json::value body = json::parse(r.body);
    EXPECT_EQ(body.at("__type").as_string(), type);
    if (!message.empty()) {
      EXPECT_EQ(body.at("message").as_string(), message);
    }
  }

  testing::FakeClock clock_;
  MapResolver resolver_;
  FakeEcs ecs_;
  std::unique_ptr<ApiFront> front_;
};

TEST_F(ApiFrontTest, SuccessfulCall) {
  http::Response r = front_->Handle(Request("ListClusters", R"({"maxResults":5,"unknown":true})"));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.GetHeader("Content-Type"), "application/x-amz-json-1.1");
  EXPECT_EQ(r.GetHeader("x-amzn-RequestId").size(), 36u);
  EXPECT_EQ(r.body, R"({"maxResults":5})");
  EXPECT_EQ(ecs_.last_ctx.action, "ListClusters");
  EXPECT_EQ(ecs_.last_ctx.scope.account.str(), "123456789012");
  EXPECT_EQ(ecs_.last_ctx.scope.region.str(), "eu-west-1");
  EXPECT_EQ(ecs_.last_ctx.principal.arn, "arn:aws:iam::123456789012:user/alice");
  EXPECT_EQ(ecs_.last_ctx.request_id, r.GetHeader("x-amzn-RequestId"));
  EXPECT_EQ(ecs_.last_ctx.now, clock_.Now());
}

TEST_F(ApiFrontTest, CallSucceededHearsOnlyTheCallsTheServiceAnswered) {
  std::vector<std::string> heard;
  FrontOptions options;
  options.call_succeeded = [&](const CallContext& ctx, std::string_view service) {
    heard.push_back(fmt::format("{} {} {}", service, ctx.action, ctx.scope.account.str()));
  };
  MakeFront(std::move(options));
  EXPECT_EQ(front_->Handle(Request("ListClusters", "{}")).status, 200);
  EXPECT_EQ(front_->Handle(Request("ListClusters", R"({"maxResults":"five"})")).status, 400);  // invalid input
  EXPECT_EQ(front_->Handle(Request("ListClusters", "{}", "AKIDALICE", "wrong")).status, 400);    // bad signature
  EXPECT_EQ(heard, (std::vector<std::string>{"ecs ListClusters 123456789012"}));
}

TEST_F(ApiFrontTest, AnAgentCredentialCallsOnlyWhatTheServiceOpensToAgents) {
  http::Response denied = front_->Handle(Request("ListClusters", "{}", "ASIAAGENT"));
  ExpectError(denied, 400, "AccessDeniedException",
              "User: arn:aws:sts::123456789012:assumed-role/paddock-container-instance/0123 is not authorized to "
              "perform: ecs:ListClusters on resource: * because no identity-based policy allows the ecs:ListClusters "
              "action");
  http::Response allowed = front_->Handle(Request("DescribeClusters", "{}", "ASIAAGENT"));
  EXPECT_EQ(allowed.status, 200) << allowed.body;
  EXPECT_EQ(ecs_.last_ctx.principal.agent_of, "arn:aws:ecs:eu-west-1:123456789012:container-instance/prod/0123");
  // An account's key is not limited by it.
  EXPECT_EQ(front_->Handle(Request("ListClusters", "{}")).status, 200);
}

TEST_F(ApiFrontTest, AnEvaluatedPrincipalsQuestionsAreAskedBeforeTheCall) {
  FakeAuthorizer authorizer;
  FrontOptions options;
  options.authorizer = &authorizer;
  MakeFront(std::move(options));
  ExpectError(front_->Handle(Request("DeleteCluster", R"({"cluster":"in-use"})")), 400, "AccessDeniedException");
  EXPECT_EQ(ecs_.questions_built, 1);
  EXPECT_EQ(authorizer.asked, 1);
  EXPECT_EQ(front_->Handle(Request("ListClusters", "{}")).status, 200);
  EXPECT_EQ(ecs_.last_ctx.authorizer, &authorizer);  // for the questions the call asks itself
  // An agent is bounded by AgentMay instead: no questions, no authorizer.
  EXPECT_EQ(front_->Handle(Request("DescribeClusters", "{}", "ASIAAGENT")).status, 200);
  EXPECT_EQ(ecs_.last_ctx.authorizer, nullptr);
  EXPECT_EQ(ecs_.questions_built, 2);
  EXPECT_EQ(authorizer.asked, 2);
}

TEST_F(ApiFrontTest, APrincipalTheAuthorizerDoesNotEvaluateBuildsNoQuestions) {
  FakeAuthorizer authorizer;
  authorizer.evaluates = false;  // as IAM's is for an account's root
  FrontOptions options;
  options.authorizer = &authorizer;
  MakeFront(std::move(options));
  http::Response r = front_->Handle(Request("DeleteCluster", R"({"cluster":"in-use"})"));
  ExpectError(r, 400, "ClientException");  // the call ran
  EXPECT_EQ(ecs_.questions_built, 0);
  EXPECT_EQ(authorizer.asked, 0);
  EXPECT_EQ(ecs_.last_ctx.authorizer, nullptr);
}

TEST_F(ApiFrontTest, EmptyBodyIsEmptyInput) {
  http::Response r = front_->Handle(Request("ListClusters", ""));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{}");
}

TEST_F(ApiFrontTest, RequestIdsAreUnique) {
  auto a = front_->Handle(Request("ListClusters", "{}"));
  auto b = front_->Handle(Request("ListClusters", "{}"));
  EXPECT_NE(a.GetHeader("x-amzn-RequestId"), b.GetHeader("x-amzn-RequestId"));
}

TEST_F(ApiFrontTest, ServiceErrorsMapToAwsErrors) {
  ExpectError(front_->Handle(Request("DeleteCluster", R"({"cluster":"missing"})")), 400, "ClusterNotFoundException",
              "Cluster not found.");
  // A detail the service's table does not know falls back to its code's default.
  ExpectError(front_->Handle(Request("DeleteCluster", R"({"cluster":"unmapped"})")), 400, "ClientException",
              "Cluster not found.");
  ExpectError(front_->Handle(Request("DeleteCluster", R"({"cluster":"in-use"})")), 400, "ClientException",
              "The Cluster cannot be deleted while Services are active.");
  ExpectError(front_->Handle(Request("DeleteCluster", R"({"cluster":"internal"})")), 500, "ServerException");
  ExpectError(front_->Handle(Request("DeleteCluster", R"({"cluster":"throw"})")), 500, "ServerException");
}

TEST_F(ApiFrontTest, RoutingErrors) {
  ExpectError(front_->Handle(Request("NoSuchAction", "{}")), 400, "UnknownOperationException");
  ExpectError(front_->Handle(Request("CreateDaemon", "{}")), 400, "UnknownOperationException");
  http::Request other = Request("ListClusters", "{}");
  for (auto& h : other.headers)
    if (h.name == "X-Amz-Target") h.value = "AmazonSSM.GetParameter";
  ExpectError(front_->Handle(other), 400, "UnknownOperationException");
  http::Request none = Request("ListClusters", "{}");
  std::erase_if(none.headers, [](const http::Header& h) { return h.name == "X-Amz-Target"; });
  ExpectError(front_->Handle(none), 400, "UnknownOperationException");
  http::Request get = Request("ListClusters", "");
  get.method = "GET";
  ExpectError(front_->Handle(get), 400, "UnknownOperationException");
  http::Request xml = Request("ListClusters", "{}");
  xml.headers[1].value = "text/xml";
  SignRequest(xml, {"AKIDALICE", "secret"}, "eu-west-1", "ecs", clock_.Now());
  ExpectError(front_->Handle(xml), 400, "UnknownOperationException");
}

TEST_F(ApiFrontTest, AuthenticationComesBeforeOperationLookup) {
  http::Request req = Request("NoSuchAction", "{}", "AKIDNOBODY");
  ExpectError(front_->Handle(req), 400, "UnrecognizedClientException",
              "The security token included in the request is invalid.");
}

TEST_F(ApiFrontTest, AuthenticationErrors) {
  http::Request unsigned_req = Request("ListClusters", "{}");
  std::erase_if(unsigned_req.headers, [](const http::Header& h) { return h.name == "Authorization"; });
  ExpectError(front_->Handle(unsigned_req), 400, "MissingAuthenticationTokenException");
  ExpectError(front_->Handle(Request("ListClusters", "{}", "AKIDALICE", "wrong")), 400, "InvalidSignatureException");
  http::Request old = Request("ListClusters", "{}");
  clock_.Advance(20min);
  ExpectError(front_->Handle(old), 400, "InvalidSignatureException");
}

TEST_F(ApiFrontTest, BodyErrors) {
  ExpectError(front_->Handle(Request("ListClusters", "{")), 400, "SerializationException");
  ExpectError(front_->Handle(Request("ListClusters", "[]")), 400, "SerializationException");
  ExpectError(front_->Handle(Request("ListClusters", "{} {}")), 400, "SerializationException");
  ExpectError(front_->Handle(Request("ListClusters", "{\"nextToken\":\"\xff\"}")), 400, "SerializationException");
  std::string deep = std::string(100, '[') + std::string(100, ']');
  ExpectError(front_->Handle(Request("ListClusters", R"({"nextToken":)" + deep + "}")), 400, "SerializationException");
  ExpectError(front_->Handle(Request("ListClusters", R"({"maxResults":"x"})")), 400, "SerializationException");
  ExpectError(front_->Handle(Request("RegisterTaskDefinition", R"({"containerDefinitions":[]})")), 400,
              "InvalidParameterException", "family can not be null.");
  // A good request still works after failures (the per-thread parser recovers).
  EXPECT_EQ(front_->Handle(Request("ListClusters", R"({"maxResults":1})")).status, 200);
}

TEST_F(ApiFrontTest, Throttling) {
  FrontOptions options;
  options.rate_limits = true;
  MakeFront(std::move(options));
  EXPECT_EQ(front_->Handle(Request("ListClusters", "{}")).status, 200);
  EXPECT_EQ(front_->Handle(Request("ListClusters", "{}")).status, 200);
  ExpectError(front_->Handle(Request("ListClusters", "{}")), 400, "ThrottlingException", "Rate exceeded");
  // Other actions have no bucket here.
  EXPECT_EQ(front_->Handle(Request("DescribeClusters", "{}")).status, 200);
  clock_.Advance(1s);
  EXPECT_EQ(front_->Handle(Request("ListClusters", "{}")).status, 200);
}

// Two servers on one store (docs/scaling.md): this one takes half of the {2, 1} bucket, and an
// empty share answers exactly as an empty bucket does.
TEST_F(ApiFrontTest, ThrottlingWithTwoServersTakesHalfTheBucketAndSaysTheSame) {
  FrontOptions options;
  options.rate_limits = true;
  MakeFront(std::move(options));
  front_->SetRateLimitServers(2);
  EXPECT_EQ(front_->Handle(Request("ListClusters", "{}")).status, 200);
  ExpectError(front_->Handle(Request("ListClusters", "{}")), 400, "ThrottlingException", "Rate exceeded");
  clock_.Advance(1s);  // half a token
  ExpectError(front_->Handle(Request("ListClusters", "{}")), 400, "ThrottlingException", "Rate exceeded");
  clock_.Advance(1s);
  EXPECT_EQ(front_->Handle(Request("ListClusters", "{}")).status, 200);
}

TEST_F(ApiFrontTest, NoThrottlingByDefault) {
  for (int i = 0; i < 10; ++i) EXPECT_EQ(front_->Handle(Request("ListClusters", "{}")).status, 200);
}

TEST_F(ApiFrontTest, EmulatorMode) {
  FrontOptions options;
  options.auth.accept_any_credentials = true;
  options.auth.default_account = AccountId("000000000000");
  MakeFront(std::move(options));
  http::Response r = front_->Handle(Request("ListClusters", "{}", "test", "test"));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(ecs_.last_ctx.scope.account.str(), "000000000000");
}

TEST(AwsErrorForTest, Defaults) {
  auto check = [](Status s, std::string_view type, int status) {
    AwsError e = AwsErrorFor(s);
    EXPECT_EQ(e.type, type) << s.ToString();
    EXPECT_EQ(e.http_status, status) << s.ToString();
  };
  check(InvalidArgument("x"), "InvalidParameterException", 400);
  check(NotFound("x"), "ClientException", 400);
  check(AlreadyExists("x"), "ClientException", 400);
  check(FailedPrecondition("x"), "ClientException", 400);
  check(PermissionDenied("x"), "AccessDeniedException", 400);
  check(Unauthenticated("x"), "UnrecognizedClientException", 400);
  check(ResourceExhausted("x"), "ThrottlingException", 400);
  check(Unavailable("x"), "ServerException", 503);
  check(Internal("x"), "ServerException", 500);
  check(DataLoss("x"), "ServerException", 500);
  check(Aborted("x"), "ServerException", 500);
  check(InvalidArgument("x", Error::kSerialization), "SerializationException", 400);
  check(Unauthenticated("x", Error::kExpiredToken), "ExpiredTokenException", 400);
  check(Internal("x", Error::kInternalFailure), "InternalFailure", 500);
  // A detail of another module's vocabulary is that service's table's to map; here, the default.
  check(NotFound("x", FakeError::kClusterNotFound), "ClientException", 400);
}

TEST(AwsErrorForTest, TheQueryDialectNamesDenialAndThrottlingItsOwnWay) {
  auto query = [](Status s) { return AwsErrorFor(s, Dialect::kQuery); };
  EXPECT_EQ(query(PermissionDenied("x")).type, "AccessDenied");
  EXPECT_EQ(query(PermissionDenied("x")).http_status, 403);
  EXPECT_EQ(AwsErrorFor(PermissionDenied("x")).type, "AccessDeniedException");
  EXPECT_EQ(query(ResourceExhausted("x", Error::kThrottling)).type, "Throttling");
  EXPECT_EQ(AwsErrorFor(ResourceExhausted("x", Error::kThrottling)).type, "ThrottlingException");
  // Everything else is answered as in JSON.
  EXPECT_EQ(query(InvalidArgument("x", Error::kMissingAction)).type, "MissingAction");
  EXPECT_EQ(query(InvalidArgument("x")).type, "InvalidParameterException");
  EXPECT_EQ(query(Unavailable("x")).http_status, 503);
  EXPECT_EQ(query(Internal("x")).http_status, 500);
}

TEST(AwsErrorForTest, EveryAwsCodeReadsBackAsItsDetail) {
  for (Error e : {Error::kUnknownOperation, Error::kSerialization, Error::kThrottling, Error::kIncompleteSignature,
                  Error::kInvalidSignature, Error::kMissingAuthenticationToken, Error::kUnrecognizedClient,
                  Error::kExpiredToken, Error::kMalformedQueryString, Error::kMissingAction, Error::kInvalidAction,
                  Error::kInternalFailure}) {
    const std::string type = AwsErrorFor(InvalidArgument("x", e)).type;
    EXPECT_EQ(ErrorFromAwsCode(type), e) << type;
  }
  EXPECT_EQ(ErrorFromAwsCode("ClusterNotFoundException"), std::nullopt);
}

TEST(JsonErrorResponseTest, EscapesMessage) {
  const Status s = InvalidArgument("bad \"quote\"\n");
  http::Response r = JsonErrorResponse(s, AwsErrorFor(s), "rid");
  EXPECT_EQ(r.body, R"({"__type":"InvalidParameterException","message":"bad \"quote\"\n"})");
  EXPECT_EQ(r.GetHeader("x-amzn-RequestId"), "rid");
  EXPECT_EQ(r.GetHeader("x-amzn-ErrorType"), "InvalidParameterException");
}

TEST(JsonErrorResponseTest, KeepsBodyValidUtf8) {
  const Status s = Unauthenticated("Authorization=\xff\xfe", Error::kIncompleteSignature);
  http::Response r = JsonErrorResponse(s, AwsErrorFor(s), "rid");
  EXPECT_EQ(r.body, R"({"__type":"IncompleteSignatureException","message":"Authorization=??"})");
}

}  // namespace
}  // namespace paddock::aws
