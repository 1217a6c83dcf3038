#include "common/ids.h"

#include <cctype>

namespace paddock {

bool IsAccountId(std::string_view s) {
  if (s.size() != 12) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

bool IsRegionName(std::string_view s) {
  if (s.empty() || s.size() > 32) return false;
  bool saw_dash = false;
  for (char c : s) {
    if (c == '-') { saw_dash = true; continue; }
    if (!std::islower(static_cast<unsigned char>(c)) && !std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return saw_dash && s.front() != '-' && s.back() != '-';
}

}  // namespace paddock
