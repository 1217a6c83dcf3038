// ecs/drain/task_lookup: DrainHolds' view of tasks (TaskLookup) over the task owner, ecs/task's
// Tasks: which tasks are not STOPPED (read in the holds' own transaction), and which are assigned
// to the agent that asks.
//
//   TasksLookup lookup(tasks);
//   DrainHolds holds(store, lookup);
#pragma once

#include "ecs/drain/drain_holds.h"
#include "ecs/task/tasks.h"

namespace paddock::ecs::drain {

class TasksLookup final : public TaskLookup {
 public:
  explicit TasksLookup(task::Tasks& tasks) : tasks_(tasks) {}
  StatusOr<std::vector<bool>> NotStopped(store::ReadTxn& txn, const Scope& scope,
                                         const std::vector<TaskRef>& tasks) override;
  StatusOr<bool> AssignedAndNotStopped(std::string_view agent_id, std::string_view task_arn) override;

 private:
  task::Tasks& tasks_;
};

}  // namespace paddock::ecs::drain
