#include "cloudmap/api/cloudmap_service.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iterator>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "aws/errors.h"
#include "aws/model.h"
#include "cloudmap/api/models/servicediscovery_model.h"
#include "common/json_fields.h"
#include "vpc/default_vpc.h"

namespace paddock::cloudmap::api {
namespace {

namespace json = boost::json;
namespace jf = json_fields;

constexpr std::string_view kActions[] = {
    "CreateHttpNamespace", "CreatePrivateDnsNamespace", "CreatePublicDnsNamespace", "CreateService",
    "DeleteNamespace",     "DeleteService",             "DeregisterInstance",       "DiscoverInstances",
    "DiscoverInstancesRevision", "GetInstance",         "GetInstancesHealthStatus", "GetNamespace",
    "GetOperation",        "GetService",                "ListInstances",            "ListNamespaces",
    "ListOperations",      "ListServices",              "ListTagsForResource",      "RegisterInstance",
    "TagResource",         "UntagResource",             "UpdateHttpNamespace",      "UpdateInstanceCustomHealthStatus",
    "UpdatePrivateDnsNamespace", "UpdateService",
};

Status Invalid(std::string message) { return InvalidArgument(std::move(message), Error::kInvalidInput); }

std::vector<Tag> TagsOf(const json::object& input) {
  std::vector<Tag> out;
  for (const json::object* t : jf::Objects(input, "Tags")) out.push_back(Tag{jf::Str(*t, "Key"), jf::Str(*t, "Value")});
  return out;
}

std::map<std::string, std::string> MapOf(const json::object& input, std::string_view member) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : jf::Obj(input, member))
    if (v.is_string()) out[std::string(k)] = std::string(v.as_string());
  return out;
}

json::object AttributesJson(const std::map<std::string, std::string>& attrs) {
  json::object o;
  for (const auto& [k, v] : attrs) o[k] = v;
  return o;
}

std::vector<Filter> FiltersOf(const json::object& input) {
  std::vector<Filter> out;
  for (const json::object* f : jf::Objects(input, "Filters"))
    out.push_back(Filter{jf::Str(*f, "Name"), jf::Str(*f, "Condition"), jf::Strings(*f, "Values")});
  return out;
}

json::object NamespaceJson(const Scope& scope, const Namespace& n, bool summary) {
  json::object dns;
  if (n.type == NamespaceType::kDnsPrivate) {
    dns["HostedZoneId"] = n.hosted_zone_id;
    if (n.soa_ttl) dns["SOA"] = json::object{{"TTL", *n.soa_ttl}};
  }
  json::object o{{"Id", n.id},
                 {"Arn", n.arn},
                 {"ResourceOwner", scope.account.str()},
                 {"Name", n.name},
                 {"Type", Format(n.type)},
                 {"ServiceCount", n.service_count},
                 {"Properties", json::object{{"DnsProperties", std::move(dns)},
                                             {"HttpProperties", json::object{{"HttpName", n.name}}}}},
                 {"CreateDate", EpochSeconds(n.created)}};
  if (!n.description.empty()) o["Description"] = n.description;
  if (!summary && !n.creator_request_id.empty()) o["CreatorRequestId"] = n.creator_request_id;
  return o;
}

json::object DnsConfigJson(const DnsConfig& d) {
  json::array records;
  for (const DnsRecord& r : d.records) records.push_back(json::object{{"Type", Format(r.type)}, {"TTL", r.ttl}});
  return json::object{{"RoutingPolicy", Format(d.routing)}, {"DnsRecords", std::move(records)}};
}

json::object ServiceJson(const Scope& scope, const Service& s, bool summary) {
  json::object o{{"Id", s.id},
                 {"Arn", s.arn},
                 {"ResourceOwner", scope.account.str()},
                 {"Name", s.name},
                 {"Type", s.http_only ? "HTTP" : "DNS_HTTP"},
                 {"InstanceCount", s.instance_count},
                 {"CreateDate", EpochSeconds(s.created)},
                 {"CreatedByAccount", scope.account.str()}};
  if (!summary) o["NamespaceId"] = s.namespace_id;
  if (!s.description.empty()) o["Description"] = s.description;
  if (s.dns) {
    json::object dns = DnsConfigJson(*s.dns);
    if (!summary) dns["NamespaceId"] = s.namespace_id;
    o["DnsConfig"] = std::move(dns);
  }
  if (s.custom_health) o["HealthCheckCustomConfig"] = json::object{{"FailureThreshold", *s.custom_health}};
  if (!summary && !s.creator_request_id.empty()) o["CreatorRequestId"] = s.creator_request_id;
  return o;
}

