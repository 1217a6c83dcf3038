// The VPC router namespaces of awsvpc tasks, their security-group tables and the host firewall
// (agent/net/net.h, "The VPC router namespace", "The host").
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "agent/net/internal/command.h"
#include "agent/net/internal/rtnl.h"
#include "common/proc_routes.h"
#include "agent/net/internal/util.h"
#include "agent/net/net.h"
#include "common/netns.h"
#include "common/subprocess.h"

namespace paddock::agent::net {

namespace internal {

Status IpBatchIn(std::string_view what, const std::string& netns_path, const std::string& lines) {
  return netns::InNetworkNamespace(netns_path, [&] { return IpBatch(what, false, lines); });
}

std::string TaskNamespaceLines(uint32_t ip, int prefix_length, uint32_t gateway) {
  return fmt::format(
      "addr add {ip}/{len} dev eth0\n"
      "link set dev lo up\n"
      "link set dev eth0 up\n"
      "route add default via {gw}\n",
      fmt::arg("ip", Ipv4(ip)), fmt::arg("len", prefix_length), fmt::arg("gw", Ipv4(gateway)));
}

std::mutex& CreateMutex() {
  static std::mutex m;
  return m;
}

}  // namespace internal

namespace {

using internal::Cidr;
using internal::InterfaceExists;
using internal::IpBatch;
using internal::IpBatchIn;
using internal::Ipv4;
using internal::NetnsExists;
using internal::NetnsPath;
using internal::OneLine;
using internal::ParseCidr;
using internal::ValidateOptions;
using internal::ValidateTaskId;

constexpr std::string_view kLockDir = "/run/lock";
constexpr std::string_view kRecordTag = "paddock-vpc";
constexpr std::string_view kNoVersion = "-";

Status ValidateRefId(std::string_view what, std::string_view id) {
  if (id.empty() || id.size() > 64 ||
      !std::all_of(id.begin(), id.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; }))
    return InvalidArgument(fmt::format("{} '{}' must be 1-64 characters of [A-Za-z0-9-]", what, id));
  return OkStatus();
}

// The VPC names `vpc` says are the ones VpcNetworkFor gives: nothing else is ever touched.
Status CheckVpc(const NetworkOptions& options, const VpcNetwork& vpc) {
  ASSIGN_OR_RETURN(VpcNetwork expected, VpcNetworkFor(options, vpc.ref));
  if (expected.netns_name != vpc.netns_name || expected.netns_path != vpc.netns_path ||
      expected.transit != vpc.transit)
    return InvalidArgument(fmt::format("VPC network {} is not the one of {} (node {})", vpc.netns_name,
                                       vpc.ref.vpc_id, vpc.ref.node));
  return OkStatus();
}

// Held while a VPC namespace is made, changed or removed and while a task is attached to it, by
// every process of the host using this VPC prefix. flock is per open file, so threads of one
// process exclude each other too.
StatusOr<subprocess::UniqueFd> LockVpcs(const NetworkOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(kLockDir, ec);
  std::string path = fmt::format("{}/{}vpc.lock", kLockDir, options.vpc_prefix);
  subprocess::UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) return Internal(fmt::format("opening {}: {}", path, std::strerror(errno)));
  while (flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return Internal(fmt::format("locking {}: {}", path, std::strerror(errno)));
  }
  return fd;
}

// What the host end of a transit says about its VPC namespace (its ifalias): whose it is, the
// policy applied last with when its fetch began, the flow limits in place (LimitsToken; empty
// in a record without them, written before the limits had a table of their own), and the overlay
// settings the policy was applied with (OverlayToken; empty in a record older than the overlay).
struct TransitRecord {
  std::string node;
  std::string vpc_id;
  int64_t fetched_at = 0;
  std::string version = std::string(kNoVersion);
  std::string limits;
  std::string overlay;
};

std::string AliasPath(const std::string& transit) { return fmt::format("/sys/class/net/{}/ifalias", transit); }

std::optional<TransitRecord> ReadRecord(const std::string& transit) {
  std::ifstream in(AliasPath(transit));
  std::string tag;
  TransitRecord r;
  if (!(in >> tag >> r.node >> r.vpc_id >> r.fetched_at >> r.version) || tag != kRecordTag) return std::nullopt;
  if (!(in >> r.limits)) r.limits.clear();
  if (!(in >> r.overlay)) r.overlay.clear();
  return r;
}

Status WriteRecord(const std::string& transit, const TransitRecord& r) {
  return internal::WriteSysctl(AliasPath(transit), fmt::format("{} {} {} {} {} {} {}", kRecordTag, r.node, r.vpc_id,
                                                               r.fetched_at, r.version, r.limits, r.overlay));
}

