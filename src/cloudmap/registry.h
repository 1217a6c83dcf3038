// cloudmap/registry: Cloud Map's owner — namespaces, services, instances and the asynchronous
// operations that change them, per (account, region). Typed values in and out; the wire format is
// the adapter's (cloudmap/api/cloudmap_service.h).
//
//   cloudmap::Registry registry(store, SystemClock::Get());
//   ASSIGN_OR_RETURN(std::string op, registry.CreateNamespace(scope, {.name = "internal",
//       .type = cloudmap::NamespaceType::kDnsPrivate, .vpc = vpc_id}));
//   RETURN_IF_ERROR(registry.RunPending());           // the worker: SUBMITTED -> PENDING -> SUCCESS
//   ASSIGN_OR_RETURN(cloudmap::Operation o, registry.GetOperation(scope, op));
//
// Asynchronous calls (namespace create/update/delete, UpdateService, Register/DeregisterInstance)
// validate everything AWS answers synchronously, then commit the operation SUBMITTED with its work
// (and, for a create, the name reservation) in one transaction and return its id. RunPending —
// the module's worker thread, woken by the submit listener — moves each queued operation to
// PENDING in one transaction and applies it with SUCCESS (or FAIL, nothing applied) in the next.
// An operation survives a crash in either state: the next RunPending finishes it.
//
// Every record is keyed by (account, region): no call reads or changes another account's
// namespaces, services, instances or operations, whatever id or ARN it passes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cloudmap/errors.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "store/store.h"

