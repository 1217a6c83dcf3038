// A real node serving on a loopback port of its own from a fresh temporary state directory, with
// its bootstrap account's signing key, and a container instance registered in it as `paddock
// agent` registers one: where the tests that drive a node's API front from outside the process
// start (remote_agent_test, edge_drain_test). The node stops and its directory goes with the object.
//
//   ServerConfig config;
//   config.agent_long_polls = 1;  // any setting but listen and state_dir, which are the node's own
//   auto node = testing::ServedNode::Start("paddock-remote", config);
//   ASSERT_TRUE(node.ok()) << node.status().ToString();
//   aws::JsonClient client((*node)->ClientOptions((*node)->key()));
//   auto instance = testing::RegisterInstance(client, "ec2");  // its ARN and its agent credential
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "agent/protocol/messages.h"
#include "agent/remote/registration.h"
#include "aws/json_client.h"
#include "aws/sigv4.h"
#include "cli/config.h"
#include "cli/node.h"
#include "common/status.h"

namespace paddock::cli::testing {

class ServedNode {
 public:
  // Opens and starts a node with `config`, its listen address replaced by 127.0.0.1:0 and its
  // state directory by one under a new temporary directory named "<prefix>-XXXXXX", then
  // bootstraps its account (Bootstrap, the user's AWS files untouched).
  static StatusOr<std::unique_ptr<ServedNode>> Start(std::string_view prefix, ServerConfig config = {}) {
    std::string tmpl = (std::filesystem::temp_directory_path() / fmt::format("{}-XXXXXX", prefix)).string();
    if (mkdtemp(tmpl.data()) == nullptr) return Internal(fmt::format("mkdtemp {} failed", tmpl));
    std::unique_ptr<ServedNode> served(new ServedNode(std::move(tmpl)));
    config.listen = "127.0.0.1:0";
    config.state_dir = served->dir_ + "/state";
    ASSIGN_OR_RETURN(served->node_, Node::Open(config));
    ASSIGN_OR_RETURN(served->port_, served->node_->Start());
    ASSIGN_OR_RETURN(BootstrapResult boot,
                     Bootstrap(*served->node_, config, fmt::format("http://127.0.0.1:{}", served->port_), false));
    ASSIGN_OR_RETURN(auto key, served->node_->accounts().FindActiveKey(AccessKeyId(boot.access_key_id)));
    if (!key.has_value()) return NotFound(fmt::format("the bootstrap key {} is not active", boot.access_key_id));
    served->key_ = {boot.access_key_id, key->secret};
    served->account_ = key->account.str();
    return served;
  }

  ~ServedNode() {
    if (node_) node_->Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  ServedNode(const ServedNode&) = delete;
  ServedNode& operator=(const ServedNode&) = delete;

  Node& node() { return *node_; }
  uint16_t port() const { return port_; }
  // The bootstrap account's access key, and the account's id.
  const aws::SigningCredentials& key() const { return key_; }
  const std::string& account() const { return account_; }
  // A JSON 1.1 client of this node's front signing with `as`.
  aws::JsonClientOptions ClientOptions(const aws::SigningCredentials& as) const {
    return {.host = "127.0.0.1", .port = port_, .credentials = as};
  }

 private:
  explicit ServedNode(std::string dir) : dir_(std::move(dir)) {}

  std::string dir_;
  std::unique_ptr<Node> node_;
  uint16_t port_ = 0;
  aws::SigningCredentials key_;
  std::string account_;
};

struct RegisteredInstance {
  std::string arn;
  aws::SigningCredentials credentials;  // the agent credential issued to it
};

// Registers a container instance in `cluster` as `paddock agent` does: RegisterAgent sent by
// `client` (an account's key), 2048 CPU units and MiB, port 22 reserved.
inline StatusOr<RegisteredInstance> RegisterInstance(aws::JsonClient& client, std::string_view cluster) {
  agent::remote::HostResources host{2048, 2048, ""};
  ASSIGN_OR_RETURN(boost::json::value answer,
                   client.Call(fmt::format("{}.RegisterAgent", agent::protocol::kAgentTargetPrefix),
                               agent::remote::RegistrationRequest(std::string(cluster), host, {"22"}, std::nullopt)));
  const boost::json::object& issued = answer.at("credentials").as_object();
  return RegisteredInstance{
      std::string(answer.at("containerInstance").at("containerInstanceArn").as_string()),
      {std::string(issued.at("accessKeyId").as_string()), std::string(issued.at("secretAccessKey").as_string())}};
}

// RegisterTaskDefinition's body for family "web": one busybox container of 64 MiB, bridge mode, EC2.
inline boost::json::object WebTaskDefinition() {
  return boost::json::parse(R"({"family": "web", "networkMode": "bridge", "requiresCompatibilities": ["EC2"],
                                "containerDefinitions": [{"name": "web", "image": "busybox", "memory": 64}]})")
      .as_object();
}

}  // namespace paddock::cli::testing
