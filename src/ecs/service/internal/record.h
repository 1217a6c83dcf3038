// ecs/service/internal/record: the service record's codec and its index upkeep, shared by the
// service owner's translation units (services.cc, task_sets.cc). Not an API: only ecs/service
// includes it.
//
// The record (table `services`, one per (account, region, cluster, name)) is JSON:
//   the Service shape's stored members (serviceArn, serviceName, clusterArn, status, desiredCount,
//   launchType | capacityProviderStrategy, platformVersion, taskDefinition, deploymentConfiguration,
//   deploymentController, placementConstraints, placementStrategy, networkConfiguration,
//   healthCheckGracePeriodSeconds, schedulingStrategy, enableECSManagedTags, propagateTags,
//   enableExecuteCommand, loadBalancers, serviceRegistries, roleArn, createdBy,
//   availabilityZoneRebalancing, serviceConnectConfiguration),
//   createdAtMs, inactiveAtMs (INACTIVE only), version,
//   events       [{id, createdAtMs, message}] newest first, at most 100
//   deployments  [Deployment, as EncodeDeployment writes it] (EXTERNAL: the task sets)
//   lastCompleted  Deployment (optional)
//   taskSetExtras  {<task set id>: {loadBalancers, serviceRegistries, tags, clientToken, request}}
//                  (EXTERNAL: what a task set's Deployment does not carry; task_sets.cc)
// Times are integer epoch milliseconds in the record and epoch seconds when rendered.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "ecs/common/tags.h"
#include "ecs/service/state.h"
#include "store/store.h"

namespace paddock::ecs::service::internal {

inline constexpr std::string_view kServices = "services";
inline constexpr std::string_view kByStatus = "service_by_status";
inline constexpr std::string_view kInactive = "service_inactive";
inline constexpr std::string_view kRefs = "service_refs";
inline constexpr std::string_view kTokens = "service_tokens";
inline constexpr std::string_view kDeployments = "service_deployments";
inline constexpr std::string_view kRevisions = "service_revisions";

inline constexpr size_t kMaxEvents = 100;

std::string ServiceArn(const Scope& scope, std::string_view cluster, std::string_view name);
std::string ServiceDeploymentArn(const Scope& scope, std::string_view cluster, std::string_view service,
                                 std::string_view id);
std::string ServiceRevisionArn(const Scope& scope, std::string_view cluster, std::string_view service,
                               std::string_view id);

// Keys.
std::string RecordKey(const Scope& s, std::string_view cluster, std::string_view name);
std::string ChildKey(const Scope& s, std::string_view cluster, std::string_view service, std::string_view id);

// Epoch milliseconds <-> JSON.
int64_t Ms(TimePoint t);
double Seconds(int64_t ms);

// A Deployment (or task set) as stored, private members included, and back.
boost::json::object EncodeDeployment(const Deployment& d);
Deployment DecodeDeployment(const boost::json::object& o);
boost::json::object EncodeLaunch(const LaunchConfig& l);  // the Deployment shape's launch members
LaunchConfig DecodeLaunch(const boost::json::object& o);

// The typed projection of a record (tags are the service's own).
ServiceState StateFromRecord(const ServiceKey& key, const boost::json::object& record, Tags tags);

// The Service shape of a record; `tags` only when asked for (include TAGS, or an answer that
// carries them).
boost::json::object RenderService(const boost::json::object& record, const Tags* tags);
boost::json::object RenderDeployment(const Deployment& d, bool ecs_controller);
boost::json::object RenderTaskSet(const boost::json::object& record, const Deployment& d);

// The task-definition revisions a record's deployments, task sets and lastCompleted use, as
// (family, revision) parsed from their ARNs.
std::set<std::pair<std::string, uint64_t>> RevisionsOf(const boost::json::object& record);

// Reads a record (nullopt when absent).
StatusOr<std::optional<boost::json::object>> LoadRecord(store::ReadTxn& txn, const Scope& s, std::string_view cluster,
                                                        std::string_view name);
// The Service shape of the record, serialized, without tags (nullopt when absent): RenderService
// of the stored record, remembered by the record's exact bytes. A memo of a pure function, it can
// never answer stale — a changed record is another key, on this server or any other sharing the
// store — and it spares DescribeServices the parse, render and serialization of an unchanged
// record (a third of its CPU). At most kRenderedServicesKept records and kRenderedServicesBytes
// of records and renderings together are remembered, process-wide.
StatusOr<std::optional<std::string>> LoadRenderedService(store::ReadTxn& txn, const Scope& s, std::string_view cluster,
                                                         std::string_view name);
inline constexpr size_t kRenderedServicesKept = 1024;
inline constexpr size_t kRenderedServicesBytes = 16 << 20;
// Writes `record` in place of `old` (nullopt: none), keeping every index equal to what the record
// says: service_by_status (ACTIVE and DRAINING), service_inactive (INACTIVE, at inactiveAtMs) and
// service_refs (RevisionsOf).
Status WriteRecord(store::WriteTxn& txn, const Scope& s, std::string_view cluster, std::string_view name,
                   const std::optional<boost::json::object>& old, const boost::json::object& record);
// Removes the record, its indexes, tags, token, service deployments and revisions.
Status RemoveService(store::WriteTxn& txn, const Scope& s, std::string_view cluster, std::string_view name);

}  // namespace paddock::ecs::service::internal