json::object OperationJson(const Scope& scope, const Operation& op) {
  json::object targets;
  for (const auto& [k, v] : op.targets) targets[k] = v;
  json::object o{{"Id", op.id},
                 {"OwnerAccount", scope.account.str()},
                 {"Type", Format(op.type)},
                 {"Status", Format(op.status)},
                 {"CreateDate", EpochSeconds(op.created)},
                 {"UpdateDate", EpochSeconds(op.updated)},
                 {"Targets", std::move(targets)}};
  if (!op.error_code.empty()) o["ErrorCode"] = op.error_code;
  if (!op.error_message.empty()) o["ErrorMessage"] = op.error_message;
  return o;
}

std::optional<DnsConfig> DnsConfigOf(const json::object& input, std::string* namespace_id) {
  const json::value* d = input.if_contains("DnsConfig");
  if (!d || !d->is_object()) return std::nullopt;
  DnsConfig out;
  // The model's enums are checked by the front; an absent RoutingPolicy is MULTIVALUE.
  out.routing = ParseRoutingPolicy(jf::StrView(d->as_object(), "RoutingPolicy")).value_or(RoutingPolicy::kMultivalue);
  for (const json::object* r : jf::Objects(d->as_object(), "DnsRecords"))
    out.records.push_back(DnsRecord{ParseRecordType(jf::StrView(*r, "Type")).value_or(RecordType::kA),
                                    jf::Int(*r, "TTL").value_or(0)});
  if (namespace_id) *namespace_id = jf::Str(d->as_object(), "NamespaceId");
  return out;
}

// A NextToken's context: the action, the scope and everything that shapes the list.
std::string TokenContext(const aws::CallContext& ctx, const json::object& input) {
  json::object shape = input;
  shape.erase("NextToken");
  shape.erase("MaxResults");
  return fmt::format("servicediscovery|{}|{}|{}|{}", ctx.action, ctx.scope.account.str(), ctx.scope.region.str(),
                     json::serialize(shape));
}

// The ARN IAM decides on for an id or ARN the caller gave.
std::string ArnOf(const Scope& scope, std::string_view id_or_arn, bool service) {
  if (id_or_arn.starts_with("arn:")) return std::string(id_or_arn);
  return service ? Registry::ServiceArn(scope, id_or_arn) : Registry::NamespaceArn(scope, id_or_arn);
}

}  // namespace

const aws::ServiceModel& CloudMapService::Model() const {
  static const aws::ServiceModel* model = [] {
    auto parsed = aws::ServiceModel::Parse(ServiceDiscoveryModelJson());
    if (!parsed.ok()) std::abort();  // the embedded model is part of the binary
    return parsed->release();
  }();
  return *model;
}

bool CloudMapService::Implements(std::string_view action) const {
  return std::find(std::begin(kActions), std::end(kActions), action) != std::end(kActions);
}

std::optional<aws::ThrottleGroup> CloudMapService::ThrottleGroupFor(std::string_view action) const {
  // AWS's documented bucket (Cloud Map Developer Guide, "DiscoverInstances API request
  // throttling"): 2,000 tokens per account and Region, refilled at 1,000 a second. The revision
  // call is the same data path and gets a bucket of the same size. AWS documents no rate for the
  // control-plane calls; the 1,000-operation queue quota bounds them (docs/contracts/cloudmap.md).
  if (action == "DiscoverInstances") return aws::ThrottleGroup{"servicediscovery:discover", {2000, 1000}};
  if (action == "DiscoverInstancesRevision")
    return aws::ThrottleGroup{"servicediscovery:discover-revision", {2000, 1000}};
  return std::nullopt;
}

