#include "agent/net/net.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "agent/net/internal/command.h"

namespace paddock::agent::net {
namespace {

constexpr std::string_view kNetnsDir = "/var/run/netns";
constexpr size_t kMaxIfName = 15;  // IFNAMSIZ - 1
constexpr size_t kMaxPrefix = 7;
constexpr size_t kMaxTaskId = 64;

// `ip netns add` creates and bind-mounts the namespace directory on first use, and two of them
// racing there can fail; creations in this process take turns (each takes a few ms).
std::mutex create_mutex;

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

Status ValidateOptions(const NetworkOptions& options) {
  RETURN_IF_ERROR(ValidateIfName("bridge", options.bridge));
  const std::string& p = options.netns_prefix;
  if (p.empty() || p.size() > kMaxPrefix || !AllNameChars(p, true) || p[0] == '.') {
    return InvalidArgument(fmt::format(
        "netns prefix '{}' must be 1-{} characters of [A-Za-z0-9_.-], not starting with '.'", p, kMaxPrefix));
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

struct Cidr {
  uint32_t ip = 0;
  int prefix_length = 0;
};

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

uint64_t Fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string Mac(uint8_t b0, uint8_t b1, uint32_t rest) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", b0, b1, rest >> 24, (rest >> 16) & 0xff,
                     (rest >> 8) & 0xff, rest & 0xff);
}

std::string NetnsPath(std::string_view name) { return fmt::format("{}/{}", kNetnsDir, name); }

bool NetnsExists(std::string_view name) {
  struct stat st;
  return lstat(NetnsPath(name).c_str(), &st) == 0;
}

// Looked up in the calling thread's network namespace (the host's), not through /sys.
bool InterfaceExists(const std::string& name) { return if_nametoindex(name.c_str()) != 0; }

bool IsBridge(const std::string& name) {
  struct stat st;
  return stat(fmt::format("/sys/class/net/{}/bridge", name).c_str(), &st) == 0;
}

// iproute2's complaint in one line.
std::string OneLine(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text.empty() ? "(no message)" : text;
}

// Runs `ip [-n netns] [-force] -batch -` with `lines`. Fails (quoting ip's stderr) when ip cannot
// be run or a command failed.
Status IpBatch(std::string_view what, const std::string& netns, bool force, const std::string& lines) {
  std::vector<std::string> argv = {internal::IpBinary()};
  if (!netns.empty()) argv.insert(argv.end(), {"-n", netns});
  if (force) argv.push_back("-force");
  argv.insert(argv.end(), {"-batch", "-"});
  StatusOr<internal::CommandResult> r = internal::RunCommand(argv, lines);
  if (!r.ok()) return Status(r.status().code(), fmt::format("{}: {}", what, r.status().message()));
  if (r->exit_code != 0) {
    return Internal(fmt::format("{}: ip exited with {}: {}", what, r->exit_code, OneLine(r->err)));
  }
  return OkStatus();
}

// Deletes the host veth (both ends go) and then the namespace, skipping what does not exist.
Status Dismantle(std::string_view what, const std::string& netns_name, const std::string& host_veth) {
  std::string lines;
  if (InterfaceExists(host_veth)) lines += fmt::format("link del dev {}\n", host_veth);
  if (NetnsExists(netns_name)) lines += fmt::format("netns del {}\n", netns_name);
  if (lines.empty()) return OkStatus();
  Status s = IpBatch(what, "", /*force=*/true, lines);
  // Another caller deleting the same things at the same time is not a failure.
  if (!s.ok() && !InterfaceExists(host_veth) && !NetnsExists(netns_name)) return OkStatus();
  return s;
}

}  // namespace

Status EnsureBridge(const NetworkOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  std::string addresses;
  for (const std::string& text : options.gateway_cidrs) {
    ASSIGN_OR_RETURN(Cidr cidr, ParseCidr(text));
    addresses += fmt::format("addr replace {}/{} dev {}\n", Ipv4(cidr.ip), cidr.prefix_length, options.bridge);
  }
  const std::string& br = options.bridge;
  // A locally administered address derived from the bridge's name: fixed across restarts.
  std::string mac = Mac(0x02, 0x62, static_cast<uint32_t>(Fnv1a64(br)));
  std::string setup = fmt::format("link set dev {} address {}\n{}link set dev {} up\n", br, mac, addresses, br);
  std::string what = fmt::format("setting up bridge {}", br);

  if (InterfaceExists(br)) {
    if (!IsBridge(br)) return FailedPrecondition(fmt::format("{}: an interface of that name exists and is not a bridge", what));
    return IpBatch(what, "", false, setup);
  }
  Status s = IpBatch(what, "", false, fmt::format("link add name {} type bridge\n", br) + setup);
  if (!s.ok() && InterfaceExists(br) && IsBridge(br)) {
    // Someone else created it between our check and our add; finish the setup on theirs.
    return IpBatch(what, "", false, setup);
  }
  return s;
}

StatusOr<TaskNetwork> TaskNetworkFor(const NetworkOptions& options, std::string_view task_id, uint32_t ip) {
  RETURN_IF_ERROR(ValidateOptions(options));
  RETURN_IF_ERROR(ValidateTaskId(task_id));
  TaskNetwork tn;
  tn.netns_name = options.netns_prefix + std::string(task_id);
  tn.netns_path = NetnsPath(tn.netns_name);
  std::string hash = fmt::format("{:016x}", Fnv1a64(task_id));
  tn.host_veth = options.netns_prefix + hash.substr(0, kMaxIfName - options.netns_prefix.size());
  tn.mac_address = Mac(0x02, 0x70, ip);
  tn.ip = ip;
  return tn;
}

std::string TaskIdOfNamespace(const NetworkOptions& options, std::string_view netns_name) {
  if (options.netns_prefix.empty() || !netns_name.starts_with(options.netns_prefix)) return {};
  return std::string(netns_name.substr(options.netns_prefix.size()));
}

StatusOr<TaskNetwork> CreateTaskNetwork(const NetworkOptions& options, std::string_view task_id, uint32_t ip,
                                        int prefix_length, uint32_t gateway) {
  ASSIGN_OR_RETURN(TaskNetwork tn, TaskNetworkFor(options, task_id, ip));
  std::string what = fmt::format("creating the network of task {}", task_id);
  if (prefix_length < 1 || prefix_length > 30) {
    return InvalidArgument(fmt::format("{}: prefix length {} is not in 1-30", what, prefix_length));
  }
  if (ip == 0 || gateway == 0 || ip == gateway) {
    return InvalidArgument(fmt::format("{}: bad address {} or gateway {}", what, Ipv4(ip), Ipv4(gateway)));
  }
  if (!InterfaceExists(options.bridge) || !IsBridge(options.bridge)) {
    return FailedPrecondition(fmt::format("{}: bridge {} does not exist (EnsureBridge first)", what, options.bridge));
  }

  std::lock_guard<std::mutex> lock(create_mutex);
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
      fmt::arg("br", options.bridge));
  std::string task_lines = fmt::format(
      "addr add {ip}/{len} dev eth0\n"
      "link set dev lo up\n"
      "link set dev eth0 up\n"
      "route add default via {gw}\n",
      fmt::arg("ip", Ipv4(ip)), fmt::arg("len", prefix_length), fmt::arg("gw", Ipv4(gateway)));

