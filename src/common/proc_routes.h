#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace paddock {

// One IPv4 route of /proc/<…>/net/route (the main table), addresses in host order.
struct Ipv4Route {
  std::string iface;
  uint32_t destination = 0;
  uint32_t mask = 0;
  bool up = false;  // RTF_UP
};

// The routes of a /proc/net/route text (its header line skipped; malformed lines too).
std::vector<Ipv4Route> ParseIpv4Routes(std::string_view text);

// The calling thread's network namespace's routes (/proc/thread-self/net/route: /proc/self/net
// would be the main thread's namespace); none when it cannot be read.
std::vector<Ipv4Route> ReadIpv4Routes();

}  // namespace paddock
