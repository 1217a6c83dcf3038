#include "agent/task_credentials.h"

namespace paddock::agent {

StatusOr<metadata::RoleCredentials> TaskCredentialsCache::Get() {
  std::lock_guard lock(mu_);
  const TimePoint now = clock_.Now();
  const bool due = !held_ || held_->expiration - now < metadata::kCredentialsRefreshBefore;
  if (due && now >= next_ask_) {
    next_ask_ = now + kAskInterval;
    StatusOr<metadata::RoleCredentials> answer = control_.TaskRoleCredentials(agent_id_, spec_);
    failure_ = answer.status();
    if (answer.ok()) held_ = *std::move(answer);
  }
  if (held_ && (failure_.ok() || held_->expiration > now)) return *held_;
  return failure_;
}

}  // namespace paddock::agent