std::vector<aws::AuthRequest> CloudMapService::AuthorizationFor(const aws::CallContext& ctx,
                                                                const json::object& input) const {
  const std::string action = "servicediscovery:" + ctx.action;
  std::string resource = "*";
  const std::string_view a = ctx.action;
  if (a == "GetNamespace" || a == "DeleteNamespace" || a == "UpdateHttpNamespace" ||
      a == "UpdatePrivateDnsNamespace") {
    resource = ArnOf(ctx.scope, jf::StrView(input, "Id"), false);
  } else if (a == "CreateService") {
    std::string ns = jf::Str(input, "NamespaceId");
    if (ns.empty()) ns = jf::Str(jf::Obj(input, "DnsConfig"), "NamespaceId");
    if (!ns.empty()) resource = ArnOf(ctx.scope, ns, false);
  } else if (a == "GetService" || a == "DeleteService" || a == "UpdateService") {
    resource = ArnOf(ctx.scope, jf::StrView(input, "Id"), true);
  } else if (a == "RegisterInstance" || a == "DeregisterInstance" || a == "GetInstance" || a == "ListInstances" ||
             a == "GetInstancesHealthStatus" || a == "UpdateInstanceCustomHealthStatus") {
    resource = ArnOf(ctx.scope, jf::StrView(input, "ServiceId"), true);
  } else if (a == "TagResource" || a == "UntagResource" || a == "ListTagsForResource") {
    resource = jf::Str(input, "ResourceARN");
  }
  return {aws::AuthRequest{action, std::move(resource), {}}};
}

std::optional<aws::AwsError> CloudMapService::ErrorFor(const Status& status) const {
  if (std::optional<Error> e = status.detail().As<Error>()) {
    switch (*e) {
      case Error::kInvalidInput: return aws::AwsError{"InvalidInput", 400};
      case Error::kNamespaceNotFound: return aws::AwsError{"NamespaceNotFound", 400};
      case Error::kServiceNotFound: return aws::AwsError{"ServiceNotFound", 400};
      case Error::kInstanceNotFound: return aws::AwsError{"InstanceNotFound", 400};
      case Error::kOperationNotFound: return aws::AwsError{"OperationNotFound", 400};
      case Error::kNamespaceAlreadyExists: return aws::AwsError{"NamespaceAlreadyExists", 400};
      case Error::kServiceAlreadyExists: return aws::AwsError{"ServiceAlreadyExists", 400};
      case Error::kResourceInUse: return aws::AwsError{"ResourceInUse", 400};
      case Error::kResourceLimitExceeded: return aws::AwsError{"ResourceLimitExceeded", 400};
      case Error::kCustomHealthNotFound: return aws::AwsError{"CustomHealthNotFound", 400};
      case Error::kResourceNotFound: return aws::AwsError{"ResourceNotFoundException", 400};
      case Error::kTooManyTags: return aws::AwsError{"TooManyTagsException", 400};
      case Error::kDuplicateRequest: return aws::AwsError{"DuplicateRequest", 400};
      case Error::kRequestLimitExceeded: return aws::AwsError{"RequestLimitExceeded", 400};
    }
  }
  // The front's throttle: Cloud Map calls it RequestLimitExceeded (not ThrottlingException).
  if (IsError(status, aws::Error::kThrottling)) return aws::AwsError{"RequestLimitExceeded", 400};
  // The model's own checks (lengths, patterns, enums, required members) carry no detail: Cloud
  // Map names them InvalidInput.
  if (status.code() == StatusCode::kInvalidArgument && status.detail().empty())
    return aws::AwsError{"InvalidInput", 400};
  return std::nullopt;
}

