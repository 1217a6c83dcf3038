// ecs/taskdef: the one owner of task-definition records.
//
// Only this module writes task-definition records, their indexes and their tags. Registering
// allocates the revision and writes the record, the family counters, the status indexes and the
// tags in ONE store transaction, so concurrent registers of a family never share a revision and
// an interrupted register leaves nothing behind (seed gaps 1 and 2). Launches (tasks, services)
// get a narrow LaunchView of a pinned revision, never the stored record (seed gap 8).
//
//   TaskDefinitions tds(store);
//   ASSIGN_OR_RETURN(Registered r, tds.Register(scope, caller_arn, std::move(input), now));
//   ASSIGN_OR_RETURN(Described d, tds.Describe(scope, "web", IncludeTags(true)));
//
// Records (ecs/schema.h):
//   taskdefs                 (account, region, family, revision) -> the TaskDefinition JSON as
//                            DescribeTaskDefinition returns it
//   taskdef_families         (account, region, family) -> {"latest": N, "active": n}
//   taskdef_by_status        (account, region, status, family, revision) -> ""
//   taskdef_family_by_status (account, region, ACTIVE|INACTIVE, family) -> ""
//   taskdef_deleting         (account, region, family, revision) -> ""   awaiting removal
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "ecs/common/tags.h"
#include "ecs/taskdef/validate.h"
#include "store/store.h"

namespace paddock::ecs::taskdef {

// A reference as users write it: "family", "family:revision" or the ARN.
struct Ref {
  std::string family;
  std::optional<uint64_t> revision;  // nullopt: the latest ACTIVE revision
};

// Parses a reference. An ARN must name the caller's scope (see CheckArnScope).
StatusOr<Ref> ParseRef(std::string_view text, const Scope& caller, std::string_view action,
                       std::string_view caller_arn);

struct Registered {
  std::string task_definition;  // serialized TaskDefinition JSON
  Tags tags;
};

struct Described {
  std::string task_definition;  // serialized TaskDefinition JSON
  std::optional<Tags> tags;     // present when asked for
};

struct ListQuery {
  std::optional<std::string> family;   // ListTaskDefinitions: the full family name
  std::string status = "ACTIVE";       // ACTIVE | INACTIVE | DELETE_IN_PROGRESS
  bool descending = false;
  size_t limit = 100;
  std::string after;                   // position from a previous page, or empty
};

struct FamilyQuery {
  std::string prefix;
  std::string status = "ACTIVE";  // ACTIVE | INACTIVE | ALL
  size_t limit = 100;
  std::string after;
};

struct Page {
  std::vector<std::string> items;  // ARNs or family names
  std::string next;                // position of the next page, empty when done
};

struct DeleteResult {
  std::vector<std::string> task_definitions;  // serialized TaskDefinition JSON
  struct Failure {
    std::string arn;
    std::string reason;
    std::string detail;
  };
  std::vector<Failure> failures;
};

// A container of a pinned revision, as the control plane's launch paths read it (LaunchView).
struct PortMappingView {
  int64_t container_port = 0;
  int64_t host_port = 0;  // 0: not given (dynamic in bridge mode; the container port in host mode)
  std::string protocol = "tcp";
};
struct ContainerView {
  std::string name;
  std::string image;
  bool essential = true;
  int64_t cpu = 0;                 // units; 0: not given
  int64_t memory = 0;              // the hard limit, MiB; 0: not given
  int64_t memory_reservation = 0;  // the soft limit, MiB; 0: not given
  std::vector<PortMappingView> port_mappings;
};

// What a launch needs of a revision, resolved once and pinned (seed gaps 4 and 8). The control
// plane reads a revision only through it: nothing outside ecs/taskdef parses a task-definition
// document (tests/test_taskdef_boundary.py). `definition` is the agent's launch document, handed
// on to the agent as it is (agent protocol, docs/agent-protocol.md).
struct LaunchView {
  std::string arn;
  std::string family;
  uint64_t revision = 0;
  std::string task_role_arn;
  std::string execution_role_arn;
  std::string network_mode;
  std::string cpu;
  std::string memory;
  std::vector<std::string> compatibilities;
  std::string definition;  // networkMode, pidMode, ipcMode, the containers and volumes, serialized, for the agent
  std::vector<ContainerView> containers;  // in the definition's order
  // For placement on container instances: requiresAttributes (name, value when given) and the
  // revision's placementConstraints (memberOf only), as registered.
  std::vector<std::pair<std::string, std::optional<std::string>>> requires_attributes;
  boost::json::array placement_constraints;
  // An essential container defines a healthCheck: a service counts the task healthy only when it
  // reports HEALTHY.
  bool health_checks = false;
};

// A launch path's authorization of the revision it pinned (iam:PassRole on its task and execution
// roles: ecs/api/authorization.h): called once, with the very view the launch then uses, before
// anything is written; an error refuses the launch and is returned as is. Empty: no check (the
// service scheduler's own launches of an already pinned revision).
using LaunchCheck = std::function<Status(const LaunchView&)>;

// Whether a launch may use an INACTIVE revision: only a service's launches of the revision it
// pinned before the revision was deregistered.
enum class InactiveRevision { kRefuse, kAllow };

// Whether anything (a task, a service) still uses a revision. Tasks and services register one
// each, so a revision in DELETE_IN_PROGRESS is removed only once nothing references it.
class ReferenceCheck {
 public:
  virtual ~ReferenceCheck() = default;
  virtual StatusOr<bool> IsReferenced(store::ReadTxn& txn, const Scope& scope, std::string_view family,
                                      uint64_t revision) = 0;
};

class TaskDefinitions {
 public:
  // `rules`: what this server relaxes of ECS's registration rules (validate.h; none by default).
  explicit TaskDefinitions(store::Store& store, RegisterRules rules = {}) : store_(store), rules_(rules) {}

