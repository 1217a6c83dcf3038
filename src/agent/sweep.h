// agent/sweep: which containers on the node an agent must remove because no task it runs owns
// them — the agent's half of "a task is STOPPED only when its containers are gone".
//
// A task's containers can outlive what the control plane knows of it: its record was marked
// STOPPED or removed behind the agent's back (its account deleted, a forced reap), or the agent was
// down when that happened. Every agent labels the containers it creates with two annotations
// (kOwnerAnnotation: the agent's AgentOptions::container_owner; kTaskAnnotation: the task id), and
// periodically removes those of its own whose task is neither assigned to it nor driven by it:
// containers first, then the task's network, then its files (agent.cc, Agent::Sweep).
//
//   SweepPlan gone = PlanSweep(*runtime.List(), "fargate-local", /*keep=*/{"<task id>", ...});
//
// Several agents may share one runtime (the server's Fargate agent and its [[ec2_instance]]
// agents share a crun root and an instance tag): a container is only ever removed by the agent
// whose owner annotation it carries. Containers without the annotations (made before they
// existed) are never touched.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/runtime/runtime.h"

namespace paddock::agent {

inline constexpr std::string_view kOwnerAnnotation = "io.paddock.agent";
inline constexpr std::string_view kTaskAnnotation = "io.paddock.task-id";

// The containers to remove, by task id: those annotated as `owner`'s whose task id is not in
// `keep` (the tasks assigned to the agent or driven by it). Pure.
using SweepPlan = std::map<std::string, std::vector<runtime::ContainerId>>;
SweepPlan PlanSweep(const std::vector<runtime::ContainerState>& containers, std::string_view owner,
                    const std::set<std::string>& keep);

}  // namespace paddock::agent
