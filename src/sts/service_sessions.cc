#include "sts/service_sessions.h"

#include <fmt/format.h>

namespace paddock::sts {

ServiceRoleSessions::ServiceRoleSessions(Sessions& sessions, RoleDirectory* roles, Clock& clock, std::string service)
    : sessions_(sessions), roles_(roles), clock_(clock), service_(std::move(service)) {}

StatusOr<IssuedCredentials> ServiceRoleSessions::Get(const AccountId& account, std::string_view role_arn,
                                                     std::string_view session_name) {
  const TimePoint now = clock_.Now();
  Key key{account.str(), std::string(role_arn), std::string(session_name)};
  std::lock_guard lock(mu_);
  // Sets nobody asked for lately (their resource stopped) go once they would be
  // replaced anyway: the map holds at most the resources of the last kSessionDuration.
  if (now >= next_prune_) {
    std::erase_if(held_, [&](const auto& e) { return e.second.expiration - now < kRefreshBefore; });
    next_prune_ = now + std::chrono::minutes(1);
  }
  if (auto it = held_.find(key); it != held_.end()) {
    if (it->second.expiration - now >= kRefreshBefore) return it->second;
    held_.erase(it);  // superseded (still valid until its own expiry)
  }
  ASSIGN_OR_RETURN(AssumableRole role, Find(account, role_arn));
  RoleSessionSpec spec;
  spec.session_name = std::string(session_name);
  ASSIGN_OR_RETURN(IssuedCredentials issued, sessions_.IssueRoleSession(account, role, spec, kSessionDuration, now));
  held_.emplace(std::move(key), issued);
  return issued;
}

StatusOr<AssumableRole> ServiceRoleSessions::Find(const AccountId& account, std::string_view role_arn) {
  // A role passes only to its own account's resources (iam:PassRole is checked at launch; this is
  // the backstop: no task mints another account's session).
  if (!role_arn.starts_with(fmt::format("arn:aws:iam::{}:role/", account.str())))
    return InvalidArgument(fmt::format("Role {} is not a role of account {}.", role_arn, account.str()));
  const std::string cannot = fmt::format("Unable to assume role {} for {}: ", role_arn, service_);
  if (roles_ == nullptr) return NotFound(cannot + "the role does not exist.");
  ASSIGN_OR_RETURN(std::optional<AssumableRole> role, roles_->FindRole(account, role_arn));
  if (!role) return NotFound(cannot + "the role does not exist.");
  if (Status s = roles_->ServiceMayAssume(*role, service_); !s.ok()) {
    if (s.code() != StatusCode::kPermissionDenied) return s;
    return PermissionDenied(cannot + fmt::format("its trust policy does not allow {} to call sts:AssumeRole.", service_));
  }
  return *std::move(role);
}

Status ServiceRoleSessions::MayAssume(const AccountId& account, std::string_view role_arn) {
  return Find(account, role_arn).status();
}

size_t ServiceRoleSessions::held() {
  std::lock_guard lock(mu_);
  return held_.size();
}

}  // namespace paddock::sts
