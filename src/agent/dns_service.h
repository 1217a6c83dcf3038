// agent/dns_service: the node's DNS server for awsvpc tasks (issue 13 §3) — one dns::Server per
// VPC router namespace, started and stopped with the VPC's network as the task metadata endpoint's
// listener is (agent/vpc_networks), answering what the node's Authority claims and forwarding the
// rest to the upstream resolvers.
//
//   std::unique_ptr<DnsService> dns = StartDnsService(config_upstreams);   // null: not root
//   dns->SetAuthority(cloud_map_view);   // the one line a name source needs; default: forward all
//   RETURN_IF_ERROR(dns->ServeNetwork(vpc.netns_name, vpc.netns_path, ListenerName(scope, vpc_id)));
//   ... tasks' resolv.conf names 169.254.169.253 ...
//   dns->ReleaseNetwork(vpc.netns_name);     // once per ServeNetwork
//
// Where it listens. Inside the VPC router namespace (ServerOptions::netns_path), on UDP and TCP
// port 53 of 169.254.169.253 and 172.31.0.2 (the VPC's base + 2), both on the router's lo
// (agent/net; ServeNetwork adds them when a namespace made by an older agent lacks them). The
// router's input hook lets tasks reach exactly those two addresses on port 53 (agent/net
// CompileVpcPolicy), and its strict rp_filter means the source address is the task's own.
//
// Tenancy. The listener names its namespace's (account, region, VPC) — "<account>/<region>/<vpc id>"
// (ListenerName) — and the Authority receives it with every query (dns::QuerySource::listener):
// one VPC's listener never answers for another, since every account's default VPC has the same
// addresses. Forwarded queries are passed to the upstreams as they came, from sockets made in the
// agent's own (the host's) namespace, where the upstreams are reachable.
//
// Bounds: dns::Server's per-source limits (forwards in flight, TCP connections) hold per VPC; the
// router's FlowLimits count a task's DNS flows as any other.
//
// Thread safety: thread-safe. The Authority set is called on every server's I/O thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/ids.h"
#include "common/status.h"
#include "dns/responder.h"
#include "dns/server.h"

namespace paddock::agent {

struct DnsServiceOptions {
  // Where forwarded queries go ("10.0.0.2", "127.0.0.1:5353"); reached from the agent's namespace.
  std::vector<std::string> upstreams{};
  // 53 (what resolv.conf can name). Tests of the service alone may use 0 (an ephemeral port).
  uint16_t port = 53;
  // Empty: net::kDnsAddress and net::kVpcDnsAddress.
  std::vector<std::string> addresses{};
};

// "<account>/<region>/<vpc id>": the listener of a VPC's namespace (dns::QuerySource::listener).
std::string DnsListenerName(const Scope& scope, std::string_view vpc_id);

// DnsListenerName read back, for the Authority (which account's VPC a query came from); nullopt
// for anything DnsListenerName does not make (three non-empty parts, none holding a '/').
struct DnsListener {
  Scope scope;
  std::string vpc_id;
};
std::optional<DnsListener> ParseDnsListenerName(std::string_view listener);

class DnsService {
 public:
  explicit DnsService(DnsServiceOptions options);
  ~DnsService();
  DnsService(const DnsService&) = delete;
  DnsService& operator=(const DnsService&) = delete;

  // Who answers names (Cloud Map's private namespaces). Null (the default): every query is
  // forwarded. May be called at any time; servers running see the new one from their next query.
  void SetAuthority(std::shared_ptr<dns::Authority> authority);

  // Serves the namespace `network` (its path `netns_path`) with `listener`; counted, like
  // MetadataService::ServeNetwork: a second call for the same namespace only counts, one for a
  // namespace made again (another inode) replaces the listener. Errors: dns::Server::Start's
  // (Unavailable when port 53 of an address is taken, as by another agent process of the host).
  Status ServeNetwork(std::string_view network, const std::string& netns_path, std::string_view listener);
  // Once per ServeNetwork that succeeded; the last one stops the server.
  void ReleaseNetwork(std::string_view network);
  // Stops every server (the node is stopping).
  void Stop();

  // The port the server of `network` listens on (for tests; 0: not served).
  uint16_t PortOf(std::string_view network);
  const std::vector<std::string>& upstreams() const { return options_.upstreams; }

 private:
  class NodeAuthority;
  struct Served {
    std::unique_ptr<dns::Server> server;
    uint64_t netns_id = 0;
    int users = 0;
  };

  DnsServiceOptions options_;
  std::unique_ptr<NodeAuthority> authority_;
  std::mutex mu_;
  std::map<std::string, Served, std::less<>> networks_;  // GUARDED_BY(mu_)
};

// The node's DNS service: as root only (nullptr otherwise, and tasks keep their resolv.conf as
// before). `upstreams`: the configured ones ([dns] upstreams); empty: the host's /etc/resolv.conf
// nameservers that are not loopback (dns::UpstreamsFromResolvConf). None at all: every forward is
// SERVFAIL (logged once here).
std::unique_ptr<DnsService> StartDnsService(std::vector<std::string> upstreams,
                                           const std::string& host_resolv_conf = "/etc/resolv.conf");

}  // namespace paddock::agent
