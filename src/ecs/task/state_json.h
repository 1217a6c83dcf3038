// ecs/task/state_json: the task owner's names for the agent protocol's state-change codec
// (agent/protocol/state_json.h), which SubmitTaskStateChange/SubmitContainerStateChange (ecs/api)
// and the task record's networkBindings use too.
#pragma once

#include "agent/protocol/state_json.h"
#include "ecs/task/tasks.h"

namespace paddock::ecs::task {

using agent::protocol::ContainerChangeFromJson;
using agent::protocol::ContainerChangeJson;
using agent::protocol::NetworkBindingJson;

}  // namespace paddock::ecs::task
