// Published ports (bridge mode) and host-port reservations (host mode): see net.h, "Ports".
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "agent/net/internal/iptables.h"
#include "agent/net/internal/util.h"
#include "agent/net/net.h"
#include "common/subprocess.h"

namespace paddock::agent::net {

std::string_view ProtocolName(Protocol protocol) { return protocol == Protocol::kUdp ? "udp" : "tcp"; }

namespace {

using internal::ChainName;
using internal::Ipv4;

// ECS's agent on Linux when the kernel's ephemeral range cannot be read.
constexpr uint16_t kEcsDefaultFirst = 49153;
constexpr uint16_t kEcsDefaultLast = 65535;
constexpr std::string_view kLockDir = "/run/lock";

// The port last handed out per chain prefix: the next search starts after it, as ECS's agent's.
std::mutex cursor_mutex;
std::map<std::string, uint16_t> last_assigned;  // GUARDED_BY(cursor_mutex)

struct Range {
  uint16_t first = 0;
  uint16_t last = 0;
};

Range DynamicRange(const NetworkOptions& options) {
  if (options.dynamic_port_first != 0) return {options.dynamic_port_first, options.dynamic_port_last};
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  unsigned first = 0, last = 0;
  if (in >> first >> last && first >= 1 && first <= last && last <= 65535) {
    return {static_cast<uint16_t>(first), static_cast<uint16_t>(last)};
  }
  return {kEcsDefaultFirst, kEcsDefaultLast};
}

// Held while ports are chosen and their rules added, by every process using these chains.
StatusOr<subprocess::UniqueFd> LockPorts(const NetworkOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(kLockDir, ec);
  std::string path = fmt::format("{}/{}-ports.lock", kLockDir, options.chain_prefix);
  subprocess::UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) return Internal(fmt::format("opening {}: {}", path, std::strerror(errno)));
  while (flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return Internal(fmt::format("locking {}: {}", path, std::strerror(errno)));
  }
  return fd;
}

std::optional<uint32_t> ParseIpv4(const std::string& text) {
  in_addr addr{};
  if (inet_pton(AF_INET, text.c_str(), &addr) != 1) return std::nullopt;
  return ntohl(addr.s_addr);
}

std::optional<uint16_t> ParsePort(std::string_view text) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v == 0 || v > 65535) return std::nullopt;
  return static_cast<uint16_t>(v);
}

// One of our rules, read back from iptables -S.
struct Rule {
  std::string line;
  std::string owner;  // the comment: "<netns_prefix><task id>"
  Protocol protocol = Protocol::kTcp;
  uint16_t host_port = 0;
  std::string host_ip;  // empty: any
  uint32_t container_ip = 0;
  uint16_t container_port = 0;
};

std::optional<Rule> ParseRule(const std::string& line) {
  std::vector<std::string> w = internal::SplitRule(line);
  Rule rule;
  rule.line = line;
  std::optional<uint16_t> dport;
  std::string proto, target, to;
  for (size_t i = 0; i + 1 < w.size(); ++i) {
    const std::string& next = w[i + 1];
    if (w[i] == "-d") {
      rule.host_ip = next.ends_with("/32") ? next.substr(0, next.size() - 3) : next;
    } else if (w[i] == "-p") {
      proto = next;
    } else if (w[i] == "--dport") {
      dport = ParsePort(next);
    } else if (w[i] == "--comment") {
      rule.owner = next;
    } else if (w[i] == "-j") {
      target = next;
    } else if (w[i] == "--to-destination") {
      to = next;
    }
  }
  if (!dport || rule.owner.empty() || (proto != "tcp" && proto != "udp")) return std::nullopt;
  rule.protocol = proto == "udp" ? Protocol::kUdp : Protocol::kTcp;
  rule.host_port = *dport;
  if (target == "DNAT") {
    size_t colon = to.rfind(':');
    if (colon == std::string::npos) return std::nullopt;
    std::optional<uint32_t> ip = ParseIpv4(to.substr(0, colon));
    std::optional<uint16_t> port = ParsePort(std::string_view(to).substr(colon + 1));
    if (!ip || !port) return std::nullopt;
    rule.container_ip = *ip;
    rule.container_port = *port;
  } else if (target == "RETURN") {
    rule.container_port = rule.host_port;
  } else {
    return std::nullopt;
  }
  return rule;
}

