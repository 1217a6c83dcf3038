#include "agent/task_credentials.h"

namespace paddock::agent {

StatusOr<metadata::RoleCredentials> TaskCredentialsCache::Get() {
  std::lock_guard lock(mu_);
  if (held_ && held_->expiration - clock_.Now() >= metadata::kCredentialsRefreshBefore) return *held_;
  ASSIGN_OR_RETURN(metadata::RoleCredentials fresh, control_.TaskRoleCredentials(agent_id_, spec_));
  held_ = fresh;
  return fresh;
}

}  // namespace paddock::agent
