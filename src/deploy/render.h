// deploy/render: what one deployment becomes on ECS (ADR D3/D4/D5) — for each of its containers, one
// task-definition family and one service, with deterministic names, ownership tags, Traefik labels
// and a content hash of the task definition. Pure: no I/O, the same input renders the same bytes.
//
//   ASSIGN_OR_RETURN(std::vector<Workload> ws, Render(settings, {.project = "shop", .group = "default",
//                                                     .id = "20261203-1830-ab12"}, app, size, secrets));
//   ecs.RegisterTaskDefinition(ws[0].task_definition); ecs.CreateService(ws[0].service + taskDefinition);
//
// Names (D4): family "{prefix}_{project}_{group}_{container}", service
// "{prefix}_{project}_{group}_{deployment}_{container}" — joined with '_', which no project, group or
// container name holds, so two projects never share a name; characters outside [A-Za-z0-9_-] become '-',
// and a name over 255 characters keeps its first 238 and ends in "-" + 16 hex of a hash of the whole,
// so it stays stable and distinct.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>

#include "common/status.h"
#include "deploy/sizing.h"
#include "deploy/spec.h"

namespace paddock::deploy {

// The operator's settings that shape every rendering (the controller's config).
struct ControllerSettings {
  std::string cluster = "default";
  std::string resource_prefix = "paddock";
  std::string controller_class = "default";
  std::string label_namespace = "paddock.dev";  // tag keys and the class label: "<ns>/project"
  // Where apps answer: "<scheme>://<project>[-<group>].<base_domain>[:<port>]/" (port 0: none).
  std::string url_scheme = "http";
  std::string base_domain = "localhost";
  uint16_t url_port = 8000;
  std::string entry_point = "web";               // the edge entry point routers attach to
  std::string auth_url;                          // forwardAuth address for private routes
  std::vector<std::string> subnets;              // awsvpc; empty: the cluster's default
  std::vector<std::string> security_groups;
  bool assign_public_ip = false;                 // Fargate only (EC2 never sends it)
  std::string execution_role_arn;                // empty: none
  // The task role: with task_role_pattern, each project's own (TaskRoleArn); otherwise
  // task_role_arn, one role shared by every project's tasks (the weaker choice: one project's
  // workload holds another's permissions); neither: none.
  std::string task_role_arn;
  std::string task_role_pattern;                 // e.g. "arn:aws:iam::123456789012:role/paddock-task-{project}"
  std::string log_group = "/paddock/apps";       // awslogs group; empty: no logConfiguration
  std::string log_region = "us-east-1";
  std::string cloudmap_namespace;                // e.g. "apps.paddock.local"; empty: no discovery
  // ECS's deployment circuit breaker on every service, rollback off (the controller owns cutover):
  // its FAILED rollout fails a deployment at once (plan.h) instead of at the deploying timeout.
  bool circuit_breaker = false;
  // D8 workload identity (deploy/identity.h): the identity sidecar's image — empty: identity is
  // off (no sidecar, no credential; a spec with [identity] audiences is refused, not deployed
  // without its tokens) — the URL the sidecar exchanges the credential at, and the lifetime of
  // every token (the exchange endpoint's cap too).
  std::string identity_agent_image;
  std::string identity_exchange_url;
  int identity_token_ttl_seconds = 3600;
};

// The sidecar container, its task volume and where the volume is mounted (read-write in the
// sidecar, read-only in the app's containers). The container name is reserved in paddock.toml.
inline constexpr std::string_view kIdentityContainer = "paddock-identity";
inline constexpr std::string_view kIdentityVolume = "paddock-identity";
inline constexpr std::string_view kIdentityDir = "/var/run/secrets/paddock/identity";
// The credential's SSM key under the deployment's secret path (SecretParameterName), and the env
// var the sidecar — and only the sidecar — gets it in.
inline constexpr std::string_view kIdentityCredentialKey = "paddock-identity/credential";
inline constexpr std::string_view kIdentityCredentialEnv = "PADDOCK_IDENTITY_CREDENTIAL";
// Where the agent image keeps the sidecar's program.
inline constexpr std::string_view kIdentityAgentPath = "/usr/local/bin/paddock-identity-agent";
// The app's containers find the files under this env var's value.
inline constexpr std::string_view kIdentityDirEnv = "PADDOCK_IDENTITY_DIR";

struct DeploymentRef {
  std::string project;
  std::string group = "default";
  std::string id;  // the deployment id
};

// "<project>.<base_domain>" for the default group, "<project>-<group>.<base_domain>" otherwise.
std::string AppHost(const ControllerSettings& settings, std::string_view project, std::string_view group);
// "http://shop.localhost:8000/": what PADDOCK_APP_URL carries.
std::string AppUrl(const ControllerSettings& settings, std::string_view project, std::string_view group);
std::string FamilyName(const ControllerSettings& settings, const DeploymentRef& ref, std::string_view container);
std::string ServiceName(const ControllerSettings& settings, const DeploymentRef& ref, std::string_view container);
// IAM's longest role name.
inline constexpr size_t kMaxRoleName = 64;
// Whether `pattern` can name a project's task role: an IAM role ARN
// ("arn:<partition>:iam::<account>:role/[<path>/]<name>") holding "{project}" in its name, and no
// placeholder but "{project}" and "{class}". kInvalidArgument saying what is wrong.
Status CheckTaskRolePattern(std::string_view pattern);
// The task role of `project`'s tasks: task_role_pattern with "{project}" and "{class}" filled in
// (a role name over 64 characters keeps its first 47 and ends in "-" + 16 hex of the SHA-256 of
// the whole name, so it stays valid, stable and distinct), else task_role_arn, else "".
// REQUIRES: task_role_pattern is empty or passes CheckTaskRolePattern.
std::string TaskRoleArn(const ControllerSettings& settings, std::string_view project);

// The Cloud Map service name of (project, group, container) — one DNS label, at most 63 characters.
std::string DiscoveryName(const ControllerSettings& settings, const DeploymentRef& ref, std::string_view container);

// The tag keys every service carries, under settings.label_namespace.
namespace tag {
inline constexpr std::string_view kManagedBy = "managed-by";  // value "paddock"
inline constexpr std::string_view kControllerClass = "controller-class";
inline constexpr std::string_view kProject = "project";
inline constexpr std::string_view kGroup = "deployment-group";
inline constexpr std::string_view kDeploymentId = "deployment-id";
inline constexpr std::string_view kContainer = "container";
inline constexpr std::string_view kTaskDefinitionHash = "task-definition-hash";
}  // namespace tag

// What a service's tags say about it, read back by the reconciler. `owned` only when both
// managed-by and the controller class match; `complete` when every identity tag is present too.
struct Ownership {
  bool owned = false;
  bool complete = false;
  std::string project, group, deployment_id, container, task_definition_hash;
};
Ownership ReadTags(const ControllerSettings& settings, const std::vector<std::pair<std::string, std::string>>& tags);

// Secret env vars of a deployment: env name -> the SSM parameter's name or ARN (valueFrom). The
// values never reach the rendering.
using SecretRefs = std::map<std::string, std::string>;

struct Workload {
  std::string container;
  std::string family;
  std::string service_name;
  // RegisterTaskDefinition's input: family, networkMode awsvpc, requiresCompatibilities, cpu and
  // memory (strings), executionRoleArn/taskRoleArn when set, one containerDefinition (image, essential,
  // command, environment sorted by name with PORT, PADDOCK_PROJECT, PADDOCK_DEPLOYMENT,
  // PADDOCK_APP_URL and PADDOCK_CONTAINER_HOST__<NAME> per other container when discovery is set;
  // secrets; portMappings; dockerLabels; logConfiguration awslogs), tags.
  boost::json::object task_definition;
  // A hex digest of task_definition's canonical form (keys sorted): the D13 drift marker.
  std::string hash;
  // CreateService's input without taskDefinition: cluster, serviceName, desiredCount,
  // launchType XOR capacityProviderStrategy, networkConfiguration, propagateTags SERVICE,
  // enableECSManagedTags, tags (with the hash), deploymentConfiguration.
  boost::json::object service;
  std::vector<std::pair<std::string, std::string>> tags;  // the service's tags, in order
};

// Renders every container of `app`. Containers a route names get traefik.enable=true, a service
// port label and a router per route with rule Host(`AppHost`) && PathPrefix(`prefix`), the entry
// point, priority len(rule), and for private routes a forwardAuth middleware (a private route with
// no auth_url is kFailedPrecondition: it is withheld rather than served in the open). Any other
// container, with a port or not, gets traefik.enable=false: the ECS provider would otherwise give
// it a default router. Router, service and middleware names depend on (project, group, container)
// — a router's also on its path prefix, not its position — and not on the deployment, so two
// deployments' services merge into one edge load balancer during a cutover (D12). A health check
// becomes the loadbalancer.healthcheck.* labels. Every container also carries the label
// "<ns>/controller-class" = class. An invalid spec (CheckAppSpec), a secret named PORT, PADDOCK_*
// or like one of the container's env vars, a tag value over 256 characters, a task definition over
// ECS's 64 KiB, or secrets with no execution role to read them is kInvalidArgument.
//
// With identity on (settings.identity_agent_image), every task definition also has the identity
// sidecar (D8): a task volume kIdentityVolume; the container kIdentityContainer (not essential,
// restarted in place, 32 MiB reserved, its credential the one secret `identity_credential` names —
// the app's containers never see it —, the exchange URL, the audiences and the token lifetime in
// its env, its health check the agent's --check with ECS's longest start period, its logs under
// "<prefix>-identity/…", traefik.enable=false); and each app container mounts the volume read-only
// at kIdentityDir (also in its env as kIdentityDirEnv) and starts once the sidecar is HEALTHY.
// The sidecar's image is left out of the content hash: a new agent image rolls no service.
StatusOr<std::vector<Workload>> Render(const ControllerSettings& settings, const DeploymentRef& ref,
                                       const AppSpec& app, const TaskSize& size, const SecretRefs& secrets,
                                       std::string_view identity_credential = {});

}  // namespace paddock::deploy
