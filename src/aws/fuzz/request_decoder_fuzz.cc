// Feeds arbitrary bytes as the body of a well-formed request through ApiFront::Handle in
// emulator mode, against a subset of the ECS model (aws/testdata/test_model.h). The first byte picks the action.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <boost/json.hpp>

#include "aws/front.h"
#include "aws/testdata/test_model.h"
#include "common/clock.h"

namespace {

using namespace paddock;

class NoKeys : public aws::CredentialResolver {
 public:
  StatusOr<std::optional<aws::Credential>> Lookup(const AccessKeyId&) override {
    return std::optional<aws::Credential>();
  }
};

class EchoEcs : public aws::JsonService {
 public:
  std::string_view TargetPrefix() const override { return "AmazonEC2ContainerServiceV20141113"; }
  std::string_view SigningName() const override { return "ecs"; }
  const aws::ServiceModel& Model() const override { return aws::testdata::TestServiceModel(); }
  bool Implements(std::string_view) const override { return true; }
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view) const override { return std::nullopt; }
  StatusOr<std::string> Call(const aws::CallContext&, boost::json::object& input) override {
    return boost::json::serialize(input);
  }
};

constexpr const char* kActions[] = {"RegisterTaskDefinition", "CreateService", "RunTask", "ListClusters",
                                    "TagResource", "PutClusterCapacityProviders", "UpdateService",
                                    "SubmitTaskStateChange"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static NoKeys resolver;
  static EchoEcs ecs;
  static aws::ApiFront* front = [] {
    aws::FrontOptions options;
    options.auth.accept_any_credentials = true;
    options.auth.default_account = AccountId("000000000000");
    auto* f = new aws::ApiFront(options, SystemClock::Get(), resolver);
    f->AddJsonService(&ecs);
    return f;
  }();
  if (size == 0) return 0;
  const char* action = kActions[data[0] % (sizeof(kActions) / sizeof(kActions[0]))];
  http::Request req;
  req.method = "POST";
  req.target = "/";
  req.headers = {{"Host", "localhost"},
                 {"Content-Type", "application/x-amz-json-1.1"},
                 {"X-Amz-Target", std::string("AmazonEC2ContainerServiceV20141113.") + action}};
  req.body.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  aws::SignRequest(req, {"AKIDEXAMPLE", "secret"}, "us-east-1", "ecs", SystemClock::Get().Now());
  http::Response resp = front->Handle(req);
  // Every answer is a JSON object: the output echo on success, or an AWS error document.
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(resp.body, ec);
  if (ec || !v.is_object()) std::abort();
  if (resp.status != 200 && resp.status != 400) std::abort();
  return 0;
}
