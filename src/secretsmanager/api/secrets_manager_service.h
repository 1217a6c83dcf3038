// Secrets Manager's adapter (JSON 1.1, X-Amz-Target "secretsmanager.<Action>", signing name
// "secretsmanager") over secretsmanager::Secrets: decodes the front's validated input, calls the
// owner with typed values, encodes botocore's output shapes, and names the owner's failures with
// AWS's error types (ErrorFor). The front authorizes each call on the secret's ARN
// (AuthorizationFor). The node holds it, with its owner, in a SecretsManagerModule
// (below) and registers it by one line:
//
//   ASSIGN_OR_RETURN(auto sm, secretsmanager::api::SecretsManagerModule::Open(store, keys, token_key));
//   front.AddJsonService(&sm->service());
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "aws/pagination.h"
#include "aws/service.h"
#include "iam/accounts.h"
#include "kms/keyring.h"
#include "secretsmanager/secrets.h"

namespace paddock::secretsmanager::api {

class SecretsManagerService final : public aws::JsonService {
 public:
  // `secrets` must outlive the service.
  SecretsManagerService(Secrets& secrets, aws::TokenCodec tokens) : secrets_(secrets), tokens_(std::move(tokens)) {}

  std::string_view TargetPrefix() const override { return "secretsmanager"; }
  std::string_view SigningName() const override { return "secretsmanager"; }
  // The embedded model, parsed once. Aborts if it does not parse: it is part of the binary.
  const aws::ServiceModel& Model() const override;
  bool Implements(std::string_view action) const override;
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view action) const override;
  StatusOr<std::string> Call(const aws::CallContext& ctx, boost::json::object& input) override;
  // One question per call: "secretsmanager:<Action>" on the secret's ARN (ListSecrets: "*";
  // CreateSecret: the ARN the new secret will have, its random suffix as "??????"), with
  // secretsmanager:Name / secretsmanager:SecretId, aws:RequestTag/aws:TagKeys and the secret's
  // tags for aws:ResourceTag.
  std::vector<aws::AuthRequest> AuthorizationFor(const aws::CallContext& ctx,
                                                 const boost::json::object& input) const override;
  // secretsmanager::Error -> Secrets Manager's AWS code (all 400).
  std::optional<aws::AwsError> ErrorFor(const Status& status) const override;

 private:
  Secrets& secrets_;
  aws::TokenCodec tokens_;
};

// The node's Secrets Manager: key ring (<state-dir>/keys/master.key), owner, API, the account
// reaper (iam::AccountReaper) and the deleted-secret reaper's pass (ReapDeleted).
class SecretsManagerModule final : public iam::AccountReaper {
 public:
  // `store` and `keys` (the node's one KeyRing, which seals secret values) must outlive the module.
  // `token_key` seals NextTokens (the node's pagination key).
  static StatusOr<std::unique_ptr<SecretsManagerModule>> Open(store::Store& store, kms::KeyRing& keys,
                                                              const std::string& token_key);

  SecretsManagerService& service() { return *service_; }
  Secrets& secrets() { return *secrets_; }

  std::string_view Name() const override { return "secrets"; }
  Status ReapAccount(const AccountId& account) override { return secrets_->ReapAccount(account); }

 private:
  SecretsManagerModule() = default;
  std::unique_ptr<Secrets> secrets_;
  std::unique_ptr<SecretsManagerService> service_;
};

}  // namespace paddock::secretsmanager::api
