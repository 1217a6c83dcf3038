// agent/images/registry_address: where a registry named in a tenant's image reference is, seen from
// the node that would pull from it. The node's skopeo runs with the node's network identity: a
// registry "127.0.0.1:9998" would make it connect to whatever listens on the node's loopback, a
// link-local one to the cloud's metadata service, one of the node's own addresses to its
// services, and an address routed to the node's tasks to another tenant's task (the node
// reaches every task). So before a task's pull, its registry's host is resolved here and every
// address it resolves to is classified; any that is not remote refuses the pull unless the node's
// operator listed the registry ([images] local_registries).
//
//   ASSIGN_OR_RETURN(std::vector<IpAddress> addresses, ResolveRegistryHost(RegistryHostOf(ref.domain)));
//   NodeAddresses node = NodeAddresses::Read({"pdv-", "paddock1"});
//   for (const IpAddress& a : addresses)
//     if (Classify(a, node) != AddressScope::kRemote) return Refuse(...);
//
// What this does not see: skopeo resolves the name again (a name whose answers change between the
// two lookups), and follows a registry's redirects and token realms to other hosts; see
// docs/contracts/image.md, "Registries and credentials".
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace paddock::agent::images {

struct IpAddress {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};  // network order; IPv4 in the first four

  static IpAddress V4(uint32_t host_order);
  // "a.b.c.d" or an IPv6 literal (no brackets); InvalidArgument otherwise.
  static StatusOr<IpAddress> Parse(std::string_view text);
  std::string ToString() const;
  // ::ffff:a.b.c.d as a.b.c.d; anything else as it is.
  IpAddress Unmapped() const;
  friend bool operator==(const IpAddress&, const IpAddress&) = default;
};

enum class AddressScope {
  kRemote,       // another machine: what registries are
  kLoopback,     // 127.0.0.0/8, ::1
  kLinkLocal,    // 169.254.0.0/16 (cloud metadata services, Paddock's own endpoints), fe80::/10
  kUnspecified,  // 0.0.0.0/8, :: — connecting there reaches the node itself
  kNodeOwn,      // an address of one of the node's interfaces
  kTaskNetwork,  // routed to the node's tasks (a VPC transit, the bridge-mode bridge)
};

// "a loopback address", "one of this node's own addresses", ...: for messages.
std::string_view AddressScopeText(AddressScope scope);

// One IPv4 route of the node's main table (/proc/net/route).
struct Route {
  uint32_t destination = 0;  // host order
  uint32_t mask = 0;         // host order
  std::string interface;
};

// What the node knows of itself: its interfaces' addresses and its IPv4 routes, and which
// interfaces lead to tasks (by name prefix).
struct NodeAddresses {
  std::vector<IpAddress> own;
  std::vector<Route> routes;
  std::vector<std::string> task_interface_prefixes;

  // This host now: getifaddrs(3) and /proc/net/route (an unreadable one is no routes).
  static NodeAddresses Read(std::vector<std::string> task_interface_prefixes);
};

// The scope of `address` on `node`: loopback, link-local and unspecified by their ranges (IPv4
// mapped into IPv6 as IPv4), then the node's own addresses, then the interface of the longest
// IPv4 route prefix that matches.
AddressScope Classify(const IpAddress& address, const NodeAddresses& node);

// The host skopeo connects to for a Reference::domain: its host part without port or brackets,
// and docker.io's registry host for "docker.io" ("127.0.0.1:9998" -> "127.0.0.1", "[::1]:5000"
// -> "::1", "docker.io" -> "registry-1.docker.io").
std::string RegistryHostOf(std::string_view domain);

// Every address `host` resolves to (getaddrinfo, both families); a literal is itself. Unavailable
// when it does not resolve (the message is the resolver's).
StatusOr<std::vector<IpAddress>> ResolveRegistryHost(const std::string& host);

}  // namespace paddock::agent::images
