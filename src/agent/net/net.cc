#include "agent/net/net.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "agent/net/internal/address_book.h"
#include "agent/net/internal/command.h"
#include "agent/net/internal/iptables.h"
#include "agent/net/internal/util.h"

namespace paddock::agent::net {
namespace {

constexpr std::string_view kNetnsDir = "/var/run/netns";
constexpr size_t kMaxIfName = internal::kMaxIfName;
constexpr size_t kMaxPrefix = 7;
constexpr size_t kMaxTaskId = 64;
constexpr size_t kMaxChainPrefix = 16;


bool IsNameChar(char c, bool allow_dot) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         (allow_dot && c == '.');
}

bool AllNameChars(std::string_view s, bool allow_dot) {
  return std::all_of(s.begin(), s.end(), [&](char c) { return IsNameChar(c, allow_dot); });
}

// Interface names are restricted further than the kernel requires, to what needs no quoting in
// an `ip -batch` line.
Status ValidateIfName(std::string_view what, std::string_view name) {
  if (name.empty() || name.size() > kMaxIfName || name == "." || name == ".." || !AllNameChars(name, true)) {
    return InvalidArgument(fmt::format("{} '{}' is not a valid interface name (1-{} characters of [A-Za-z0-9_.-])",
                                       what, name, kMaxIfName));
  }
  return OkStatus();
}

}  // namespace