// The overlay settings as the record keeps them: one word. A policy in place under other
// settings (an agent restarted with the overlay turned on, or another address) is programmed
// again, though its version is the same.
std::string OverlayToken(const NetworkOptions& options) {
  if (options.overlay_address.empty()) return "o-";
  return fmt::format("o{}:{}", options.overlay_address, options.overlay_port);
}

// The flow limits as the record keeps them: one word.
std::string LimitsToken(const FlowLimits& limits) {
  return fmt::format("f{}r{}", limits.tracked_per_task, limits.new_per_second);
}

// Runs `script` through `nft -f -` in the calling thread's namespace.
Status RunNft(std::string_view what, const std::string& script) {
  const std::string& nft = internal::NftBinary();
  if (nft.empty()) return FailedPrecondition(fmt::format("{}: nftables' nft is not installed", what));
  StatusOr<internal::CommandResult> c = internal::RunCommand({nft, "-f", "-"}, script);
  if (!c.ok()) return Status(c.status().code(), fmt::format("{}: {}", what, c.status().message()));
  if (c->exit_code != 0) return Internal(fmt::format("{}: nft exited with {}: {}", what, c->exit_code, OneLine(c->err)));
  return OkStatus();
}

// Writes the flow-limits table of VPC namespace `vpc` (CompileVpcFlowLimits) when `limits` are not
// the ones `r` says are in place (a new namespace's record says none): a rewrite starts the counts
// again. Returns whether it wrote; then `r` says the new limits (the caller writes the record).
StatusOr<bool> EnsureFlowLimitsLocked(const VpcNetwork& vpc, const FlowLimits& limits, TransitRecord& r) {
  std::string token = LimitsToken(limits);
  if (r.limits == token) return false;
  std::string what = fmt::format("installing the flow limits of VPC {}", vpc.ref.vpc_id);
  RETURN_IF_ERROR(
      netns::InNetworkNamespace(vpc.netns_path, [&] { return RunNft(what, CompileVpcFlowLimits(limits)); }));
  r.limits = std::move(token);
  return true;
}

// A policy version as the record keeps it: one word. Empty: the policy has none, so it is never
// taken for the one in place.
std::string VersionToken(const std::string& version) {
  if (version.empty()) return {};
  bool plain = version.size() <= 100 && std::all_of(version.begin(), version.end(), [](char c) {
                 return c > ' ' && c < 127;
               });
  if (plain && version != kNoVersion) return version;
  return fmt::format("h{:016x}", internal::Fnv1a64(version));
}

// The interface names in the namespace at `path`.
StatusOr<std::vector<std::string>> LinksIn(const std::string& path) {
  std::vector<std::string> names;
  RETURN_IF_ERROR(netns::InNetworkNamespace(path, [&]() -> Status {
    struct if_nameindex* list = if_nameindex();
    if (list == nullptr) return Internal(fmt::format("listing the interfaces of {}: {}", path, std::strerror(errno)));
    for (struct if_nameindex* i = list; i->if_index != 0; ++i) names.emplace_back(i->if_name);
    if_freenameindex(list);
    return OkStatus();
  }));
  return names;
}

bool InterfaceIn(const std::string& path, const std::string& name) {
  bool found = false;
  netns::InNetworkNamespace(path, [&] {
    found = InterfaceExists(name);
    return OkStatus();
  }).IgnoreError();
  return found;
}

// The destinations of the /32 routes through `device`, in the calling thread's namespace.
std::vector<uint32_t> HostRoutesVia(const std::string& device) {
  std::vector<uint32_t> out;
  for (const Ipv4Route& r : ReadIpv4Routes())
    if (r.iface == device && r.mask == 0xffffffffu) out.push_back(r.destination);
  return out;
}

// Proxy ARP answers at once on `interface` (of the calling thread's namespace), not after a
// random delay of up to 0.8 s (the kernel's default, which only the host's namespace can change
// for new interfaces: neigh/default is not there in others).
Status NoProxyDelay(const std::string& interface) {
  return internal::WriteSysctl(fmt::format("/proc/sys/net/ipv4/neigh/{}/proxy_delay", interface), "0");
}

