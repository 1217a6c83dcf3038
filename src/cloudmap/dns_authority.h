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
// Answers come from memory. The authority keeps, per VPC, the names of its private namespaces and
// their services (Registry::DnsZones), and per service what Registry::ResolveDns answered, each
// tagged with the Registry's change generation read before its store read (Registry::Generation);
// one whose tag is not the current generation is read again at its next use. So a name under none
// of the VPC's namespaces, or naming no service of one, is answered without a store read, and a
// service's answer is read once per change of Cloud Map. What is kept is bounded: past
// kMaxCached services (or VPCs) it is emptied, and a name that is no service is never kept. A
// store failure answers SERVFAIL (and is not kept): a private name is never sent upstream.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cloudmap/registry.h"
#include "dns/responder.h"

namespace paddock::cloudmap {

// The (account and region, VPC) whose DNS listener `listener` is; nullopt for an unknown one.
struct VpcRef {
  Scope scope;
  std::string vpc;
};
using VpcOfListener = std::function<std::optional<VpcRef>(std::string_view listener)>;

// Thread-safe: Lookup is called on every VPC server's I/O thread.
class DnsAuthority final : public dns::Authority {
 public:
  static constexpr size_t kMaxAnswers = 8;  // Route 53's multivalue answers
  // The most services' answers, and VPCs' namespace lists, kept (each); past it, that map is
  // emptied. A hostile task asking random names adds nothing (see above).
  static constexpr size_t kMaxCached = 4096;

  // `registry` outlives this.
  DnsAuthority(Registry& registry, VpcOfListener vpc_of);

  dns::Answer Lookup(const dns::QuerySource& source, std::string_view name, uint16_t type) override;

  // For tests and benchmarks: the store reads made so far (DnsZones and ResolveDns calls), and the
  // services' answers and VPCs' namespace lists kept now.
  uint64_t store_reads() const { return store_reads_.load(); }
  size_t cached() const;

 private:
  // Hashes a std::string key looked up by std::string_view, without making a string of it.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  template <typename V>
  using NameMap = std::unordered_map<std::string, V, NameHash, std::equal_to<>>;

  // A listener's VPC and its private namespaces (lowercase, without a final dot) with their
  // services' names (lowercase).
  struct Zones {
    uint64_t generation = 0;
    VpcRef vpc;
    NameMap<std::vector<std::string>> services_by_namespace;
  };
  // One answerable instance, its records made once when its service is read (not per query).
  struct Target {
    std::string id;
    std::optional<dns::Record> a, aaaa, cname;  // owner name empty: the question's
    std::optional<uint16_t> port;               // AWS_INSTANCE_PORT, when it is one (SRV)
  };
  // What ResolveDns answered for one (VPC, namespace, service).
  struct Resolved {
    enum class Kind { kAnswer, kNoNamespace, kNoService };
    uint64_t generation = 0;
    Kind kind = Kind::kAnswer;
    Service service;              // its DnsConfig: the record types, TTLs and routing
    std::vector<Target> targets;  // by instance id
  };
  template <typename T>
  using Cache = NameMap<std::shared_ptr<const T>>;

  // `cache[key]` when its generation is current; else `load()`'s, kept under the generation read
  // before it ran. A failed load is returned and not kept.
  template <typename T, typename Load>
  StatusOr<std::shared_ptr<const T>> Cached(Cache<T>& cache, std::string_view key, const Load& load);

  Registry& registry_;
  const VpcOfListener vpc_of_;
  std::atomic<uint64_t> store_reads_{0};
  mutable std::mutex mu_;
  Cache<Zones> zones_;        // GUARDED_BY(mu_): by listener (vpc_of_ is asked only to load one)
  Cache<Resolved> services_;  // GUARDED_BY(mu_): by "<listener>\0<namespace>\0<service>"
  std::minstd_rand rng_;      // GUARDED_BY(mu_): the multivalue shuffle and WEIGHTED's pick
};

}  // namespace paddock::cloudmap
