#include "cloudmap/dns_authority.h"

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

namespace paddock::cloudmap {
namespace {

constexpr uint16_t kA = static_cast<uint16_t>(dns::RrType::kA);
constexpr uint16_t kAaaa = static_cast<uint16_t>(dns::RrType::kAaaa);
constexpr uint16_t kSrv = static_cast<uint16_t>(dns::RrType::kSrv);
constexpr uint16_t kCname = static_cast<uint16_t>(dns::RrType::kCname);

std::optional<RecordType> RecordTypeOf(uint16_t type) {
  switch (type) {
    case kA: return RecordType::kA;
    case kAaaa: return RecordType::kAaaa;
    case kSrv: return RecordType::kSrv;
    case kCname: return RecordType::kCname;
    default: return std::nullopt;
  }
}

std::string Attribute(const Instance& i, const char* key) {
  auto it = i.attributes.find(key);
  return it == i.attributes.end() ? std::string() : it->second;
}

// The record of type `type` (A, AAAA or CNAME) of instance `i`, named `owner` (empty: the
// question's name); nullopt when the instance has no such address.
std::optional<dns::Record> AddressRecord(const Instance& i, uint16_t type, std::string owner) {
  std::optional<dns::Record> r;
  if (type == kA && !Attribute(i, "AWS_INSTANCE_IPV4").empty()) r = dns::ARecord(Attribute(i, "AWS_INSTANCE_IPV4"));
  if (type == kAaaa && !Attribute(i, "AWS_INSTANCE_IPV6").empty()) r = dns::AaaaRecord(Attribute(i, "AWS_INSTANCE_IPV6"));
  if (type == kCname && !Attribute(i, "AWS_INSTANCE_CNAME").empty())
    r = dns::Record{std::string(), kCname, dns::kClassIn, 0, dns::NameData{Attribute(i, "AWS_INSTANCE_CNAME")}};
  if (r) r->name = std::move(owner);
  return r;
}

// The service's TTL for `type`, when its DnsConfig has that record type.
std::optional<uint32_t> TtlOf(const Service& service, RecordType type) {
  if (!service.dns) return std::nullopt;
  for (const DnsRecord& r : service.dns->records)
    if (r.type == type) return static_cast<uint32_t>(r.ttl);
  return std::nullopt;
}

}  // namespace

DnsAuthority::DnsAuthority(Registry& registry, VpcOfListener vpc_of)
    : registry_(registry), vpc_of_(std::move(vpc_of)), rng_(std::random_device{}()) {}

dns::Answer DnsAuthority::Lookup(const dns::QuerySource& source, std::string_view name, uint16_t type) {
  const std::optional<VpcRef> vpc = vpc_of_ ? vpc_of_(source.listener) : std::nullopt;
  if (!vpc) return dns::Answer::Forward();
  std::vector<std::string_view> labels;
  for (size_t start = 0; start <= name.size();) {
    const size_t dot = name.find('.', start);
    labels.push_back(name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  // The namespace's own name: ours, with no record of its own here (Route 53 has its SOA and NS).
  if (StatusOr<DnsAnswer> apex = registry_.ResolveDns(vpc->scope, vpc->vpc, name, "");
      !apex.ok() && IsError(apex.status(), Error::kServiceNotFound))
    return dns::Answer::NoData();
  // The longest namespace first: "a.b.corp.internal" asks for namespace b.corp.internal (service a),
  // then corp.internal (service b, instance a), then internal.
  for (size_t k = 1; k < labels.size(); ++k) {
    const std::string_view ns = name.substr(static_cast<size_t>(labels[k].data() - name.data()));
    const std::string_view service = labels[k - 1];
    StatusOr<DnsAnswer> found = registry_.ResolveDns(vpc->scope, vpc->vpc, ns, service);
    if (!found.ok() && IsError(found.status(), Error::kNamespaceNotFound)) {
      continue;  // not a namespace of this VPC: a shorter suffix may be
    }
    // A namespace of this VPC: from here the name is ours, whatever else is wrong with it.
    if (!found.ok()) {
      if (IsError(found.status(), Error::kServiceNotFound)) return dns::Answer::NxDomain();
      return dns::Answer::Forward();  // the store failed: let the upstream say what it knows (SERVFAIL)
    }
    if (k > 2) return dns::Answer::NxDomain();  // deeper than an instance's name
    const std::optional<RecordType> wanted = RecordTypeOf(type);
    if (k == 2) {  // "<instance>.<service>.<namespace>": the SRV target's address
      for (const Instance& i : found->instances)
        if (DnsNamesEqual(i.id, labels[0])) {
          const std::optional<uint32_t> ttl = TtlOf(found->service, *RecordTypeOf(type == kAaaa ? kAaaa : kA));
          std::optional<dns::Record> r = (type == kA || type == kAaaa) ? AddressRecord(i, type, "") : std::nullopt;
          if (!r) return dns::Answer::NoData();
          return dns::Answer::Records(ttl.value_or(TtlOf(found->service, RecordType::kSrv).value_or(0)), {*r});
        }
      return dns::Answer::NxDomain();
    }
    const std::optional<uint32_t> ttl = wanted ? TtlOf(found->service, *wanted) : std::nullopt;
    if (!ttl || found->instances.empty()) return dns::Answer::NoData();
    // The instances answered: MULTIVALUE at most kMaxAnswers, WEIGHTED one, picked at random
    // before any record is made (an SRV answer's additional records are those of its targets only).
    std::vector<const Instance*> picked;
    for (const Instance& i : found->instances) picked.push_back(&i);
    {
      std::lock_guard lock(rng_mu_);
      std::shuffle(picked.begin(), picked.end(), rng_);
    }
    const size_t most = found->service.dns->routing == RoutingPolicy::kWeighted ? 1 : kMaxAnswers;
    dns::Answer answer = dns::Answer::Records(*ttl, {});
    for (const Instance* i : picked) {
      if (answer.records.size() == most) break;
      if (type == kSrv) {
        const std::string port_text = Attribute(*i, "AWS_INSTANCE_PORT");
        uint16_t port = 0;
        auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
        if (ec != std::errc() || end != port_text.data() + port_text.size() || port_text.empty()) continue;
        const std::string target = i->id + "." + std::string(service) + "." + std::string(ns);
        answer.records.push_back(dns::SrvRecord(1, 1, port, target));
        for (uint16_t t : {kA, kAaaa})
          if (std::optional<dns::Record> r = AddressRecord(*i, t, target)) answer.additional.push_back(std::move(*r));
      } else if (std::optional<dns::Record> r = AddressRecord(*i, type, "")) {
        answer.records.push_back(std::move(*r));
      }
    }
    if (answer.records.empty()) return dns::Answer::NoData();
    return answer;
  }
  return dns::Answer::Forward();
}

}  // namespace paddock::cloudmap