// Makes VPC namespace `vpc` unless it is there and whole; the lock is held. Returns whether it
// was made now.
StatusOr<bool> EnsureVpcLocked(const NetworkOptions& options, const VpcNetwork& vpc) {
  const std::string& name = vpc.netns_name;
  const bool ns = NetnsExists(name);
  const bool transit = InterfaceExists(vpc.transit);
  if (ns && transit) {
    std::optional<TransitRecord> r = ReadRecord(vpc.transit);
    if (r && r->node == vpc.ref.node && r->vpc_id == vpc.ref.vpc_id) return false;
    if (r) {
      return AlreadyExists(fmt::format(
          "the network namespace {} of VPC {} (node {}) is VPC {}'s (node {}): the names collide; this task cannot "
          "run on this host while that VPC has tasks here",
          name, vpc.ref.vpc_id, vpc.ref.node, r->vpc_id, r->node));
    }
  }
  std::string what = fmt::format("creating the router namespace {} of VPC {}", name, vpc.ref.vpc_id);
  if (ns || transit) {
    // Left by a create that did not finish (it writes the record last): made again.
    if (ns) RETURN_IF_ERROR(internal::DeleteOverlayDevice(vpc));
    std::string lines;
    if (transit) lines += fmt::format("link del dev {}\n", vpc.transit);
    if (ns) lines += fmt::format("netns del {}\n", name);
    RETURN_IF_ERROR(IpBatch(what, /*force=*/true, lines));
  }

  std::string host_lines = fmt::format(
      "netns add {ns}\n"
      "link add {t} type veth peer name {in} netns {ns}\n"
      "addr add {host}/32 dev {t}\n"
      "link set dev {t} up\n",
      fmt::arg("ns", name), fmt::arg("t", vpc.transit), fmt::arg("in", kTransitInside),
      fmt::arg("host", kTransitHostAddress));
  std::string vpc_lines = "link set dev lo up\n";
  for (const std::string& g : options.gateway_cidrs) {
    ASSIGN_OR_RETURN(Cidr cidr, ParseCidr(g));
    vpc_lines += fmt::format("addr add {}/32 dev lo\n", Ipv4(cidr.ip));
    // The subnet is the VPC's: an address of it that no task holds is unreachable, never sent on
    // to the node and beyond.
    vpc_lines += fmt::format("route replace unreachable {}/{}\n", Ipv4(cidr.ip & cidr.mask()), cidr.prefix_length);
  }
  vpc_lines += fmt::format(
      "addr add {md}/32 dev lo\n"
      "addr add {dns}/32 dev lo\n"
      "addr add {vdns}/32 dev lo\n"
      "addr add {vpc}/32 dev {in}\n"
      "link set dev {in} up\n"
      "route add {host}/32 dev {in} scope link\n"
      "route add default via {host} dev {in} onlink\n",
      fmt::arg("md", kMetadataAddress), fmt::arg("dns", kDnsAddress), fmt::arg("vdns", kVpcDnsAddress),
      fmt::arg("vpc", kTransitVpcAddress), fmt::arg("in", kTransitInside), fmt::arg("host", kTransitHostAddress));

  Status s = IpBatch(what, false, host_lines);
  if (s.ok()) {
    s = netns::InNetworkNamespace(vpc.netns_path, [&]() -> Status {
      // Settings first, so the interfaces made below (and every task veth later) get them.
      const std::pair<const char*, const char*> sysctls[] = {
          {"ipv4/ip_forward", "1"},
          {"ipv4/conf/all/rp_filter", "1"},  // strict: no task sends from an address not its own
          {"ipv4/conf/default/rp_filter", "1"},
          {"ipv4/conf/all/proxy_arp", "1"},  // the router answers for the gateway and the neighbours
          {"ipv4/conf/default/proxy_arp", "1"},
          {"ipv4/conf/all/send_redirects", "0"},
          {"ipv4/conf/default/send_redirects", "0"},
          {"ipv6/conf/all/disable_ipv6", "1"},
          {"ipv6/conf/default/disable_ipv6", "1"},
      };
      for (const auto& [key, value] : sysctls)
        RETURN_IF_ERROR(internal::WriteSysctl(fmt::format("/proc/sys/net/{}", key), value));
      RETURN_IF_ERROR(NoProxyDelay(std::string(kTransitInside)));
      return IpBatch(what, false, vpc_lines);
    });
  }
  // The flow limits before the record that makes the namespace whole: no task veth is ever
  // added to a namespace without them.
  TransitRecord record{vpc.ref.node, vpc.ref.vpc_id, 0, std::string(kNoVersion), "", ""};
  if (s.ok()) s = EnsureFlowLimitsLocked(vpc, options.flow_limits, record).status();
  if (s.ok()) s = WriteRecord(vpc.transit, record);
  if (!s.ok()) {
    Status undo = IpBatch(what, true, fmt::format("link del dev {}\nnetns del {}\n", vpc.transit, name));
    if (!undo.ok() && (InterfaceExists(vpc.transit) || NetnsExists(name)))
      return Status(s.code(), fmt::format("{}; undoing: {}", s.message(), undo.message()));
    return s;
  }
  return true;
}

