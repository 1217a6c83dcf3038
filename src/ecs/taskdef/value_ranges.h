// ecs/taskdef/value_ranges: the ranges ECS allows for the numeric fields of a task definition,
// checked at RegisterTaskDefinition (docs/contracts/task-definition.md, "Value ranges"):
//   container  restartPolicy.restartAttemptPeriod 60-1800, restartPolicy.ignoredExitCodes at most
//              50; healthCheck interval 5-300, timeout 2-60, retries 1-10, startPeriod 0-300;
//              startTimeout and stopTimeout 0 or more (2-120 for a FARGATE definition);
//              linuxParameters swappiness 0-100, maxSwap and sharedMemorySize 0 or more, tmpfs
//              size 1 or more; ulimits 0 or more (or -1, unlimited), soft at most hard
//   task       ephemeralStorage.sizeInGiB 21-200
// (cpu, memory and the ports are checked where the definition is validated: validate.cc.)
// A value outside its range is a ClientException in ECS's form for a setting it refuses,
// "Invalid '<field>' setting for container '<name>'." followed by the range.
//
//   RETURN_IF_ERROR(CheckContainerRanges(container_definition, {.fargate = true}));
//   RETURN_IF_ERROR(CheckTaskRanges(definition));
// Pure: no store, no clock.
#pragma once

#include <string_view>

#include <boost/json/object.hpp>

#include "common/status.h"

namespace paddock::ecs::taskdef {

// What the ranges depend on beyond the container itself.
struct RangeRules {
  // The definition requires FARGATE: startTimeout and stopTimeout 2-120 (ECS's Fargate range).
  bool fargate = false;
  // Test mode (`paddock server --short-timings`): the timing minimums above ECS's lowest useful
  // value — restartAttemptPeriod 60, healthCheck interval 5 and timeout 2, a Fargate
  // startTimeout/stopTimeout 2 — become 1 (0 for the timeouts), so that tests of restarts, health
  // checks and stops do not wait a minute. The maximums stay ECS's.
  bool short_timings = false;
};

Status CheckContainerRanges(const boost::json::object& container_definition, const RangeRules& rules);

// ECS's form for a container setting it refuses, followed by `rule`: ClientException
// "Invalid '<field>' setting for container '<container>'. <rule>" (port_mappings.h uses it too).
Status InvalidContainerSetting(std::string_view field, std::string_view container, std::string_view rule);

// The task-level ranges (ephemeralStorage).
Status CheckTaskRanges(const boost::json::object& definition);

}  // namespace paddock::ecs::taskdef
