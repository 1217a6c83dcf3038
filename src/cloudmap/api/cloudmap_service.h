// Cloud Map's API (servicediscovery: JSON 1.1, X-Amz-Target "Route53AutoNaming_v20170314.<Action>",
// signing name "servicediscovery") over cloudmap::Registry: decodes the front's validated input,
// calls the owner with typed values, encodes the answer, and names the owner's failures with Cloud
// Map's error codes (ErrorFor). Every call is authorized by the front as servicediscovery:<Action>
// on the namespace's or service's ARN (AuthorizationFor; docs/contracts/cloudmap.md).
//
//   cloudmap::api::CloudMapService cloudmap(registry, aws::TokenCodec(token_key));
//   front.AddJsonService(&cloudmap);
//
// CloudMapModule (below) is what the node builds: the owner, this service, the worker that runs
// the owner's queued operations, and the account reaper.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <boost/json/fwd.hpp>

#include "aws/pagination.h"
#include "aws/service.h"
#include "cloudmap/registry.h"
#include "iam/accounts.h"
#include "store/store.h"

namespace paddock::cloudmap::api {

class CloudMapService final : public aws::JsonService {
 public:
  // `registry` must outlive the service.
  CloudMapService(Registry& registry, aws::TokenCodec tokens) : registry_(registry), tokens_(std::move(tokens)) {}

  std::string_view TargetPrefix() const override { return "Route53AutoNaming_v20170314"; }
  std::string_view SigningName() const override { return "servicediscovery"; }
  // The embedded model, parsed once. Aborts if it does not parse: it is part of the binary.
  const aws::ServiceModel& Model() const override;
  bool Implements(std::string_view action) const override;
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view action) const override;
  StatusOr<std::string> Call(const aws::CallContext& ctx, boost::json::object& input) override;
  // servicediscovery:<Action> on the namespace ARN (namespace actions, CreateService), the service
  // ARN (service and instance actions), the ResourceARN (tag actions), else "*".
  std::vector<aws::AuthRequest> AuthorizationFor(const aws::CallContext& ctx,
                                                 const boost::json::object& input) const override;
  // cloudmap::Error -> Cloud Map's codes; the model's validation failures -> InvalidInput.
  std::optional<aws::AwsError> ErrorFor(const Status& status) const override;

 private:
  Registry& registry_;
  aws::TokenCodec tokens_;
};

// The node's Cloud Map: owner, API, the operations worker and the account reaper.
class CloudMapModule final : public iam::AccountReaper {
 public:
  // `store` must outlive the module. `token_key` seals NextTokens (the node's pagination key).
  // The worker starts at once and first finishes whatever operations a previous run left queued.
  static StatusOr<std::unique_ptr<CloudMapModule>> Open(store::Store& store, const std::string& token_key);
  ~CloudMapModule() override;

  CloudMapService& service() { return *service_; }
  Registry& registry() { return *registry_; }

  std::string_view Name() const override { return "cloud map"; }
  Status ReapAccount(const AccountId& account) override { return registry_->ReapAccount(account); }

 private:
  CloudMapModule() = default;
  void Work();

  std::unique_ptr<Registry> registry_;
  std::unique_ptr<CloudMapService> service_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool queued_ = true;  // GUARDED_BY(mu_): operations may be waiting (true at start: recovery)
  bool stop_ = false;   // GUARDED_BY(mu_)
  std::thread worker_;
};

}  // namespace paddock::cloudmap::api