StatusOr<Applied> ApplyLocked(const NetworkOptions& options, const VpcNetwork& vpc, const FetchedPolicy& fetched) {
  std::optional<TransitRecord> r = ReadRecord(vpc.transit);
  if (!r || !NetnsExists(vpc.netns_name) || r->node != vpc.ref.node || r->vpc_id != vpc.ref.vpc_id)
    return NotFound(fmt::format("VPC {} has no router namespace {} on this host", vpc.ref.vpc_id, vpc.netns_name));
  // The flow limits have a table of their own, which a policy never replaces (their counts would
  // start again at every change): it is written here only when the limits in place are not these
  // (an agent started with other limits, or a namespace made before the table existed), and
  // before the policy: the policy that moves the limits out of a table of an older agent finds
  // them in place already.
  ASSIGN_OR_RETURN(bool rewritten, EnsureFlowLimitsLocked(vpc, options.flow_limits, *r));
  if (rewritten) RETURN_IF_ERROR(WriteRecord(vpc.transit, *r));
  const std::string token = VersionToken(fetched.policy.version);
  const std::string overlay = OverlayToken(options);
  if (!token.empty() && token == r->version) {
    if (fetched.fetched_at > r->fetched_at || overlay != r->overlay) {
      // The same version is the same policy: its overlay, programmed under other settings, is
      // brought in line with these.
      if (overlay != r->overlay) RETURN_IF_ERROR(internal::SyncOverlay(options, vpc, fetched.policy));
      r->fetched_at = std::max(r->fetched_at, fetched.fetched_at);
      r->overlay = overlay;
      RETURN_IF_ERROR(WriteRecord(vpc.transit, *r));
    }
    return Applied::kUnchanged;
  }
  if (r->fetched_at > fetched.fetched_at) return Applied::kSuperseded;
  if (!fetched.policy.vpc_id.empty() && fetched.policy.vpc_id != vpc.ref.vpc_id)
    return InvalidArgument(fmt::format("the policy of {} cannot apply to VPC {}", fetched.policy.vpc_id, vpc.ref.vpc_id));
  ASSIGN_OR_RETURN(std::string script, CompileVpcPolicy(fetched.policy));
  if (internal::NftBinary().empty()) return FailedPrecondition("security groups need nftables' nft, and it is not installed");
  std::string what = fmt::format("applying policy {} of VPC {}", fetched.policy.version, vpc.ref.vpc_id);
  RETURN_IF_ERROR(netns::InNetworkNamespace(vpc.netns_path, [&] { return RunNft(what, script); }));
  // The overlay after the rules: a task of another host is never reachable without its rules.
  // A failure leaves the record as it was, so the next apply programs it again.
  RETURN_IF_ERROR(internal::SyncOverlay(options, vpc, fetched.policy));
  r->fetched_at = std::max(r->fetched_at, fetched.fetched_at);
  r->version = token.empty() ? std::string(kNoVersion) : token;
  r->overlay = overlay;
  RETURN_IF_ERROR(WriteRecord(vpc.transit, *r));
  return Applied::kApplied;
}