namespace paddock::cloudmap {

enum class NamespaceType { kDnsPublic, kDnsPrivate, kHttp };
std::string_view Format(NamespaceType t);
std::optional<NamespaceType> ParseNamespaceType(std::string_view s);

enum class RoutingPolicy { kMultivalue, kWeighted };
std::string_view Format(RoutingPolicy p);
std::optional<RoutingPolicy> ParseRoutingPolicy(std::string_view s);

enum class RecordType { kSrv, kA, kAaaa, kCname };
std::string_view Format(RecordType t);
std::optional<RecordType> ParseRecordType(std::string_view s);

// An instance's health as readers see it: UNKNOWN for a service without a health check.
enum class HealthStatus { kHealthy, kUnhealthy, kUnknown };
std::string_view Format(HealthStatus h);

// DiscoverInstances' HealthStatus filter.
enum class HealthFilter { kHealthy, kUnhealthy, kAll, kHealthyOrElseAll };
std::optional<HealthFilter> ParseHealthFilter(std::string_view s);

enum class OperationStatus { kSubmitted, kPending, kSuccess, kFail };
std::string_view Format(OperationStatus s);
std::optional<OperationStatus> ParseOperationStatus(std::string_view s);

enum class OperationType {
  kCreateNamespace,
  kDeleteNamespace,
  kUpdateNamespace,
  kUpdateService,
  kRegisterInstance,
  kDeregisterInstance,
};
std::string_view Format(OperationType t);
std::optional<OperationType> ParseOperationType(std::string_view s);

struct Tag {
  std::string key{};
  std::string value{};
  bool operator==(const Tag&) const = default;
};

struct Namespace {
  std::string id{};  // "ns-" + 16 [a-z0-9]
  std::string arn{};
  std::string name{};
  NamespaceType type = NamespaceType::kHttp;
  std::string description{};
  std::string vpc{};                      // DNS_PRIVATE only
  std::optional<int64_t> soa_ttl{};       // DNS_PRIVATE only
  std::string hosted_zone_id{};           // DNS_PRIVATE only: a stable "Z" + 21 [A-Z0-9]
  int64_t service_count = 0;
  TimePoint created{};
  std::string creator_request_id{};
};

struct DnsRecord {
  RecordType type = RecordType::kA;
  int64_t ttl = 0;
  bool operator==(const DnsRecord&) const = default;
};

struct DnsConfig {
  RoutingPolicy routing = RoutingPolicy::kMultivalue;
  std::vector<DnsRecord> records{};
};

struct Service {
  std::string id{};  // "srv-" + 16 [a-z0-9]
  std::string arn{};
  std::string name{};
  std::string namespace_id{};
  std::string description{};
  std::optional<DnsConfig> dns{};            // absent for an HTTP-only service
  std::optional<int> custom_health{};        // HealthCheckCustomConfig present (its FailureThreshold, 1 if none)
  bool http_only = false;                  // Type HTTP (AWS: "HTTP"; else "DNS_HTTP")
  int64_t instance_count = 0;
  int64_t revision = 0;                    // InstancesRevision: +1 on every instance change
  TimePoint created{};
  std::string creator_request_id{};
};

struct Instance {
  std::string id{};
  std::string service_id{};
  std::map<std::string, std::string> attributes{};
  std::string creator_request_id{};
  HealthStatus health = HealthStatus::kUnknown;
};

struct Operation {
  std::string id{};
  OperationType type = OperationType::kCreateNamespace;
  OperationStatus status = OperationStatus::kSubmitted;
  std::string error_code{};
  std::string error_message{};
  TimePoint created{};
  TimePoint updated{};
  std::map<std::string, std::string> targets{};  // "NAMESPACE" | "SERVICE" | "INSTANCE" -> id
};

// One page of a list, and where the next starts (nullopt at the end). The position is the
// owner's; the adapter seals it in a NextToken.
template <typename T>
struct Page {
  std::vector<T> items{};
  std::optional<std::string> next{};
};

// A filter of ListNamespaces / ListServices / ListOperations as the request gave it.
struct Filter {
  std::string name{};       // "TYPE", "NAME", "HTTP_NAME", "NAMESPACE_ID", "SERVICE_ID", "STATUS", "UPDATE_DATE"
  std::string condition{};  // "EQ", "IN", "BEGINS_WITH", "BETWEEN"; empty = EQ
  std::vector<std::string> values{};
};

struct CreateNamespaceRequest {
  std::string name{};
  NamespaceType type = NamespaceType::kHttp;
  std::string vpc{};  // DNS_PRIVATE: required, the caller's VPC
  std::optional<int64_t> soa_ttl{};
  std::string description{};
  std::string creator_request_id{};
  std::vector<Tag> tags{};
};

struct UpdateNamespaceRequest {
  std::string id{};
  NamespaceType expected_type = NamespaceType::kHttp;  // which Update*Namespace was called
  std::optional<std::string> description{};
  std::optional<int64_t> soa_ttl{};
};

struct CreateServiceRequest {
  std::string name{};
  std::string namespace_id{};  // or DnsConfig.NamespaceId (deprecated)
  std::string description{};
  std::optional<DnsConfig> dns{};
  std::optional<int> custom_health{};  // HealthCheckCustomConfig (FailureThreshold, 1 if none)
  bool route53_health_check = false; // HealthCheckConfig given: refused (Route 53 checks are public-DNS only)
  bool http_only = false;            // Type HTTP
  std::string creator_request_id{};
  std::vector<Tag> tags{};
};

struct UpdateServiceRequest {
  std::string id{};
  std::optional<std::string> description{};
  std::optional<std::vector<DnsRecord>> records{};
  bool route53_health_check = false;
};

struct RegisterRequest {
  std::string service_id{};
  std::string instance_id{};
  std::map<std::string, std::string> attributes{};
  std::string creator_request_id{};
};

struct DiscoverRequest {
  std::string namespace_name{};
  std::string service_name{};
  std::map<std::string, std::string> query{};     // every one must match
  std::map<std::string, std::string> optional{};  // used only when some instance matches them all
  HealthFilter health = HealthFilter::kAll;
  size_t max_results = 100;
};

struct Discovered {
  std::vector<Instance> instances{};
  std::string namespace_name{};
  std::string service_name{};
  int64_t revision = 0;
};

// The read seam for the DNS server (and ECS registration): what a private namespace's service
// answers. Only DNS_PRIVATE namespaces; instances are those DNS would answer (healthy, or all of
// them for a service without a custom health check; every one when none is healthy is NOT done:
// Route 53's fail-open is left to the DNS server [verify]).
// Whether two DNS names are the same name: ASCII letters without case, a trailing dot ignored.
bool DnsNamesEqual(std::string_view a, std::string_view b);

struct DnsAnswer {
  std::string namespace_id{};
  std::string vpc{};
  Service service{};               // its DnsConfig holds the record types and TTLs
  std::vector<Instance> instances{}; // the answerable ones (see above), by instance id
};

// A private DNS namespace associated with a VPC, and the names of its services (DnsZones).
struct DnsZone {
  std::string name{};
  std::vector<std::string> services{};
};

class Registry {
 public:
  static constexpr int64_t kMaxInstancesPerService = 1000;  // Route 53's quota
  static constexpr int64_t kMaxNamespaces = 50;             // per account and region (AWS's quota)
  static constexpr int64_t kMaxServicesPerNamespace = 100;  // [verify] AWS: 100 per namespace
  static constexpr size_t kMaxTags = 50;                    // per resource (AWS's tag quota)
  // Operations a scope may have queued (SUBMITTED or PENDING) at once: one account's flood waits
  // on its own quota, not in everyone's queue (a Paddock bound; AWS throttles requests instead).
  static constexpr int64_t kMaxQueuedOperations = 1000;
  // Finished (SUCCESS or FAIL) operations GetOperation and ListOperations still show: per scope
  // the newest kMaxFinishedOperations, none finished more than kFinishedRetention ago (Paddock's
  // bounds: AWS documents none; without them one account's registrations would grow the store
  // without end).
  static constexpr int64_t kMaxFinishedOperations = 1000;
  static constexpr std::chrono::hours kFinishedRetention{24 * 30};
  // Tests: a smaller kMaxFinishedOperations, so retention is shown without a thousand operations.
  void SetMaxFinishedOperationsForTesting(size_t max) { max_finished_ = max; }

