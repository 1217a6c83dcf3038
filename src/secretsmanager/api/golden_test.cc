// Golden API cases for Secrets Manager (testing/golden_cases.h): testdata/<Action>/<case>.request.json
// is sent through the real API front (SigV4, model validation, SecretsManagerService, the secrets on
// a real SQLite store and a fake clock at 1,780,000,000 s) and the answer must equal
// <case>.response.json exactly (compared as JSON), after the case's optional setup steps;
// "${ACCOUNT}" (in any of the case's files) stands for the caller's account id. A secret's ARN ends
// in six random characters, so the cases are the answers that name none: the errors, mostly.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/testing/fake_clock.h"
#include "kms/keyring.h"
#include "secretsmanager/api/secrets_manager_service.h"
#include "secretsmanager/secrets.h"
#include "testing/golden_cases.h"
#include "testing/toy_front_fixture.h"

namespace paddock::secretsmanager::api {
namespace {

class SecretsManagerGoldenTest : public paddock::testing::ToyFrontTest,
                                 public ::testing::WithParamInterface<paddock::testing::GoldenCase> {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenStore("secretsmanager-golden"));
    keys_ = kms::KeyRing::InMemory({{1, std::string(32, 'k')}});
    secrets_ = std::make_unique<Secrets>(*store_, *keys_, clock_);
    service_ = std::make_unique<SecretsManagerService>(*secrets_, aws::TokenCodec(std::string(32, 't')));
    CreateFront(aws::FrontOptions{});
    front_->AddJsonService(service_.get());
    ASSERT_NO_FATAL_FAILURE(StartServer());
  }

  paddock::testing::FakeClock clock_;
  std::unique_ptr<kms::KeyRing> keys_;
  std::unique_ptr<Secrets> secrets_;
  std::unique_ptr<SecretsManagerService> service_;
};

TEST_P(SecretsManagerGoldenTest, AnswersExactly) {
  paddock::testing::RunGoldenCase(GetParam(), paddock::testing::ReadReplacing("${ACCOUNT}", key_.account.str()),
                                  [this](const std::string& action, const std::string& body) {
                                    return SendJson("secretsmanager." + action, "secretsmanager", body);
                                  });
}

INSTANTIATE_TEST_SUITE_P(SecretsManager, SecretsManagerGoldenTest,
                         ::testing::ValuesIn(paddock::testing::GoldenCases(PADDOCK_SECRETSMANAGER_GOLDEN_DIR)),
                         paddock::testing::GoldenCaseName);

}  // namespace
}  // namespace paddock::secretsmanager::api