namespace internal {

Status ValidateOptions(const NetworkOptions& options) {
  RETURN_IF_ERROR(ValidateIfName("bridge-mode bridge", options.bridge_mode_bridge));
  for (const auto& [what, p] : {std::pair<const char*, const std::string&>{"netns prefix", options.netns_prefix},
                                {"VPC prefix", options.vpc_prefix}}) {
    if (p.empty() || p.size() > kMaxPrefix || !AllNameChars(p, true) || p[0] == '.') {
      return InvalidArgument(fmt::format(
          "{} '{}' must be 1-{} characters of [A-Za-z0-9_.-], not starting with '.'", what, p, kMaxPrefix));
    }
  }
  if (options.netns_prefix.starts_with(options.vpc_prefix) || options.vpc_prefix.starts_with(options.netns_prefix)) {
    return InvalidArgument(fmt::format("the netns prefix '{}' and the VPC prefix '{}' must not start one another",
                                       options.netns_prefix, options.vpc_prefix));
  }
  if (options.bridge_mode_bridge.starts_with(options.vpc_prefix)) {
    return InvalidArgument(fmt::format("the bridge-mode bridge '{}' must not start with the VPC prefix '{}'",
                                       options.bridge_mode_bridge, options.vpc_prefix));
  }
  for (const std::string& g : options.gateway_cidrs) RETURN_IF_ERROR(ParseCidr(g).status());
  const std::string& c = options.chain_prefix;
  if (c.empty() || c.size() > kMaxChainPrefix ||
      !std::all_of(c.begin(), c.end(), [](char ch) { return (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_'; })) {
    return InvalidArgument(fmt::format("chain prefix '{}' must be 1-{} characters of [A-Z0-9_]", c, kMaxChainPrefix));
  }
  if (!options.overlay_address.empty()) {
    in_addr a{};
    if (inet_pton(AF_INET, options.overlay_address.c_str(), &a) != 1)
      return InvalidArgument(fmt::format("overlay address '{}' is not an IPv4 address", options.overlay_address));
  }
  if (options.overlay_port == 0) return InvalidArgument("the overlay port must not be 0");
  if ((options.dynamic_port_first == 0) != (options.dynamic_port_last == 0) ||
      options.dynamic_port_first > options.dynamic_port_last) {
    return InvalidArgument(fmt::format("dynamic host port range {}-{} must be both 0 or first <= last",
                                       options.dynamic_port_first, options.dynamic_port_last));
  }
  return OkStatus();
}

Status ValidateTaskId(std::string_view task_id) {
  if (task_id.empty() || task_id.size() > kMaxTaskId || !AllNameChars(task_id, false)) {
    return InvalidArgument(fmt::format("task id '{}' must be 1-{} characters of [A-Za-z0-9_-]", task_id, kMaxTaskId));
  }
  return OkStatus();
}

std::string Ipv4(uint32_t ip) {
  return fmt::format("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
}

StatusOr<Cidr> ParseCidr(std::string_view text) {
  size_t slash = text.find('/');
  Cidr cidr;
  in_addr addr{};
  std::string ip_text(text.substr(0, slash));
  std::string_view len_text = slash == std::string_view::npos ? std::string_view() : text.substr(slash + 1);
  auto [end, ec] = std::from_chars(len_text.data(), len_text.data() + len_text.size(), cidr.prefix_length);
  if (slash == std::string_view::npos || inet_pton(AF_INET, ip_text.c_str(), &addr) != 1 || ec != std::errc() ||
      end != len_text.data() + len_text.size() || cidr.prefix_length < 1 || cidr.prefix_length > 30) {
    return InvalidArgument(fmt::format("gateway '{}' is not an IPv4 address with a prefix length of 1-30, "
                                       "such as 172.31.0.1/20",
                                       text));
  }
  cidr.ip = ntohl(addr.s_addr);
  return cidr;
}

}  // namespace internal

namespace internal {

std::string Mac(uint8_t b0, uint8_t b1, uint32_t rest) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", b0, b1, rest >> 24, (rest >> 16) & 0xff,
                     (rest >> 8) & 0xff, rest & 0xff);
}

std::string NetnsPath(std::string_view name) { return fmt::format("{}/{}", kNetnsDir, name); }

bool NetnsExists(std::string_view name) {
  struct stat st;
  return lstat(NetnsPath(name).c_str(), &st) == 0;
}

bool InterfaceExists(const std::string& name) { return if_nametoindex(name.c_str()) != 0; }

std::string OneLine(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text.empty() ? "(no message)" : text;
}

Status IpBatch(std::string_view what, bool force, const std::string& lines) {
  std::vector<std::string> argv = {IpBinary()};
  if (force) argv.push_back("-force");
  argv.insert(argv.end(), {"-batch", "-"});
  StatusOr<CommandResult> r = RunCommand(argv, lines);
  if (!r.ok()) return Status(r.status().code(), fmt::format("{}: {}", what, r.status().message()));
  if (r->exit_code != 0) {
    return Internal(fmt::format("{}: ip exited with {}: {}", what, r->exit_code, OneLine(r->err)));
  }
  return OkStatus();
}

Status WriteSysctl(const std::string& path, std::string_view value) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Internal(fmt::format("opening {}: {}", path, std::strerror(errno)));
  ssize_t n = write(fd, value.data(), value.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(value.size())) return Internal(fmt::format("writing {}: {}", path, std::strerror(err)));
  return OkStatus();
}

std::string VethName(const NetworkOptions& options, std::string_view task_id) {
  std::string hash = fmt::format("{:016x}", Fnv1a64(task_id));
  return options.netns_prefix + hash.substr(0, kMaxIfName - options.netns_prefix.size());
}

}  // namespace internal

namespace {

using internal::Cidr;
using internal::InterfaceExists;
using internal::IpBatch;
using internal::Ipv4;
using internal::Mac;
using internal::NetnsExists;
using internal::NetnsPath;
using internal::ParseCidr;
using internal::ValidateOptions;
using internal::ValidateTaskId;

bool IsBridge(const std::string& name) {
  struct stat st;
  return stat(fmt::format("/sys/class/net/{}/bridge", name).c_str(), &st) == 0;
}

// Deletes the host veth (both ends go) and then the namespace, skipping what does not exist.
Status Dismantle(std::string_view what, const std::string& netns_name, const std::string& host_veth) {
  std::string lines;
  if (InterfaceExists(host_veth)) lines += fmt::format("link del dev {}\n", host_veth);
  if (NetnsExists(netns_name)) lines += fmt::format("netns del {}\n", netns_name);
  if (lines.empty()) return OkStatus();
  Status s = IpBatch(what, /*force=*/true, lines);
  // Another caller deleting the same things at the same time is not a failure.
  if (!s.ok() && !InterfaceExists(host_veth) && !NetnsExists(netns_name)) return OkStatus();
  return s;
}

// Creates `br` unless it exists, gives it its fixed MAC address and `cidrs`, and brings it up.
Status SetUpBridge(const std::string& br, const std::vector<Cidr>& cidrs) {
  std::string addresses;
  for (const Cidr& cidr : cidrs) {
    addresses += fmt::format("addr replace {}/{} dev {}\n", Ipv4(cidr.ip), cidr.prefix_length, br);
  }
  // A locally administered address derived from the bridge's name: fixed across restarts.
  std::string mac = Mac(0x02, 0x62, static_cast<uint32_t>(internal::Fnv1a64(br)));
  std::string setup = fmt::format("link set dev {} address {}\n{}link set dev {} up\n", br, mac, addresses, br);
  std::string what = fmt::format("setting up bridge {}", br);

  if (InterfaceExists(br)) {
    if (!IsBridge(br)) return FailedPrecondition(fmt::format("{}: an interface of that name exists and is not a bridge", what));
    return IpBatch(what, false, setup);
  }
  Status s = IpBatch(what, false, fmt::format("link add name {} type bridge\n", br) + setup);
  if (!s.ok() && InterfaceExists(br) && IsBridge(br)) {
    // Someone else created it between our check and our add; finish the setup on theirs.
    return IpBatch(what, false, setup);
  }
  return s;
}

}  // namespace

Status EnsureInterfaceAddress(std::string_view interface, std::string_view cidr) {
  if (interface.empty() || interface.find('/') != std::string_view::npos ||
      ::access(fmt::format("/sys/class/net/{}", interface).c_str(), F_OK) != 0)
    return FailedPrecondition(fmt::format("no interface {} for the address {}", interface, cidr));
  ASSIGN_OR_RETURN(internal::CommandResult r,
                   internal::RunCommand({internal::IpBinary(), "addr", "replace", std::string(cidr), "dev",
                                         std::string(interface)},
                                        ""));
  if (r.exit_code != 0) return Internal(fmt::format("cannot add {} to {}: {}", cidr, interface, r.err));
  return OkStatus();
}

StatusOr<TaskNetwork> TaskNetworkFor(const NetworkOptions& options, std::string_view task_id, uint32_t ip,
                                     const VpcNetwork* vpc) {
  RETURN_IF_ERROR(ValidateOptions(options));
  RETURN_IF_ERROR(ValidateTaskId(task_id));
  TaskNetwork tn;
  tn.netns_name = options.netns_prefix + std::string(task_id);
  tn.netns_path = NetnsPath(tn.netns_name);
  tn.host_veth = internal::VethName(options, task_id);
  tn.mac_address = Mac(0x02, 0x70, ip);
  tn.ip = ip;
  if (vpc != nullptr) tn.vpc_netns = vpc->netns_name;
  return tn;
}

std::string TaskIdOfNamespace(const NetworkOptions& options, std::string_view netns_name) {
  if (options.netns_prefix.empty() || !netns_name.starts_with(options.netns_prefix)) return {};
  return std::string(netns_name.substr(options.netns_prefix.size()));
}

namespace {

// A bridge-mode task's network: its namespace and veth pair on `bridge` (see
// CreateBridgeTaskNetwork).
StatusOr<TaskNetwork> CreateOn(const NetworkOptions& options, const std::string& bridge, std::string_view ensure,
                               std::string_view task_id, uint32_t ip, int prefix_length, uint32_t gateway) {
  ASSIGN_OR_RETURN(TaskNetwork tn, TaskNetworkFor(options, task_id, ip));
  std::string what = fmt::format("creating the network of task {}", task_id);
  if (prefix_length < 1 || prefix_length > 30) {
    return InvalidArgument(fmt::format("{}: prefix length {} is not in 1-30", what, prefix_length));
  }
  if (ip == 0 || gateway == 0 || ip == gateway) {
    return InvalidArgument(fmt::format("{}: bad address {} or gateway {}", what, Ipv4(ip), Ipv4(gateway)));
  }
  if (!InterfaceExists(bridge) || !IsBridge(bridge)) {
    return FailedPrecondition(fmt::format("{}: bridge {} does not exist ({} first)", what, bridge, ensure));
  }

  std::lock_guard<std::mutex> lock(internal::CreateMutex());
  // Checked first so that the undo below only ever removes what this call made.
  if (NetnsExists(tn.netns_name)) {
    return AlreadyExists(fmt::format("{}: network namespace {} already exists", what, tn.netns_name));
  }
  if (InterfaceExists(tn.host_veth)) {
    return AlreadyExists(fmt::format("{}: interface {} already exists (a leftover of this task, or another task "
                                     "whose id hashes alike)",
                                     what, tn.host_veth));
  }

  // The peer is made inside the namespace under its final name: no temporary name on the host.
  std::string host_lines = fmt::format(
      "netns add {ns}\n"
      "link add {h} type veth peer name eth0 address {mac} netns {ns}\n"
      "link set dev {h} master {br} up\n",
      fmt::arg("ns", tn.netns_name), fmt::arg("h", tn.host_veth), fmt::arg("mac", tn.mac_address),
      fmt::arg("br", bridge));
  Status s = IpBatch(what, false, host_lines);
  if (s.ok()) s = internal::IpBatchIn(what, tn.netns_path, internal::TaskNamespaceLines(ip, prefix_length, gateway));
  if (!s.ok()) {
    Status undo = Dismantle(fmt::format("undoing the network of task {}", task_id), tn.netns_name, tn.host_veth);
    if (!undo.ok()) return Status(s.code(), fmt::format("{}; {}", s.message(), undo.message()));
    return s;
  }
  return tn;
}

}  // namespace

namespace internal {

Status DeleteBridgeVeth(std::string_view what, const std::string& netns_name, const std::string& host_veth) {
  return Dismantle(what, netns_name, host_veth);
}

}  // namespace internal

StatusOr<std::vector<std::string>> ListTaskNamespaces(const NetworkOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  std::vector<std::string> names;
  DIR* dir = opendir(std::string(kNetnsDir).c_str());
  if (dir == nullptr) {
    if (errno == ENOENT) return names;
    return Internal(fmt::format("listing {}: {}", kNetnsDir, std::strerror(errno)));
  }
  errno = 0;
  while (dirent* entry = readdir(dir)) {
    std::string_view name = entry->d_name;
    if (name.starts_with(options.netns_prefix)) names.emplace_back(name);
  }
  int err = errno;
  closedir(dir);
  if (err != 0) return Internal(fmt::format("listing {}: {}", kNetnsDir, std::strerror(err)));
  std::sort(names.begin(), names.end());
  return names;
}


// --- Firewall and bridge mode ---

namespace {

using internal::ChainName;
using internal::Position;

// Whether FORWARD could drop bridged or routed task traffic: a policy other than ACCEPT, or rules
// of someone else in it (Docker's, firewalld's), or our chain there already (keep it up to date).
StatusOr<bool> ForwardingNeeded(const std::string& chain) {
  ASSIGN_OR_RETURN(std::string policy, internal::ChainPolicy("filter", "FORWARD"));
  if (policy != "ACCEPT") return true;
  ASSIGN_OR_RETURN(std::vector<std::string> rules, internal::ChainRules("filter", "FORWARD"));
  for (const std::string& rule : rules) {
    if (rule != fmt::format("-A FORWARD -j {}", chain)) return true;
  }
  return !rules.empty();
}

Status InstallForwardRules(const std::string& chain, const std::vector<std::vector<std::string>>& rules) {
  RETURN_IF_ERROR(internal::EnsureChain("filter", chain));
  RETURN_IF_ERROR(internal::EnsureRule("filter", "FORWARD", {"-j", chain}, Position::kFirst));
  for (const auto& rule : rules) RETURN_IF_ERROR(internal::EnsureRule("filter", chain, rule, Position::kLast));
  return OkStatus();
}

// Fails when an interface other than `bridge` has an IPv4 network overlapping `cidr`'s.
Status CheckNoOverlap(const std::string& bridge, const Cidr& cidr) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return Internal(fmt::format("getifaddrs: {}", std::strerror(errno)));
  Status result = OkStatus();
  for (ifaddrs* ifa = list; ifa != nullptr && result.ok(); ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || ifa->ifa_netmask == nullptr || ifa->ifa_addr->sa_family != AF_INET) continue;
    if (bridge == ifa->ifa_name) continue;
    uint32_t addr = ntohl(reinterpret_cast<sockaddr_in*>(ifa->ifa_addr)->sin_addr.s_addr);
    uint32_t mask = ntohl(reinterpret_cast<sockaddr_in*>(ifa->ifa_netmask)->sin_addr.s_addr);
    if ((addr & cidr.mask()) == (cidr.ip & cidr.mask()) || (cidr.ip & mask) == (addr & mask)) {
      result = FailedPrecondition(fmt::format(
          "the bridge-mode network {}/{} overlaps {}'s address {} (set another bridge-mode gateway CIDR)",
          Ipv4(cidr.ip & cidr.mask()), cidr.prefix_length, ifa->ifa_name, Ipv4(addr)));
    }
  }
  freeifaddrs(list);
  return result;
}