  Status s = IpBatch(what, "", false, host_lines);
  if (s.ok()) s = IpBatch(what, tn.netns_name, false, task_lines);
  if (!s.ok()) {
    Status undo = Dismantle(fmt::format("undoing the network of task {}", task_id), tn.netns_name, tn.host_veth);
    if (!undo.ok()) return Status(s.code(), fmt::format("{}; {}", s.message(), undo.message()));
    return s;
  }
  return tn;
}

Status DeleteTaskNetwork(const NetworkOptions& options, const TaskNetwork& network) {
  RETURN_IF_ERROR(ValidateOptions(options));
  std::string what = fmt::format("deleting network namespace {}", network.netns_name);
  std::string task_id = TaskIdOfNamespace(options, network.netns_name);
  if (!ValidateTaskId(task_id).ok()) {
    return InvalidArgument(fmt::format("{}: not a name this instance makes (prefix {})", what, options.netns_prefix));
  }
  RETURN_IF_ERROR(ValidateIfName("host veth", network.host_veth));
  if (!network.host_veth.starts_with(options.netns_prefix)) {
    return InvalidArgument(fmt::format("{}: host veth {} does not start with prefix {}", what, network.host_veth,
                                       options.netns_prefix));
  }
  return Dismantle(what, network.netns_name, network.host_veth);
}

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

}  // namespace paddock::agent::net
