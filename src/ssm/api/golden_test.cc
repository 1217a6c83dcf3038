// Golden API cases for SSM Parameter Store (testing/golden_cases.h): testdata/<Action>/<case>.request.json
// is sent through the real API front (SigV4, model validation, SsmService, the parameters on a real
// SQLite store and a fake clock at 1,780,000,000 s) and the answer must equal <case>.response.json
// exactly (compared as JSON), after the case's optional setup steps; "${ACCOUNT}" (in any of the
// case's files) stands for the caller's account id, the region is eu-west-1.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/testing/fake_clock.h"
#include "kms/keyring.h"
#include "ssm/api/ssm_service.h"
#include "ssm/parameters.h"
#include "testing/golden_cases.h"
#include "testing/toy_front_fixture.h"

namespace paddock::ssm::api {
namespace {

class SsmGoldenTest : public paddock::testing::ToyFrontTest,
                      public ::testing::WithParamInterface<paddock::testing::GoldenCase> {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenStore("ssm-golden"));
    keys_ = kms::KeyRing::InMemory({{1, std::string(32, 'k')}});
    parameters_ = std::make_unique<Parameters>(*store_, *keys_, clock_);
    service_ = std::make_unique<SsmService>(*parameters_, aws::TokenCodec(std::string(32, 't')));
    CreateFront(aws::FrontOptions{});
    front_->AddJsonService(service_.get());
    ASSERT_NO_FATAL_FAILURE(StartServer());
  }

  paddock::testing::FakeClock clock_;
  std::unique_ptr<kms::KeyRing> keys_;
  std::unique_ptr<Parameters> parameters_;
  std::unique_ptr<SsmService> service_;
};

TEST_P(SsmGoldenTest, AnswersExactly) {
  paddock::testing::RunGoldenCase(GetParam(), paddock::testing::ReadReplacing("${ACCOUNT}", key_.account.str()),
                                  [this](const std::string& action, const std::string& body) {
                                    return SendJson("AmazonSSM." + action, "ssm", body);
                                  });
}

INSTANTIATE_TEST_SUITE_P(Ssm, SsmGoldenTest, ::testing::ValuesIn(paddock::testing::GoldenCases(PADDOCK_SSM_GOLDEN_DIR)),
                         paddock::testing::GoldenCaseName);

}  // namespace
}  // namespace paddock::ssm::api
