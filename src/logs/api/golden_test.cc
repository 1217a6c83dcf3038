// Golden API cases for CloudWatch Logs (testing/golden_cases.h): testdata/<Action>/<case>.request.json
// is sent through the real API front (SigV4, model validation, LogsService, the logs store on a fake
// clock at 1,780,000,000 s) and the answer must equal <case>.response.json exactly (compared as
// JSON), after the case's optional setup steps; "${ACCOUNT}" (in any of the case's files) stands for
// the caller's account id.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/testing/fake_clock.h"
#include "logs/api/logs_service.h"
#include "testing/golden_cases.h"
#include "testing/toy_front_fixture.h"

namespace paddock::logs::api {
namespace {

class LogsGoldenTest : public paddock::testing::ToyFrontTest,
                       public ::testing::WithParamInterface<paddock::testing::GoldenCase> {
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

  paddock::testing::FakeClock clock_;
  std::unique_ptr<LogsModule> logs_;
};

TEST_P(LogsGoldenTest, AnswersExactly) {
  paddock::testing::RunGoldenCase(GetParam(), paddock::testing::ReadReplacing("${ACCOUNT}", key_.account.str()),
                                  [this](const std::string& action, const std::string& body) {
                                    return SendJson("Logs_20140328." + action, "logs", body);
                                  });
}

INSTANTIATE_TEST_SUITE_P(Logs, LogsGoldenTest,
                         ::testing::ValuesIn(paddock::testing::GoldenCases(PADDOCK_LOGS_GOLDEN_DIR)),
                         paddock::testing::GoldenCaseName);

}  // namespace
}  // namespace paddock::logs::api
