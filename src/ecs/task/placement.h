// ecs/task/placement: where EC2-launch-type tasks go. Pure: the caller (Tasks::Run, inside its
// store transaction) reads the cluster's container instances into Candidates, asks Place for a
// decision, and writes the reservations and task records in the same transaction, so a refused
// or interrupted run never leaves a reservation behind.
//
// The process is ECS's (developer guide, "Amazon ECS task placement"):
//   1. drop instances that cannot run the task: not ACTIVE (DRAINING never gets new tasks),
//      agent disconnected (AGENT), missing a required attribute (ATTRIBUTE), too little CPU or
//      memory left, a host port taken (RESOURCE:CPU, RESOURCE:MEMORY, RESOURCE:PORTS,
//      RESOURCE:PORTS_UDP);
//   2. drop those failing a placement constraint (distinctInstance, memberOf);
//   3. rank the rest by the strategies in order — binpack on cpu|memory (least left after
//      placing first), spread on instanceId|host|attribute:<name> (the value with the fewest
//      tasks of the run's group first), random — and take the best; ties are broken at random.
// Tasks of one run are placed one after another, each seeing the resources the previous ones
// took. A task that fits nowhere is a failure per rejected instance, `{arn, reason}`, as RunTask's
// failures[] reports it.
//
//   std::vector<Candidate> cands = ...;              // remaining resources, attributes, group counts
//   ASSIGN_OR_RETURN(auto strategies, ParseStrategies(request_strategies));
//   ASSIGN_OR_RETURN(auto constraints, ParseConstraints(request_constraints));
//   Outcome out = Place(cands, demand, count, strategies, constraints, rng);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>

#include "common/status.h"
#include "ecs/instance/query.h"

namespace paddock::ecs::task::placement {

struct Candidate {
  std::string arn;  // the container instance's ARN: what failures name
  std::string id;   // its id: the value of spread's instanceId / host
  // Attributes (name → value, "" when valueless), agentConnected and the rest memberOf can ask.
  instance::Facts facts;
  bool active = true;  // status ACTIVE; DRAINING and the rest never receive tasks
  int64_t cpu = 0;     // remaining CPU units
  int64_t memory = 0;  // remaining MiB
  std::set<int> tcp_ports;  // host ports in use
  std::set<int> udp_ports;
  int64_t group_tasks = 0;  // non-STOPPED tasks of the run's group on this instance
};

// What one task needs of an instance.
struct Demand {
  int64_t cpu = 0;
  int64_t memory = 0;
  std::vector<int> tcp_ports;  // fixed host ports; dynamic ones (0) take none here
  std::vector<int> udp_ports;
  // requiresAttributes: each name must be present, with `value` when the definition gives one.
  std::vector<std::pair<std::string, std::optional<std::string>>> attributes;
};

struct Strategy {
  enum class Type { kRandom, kSpread, kBinpack };
  Type type = Type::kRandom;
  std::string field;  // binpack: "cpu" | "memory"; spread: "instanceId" | "host" | "attribute:<name>"
};

struct Constraint {
  enum class Type { kDistinctInstance, kMemberOf };
  Type type = Type::kDistinctInstance;
  std::string expression;                         // memberOf's, as given
  std::shared_ptr<const instance::Query> member_of;  // memberOf's, parsed
};

// RunTask's / CreateService's placementStrategy (at most 5) and placementConstraints (at most
// 10; memberOf in ECS's cluster query language), validated with AWS's messages
// (InvalidParameterException).
StatusOr<std::vector<Strategy>> ParseStrategies(const boost::json::array& strategies);
StatusOr<std::vector<Constraint>> ParseConstraints(const boost::json::array& constraints);

struct Failure {
  std::string arn;
  std::string reason;
  bool operator==(const Failure&) const = default;
};

struct Outcome {
  std::vector<std::optional<size_t>> placed;  // per task: the index of its candidate, or none
  std::vector<Failure> failures;              // distinct (arn, reason), in the order met
};

// Whether an instance with `facts` has every attribute `demand` requires (requiresAttributes):
// RunTask's placement and StartTask's named instances both answer ATTRIBUTE when it has not.
bool HasRequiredAttributes(const instance::Facts& facts, const Demand& demand);

// Places `count` tasks on `candidates`, taking their resources (cpu, memory, ports, group_tasks
// are updated for every task placed). `rng` breaks ties and serves the random strategy.
Outcome Place(std::vector<Candidate>& candidates, const Demand& demand, int count,
              const std::vector<Strategy>& strategies, const std::vector<Constraint>& constraints,
              std::mt19937_64& rng);

}  // namespace paddock::ecs::task::placement
