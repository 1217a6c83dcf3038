// The STS API (Query protocol, XML answers; signing name "sts", any region): GetCallerIdentity,
// GetSessionToken and AssumeRole, over sts::Sessions and a RoleDirectory. Input is decoded and
// validated by the embedded botocore model (aws/query_model.h); the owner sees typed values.
//
//   sts::api::StsService sts(sessions, &roles);
//   front.AddQueryService(&sts);
//
// docs/contracts/sts.md lists the behaviours and the tests that pin them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "aws/service.h"
#include "aws/query_model.h"
#include "sts/roles.h"
#include "sts/sessions.h"

namespace paddock::sts::api {

// STS's error table: sts::Error's codes (ValidationError, InvalidParameterValue,
// MalformedPolicyDocument; 400); the verifier's failures in STS's words, all 403
// (InvalidClientTokenId for an unknown key, ExpiredToken, MissingAuthenticationToken,
// SignatureDoesNotMatch, IncompleteSignature); any PermissionDenied is AccessDenied 403. Nullopt
// for the rest, which the front answers with aws::AwsErrorFor.
std::optional<aws::AwsError> StsErrorFor(const Status& status);

class StsService final : public aws::QueryService {
 public:
  // `roles` may be null (no IAM roles wired): every AssumeRole is then refused as for a role that
  // does not exist. Both must outlive the service.
  StsService(Sessions& sessions, RoleDirectory* roles);
  ~StsService() override;

  std::string_view SigningName() const override { return "sts"; }
  bool Implements(std::string_view action) const override;
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view action) const override;
  StatusOr<std::string> Call(const aws::CallContext& ctx, const aws::QueryParams& params) override;
  // GetCallerIdentity: nothing (always allowed, even under an explicit deny, as on AWS);
  // AssumeRole: sts:AssumeRole on the role's ARN; others: the action on "*".
  std::vector<aws::AuthRequest> AuthorizationFor(const aws::CallContext& ctx,
                                                 const aws::QueryParams& params) const override;
  // STS's error table: StsErrorFor.
  std::optional<aws::AwsError> ErrorFor(const Status& status) const override;

  // The session-duration rules (seconds), as AWS documents them.
  static constexpr int kDefaultSessionTokenSeconds = 43200;
  static constexpr int kRootSessionTokenMaxSeconds = 3600;  // root's GetSessionToken is capped, silently
  static constexpr int kDefaultRoleSessionSeconds = 3600;
  static constexpr int kRoleChainingMaxSeconds = 3600;

 private:
  StatusOr<std::string> GetCallerIdentity(const aws::CallContext& ctx);
  StatusOr<std::string> GetSessionToken(const aws::CallContext& ctx, const boost::json::object& input);
  StatusOr<std::string> AssumeRole(const aws::CallContext& ctx, const boost::json::object& input);

  Sessions& sessions_;
  RoleDirectory* roles_;
  std::unique_ptr<aws::QueryModel> model_;
};

}  // namespace paddock::sts::api
