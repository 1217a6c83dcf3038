#include "common/proc_routes.h"

#include <arpa/inet.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

namespace paddock {

std::vector<Ipv4Route> ParseIpv4Routes(std::string_view text) {
  std::vector<Ipv4Route> routes;
  std::istringstream in{std::string(text)};
  std::string line;
  std::getline(in, line);  // Iface Destination Gateway Flags RefCnt Use Metric Mask ...
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string iface, dest, gateway, flags, refcnt, use, metric, mask;
    if (!(fields >> iface >> dest >> gateway >> flags >> refcnt >> use >> metric >> mask)) continue;
    // The kernel prints each network-order word as a number.
    routes.push_back(Ipv4Route{.iface = std::move(iface),
                               .destination = ntohl(static_cast<uint32_t>(std::strtoul(dest.c_str(), nullptr, 16))),
                               .mask = ntohl(static_cast<uint32_t>(std::strtoul(mask.c_str(), nullptr, 16))),
                               .up = (std::strtoul(flags.c_str(), nullptr, 16) & 1) != 0});
  }
  return routes;
}

std::vector<Ipv4Route> ReadIpv4Routes() {
  std::ifstream in("/proc/thread-self/net/route");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ParseIpv4Routes(text);
}

}  // namespace paddock
