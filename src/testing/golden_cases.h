// Golden API cases of a JSON-protocol service, one runner for every service's golden_test.cc:
//
//   testdata/<Action>/<case>.request.json   the request body, sent as <Action>
//   testdata/<Action>/<case>.response.json  the answer it must get, compared as JSON (exactly)
//   testdata/<Action>/<case>.setup.json     optional: [{"action": ..., "request": {...}}, ...], run
//                                           first, each step answering 200
//   testdata/<Action>/<case>.status         optional: the HTTP status (default 400 when the answer
//                                           has "__type", else 200)
//
// Every file's text goes through the test's `read` first (a service's test replaces "${ACCOUNT}"
// with its caller's account id, for instance); `send` sends one action through the real API front.
//
//   INSTANTIATE_TEST_SUITE_P(Ssm, SsmGoldenTest, ::testing::ValuesIn(testing::GoldenCases(DIR)),
//                            testing::GoldenCaseName);
//   TEST_P(SsmGoldenTest, AnswersExactly) { testing::RunGoldenCase(GetParam(), read, send); }
//
// Header-only: it is test infrastructure, never linked into the node.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "http/message.h"

namespace paddock::testing {

struct GoldenCase {
  std::string action;
  std::filesystem::path base;  // testdata/<Action>/<case>
};
inline void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.base.string(); }

inline std::string ReadTextFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every case under `dir` (a testdata directory), in path order.
inline std::vector<GoldenCase> GoldenCases(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::vector<GoldenCase> out;
  for (const auto& action : fs::directory_iterator(dir)) {
    if (!action.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(action.path())) {
      const std::string name = f.path().filename().string();
      const std::string suffix = ".request.json";
      if (name.size() > suffix.size() && name.ends_with(suffix))
        out.push_back({action.path().filename().string(), action.path() / name.substr(0, name.size() - suffix.size())});
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.base < b.base; });
  return out;
}

// "<Action>_<case>" with every other character than a letter or digit made '_': a test name.
inline std::string GoldenCaseName(const ::testing::TestParamInfo<GoldenCase>& info) {
  std::string name = info.param.action + "_" + info.param.base.filename().string();
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

using GoldenRead = std::function<std::string(const std::filesystem::path&)>;

// A GoldenRead that replaces every `from` in a file's text with `to` ("${ACCOUNT}", an account id).
inline GoldenRead ReadReplacing(std::string from, std::string to) {
  return [from = std::move(from), to = std::move(to)](const std::filesystem::path& p) {
    std::string text = ReadTextFile(p);
    for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) text.replace(at, from.size(), to);
    return text;
  };
}
using GoldenSend = std::function<http::Response(const std::string& action, const std::string& body)>;

// Runs case `c` (its setup, then its request) and checks the answer's status and body.
inline void RunGoldenCase(const GoldenCase& c, const GoldenRead& read, const GoldenSend& send) {
  namespace fs = std::filesystem;
  namespace json = boost::json;
  const fs::path setup = c.base.string() + ".setup.json";
  if (fs::exists(setup)) {
    const json::value steps = json::parse(read(setup));  // must outlive the loop
    for (const auto& step : steps.as_array()) {
      http::Response r = send(std::string(step.at("action").as_string()), json::serialize(step.at("request")));
      ASSERT_EQ(r.status, 200) << "setup step failed: " << r.body;
    }
  }
  http::Response r = send(c.action, read(c.base.string() + ".request.json"));
  const json::value expected = json::parse(read(c.base.string() + ".response.json"));
  int expected_status = expected.is_object() && expected.as_object().contains("__type") ? 400 : 200;
  if (const fs::path status = c.base.string() + ".status"; fs::exists(status))
    expected_status = std::stoi(ReadTextFile(status));
  EXPECT_EQ(r.status, expected_status) << r.body;
  boost::system::error_code ec;
  const json::value actual = json::parse(r.body, ec);
  ASSERT_FALSE(ec) << "the answer is not JSON: " << r.body;
  EXPECT_EQ(actual, expected) << "actual:   " << r.body << "\nexpected: " << json::serialize(expected);
}

}  // namespace paddock::testing