StatusOr<std::vector<std::string>> ListNamespaces(std::string_view prefix) {
  std::vector<std::string> names;
  DIR* dir = opendir("/var/run/netns");
  if (dir == nullptr) {
    if (errno == ENOENT) return names;
    return Internal(fmt::format("listing /var/run/netns: {}", std::strerror(errno)));
  }
  errno = 0;
  while (dirent* entry = readdir(dir)) {
    std::string_view name = entry->d_name;
    if (name.starts_with(prefix)) names.emplace_back(name);
  }
  int err = errno;
  closedir(dir);
  if (err != 0) return Internal(fmt::format("listing /var/run/netns: {}", std::strerror(err)));
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

int64_t MonotonicNanos() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

StatusOr<VpcNetwork> VpcNetworkFor(const NetworkOptions& options, const VpcRef& ref) {
  RETURN_IF_ERROR(ValidateOptions(options));
  RETURN_IF_ERROR(ValidateRefId("VPC id", ref.vpc_id));
  RETURN_IF_ERROR(ValidateRefId("node identity", ref.node));
  VpcNetwork vpc;
  vpc.ref = ref;
  std::string hash = fmt::format("{:016x}", internal::Fnv1a64(ref.node + "/" + ref.vpc_id));
  vpc.netns_name = options.vpc_prefix + hash.substr(0, internal::kMaxIfName - options.vpc_prefix.size());
  vpc.netns_path = NetnsPath(vpc.netns_name);
  vpc.transit = vpc.netns_name;
  return vpc;
}

StatusOr<Applied> ApplyVpcPolicy(const NetworkOptions& options, const VpcNetwork& vpc, const FetchedPolicy& fetched) {
  RETURN_IF_ERROR(CheckVpc(options, vpc));
  ASSIGN_OR_RETURN(subprocess::UniqueFd lock, LockVpcs(options));
  return ApplyLocked(options, vpc, fetched);
}

StatusOr<Applied> PrepareVpcNetwork(const NetworkOptions& options, const VpcNetwork& vpc, const FetchedPolicy& fetched) {
  RETURN_IF_ERROR(CheckVpc(options, vpc));
  std::lock_guard<std::mutex> in_process(internal::CreateMutex());
  ASSIGN_OR_RETURN(subprocess::UniqueFd lock, LockVpcs(options));
  RETURN_IF_ERROR(EnsureVpcLocked(options, vpc).status());
  return ApplyLocked(options, vpc, fetched);
}

StatusOr<TaskNetwork> CreateTaskNetwork(const NetworkOptions& options, const VpcNetwork& vpc,
                                        const FetchedPolicy& fetched, std::string_view task_id, uint32_t ip,
                                        int prefix_length, uint32_t gateway) {
  RETURN_IF_ERROR(CheckVpc(options, vpc));
  ASSIGN_OR_RETURN(TaskNetwork tn, TaskNetworkFor(options, task_id, ip, &vpc));
  std::string what = fmt::format("creating the network of task {}", task_id);
  if (prefix_length < 1 || prefix_length > 30) {
    return InvalidArgument(fmt::format("{}: prefix length {} is not in 1-30", what, prefix_length));
  }
  const uint32_t mask = ~uint32_t{0} << (32 - prefix_length);
  if (ip == 0 || gateway == 0 || ip == gateway || (ip & mask) != (gateway & mask)) {
    return InvalidArgument(
        fmt::format("{}: bad address {}/{} or gateway {}", what, Ipv4(ip), prefix_length, Ipv4(gateway)));
  }

  std::lock_guard<std::mutex> in_process(internal::CreateMutex());
  ASSIGN_OR_RETURN(subprocess::UniqueFd lock, LockVpcs(options));
  RETURN_IF_ERROR(EnsureVpcLocked(options, vpc).status());
  // Before the task has a veth: it is never reachable without its rules.
  RETURN_IF_ERROR(ApplyLocked(options, vpc, fetched).status());

  // Checked first so that the undo below only ever removes what this call made.
  if (NetnsExists(tn.netns_name)) {
    return AlreadyExists(fmt::format("{}: network namespace {} already exists", what, tn.netns_name));
  }
  if (InterfaceIn(vpc.netns_path, tn.host_veth)) {
    return AlreadyExists(fmt::format("{}: interface {} already exists in {} (a leftover of this task, or another "
                                     "task whose id hashes alike)",
                                     what, tn.host_veth, vpc.netns_name));
  }
  // With the overlay on, both ends are sized to it (TaskMtu).
  ASSIGN_OR_RETURN(int mtu, internal::TaskMtu(options));
  const std::string mtu_option = mtu > 0 ? fmt::format(" mtu {}", mtu) : "";
  // One `ip` run inside the VPC namespace makes the task's namespace and the veth pair, both ends
  // born where they live under their final names (nothing appears on the host), and routes; a
  // second one, inside the task's namespace, sets up eth0. (`ip netns add` returns to the
  // namespace it was run in.)
  std::string vpc_lines = fmt::format(
      "netns add {ns}\n"
      "link add {v}{mtu} type veth peer name eth0 address {mac}{mtu} netns {ns}\n"
      "link set dev {v} up\n"
      "route add {ip}/32 dev {v}\n"
      "addr replace {gw}/32 dev lo\n"
      "route replace unreachable {net}/{len}\n",
      fmt::arg("ns", tn.netns_name), fmt::arg("v", tn.host_veth), fmt::arg("mac", tn.mac_address),
      fmt::arg("mtu", mtu_option), fmt::arg("ip", Ipv4(ip)), fmt::arg("gw", Ipv4(gateway)), fmt::arg("net", Ipv4(ip & mask)),
      fmt::arg("len", prefix_length));
  Status s = netns::InNetworkNamespace(vpc.netns_path, [&]() -> Status {
    RETURN_IF_ERROR(IpBatch(what, false, vpc_lines));
    return NoProxyDelay(tn.host_veth);
  });
  if (s.ok()) s = IpBatchIn(what, tn.netns_path, internal::TaskNamespaceLines(ip, prefix_length, gateway));
  if (!s.ok()) {
    std::string undo_what = fmt::format("undoing the network of task {}", task_id);
    Status undo = OkStatus();
    if (InterfaceIn(vpc.netns_path, tn.host_veth))
      undo = IpBatchIn(undo_what, vpc.netns_path, fmt::format("link del dev {}\n", tn.host_veth));
    if (NetnsExists(tn.netns_name)) {
      Status ns = IpBatch(undo_what, true, fmt::format("netns del {}\n", tn.netns_name));
      if (undo.ok()) undo = ns;
    }
    if (!undo.ok()) return Status(s.code(), fmt::format("{}; {}", s.message(), undo.message()));
    return s;
  }
  // The node's way in. Another VPC's task of this host may hold the address already: its route
  // stays, and this task is reached from the host only through the edge (none yet).
  tn.host_route = internal::AddDeviceRoute(ip, vpc.transit).ok();
  return tn;
}

StatusOr<bool> VpcRouterAdmitsDns(const VpcNetwork& vpc) {
  if (internal::NftBinary().empty()) return false;
  internal::CommandResult r;
  RETURN_IF_ERROR(netns::InNetworkNamespace(vpc.netns_path, [&]() -> Status {
    ASSIGN_OR_RETURN(r, internal::RunCommand({internal::NftBinary(), "list", "chain", "inet", std::string(kVpcTable),
                                              "input"},
                                             ""));
    return OkStatus();
  }));
  if (r.exit_code != 0) return false;  // no policy applied yet
  return r.out.find(fmt::format("{}, {} }} udp dport 53 accept", kDnsAddress, kVpcDnsAddress)) != std::string::npos;
}

Status DeleteTaskNetwork(const NetworkOptions& options, const TaskNetwork& network) {
  RETURN_IF_ERROR(ValidateOptions(options));
  std::string what = fmt::format("deleting network namespace {}", network.netns_name);
  std::string task_id = TaskIdOfNamespace(options, network.netns_name);
  if (!ValidateTaskId(task_id).ok()) {
    return InvalidArgument(fmt::format("{}: not a name this instance makes (prefix {})", what, options.netns_prefix));
  }
  if (network.host_veth.empty() || network.host_veth.size() > internal::kMaxIfName ||
      !network.host_veth.starts_with(options.netns_prefix) ||
      network.host_veth.find_first_of("/ \n") != std::string::npos) {
    return InvalidArgument(fmt::format("{}: veth '{}' is not a name of prefix {}", what, network.host_veth,
                                       options.netns_prefix));
  }
  if (!network.vpc_netns.empty() && !network.vpc_netns.starts_with(options.vpc_prefix)) {
    return InvalidArgument(fmt::format("{}: {} is not a VPC namespace of prefix {}", what, network.vpc_netns,
                                       options.vpc_prefix));
  }
  std::string vpc_netns = network.vpc_netns;
  if (vpc_netns.empty()) {
    // A bridge-mode task's veth is on the host; an awsvpc task's of unknown VPC is looked for.
    if (InterfaceExists(network.host_veth)) return internal::DeleteBridgeVeth(what, network.netns_name, network.host_veth);
    ASSIGN_OR_RETURN(std::vector<std::string> vpcs, ListVpcNamespaces(options));
    for (const std::string& name : vpcs) {
      if (InterfaceIn(NetnsPath(name), network.host_veth)) {
        vpc_netns = name;
        break;
      }
    }
  }
  if (!vpc_netns.empty() && NetnsExists(vpc_netns)) {
    uint32_t ip = network.ip;
    // One `ip` run inside the VPC namespace deletes the veth (eth0 goes with it) and the task's
    // namespace; what is gone already is skipped.
    RETURN_IF_ERROR(netns::InNetworkNamespace(NetnsPath(vpc_netns), [&]() -> Status {
      std::string lines;
      if (InterfaceExists(network.host_veth)) {
        if (ip == 0) {
          std::vector<uint32_t> routed = HostRoutesVia(network.host_veth);
          if (!routed.empty()) ip = routed.front();
        }
        lines += fmt::format("link del dev {}\n", network.host_veth);
      }
      if (NetnsExists(network.netns_name)) lines += fmt::format("netns del {}\n", network.netns_name);
      if (lines.empty()) return OkStatus();
      Status s = IpBatch(what, /*force=*/true, lines);
      // Another caller deleting the same things at the same time is not a failure.
      if (!s.ok() && !InterfaceExists(network.host_veth) && !NetnsExists(network.netns_name)) return OkStatus();
      return s;
    }));
    // Only the route through this VPC's transit: another VPC's task may hold the address.
    if (ip != 0) {
      Status s = internal::DeleteDeviceRoute(ip, vpc_netns);
      if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
    }
    return OkStatus();
  }
  if (!NetnsExists(network.netns_name)) return OkStatus();
  Status s = IpBatch(what, /*force=*/true, fmt::format("netns del {}\n", network.netns_name));
  if (!s.ok() && !NetnsExists(network.netns_name)) return OkStatus();
  return s;
}

StatusOr<std::vector<std::string>> ListVpcNamespaces(const NetworkOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  return ListNamespaces(options.vpc_prefix);
}

StatusOr<bool> RemoveVpcNetworkIfUnused(const NetworkOptions& options, std::string_view netns_name) {
  RETURN_IF_ERROR(ValidateOptions(options));
  const std::string name(netns_name);
  if (!name.starts_with(options.vpc_prefix) || name.size() > internal::kMaxIfName ||
      name.find_first_of("/ \n") != std::string::npos)
    return InvalidArgument(fmt::format("{} is not a VPC namespace of prefix {}", name, options.vpc_prefix));
  std::lock_guard<std::mutex> in_process(internal::CreateMutex());
  ASSIGN_OR_RETURN(subprocess::UniqueFd lock, LockVpcs(options));
  std::string what = fmt::format("removing the VPC router namespace {}", name);
  if (NetnsExists(name)) {
    ASSIGN_OR_RETURN(std::vector<std::string> links, LinksIn(NetnsPath(name)));
    VpcNetwork vpc;  // the names only: namespace and transit are the same
    vpc.netns_name = vpc.transit = name;
    vpc.netns_path = NetnsPath(name);
    for (const std::string& link : links)
      if (link != "lo" && link != kTransitInside && link != kOverlayDevice && link != internal::OverlayTemporaryName(vpc))
        return false;  // a task's veth
    RETURN_IF_ERROR(internal::ForgetOverlay(options, vpc));
  }
  std::string lines;
  if (InterfaceExists(name)) lines += fmt::format("link del dev {}\n", name);  // its routes go with it
  if (NetnsExists(name)) lines += fmt::format("netns del {}\n", name);
  if (lines.empty()) return true;
  Status s = IpBatch(what, /*force=*/true, lines);
  if (!s.ok() && (InterfaceExists(name) || NetnsExists(name))) return s;
  return true;
}

// --- The host firewall ---

std::string HostFirewallTable(const NetworkOptions& options) {
  std::string t = options.chain_prefix;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (!t.empty() && std::isdigit(static_cast<unsigned char>(t[0]))) t.insert(t.begin(), 't');
  return t;
}

namespace {

// The table, made or brought up to date in one transaction: its chains are emptied and filled
// again. (A set of ports kept in an earlier version is deleted with it.)
std::string HostFirewallScript(const NetworkOptions& options) {
  const std::string t = HostFirewallTable(options);
  const std::string transits = options.vpc_prefix + "*";
  const std::string& br = options.bridge_mode_bridge;
  return fmt::format(
      "add table inet {t}\n"
      "add chain inet {t} input {{ type filter hook input priority filter; policy accept; }}\n"
      "add chain inet {t} forward {{ type filter hook forward priority filter; policy accept; }}\n"
      "add set inet {t} bridge_flows {{ type ipv4_addr; size 65535; flags dynamic; }}\n"
      "add set inet {t} bridge_flow_rate {{ type ipv4_addr; size 65535; flags dynamic,timeout; timeout 1m; }}\n"
      // The overlay's allowlist (net.h, "The overlay"): the VNIs of this host's VPC routers, and
      // which hosts may send each of them (filled by SyncOverlay, kept across agent restarts).
      "add set inet {t} overlay_vnis {{ typeof @th,96,24; }}\n"
      "add set inet {t} overlay_peers {{ typeof ip saddr . @th,96,24; }}\n"
      "flush chain inet {t} input\n"
      "flush chain inet {t} forward\n"
      // Tasks never reach the node: from a VPC transit or the bridge-mode bridge only replies to
      // the node's own connections are let in, and from the bridge the task metadata endpoint:
      // a listener bound to its address itself (`socket wildcard 0`), never one bound to every
      // address (0.0.0.0:22 answers at that address too). Only metadata services bind it.
      "add rule inet {t} input iifname \"{tr}\" ct state established,related accept\n"
      "add rule inet {t} input iifname \"{tr}\" drop\n"
      "add rule inet {t} input iifname \"{br}\" ct state established,related accept\n"
      "{bridge_input_limits}"
      "add rule inet {t} input iifname \"{br}\" ip daddr {md} meta l4proto tcp socket wildcard 0 accept\n"
      "add rule inet {t} input iifname \"{br}\" drop\n"
      // A VXLAN packet for one of this host's VPCs (its VNI: bits 96-119 of the UDP header and
      // payload) is taken only from a host that runs a task of that VPC: no other machine on the
      // underlay — a tenant's own `paddock agent` host included — injects into another VPC.
      "add rule inet {t} input udp dport {op} @th,96,24 @overlay_vnis ip saddr . @th,96,24 != @overlay_peers counter drop\n"
      // Bridge-mode tasks' flows are tracked here, in the host's namespace: each task address is
      // held to its FlowLimits (the VPCs' tasks are, in their routers).
      "{bridge_limits}"
      // No task sends to the overlay's port through the node (issue 16 §3): a VXLAN packet it
      // crafted would reach a host's overlay socket, which takes any VNI into that VPC's router.
      // Forwarded only: to the node itself, tasks send nothing but replies anyway (input above).
      "add rule inet {t} forward iifname \"{tr}\" udp dport {op} drop\n"
      "add rule inet {t} forward iifname \"{br}\" udp dport {op} drop\n"
      // Nothing enters a VPC through the node but replies: not another VPC, not a bridge-mode task,
      // not another machine.
      "add rule inet {t} forward oifname \"{tr}\" ct state established,related accept\n"
      "add rule inet {t} forward oifname \"{tr}\" drop\n"
      // A VPC task reaches bridge-mode tasks only by their published ports (DNAT), as any machine.
      "add rule inet {t} forward iifname \"{tr}\" oifname \"{br}\" ct status dnat accept\n"
      "add rule inet {t} forward iifname \"{tr}\" oifname \"{br}\" drop\n"
      // Bridge-mode tasks share one L2 segment: each port (a task's host veth, GuardBridgePort)
      // passes only its task's own MAC and IPv4 address, in IPv4 and in ARP; nothing else leaves
      // it (no IPv6). Ports not in task_ports (other bridges' on this host) are not looked at.
      "add table bridge {t}\n"
      "add set bridge {t} task_ports {{ type ifname; }}\n"
      "add set bridge {t} task_bindings {{ type ifname . ether_addr . ipv4_addr; }}\n"
      "add chain bridge {t} guard {{ type filter hook prerouting priority filter; policy accept; }}\n"
      "flush chain bridge {t} guard\n"
      "add rule bridge {t} guard iifname @task_ports iifname . ether saddr . ip saddr @task_bindings accept\n"
      "add rule bridge {t} guard iifname @task_ports iifname . ether saddr . arp saddr ip @task_bindings "
      "iifname . arp saddr ether . arp saddr ip @task_bindings accept\n"
      "add rule bridge {t} guard iifname @task_ports drop\n",
      fmt::arg("t", t), fmt::arg("tr", transits), fmt::arg("br", br), fmt::arg("md", kMetadataAddress),
      fmt::arg("op", options.overlay_port),
      fmt::arg("bridge_limits", internal::FlowLimitRules(options.flow_limits,
                                                          fmt::format("add rule inet {} forward iifname \"{}\" ", t, br),
                                                          "bridge_")),
      fmt::arg("bridge_input_limits",
               internal::FlowLimitRules(options.flow_limits, fmt::format("add rule inet {} input iifname \"{}\" ", t, br),
                                        "bridge_")));
}

}  // namespace

Status EnsureHostFirewall(const NetworkOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  return RunNft("installing the host firewall", HostFirewallScript(options));
}

Status RemoveHostFirewall(const NetworkOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  const std::string t = HostFirewallTable(options);
  return RunNft("removing the host firewall",
                fmt::format("add table inet {0}\ndelete table inet {0}\nadd table bridge {0}\ndelete table bridge {0}\n", t));
}

namespace internal {

namespace {

std::string PortElements(const NetworkOptions& options, const TaskNetwork& network, std::string_view verb) {
  const std::string t = HostFirewallTable(options);
  return fmt::format("{v} element bridge {t} task_bindings {{ \"{p}\" . {mac} . {ip} }}\n"
                     "{v} element bridge {t} task_ports {{ \"{p}\" }}\n",
                     fmt::arg("v", verb), fmt::arg("t", t), fmt::arg("p", network.host_veth),
                     fmt::arg("mac", network.mac_address), fmt::arg("ip", Ipv4(network.ip)));
}

}  // namespace

Status GuardBridgePort(const NetworkOptions& options, const TaskNetwork& network) {
  RETURN_IF_ERROR(ValidateOptions(options));
  return RunNft(fmt::format("binding the bridge port {} to its task's addresses", network.host_veth),
                PortElements(options, network, "add"));
}

Status UnguardBridgePort(const NetworkOptions& options, const TaskNetwork& network) {
  RETURN_IF_ERROR(ValidateOptions(options));
  // Both or neither are there (GuardBridgePort adds them in one transaction).
  Status s = RunNft("unbinding a bridge port", PortElements(options, network, "delete"));
  if (!s.ok() && s.message().find("No such file or directory") == std::string_view::npos) return s;
  return OkStatus();
}

}  // namespace internal

}  // namespace paddock::agent::net
