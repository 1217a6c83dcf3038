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
#include <filesystem>
#include <memory>
#include <string>

#include <boost/json.hpp>

#include "aws/front.h"
#include "aws/sigv4.h"
#include "cli/schemas.h"
#include "common/clock.h"
#include "http/client.h"
#include "http/server.h"
#include "iam/accounts.h"
#include "iam/api/account_credentials.h"
#include "store/sqlite/sqlite_store.h"
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

class ToyCountersServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "paddock-toyjson10-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    store::SqliteOptions options;
    options.path = dir_ + "/state.db";
    options.durable = false;
    options.schemas = cli::NodeSchemas();
    auto opened = store::SqliteStore::Open(options);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(*opened);

    accounts_ = std::make_unique<iam::Accounts>(*store_, SystemClock::Get());
    auto account = accounts_->CreateAccount(std::nullopt, "toyjson10");
    ASSERT_TRUE(account.ok()) << account.status().ToString();
    auto key = accounts_->CreateAccessKey(account->id);
    ASSERT_TRUE(key.ok()) << key.status().ToString();
    key_ = *key;

    service_ = std::make_unique<api::ToyCountersService>(counters_);
    credentials_ = std::make_unique<iam::api::AccountCredentials>(*accounts_);
    aws::FrontOptions front_options;
    front_options.authorizer = &authorizer_;
    front_ = std::make_unique<aws::ApiFront>(front_options, SystemClock::Get(), *credentials_);
    front_->AddJsonService(service_.get());  // the registration: one line

    server_ = std::make_unique<http::Server>(http::ServerOptions{},
                                             [this](const http::Request& r) { return front_->Handle(r); });
    auto port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    port_ = *port;
    client_ = std::make_unique<http::Client>("127.0.0.1", *port);
  }

  void TearDown() override {
    client_.reset();
    if (server_) server_->Stop();
    if (store_) store_->Close();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
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
    aws::SignRequest(req, {key_.id.str(), secret.empty() ? key_.secret : secret}, "eu-west-1", "toycounters",
                     SystemClock::Get().Now());
    auto r = client_->Send(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : http::Response{};
  }

  static json::object Body(const http::Response& r) { return json::parse(r.body).as_object(); }

  static void ExpectError(const http::Response& r, std::string_view type, std::string_view short_type) {
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.GetHeader("Content-Type"), kJson10);
    EXPECT_EQ(Body(r).at("__type").as_string(), type) << r.body;
    EXPECT_TRUE(Body(r).contains("message")) << r.body;
    EXPECT_EQ(r.GetHeader("x-amzn-ErrorType"), short_type);
  }

  std::string dir_;
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<iam::Accounts> accounts_;
  std::unique_ptr<iam::api::AccountCredentials> credentials_;
  iam::AccessKey key_;
  Counters counters_;
  DenyGetCounter authorizer_;
  std::unique_ptr<api::ToyCountersService> service_;
  std::unique_ptr<aws::ApiFront> front_;
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<http::Client> client_;
  int port_ = 0;
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
