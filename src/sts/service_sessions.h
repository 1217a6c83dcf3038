// sts/service_sessions: the role sessions a service holds on behalf of its resources — ECS task
// roles (the credentials a task's containers read from 169.254.170.2/v2/credentials/<id>), and
// later execution roles. Each is a real STS session minted by Sessions::IssueRoleSession, so it
// authenticates on every API as "arn:aws:sts::<acct>:assumed-role/<role>/<session name>".
//
//   ServiceRoleSessions tasks(sessions, roles, clock, "ecs-tasks.amazonaws.com");
//   ASSIGN_OR_RETURN(IssuedCredentials c, tasks.Get(account, "arn:aws:iam::…:role/app", task_id));
//
// Refresh. A session is issued for kSessionDuration (6 h, as ECS's task credentials); Get hands out
// the same set until less than kRefreshBefore (30 min) is left, then mints a new one. botocore
// refreshes 15 min before Expiration (10 min mandatory), so a client never sees a set it must
// refresh at once. A superseded set is not revoked: it stays valid until its own expiry, so a
// client that read it a moment before keeps working.
//
// Checks. Before each mint the role must exist in the account (RoleDirectory::FindRole; NotFound
// otherwise) and its trust policy must admit the service principal (ServiceMayAssume;
// PermissionDenied otherwise). The messages are ECS's own wording and meant for the container
// (the credentials endpoint answers them). A set already handed out stays valid after the role's
// trust or existence changes, until its expiry: as on AWS.
//
// Memory. Nothing tells this when a task stops: a held set nobody asks for again is dropped once
// it is due for refresh (pruned at most once a minute), so the map holds the sessions asked for in
// the last kSessionDuration - kRefreshBefore.
//
// Thread safety: thread-safe; one mutex, held while minting (one store write).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "sts/roles.h"
#include "sts/sessions.h"

namespace paddock::sts {

class ServiceRoleSessions {
 public:
  static constexpr Duration kSessionDuration = std::chrono::hours(6);
  static constexpr Duration kRefreshBefore = std::chrono::minutes(30);

  // `roles` null: no role can be found (every Get is NotFound). `service` is the service
  // principal the roles' trust policies must admit.
  ServiceRoleSessions(Sessions& sessions, RoleDirectory* roles, Clock& clock, std::string service);

  // The credentials of a session of role `role_arn` (of `account`) named `session_name`
  // (2..64 of [\w+=,.@-]; a task id is), fresh ones when none is held or the held set has less
  // than kRefreshBefore left. Errors: NotFound (no such role), PermissionDenied (its trust does
  // not admit the service), InvalidArgument (a role of another account), or the store's.
  StatusOr<IssuedCredentials> Get(const AccountId& account, std::string_view role_arn, std::string_view session_name);

  // Get's checks without minting: whether the service could assume `role_arn` for a resource of
  // `account` now (ECS's launch-time role check, ecs/task/role_check.h). OK, or Get's errors.
  Status MayAssume(const AccountId& account, std::string_view role_arn);

  // How many sets are held (tests).
  size_t held();

 private:
  using Key = std::tuple<std::string, std::string, std::string>;  // account, role ARN, session name

  // The role, if the service may assume it (the checks MayAssume names). Takes no lock.
  StatusOr<AssumableRole> Find(const AccountId& account, std::string_view role_arn);

  Sessions& sessions_;
  RoleDirectory* const roles_;
  Clock& clock_;
  const std::string service_;

  std::mutex mu_;
  std::map<Key, IssuedCredentials> held_;  // GUARDED_BY(mu_)
  TimePoint next_prune_;                   // GUARDED_BY(mu_)
};

}  // namespace paddock::sts
