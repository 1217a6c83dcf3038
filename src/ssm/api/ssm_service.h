// SSM Parameter Store's API (JSON 1.1, X-Amz-Target "AmazonSSM.<Action>", signing name "ssm") over
// ssm::Parameters: decodes the front's validated input, calls the owner with typed values, encodes
// the answer, and names the owner's failures with SSM's error codes (ErrorFor). Every call is
// authorized by the front with the parameter's ARN (AuthorizationFor; docs/contracts/ssm.md).
//
//   ssm::api::SsmService ssm(parameters, aws::TokenCodec(token_key));
//   front.AddJsonService(&ssm);
//
// SsmModule (below) is what the node builds: the owner, this service and the owner's account
// reaper, over the node's one key ring.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "aws/pagination.h"
#include "aws/service.h"
#include "iam/accounts.h"
#include "kms/keyring.h"
#include "ssm/parameters.h"
#include "store/store.h"

namespace paddock::ssm::api {

class SsmService final : public aws::JsonService {
 public:
  // `parameters` must outlive the service.
  SsmService(Parameters& parameters, aws::TokenCodec tokens) : parameters_(parameters), tokens_(std::move(tokens)) {}

  std::string_view TargetPrefix() const override { return "AmazonSSM"; }
  std::string_view SigningName() const override { return "ssm"; }
  // The embedded model, parsed once. Aborts if it does not parse: it is part of the binary.
  const aws::ServiceModel& Model() const override;
  bool Implements(std::string_view action) const override;
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view action) const override;
  StatusOr<std::string> Call(const aws::CallContext& ctx, boost::json::object& input) override;
  // ssm:<Action> on arn:aws:ssm:<region>:<account>:parameter/<name without its leading slash>, one
  // question per parameter a call names (GetParameters, DeleteParameters: each name); "*" for
  // DescribeParameters, which names none.
  std::vector<aws::AuthRequest> AuthorizationFor(const aws::CallContext& ctx,
                                                 const boost::json::object& input) const override;
  // ssm::Error -> SSM's codes; the model's validation failures -> ValidationException.
  std::optional<aws::AwsError> ErrorFor(const Status& status) const override;

 private:
  Parameters& parameters_;
  aws::TokenCodec tokens_;
};

// The node's SSM: key ring (<state-dir>/keys/master.key), owner, API and account reaper.
class SsmModule final : public iam::AccountReaper {
 public:
  // `store` and `keys` (the node's one KeyRing, which seals SecureStrings) must outlive the module.
  // `token_key` seals NextTokens (the node's pagination key).
  static StatusOr<std::unique_ptr<SsmModule>> Open(store::Store& store, kms::KeyRing& keys,
                                                   const std::string& token_key);

  SsmService& service() { return *service_; }
  Parameters& parameters() { return *parameters_; }

  std::string_view Name() const override { return "ssm parameters"; }
  Status ReapAccount(const AccountId& account) override { return parameters_->ReapAccount(account); }

 private:
  SsmModule() = default;
  std::unique_ptr<Parameters> parameters_;
  std::unique_ptr<SsmService> service_;
};

}  // namespace paddock::ssm::api