  // `store` and `clock` must outlive this. `ids` makes the random part of new ids (namespaces,
  // services, operations): tests pass a counter; by default, random [a-z0-9].
  using IdSource = std::function<std::string(std::string_view prefix)>;
  Registry(store::Store& store, const Clock& clock, IdSource ids = nullptr);

  // Called after every commit that queues an operation (the module's worker waits on it).
  void SetSubmitListener(std::function<void()> listener) { on_submit_ = std::move(listener); }

  static std::string NamespaceArn(const Scope& scope, std::string_view id);
  static std::string ServiceArn(const Scope& scope, std::string_view id);

  // --- namespaces (asynchronous: each returns an operation id) ---
  // kInvalidInput (a DNS_PUBLIC namespace; a private one without this scope's VPC; a bad name);
  // kNamespaceAlreadyExists (the name is taken or being created); kResourceLimitExceeded;
  // kTooManyTags. `default_vpc` is the caller's one VPC (vpc::DefaultVpcFor).
  StatusOr<std::string> CreateNamespace(const Scope& scope, const CreateNamespaceRequest& request,
                                        std::string_view default_vpc);
  StatusOr<std::string> UpdateNamespace(const Scope& scope, const UpdateNamespaceRequest& request);
  // kNamespaceNotFound; kResourceInUse while it holds services.
  StatusOr<std::string> DeleteNamespace(const Scope& scope, std::string_view id);
  StatusOr<Namespace> GetNamespace(const Scope& scope, std::string_view id);
  // Filters: TYPE (EQ, IN), NAME and HTTP_NAME (EQ, BEGINS_WITH). By id.
  StatusOr<Page<Namespace>> ListNamespaces(const Scope& scope, const std::vector<Filter>& filters, size_t max,
                                           const std::optional<std::string>& after);

