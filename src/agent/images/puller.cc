#include "agent/images/puller.h"

#include <fmt/format.h>

namespace paddock::agent::images {
namespace {

// 1536 → "1.5 KiB", as skopeo's bars count (powers of 1024).
std::string Bytes(uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n) / 1024.0;
  size_t unit = 0;
  while (v >= 1024.0 && unit + 1 < std::size(kUnits)) {
    v /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

}  // namespace

std::string FormatPullProgress(const PullProgress& p) {
  if (p.layers_total == 0) return "starting";
  return fmt::format("{}/{} layer{}, {} of {}", p.layers_done, p.layers_total, p.layers_total == 1 ? "" : "s",
                     Bytes(p.bytes_done), Bytes(p.bytes_total));
}

Status Puller::CheckAccess(const Reference& ref, PullContext&) {
  return Internal(fmt::format("this puller cannot check access to {}", ref.String()));
}

}  // namespace paddock::agent::images
