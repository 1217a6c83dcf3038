#include "agent/task_credentials.h"

namespace paddock::agent {

StatusOr<metadata::RoleCredentials> TaskCredentialsCache::Get() {
  std::lock_guard lock(mu_);
  const TimePoint now = clock_.Now();
  if (held_ && held_->expiration - now >= metadata::kCredentialsRefreshBefore) return *held_;
  if (!failure_.ok() && now < failed_until_) return failure_;
  StatusOr<metadata::RoleCredentials> fresh = control_.TaskRoleCredentials(agent_id_, spec_);
  if (!fresh.ok()) {
    failure_ = fresh.status();
    failed_until_ = now + kFailureHold;
    return failure_;
  }
  failure_ = OkStatus();
  held_ = *fresh;
  return fresh;
}

}  // namespace paddock::agent
