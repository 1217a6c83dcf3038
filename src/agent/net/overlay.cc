// The cross-host overlay of the VPC router namespaces (agent/net/net.h, "The overlay"): one VXLAN
// device per router, its routes, neighbours and forwarding entries as the policy lists the VPC's
// tasks of other hosts. Called by vpc_network.cc with the host-wide lock held.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "agent/net/internal/command.h"
#include "agent/net/internal/util.h"
#include "agent/net/net.h"
#include "common/netns.h"
#include "common/proc_routes.h"

namespace paddock::agent::net {

namespace internal {

namespace {

StatusOr<uint32_t> ParseIpv4(std::string_view what, std::string_view text) {
  in_addr a{};
  std::string s(text);
  if (inet_pton(AF_INET, s.c_str(), &a) != 1)
    return InvalidArgument(fmt::format("{} '{}' is not an IPv4 address", what, text));
  return ntohl(a.s_addr);
}

// The MTU of the interface of the calling thread's namespace that carries `address`; 0 when none
// does.
StatusOr<int> MtuOfLocalAddress(uint32_t address) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return Internal(fmt::format("listing the host's addresses: {}", std::strerror(errno)));
  std::string device;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if (ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr) == address) {
      device = i->ifa_name;
      break;
    }
  }
  freeifaddrs(list);
  if (device.empty()) return 0;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Internal(fmt::format("socket: {}", std::strerror(errno)));
  ifreq req{};
  std::strncpy(req.ifr_name, device.c_str(), IFNAMSIZ - 1);
  int rc = ioctl(fd, SIOCGIFMTU, &req);
  int err = errno;
  close(fd);
  if (rc != 0) return Internal(fmt::format("reading the MTU of {}: {}", device, std::strerror(err)));
  return req.ifr_mtu;
}

// What VXLAN over IPv4 adds to each packet: outer IPv4 (20), UDP (8), VXLAN (8) and inner Ethernet (14).
constexpr int kVxlanOverhead = 50;

// The underlay MTU of the overlay address `self` less the encapsulation.
StatusOr<int> OverlayMtu(std::string_view what, const NetworkOptions& options, uint32_t self) {
  ASSIGN_OR_RETURN(int underlay_mtu, MtuOfLocalAddress(self));
  if (underlay_mtu == 0)
    return FailedPrecondition(
        fmt::format("{}: the overlay address {} is not an address of this host", what, options.overlay_address));
  return underlay_mtu - kVxlanOverhead;
}

// What the router's overlay device is, as `ip -d -o link show` says: "vxlan id N local A ...
// dstport P".
struct DeviceConfig {
  uint32_t vni = 0;
  std::string local;
  int port = 0;
};

DeviceConfig ParseDeviceConfig(const std::string& text) {
  DeviceConfig c;
  std::istringstream in(text);
  std::string word;
  bool vxlan = false;
  while (in >> word) {
    if (word == "vxlan") vxlan = true;
    if (!vxlan) continue;
    if (word == "id") in >> c.vni;
    if (word == "local") in >> c.local;
    if (word == "dstport") in >> c.port;
  }
  return c;
}

// The neighbours on `device` of the calling thread's namespace (/proc/thread-self/net/arp: no
// process): address -> lladdr.
std::map<uint32_t, std::string> NeighboursOn(const std::string& device) {
  std::map<uint32_t, std::string> out;
  std::ifstream in("/proc/thread-self/net/arp");
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string ip, type, flags, mac, mask, dev;
    if (!(words >> ip >> type >> flags >> mac >> mask >> dev) || dev != device) continue;
    StatusOr<uint32_t> a = ParseIpv4("neighbour", ip);
    if (a.ok()) out[*a] = mac;
  }
  return out;
}

