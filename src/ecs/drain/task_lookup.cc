#include "ecs/drain/task_lookup.h"

namespace paddock::ecs::drain {

StatusOr<std::vector<bool>> TasksLookup::NotStopped(store::ReadTxn& txn, const Scope& scope,
                                                    const std::vector<TaskRef>& tasks) {
  std::vector<task::Tasks::ClusterTaskId> refs;
  refs.reserve(tasks.size());
  for (const TaskRef& t : tasks) refs.push_back(task::Tasks::ClusterTaskId{t.cluster, t.id});
  return tasks_.NotStopped(txn, scope, refs);
}

StatusOr<bool> TasksLookup::AssignedAndNotStopped(std::string_view agent_id, std::string_view task_arn) {
  ASSIGN_OR_RETURN(std::optional<task::LaunchSpec> spec, tasks_.Assignment(agent_id, task_arn));
  return spec.has_value() && spec->last_status != "STOPPED";
}

}  // namespace paddock::ecs::drain