  // --- services (synchronous, except UpdateService) ---
  // kNamespaceNotFound, kServiceAlreadyExists, kInvalidInput (AWS's DnsConfig rules),
  // kResourceLimitExceeded.
  StatusOr<Service> CreateService(const Scope& scope, const CreateServiceRequest& request);
  StatusOr<Service> GetService(const Scope& scope, std::string_view id);
  // Filters: NAMESPACE_ID (EQ; IN with one value). By id.
  StatusOr<Page<Service>> ListServices(const Scope& scope, const std::vector<Filter>& filters, size_t max,
                                       const std::optional<std::string>& after);
  StatusOr<std::string> UpdateService(const Scope& scope, const UpdateServiceRequest& request);
  // kServiceNotFound; kResourceInUse while it holds instances.
  Status DeleteService(const Scope& scope, std::string_view id);

  // --- instances ---
  // kServiceNotFound, kInvalidInput (AWS's attribute rules), kResourceLimitExceeded (a new
  // instance past kMaxInstancesPerService). An existing id is updated in place when applied.
  StatusOr<std::string> RegisterInstance(const Scope& scope, const RegisterRequest& request);
  // kServiceNotFound, kInstanceNotFound.
  StatusOr<std::string> DeregisterInstance(const Scope& scope, std::string_view service_id,
                                           std::string_view instance_id);
  StatusOr<Instance> GetInstance(const Scope& scope, std::string_view service_id, std::string_view instance_id);
  StatusOr<Page<Instance>> ListInstances(const Scope& scope, std::string_view service_id, size_t max,
                                         const std::optional<std::string>& after);
  // kNamespaceNotFound (no such namespace name in this scope), kServiceNotFound.
  StatusOr<Discovered> Discover(const Scope& scope, const DiscoverRequest& request);
  // The instances' health (all of the service's when `ids` is empty); an id it does not hold:
  // kInstanceNotFound.
  StatusOr<Page<Instance>> HealthOf(const Scope& scope, std::string_view service_id,
                                    const std::vector<std::string>& ids, size_t max,
                                    const std::optional<std::string>& after);
  // kCustomHealthNotFound for a service without HealthCheckCustomConfig; immediate (no operation).
  Status SetCustomHealth(const Scope& scope, std::string_view service_id, std::string_view instance_id,
                         bool healthy);

  // --- operations ---
  StatusOr<Operation> GetOperation(const Scope& scope, std::string_view id);
  // Filters: NAMESPACE_ID, SERVICE_ID (EQ), STATUS, TYPE (EQ, IN), UPDATE_DATE (BETWEEN, epoch
  // seconds). By id.
  StatusOr<Page<Operation>> ListOperations(const Scope& scope, const std::vector<Filter>& filters, size_t max,
                                           const std::optional<std::string>& after);
  // Runs every queued operation of every scope to SUCCESS or FAIL, in acceptance order (the
  // worker; tests call it). An operation the store cannot take now (an error without a Cloud Map
  // detail) ends the pass with that error, so nothing accepted after it runs before it; the
  // caller tries again later. `stop` (when set) is asked between operations: true ends the pass.
  Status RunPending(const std::function<bool()>& stop = {});

  // --- tags (namespaces and services, by ARN) --- kResourceNotFound, kTooManyTags.
  Status TagResource(const Scope& scope, std::string_view arn, const std::vector<Tag>& tags);
  Status UntagResource(const Scope& scope, std::string_view arn, const std::vector<std::string>& keys);
  StatusOr<std::vector<Tag>> ListTags(const Scope& scope, std::string_view arn);