// The host whose overlay MAC `mac` is (OverlayMac); 0 for another MAC.
uint32_t HostOfMac(const std::string& mac) {
  unsigned b[6];
  if (std::sscanf(mac.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6 ||
      b[0] != 0x02 || b[1] != 0x71)
    return 0;
  return (b[2] << 24) | (b[3] << 16) | (b[4] << 8) | b[5];
}

Status RunIn(std::string_view what, const std::vector<std::string>& argv, const std::string& input,
             std::string* out = nullptr) {
  ASSIGN_OR_RETURN(CommandResult r, RunCommand(argv, input));
  if (r.exit_code != 0)
    return Internal(fmt::format("{}: {} exited with {}: {}", what, argv[0], r.exit_code, OneLine(r.err)));
  if (out != nullptr) *out = std::move(r.out);
  return OkStatus();
}

// The hosts the host firewall admits VXLAN packets of `vni` from (its set overlay_peers, as
// `nft list set` writes it: "10.0.0.7 . 0x00000005", elements separated by commas).
StatusOr<std::set<uint32_t>> AdmittedPeers(const NetworkOptions& options, uint32_t vni) {
  std::string out;
  RETURN_IF_ERROR(RunIn("listing the overlay's admitted hosts",
                        {NftBinary(), "list", "set", "inet", HostFirewallTable(options), "overlay_peers"}, "", &out));
  for (char& c : out)
    if (c == ',' || c == '{' || c == '}' || c == '\n' || c == '\t') c = ' ';
  std::set<uint32_t> peers;
  std::istringstream words(out);
  std::vector<std::string> all;
  for (std::string w; words >> w;) all.push_back(w);
  for (size_t i = 0; i + 2 < all.size(); ++i) {
    if (all[i + 1] != ".") continue;
    StatusOr<uint32_t> host = ParseIpv4("admitted host", all[i]);
    if (!host.ok()) continue;
    if (std::strtoul(all[i + 2].c_str(), nullptr, 0) == vni) peers.insert(*host);
  }
  return peers;
}

// Changes the host firewall's admission of `vni`: admits it (and `add` from then on) or, with
// `forget`, no longer restricts it; `remove` are no longer admitted. One nft transaction.
Status Admit(const NetworkOptions& options, uint32_t vni, const std::set<uint32_t>& add,
             const std::set<uint32_t>& remove, bool forget) {
  const std::string t = HostFirewallTable(options);
  auto elements = [&](const std::set<uint32_t>& hosts) {
    std::string list;
    for (uint32_t h : hosts) list += fmt::format("{}{} . {}", list.empty() ? "" : ", ", Ipv4(h), vni);
    return list;
  };
  std::string script;
  if (!forget) script += fmt::format("add element inet {} overlay_vnis {{ {} }}\n", t, vni);
  if (!add.empty()) script += fmt::format("add element inet {} overlay_peers {{ {} }}\n", t, elements(add));
  if (!remove.empty()) script += fmt::format("delete element inet {} overlay_peers {{ {} }}\n", t, elements(remove));
  if (forget) script += fmt::format("add element inet {0} overlay_vnis {{ {1} }}\ndelete element inet {0} overlay_vnis {{ {1} }}\n", t, vni);
  if (script.empty()) return OkStatus();
  return RunIn(fmt::format("admitting the overlay's hosts of VNI {}", vni), {NftBinary(), "-f", "-"}, script);
}

}  // namespace

std::string OverlayMac(uint32_t host) { return Mac(0x02, 0x71, host); }

std::string OverlayTemporaryName(const VpcNetwork& vpc) { return vpc.transit.substr(0, kMaxIfName - 1) + "x"; }

Status DeleteOverlayDevice(const VpcNetwork& vpc) {
  return netns::InNetworkNamespace(vpc.netns_path, [&]() -> Status {
    std::string lines;
    for (const std::string& name : {std::string(kOverlayDevice), OverlayTemporaryName(vpc)})
      if (InterfaceExists(name)) lines += fmt::format("link del dev {}\n", name);
    if (lines.empty()) return OkStatus();
    Status s = IpBatch("deleting the overlay device", /*force=*/true, lines);
    if (!s.ok() && !InterfaceExists(std::string(kOverlayDevice))) return OkStatus();
    return s;
  });
}

