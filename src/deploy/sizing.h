// deploy/sizing: a deployment's CPU and memory quantities, resolved to the task size ECS takes —
// on Fargate rounded up to the nearest size in Fargate's table (ADR D9), with a note saying so;
// on EC2 capacity passed through as written.
//
//   ASSIGN_OR_RETURN(TaskSize size, ResolveSize("500m", "256Mi", Capacity::kFargate));
//   // size.cpu_units == 512, size.memory_mib == 1024, size.rounded_up == true,
//   // size.note == "cpu 500m and memory 256Mi were rounded up to Fargate's 512 CPU units / 1024 MiB"
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "deploy/spec.h"

namespace paddock::deploy {

// CPU: vCPU as a decimal ("0.25", "2") or millicores ("500m"); 1 vCPU = 1024 units, rounded up to
// a whole unit. Zero, negative or malformed: kInvalidArgument naming the value.
StatusOr<int> ParseCpuUnits(std::string_view quantity);
// Memory: a binary ("512Mi", "2Gi") or decimal ("512M", "1G") suffix, or plain MiB ("512");
// rounded up to a whole MiB. Zero, negative or malformed: kInvalidArgument naming the value.
StatusOr<int> ParseMemoryMib(std::string_view quantity);

struct TaskSize {
  int cpu_units = 0;
  int memory_mib = 0;
  bool rounded_up = false;  // Fargate: the size differs from what was asked
  std::string note;         // when rounded_up, a sentence for the deployment's events
};

// Fargate / interruptible: the smallest (cpu, memory) pair of Fargate's table with cpu >= the asked
// CPU and memory >= the asked memory (0.25 vCPU: 0.5, 1, 2 GB; 0.5: 1-4 GB; 1: 2-8 GB; 2: 4-16 GB;
// 4: 8-30 GB, by 1 GB; 8: 16-60 GB by 4 GB; 16: 32-120 GB by 8 GB). Beyond 16 vCPU or 120 GB:
// kInvalidArgument naming Fargate's maximum. EC2: as asked (at least 128 MiB memory).
StatusOr<TaskSize> ResolveSize(std::string_view cpu, std::string_view memory, Capacity capacity);

}  // namespace paddock::deploy
