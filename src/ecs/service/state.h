// ecs/service/state.h: a service as the scheduler sees and changes it.
//
// The service owner (services.h) stores each service as one record; ServiceState is the typed
// projection of that record that the scheduler (sched/) reads, plans against and writes back
// through Services::LoadState / Services::StoreState inside its own transactions. Nothing here
// is an API shape: DescribeServices renders the record in botocore's Service shape.
//
//   ASSIGN_OR_RETURN(std::optional<ServiceState> s, services.LoadState(txn, key));
//   s->deployments[0].running_count = 3;
//   s->new_events.push_back("(service web) has reached a steady state.");
//   RETURN_IF_ERROR(services.StoreState(txn, *s, now));   // refused if the record moved on
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "common/clock.h"
#include "common/ids.h"
#include "ecs/common/tags.h"
#include "ecs/service/breaker.h"

namespace paddock::ecs::service {

// Which service: the key of its record.
struct ServiceKey {
  Scope scope;
  std::string cluster;  // name
  std::string name;
  bool operator==(const ServiceKey&) const = default;
};

// How a deployment's (or task set's) tasks are launched: the Deployment shape's launch members.
struct LaunchConfig {
  std::optional<std::string> launch_type;                       // FARGATE | EC2 | EXTERNAL
  std::optional<boost::json::array> capacity_provider_strategy;  // CapacityProviderStrategyItem[]
  std::optional<std::string> platform_version;
  std::optional<boost::json::object> network_configuration;     // {"awsvpcConfiguration": {...}}
};

// A DAEMON deployment's backoff on one container instance: a launch onto it that found no room
// holds further launches onto that instance only; the other instances still get their task.
struct InstanceBackoff {
  std::string instance_arn;
  int64_t failures = 0;        // consecutive placement failures there
  TimePoint failed_at{};       // the last one
  TimePoint next_launch_at{};  // no launch onto it before this
};

// One entry of deployments[] (ECS controller) or of taskSets[] (EXTERNAL controller).
struct Deployment {
  std::string id;               // "ecs-svc/<19 digits>"
  std::string status;           // deployments: PRIMARY | ACTIVE; task sets: PRIMARY | ACTIVE | DRAINING
  std::string task_definition;  // the pinned revision ARN: every launch of this deployment uses it
  int64_t desired_count = 0;    // task sets: computedDesiredCount
  int64_t pending_count = 0;    // scheduler-maintained from the tasks
  int64_t running_count = 0;
  int64_t failed_tasks = 0;     // failures the circuit breaker counts (since its last reset)
  std::string rollout_state;         // IN_PROGRESS | COMPLETED | FAILED (ECS controller only)
  std::string rollout_state_reason;  // "ECS deployment ecs-svc/… in progress." …
  TimePoint created_at{};
  TimePoint updated_at{};
  LaunchConfig launch;
  std::string service_deployment_id;  // the ServiceDeployment this deployment belongs to (ARN's last part)
  std::string service_revision_id;    // the ServiceRevision it runs (19 digits)
  // The revision's own placementConstraints (memberOf), as registered: a DAEMON service admits an
  // instance only when these match it as well as the service's own.
  boost::json::array definition_constraints;

  // Task sets only.
  double scale_percent = 0;        // scale.value (unit PERCENT)
  std::string external_id;
  std::string stability_status;    // STEADY_STATE | STABILIZING. ECS controller: the scheduler's
                                   // private marker (never rendered) that the steady-state event
                                   // was written for this PRIMARY
  TimePoint stability_status_at{};

  // StopServiceDeployment (ROLLBACK) asked for this deployment to be rolled back; the scheduler
  // does so at its next pass, as the circuit breaker would.
  bool rollback_requested = false;

  // Scheduler-private (never rendered).
  // The circuit breaker counts failures after this time: when a task of the deployment last became
  // healthy (with resetOnHealthyTask), or when a rollback made it PRIMARY again.
  TimePoint breaker_reset_at{};
  int64_t breaker_unobserved = 0;  // failures since then that no task shows (placements that failed)
  int64_t launch_failures = 0;     // consecutive tasks that stopped before RUNNING (backoff)
  TimePoint next_launch_at{};      // backoff: no launch before this
  std::vector<InstanceBackoff> instance_backoffs;  // DAEMON: placement failures back off per instance
};

struct Event {
  std::string id;  // lowercase UUID v4
  TimePoint created_at{};
  std::string message;
};

struct ServiceState {
  ServiceKey key;
  std::string arn;
  std::string status;               // ACTIVE | DRAINING | INACTIVE
  std::string scheduling_strategy;  // REPLICA | DAEMON
  std::string controller;           // ECS | EXTERNAL
  int64_t desired_count = 0;        // DAEMON: kept by the scheduler as the eligible instances
  int64_t minimum_healthy_percent = 100;
  int64_t maximum_percent = 200;
  bool circuit_breaker = false;
  bool rollback = false;
  bool reset_on_healthy_task = true;      // deploymentCircuitBreaker.resetOnHealthyTask
  FailureThresholdConfig failure_threshold;  // deploymentCircuitBreaker.thresholdConfiguration
  int64_t health_check_grace_seconds = 0;
  std::optional<boost::json::array> placement_constraints;  // the service's, as given
  std::optional<boost::json::array> placement_strategy;
  // serviceRegistries' one entry ({registryArn, port, containerName, containerPort}), if any: where
  // the service's tasks are registered (ecs/task/discovery.h).
  std::optional<boost::json::object> service_registry;
  std::string propagate_tags = "NONE";  // NONE | SERVICE | TASK_DEFINITION
  bool enable_ecs_managed_tags = false;
  bool enable_execute_command = false;
  Tags tags;  // the service's own when propagateTags is SERVICE (LoadState reads them only then)

  // ECS controller: PRIMARY first, then ACTIVE ones newest first. EXTERNAL: the task sets.
  std::vector<Deployment> deployments;

  // The most recent deployment that reached COMPLETED, kept (with its id) after it leaves
  // deployments[], so a rollback can make it PRIMARY again. Scheduler-maintained.
  std::optional<Deployment> last_completed;

  // StoreState prepends these to events[] (in order: the last one becomes the newest) and keeps
  // the newest 100, giving an event without an id a fresh UUID. LoadState returns it empty.
  std::vector<Event> new_events;

  // The newest event already stored (events[0]), as LoadState found it: the scheduler does not
  // repeat an identical event within 6 hours (ECS's console rule for repeated messages).
  std::optional<Event> newest_event;

  // The record's version when loaded; StoreState refuses (kAborted) a state whose record has
  // since been written by anyone else, and writes version + 1 (the caller may store the same
  // state again after bumping its copy).
  uint64_t version = 0;
};

}  // namespace paddock::ecs::service
