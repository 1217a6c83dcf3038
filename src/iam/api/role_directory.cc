#include "iam/api/role_directory.h"

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "iam/api/authorizer.h"
#include "iam/policy/evaluator.h"
#include "iam/policy/policy.h"

namespace paddock::iam::api {

StatusOr<std::optional<sts::AssumableRole>> IamRoleDirectory::FindRole(const AccountId& account,
                                                                        std::string_view role_arn) {
  ASSIGN_OR_RETURN(std::optional<Role> role, directory_.FindRoleByArn(account, role_arn));
  if (!role) return std::optional<sts::AssumableRole>();
  sts::AssumableRole out;
  out.arn = role->arn;
  out.role_id = role->id;
  out.name = role->name;
  out.trust_policy_json = role->trust_policy;
  out.max_session_seconds = role->max_session_duration;
  return std::optional<sts::AssumableRole>(std::move(out));
}

Status IamRoleDirectory::TrustAdmits(const sts::AssumableRole& role, const aws::Principal& caller,
                                     const sts::CallOrigin& origin, const sts::TrustContext& context) {
  auto trust = policy::ParsePolicy(role.trust_policy_json, policy::DocumentKind::kTrust);
  // A trust policy that no longer parses admits no one.
  if (!trust.ok()) return PermissionDenied(fmt::format("the trust policy of {} does not parse", role.arn));
  bool tags = false, source_identity = false;
  for (const auto& [k, v] : context) {
    if (k.starts_with("aws:RequestTag/")) tags = true;
    if (k == "sts:SourceIdentity") source_identity = true;
  }
  std::vector<std::string> actions = {"sts:AssumeRole"};
  if (tags) actions.push_back("sts:TagSession");
  if (source_identity) actions.push_back("sts:SetSourceIdentity");
  // The caller's call, for the keys every request carries (time, aws:SourceIp,
  // aws:RequestedRegion, the caller's aws:PrincipalTag/*).
  aws::CallContext call;
  call.scope = Scope{caller.account, origin.region};
  call.principal = caller;
  call.source_ip = origin.source_ip;
  call.now = origin.now;
  for (const std::string& action : actions) {
    ASSIGN_OR_RETURN(policy::RequestContext ctx, authorizer_.ContextOf(call, aws::AuthRequest{action, role.arn, context}));
    if (!policy::TrustPolicyAllows(*trust, ctx)) {
      return PermissionDenied(fmt::format("the trust policy of {} does not allow {} for {}", role.arn, action, caller.arn));
    }
  }
  return OkStatus();
}

Status IamRoleDirectory::ServiceMayAssume(const sts::AssumableRole& role, std::string_view service) {
  auto trust = policy::ParsePolicy(role.trust_policy_json, policy::DocumentKind::kTrust);
  if (!trust.ok()) return PermissionDenied(fmt::format("the trust policy of {} does not parse", role.arn));
  policy::RequestContext ctx(policy::Principal::Service(std::string(service)), "sts:AssumeRole", role.arn);
  // ECS assumes a task role on behalf of the task's own account (the role's): AWS's
  // confused-deputy condition aws:SourceAccount holds it.
  const std::string_view arn = role.arn;
  if (arn.starts_with("arn:aws:iam::") && arn.size() >= 25) ctx.Set("aws:SourceAccount", std::string(arn.substr(13, 12)));
  if (!policy::TrustPolicyAllows(*trust, ctx))
    return PermissionDenied(fmt::format("the trust policy of {} does not allow {}", role.arn, service));
  return OkStatus();
}

}  // namespace paddock::iam::api
