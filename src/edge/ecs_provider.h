// edge/ecs_provider: what Traefik's ECS provider makes of a cluster's tasks — a pure function from
// the tasks as the ECS API describes them to one dynamic configuration (edge/dynamic.h), with
// Traefik's filter, naming, port choice, default rule, defaults and merge rules
// (../shared/research/edge-traefik.md §1; traefik pkg/provider/ecs and pkg/provider/configuration.go).
// The driver (edge/ecs_source.h) reads the tasks; this decides.
//
//   edge::EcsProviderOptions options;  // exposedByDefault true, defaultRule Host(`{{ normalize .Name }}`)
//   edge::EcsBuild build = edge::BuildEcsConfiguration(tasks, options);
//   // build.config: {"http":{"routers":{"web":...},"services":{"web":{"loadBalancer":{"servers":[...]}}}}}
//   // build.servers: which task each server URL belongs to (for drains); build.errors: what Traefik logs
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

namespace paddock::edge {

struct EcsPortMapping {
  int container_port = 0;
  int host_port = 0;  // 0 when the document has none (Traefik reads nil as 0)
  std::string protocol = "tcp";
};

// One container of a task, with what its task definition says of it.
struct EcsContainer {
  std::string name;
  std::map<std::string, std::string> labels;  // the definition's dockerLabels
  std::vector<EcsPortMapping> port_mappings;  // the definition's portMappings (awsvpc ports)
  // awsvpc: the task's containers[].networkInterfaces[0].privateIpv4Address (else ipv6Address).
  std::string private_ip;
  // bridge/host: the task's containers[].networkBindings as (containerPort, hostPort).
  std::vector<EcsPortMapping> network_bindings;
};

struct EcsTask {
  std::string task_arn;
  std::string cluster;         // the cluster's name
  std::string group;           // "service:web", "family:x"
  std::string last_status;     // RUNNING, ...
  std::string desired_status;  // RUNNING or STOPPED
  std::string health_status;   // HEALTHY, UNHEALTHY, UNKNOWN
  std::string network_mode;    // awsvpc, bridge, host
  bool has_attachments = false;  // the task's attachments[] is non-empty
  // bridge/host on EC2: the container instance's private IP and its EC2 instance state
  // ("running"); Traefik takes the machine's state, not the task's, for these modes.
  std::string host_ip;
  std::string machine_state;
  std::vector<EcsContainer> containers;
};

struct EcsProviderOptions {
  bool exposed_by_default = true;
  std::string constraints;  // edge/rule.h Constraint syntax; empty: every container
  // A Go template; the subset understood: {{ normalize .Name }}, {{ .Name }},
  // {{ index .Labels "key" }} (others: the router is dropped, logged).
  std::string default_rule = "Host(`{{ normalize .Name }}`)";
  bool healthy_tasks_only = false;
};

// A server the configuration routes to, and the task and container it is.
struct EcsServer {
  std::string service;  // the service's name in the configuration (without @ecs)
  std::string url;      // "http://172.31.0.5:8080"
  std::string task_arn;
  std::string container;
  // The container's `paddock.edge.drain-timeout` label (a Go duration, capped at 3600 s), when it
  // has one and it parses (one that does not is an error, and the default applies).
  std::optional<int64_t> drain_timeout_ms;
};

struct EcsBuild {
  boost::json::object config;       // the merged configuration, services with Traefik's defaults
  std::vector<EcsServer> servers;   // in the order of config's servers
  std::vector<std::string> errors;  // what Traefik logs (a container dropped, a conflict, ...)
};

// Traefik's Normalize: the name split on every rune that is not a letter or digit, the pieces
// joined with '-'.
std::string Normalize(std::string_view name);

// Tasks with desiredStatus other than RUNNING are ignored (Traefik lists desiredStatus=RUNNING).
EcsBuild BuildEcsConfiguration(const std::vector<EcsTask>& tasks, const EcsProviderOptions& options);

}  // namespace paddock::edge