  // REQUIRES: called before serving.
  void AddReferenceCheck(ReferenceCheck* check) { checks_.push_back(check); }

  // Validates and normalizes `input` (a RegisterTaskDefinition request that passed model
  // validation), then allocates the next revision and stores it, atomically.
  StatusOr<Registered> Register(const Scope& scope, std::string_view caller_arn, boost::json::object input,
                                TimePoint now);

  StatusOr<Described> Describe(const Scope& scope, const Ref& ref, bool include_tags);
  StatusOr<Page> List(const Scope& scope, const ListQuery& q);
  StatusOr<Page> ListFamilies(const Scope& scope, const FamilyQuery& q);

  // ACTIVE -> INACTIVE. Repeating it on an INACTIVE revision returns the revision unchanged.
  StatusOr<std::string> Deregister(const Scope& scope, const Ref& ref, TimePoint now);

  // INACTIVE -> DELETE_IN_PROGRESS for each reference (up to 10); failures per reference.
  StatusOr<DeleteResult> Delete(const Scope& scope, const std::vector<std::string>& refs, std::string_view caller_arn,
                                TimePoint now);

  // Removes DELETE_IN_PROGRESS revisions of `scope` that nothing references. Returns how many.
  StatusOr<size_t> ReapDeleting(const Scope& scope);
  // ReapDeleting for every scope that has revisions waiting (the periodic reaper's pass).
  StatusOr<size_t> ReapAllDeleting();

  // Tags are per revision: a Ref without one is InvalidParameterException.
  Status TagResource(const Scope& scope, const Ref& ref, const Tags& tags);
  Status UntagResource(const Scope& scope, const Ref& ref, const std::vector<std::string>& keys);
  StatusOr<Tags> ListTags(const Scope& scope, const Ref& ref);

  // The pinned view a launch uses. An INACTIVE or deleting revision cannot start new tasks,
  // unless `inactive` is kAllow (a service's pinned revision).
  StatusOr<LaunchView> ResolveForLaunch(const Scope& scope, const Ref& ref,
                                        InactiveRevision inactive = InactiveRevision::kRefuse);
  // Inside a launch's own transaction: the revision `view` pinned may still start tasks, with the
  // answer ResolveForLaunch would give now (a revision reaped since, or deregistered or deleting
  // when `inactive` is kRefuse, refuses the launch) — so no task is committed pinned to a revision
  // a concurrent DeleteTaskDefinitions has removed.
  Status CheckLaunchable(store::ReadTxn& txn, const Scope& scope, const LaunchView& view,
                         InactiveRevision inactive = InactiveRevision::kRefuse);

  // Removes every task definition and tag of the account (seed gap 7).
  Status ReapAccount(const AccountId& account);

 private:
  store::Store& store_;
  const RegisterRules rules_;
  std::vector<ReferenceCheck*> checks_;
};

}  // namespace paddock::ecs::taskdef
