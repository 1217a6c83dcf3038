// agent/container_spec: turns one container of a pinned task definition (with its override and
// its resolved image) into the runtime's ContainerSpec. Pure: no files, no processes, so every
// ECS-to-OCI rule here is unit-tested without a runtime (container_spec_test.cc).
//
//   runtime::ContainerSpec cs = BuildContainerSpec(ContainerInput{...}, task_context);
#pragma once

#include <cstdint>
#include <string>

#include <boost/json/object.hpp>

#include "agent/images/image.h"
#include "agent/runtime/runtime.h"

namespace paddock::agent {

// What the whole task contributes to each of its containers.
struct TaskContext {
  std::string task_arn;
  uint64_t cpu_units = 0;   // the task's cpu ("256" → 256); 0: not set
  uint64_t memory_mib = 0;  // the task's memory in MiB; 0: not set
  std::string netns_path;   // the task's network namespace; empty: a private one
};

struct ContainerInput {
  runtime::ContainerId id;
  const boost::json::object& definition;  // the containerDefinitions entry
  const boost::json::object& overrides;   // its containerOverrides entry, or {}
  const images::ResolvedImage& image;
  std::string log_path;  // stdout and stderr; empty: /dev/null
};

runtime::ContainerSpec BuildContainerSpec(const ContainerInput& in, const TaskContext& task);

}  // namespace paddock::agent
