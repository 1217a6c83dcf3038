// Runs a short-lived helper program (here: iproute2's `ip`) and collects what it said.
//
//   ASSIGN_OR_RETURN(CommandResult r, RunCommand({"ip", "-batch", "-"}, "link set lo up\n"));
//   if (r.exit_code != 0) return Internal("ip: " + r.err);
//
// The child's stdin, stdout and stderr are memory files, not pipes: nothing can deadlock on a
// full pipe, and the caller never gets SIGPIPE when the child exits before reading its input.
// The child is waited for by its own pid (a pidfd), so a reaper elsewhere in the process that
// waits with P_ALL would steal its exit status: such a reaper must wait per pid instead.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace paddock::agent::net::internal {

struct CommandResult {
  int exit_code = 0;  // 128 + signal number when the child was killed by a signal
  std::string out;
  std::string err;
};

// Runs argv[0] (looked up in PATH when it has no '/') with `input` on stdin. Fails when the
// program cannot be started or outlives `timeout` (it is then killed); a non-zero exit is not a
// failure here, it is reported in the result.
// REQUIRES: !argv.empty()
StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv, std::string_view input,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(10));

// The absolute path of iproute2's `ip` (in /usr/sbin, /sbin, /usr/bin or /bin), or "ip" to leave
// the lookup to PATH.
const std::string& IpBinary();

// The absolute path of iproute2's `bridge` (as IpBinary): the overlay's forwarding entries.
const std::string& BridgeBinary();

// The absolute path of nftables' `nft` (as IpBinary), or "" when there is none.
const std::string& NftBinary();

}  // namespace paddock::agent::net::internal
