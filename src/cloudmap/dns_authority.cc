#include "cloudmap/dns_authority.h"

#include <algorithm>
#include <cctype>
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

// A name as the cache keys it: lowercase, without a final dot.
std::string Folded(std::string_view name) {
  if (name.size() > 1 && name.ends_with('.')) name.remove_suffix(1);
  std::string out(name);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

DnsAuthority::DnsAuthority(Registry& registry, VpcOfListener vpc_of)
    : registry_(registry), vpc_of_(std::move(vpc_of)), rng_(std::random_device{}()) {}

size_t DnsAuthority::cached() const {
  std::lock_guard lock(mu_);
  return zones_.size() + services_.size();
}

template <typename T, typename Load>
StatusOr<std::shared_ptr<const T>> DnsAuthority::Cached(Cache<T>& cache, const std::string& key, const Load& load) {
  {
    std::lock_guard lock(mu_);
    auto it = cache.find(key);
    if (it != cache.end() && it->second->generation == registry_.Generation()) return it->second;
  }
  // Read before the store is: a change committed after this read bumps past it, so what the
  // load saw of an older snapshot is reloaded at the next use.
  const uint64_t generation = registry_.Generation();
  store_reads_.fetch_add(1, std::memory_order_relaxed);
  ASSIGN_OR_RETURN(T loaded, load());
  loaded.generation = generation;
  auto value = std::make_shared<const T>(std::move(loaded));
  std::lock_guard lock(mu_);
  if (cache.size() >= kMaxCached && !cache.contains(key)) cache.clear();
  std::shared_ptr<const T>& slot = cache[key];
  if (!slot || slot->generation <= generation) slot = value;  // another thread's newer load stays
  return value;
}

dns::Answer DnsAuthority::Lookup(const dns::QuerySource& source, std::string_view name, uint16_t type) {
  const std::optional<VpcRef> vpc = vpc_of_ ? vpc_of_(source.listener) : std::nullopt;
  if (!vpc) return dns::Answer::Forward();
  const std::string vpc_key = vpc->scope.account.str() + '\0' + vpc->scope.region.str() + '\0' + vpc->vpc;
  StatusOr<std::shared_ptr<const Zones>> zones = Cached(zones_, vpc_key, [&]() -> StatusOr<Zones> {
    ASSIGN_OR_RETURN(std::vector<DnsZone> read, registry_.DnsZones(vpc->scope, vpc->vpc));
    Zones z;
    for (DnsZone& zone : read) {
      std::vector<std::string>& services = z.services_by_namespace[Folded(zone.name)];
      for (const std::string& service : zone.services) services.push_back(Folded(service));
    }
    return z;
  });
  if (!zones.ok()) return dns::Answer::ServFail();  // whether the name is ours is not known: not forwarded

  // The longest namespace first: "a.b.corp.internal" is under namespace b.corp.internal (service
  // a) before corp.internal (service b, instance a) and internal.
  std::vector<std::string_view> labels;  // of the name, up to its namespace
  std::optional<std::string_view> ns;
  const std::vector<std::string>* services = nullptr;
  for (size_t start = 0;;) {
    const std::string_view suffix = name.substr(start);
    if (auto it = (*zones)->services_by_namespace.find(std::string(suffix));
        it != (*zones)->services_by_namespace.end()) {
      ns = suffix;
      services = &it->second;
      break;
    }
    const size_t dot = name.find('.', start);
    if (dot == std::string_view::npos) break;
    labels.push_back(name.substr(start, dot - start));
    start = dot + 1;
  }
  if (!ns) return dns::Answer::Forward();
  // The namespace's own name: ours, with no record of its own here (Route 53 has its SOA and NS).
  if (labels.empty()) return dns::Answer::NoData();
  // Deeper than an instance's name, or no service of the namespace: ours, and no such name.
  const std::string_view service = labels.back();
  if (labels.size() > 2 || std::find(services->begin(), services->end(), service) == services->end())
    return dns::Answer::NxDomain();

  StatusOr<std::shared_ptr<const Resolved>> resolved =
      Cached(services_, vpc_key + '\0' + std::string(*ns) + '\0' + std::string(service), [&]() -> StatusOr<Resolved> {
        StatusOr<DnsAnswer> read = registry_.ResolveDns(vpc->scope, vpc->vpc, *ns, service);
        Resolved r;
        if (read.ok()) {
          r.answer = std::move(*read);
          // Kept: only what an answer is made of (an instance may carry 5,000 characters of
          // attributes, DNS reads four of them).
          for (Instance& i : r.answer.instances)
            std::erase_if(i.attributes, [](const auto& kv) {
              return kv.first != "AWS_INSTANCE_IPV4" && kv.first != "AWS_INSTANCE_IPV6" &&
                     kv.first != "AWS_INSTANCE_CNAME" && kv.first != "AWS_INSTANCE_PORT";
            });
        } else if (IsError(read.status(), Error::kNamespaceNotFound)) {
          r.kind = Resolved::Kind::kNoNamespace;  // deleted since the namespaces were read
        } else if (IsError(read.status(), Error::kServiceNotFound)) {
          r.kind = Resolved::Kind::kNoService;  // deleted since, or no DNS records (API only)
        } else {
          return read.status();
        }
        return r;
      });
  if (!resolved.ok()) return dns::Answer::ServFail();
  if ((*resolved)->kind == Resolved::Kind::kNoNamespace) return dns::Answer::Forward();
  if ((*resolved)->kind == Resolved::Kind::kNoService) return dns::Answer::NxDomain();
  const DnsAnswer& found = (*resolved)->answer;
  const std::optional<RecordType> wanted = RecordTypeOf(type);
  if (labels.size() == 2) {  // "<instance>.<service>.<namespace>": the SRV target's address
    for (const Instance& i : found.instances)
      if (DnsNamesEqual(i.id, labels[0])) {
        const std::optional<uint32_t> ttl = TtlOf(found.service, *RecordTypeOf(type == kAaaa ? kAaaa : kA));
        std::optional<dns::Record> r = (type == kA || type == kAaaa) ? AddressRecord(i, type, "") : std::nullopt;
        if (!r) return dns::Answer::NoData();
        return dns::Answer::Records(ttl.value_or(TtlOf(found.service, RecordType::kSrv).value_or(0)), {*r});
      }
    return dns::Answer::NxDomain();
  }
  const std::optional<uint32_t> ttl = wanted ? TtlOf(found.service, *wanted) : std::nullopt;
  if (!ttl || found.instances.empty()) return dns::Answer::NoData();
  // The instances answered: MULTIVALUE at most kMaxAnswers, WEIGHTED one, picked at random
  // before any record is made (an SRV answer's additional records are those of its targets only).
  std::vector<const Instance*> picked;
  picked.reserve(found.instances.size());
  for (const Instance& i : found.instances) picked.push_back(&i);
  {
    std::lock_guard lock(mu_);
    std::shuffle(picked.begin(), picked.end(), rng_);
  }
  const size_t most = found.service.dns->routing == RoutingPolicy::kWeighted ? 1 : kMaxAnswers;
  dns::Answer answer = dns::Answer::Records(*ttl, {});
  for (const Instance* i : picked) {
    if (answer.records.size() == most) break;
    if (type == kSrv) {
      const std::string port_text = Attribute(*i, "AWS_INSTANCE_PORT");
      uint16_t port = 0;
      auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
      if (ec != std::errc() || end != port_text.data() + port_text.size() || port_text.empty()) continue;
      const std::string target = i->id + "." + std::string(service) + "." + std::string(*ns);
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

}  // namespace paddock::cloudmap
