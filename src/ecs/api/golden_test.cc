// Golden API cases (testing/golden_cases.h): testdata/<Action>/<case>.request.json is sent through
// the real API front (SigV4 in emulator mode, model validation, the ECS adapter, a real SQLite
// store) and the answer must equal <case>.response.json exactly (compared as JSON), after the
// case's optional setup steps; <case>.status overrides the HTTP status (default 200 / 400).
#include <gtest/gtest.h>

#include "ecs/api/testing/front_fixture.h"
#include "testing/golden_cases.h"

namespace paddock::ecs::api {
namespace {

class GoldenTest : public ::testing::TestWithParam<paddock::testing::GoldenCase> {
 protected:
  testing::EcsFront front_;
};

TEST_P(GoldenTest, AnswersExactly) {
  paddock::testing::RunGoldenCase(
      GetParam(), paddock::testing::ReadTextFile,
      [this](const std::string& action, const std::string& body) { return front_.Send(action, body); });
}

INSTANTIATE_TEST_SUITE_P(Ecs, GoldenTest, ::testing::ValuesIn(paddock::testing::GoldenCases(PADDOCK_GOLDEN_DIR)),
                         paddock::testing::GoldenCaseName);

}  // namespace
}  // namespace paddock::ecs::api
