// The JSON 1.0 toy end to end: a real API front with the toy added by one line, a real HTTP
// server on an ephemeral port, SigV4-signed requests checked against an account's stored key
// (SQLite), and a fake authorizer that denies one counter. It pins what JSON 1.0 changes
// (aws/json_version.h): application/x-amz-json-1.0 on every answer, and full shape IDs in
// "__type" — the service's namespace for its own errors, the request framework's for the
// front's.
#include "testing/toy_json10/api/toy_counters_service.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include <boost/json.hpp>

#include "testing/toy_front_fixture.h"
#include "testing/toy_json10/counters.h"

namespace paddock::toyjson10 {
namespace {

namespace json = boost::json;

constexpr std::string_view kJson10 = "application/x-amz-json-1.0";

// Denies GetCounter once `deny` is set, as IAM words a denial; allows the rest.
class DenyGetCounter final : public aws::Authorizer {
 public:
  bool deny = false;
  Status Authorize(const aws::CallContext& call, const aws::AuthRequest& request) override {
    const Principal& principal = call.principal;
    if (!deny || request.action != "toycounters:GetCounter") return OkStatus();
    return PermissionDenied("User: " + principal.arn + " is not authorized to perform: " + request.action +
                            " on resource: * with an explicit deny");
  }
};

class ToyCountersServiceTest : public testing::ToyFrontTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenStore("toyjson10"));
    service_ = std::make_unique<api::ToyCountersService>(counters_);
    aws::FrontOptions front_options;
    front_options.authorizer = &authorizer_;
    CreateFront(std::move(front_options));
    front_->AddJsonService(service_.get());  // the registration: one line
    ASSERT_NO_FATAL_FAILURE(StartServer());
  }

  // POSTs `body` as `target` ("ToyCounters_20261201.<Action>"), as botocore sends JSON 1.0.
  http::Response Call(std::string_view target, std::string body, std::string secret = "") {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", "localhost"},
                   {"Content-Type", std::string(kJson10)},
                   {"X-Amz-Target", std::string(target)}};
    req.body = std::move(body);
    return SignAndSend(std::move(req), "toycounters", secret);
  }

  static void ExpectError(const http::Response& r, std::string_view type, std::string_view short_type) {
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.GetHeader("Content-Type"), kJson10);
    EXPECT_EQ(Body(r).at("__type").as_string(), type) << r.body;
    EXPECT_TRUE(Body(r).contains("message")) << r.body;
    EXPECT_EQ(r.GetHeader("x-amzn-ErrorType"), short_type);
  }

  Counters counters_;
  DenyGetCounter authorizer_;
  std::unique_ptr<api::ToyCountersService> service_;
};

TEST_F(ToyCountersServiceTest, AnswersCarryTheJson10ContentType) {
  http::Response first = Call("ToyCounters_20261201.AddToCounter", R"({"Name":"visits","Amount":2})");
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.GetHeader("Content-Type"), kJson10);
  EXPECT_EQ(Body(first), (json::object{{"Value", 2}}));
  http::Response second = Call("ToyCounters_20261201.AddToCounter", R"({"Name":"visits","Amount":3})");
  EXPECT_EQ(Body(second), (json::object{{"Value", 5}}));
  auto stored = counters_.Get(Scope{key_.account, Region("eu-west-1")}, "visits");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(*stored, 5);
}

TEST_F(ToyCountersServiceTest, ErrorTypesAreFullShapeIds) {
  // Validation, though the toy's table names it: the framework's validate namespace.
  ExpectError(Call("ToyCounters_20261201.AddToCounter", R"({"Name":"visits","Amount":0})"),
              "com.amazon.coral.validate#ValidationException", "ValidationException");
  ExpectError(Call("ToyCounters_20261201.AddToCounter", R"({"Name":"visits"})"),
              "com.amazon.coral.validate#ValidationException", "ValidationException");
  // The front's own: the request framework's namespace, as DynamoDB answers them.
  ExpectError(Call("ToyCounters_20261201.Explode", "{}"), "com.amazon.coral.service#UnknownOperationException",
              "UnknownOperationException");
  ExpectError(Call("ToyCounters_20261201.AddToCounter", R"({"Name":)"),
              "com.amazon.coral.service#SerializationException",
              "SerializationException");
  ExpectError(Call("ToyCounters_20261201.AddToCounter", R"({"Name":"visits","Amount":1})", "not-the-secret"),
              "com.amazon.coral.service#InvalidSignatureException", "InvalidSignatureException");
  EXPECT_FALSE(counters_.Get(Scope{key_.account, Region("eu-west-1")}, "visits").ok());
}

TEST_F(ToyCountersServiceTest, AModelledErrorAndADenialInTheJson10Dialect) {
  // The service's own error: qualified by its ErrorNamespace.
  ExpectError(Call("ToyCounters_20261201.GetCounter", R"({"Name":"nothing"})"),
              "com.paddock.toycounters.v20261201#CounterNotFoundException", "CounterNotFoundException");
  // A denial: the authorizer refuses before the toy runs.
  ASSERT_EQ(Call("ToyCounters_20261201.AddToCounter", R"({"Name":"visits","Amount":1})").status, 200);
  authorizer_.deny = true;
  http::Response denied = Call("ToyCounters_20261201.GetCounter", R"({"Name":"visits"})");
  ExpectError(denied, "com.amazon.coral.service#AccessDeniedException", "AccessDeniedException");
  EXPECT_EQ(Body(denied).at("message").as_string().find("Value"), std::string::npos);
}

// botocore, built from the toy's own model, sends and parses JSON 1.0 as the AWS SDKs do:
// api/botocore_client_test.py, against this fixture's server and key.
TEST_F(ToyCountersServiceTest, BotocoreClientAgrees) {
  if (std::system("python3 -c 'import botocore' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 with botocore is not installed";
  ASSERT_EQ(setenv("TOY_ENDPOINT", fmt::format("http://127.0.0.1:{}", port_).c_str(), 1), 0);
  ASSERT_EQ(setenv("TOY_KEY", key_.id.str().c_str(), 1), 0);
  ASSERT_EQ(setenv("TOY_SECRET", key_.secret.c_str(), 1), 0);
  ASSERT_EQ(setenv("TOY_MODEL", PADDOCK_TOY_COUNTERS_MODEL_PATH, 1), 0);
  EXPECT_EQ(std::system("python3 " PADDOCK_TOY_COUNTERS_BOTOCORE_TEST " -v"), 0);
}

}  // namespace
}  // namespace paddock::toyjson10
