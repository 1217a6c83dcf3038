// STS's view of IAM's roles (sts/roles.h) over iam::Directory and the policy evaluator: which
// roles exist, and whether a role's trust policy admits a caller.
#pragma once

#include <optional>
#include <string_view>

#include "aws/credentials.h"
#include "iam/api/authorizer.h"
#include "iam/directory.h"
#include "sts/roles.h"

namespace paddock::iam::api {

class IamRoleDirectory final : public sts::RoleDirectory {
 public:
  // `directory` and `authorizer` outlive this. The authorizer builds each trust question's
  // request context, as it does every live call's (one builder: the same keys everywhere).
  IamRoleDirectory(Directory& directory, PolicyAuthorizer& authorizer) : directory_(directory), authorizer_(authorizer) {}

  StatusOr<std::optional<sts::AssumableRole>> FindRole(const AccountId& account, std::string_view role_arn) override;
  // The trust policy must allow sts:AssumeRole for the caller with `context`, and also
  // sts:TagSession when the context carries session tags and sts:SetSourceIdentity when it
  // carries a source identity (AWS checks each).
  Status TrustAdmits(const sts::AssumableRole& role, const aws::Principal& caller, const sts::CallOrigin& origin,
                     const sts::TrustContext& context) override;
  // Task roles (issue 11): the trust policy must allow sts:AssumeRole for the service principal
  // `service` ("ecs-tasks.amazonaws.com"), with aws:SourceAccount the role's own account.
  Status ServiceMayAssume(const sts::AssumableRole& role, std::string_view service) override;

 private:
  Directory& directory_;
  PolicyAuthorizer& authorizer_;
};

}  // namespace paddock::iam::api
