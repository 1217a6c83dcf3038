// deploy/spec: the app spec — a user's `paddock.toml` — parsed, validated and resolved for one
// environment. Every error names the file and line of the value at fault, so a user can fix it
// without reading this code. The deploy controller stores a deployment's resolved spec as JSON
// (ToJson / AppSpecFromJson), so `--from` redeploys the exact workload.
//
//   [project]
//   name = "shop"
//
//   [containers.web]
//   image = "registry.local/shop-web:1.4"
//   port = 8080
//   command = ["/bin/web", "--listen", ":8080"]
//   env = { GREETING = "hello" }
//   health_check = { path = "/healthz", interval = "10s", timeout = "2s" }
//
//   [containers.worker]
//   image = "registry.local/shop-worker:1.4"
//
//   [deploy]
//   replicas = 2
//   cpu = "500m"          # vCPU: "0.25", "1" or millicores "500m" (sizing.h)
//   memory = "512Mi"
//   capacity = "fargate"  # fargate | ec2 | interruptible
//
//   [routes]
//   "/" = "web"
//   "/admin" = { container = "web", access = "private" }
//
//   [environments.staging]          # merged over the tables above when deploying to "staging"
//   deploy = { replicas = 1 }
//   containers.web.env = { GREETING = "hi from staging" }
//
//   ASSIGN_OR_RETURN(deploy::AppSpec app, deploy::ParseAppSpec(text, {.environment = "staging"}));
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "common/status.h"

namespace paddock::deploy {

// What runs the tasks: Fargate (sizes rounded up to its table, sizing.h), the cluster's own EC2
// container instances, or interruptible capacity (FARGATE_SPOT through a capacity provider strategy).
enum class Capacity { kFargate, kEc2, kInterruptible };
std::string_view CapacityName(Capacity);  // "fargate", "ec2", "interruptible"
std::optional<Capacity> ParseCapacity(std::string_view);

// Who may reach a route: anyone, or only requests the operator's forwardAuth service admits.
enum class Access { kPublic, kPrivate };
std::string_view AccessName(Access);  // "public", "private"
std::optional<Access> ParseAccess(std::string_view);

struct HealthCheck {
  std::string path;               // starts with '/'
  int interval_seconds = 10;      // 1..300, written "10s", "1m" or a number of seconds
  int timeout_seconds = 5;        // 1..60 and < interval
};

struct ContainerSpec {
  std::string name;                      // the table key: [a-z][a-z0-9-]*, at most 32 characters
  std::string image;                     // required, non-empty, no whitespace
  std::optional<uint16_t> port;          // 1..65535: where it listens (and its PORT); none: a worker
  std::vector<std::string> command;      // empty: the image's own
  std::map<std::string, std::string> env;  // plain values; names [A-Za-z_][A-Za-z0-9_]*, not PADDOCK_*/PORT
  std::optional<HealthCheck> health_check;  // REQUIRES port
};

struct Route {
  std::string path_prefix;  // starts with '/'
  std::string container;    // names a container with a port
  Access access = Access::kPublic;
};

struct DeploySettings {
  int replicas = 1;             // 0..100
  std::string cpu = "0.25";     // a quantity sizing.h parses; validated at parse time
  std::string memory = "512Mi";
  Capacity capacity = Capacity::kFargate;
};

struct AppSpec {
  std::string project;                    // [a-z][a-z0-9-]*, at most 63 characters (a DNS label)
  std::vector<ContainerSpec> containers;  // at least one, at most 9, ordered by name
  DeploySettings deploy;
  std::vector<Route> routes;              // ordered by path_prefix, longest first
  // [identity] audiences (D8): token file name -> the audience its token is for. The identity
  // sidecar writes /var/run/secrets/paddock/identity/tokens/<file> for each (deploy/identity.h).
  // At most 10; file names [A-Za-z0-9][A-Za-z0-9._-]*, at most 64 characters; audiences 1 to 256
  // printable characters without whitespace, quotes, backslash, '`' or '$' (they pass through a shell).
  std::map<std::string, std::string> identity_audiences;
};

struct ParseOptions {
  std::string_view environment;               // empty: no [environments.*] table applied
  std::string_view file_name = "paddock.toml";  // how errors name the file
};

// The first rule `spec` breaks — the dotted path of the field at fault ("containers.web.port",
// "deploy.replicas", "routes./admin") and a message that starts with that path — or nullopt when
// it is valid. The semantic rules written beside each field above, in one place: ParseAppSpec maps
// the path to its line, AppSpecFromJson and the controller's API report it as is.
struct SpecProblem {
  std::string path;
  std::string message;
};
std::optional<SpecProblem> CheckAppSpec(const AppSpec& spec);

// Parses and validates. Errors are kInvalidArgument with a message "<file>:<line>: <what>",
// e.g. "paddock.toml:7: containers.web.port must be between 1 and 65535 (got 70000)"; a TOML
// syntax error gives the parser's line and column. Unknown keys are errors (a typo must not
// deploy silently). An environment named in options but absent from the file is an error.
StatusOr<AppSpec> ParseAppSpec(std::string_view toml, const ParseOptions& options = {});

// The resolved spec as JSON (the controller's record and its HTTP API), and back. AppSpecFromJson
// validates like ParseAppSpec (errors name the JSON field instead of a line).
boost::json::object ToJson(const AppSpec& spec);
StatusOr<AppSpec> AppSpecFromJson(const boost::json::value& json);

// Replaces container images by name ("web=registry/web:2"): `paddock deploy --image`. An unknown
// container or an empty image is kInvalidArgument.
Status OverrideImage(AppSpec& spec, std::string_view container_equals_image);

}  // namespace paddock::deploy
