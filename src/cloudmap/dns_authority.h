// cloudmap/dns_authority: what a VPC's DNS server (dns/server.h) answers from Cloud Map — the
// dns::Authority over Registry::ResolveDns, for the private DNS namespaces of the querying VPC
// only (Route 53's private hosted zones, as Cloud Map makes them).
//
//   cloudmap::DnsAuthority names(registry, [&](std::string_view listener) { return VpcOf(listener); });
//   dns::Server server(names, {...});
//
// A name is looked up as "<service>.<namespace>" (A, AAAA, SRV, CNAME per the service's DnsConfig,
// its TTL) or "<instance id>.<service>.<namespace>" (an SRV target: that instance's A/AAAA), trying
// the longest namespace first. The answers:
//   - records of the instances Registry::ResolveDns answers (all, or the healthy ones when the
//     service has a custom health check); MULTIVALUE: at most 8, picked at random; WEIGHTED: one;
//     an SRV answer's additional section holds the addresses of the targets it names, no others;
//   - NODATA for a service without that record type or without instances, and for the namespace's
//     own name;
//   - NXDOMAIN for any other name under one of the VPC's private namespaces;
//   - forwarded: every name under none of them, and every query from a listener `vpc_of` does not
//     know (so one account's namespaces never answer another account's VPC).
//
// Each query reads the store (one read transaction per candidate namespace): not a cached view.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "cloudmap/registry.h"
#include "dns/responder.h"

namespace paddock::cloudmap {

// The (account and region, VPC) whose DNS listener `listener` is; nullopt for an unknown one.
struct VpcRef {
  Scope scope;
  std::string vpc;
};
using VpcOfListener = std::function<std::optional<VpcRef>(std::string_view listener)>;

class DnsAuthority final : public dns::Authority {
 public:
  static constexpr size_t kMaxAnswers = 8;  // Route 53's multivalue answers

  // `registry` outlives this.
  DnsAuthority(Registry& registry, VpcOfListener vpc_of);

  dns::Answer Lookup(const dns::QuerySource& source, std::string_view name, uint16_t type) override;

 private:
  Registry& registry_;
  const VpcOfListener vpc_of_;
  std::mutex rng_mu_;
  std::minstd_rand rng_;  // GUARDED_BY(rng_mu_): WEIGHTED's pick
};

}  // namespace paddock::cloudmap