namespace {

// The VNI of the router's overlay device; 0 when it has none.
StatusOr<uint32_t> DeviceVni(const VpcNetwork& vpc) {
  uint32_t vni = 0;
  RETURN_IF_ERROR(netns::InNetworkNamespace(vpc.netns_path, [&]() -> Status {
    if (!InterfaceExists(std::string(kOverlayDevice))) return OkStatus();
    std::string out;
    RETURN_IF_ERROR(RunIn("reading the overlay device", {IpBinary(), "-d", "-o", "link", "show", "dev",
                                                         std::string(kOverlayDevice)}, "", &out));
    vni = ParseDeviceConfig(out).vni;
    return OkStatus();
  }));
  return vni;
}

// Ends the host firewall's admission of `vni` and of every host it admits for it. No host
// firewall (removed with its instance): nothing to end.
Status ForgetVni(const NetworkOptions& options, uint32_t vni) {
  if (vni == 0) return OkStatus();
  StatusOr<std::set<uint32_t>> admitted = AdmittedPeers(options, vni);
  if (!admitted.ok() && admitted.status().message().find("No such file or directory") != std::string_view::npos)
    return OkStatus();
  if (!admitted.ok()) return admitted.status();
  return Admit(options, vni, {}, *admitted, /*forget=*/true);
}

}  // namespace

Status ForgetOverlay(const NetworkOptions& options, const VpcNetwork& vpc) {
  ASSIGN_OR_RETURN(uint32_t vni, DeviceVni(vpc));
  RETURN_IF_ERROR(ForgetVni(options, vni));
  return DeleteOverlayDevice(vpc);
}

StatusOr<int> TaskMtu(const NetworkOptions& options) {
  if (options.overlay_address.empty()) return 0;
  ASSIGN_OR_RETURN(uint32_t self, ParseIpv4("the overlay address", options.overlay_address));
  return OverlayMtu("sizing a task's interface for the overlay", options, self);
}

