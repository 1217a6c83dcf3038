// The deploy controller's commands (deploy/, docs/deploy.md):
//
//   paddock controller --endpoint http://127.0.0.1:4566 [--edge-api 127.0.0.1:8081] [--listen 127.0.0.1:4580]
//                      [--state-dir DIR] [--class default] [--cluster default] [--interval 30s]
//                      [--call-log FILE] ...
//   paddock deploy [-f paddock.toml] [--image CONTAINER=IMAGE]... [--group G] [--env E] [--from ID]
//                  [--expire 7d] [--wait]
//   paddock deployments list [--project P] | show ID [--follow] | events ID [--follow] | logs ID [--follow] [--since 5m]
//                       | stop ID | diff [-f paddock.toml] [--image C=I]... [--group G] [--env E]
//   paddock env set [--secret] [--project P] KEY [VALUE] | unset [--project P] KEY | list [--project P]
//               (the project defaults to ./paddock.toml's; a VALUE left out is read from stdin)
//   paddock verify
//
// `paddock up` runs the controller in-process against its own API and edge
// (InProcessController) and writes where the CLI finds it: $XDG_CONFIG_HOME/paddock/deploy.json
// (~/.config/paddock/deploy.json) holding {"url", "token"}; PADDOCK_DEPLOY_URL and
// PADDOCK_DEPLOY_TOKEN override it.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aws/sigv4.h"
#include "common/status.h"
#include "http/message.h"

namespace paddock::cli {

struct DeployCommands {
  // paddock controller
  CLI::App* controller = nullptr;
  std::string endpoint = "http://127.0.0.1:4566";
  std::string ca_bundle;  // PEM: the CAs an https endpoint is checked against; "": the system's
  std::vector<std::string> service_endpoints;  // "SERVICE=URL": a service's own endpoint
  std::string region = "us-east-1";
  std::string credentials_file;
  std::string profile = "paddock";
  std::string edge_api;
  std::string listen = "127.0.0.1:4580";
  std::string state_dir;
  std::string controller_class = "default";
  std::string cluster = "default";
  std::string interval = "30s";
  std::string deploying_timeout = "5m";
  std::string drain = "15s";
  std::string base_domain = "localhost";
  int url_port = 8000;
  std::string auth_url;
  std::vector<std::string> subnets;
  std::vector<std::string> security_groups;
  std::string execution_role_arn;
  std::string task_role_arn;      // one role for every project's tasks (the weaker choice)
  std::string task_role_pattern;  // each project's own: "arn:aws:iam::<account>:role/paddock-task-{project}"
  bool create_task_roles = false;
  std::string log_group = "/paddock/apps";
  std::string cloudmap_namespace;
  bool circuit_breaker = false;
  int keep_revisions = 10;
  std::string call_log;  // "": none
  bool skip_preflight = false;
  // D8 workload identity: the sidecar's image (""; off), where the sidecar exchanges its credential
  // ("": this API's URL), the issuer URL ("": this API's URL) and the tokens' lifetime.
  std::string identity_agent_image;
  std::string identity_exchange_url;
  std::string identity_issuer;
  std::string identity_token_ttl = "1h";

  // paddock deploy
  CLI::App* deploy = nullptr;
  std::string file = "paddock.toml";
  std::vector<std::string> images;
  std::string group = "default";
  std::string environment;
  std::string from;
  std::string expire;
  bool wait = false;
  std::string wait_timeout = "10m";

  // paddock deployments …
  CLI::App* deployments = nullptr;
  CLI::App* list = nullptr;
  CLI::App* show = nullptr;
  CLI::App* events = nullptr;
  CLI::App* stop = nullptr;
  CLI::App* logs = nullptr;
  CLI::App* diff = nullptr;
  std::string since = "1h";
  std::string project;
  std::string id;
  bool follow = false;

  // paddock verify
  CLI::App* verify = nullptr;

  // paddock env …
  CLI::App* env = nullptr;
  CLI::App* env_set = nullptr;
  CLI::App* env_unset = nullptr;
  CLI::App* env_list = nullptr;
  bool secret = false;
  std::string key;
  std::string value;
};

void AddDeployCommands(CLI::App& app, DeployCommands& c);
// The exit code of whichever of these commands was parsed, or nullopt when none was.
std::optional<int> RunDeployCommands(const DeployCommands& c);

// `paddock up`'s controller: its own store under the state directory, the node's API as its ECS
// endpoint (the bootstrapped account's key), the in-process edge's API for readiness, and its API
// on 127.0.0.1 (an ephemeral port), published in the CLI's config file.
struct InProcessControllerOptions {
  std::string state_dir;
  std::string api_host = "127.0.0.1";
  uint16_t api_port = 0;
  std::string region = "us-east-1";
  aws::SigningCredentials credentials;
  std::string account;          // the credentials' account: its execution role is made there
  uint16_t edge_api_port = 0;   // 0: no edge (readiness is RUNNING tasks)
  uint16_t edge_web_port = 8000;
  std::vector<std::string> subnets;          // the account's default VPC's
  std::string vpc_id;                        // that VPC: its Cloud Map namespace (D10) is made there
  std::vector<std::string> security_groups;
  bool publish = true;          // write the CLI's config file
  // D8: the identity sidecar's image, imported into the node's store (IdentityAgentRootfs);
  // empty: identity off. Tasks reach the exchange through the metadata endpoint's door
  // (InProcessController::Door), which is also the issuer's stable URL.
  std::string identity_agent_image;
  // After each busy tick (ControllerOptions::ticked): the node's console change feed.
  std::function<void()> ticked = nullptr;
};

// D8 under `paddock up`: the identity sidecar image's reference, and its one-layer rootfs made
// under `dir` (emptied first): this host's static busybox with the applets the agent runs, and
// the agent's program (deploy/identity.h kIdentityAgentScript) at kIdentityAgentPath.
// FailedPrecondition without a static busybox at /bin/busybox.
inline constexpr std::string_view kIdentityAgentImage = "paddock/identity-agent:1";
Status WriteIdentityAgentRootfs(const std::string& dir);

class InProcessController {
 public:
  static StatusOr<std::unique_ptr<InProcessController>> Start(const InProcessControllerOptions& options);
  ~InProcessController();
  const std::string& url() const;
  // The metadata endpoint's door to this controller (MetadataService::SetControllerDoor): its
  // workload identity endpoints only, as the controller's API answers them.
  http::Response Door(const http::Request& request);
  // The controller's whole API (deploy/api.h) called as its own client: `request` with its token.
  // The console's deploy views (console/console_service.h).
  http::Response CallApi(http::Request request);

 private:
  class Impl;
  explicit InProcessController(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace paddock::cli
