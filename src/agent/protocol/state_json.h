// agent/protocol/state_json: a container's state change as ECS's ContainerStateChange JSON
// (containerName, status, exitCode, reason, runtimeId, imageDigest, networkBindings) plus
// Paddock's healthStatus — the one codec for SubmitTaskStateChange/SubmitContainerStateChange
// (ecs/api), Paddock's agent protocol (wire.h) and the task record's networkBindings.
//
//   json::object o = ContainerChangeJson(change);
//   ContainerStateChange back = ContainerChangeFromJson(o);   // members of other types are skipped
#pragma once

#include <boost/json/object.hpp>

#include "agent/protocol/messages.h"

namespace paddock::agent::protocol {

boost::json::object NetworkBindingJson(const NetworkBinding& binding);
boost::json::object ContainerChangeJson(const ContainerStateChange& change);
ContainerStateChange ContainerChangeFromJson(const boost::json::object& o);

}  // namespace paddock::agent::protocol
