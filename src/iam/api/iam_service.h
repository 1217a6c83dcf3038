// IAM's Query API (signing name "iam", version 2010-05-08): the wire codec over iam::Directory
// (roles, users, policies) and iam::Accounts (users' access keys). Parameters are checked against
// the embedded botocore model (required members, lengths, ranges, enums, patterns) and answered
// with IAM's XML: policy documents URL-encoded, dates ISO 8601, <ResponseMetadata><RequestId>.
// Nothing here enforces policies (iam/policy/ does, at the front).
//
//   ASSIGN_OR_RETURN(auto iam, iam::api::IamService::Create(directory, accounts));
//   front.AddQueryService(iam.get());
//
// IAM is global: a request scoped to any region is served, and every region sees the same
// identities (the records are keyed by account only).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "aws/query_model.h"
#include "aws/service.h"
#include "common/status.h"
#include "iam/accounts.h"
#include "iam/api/authorizer.h"
#include "iam/directory.h"

namespace paddock::iam::api {

class IamService final : public aws::QueryService {
 public:
  // Fails only if the embedded model does not parse (a build defect).
  static StatusOr<std::unique_ptr<IamService>> Create(Directory& directory, Accounts& accounts);
  ~IamService() override;

  std::string_view SigningName() const override { return "iam"; }
  bool Implements(std::string_view action) const override;
  // IAM publishes no per-action rate; requests are not throttled here.
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view action) const override;
  StatusOr<std::string> Call(const aws::CallContext& ctx, const aws::QueryParams& params) override;
  // iam:<Action> on the user, role or policy the call names (docs/contracts/iam.md, "What each
  // IAM call authorizes"), with iam:PolicyARN / iam:PermissionsBoundary where AWS sends them.
  std::vector<aws::AuthRequest> AuthorizationFor(const aws::CallContext& ctx,
                                                 const aws::QueryParams& params) const override;
  // IAM's error table: IamErrorFor (iam/api/errors.h), with the model's statuses (NoSuchEntity
  // 404, EntityAlreadyExists 409, ...).
  std::optional<aws::AwsError> ErrorFor(const Status& status) const override;
  // IAM's <ErrorResponse>; ServiceFailure and InternalFailure are the receiver's faults.
  std::string ErrorXml(std::string_view code, std::string_view message, std::string_view request_id) const override;

  // SimulatePrincipalPolicy evaluates with the front's authorizer, so a simulation and a live
  // call decide alike. Without one (not set), the action fails.
  void SetAuthorizer(PolicyAuthorizer* authorizer) { authorizer_ = authorizer; }

 private:
  IamService(Directory& directory, Accounts& accounts, std::unique_ptr<aws::QueryModel> model);

  Directory& directory_;
  Accounts& accounts_;
  std::unique_ptr<aws::QueryModel> model_;
  PolicyAuthorizer* authorizer_ = nullptr;
};

}  // namespace paddock::iam::api
