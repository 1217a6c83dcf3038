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

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
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
  // The task's containerInstanceArn (EC2 launch type; "" on Fargate).
  std::string container_instance_arn;
  // bridge/host on EC2: the container instance's EC2 instance's privateIpAddress and state name
  // ("running"), as DescribeContainerInstances (ec2InstanceId) and ec2:DescribeInstances give them;
  // Traefik takes the machine's state, not the task's, for these modes. An empty machine_state:
  // no container instance was found (each container is skipped, logged).
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
  // Routers whose rule is the default rule (Traefik's Router.DefaultRule, not in the JSON): the
  // edge adds Traefik's anti-recursion check to them.
  std::set<std::string> default_rule_routers;
  // What Traefik logs (a container dropped, a conflict, ...), at most kMaxEcsErrors of them; the
  // last one then counts those left out.
  std::vector<std::string> errors;
};

// Bounds on one build: tasks past the first kMaxEcsTasks (desiredStatus RUNNING) and containers
// past a task's first kMaxEcsContainersPerTask are ignored, with an error.
inline constexpr size_t kMaxEcsTasks = 10'000;
inline constexpr size_t kMaxEcsContainersPerTask = 100;
inline constexpr size_t kMaxEcsErrors = 1'000;
// The cap on a container's `paddock.edge.drain-timeout`.
inline constexpr int64_t kMaxDrainTimeoutMs = 3'600'000;

// Traefik's Normalize: the name split on every rune that is not a letter or number (Go's
// unicode.IsLetter / IsNumber, Unicode 15.0; a malformed UTF-8 byte is neither), the non-empty
// pieces joined with '-'. "service:rise-web_app" -> "service-rise-web-app".
std::string Normalize(std::string_view name);

// Traefik's defaults for a load-balancer service, as its label decoder sets them on every
// loadBalancer it creates: passHostHeader true, strategy "wrr", responseForwarding.flushInterval
// "100ms"; a healthCheck's followRedirects true, mode "http", interval "30s", timeout "5s"; a
// passiveHealthCheck's failureWindow "10s", maxFailedAttempts 1; a sticky cookie's path "/".
// Fields present are kept; a service without a loadBalancer object is left alone.
void ApplyServiceDefaults(boost::json::object& service);

// Tasks with desiredStatus other than RUNNING are ignored (Traefik lists desiredStatus=RUNNING).
// Per container, in Traefik's order (pkg/provider/ecs): awsvpc (with attachments) needs an IP
// ("no network interfaces" otherwise), other modes a container instance; `traefik.enable` must
// parse; then the filter (state running, health not UNHEALTHY — awsvpc only, as in Traefik —, an
// IP, enabled, constraints); the labels must decode (edge/dynamic.h); every service gets this
// container's server; routers get the default rule and the only service. The containers'
// configurations are then merged in name order (edge/merge.h, kMerge). Instance names are
// Normalize(group with its first ':' made '-' + "-" + container) + "-" + the task ARN's last 12
// characters; a later container of the same instance name replaces an earlier one, as in Traefik.
EcsBuild BuildEcsConfiguration(const std::vector<EcsTask>& tasks, const EcsProviderOptions& options);

}  // namespace paddock::edge
