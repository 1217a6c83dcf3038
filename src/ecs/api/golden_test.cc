// Golden API cases: testdata/<Action>/<case>.request.json is sent through the real API front
// (SigV4 in emulator mode, model validation, the ECS adapter, a real SQLite store) and the answer
// must equal <case>.response.json exactly (compared as JSON). An optional <case>.setup.json holds
// [{"action": ..., "request": {...}}, ...] to run first. Error cases expect
// {"__type": ..., "message": ...} and the HTTP status in <case>.status (default 200 / 400).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "ecs/api/testing/front_fixture.h"


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
  http::Response Send(const std::string& action, const std::string& body) { return front_.Send(action, body); }
  testing::EcsFront front_;
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