Status SyncOverlay(const NetworkOptions& options, const VpcNetwork& vpc, const vpc::VpcPolicy& policy) {
  const std::string device(kOverlayDevice);
  const bool on = !options.overlay_address.empty() && policy.vni != 0;
  std::string what = fmt::format("programming the overlay of VPC {} (VNI {})", vpc.ref.vpc_id, policy.vni);

  // Which member is where: address -> the host it is on, for those of other hosts. A member also
  // listed here (or with no host) stays here: its veth route wins.
  std::map<uint32_t, uint32_t> remote;
  uint32_t self = 0;
  if (on) {
    ASSIGN_OR_RETURN(self, ParseIpv4("the overlay address", options.overlay_address));
    std::set<uint32_t> local;
    for (const vpc::PolicyMember& m : policy.members) {
      StatusOr<uint32_t> ip = ParseIpv4("member address", m.ip);
      if (!ip.ok()) return InvalidArgument(fmt::format("{}: {}", what, ip.status().message()));
      if (m.host.empty() || m.host == options.overlay_address) {
        local.insert(*ip);
        continue;
      }
      StatusOr<uint32_t> host = ParseIpv4("member host", m.host);
      if (!host.ok()) return InvalidArgument(fmt::format("{}: {}", what, host.status().message()));
      remote.emplace(*ip, *host);  // listed twice on two hosts: the first listing
    }
    for (uint32_t ip : local) remote.erase(ip);
  }

  // The device: kept when it is the one wanted (its entries are diffed below), else made again.
  bool exists = false;
  DeviceConfig config;
  RETURN_IF_ERROR(netns::InNetworkNamespace(vpc.netns_path, [&]() -> Status {
    exists = InterfaceExists(device);
    if (!exists) return OkStatus();
    std::string out;
    RETURN_IF_ERROR(RunIn(what, {IpBinary(), "-d", "-o", "link", "show", "dev", device}, "", &out));
    config = ParseDeviceConfig(out);
    return OkStatus();
  }));
  if (!exists || !on || config.vni != policy.vni || config.local != options.overlay_address ||
      config.port != options.overlay_port) {
    // (Also a device left under its temporary name by a create that did not finish.)
    if (exists && config.vni != policy.vni) RETURN_IF_ERROR(ForgetVni(options, config.vni));
    RETURN_IF_ERROR(DeleteOverlayDevice(vpc));
    exists = false;
  }
  if (!on) return OkStatus();

  if (!exists) {
    // Made from the host's namespace, so that the kernel keeps its UDP socket there (on the
    // underlay), and born inside the router namespace: nothing of it appears on the host.
    ASSIGN_OR_RETURN(int mtu, OverlayMtu(what, options, self));
    // A temporary name the host cannot have: the kernel looks the new name up in the creating
    // namespace too.
    const std::string temporary = OverlayTemporaryName(vpc);
    std::string create = fmt::format(
        "link add {tmp} netns {ns} address {mac} mtu {mtu} type vxlan id {vni} local {local} dstport {port} "
        "nolearning\n",
        fmt::arg("tmp", temporary), fmt::arg("ns", vpc.netns_name), fmt::arg("mac", OverlayMac(self)),
        fmt::arg("mtu", mtu), fmt::arg("vni", policy.vni), fmt::arg("local", options.overlay_address),
        fmt::arg("port", options.overlay_port));
    Status s = IpBatch(what, false, create);
    if (!s.ok()) {
      if (s.message().find("VNI already exists") != std::string_view::npos)
        return AlreadyExists(fmt::format("{}: another VXLAN device of this host has VNI {} (port {}): {}", what,
                                         policy.vni, options.overlay_port, s.message()));
      return s;
    }
    s = netns::InNetworkNamespace(vpc.netns_path, [&]() -> Status {
      RETURN_IF_ERROR(IpBatch(what, false, fmt::format("link set dev {} name {}\n", temporary, device)));
      // Strict: a packet from the overlay whose source is not routed back into it (a task of this
      // host, spoofed from elsewhere) is dropped.
      RETURN_IF_ERROR(WriteSysctl(fmt::format("/proc/sys/net/ipv4/conf/{}/rp_filter", device), "1"));
      return IpBatch(what, false, fmt::format("link set dev {} up\n", device));
    });
    if (!s.ok()) {
      Status undo = DeleteOverlayDevice(vpc);
      if (!undo.ok()) return Status(s.code(), fmt::format("{}; undoing: {}", s.message(), undo.message()));
      return s;
    }
  }

  // The entries: what is there (nothing, on a new device) against what is wanted; the hosts the
  // device forwards to now are those the host firewall admits (Admit below keeps them in step).
  std::string add_ip, del_ip, add_fdb, del_fdb;
  std::set<uint32_t> forwarded_hosts;
  RETURN_IF_ERROR(netns::InNetworkNamespace(vpc.netns_path, [&]() -> Status {
    std::set<uint32_t> routes;
    std::map<uint32_t, std::string> neighbours;      // address -> lladdr
    std::map<std::string, std::string> forwarding;  // MAC -> dst
    std::set<uint32_t> routed_elsewhere;  // addresses of this host's tasks (their veths)
    for (const Ipv4Route& r : ReadIpv4Routes()) {
      if (r.mask != 0xffffffffu) continue;
      (r.iface == device ? routes : routed_elsewhere).insert(r.destination);
    }
    // The forwarding entries are those of the neighbours' hosts (each neighbour's MAC is its
    // host's address, and an entry is written before the first neighbour of its host, removed
    // after the last): read from the neighbour table, without a `bridge fdb show`.
    if (exists) {
      neighbours = NeighboursOn(device);
      for (const auto& [ip, mac] : neighbours)
        if (uint32_t host = HostOfMac(mac); host != 0) forwarding[mac] = Ipv4(host);
    }
    for (const auto& [mac, dst] : forwarding) forwarded_hosts.insert(HostOfMac(mac));
    std::map<std::string, std::string> wanted_forwarding;
    for (const auto& [ip, host] : remote) wanted_forwarding[OverlayMac(host)] = Ipv4(host);

    for (const auto& [mac, dst] : wanted_forwarding) {
      auto it = forwarding.find(mac);
      if (it != forwarding.end() && it->second == dst) continue;
      add_fdb += fmt::format("fdb replace {} dev {} dst {} self permanent\n", mac, device, dst);
    }
    for (const auto& [ip, host] : remote) {
      if (routed_elsewhere.count(ip)) continue;  // a task of this host still holds it
      const std::string mac = OverlayMac(host);
      auto n = neighbours.find(ip);
      if (n == neighbours.end() || n->second != mac)
        add_ip += fmt::format("neigh replace {} lladdr {} dev {} nud permanent\n", Ipv4(ip), mac, device);
      if (!routes.count(ip)) add_ip += fmt::format("route replace {}/32 dev {}\n", Ipv4(ip), device);
    }
    for (uint32_t ip : routes)
      if (!remote.count(ip)) del_ip += fmt::format("route del {}/32 dev {}\n", Ipv4(ip), device);
    for (const auto& [ip, mac] : neighbours)
      if (!remote.count(ip)) del_ip += fmt::format("neigh del {} dev {}\n", Ipv4(ip), device);
    for (const auto& [mac, dst] : forwarding)
      if (!wanted_forwarding.count(mac)) del_fdb += fmt::format("fdb del {} dev {} dst {} self\n", mac, device, dst);
    return OkStatus();
  }));

  // The host firewall admits the VNI's packets from the hosts of its members only: the new ones
  // before anything leads to them, the gone ones revoked after. A changed policy whose hosts did
  // not change costs no nft run; a new device lists what an earlier life of the VNI left admitted.
  std::set<uint32_t> hosts, admit, revoke;
  for (const auto& [ip, host] : remote) hosts.insert(host);
  if (!exists) {
    ASSIGN_OR_RETURN(forwarded_hosts, AdmittedPeers(options, policy.vni));
  }
  std::set_difference(hosts.begin(), hosts.end(), forwarded_hosts.begin(), forwarded_hosts.end(),
                      std::inserter(admit, admit.end()));
  std::set_difference(forwarded_hosts.begin(), forwarded_hosts.end(), hosts.begin(), hosts.end(),
                      std::inserter(revoke, revoke.end()));
  if (!exists || !admit.empty()) RETURN_IF_ERROR(Admit(options, policy.vni, admit, {}, false));

  // Forwarding entries before the neighbours and routes that lead to them; removals after.
  RETURN_IF_ERROR(netns::InNetworkNamespace(vpc.netns_path, [&]() -> Status {
    if (!add_fdb.empty()) RETURN_IF_ERROR(RunIn(what, {BridgeBinary(), "-batch", "-"}, add_fdb));
    if (!add_ip.empty()) RETURN_IF_ERROR(IpBatch(what, false, add_ip));
    if (!del_ip.empty()) RETURN_IF_ERROR(IpBatch(what, true, del_ip));
    if (!del_fdb.empty()) RETURN_IF_ERROR(RunIn(what, {BridgeBinary(), "-force", "-batch", "-"}, del_fdb));
    return OkStatus();
  }));
  if (!revoke.empty()) RETURN_IF_ERROR(Admit(options, policy.vni, {}, revoke, false));
  return OkStatus();
}

}  // namespace internal

}  // namespace paddock::agent::net
