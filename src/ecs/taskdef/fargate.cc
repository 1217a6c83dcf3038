#include "ecs/taskdef/fargate.h"

#include <fmt/format.h>

#include <array>
#include <string_view>

#include "common/json_fields.h"
#include "ecs/common/records.h"
#include "ecs/taskdef/host_grants.h"

namespace paddock::ecs::taskdef {
namespace json = boost::json;
using json_fields::Bool;
using json_fields::Obj;
using json_fields::Objects;
using json_fields::Str;
using json_fields::Strings;

namespace {

// AWS's wording for most of Fargate's refusals.
Status NotSupported(std::string_view what) {
  return ClientError(fmt::format("Fargate compatible task definitions do not support {}", what));
}

// The sysctls a Fargate task may set: the namespaced ones (SystemControl's documentation).
bool IsNamespacedSysctl(std::string_view name) {
  static constexpr std::array<std::string_view, 8> kIpc = {"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni",
                                                          "kernel.sem",    "kernel.shmall", "kernel.shmmax",
                                                          "kernel.shmmni", "kernel.shm_rmid_forced"};
  if (name.starts_with("net.") || name.starts_with("fs.mqueue.")) return true;
  for (std::string_view k : kIpc)
    if (name == k) return true;
  return false;
}

bool NonEmpty(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return false;
  if (v->is_array()) return !v->get_array().empty();
  if (v->is_object()) return !v->get_object().empty();
  return true;
}

}  // namespace

Status CheckFargateOptions(const json::object& definition) {
  for (const json::object* v : Objects(definition, "volumes")) {
    if (!Str(Obj(*v, "host"), "sourcePath").empty()) return NotSupported("sourcePath");
    if (v->contains("dockerVolumeConfiguration")) return NotSupported("dockerVolumeConfiguration");
  }
  if (NonEmpty(definition, "placementConstraints")) return NotSupported("placementConstraints");
  for (const json::object* c : Objects(definition, "containerDefinitions")) {
    if (Bool(*c, "privileged").value_or(false))
      return ClientError("Fargate requires that the 'privileged' setting be 'false'");
    const json::object& lp = Obj(*c, "linuxParameters");
    for (const std::string& cap : Strings(Obj(lp, "capabilities"), "add"))
      if (BareCapability(cap) != "SYS_PTRACE") return ClientError(fmt::format("{} is not allowed on Fargate.", cap));
    if (NonEmpty(lp, "devices")) return NotSupported("devices");
    if (NonEmpty(lp, "sharedMemorySize")) return NotSupported("sharedMemorySize");
    if (NonEmpty(lp, "maxSwap")) return NotSupported("maxSwap");
    if (NonEmpty(lp, "swappiness")) return NotSupported("swappiness");
    if (NonEmpty(*c, "dockerSecurityOptions")) return NotSupported("dockerSecurityOptions");
    if (NonEmpty(*c, "dnsSearchDomains")) return NotSupported("dnsSearchDomains");
    for (const json::object* r : Objects(*c, "resourceRequirements"))
      if (Str(*r, "type") == "GPU")
        return ClientError("Tasks using the Fargate launch type do not support GPU resource requirements");
    // Fargate tasks each have a kernel of their own; here every task shares the node's, and a
    // real-time thread is bounded by no task's CPU share (host_grants.h).
    if (RealtimePriorityOf(*c) > 0)
      return NotSupported("a ulimit rtprio above 0 (real-time scheduling)");
    for (const json::object* s : Objects(*c, "systemControls")) {
      if (!IsNamespacedSysctl(Str(*s, "namespace")))
        return NotSupported(fmt::format("the systemControls namespace '{}' (only net.*, fs.mqueue.* and the IPC "
                                        "kernel.* parameters are namespaced)",
                                        Str(*s, "namespace")));
    }
  }
  return OkStatus();
}

}  // namespace paddock::ecs::taskdef
