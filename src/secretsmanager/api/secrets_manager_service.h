// Secrets Manager's adapter (JSON 1.1, X-Amz-Target "secretsmanager.<Action>", signing name
// "secretsmanager") over secretsmanager::Secrets: decodes the front's validated input, calls the
// owner with typed values, encodes botocore's output shapes, and names the owner's failures with
// AWS's error types (ErrorFor). The front authorizes each call on the secret's ARN
// (AuthorizationFor). Registered by one line:
//
//   secretsmanager::api::SecretsManagerService sm(secrets, aws::TokenCodec(token_key));
//   front.AddJsonService(&sm);
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "aws/pagination.h"
#include "aws/service.h"
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

}  // namespace paddock::secretsmanager::api
