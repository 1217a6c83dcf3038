#include "agent/runtime/runtime.h"

#include <algorithm>

namespace paddock::agent::runtime {

bool IsValidContainerId(std::string_view id) {
  if (id.empty() || id.size() > 64 || id == "." || id == "..") return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
  });
}

std::string_view ContainerStatusName(ContainerStatus s) {
  switch (s) {
    case ContainerStatus::kCreated: return "created";
    case ContainerStatus::kRunning: return "running";
    case ContainerStatus::kStopped: return "stopped";
  }
  return "unknown";
}

uint64_t CpuQuotaUs(uint64_t units) {
  // The kernel refuses quotas under 1 ms.
  return std::max<uint64_t>(1000, units * kCpuPeriodUs / 1024);
}

}  // namespace paddock::agent::runtime
