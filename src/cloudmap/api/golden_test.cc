// Golden API cases for Cloud Map (testing/golden_cases.h): testdata/<Action>/<case>.request.json is
// sent through the real API front (SigV4, model validation, CloudMapService, the registry on a real
// SQLite store and a fake clock at 1,780,000,000 s) and the answer must equal <case>.response.json
// exactly (compared as JSON), after the case's optional setup steps. "${ACCOUNT}" (in any of the
// case's files) stands for the caller's account id, "${VPC}" for its default VPC; the region is
// eu-west-1. Ids are a counter ("ns-0000000000000001", "srv-…", "op-…", "Z…" in the order made),
// and every queued operation runs as soon as it is submitted, so an answer never depends on a
// worker's timing.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <fmt/format.h>

#include "cloudmap/api/cloudmap_service.h"
#include "cloudmap/registry.h"
#include "common/testing/fake_clock.h"
#include "testing/golden_cases.h"
#include "testing/toy_front_fixture.h"
#include "vpc/default_vpc.h"

namespace paddock::cloudmap::api {
namespace {

class CloudMapGoldenTest : public paddock::testing::ToyFrontTest,
                           public ::testing::WithParamInterface<paddock::testing::GoldenCase> {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenStore("cloudmap-golden"));
    registry_ = std::make_unique<Registry>(*store_, clock_, [this](std::string_view prefix) {
      return fmt::format("{}{:016}", prefix == "op" ? "op-" : std::string(prefix), ++next_id_);
    });
    registry_->SetSubmitListener([this] { ASSERT_TRUE(registry_->RunPending().ok()); });
    service_ = std::make_unique<CloudMapService>(*registry_, aws::TokenCodec(std::string(32, 't')));
    CreateFront(aws::FrontOptions{});
    front_->AddJsonService(service_.get());
    ASSERT_NO_FATAL_FAILURE(StartServer());
  }

  // The case's text with ${ACCOUNT} and ${VPC} replaced.
  std::string Read(const std::filesystem::path& p) {
    std::string text = paddock::testing::ReadReplacing("${ACCOUNT}", key_.account.str())(p);
    const std::string vpc = vpc::DefaultVpcFor(Scope{key_.account, Region("eu-west-1")}).vpc_id;
    for (size_t at = 0; (at = text.find("${VPC}", at)) != std::string::npos; at += vpc.size())
      text.replace(at, 6, vpc);
    return text;
  }

  paddock::testing::FakeClock clock_;
  int next_id_ = 0;
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<CloudMapService> service_;
};

TEST_P(CloudMapGoldenTest, AnswersExactly) {
  paddock::testing::RunGoldenCase(
      GetParam(), [this](const std::filesystem::path& p) { return Read(p); },
      [this](const std::string& action, const std::string& body) {
        return SendJson("Route53AutoNaming_v20170314." + action, "servicediscovery", body);
      });
}

INSTANTIATE_TEST_SUITE_P(CloudMap, CloudMapGoldenTest,
                         ::testing::ValuesIn(paddock::testing::GoldenCases(PADDOCK_CLOUDMAP_GOLDEN_DIR)),
                         paddock::testing::GoldenCaseName);

}  // namespace
}  // namespace paddock::cloudmap::api
