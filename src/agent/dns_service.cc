#include "agent/dns_service.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "agent/net/net.h"
#include "common/netns.h"

namespace paddock::agent {

// Forwards to the Authority set last, or says "not mine" (forward) when none is.
class DnsService::NodeAuthority : public dns::Authority {
 public:
  void Set(std::shared_ptr<dns::Authority> a) {
    std::lock_guard lock(mu_);
    current_ = std::move(a);
  }
  dns::Answer Lookup(const dns::QuerySource& source, std::string_view name, uint16_t type) override {
    std::shared_ptr<dns::Authority> a;
    {
      std::lock_guard lock(mu_);
      a = current_;
    }
    if (!a) return dns::Answer::Forward();
    return a->Lookup(source, name, type);
  }

 private:
  std::mutex mu_;
  std::shared_ptr<dns::Authority> current_;  // GUARDED_BY(mu_)
};

std::string DnsListenerName(const Scope& scope, std::string_view vpc_id) {
  return fmt::format("{}/{}/{}", scope.account.str(), scope.region.str(), vpc_id);
}

std::optional<DnsListener> ParseDnsListenerName(std::string_view listener) {
  const size_t first = listener.find('/');
  const size_t second = first == std::string_view::npos ? first : listener.find('/', first + 1);
  if (second == std::string_view::npos || listener.find('/', second + 1) != std::string_view::npos) return std::nullopt;
  const std::string_view account = listener.substr(0, first);
  const std::string_view region = listener.substr(first + 1, second - first - 1);
  const std::string_view vpc = listener.substr(second + 1);
  if (account.empty() || region.empty() || vpc.empty()) return std::nullopt;
  return DnsListener{Scope{AccountId(std::string(account)), Region(std::string(region))}, std::string(vpc)};
}

DnsService::DnsService(DnsServiceOptions options)
    : options_(std::move(options)), authority_(std::make_unique<NodeAuthority>()) {}

DnsService::~DnsService() { Stop(); }

void DnsService::SetAuthority(std::shared_ptr<dns::Authority> authority) { authority_->Set(std::move(authority)); }

Status DnsService::ServeNetwork(std::string_view network, const std::string& netns_path, std::string_view listener) {
  if (network.empty()) return InvalidArgument("a served network needs a name");
  const uint64_t id = netns::NamespaceId(netns_path);
  if (id == 0) return NotFound(fmt::format("no network namespace {}", netns_path));
  std::unique_ptr<dns::Server> stale;
  std::lock_guard lock(mu_);
  auto it = networks_.find(network);
  if (it != networks_.end() && it->second.netns_id == id) {
    ++it->second.users;
    return OkStatus();
  }
  dns::ServerOptions so;
  so.addresses = options_.addresses;
  if (so.addresses.empty()) {
    so.addresses = {std::string(net::kDnsAddress), std::string(net::kVpcDnsAddress)};
    // A namespace made by an agent older than the DNS server lacks them.
    RETURN_IF_ERROR(netns::InNetworkNamespace(netns_path, [&]() -> Status {
      for (const std::string& a : so.addresses) RETURN_IF_ERROR(net::EnsureInterfaceAddress("lo", a + "/32"));
      return OkStatus();
    }));
  }
  so.port = options_.port;
  so.netns_path = netns_path;
  so.listener = std::string(listener);
  so.upstreams = options_.upstreams;
  Served s;
  s.server = std::make_unique<dns::Server>(std::move(so), *authority_);
  RETURN_IF_ERROR(s.server->Start());
  s.netns_id = id;
  s.users = 1;
  if (it != networks_.end()) {
    // The namespace was made again: the old server listens in one nobody reaches.
    s.users += it->second.users;
    stale = std::move(it->second.server);
    it->second = std::move(s);
  } else {
    networks_.emplace(std::string(network), std::move(s));
  }
  if (stale) stale->Stop();
  return OkStatus();
}

void DnsService::ReleaseNetwork(std::string_view network) {
  std::unique_ptr<dns::Server> done;
  {
    std::lock_guard lock(mu_);
    auto it = networks_.find(network);
    if (it == networks_.end() || --it->second.users > 0) return;
    done = std::move(it->second.server);
    networks_.erase(it);
  }
  done->Stop();
}

void DnsService::Stop() {
  std::map<std::string, Served, std::less<>> networks;
  {
    std::lock_guard lock(mu_);
    networks.swap(networks_);
  }
  for (auto& [name, s] : networks) s.server->Stop();
}

uint16_t DnsService::PortOf(std::string_view network) {
  std::lock_guard lock(mu_);
  auto it = networks_.find(network);
  return it == networks_.end() ? 0 : it->second.server->port();
}

std::unique_ptr<DnsService> StartDnsService(std::vector<std::string> upstreams, const std::string& host_resolv_conf) {
  if (geteuid() != 0) return nullptr;
  if (upstreams.empty()) {
    std::ifstream in(host_resolv_conf);
    std::stringstream text;
    text << in.rdbuf();
    upstreams = dns::UpstreamsFromResolvConf(text.str());
  }
  if (upstreams.empty())
    fmt::print(stderr,
               "paddock: warning: {} names no nameserver tasks can use and [dns] upstreams is empty: the DNS "
               "server of awsvpc tasks answers SERVFAIL for every name it does not know\n",
               host_resolv_conf);
  DnsServiceOptions options;
  options.upstreams = std::move(upstreams);
  return std::make_unique<DnsService>(std::move(options));
}

}  // namespace paddock::agent