StatusOr<internal::AddressBook> BookFor(const NetworkOptions& options) {
  if (options.state_dir.empty()) {
    return FailedPrecondition("bridge mode needs a state directory for its addresses (NetworkOptions::state_dir)");
  }
  ASSIGN_OR_RETURN(Cidr cidr, ParseCidr(options.bridge_mode_gateway_cidr));
  return internal::AddressBook(options.state_dir, cidr.ip, cidr.prefix_length);
}

bool HasWord(const std::string& rule, const std::string& word) {
  std::vector<std::string> words = internal::SplitRule(rule);
  return std::find(words.begin(), words.end(), word) != words.end();
}

// The chains this module makes, with the built-in chains that jump to them.
struct OwnChain {
  const char* table;
  const char* suffix;
  std::vector<const char*> from;
};
const std::vector<OwnChain>& OwnChains() {
  static const std::vector<OwnChain> chains = {
      {"nat", "DNAT", {"PREROUTING", "OUTPUT"}},
      {"nat", "PORTS", {}},
      {"nat", "POSTROUTING", {"POSTROUTING"}},
      {"filter", "FORWARD", {"FORWARD"}},
      {"raw", "PREROUTING", {"PREROUTING"}},
  };
  return chains;
}

}  // namespace

Status EnsureForwarding(const NetworkOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  if (internal::IptablesBinary().empty()) return OkStatus();
  std::string chain = ChainName(options, "FORWARD");
  ASSIGN_OR_RETURN(bool needed, ForwardingNeeded(chain));
  if (!needed) return OkStatus();
  // What VPC tasks send beyond the node, and its replies; the host firewall decides the rest
  // (EnsureHostFirewall), and an ACCEPT here never overrides its drops.
  const std::string transits = options.vpc_prefix + "+";
  return InstallForwardRules(chain, {{"-i", transits, "-j", "ACCEPT"},
                                     {"-o", transits, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j",
                                      "ACCEPT"}});
}

