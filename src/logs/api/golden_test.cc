// Golden API cases for CloudWatch Logs: testdata/<Action>/<case>.request.json is sent through the
// real API front (SigV4, model validation, LogsService, the logs store on a fake clock at
// 1,780,000,000 s) and the answer must equal <case>.response.json exactly (compared as JSON), where
// "${ACCOUNT}" (in any of the case's files) stands for the caller's account id. An optional <case>.setup.json holds
// [{"action": ..., "request": {...}}, ...] to run first. Error cases expect {"__type", "message"}
// and HTTP 400. As src/ecs/api/golden_test.cc, for one more service.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "common/testing/fake_clock.h"
#include "logs/api/logs_service.h"
#include "testing/toy_front_fixture.h"

namespace paddock::logs::api {
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
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.base.string(); }

std::vector<GoldenCase> AllCases() {
  std::vector<GoldenCase> out;
  for (const auto& dir : fs::directory_iterator(PADDOCK_LOGS_GOLDEN_DIR)) {
    if (!dir.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(dir.path())) {
      std::string name = f.path().filename().string();
      const std::string suffix = ".request.json";
      if (name.size() > suffix.size() && name.ends_with(suffix))
        out.push_back({dir.path().filename().string(), dir.path() / name.substr(0, name.size() - suffix.size())});
    }
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.base < b.base; });
  return out;
}

class LogsGoldenTest : public paddock::testing::ToyFrontTest, public ::testing::WithParamInterface<GoldenCase> {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenStore("logs-golden"));
    auto module = LogsModule::Open(dir_, "golden-token-key", clock_);
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    logs_ = std::move(*module);
    CreateFront(aws::FrontOptions{});
    front_->AddJsonService(&logs_->service());
    ASSERT_NO_FATAL_FAILURE(StartServer());
  }
  // A case file's text with "${ACCOUNT}" replaced by the caller's account id.
  std::string Read(const fs::path& p) {
    std::string text = ReadFile(p);
    for (size_t at; (at = text.find("${ACCOUNT}")) != std::string::npos;) text.replace(at, 10, key_.account.str());
    return text;
  }
  http::Response Send(const std::string& action, const std::string& body) {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", "localhost"},
                   {"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", "Logs_20140328." + action}};
    req.body = body;
    return SignAndSend(std::move(req), "logs");
  }

  paddock::testing::FakeClock clock_;
  std::unique_ptr<LogsModule> logs_;
};

TEST_P(LogsGoldenTest, AnswersExactly) {
  const GoldenCase& c = GetParam();
  fs::path setup = c.base.string() + ".setup.json";
  if (fs::exists(setup)) {
    const json::value steps = json::parse(Read(setup));  // must outlive the loop
    for (const auto& step : steps.as_array()) {
      auto resp = Send(std::string(step.at("action").as_string()), json::serialize(step.at("request")));
      ASSERT_EQ(resp.status, 200) << "setup step failed: " << resp.body;
    }
  }
  auto resp = Send(c.action, Read(c.base.string() + ".request.json"));
  json::value expected = json::parse(Read(c.base.string() + ".response.json"));
  int expected_status = expected.is_object() && expected.as_object().contains("__type") ? 400 : 200;
  EXPECT_EQ(resp.status, expected_status) << resp.body;
  boost::system::error_code ec;
  json::value actual = json::parse(resp.body, ec);
  ASSERT_FALSE(ec) << "response is not JSON: " << resp.body;
  EXPECT_EQ(actual, expected) << "actual:   " << resp.body << "\nexpected: " << json::serialize(expected);
}

INSTANTIATE_TEST_SUITE_P(Logs, LogsGoldenTest, ::testing::ValuesIn(AllCases()), [](const auto& param_info) {
  std::string name = param_info.param.action + "_" + param_info.param.base.filename().string();
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
});

}  // namespace
}  // namespace paddock::logs::api
