#include "agent/logs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace paddock::agent {
namespace fs = std::filesystem;

StatusOr<bool> RotateLog(const fs::path& path, uint64_t max_bytes) {
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) return false;  // not there (yet)
  if (size <= max_bytes) return false;
  fs::path old = path;
  old += ".1";
  if (!fs::copy_file(path, old, fs::copy_options::overwrite_existing, ec))
    return Internal(fmt::format("copy {} to {}: {}", path.string(), old.string(), ec.message()));
  if (::truncate(path.c_str(), 0) != 0)
    return Internal(fmt::format("truncate {}: {}", path.string(), std::strerror(errno)));
  return true;
}

Status WriteLogIndex(const fs::path& dir, const std::vector<std::string>& names) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal(fmt::format("create {}: {}", dir.string(), ec.message()));
  std::ofstream out(dir / "containers", std::ios::trunc);
  for (const auto& n : names) out << n << '\n';
  out.close();
  if (!out) return Internal(fmt::format("write {}", (dir / "containers").string()));
  return OkStatus();
}

Status MarkLogsStopped(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return OkStatus();  // nothing was logged
  std::ofstream out(dir / "STOPPED", std::ios::trunc);
  out.close();
  if (!out) return Internal(fmt::format("write {}", (dir / "STOPPED").string()));
  return OkStatus();
}

size_t RemoveExpiredLogs(const fs::path& logs_root, std::chrono::seconds keep) {
  std::error_code ec;
  size_t removed = 0;
  fs::directory_iterator it(logs_root, ec), end;
  if (ec) return 0;
  const auto now = fs::file_time_type::clock::now();
  for (; it != end; it.increment(ec)) {
    if (ec) break;
    std::error_code e2;
    auto t = fs::last_write_time(it->path() / "STOPPED", e2);
    if (e2 || now - t < keep) continue;
    fs::remove_all(it->path(), e2);
    if (!e2) ++removed;
  }
  return removed;
}

}  // namespace paddock::agent
