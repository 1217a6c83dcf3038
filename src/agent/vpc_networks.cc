#include "agent/vpc_networks.h"

#include <algorithm>
#include <functional>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "agent/net/net.h"
#include "common/netns.h"

namespace paddock::agent {
namespace {

void Log(std::string_view what, const Status& s) {
  fmt::print(stderr, "paddock: agent: {}: {}\n", what, s.ToString());
}

bool Lists(const vpc::VpcPolicy& policy, std::string_view ip) {
  return std::any_of(policy.members.begin(), policy.members.end(),
                     [&](const vpc::PolicyMember& m) { return m.ip == ip; });
}

std::string Ipv4(uint32_t ip) {
  return fmt::format("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
}

}  // namespace

VpcNetworks::VpcNetworks(Control& control, Options options) : control_(control), options_(std::move(options)) {}

VpcNetworks::~VpcNetworks() = default;

std::string VpcNetworks::KeyOf(const Scope& scope) { return scope.account.str() + "/" + scope.region.str(); }

StatusOr<std::pair<net::FetchedPolicy, net::VpcNetwork>> VpcNetworks::Fetch(const Scope& scope) {
  net::FetchedPolicy fetched;
  // Before the question: an answer cannot be older than this.
  fetched.fetched_at = net::MonotonicNanos();
  ASSIGN_OR_RETURN(fetched.policy, control_.NetworkPolicy(options_.agent_id, scope));
  std::string node = control_.NetworkIdentity();
  if (node.empty()) return Unavailable("the control plane has not said its network identity yet");
  // With an overlay, the host is its overlay address: agents of one server with different ones
  // are on different hosts (or simulate them, each in a network namespace of its own, on one
  // machine), and never share a VPC namespace.
  if (!options_.network.overlay_address.empty()) {
    node += "-" + options_.network.overlay_address;
    std::replace(node.begin(), node.end(), '.', '-');
  }
  ASSIGN_OR_RETURN(net::VpcNetwork vpc, net::VpcNetworkFor(options_.network, {fetched.policy.vpc_id, node}));
  return std::make_pair(std::move(fetched), std::move(vpc));
}

bool VpcNetworks::ServeOnce(const Scope& scope, uint64_t Vpc::*served, uint64_t id, const std::function<Status()>& serve,
                            const std::function<void()>& release) {
  {
    std::lock_guard lock(mu_);
    if (id != 0 && vpcs_[KeyOf(scope)].*served == id) return true;
  }
  // A new namespace (or none served yet): serving it moves a listener of the old one over.
  if (!serve().ok()) return false;
  bool extra = false;
  {
    std::lock_guard lock(mu_);
    Vpc& v = vpcs_[KeyOf(scope)];
    if (v.*served == id) {
      extra = true;  // another task of the VPC was served meanwhile
    } else {
      extra = v.*served != 0;  // the old namespace's reference, now the new one's
      v.*served = id;
    }
  }
  if (extra) release();
  return true;
}

VpcNetworks::Attachment VpcNetworks::Serve(const Scope& scope, const net::VpcNetwork& vpc, net::TaskNetwork tn,
                                           std::string_view task_id) {
  Attachment a{std::move(tn), {}, false, vpc.ref.vpc_id};
  const uint64_t id = netns::NamespaceId(vpc.netns_path);
  if (options_.metadata != nullptr) {
    bool ok = ServeOnce(
        scope, &Vpc::served_ns, id,
        [&] {
          Status s = options_.metadata->ServeNetwork(vpc.netns_name, vpc.netns_path);
          if (!s.ok()) Log(fmt::format("task {}: no task metadata endpoint in {}", task_id, vpc.netns_name), s);
          return s;
        },
        [&] { options_.metadata->ReleaseNetwork(vpc.netns_name); });
    if (ok) a.metadata_network = vpc.netns_name;
  }
  if (options_.dns != nullptr) {
    a.dns = ServeOnce(
        scope, &Vpc::dns_ns, id,
        [&] {
          // Never name a server the router's input hook would keep tasks from (a namespace whose
          // policy an older agent applied): the task gets the host's nameservers then, and the
          // VPC's next task tries again.
          StatusOr<bool> admits = net::VpcRouterAdmitsDns(vpc);
          if (!admits.ok() || !*admits) {
            Status s = admits.ok() ? FailedPrecondition("its router's rules predate the DNS server") : admits.status();
            Log(fmt::format("task {}: no DNS server in {}", task_id, vpc.netns_name), s);
            return s;
          }
          Status s = options_.dns->ServeNetwork(vpc.netns_name, vpc.netns_path, DnsListenerName(scope, vpc.ref.vpc_id));
          if (!s.ok()) Log(fmt::format("task {}: no DNS server in {}", task_id, vpc.netns_name), s);
          return s;
        },
        [&] { options_.dns->ReleaseNetwork(vpc.netns_name); });
  }
  return a;
}

void VpcNetworks::Unserve(const net::VpcNetwork& vpc, uint64_t served_ns, uint64_t dns_ns) {
  if (options_.metadata != nullptr && served_ns != 0) options_.metadata->ReleaseNetwork(vpc.netns_name);
  if (options_.dns != nullptr && dns_ns != 0) options_.dns->ReleaseNetwork(vpc.netns_name);
}

void VpcNetworks::Prepare(const Scope& scope) {
  auto fetched = Fetch(scope);
  if (!fetched.ok()) return;
  if (!net::PrepareVpcNetwork(options_.network, fetched->second, fetched->first).ok()) return;
  std::lock_guard lock(mu_);
  Vpc& v = vpcs_[KeyOf(scope)];
  v.scope = scope;
  v.network = fetched->second;
  // Counted from now when no task comes (its launch failed first): removed after the linger.
  if (v.tasks.empty() && !v.empty_since) v.empty_since = std::chrono::steady_clock::now();
}

StatusOr<VpcNetworks::Attachment> VpcNetworks::Attach(const protocol::LaunchSpec& spec, std::string_view task_id,
                                                      uint32_t ip, int prefix_length, uint32_t gateway) {
  ASSIGN_OR_RETURN(auto fetched, Fetch(spec.scope));
  auto& [policy, vpc] = fetched;
  if (!Lists(policy.policy, Ipv4(ip)))
    fmt::print(stderr, "paddock: agent: task {}: the policy of {} does not list its address {}: its traffic is dropped\n",
               task_id, vpc.ref.vpc_id, Ipv4(ip));
  ASSIGN_OR_RETURN(net::TaskNetwork tn,
                   net::CreateTaskNetwork(options_.network, vpc, policy, task_id, ip, prefix_length, gateway));
  if (!tn.host_route)
    fmt::print(stderr,
               "paddock: agent: task {}: another VPC's task on this host has the address {}: the host reaches this "
               "task only through the edge, not by its address\n",
               task_id, Ipv4(ip));
  Attachment a = Serve(spec.scope, vpc, tn, task_id);
  std::lock_guard lock(mu_);
  Vpc& v = vpcs_[KeyOf(spec.scope)];
  v.scope = spec.scope;
  v.network = vpc;
  v.tasks.insert(std::string(task_id));
  v.empty_since.reset();
  return a;
}

StatusOr<VpcNetworks::Attachment> VpcNetworks::Readopt(const protocol::LaunchSpec& spec, std::string_view task_id,
                                                       uint32_t ip) {
  {
    std::lock_guard lock(mu_);
    Vpc& v = vpcs_[KeyOf(spec.scope)];
    v.scope = spec.scope;
    v.tasks.insert(std::string(task_id));
    v.empty_since.reset();
  }
  ASSIGN_OR_RETURN(auto fetched, Fetch(spec.scope));
  auto& [policy, vpc] = fetched;
  if (StatusOr<net::Applied> a = net::ApplyVpcPolicy(options_.network, vpc, policy); !a.ok())
    Log(fmt::format("task {}: applying the policy of {}", task_id, vpc.ref.vpc_id), a.status());
  ASSIGN_OR_RETURN(net::TaskNetwork tn, net::TaskNetworkFor(options_.network, task_id, ip, &vpc));
  Attachment a = Serve(spec.scope, vpc, tn, task_id);
  std::lock_guard lock(mu_);
  vpcs_[KeyOf(spec.scope)].network = vpc;
  return a;
}

Status VpcNetworks::Detach(const Scope& scope, std::string_view task_id, const std::optional<net::TaskNetwork>& network) {
  std::optional<net::VpcNetwork> vpc;
  {
    std::lock_guard lock(mu_);
    auto it = vpcs_.find(KeyOf(scope));
    if (it != vpcs_.end()) {
      Vpc& v = it->second;
      vpc = v.network;
      v.tasks.erase(std::string(task_id));
      if (v.tasks.empty()) v.empty_since = std::chrono::steady_clock::now();
    }
  }
  net::TaskNetwork tn;
  if (network) {
    tn = *network;
  } else {
    // Never attached by this agent, or attached half-way: by its names; DeleteTaskNetwork finds
    // its veth in whichever VPC namespace has it.
    ASSIGN_OR_RETURN(tn, net::TaskNetworkFor(options_.network, task_id, 0, vpc ? &*vpc : nullptr));
  }
  RETURN_IF_ERROR(net::DeleteTaskNetwork(options_.network, tn));
  if (!vpc) TrackUnattached(scope);
  return OkStatus();
}

void VpcNetworks::TrackUnattached(const Scope& scope) {
  auto fetched = Fetch(scope);
  if (!fetched.ok()) return;  // as before: the next agent's first sweep removes an empty namespace
  std::lock_guard lock(mu_);
  Vpc& v = vpcs_[KeyOf(scope)];
  if (v.network) return;
  v.scope = scope;
  v.network = fetched->second;
  if (v.tasks.empty() && !v.empty_since) v.empty_since = std::chrono::steady_clock::now();
}

void VpcNetworks::Refresh() {
  struct Work {
    std::string key;
    Scope scope;
    std::optional<net::VpcNetwork> network;
    bool busy = false;
  };
  std::vector<Work> work;
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, v] : vpcs_) {
      if (!v.tasks.empty()) {
        work.push_back({key, v.scope, v.network, true});
      } else if (v.empty_since && now - *v.empty_since >= options_.linger) {
        work.push_back({key, v.scope, v.network, false});
      }
    }
  }
  for (Work& w : work) {
    Status s = OkStatus();
    if (w.busy) {
      StatusOr<std::pair<net::FetchedPolicy, net::VpcNetwork>> fetched = Fetch(w.scope);
      if (fetched.ok()) {
        w.network = fetched->second;
        s = net::ApplyVpcPolicy(options_.network, fetched->second, fetched->first).status();
      } else {
        s = fetched.status();
      }
    } else {
      // The entry goes (unless a task came meanwhile): first its metadata listener, then the
      // namespace when no agent has a task in it any more (else another agent still does).
      uint64_t served = 0;
      uint64_t dns = 0;
      {
        std::lock_guard lock(mu_);
        auto it = vpcs_.find(w.key);
        if (it == vpcs_.end() || !it->second.tasks.empty()) continue;
        served = std::exchange(it->second.served_ns, 0);
        dns = std::exchange(it->second.dns_ns, 0);
      }
      if (w.network) {
        Unserve(*w.network, served, dns);
        s = net::RemoveVpcNetworkIfUnused(options_.network, w.network->netns_name).status();
      }
    }
    std::lock_guard lock(mu_);
    auto it = vpcs_.find(w.key);
    if (it == vpcs_.end()) continue;
    Vpc& v = it->second;
    if (w.busy && w.network && !v.network) v.network = w.network;
    if (!w.busy && s.ok() && v.tasks.empty() && v.served_ns == 0 && v.dns_ns == 0) {
      vpcs_.erase(it);
      continue;
    }
    std::string said = s.ok() ? std::string() : s.ToString();
    if (!said.empty() && said != v.last_error)
      fmt::print(stderr, "paddock: agent: the network policy of {}: {}\n", w.key, said);
    v.last_error = std::move(said);
  }
}

void VpcNetworks::RemoveUnused() {
  std::vector<std::tuple<net::VpcNetwork, uint64_t, uint64_t>> idle;
  {
    std::lock_guard lock(mu_);
    for (auto& [key, v] : vpcs_)
      if (v.tasks.empty() && v.network)
        idle.emplace_back(*v.network, std::exchange(v.served_ns, 0), std::exchange(v.dns_ns, 0));
  }
  for (const auto& [vpc, served, dns] : idle) {
    Unserve(vpc, served, dns);
    if (auto gone = net::RemoveVpcNetworkIfUnused(options_.network, vpc.netns_name); !gone.ok())
      Log(fmt::format("removing the VPC namespace {}", vpc.netns_name), gone.status());
  }
}

std::set<std::string> VpcNetworks::Namespaces() {
  std::set<std::string> out;
  std::lock_guard lock(mu_);
  for (const auto& [key, v] : vpcs_)
    if (!v.tasks.empty() && v.network) out.insert(v.network->netns_name);
  return out;
}

}  // namespace paddock::agent