StatusOr<std::string> CloudMapService::Call(const aws::CallContext& ctx, json::object& input) {
  const Scope& scope = ctx.scope;
  const std::string& action = ctx.action;
  auto page_after = [&]() -> StatusOr<std::optional<std::string>> {
    std::optional<std::string> token = jf::OptStr(input, "NextToken");
    if (!token) return std::optional<std::string>();
    auto position = tokens_.Decode(TokenContext(ctx, input), *token);
    if (!position.ok()) return Invalid("The NextToken is not valid.");
    return std::optional<std::string>(std::move(*position));
  };
  auto max_of = [&](int64_t dflt) { return static_cast<size_t>(jf::Int(input, "MaxResults").value_or(dflt)); };
  auto with_token = [&](const std::optional<std::string>& next, json::object out) {
    if (next) out["NextToken"] = tokens_.Encode(TokenContext(ctx, input), *next);
    return json::serialize(out);
  };
  auto operation = [](const std::string& id) { return json::serialize(json::object{{"OperationId", id}}); };

  // --- namespaces ---
  if (action == "CreateHttpNamespace" || action == "CreatePrivateDnsNamespace" || action == "CreatePublicDnsNamespace") {
    CreateNamespaceRequest r;
    r.name = jf::Str(input, "Name");
    r.type = action == "CreateHttpNamespace"        ? NamespaceType::kHttp
             : action == "CreatePrivateDnsNamespace" ? NamespaceType::kDnsPrivate
                                                     : NamespaceType::kDnsPublic;
    r.vpc = jf::Str(input, "Vpc");
    const json::object& soa = jf::Obj(jf::Obj(jf::Obj(input, "Properties"), "DnsProperties"), "SOA");
    r.soa_ttl = jf::Int(soa, "TTL");
    r.description = jf::Str(input, "Description");
    r.creator_request_id = jf::Str(input, "CreatorRequestId");
    r.tags = TagsOf(input);
    ASSIGN_OR_RETURN(std::string op, registry_.CreateNamespace(scope, r, vpc::DefaultVpcFor(scope).vpc_id));
    return operation(op);
  }
  if (action == "UpdateHttpNamespace" || action == "UpdatePrivateDnsNamespace") {
    UpdateNamespaceRequest r;
    r.id = jf::Str(input, "Id");
    r.expected_type = action == "UpdateHttpNamespace" ? NamespaceType::kHttp : NamespaceType::kDnsPrivate;
    const json::object& change = jf::Obj(input, "Namespace");
    r.description = jf::OptStr(change, "Description");
    const json::object& soa = jf::Obj(jf::Obj(jf::Obj(change, "Properties"), "DnsProperties"), "SOA");
    r.soa_ttl = jf::Int(soa, "TTL");
    ASSIGN_OR_RETURN(std::string op, registry_.UpdateNamespace(scope, r));
    return operation(op);
  }
  if (action == "DeleteNamespace") {
    ASSIGN_OR_RETURN(std::string op, registry_.DeleteNamespace(scope, jf::Str(input, "Id")));
    return operation(op);
  }
  if (action == "GetNamespace") {
    ASSIGN_OR_RETURN(Namespace n, registry_.GetNamespace(scope, jf::Str(input, "Id")));
    return json::serialize(json::object{{"Namespace", NamespaceJson(scope, n, false)}});
  }
  if (action == "ListNamespaces") {
    ASSIGN_OR_RETURN(auto after, page_after());
    ASSIGN_OR_RETURN(Page<Namespace> page, registry_.ListNamespaces(scope, FiltersOf(input), max_of(100), after));
    json::array items;
    for (const Namespace& n : page.items) items.push_back(NamespaceJson(scope, n, true));
    return with_token(page.next, json::object{{"Namespaces", std::move(items)}});
  }

  // --- services ---
  if (action == "CreateService") {
    CreateServiceRequest r;
    r.name = jf::Str(input, "Name");
    r.namespace_id = jf::Str(input, "NamespaceId");
    std::string dns_namespace;
    r.dns = DnsConfigOf(input, &dns_namespace);
    if (r.namespace_id.empty()) r.namespace_id = dns_namespace;  // DnsConfig.NamespaceId (deprecated)
    r.description = jf::Str(input, "Description");
    if (const json::value* h = input.if_contains("HealthCheckCustomConfig"); h && h->is_object())
      r.custom_health = static_cast<int>(jf::Int(h->as_object(), "FailureThreshold").value_or(1));
    r.route53_health_check = input.contains("HealthCheckConfig");
    r.http_only = jf::StrView(input, "Type") == "HTTP";
    r.creator_request_id = jf::Str(input, "CreatorRequestId");
    r.tags = TagsOf(input);
    ASSIGN_OR_RETURN(Service s, registry_.CreateService(scope, r));
    return json::serialize(json::object{{"Service", ServiceJson(scope, s, false)}});
  }
  if (action == "GetService") {
    ASSIGN_OR_RETURN(Service s, registry_.GetService(scope, jf::Str(input, "Id")));
    return json::serialize(json::object{{"Service", ServiceJson(scope, s, false)}});
  }
  if (action == "ListServices") {
    ASSIGN_OR_RETURN(auto after, page_after());
    ASSIGN_OR_RETURN(Page<Service> page, registry_.ListServices(scope, FiltersOf(input), max_of(100), after));
    json::array items;
    for (const Service& s : page.items) items.push_back(ServiceJson(scope, s, true));
    return with_token(page.next, json::object{{"Services", std::move(items)}});
  }
  if (action == "UpdateService") {
    UpdateServiceRequest r;
    r.id = jf::Str(input, "Id");
    const json::object& change = jf::Obj(input, "Service");
    r.description = jf::OptStr(change, "Description");
    if (auto d = DnsConfigOf(change, nullptr)) r.records = d->records;
    r.route53_health_check = change.contains("HealthCheckConfig");
    ASSIGN_OR_RETURN(std::string op, registry_.UpdateService(scope, r));
    return operation(op);
  }
  if (action == "DeleteService") {
    RETURN_IF_ERROR(registry_.DeleteService(scope, jf::Str(input, "Id")));
    return std::string("{}");
  }

  // --- instances ---
  if (action == "RegisterInstance") {
    RegisterRequest r;
    r.service_id = jf::Str(input, "ServiceId");
    r.instance_id = jf::Str(input, "InstanceId");
    r.attributes = MapOf(input, "Attributes");
    r.creator_request_id = jf::Str(input, "CreatorRequestId");
    ASSIGN_OR_RETURN(std::string op, registry_.RegisterInstance(scope, r));
    return operation(op);
  }
  if (action == "DeregisterInstance") {
    ASSIGN_OR_RETURN(std::string op, registry_.DeregisterInstance(scope, jf::Str(input, "ServiceId"),
                                                                  jf::Str(input, "InstanceId")));
    return operation(op);
  }
  if (action == "GetInstance") {
    ASSIGN_OR_RETURN(Instance i, registry_.GetInstance(scope, jf::Str(input, "ServiceId"), jf::Str(input, "InstanceId")));
    json::object o{{"Id", i.id}, {"Attributes", AttributesJson(i.attributes)}, {"CreatedByAccount", scope.account.str()}};
    if (!i.creator_request_id.empty()) o["CreatorRequestId"] = i.creator_request_id;
    return json::serialize(json::object{{"ResourceOwner", scope.account.str()}, {"Instance", std::move(o)}});
  }
  if (action == "ListInstances") {
    ASSIGN_OR_RETURN(auto after, page_after());
    ASSIGN_OR_RETURN(Page<Instance> page,
                     registry_.ListInstances(scope, jf::Str(input, "ServiceId"), max_of(100), after));
    json::array items;
    for (const Instance& i : page.items)
      items.push_back(json::object{
          {"Id", i.id}, {"Attributes", AttributesJson(i.attributes)}, {"CreatedByAccount", scope.account.str()}});
    return with_token(page.next, json::object{{"ResourceOwner", scope.account.str()}, {"Instances", std::move(items)}});
  }
  if (action == "GetInstancesHealthStatus") {
    ASSIGN_OR_RETURN(auto after, page_after());
    ASSIGN_OR_RETURN(Page<Instance> page, registry_.HealthOf(scope, jf::Str(input, "ServiceId"),
                                                             jf::Strings(input, "Instances"), max_of(100), after));
    json::object status;
    for (const Instance& i : page.items) status[i.id] = Format(i.health);
    return with_token(page.next, json::object{{"Status", std::move(status)}});
  }
  if (action == "UpdateInstanceCustomHealthStatus") {
    RETURN_IF_ERROR(registry_.SetCustomHealth(scope, jf::Str(input, "ServiceId"), jf::Str(input, "InstanceId"),
                                              jf::StrView(input, "Status") == "HEALTHY"));
    return std::string("{}");
  }
  if (action == "DiscoverInstances" || action == "DiscoverInstancesRevision") {
    // Nothing is shared across accounts here: another owner's namespace is one this caller lacks.
    if (auto owner = jf::OptStr(input, "OwnerAccount"); owner && *owner != scope.account.str())
      return NotFound(fmt::format("Namespace not found: {}", jf::Str(input, "NamespaceName")),
                      Error::kNamespaceNotFound);
    DiscoverRequest r;
    r.namespace_name = jf::Str(input, "NamespaceName");
    r.service_name = jf::Str(input, "ServiceName");
    r.query = MapOf(input, "QueryParameters");
    r.optional = MapOf(input, "OptionalParameters");
    r.health = ParseHealthFilter(jf::StrView(input, "HealthStatus")).value_or(HealthFilter::kAll);
    r.max_results = max_of(100);
    ASSIGN_OR_RETURN(Discovered d, registry_.Discover(scope, r));
    if (action == "DiscoverInstancesRevision")
      return json::serialize(json::object{{"InstancesRevision", d.revision}});
    json::array items;
    for (const Instance& i : d.instances)
      items.push_back(json::object{{"InstanceId", i.id},
                                   {"NamespaceName", d.namespace_name},
                                   {"ServiceName", d.service_name},
                                   {"HealthStatus", Format(i.health)},
                                   {"Attributes", AttributesJson(i.attributes)}});
    return json::serialize(json::object{{"Instances", std::move(items)}, {"InstancesRevision", d.revision}});
  }

  // --- operations ---
  if (action == "GetOperation") {
    ASSIGN_OR_RETURN(Operation op, registry_.GetOperation(scope, jf::Str(input, "OperationId")));
    return json::serialize(json::object{{"Operation", OperationJson(scope, op)}});
  }
  if (action == "ListOperations") {
    ASSIGN_OR_RETURN(auto after, page_after());
    ASSIGN_OR_RETURN(Page<Operation> page, registry_.ListOperations(scope, FiltersOf(input), max_of(100), after));
    json::array items;
    for (const Operation& op : page.items) items.push_back(json::object{{"Id", op.id}, {"Status", Format(op.status)}});
    return with_token(page.next, json::object{{"Operations", std::move(items)}});
  }

  // --- tags ---
  const std::string arn = jf::Str(input, "ResourceARN");
  if (action == "TagResource") {
    RETURN_IF_ERROR(registry_.TagResource(scope, arn, TagsOf(input)));
    return std::string("{}");
  }
  if (action == "UntagResource") {
    RETURN_IF_ERROR(registry_.UntagResource(scope, arn, jf::Strings(input, "TagKeys")));
    return std::string("{}");
  }
  ASSIGN_OR_RETURN(std::vector<Tag> tags, registry_.ListTags(scope, arn));
  json::array list;
  for (const Tag& t : tags) list.push_back(json::object{{"Key", t.key}, {"Value", t.value}});
  return json::serialize(json::object{{"Tags", std::move(list)}});
}

