// Golden API cases: testdata/<Action>/<case>.request.json is sent through the real API front
// (SigV4 in emulator mode, model validation, the ECS adapter, a real SQLite store) and the answer
// must equal <case>.response.json exactly (compared as JSON). An optional <case>.setup.json holds
// [{"action": ..., "request": {...}}, ...] to run first. Error cases expect
// {"__type": ..., "message": ...} and the HTTP status in <case>.status (default 200 / 400).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "aws/front.h"
#include "aws/models/models.h"
#include "aws/sigv4.h"
#include "common/testing/fake_clock.h"
#include "ecs/api/ecs_service.h"
#include "ecs/testing/temp_store.h"
#include "iam/accounts.h"

namespace paddock::ecs::api {
namespace {
namespace fs = std::filesystem;
namespace json = boost::json;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct GoldenCase {
  std::string action;
  fs::path base;  // testdata/<Action>/<case>
};

std::vector<GoldenCase> AllCases() {
  std::vector<GoldenCase> out;
  for (const auto& dir : fs::directory_iterator(PADDOCK_GOLDEN_DIR)) {
    if (!dir.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(dir.path())) {
      std::string name = f.path().filename().string();
      const std::string suffix = ".request.json";
      if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix)
        out.push_back({dir.path().filename().string(), dir.path() / name.substr(0, name.size() - suffix.size())});
    }
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.base < b.base; });
  return out;
}

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {
 protected:
  GoldenTest() {
    model_ = std::move(*aws::ServiceModel::Parse(aws::EcsModelJson()));
    ecs_ = std::make_unique<EcsService>(*model_, Owners{&clusters_, &tds_}, aws::TokenCodec("golden-key"));
    aws::FrontOptions options;
    options.auth.accept_any_credentials = true;
    options.auth.default_account = AccountId("123456789012");
    front_ = std::make_unique<aws::ApiFront>(options, clock_, accounts_);
    front_->AddJsonService(ecs_.get());
  }

  http::Response Send(const std::string& action, const std::string& body) {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", "ecs.us-east-1.amazonaws.com"},
                   {"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", "AmazonEC2ContainerServiceV20141113." + action}};
    req.body = body;
    aws::SignRequest(req, {"123456789012", "secret"}, "us-east-1", "ecs", clock_.Now());
    return front_->Handle(req);
  }

  paddock::testing::FakeClock clock_{TimePoint(std::chrono::seconds(1'780'000'000))};
  paddock::testing::TempStore store_;
  iam::Accounts accounts_{*store_, clock_};
  cluster::Clusters clusters_{*store_};
  taskdef::TaskDefinitions tds_{*store_};
  std::unique_ptr<aws::ServiceModel> model_;
  std::unique_ptr<EcsService> ecs_;
  std::unique_ptr<aws::ApiFront> front_;
};

TEST_P(GoldenTest, AnswersExactly) {
  const GoldenCase& c = GetParam();
  fs::path setup = c.base.string() + ".setup.json";
  if (fs::exists(setup)) {
    const json::value steps = json::parse(ReadFile(setup));  // must outlive the loop
    for (const auto& step : steps.as_array()) {
      auto resp = Send(std::string(step.at("action").as_string()), json::serialize(step.at("request")));
      ASSERT_EQ(resp.status, 200) << "setup step failed: " << resp.body;
    }
  }
  std::string request = ReadFile(c.base.string() + ".request.json");
  auto resp = Send(c.action, request);
  json::value expected = json::parse(ReadFile(c.base.string() + ".response.json"));
  int expected_status = expected.is_object() && expected.as_object().contains("__type") ? 400 : 200;
  fs::path status_file = c.base.string() + ".status";
  if (fs::exists(status_file)) expected_status = std::stoi(ReadFile(status_file));
  EXPECT_EQ(resp.status, expected_status) << resp.body;
  boost::system::error_code ec;
  json::value actual = json::parse(resp.body, ec);
  ASSERT_FALSE(ec) << "response is not JSON: " << resp.body;
  EXPECT_EQ(actual, expected) << "actual:   " << resp.body << "\nexpected: " << json::serialize(expected);
}

INSTANTIATE_TEST_SUITE_P(Ecs, GoldenTest, ::testing::ValuesIn(AllCases()), [](const auto& param_info) {
  std::string name = param_info.param.action + "_" + param_info.param.base.filename().string();
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
});

}  // namespace
}  // namespace paddock::ecs::api