Status EnsureBridgeNetwork(const NetworkOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  ASSIGN_OR_RETURN(Cidr cidr, ParseCidr(options.bridge_mode_gateway_cidr));
  const std::string& br = options.bridge_mode_bridge;
  if (internal::IptablesBinary().empty()) {
    return FailedPrecondition("bridge network mode needs iptables (NAT and published ports), and it is not installed");
  }
  RETURN_IF_ERROR(CheckNoOverlap(br, cidr));
  RETURN_IF_ERROR(SetUpBridge(br, {cidr}));
  // The host's connections to 127.0.0.1:<published port> are DNATed to a task: their source,
  // 127.0.0.1, must be routable out of the bridge until MASQUERADE rewrites it.
  RETURN_IF_ERROR(internal::WriteSysctl(fmt::format("/proc/sys/net/ipv4/conf/{}/route_localnet", br), "1"));

  std::string subnet = fmt::format("{}/{}", Ipv4(cidr.ip & cidr.mask()), cidr.prefix_length);
  std::string dnat = ChainName(options, "DNAT");
  std::string post = ChainName(options, "POSTROUTING");
  RETURN_IF_ERROR(internal::EnsureChain("nat", dnat));
  RETURN_IF_ERROR(internal::EnsureChain("nat", ChainName(options, "PORTS")));
  RETURN_IF_ERROR(internal::EnsureChain("nat", post));
  for (const char* from : {"PREROUTING", "OUTPUT"}) {
    RETURN_IF_ERROR(
        internal::EnsureRule("nat", from, {"-m", "addrtype", "--dst-type", "LOCAL", "-j", dnat}, Position::kLast));
  }
  RETURN_IF_ERROR(internal::EnsureRule("nat", "POSTROUTING", {"-j", post}, Position::kLast));
  RETURN_IF_ERROR(internal::EnsureRule("nat", post, {"-s", subnet, "!", "-o", br, "-j", "MASQUERADE"}, Position::kLast));
  RETURN_IF_ERROR(internal::EnsureRule("nat", post, {"-s", "127.0.0.0/8", "-o", br, "-j", "MASQUERADE"}, Position::kLast));
  RETURN_IF_ERROR(internal::EnsureRule(
      "nat", post, {"-s", subnet, "-o", br, "-m", "conntrack", "--ctstate", "DNAT", "-j", "MASQUERADE"}, Position::kLast));

  RETURN_IF_ERROR(InstallForwardRules(
      ChainName(options, "FORWARD"),
      {{"-i", br, "-j", "ACCEPT"}, {"-o", br, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED,DNAT", "-j", "ACCEPT"}}));

  std::string raw = ChainName(options, "PREROUTING");
  RETURN_IF_ERROR(internal::EnsureChain("raw", raw));
  RETURN_IF_ERROR(internal::EnsureRule("raw", "PREROUTING", {"-j", raw}, Position::kFirst));
  RETURN_IF_ERROR(internal::EnsureRule("raw", raw, {"-i", br, "-d", "127.0.0.0/8", "-j", "DROP"}, Position::kLast));
  RETURN_IF_ERROR(EnsureHostFirewall(options));
  // The ports of tasks that outlived their agent (or a firewall made before ports were bound).
  if (options.state_dir.empty()) return OkStatus();
  ASSIGN_OR_RETURN(internal::AddressBook book, BookFor(options));
  ASSIGN_OR_RETURN(auto held, book.List());
  for (const auto& [task_id, ip] : held) {
    ASSIGN_OR_RETURN(TaskNetwork tn, TaskNetworkFor(options, task_id, ip));
    if (InterfaceExists(tn.host_veth)) RETURN_IF_ERROR(internal::GuardBridgePort(options, tn));
  }
  return OkStatus();
}

Status RemoveBridgeNetwork(const NetworkOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  const std::string& br = options.bridge_mode_bridge;
  if (!internal::IptablesBinary().empty()) {
    for (const auto& [table, suffix] : std::vector<std::pair<std::string, std::string>>{
             {"nat", "POSTROUTING"}, {"filter", "FORWARD"}, {"raw", "PREROUTING"}}) {
      std::string chain = ChainName(options, suffix);
      StatusOr<std::vector<std::string>> rules = internal::ChainRules(table, chain);
      if (!rules.ok() && rules.status().code() == StatusCode::kNotFound) continue;
      if (!rules.ok()) return rules.status();
      std::vector<std::string> mine;
      for (const std::string& rule : *rules) {
        if (HasWord(rule, br)) mine.push_back(rule);
      }
      RETURN_IF_ERROR(internal::DeleteRules(table, chain, mine));
    }
  }
  if (InterfaceExists(br)) {
    if (!IsBridge(br)) return FailedPrecondition(fmt::format("removing bridge {}: it is not a bridge", br));
    Status s = IpBatch(fmt::format("removing bridge {}", br), false, fmt::format("link del dev {}\n", br));
    if (!s.ok() && InterfaceExists(br)) return s;
  }
  return OkStatus();
}

Status RemoveChains(const NetworkOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  if (internal::IptablesBinary().empty()) return OkStatus();
  for (const OwnChain& own : OwnChains()) {
    std::string chain = ChainName(options, own.suffix);
    for (const char* from : own.from) {
      ASSIGN_OR_RETURN(std::vector<std::string> rules, internal::ChainRules(own.table, from));
      std::vector<std::string> jumps;
      for (const std::string& rule : rules) {
        std::vector<std::string> words = internal::SplitRule(rule);
        auto j = std::find(words.begin(), words.end(), "-j");
        if (j != words.end() && j + 1 != words.end() && *(j + 1) == chain) jumps.push_back(rule);
      }
      RETURN_IF_ERROR(internal::DeleteRules(own.table, from, jumps));
    }
    if (internal::ChainRules(own.table, chain).ok()) {
      std::string what = fmt::format("removing iptables chain {} of table {}", chain, own.table);
      RETURN_IF_ERROR(internal::Iptables(what, {"-t", own.table, "-F", chain}));
      RETURN_IF_ERROR(internal::Iptables(what, {"-t", own.table, "-X", chain}));
    }
  }
  return OkStatus();
}

StatusOr<TaskNetwork> CreateBridgeTaskNetwork(const NetworkOptions& options, std::string_view task_id) {
  RETURN_IF_ERROR(ValidateOptions(options));
  RETURN_IF_ERROR(ValidateTaskId(task_id));
  ASSIGN_OR_RETURN(Cidr cidr, ParseCidr(options.bridge_mode_gateway_cidr));
  ASSIGN_OR_RETURN(internal::AddressBook book, BookFor(options));
  const std::string& br = options.bridge_mode_bridge;
  if (!InterfaceExists(br) || !IsBridge(br)) {
    return FailedPrecondition(fmt::format("creating the network of task {}: bridge {} does not exist "
                                          "(EnsureBridgeNetwork first)",
                                          task_id, br));
  }
  ASSIGN_OR_RETURN(internal::AddressBook::Allocation a, book.Allocate(task_id));
  StatusOr<TaskNetwork> tn = CreateOn(options, br, "EnsureBridgeNetwork", task_id, a.ip, cidr.prefix_length, cidr.ip);
  if (tn.ok()) {
    // Before anything runs in the namespace: its port passes only its own addresses.
    if (Status guarded = internal::GuardBridgePort(options, *tn); !guarded.ok()) {
      Status undo = internal::DeleteBridgeVeth(fmt::format("undoing the network of task {}", task_id), tn->netns_name,
                                               tn->host_veth);
      tn = undo.ok() ? guarded : Status(guarded.code(), fmt::format("{}; {}", guarded.message(), undo.message()));
    }
  }
  if (!tn.ok() && a.is_new) {
    Status undo = book.Release(task_id);
    if (!undo.ok()) return Status(tn.status().code(), fmt::format("{}; {}", tn.status().message(), undo.message()));
  }
  return tn;
}

StatusOr<TaskNetwork> BridgeTaskNetworkFor(const NetworkOptions& options, std::string_view task_id) {
  RETURN_IF_ERROR(ValidateOptions(options));
  RETURN_IF_ERROR(ValidateTaskId(task_id));
  ASSIGN_OR_RETURN(internal::AddressBook book, BookFor(options));
  ASSIGN_OR_RETURN(std::optional<uint32_t> ip, book.Find(task_id));
  if (!ip) return NotFound(fmt::format("task {} holds no bridge-mode address", task_id));
  return TaskNetworkFor(options, task_id, *ip);
}

Status DeleteBridgeTaskNetwork(const NetworkOptions& options, std::string_view task_id) {
  ASSIGN_OR_RETURN(TaskNetwork tn, TaskNetworkFor(options, task_id, 0));
  ASSIGN_OR_RETURN(internal::AddressBook book, BookFor(options));
  RETURN_IF_ERROR(DeleteTaskNetwork(options, tn));
  ASSIGN_OR_RETURN(std::optional<uint32_t> ip, book.Find(task_id));
  if (ip) {
    ASSIGN_OR_RETURN(TaskNetwork held, TaskNetworkFor(options, task_id, *ip));
    RETURN_IF_ERROR(internal::UnguardBridgePort(options, held));
  }
  // Freed only once nothing of the task's network is left to collide with the next holder.
  return book.Release(task_id);
}

StatusOr<std::map<std::string, uint32_t>> ListBridgeAddresses(const NetworkOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  ASSIGN_OR_RETURN(internal::AddressBook book, BookFor(options));
  return book.List();
}

}  // namespace paddock::agent::net
