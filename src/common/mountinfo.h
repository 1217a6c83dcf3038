#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace paddock {

// One line of /proc/<pid>/mountinfo (proc(5)): the fields Paddock reads, with mountinfo's octal
// escapes (\040 for a space, …) decoded.
struct MountInfo {
  std::string root;           // the mount's root within its filesystem
  std::string mount_point;
  std::string fstype;         // after the "-" separator
  std::string source;
  std::string super_options;  // comma-separated, as the kernel prints them
};

// The mounts of a mountinfo text, in its order. A line without the "-" separator is skipped.
std::vector<MountInfo> ParseMountInfo(std::string_view text);

// Whether comma-separated `options` has exactly `want` among them.
bool HasMountOption(std::string_view options, std::string_view want);

}  // namespace paddock
