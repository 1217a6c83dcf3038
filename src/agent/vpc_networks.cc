#include "agent/vpc_networks.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "agent/net/net.h"

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
  const std::string node = control_.NetworkIdentity();
  if (node.empty()) return Unavailable("the control plane has not said its network identity yet");
  ASSIGN_OR_RETURN(net::VpcNetwork vpc, net::VpcNetworkFor(options_.network, {fetched.policy.vpc_id, node}));
  return std::make_pair(std::move(fetched), std::move(vpc));
}

std::string VpcNetworks::Serve(const net::VpcNetwork& vpc, std::string_view task_id) {
  if (options_.metadata == nullptr) return {};
  Status s = options_.metadata->ServeNetwork(vpc.netns_name, vpc.netns_path);
  if (!s.ok()) {
    Log(fmt::format("task {}: no task metadata endpoint in {}", task_id, vpc.netns_name), s);
    return {};
  }
  return vpc.netns_name;
}

StatusOr<VpcNetworks::Attachment> VpcNetworks::Attach(const ecs::task::LaunchSpec& spec, std::string_view task_id,
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
  Attachment a{tn, Serve(vpc, task_id)};
  std::lock_guard lock(mu_);
  Vpc& v = vpcs_[KeyOf(spec.scope)];
  v.scope = spec.scope;
  v.network = vpc;
  v.tasks.insert(std::string(task_id));
  if (!a.metadata_network.empty()) v.served.insert(std::string(task_id));
  v.empty_since.reset();
  return a;
}

StatusOr<VpcNetworks::Attachment> VpcNetworks::Readopt(const ecs::task::LaunchSpec& spec, std::string_view task_id,
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
  Attachment a{tn, Serve(vpc, task_id)};
  std::lock_guard lock(mu_);
  Vpc& v = vpcs_[KeyOf(spec.scope)];
  v.network = vpc;
  if (!a.metadata_network.empty()) v.served.insert(std::string(task_id));
  return a;
}

Status VpcNetworks::Detach(const Scope& scope, std::string_view task_id, const std::optional<net::TaskNetwork>& network) {
  std::optional<net::VpcNetwork> vpc;
  bool served = false;
  {
    std::lock_guard lock(mu_);
    auto it = vpcs_.find(KeyOf(scope));
    if (it != vpcs_.end()) {
      Vpc& v = it->second;
      vpc = v.network;
      served = v.served.erase(std::string(task_id)) > 0;
      v.tasks.erase(std::string(task_id));
      if (v.tasks.empty()) v.empty_since = std::chrono::steady_clock::now();
    }
  }
  if (served && vpc) options_.metadata->ReleaseNetwork(vpc->netns_name);
  net::TaskNetwork tn;
  if (network) {
    tn = *network;
  } else {
    // Never attached by this agent, or attached half-way: by its names; DeleteTaskNetwork finds
    // its veth in whichever VPC namespace has it.
    ASSIGN_OR_RETURN(tn, net::TaskNetworkFor(options_.network, task_id, 0, vpc ? &*vpc : nullptr));
  }
  return net::DeleteTaskNetwork(options_.network, tn);
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
    } else if (w.network) {
      // Gone when no agent has a task in it any more; else another agent of the host still does.
      s = net::RemoveVpcNetworkIfUnused(options_.network, w.network->netns_name).status();
    }
    std::lock_guard lock(mu_);
    auto it = vpcs_.find(w.key);
    if (it == vpcs_.end()) continue;
    Vpc& v = it->second;
    if (w.busy && w.network && !v.network) v.network = w.network;
    if (!w.busy && s.ok() && v.tasks.empty()) {
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
  std::vector<std::string> names;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, v] : vpcs_)
      if (v.tasks.empty() && v.network) names.push_back(v.network->netns_name);
  }
  for (const std::string& name : names) {
    if (auto gone = net::RemoveVpcNetworkIfUnused(options_.network, name); !gone.ok())
      Log(fmt::format("removing the VPC namespace {}", name), gone.status());
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
