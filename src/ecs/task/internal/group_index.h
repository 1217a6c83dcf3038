// ecs/task/internal/group_index: the task_by_group row, written by tasks.cc and protection.cc.
//
// Key (account, region, cluster, group, desiredStatus, id). Value: the task's stamp — the version
// of its record and the expiry of its scale-in protection when the row was written — so a reader
// that holds the task as GroupTask (Tasks::RefreshGroup, the service scheduler's projection)
// re-reads it only when one of them moved. Every write of a task record bumps its version and
// rewrites the stamp in the same transaction, as does every change of its protection. A row
// written before stamps existed has "" and is re-read every time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "common/ids.h"
#include "ecs/common/records.h"

namespace paddock::ecs::task::internal {

inline constexpr std::string_view kByGroup = "task_by_group";

inline std::string GroupRowKey(const Scope& s, std::string_view cluster, std::string_view group,
                               std::string_view desired, std::string_view id) {
  return ScopeKey(s).Str(cluster).Str(group).Str(desired).Str(id).Done();
}

// `protection`: the task_protection row's value (expiry, epoch ms), if any.
inline std::string GroupStamp(int64_t version, const std::optional<std::string>& protection) {
  return protection ? fmt::format("{}/{}", version, *protection) : std::to_string(version);
}

}  // namespace paddock::ecs::task::internal