StatusOr<std::unique_ptr<CloudMapModule>> CloudMapModule::Open(store::Store& store, const std::string& token_key) {
  std::unique_ptr<CloudMapModule> m(new CloudMapModule());
  m->registry_ = std::make_unique<Registry>(store, SystemClock::Get());
  m->service_ = std::make_unique<CloudMapService>(*m->registry_, aws::TokenCodec(token_key));
  CloudMapModule* self = m.get();
  m->registry_->SetSubmitListener([self] {
    {
      std::lock_guard lock(self->mu_);
      self->queued_ = true;
    }
    self->cv_.notify_one();
  });
  m->worker_ = std::thread([self] { self->Work(); });
  return m;
}

CloudMapModule::~CloudMapModule() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (worker_.joinable()) worker_.join();
}

void CloudMapModule::Work() {
  bool retry = false;  // the last pass failed (the store): try again in a second, submit or not
  for (;;) {
    {
      std::unique_lock lock(mu_);
      auto woken = [&] { return queued_ || stop_; };
      if (retry) {
        cv_.wait_for(lock, std::chrono::seconds(1), woken);
      } else {
        cv_.wait(lock, woken);
      }
      if (stop_) return;
      queued_ = false;
    }
    retry = !registry_->RunPending([this] {
                         std::lock_guard lock(mu_);
                         return stop_;
                       }).ok();
  }
}

}  // namespace paddock::cloudmap::api
