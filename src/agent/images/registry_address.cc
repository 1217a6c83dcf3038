#include "agent/images/registry_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/proc_routes.h"

namespace paddock::agent::images {
namespace {

uint32_t V4Of(const IpAddress& a) {
  return (uint32_t{a.bytes[0]} << 24) | (uint32_t{a.bytes[1]} << 16) | (uint32_t{a.bytes[2]} << 8) | a.bytes[3];
}

bool InV4(uint32_t ip, uint32_t net, int bits) {
  const uint32_t mask = bits == 0 ? 0 : ~uint32_t{0} << (32 - bits);
  return (ip & mask) == (net & mask);
}

bool IsZero(const std::array<uint8_t, 16>& b, size_t from, size_t to) {
  return std::all_of(b.begin() + static_cast<long>(from), b.begin() + static_cast<long>(to),
                     [](uint8_t v) { return v == 0; });
}

}  // namespace

IpAddress IpAddress::V4(uint32_t host_order) {
  IpAddress a;
  a.bytes[0] = static_cast<uint8_t>(host_order >> 24);
  a.bytes[1] = static_cast<uint8_t>(host_order >> 16);
  a.bytes[2] = static_cast<uint8_t>(host_order >> 8);
  a.bytes[3] = static_cast<uint8_t>(host_order);
  return a;
}

StatusOr<IpAddress> IpAddress::Parse(std::string_view text) {
  const std::string s(text);
  IpAddress a;
  if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) return a;
  a.v6 = true;
  if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) return a;
  return InvalidArgument(fmt::format("'{}' is not an IP address", text));
}

std::string IpAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), buf, sizeof buf);
  return buf;
}

IpAddress IpAddress::Unmapped() const {
  if (!v6 || !IsZero(bytes, 0, 10) || bytes[10] != 0xff || bytes[11] != 0xff) return *this;
  IpAddress a;
  std::copy(bytes.begin() + 12, bytes.end(), a.bytes.begin());
  return a;
}

std::string_view AddressScopeText(AddressScope scope) {
  switch (scope) {
    case AddressScope::kRemote: return "another machine";
    case AddressScope::kLoopback: return "a loopback address";
    case AddressScope::kLinkLocal: return "a link-local address";
    case AddressScope::kUnspecified: return "an unspecified address (this node)";
    case AddressScope::kNodeOwn: return "one of this node's own addresses";
    case AddressScope::kTaskNetwork: return "an address of this node's tasks";
  }
  return "?";
}

NodeAddresses NodeAddresses::Read(std::vector<std::string> task_interface_prefixes) {
  NodeAddresses node;
  node.task_interface_prefixes = std::move(task_interface_prefixes);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr) continue;
      IpAddress a;
      if (i->ifa_addr->sa_family == AF_INET) {
        std::memcpy(a.bytes.data(), &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, 4);
      } else if (i->ifa_addr->sa_family == AF_INET6) {
        a.v6 = true;
        std::memcpy(a.bytes.data(), &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, 16);
      } else {
        continue;
      }
      node.own.push_back(a);
    }
    freeifaddrs(list);
  }
  for (const Ipv4Route& r : ReadIpv4Routes())
    if (r.up) node.routes.push_back(Route{r.destination, r.mask, r.iface});
  return node;
}

AddressScope Classify(const IpAddress& address, const NodeAddresses& node) {
  const IpAddress a = address.Unmapped();
  if (!a.v6) {
    const uint32_t ip = V4Of(a);
    if (InV4(ip, 0x7f000000, 8)) return AddressScope::kLoopback;
    if (InV4(ip, 0xa9fe0000, 16)) return AddressScope::kLinkLocal;
    if (InV4(ip, 0x00000000, 8)) return AddressScope::kUnspecified;
  } else {
    if (IsZero(a.bytes, 0, 15) && a.bytes[15] == 1) return AddressScope::kLoopback;
    if (IsZero(a.bytes, 0, 16)) return AddressScope::kUnspecified;
    if (a.bytes[0] == 0xfe && (a.bytes[1] & 0xc0) == 0x80) return AddressScope::kLinkLocal;
  }
  for (const IpAddress& own : node.own)
    if (own.Unmapped() == a) return AddressScope::kNodeOwn;
  if (!a.v6) {
    const uint32_t ip = V4Of(a);
    const Route* best = nullptr;
    for (const Route& r : node.routes) {
      if ((ip & r.mask) != (r.destination & r.mask)) continue;
      if (best == nullptr || r.mask > best->mask) best = &r;  // masks are contiguous: larger is longer
    }
    if (best != nullptr) {
      for (const std::string& prefix : node.task_interface_prefixes)
        if (!prefix.empty() && best->interface.starts_with(prefix)) return AddressScope::kTaskNetwork;
    }
  }
  return AddressScope::kRemote;
}

std::string RegistryHostOf(std::string_view domain) {
  if (domain == "docker.io") return "registry-1.docker.io";
  if (domain.starts_with('[')) {
    size_t close = domain.find(']');
    return std::string(domain.substr(1, close == std::string_view::npos ? std::string_view::npos : close - 1));
  }
  return std::string(domain.substr(0, domain.find(':')));
}

StatusOr<std::vector<IpAddress>> ResolveRegistryHost(const std::string& host) {
  if (auto literal = IpAddress::Parse(host); literal.ok()) return std::vector<IpAddress>{*literal};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &list);
  if (rc != 0) return Unavailable(gai_strerror(rc));
  std::vector<IpAddress> out;
  for (addrinfo* i = list; i != nullptr; i = i->ai_next) {
    IpAddress a;
    if (i->ai_family == AF_INET) {
      std::memcpy(a.bytes.data(), &reinterpret_cast<sockaddr_in*>(i->ai_addr)->sin_addr, 4);
    } else if (i->ai_family == AF_INET6) {
      a.v6 = true;
      std::memcpy(a.bytes.data(), &reinterpret_cast<sockaddr_in6*>(i->ai_addr)->sin6_addr, 16);
    } else {
      continue;
    }
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  freeaddrinfo(list);
  if (out.empty()) return Unavailable("no address");
  return out;
}

}  // namespace paddock::agent::images
