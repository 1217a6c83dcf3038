#include "common/mountinfo.h"

#include <sstream>

namespace paddock {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

std::vector<MountInfo> ParseMountInfo(std::string_view text) {
  std::vector<MountInfo> mounts;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    // id parent maj:min root mount-point options [optional fields] - fstype source super-options
    std::istringstream fields(line);
    std::string id, parent, dev, root, mount_point, options, f;
    fields >> id >> parent >> dev >> root >> mount_point >> options;
    bool separated = false;
    while (fields >> f) {
      if (f == "-") {
        separated = true;
        break;
      }
    }
    if (!separated) continue;
    std::string fstype, source, super_options;
    fields >> fstype >> source >> super_options;
    mounts.push_back(MountInfo{.root = Unescape(root),
                               .mount_point = Unescape(mount_point),
                               .fstype = std::move(fstype),
                               .source = Unescape(source),
                               .super_options = std::move(super_options)});
  }
  return mounts;
}

bool HasMountOption(std::string_view options, std::string_view want) {
  size_t start = 0;
  while (start <= options.size()) {
    size_t comma = options.find(',', start);
    if (comma == std::string_view::npos) comma = options.size();
    if (options.substr(start, comma - start) == want) return true;
    start = comma + 1;
  }
  return false;
}

}  // namespace paddock
