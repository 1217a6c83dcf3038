// Where this host keeps its cgroups, and the few files the agent reads or removes itself.
//
// crun writes every container's limits (it translates the OCI fields to v1 or v2 files); the
// agent only reads the OOM counter and removes cgroup directories crun leaves behind (crun
// deletes the leaf, never the parents it created).
//
//   ASSIGN_OR_RETURN(CgroupLayout layout, DetectCgroupLayout());
//   ASSIGN_OR_RETURN(uint64_t kills, ReadOomKillCount(layout, "/paddock/t1/web"));
//   RETURN_IF_ERROR(CreateCgroupWithLimits(layout, "/paddock/t1", CgroupLimits{.pids_max = 4096}));
//   RemoveCgroup(layout, "/paddock/t1");  // after every container under it is deleted
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace paddock::agent::runtime {

struct CgroupLayout {
  // Pure cgroup v2 (/sys/fs/cgroup is cgroup2). Otherwise v1 or hybrid (docs/runtime-notes.md).
  bool unified = false;
  // The mount point of the memory controller: the v1 memory hierarchy, or the v2 root.
  std::string memory_root;
  // The mount point of the cpu controller: the v1 cpu hierarchy, or the v2 root. Empty: none.
  std::string cpu_root;
  // The mount point of the pids controller: the v1 pids hierarchy, or the v2 root. Empty: none.
  std::string pids_root;
  // Every cgroup mount point (each v1 hierarchy and any cgroup2), where crun makes directories.
  std::vector<std::string> mount_points;
  // The host has swap accounting (v1 memory.memsw.*): then memory.swap = limit makes the
  // memory limit a hard limit including swap, as ECS sets it.
  bool swap_accounting = false;
};

// Reads /proc/self/mountinfo. FailedPrecondition when no memory controller is mounted.
StatusOr<CgroupLayout> DetectCgroupLayout();

// How many times the OOM killer killed a process of cgroup `path` (absolute from the hierarchy
// root): v1 memory.oom_control's oom_kill, v2 memory.events' oom_kill. NotFound if the cgroup
// is gone (after crun delete).
StatusOr<uint64_t> ReadOomKillCount(const CgroupLayout& layout, std::string_view path);

// What a cgroup made by CreateCgroupWithLimits bounds, for everything under it together. 0: that
// limit is not set.
struct CgroupLimits {
  uint64_t memory_limit_bytes = 0;
  uint64_t cpu_quota_us = 0;   // per cpu_period_us
  uint64_t cpu_period_us = 0;
  // Most processes and threads alive at once (pids.max): fork and clone fail with EAGAIN past it,
  // inside this cgroup only.
  uint64_t pids_max = 0;
};

// Makes cgroup `path` (and its missing parents) in the memory, cpu and (with pids_max) pids
// hierarchies and writes `limits`. v1: memory.limit_in_bytes (and memory.memsw.limit_in_bytes =
// the same with swap accounting, so swap does not extend it), cpu.cfs_period_us /
// cpu.cfs_quota_us, pids.max. v2: cpu and memory (and pids) enabled in every ancestor's
// cgroup.subtree_control, then memory.max (memory.swap.max 0 with swap), cpu.max, pids.max.
// crun makes the other hierarchies' directories when it puts a container under it.
// FailedPrecondition when a limit is asked of a controller the host has not mounted.
Status CreateCgroupWithLimits(const CgroupLayout& layout, std::string_view path, const CgroupLimits& limits);

// Removes cgroup `path` from every hierarchy, leaf-first through its empty subdirectories.
// Missing directories are fine; a cgroup that still has processes is left (and reported).
Status RemoveCgroup(const CgroupLayout& layout, std::string_view path);

}  // namespace paddock::agent::runtime
