#include "ecs/task/role_check.h"

#include <fmt/format.h>

#include "ecs/common/errors.h"

namespace paddock::ecs::task {
namespace {

// The override's role when the TaskOverride names one, else the revision's (agent TaskRoleArnOf).
std::string_view Effective(const boost::json::object* overrides, std::string_view key, std::string_view pinned) {
  if (overrides != nullptr)
    if (const boost::json::value* v = overrides->if_contains(key); v != nullptr && v->is_string() && !v->get_string().empty())
      return v->get_string();
  return pinned;
}

bool CannotAssume(const Status& s) {
  return s.code() == StatusCode::kNotFound || s.code() == StatusCode::kPermissionDenied ||
         s.code() == StatusCode::kInvalidArgument;
}

}  // namespace

std::string RoleNotAssumableMessage(std::string_view role_arn) {
  return fmt::format(
      "ECS was unable to assume the role '{}' that was provided for this task. Please verify that the role being "
      "passed has the proper trust relationship and permissions and that your IAM user has permissions to pass this "
      "role.",
      role_arn);
}

Status CheckLaunchRoles(const RoleCheck& check, const AccountId& account, const taskdef::LaunchView& view,
                        const boost::json::object* overrides) {
  if (!check) return OkStatus();
  for (std::string_view role : {Effective(overrides, "taskRoleArn", view.task_role_arn),
                                Effective(overrides, "executionRoleArn", view.execution_role_arn)}) {
    if (role.empty()) continue;
    if (Status s = check(account, role); !s.ok()) {
      if (!CannotAssume(s)) return s;
      return InvalidArgument(RoleNotAssumableMessage(role), ecs::Error::kRoleNotAssumable);
    }
  }
  return OkStatus();
}

}  // namespace paddock::ecs::task
