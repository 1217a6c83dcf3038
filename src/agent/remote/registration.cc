#include "agent/remote/registration.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include "ecs/taskdef/host_grants.h"

namespace paddock::agent::remote {
namespace json = boost::json;

namespace {
// The source address the kernel picks for a packet to the internet: connecting a UDP socket only
// looks the route up (nothing is sent). 192.0.2.1 is TEST-NET-1, never a real peer.
std::string DefaultRouteAddress() {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(9);
  inet_pton(AF_INET, "192.0.2.1", &peer.sin_addr);
  std::string out;
  sockaddr_in self{};
  socklen_t len = sizeof(self);
  if (connect(fd, reinterpret_cast<sockaddr*>(&peer), sizeof(peer)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len) == 0) {
    char text[INET_ADDRSTRLEN] = {};
    if (inet_ntop(AF_INET, &self.sin_addr, text, sizeof(text)) != nullptr && self.sin_addr.s_addr != 0) out = text;
  }
  close(fd);
  return out;
}
}  // namespace

HostResources DetectHost() {
  HostResources h;
  h.private_ip = DefaultRouteAddress();
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  h.cpu = (cores > 0 ? cores : 1) * 1024;
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemTotal:", 0) != 0) continue;
    std::istringstream fields(line.substr(9));
    int64_t kib = 0;
    fields >> kib;
    h.memory = std::max<int64_t>(0, kib / 1024 - kMemoryReserveMiB);
  }
  return h;
}

std::vector<std::string> AgentAttributeNames(HostAccess host_access) {
  std::vector<std::string> out;
  for (int minor = 17; minor <= 44; ++minor)
    out.push_back(fmt::format("com.amazonaws.ecs.capability.docker-remote-api.1.{}", minor));
  // Task roles: the agent serves their credentials (agent/metadata, /v2/credentials), host-mode
  // tasks' too, as the ECS agent with ECS_ENABLE_TASK_IAM_ROLE(_NETWORK_HOST).
  out.emplace_back("com.amazonaws.ecs.capability.task-iam-role");
  out.emplace_back("com.amazonaws.ecs.capability.task-iam-role-network-host");
  // Logs: the local log is json-file's place (paddock logs); awslogs ships through the control
  // plane as the execution role (agent/awslogs.h, Control::ShipLogs).
  out.emplace_back("com.amazonaws.ecs.capability.logging-driver.json-file");
  out.emplace_back("com.amazonaws.ecs.capability.logging-driver.awslogs");
  out.emplace_back("ecs.capability.execution-role-awslogs");
  // Secrets and private registry credentials, fetched by the control plane as the execution role
  // (Control::PrepareExecutionResources).
  out.emplace_back("ecs.capability.secrets.ssm.environment-variables");
  out.emplace_back("ecs.capability.secrets.asm.environment-variables");
  out.emplace_back("com.amazonaws.ecs.capability.private-registry-authentication.secretsmanager");
  if (host_access == HostAccess::kAllowed) {  // as the ECS agent with ECS_DISABLE_PRIVILEGED=false
    out.emplace_back(ecs::taskdef::kHostAccessAttribute);
    out.emplace_back(ecs::taskdef::kPrivilegedAttribute);
  }
  return out;
}

json::object RegistrationRequest(const std::string& cluster, const HostResources& host,
                                 const std::vector<std::string>& ports,
                                 const std::optional<std::string>& container_instance_arn, HostAccess host_access) {
  json::array port_set;
  for (const auto& p : ports) port_set.push_back(json::string(p));
  json::array resources{
      json::object{{"name", "CPU"}, {"type", "INTEGER"}, {"integerValue", host.cpu}},
      json::object{{"name", "MEMORY"}, {"type", "INTEGER"}, {"integerValue", host.memory}},
      json::object{{"name", "PORTS"}, {"type", "STRINGSET"}, {"stringSetValue", std::move(port_set)}},
      json::object{{"name", "PORTS_UDP"}, {"type", "STRINGSET"}, {"stringSetValue", json::array{}}},
  };
  json::array attributes;
  for (const auto& name : AgentAttributeNames(host_access)) attributes.push_back(json::object{{"name", name}});
  json::object out{{"cluster", cluster},
                   {"totalResources", std::move(resources)},
                   {"versionInfo", json::object{{"agentVersion", std::string(kAgentVersion)}, {"agentHash", "paddock"}}},
                   {"attributes", std::move(attributes)}};
  if (!host.private_ip.empty())
    out["instanceIdentityDocument"] = json::serialize(json::object{{"privateIp", host.private_ip}});
  if (!host.overlay_address.empty()) out["overlayAddress"] = host.overlay_address;
  if (container_instance_arn) out["containerInstanceArn"] = *container_instance_arn;
  return out;
}

}  // namespace paddock::agent::remote
