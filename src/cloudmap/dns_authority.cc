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

std::string_view Attribute(const Instance& i, const char* key) {
  auto it = i.attributes.find(key);
  return it == i.attributes.end() ? std::string_view() : std::string_view(it->second);
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
StatusOr<std::shared_ptr<const T>> DnsAuthority::Cached(Cache<T>& cache, std::string_view key, const Load& load) {
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
  auto it = cache.find(key);
  if (it == cache.end()) {
    if (cache.size() >= kMaxCached) cache.clear();
    cache.emplace(std::string(key), value);
  } else if (it->second->generation <= generation) {  // another thread's newer load stays
    it->second = value;
  }
  return value;
}

dns::Answer DnsAuthority::Lookup(const dns::QuerySource& source, std::string_view name, uint16_t type) {
  // The listener's zones: vpc_of_ (which also refuses a listener it does not know) is asked only
  // when they are loaded.
  bool known = true;
  StatusOr<std::shared_ptr<const Zones>> zones = Cached(zones_, source.listener, [&]() -> StatusOr<Zones> {
    Zones z;
    std::optional<VpcRef> vpc = vpc_of_ ? vpc_of_(source.listener) : std::nullopt;
    if (!vpc) {
      known = false;
      return NotFound("no VPC listens there");  // not kept
    }
    ASSIGN_OR_RETURN(std::vector<DnsZone> read, registry_.DnsZones(vpc->scope, vpc->vpc));
    z.vpc = std::move(*vpc);
    for (DnsZone& zone : read) {
      std::vector<std::string>& services = z.services_by_namespace[Folded(zone.name)];
      for (const std::string& service : zone.services) services.push_back(Folded(service));
    }
    return z;
  });
  if (!known) return dns::Answer::Forward();
  if (!zones.ok()) return dns::Answer::ServFail();  // whether the name is ours is not known: not forwarded
  const VpcRef& vpc = (*zones)->vpc;

  // The longest namespace first: "a.b.corp.internal" is under namespace b.corp.internal (service
  // a) before corp.internal (service b, instance a) and internal.
  std::vector<std::string_view> labels;  // of the name, up to its namespace
  std::optional<std::string_view> ns;
  const std::vector<std::string>* services = nullptr;
  for (size_t start = 0;;) {
    const std::string_view suffix = name.substr(start);
    if (auto it = (*zones)->services_by_namespace.find(suffix); it != (*zones)->services_by_namespace.end()) {
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

  std::string key;
  key.reserve(source.listener.size() + ns->size() + service.size() + 2);
  key.append(source.listener).append(1, '\0').append(*ns).append(1, '\0').append(service);
  StatusOr<std::shared_ptr<const Resolved>> resolved = Cached(services_, key, [&]() -> StatusOr<Resolved> {
    StatusOr<DnsAnswer> read = registry_.ResolveDns(vpc.scope, vpc.vpc, *ns, service);
    Resolved r;
    if (read.ok()) {
      r.service = std::move(read->service);
      // Kept: each instance's records, made here once (not its up to 5,000 characters of
      // attributes, nor a parse per query).
      for (const Instance& i : read->instances) {
        Target t{i.id, std::nullopt, std::nullopt, std::nullopt, std::nullopt};
        if (std::string_view v4 = Attribute(i, "AWS_INSTANCE_IPV4"); !v4.empty()) t.a = dns::ARecord(v4);
        if (std::string_view v6 = Attribute(i, "AWS_INSTANCE_IPV6"); !v6.empty()) t.aaaa = dns::AaaaRecord(v6);
        if (std::string_view cname = Attribute(i, "AWS_INSTANCE_CNAME"); !cname.empty())
          t.cname = dns::Record{std::string(), kCname, dns::kClassIn, 0, dns::NameData{std::string(cname)}};
        const std::string_view port_text = Attribute(i, "AWS_INSTANCE_PORT");
        uint16_t port = 0;
        auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
        if (!port_text.empty() && ec == std::errc() && end == port_text.data() + port_text.size()) t.port = port;
        r.targets.push_back(std::move(t));
      }
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
  const Resolved& found = **resolved;
  // The record of type `type` (A, AAAA or CNAME) a target has, if any.
  auto record_of = [type](const Target& t) -> const std::optional<dns::Record>& {
    return type == kA ? t.a : type == kAaaa ? t.aaaa : t.cname;
  };
  if (labels.size() == 2) {  // "<instance>.<service>.<namespace>": the SRV target's address
    for (const Target& t : found.targets)
      if (DnsNamesEqual(t.id, labels[0])) {
        if ((type != kA && type != kAaaa) || !record_of(t)) return dns::Answer::NoData();
        const std::optional<uint32_t> ttl = TtlOf(found.service, *RecordTypeOf(type));
        return dns::Answer::Records(ttl.value_or(TtlOf(found.service, RecordType::kSrv).value_or(0)),
                                    {*record_of(t)});
      }
    return dns::Answer::NxDomain();
  }
  const std::optional<RecordType> wanted = RecordTypeOf(type);
  const std::optional<uint32_t> ttl = wanted ? TtlOf(found.service, *wanted) : std::nullopt;
  if (!ttl || found.targets.empty()) return dns::Answer::NoData();
  // The instances answered: MULTIVALUE at most kMaxAnswers, WEIGHTED one, picked at random
  // before any record is made (an SRV answer's additional records are those of its targets only).
  std::vector<const Target*> picked;
  picked.reserve(found.targets.size());
  for (const Target& t : found.targets) picked.push_back(&t);
  {
    std::lock_guard lock(mu_);
    std::shuffle(picked.begin(), picked.end(), rng_);
  }
  const size_t most = found.service.dns->routing == RoutingPolicy::kWeighted ? 1 : kMaxAnswers;
  dns::Answer answer = dns::Answer::Records(*ttl, {});
  for (const Target* t : picked) {
    if (answer.records.size() == most) break;
    if (type == kSrv) {
      if (!t->port) continue;
      std::string target;
      target.reserve(t->id.size() + service.size() + ns->size() + 2);
      target.append(t->id).append(1, '.').append(service).append(1, '.').append(*ns);
      for (const std::optional<dns::Record>* address : {&t->a, &t->aaaa})
        if (*address) {
          answer.additional.push_back(**address);
          answer.additional.back().name = target;
        }
      answer.records.push_back(dns::SrvRecord(1, 1, *t->port, std::move(target)));
    } else if (const std::optional<dns::Record>& r = record_of(*t)) {
      answer.records.push_back(*r);
    }
  }
  if (answer.records.empty()) return dns::Answer::NoData();
  return answer;
}

}  // namespace paddock::cloudmap