// Our rules in the DNAT and PORTS chains (a missing chain has none). `chain_of` gets each rule's chain.
StatusOr<std::vector<std::pair<std::string, Rule>>> ReadRules(const NetworkOptions& options) {
  std::vector<std::pair<std::string, Rule>> rules;
  for (const char* suffix : {"DNAT", "PORTS"}) {
    std::string chain = ChainName(options, suffix);
    StatusOr<std::vector<std::string>> lines = internal::ChainRules("nat", chain);
    if (!lines.ok() && lines.status().code() == StatusCode::kNotFound) continue;
    if (!lines.ok()) return lines.status();
    for (const std::string& line : *lines) {
      if (std::optional<Rule> rule = ParseRule(line)) rules.emplace_back(chain, std::move(*rule));
    }
  }
  return rules;
}

// Whether the host lets us bind `port` (on `ip`, 0 = any address): nothing listens there or holds
// it. SO_REUSEADDR, as Go's listeners in ECS's probe, so connections in TIME_WAIT do not count.
// kInvalidArgument when `ip` is not an address of this host.
StatusOr<bool> PortFree(Protocol protocol, uint32_t ip, uint16_t port) {
  int fd = socket(AF_INET, (protocol == Protocol::kUdp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
  if (fd < 0) return Internal(fmt::format("socket: {}", std::strerror(errno)));
  int one = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(ip);
  int rc = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  int err = errno;
  close(fd);
  if (rc == 0) return true;
  if (err == EADDRNOTAVAIL) return InvalidArgument(fmt::format("host IP {} is not an address of this host", Ipv4(ip)));
  return false;
}

std::string Key(Protocol protocol, uint16_t port) { return fmt::format("{}/{}", port, ProtocolName(protocol)); }

// The mappings' host IPs (0: any). kInvalidArgument for a bad mapping or one host port twice.
StatusOr<std::vector<uint32_t>> CheckMappings(const std::vector<PortMapping>& mappings, bool host_mode,
                                              std::string_view what) {
  std::vector<uint32_t> host_ips;
  std::set<std::string> in_call;
  for (const PortMapping& m : mappings) {
    if (m.container_port == 0) return InvalidArgument(fmt::format("{}: containerPort 0 is not a port", what));
    if (m.container_port_last != 0) {
      if (m.container_port_last <= m.container_port)
        return InvalidArgument(fmt::format("{}: container port range {}-{} does not end above its start", what,
                                           m.container_port, m.container_port_last));
      if (host_mode) return InvalidArgument(fmt::format("{}: host mode takes no port ranges", what));
      if (m.host_port != 0)
        return InvalidArgument(fmt::format("{}: a port range's host ports are chosen, hostPort {} given", what,
                                           m.host_port));
    }
    if (host_mode && m.host_port != 0 && m.host_port != m.container_port) {
      return InvalidArgument(fmt::format("{}: in host mode, hostPort {} must be empty or equal containerPort {}", what,
                                         m.host_port, m.container_port));
    }
    uint32_t ip = 0;
    if (!m.host_ip.empty()) {
      std::optional<uint32_t> parsed = ParseIpv4(m.host_ip);
      if (!parsed) return InvalidArgument(fmt::format("{}: host IP '{}' is not an IPv4 address", what, m.host_ip));
      ip = *parsed;
    }
    host_ips.push_back(ip);
    uint16_t fixed = host_mode ? m.container_port : m.host_port;
    if (fixed != 0 && !in_call.insert(Key(m.protocol, fixed)).second) {
      return InvalidArgument(fmt::format("{}: host port {} appears twice", what, Key(m.protocol, fixed)));
    }
  }
  return host_ips;
}

// Publishes (task_ip != 0: DNAT to task_ip) or reserves (task_ip == 0: RETURN rules in PORTS) the
// mappings for `owner`.
StatusOr<std::vector<NetworkBinding>> Claim(const NetworkOptions& options, const std::string& owner, uint32_t task_ip,
                                            const std::vector<PortMapping>& mappings, std::string_view what) {
  bool host_mode = task_ip == 0;
  ASSIGN_OR_RETURN(std::vector<uint32_t> host_ips, CheckMappings(mappings, host_mode, what));
  std::set<std::string> in_call;
  for (const PortMapping& m : mappings) {
    uint16_t fixed = host_mode ? m.container_port : m.host_port;
    if (fixed != 0) in_call.insert(Key(m.protocol, fixed));
  }

  ASSIGN_OR_RETURN(subprocess::UniqueFd lock, LockPorts(options));
  ASSIGN_OR_RETURN(auto existing, ReadRules(options));
  // "port/proto" -> the task holding it; this call's static ports are kept from its dynamic ones.
  std::map<std::string, std::string> taken;
  for (const auto& [chain, rule] : existing) taken.emplace(Key(rule.protocol, rule.host_port), rule.owner);

  Range range = DynamicRange(options);
  std::lock_guard<std::mutex> cursor_lock(cursor_mutex);
  uint16_t& cursor = last_assigned[options.chain_prefix];

  std::vector<NetworkBinding> bindings;
  std::vector<std::string> lines;
  std::string chain = ChainName(options, host_mode ? "PORTS" : "DNAT");
  for (size_t i = 0; i < mappings.size(); ++i) {
    const PortMapping& m = mappings[i];
    uint16_t host_port = host_mode ? m.container_port : m.host_port;
    if (host_port != 0) {
      auto holder = taken.find(Key(m.protocol, host_port));
      if (holder != taken.end()) {
        return AlreadyExists(fmt::format("{}: host port {} is already {} by task {}", what, Key(m.protocol, host_port),
                                         host_mode ? "reserved" : "published", holder->second));
      }
      ASSIGN_OR_RETURN(bool free, PortFree(m.protocol, host_ips[i], host_port));
      if (!free) {
        return AlreadyExists(fmt::format("{}: host port {} is already in use on the host", what, Key(m.protocol, host_port)));
      }
    } else {
      // The first of `count` contiguous ports that are all free, searched from after the cursor
      // (count is 1 but for a port range).
      const uint32_t count = m.container_port_last == 0 ? 1u : uint32_t{m.container_port_last} - m.container_port + 1;
      uint32_t size = uint32_t{range.last} - range.first + 1;
      uint32_t start = (cursor >= range.first && cursor < range.last) ? cursor + 1u - range.first : 0;
      for (uint32_t n = 0; n < size && host_port == 0;) {
        uint32_t first = (start + n) % size;
        if (first + count > size) {  // a block does not wrap around the range's end
          n += size - first;
          continue;
        }
        uint32_t k = 0;
        for (; k < count; ++k) {
          auto port = static_cast<uint16_t>(range.first + first + k);
          if (taken.count(Key(m.protocol, port)) || in_call.count(Key(m.protocol, port))) break;
          ASSIGN_OR_RETURN(bool free, PortFree(m.protocol, host_ips[i], port));
          if (!free) break;
        }
        if (k == count) host_port = static_cast<uint16_t>(range.first + first);
        n += k + 1;  // no block starting before the busy port fits
      }
      if (host_port == 0) {
        std::string wanted = count == 1 ? "free host port" : fmt::format("{} contiguous free host ports", count);
        return ResourceExhausted(fmt::format("{}: no {} for {} in {}-{}", what, wanted, ProtocolName(m.protocol),
                                             range.first, range.last));
      }
      cursor = static_cast<uint16_t>(host_port + count - 1);
    }
    const uint16_t container_last = m.container_port_last == 0 ? m.container_port : m.container_port_last;
    NetworkBinding b{.bind_ip = m.host_ip.empty() ? "0.0.0.0" : Ipv4(host_ips[i]),
                     .container_port = m.container_port,
                     .host_port = host_port,
                     .container_port_last = m.container_port_last,
                     .host_port_last = m.container_port_last == 0
                                           ? uint16_t{0}
                                           : static_cast<uint16_t>(host_port + (container_last - m.container_port)),
                     .protocol = m.protocol};
    std::string dst = m.host_ip.empty() ? "" : fmt::format("-d {}/32 ", b.bind_ip);
    // One rule per port: a range's ports are published as its single ports would be.
    for (uint32_t k = 0; k <= uint32_t{container_last} - m.container_port; ++k) {
      const auto hport = static_cast<uint16_t>(host_port + k);
      const auto cport = static_cast<uint16_t>(m.container_port + k);
      taken[Key(m.protocol, hport)] = owner;
      std::string target = host_mode ? "RETURN" : fmt::format("DNAT --to-destination {}:{}", Ipv4(task_ip), cport);
      lines.push_back(fmt::format("-A {} {}-p {} -m {} --dport {} -m comment --comment {} -j {}", chain, dst,
                                  ProtocolName(m.protocol), ProtocolName(m.protocol), hport, owner, target));
    }
    bindings.push_back(std::move(b));
  }
  RETURN_IF_ERROR(internal::RestoreNoFlush(what, "nat", lines));
  return bindings;
}

StatusOr<std::string> OwnerOf(const NetworkOptions& options, std::string_view task_id) {
  RETURN_IF_ERROR(internal::ValidateOptions(options));
  RETURN_IF_ERROR(internal::ValidateTaskId(task_id));
  return options.netns_prefix + std::string(task_id);
}

}  // namespace

std::pair<uint16_t, uint16_t> DynamicHostPortRange(const NetworkOptions& options) {
  Range r = DynamicRange(options);
  return {r.first, r.last};
}

StatusOr<std::vector<NetworkBinding>> PublishPorts(const NetworkOptions& options, const TaskNetwork& network,
                                                   const std::vector<PortMapping>& mappings) {
  std::string task_id = TaskIdOfNamespace(options, network.netns_name);
  ASSIGN_OR_RETURN(std::string owner, OwnerOf(options, task_id));
  std::string what = fmt::format("publishing the ports of task {}", task_id);
  if (network.ip == 0) return InvalidArgument(fmt::format("{}: the task has no address", what));
  if (mappings.empty()) return std::vector<NetworkBinding>();
  RETURN_IF_ERROR(CheckMappings(mappings, /*host_mode=*/false, what).status());
  if (!internal::ChainRules("nat", ChainName(options, "DNAT")).ok()) {
    return FailedPrecondition(fmt::format("{}: chain {} is missing (EnsureBridgeNetwork first)", what,
                                          ChainName(options, "DNAT")));
  }
  return Claim(options, owner, network.ip, mappings, what);
}

StatusOr<std::vector<NetworkBinding>> ReserveHostPorts(const NetworkOptions& options, std::string_view task_id,
                                                       const std::vector<PortMapping>& mappings) {
  ASSIGN_OR_RETURN(std::string owner, OwnerOf(options, task_id));
  std::string what = fmt::format("reserving the host ports of task {}", task_id);
  if (mappings.empty()) return std::vector<NetworkBinding>();
  RETURN_IF_ERROR(CheckMappings(mappings, /*host_mode=*/true, what).status());
  RETURN_IF_ERROR(internal::EnsureChain("nat", ChainName(options, "PORTS")));
  return Claim(options, owner, 0, mappings, what);
}

Status UnpublishPorts(const NetworkOptions& options, std::string_view task_id) {
  ASSIGN_OR_RETURN(std::string owner, OwnerOf(options, task_id));
  if (internal::IptablesBinary().empty()) return OkStatus();
  ASSIGN_OR_RETURN(auto rules, ReadRules(options));
  std::map<std::string, std::vector<std::string>> by_chain;
  for (const auto& [chain, rule] : rules) {
    if (rule.owner == owner) by_chain[chain].push_back(rule.line);
  }
  for (const auto& [chain, lines] : by_chain) RETURN_IF_ERROR(internal::DeleteRules("nat", chain, lines));
  return OkStatus();
}

StatusOr<std::vector<PublishedPort>> ListPublished(const NetworkOptions& options) {
  RETURN_IF_ERROR(internal::ValidateOptions(options));
  std::vector<PublishedPort> ports;
  if (internal::IptablesBinary().empty()) return ports;
  ASSIGN_OR_RETURN(auto rules, ReadRules(options));
  for (const auto& [chain, rule] : rules) {
    std::string task_id = TaskIdOfNamespace(options, rule.owner);
    if (!internal::ValidateTaskId(task_id).ok()) continue;
    ports.push_back(PublishedPort{.task_id = task_id,
                                  .binding = {.bind_ip = rule.host_ip.empty() ? "0.0.0.0" : rule.host_ip,
                                              .container_port = rule.container_port,
                                              .host_port = rule.host_port,
                                              .container_port_last = 0,  // a rule is one port
                                              .host_port_last = 0,
                                              .protocol = rule.protocol},
                                  .container_ip = rule.container_ip});
  }
  std::sort(ports.begin(), ports.end(), [](const PublishedPort& a, const PublishedPort& b) {
    return std::tie(a.task_id, a.binding.host_port, a.binding.protocol) <
           std::tie(b.task_id, b.binding.host_port, b.binding.protocol);
  });
  return ports;
}

}  // namespace paddock::agent::net