  // --- the read seam (DNS server, ECS) ---
  // For (scope, vpc, "svc.ns" split as service and namespace name): the service's DnsConfig and
  // its answerable instances. NotFound kNamespaceNotFound when no DNS_PRIVATE namespace of that
  // name is associated with `vpc` in this scope; kServiceNotFound when it has no such service.
  StatusOr<DnsAnswer> ResolveDns(const Scope& scope, std::string_view vpc, std::string_view namespace_name,
                                 std::string_view service_name);
  // The DNS_PRIVATE namespaces of this scope associated with `vpc` (at most kMaxNamespaces), each
  // with its services' names (those without DNS records too), read in one transaction: what a
  // VPC's DNS server claims, so that a name under none of them costs no ResolveDns.
  StatusOr<std::vector<DnsZone>> DnsZones(const Scope& scope, std::string_view vpc);

  // The change generation, for readers that keep what the two calls above answered
  // (cloudmap::DnsAuthority). It grows after every committed change that can change one of their
  // answers: Registry bumps it after each of its own commits (a service created or deleted, an
  // operation applied by RunPending, a custom health status set, an account reaped); whoever
  // changes Cloud Map's records in a transaction of its own (ECS registering tasks through the
  // functions taking a store::WriteTxn&) calls NoteChanged() after that transaction commits.
  // A reader reads Generation() BEFORE its store read and keeps the result tagged with it; a
  // result whose tag is not the current generation is stale. (A reader that read an old snapshot
  // and the old generation sees a newer generation once the writer bumps; one that read the new
  // generation read after the commit.) Thread-safe.
  uint64_t Generation() const { return generation_.load(std::memory_order_acquire); }
  void NoteChanged() { generation_.fetch_add(1, std::memory_order_acq_rel); }

  // ECS's ListServicesByNamespace: the ARNs of the services of namespace `ns` (a name or this
  // scope's namespace ARN), or nullopt when the scope has no such namespace.
  StatusOr<std::optional<std::vector<std::string>>> ServiceArnsIn(const Scope& scope, std::string_view ns);

  // --- ECS's registrations (ecs/task/discovery.h), in the caller's transaction ---
  // What RegisterInstance's operation does, applied at once (no operation is recorded: ECS's own
  // calls are not the caller's). `service`: an id or this scope's ARN. Refusals: kServiceNotFound,
  // kInvalidInput (the service's attribute rules), kResourceLimitExceeded.
  Status RegisterIn(store::WriteTxn& txn, const Scope& scope, std::string_view service, std::string_view instance_id,
                    const std::map<std::string, std::string>& attributes);
  // Removes the instance; one (or a service) that is not there is not an error.
  Status DeregisterIn(store::WriteTxn& txn, const Scope& scope, std::string_view service,
                      std::string_view instance_id);

  // Removes everything of `account`, in every region (iam::AccountReaper).
  Status ReapAccount(const AccountId& account);

 private:
  // Queues an operation, with `also`'s writes, in one transaction. `retry_key` (empty: none) names
  // the request in cloudmap_requests: when it is there already, nothing is written and the
  // operation it made is answered again.
  StatusOr<std::string> Submit(const Scope& scope, OperationType type, std::map<std::string, std::string> targets,
                               std::string work, const std::function<Status(store::WriteTxn&)>& also,
                               const std::string& retry_key = "");
  Status Advance(const Scope& scope, const std::string& op_id, const std::string& pending_key);
  // store_.Write, then NoteChanged() when it committed: every write that can change what DNS answers.
  Status WriteAndNote(const std::function<Status(store::WriteTxn&)>& fn);
  // The tags of this scope's namespace or service `arn`; kResourceNotFound for anything else.
  static StatusOr<std::vector<Tag>> ListTagsIn(store::ReadTxn& txn, const Scope& scope, std::string_view arn);

  store::Store& store_;
  const Clock& clock_;
  IdSource ids_;
  std::function<void()> on_submit_;
  std::atomic<uint64_t> generation_{1};
  size_t max_finished_ = static_cast<size_t>(kMaxFinishedOperations);
};

}  // namespace paddock::cloudmap
