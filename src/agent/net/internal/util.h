// Helpers shared by agent/net's files (defined in net.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "agent/net/net.h"
#include "common/status.h"

namespace paddock::agent::net::internal {

// Every name and range in `options` (bridges, prefixes, chain prefix, dynamic port range).
Status ValidateOptions(const NetworkOptions& options);
// [A-Za-z0-9_-]{1,64}
Status ValidateTaskId(std::string_view task_id);
// "a.b.c.d" of a host-order address.
std::string Ipv4(uint32_t ip);

struct Cidr {
  uint32_t ip = 0;
  int prefix_length = 0;
  uint32_t mask() const { return ~uint32_t{0} << (32 - prefix_length); }
};
// "a.b.c.d/len" with len in 1-30.
StatusOr<Cidr> ParseCidr(std::string_view text);

}  // namespace paddock::agent::net::internal

namespace paddock::agent::net::internal {

// "<chain_prefix>-<suffix>", e.g. "PADDOCK-DNAT".
inline std::string ChainName(const NetworkOptions& options, std::string_view suffix) {
  return options.chain_prefix + "-" + std::string(suffix);
}

}  // namespace paddock::agent::net::internal
