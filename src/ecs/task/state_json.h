// ecs/task/state_json: a container's state change as ECS's ContainerStateChange JSON
// (containerName, status, exitCode, reason, runtimeId, imageDigest, networkBindings) plus
// Paddock's healthStatus — the one codec for SubmitTaskStateChange/SubmitContainerStateChange
// (ecs/api), Paddock's agent protocol (agent/remote) and the task record's networkBindings.
//
//   json::object o = ContainerChangeJson(change);
//   ContainerStateChange back = ContainerChangeFromJson(o);   // members of other types are skipped
#pragma once

#include <boost/json/object.hpp>

#include "ecs/task/tasks.h"

namespace paddock::ecs::task {

boost::json::object NetworkBindingJson(const NetworkBinding& binding);
boost::json::object ContainerChangeJson(const ContainerStateChange& change);
ContainerStateChange ContainerChangeFromJson(const boost::json::object& o);

}  // namespace paddock::ecs::task
