#include "agent/net/internal/command.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/subprocess.h"

namespace paddock::agent::net::internal {
namespace {

// Output beyond this is dropped: `ip` says a line or two, and an error message must stay short.
constexpr size_t kMaxOutput = 64 * 1024;

// `data` into the memory file, rewound for the child to read from the start.
Status WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Internal(fmt::format("write: {}", std::strerror(errno)));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  if (lseek(fd, 0, SEEK_SET) < 0) return Internal(fmt::format("lseek: {}", std::strerror(errno)));
  return OkStatus();
}

}  // namespace

StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv, std::string_view input,
                                   std::chrono::milliseconds timeout) {
  if (argv.empty()) return InvalidArgument("RunCommand: empty argv");
  ASSIGN_OR_RETURN(subprocess::UniqueFd in, subprocess::MakeMemfd("pdk-stdin"));
  ASSIGN_OR_RETURN(subprocess::UniqueFd out, subprocess::MakeMemfd("pdk-stdout"));
  ASSIGN_OR_RETURN(subprocess::UniqueFd err, subprocess::MakeMemfd("pdk-stderr"));
  RETURN_IF_ERROR(WriteAll(in.get(), input));

  auto started = subprocess::Spawn(argv, subprocess::Stdio{in.get(), out.get(), err.get()});
  if (!started.ok()) return Unavailable(fmt::format("cannot run {}: {}", argv[0], started.status().message()));
  subprocess::Child child = std::move(started).value();
  StatusOr<std::optional<int>> status = subprocess::WaitChild(child, timeout);
  if (!status.ok() || !*status) {
    subprocess::KillAndReap(child);
    if (!status.ok()) return Status(status.status().code(), fmt::format("{}: {}", argv[0], status.status().message()));
    return Unavailable(fmt::format("{}: did not finish within {} ms and was killed", argv[0], timeout.count()));
  }
  CommandResult result;
  result.exit_code = **status;  // 128 + N when killed by signal N
  result.out = subprocess::ReadMemfd(out.get(), kMaxOutput);
  result.err = subprocess::ReadMemfd(err.get(), kMaxOutput);
  return result;
}

namespace {

// /usr/sbin/<name> (or /sbin, /usr/bin, /bin), the first that is executable; else `otherwise`.
std::string FindSystemBinary(std::string_view name, std::string otherwise) {
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    std::string candidate = std::string(dir) + std::string(name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return otherwise;
}

}  // namespace

const std::string& IpBinary() {
  static const std::string path = FindSystemBinary("ip", "ip");
  return path;
}

const std::string& BridgeBinary() {
  static const std::string path = FindSystemBinary("bridge", "bridge");
  return path;
}

const std::string& NftBinary() {
  static const std::string path = FindSystemBinary("nft", "");
  return path;
}

}  // namespace paddock::agent::net::internal
