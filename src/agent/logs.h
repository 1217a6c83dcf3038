// agent/logs: per-container log files under <state-dir>/logs/<task id>/.
//
//   <name>.log     the container's stdout and stderr, interleaved (crun writes both to one fd
//                  opened O_APPEND), written by the container directly
//   <name>.log.1   the previous part, after one rotation (at most one kept)
//   containers     the task's container names in definition order, one a line (for `paddock logs`)
//   STOPPED        written when the agent has reported the task STOPPED; its mtime is when
//
// Bounded by truncate-copy: a rename would not bound anything, since the container keeps
// writing through its open fd to the renamed inode. Instead RotateLog copies the file to `.1`
// and truncates the original to 0; the container's fd is O_APPEND, so its next write lands at
// the new end (offset 0) and no hole is left. Lines written between the copy and the truncate
// are lost (a window of one copy of at most `max_bytes`), the usual copytruncate trade-off. Disk
// use per container is at most about 2 × max_bytes plus what is written between two checks.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/status.h"

namespace paddock::agent {

inline constexpr uint64_t kDefaultMaxLogBytes = 10 * 1024 * 1024;

// When `path` is larger than max_bytes: copies it over `path`.1 and truncates it to 0. Returns
// whether it rotated. A missing file is not an error (false).
StatusOr<bool> RotateLog(const std::filesystem::path& path, uint64_t max_bytes);

// Writes `dir`/containers (names one a line), creating `dir`.
Status WriteLogIndex(const std::filesystem::path& dir, const std::vector<std::string>& names);
// Writes `dir`/STOPPED.
Status MarkLogsStopped(const std::filesystem::path& dir);
// Removes every task directory under `logs_root` whose STOPPED marker is older than `keep`
// (by its mtime against the system clock). Returns how many it removed.
size_t RemoveExpiredLogs(const std::filesystem::path& logs_root, std::chrono::seconds keep);

}  // namespace paddock::agent
