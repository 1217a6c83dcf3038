// `paddock agent`: a node agent in its own process (or on its own host) that registers as an EC2
// container instance of a Paddock server and runs the tasks placed on it, over the Paddock agent
// protocol (docs/agent-protocol.md).
//
//   paddock agent --endpoint http://10.0.0.1:4566 --cluster prod [--state-dir ./.paddock-agent]
//                 [--credentials FILE] [--profile paddock] [--region us-east-1] [--allow-host-access]
//
// --endpoint repeated names several servers of one store (issue 16 §2): the agent talks to the
// first, and each of its connections turns to the next in order when a call fails in transport
// (aws/json_client.h, alternates), so a dead server costs the agent a retry, not its host.
//
// --overlay-address ADDR|auto joins the hosts' VXLAN overlay (issue 16 §3; docs/scaling.md, "Many
// hosts"): the instance's awsvpc tasks reach their VPC's tasks on other hosts, and theirs reach
// them, by their VPC addresses; ADDR is this host's address on the network the hosts share ("auto":
// the source address of its default route).
//
// --allow-host-access lets the instance's tasks have host-level grants (host paths, added
// capabilities, devices, privileged, host pid/ipc/network namespaces; ecs/taskdef/host_grants.h):
// it advertises the attributes placement requires for them, and its agent runs them. Off by
// default: such tasks are refused by placement (ATTRIBUTE) and, should one reach it, by the agent.
//
// Its state directory holds its own store (image names, like a server's: `paddock image ...
// --state-dir DIR` manages its images), images, container state, logs, task files and
// instance.json (the cluster and containerInstanceArn it registered as, so a restarted agent
// re-registers as the same instance). Container ids, cgroups and network namespaces carry names
// of their own ("pda-" namespaces, an instance tag from the state directory), so an agent never
// touches the tasks of a server's in-process agent on the same host.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace paddock::cli {

struct AgentCommand {
  CLI::App* cmd = nullptr;
  std::vector<std::string> endpoints;  // --endpoint, repeatable: the first, then the others in turn
  std::string cluster = "default";
  std::string state_dir = "./.paddock-agent";
  std::string credentials_file;  // default: $AWS_SHARED_CREDENTIALS_FILE, then ~/.aws/credentials
  std::string profile = "paddock";
  std::string region = "us-east-1";
  int64_t cpu = 0;     // 0: cores x 1024
  int64_t memory = 0;  // 0: MemTotal minus the reserve
  int poll_wait_seconds = 20;
  bool allow_host_access = false;
  uint64_t pids_per_task = 4096;  // agent::kDefaultPidsPerTask; 0: no bound
  int64_t pids_per_node = -1;     // -1: runtime::DefaultNodePidsMax(); 0: no bound
  uint32_t flows_per_task = 4096;        // agent/net FlowLimits; 0: no bound
  uint32_t new_flows_per_second = 2000;  // agent/net FlowLimits; 0: no bound
  uint64_t max_unpacked_bytes = uint64_t{20} << 30;  // images::kDefaultMaxUnpackedBytes
  std::vector<std::string> local_registries;  // registries on this host's addresses tasks may pull from
  std::string overlay_address;  // issue 16 §3: "" no overlay; "auto" the host's primary address; or an IPv4
};

void AddAgentCommand(CLI::App& app, AgentCommand& c);
int RunAgentCommand(const AgentCommand& c);

}  // namespace paddock::cli
