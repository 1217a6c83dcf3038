#include "agent/protocol/state_json.h"

#include <boost/json.hpp>

#include "common/json_fields.h"

namespace paddock::agent::protocol {
namespace json = boost::json;

using json_fields::OptStr;
using json_fields::Int;

json::object NetworkBindingJson(const NetworkBinding& b) {
  if (!b.container_port_range.empty())
    return json::object{{"bindIP", b.bind_ip},
                        {"protocol", b.protocol},
                        {"containerPortRange", b.container_port_range},
                        {"hostPortRange", b.host_port_range}};
  return json::object{
      {"bindIP", b.bind_ip}, {"containerPort", b.container_port}, {"hostPort", b.host_port}, {"protocol", b.protocol}};
}

json::object ContainerChangeJson(const ContainerStateChange& c) {
  json::object o{{"containerName", c.name}, {"status", c.last_status}};
  if (c.exit_code) o["exitCode"] = *c.exit_code;
  if (c.reason) o["reason"] = *c.reason;
  if (c.runtime_id) o["runtimeId"] = *c.runtime_id;
  if (c.health_status) o["healthStatus"] = *c.health_status;
  if (c.image_digest) o["imageDigest"] = *c.image_digest;
  if (c.network_bindings) {
    json::array bindings;
    for (const auto& b : *c.network_bindings) bindings.push_back(NetworkBindingJson(b));
    o["networkBindings"] = std::move(bindings);
  }
  return o;
}

ContainerStateChange ContainerChangeFromJson(const json::object& o) {
  ContainerStateChange c;
  c.name = OptStr(o, "containerName").value_or("");
  c.last_status = OptStr(o, "status").value_or("");
  c.exit_code = Int(o, "exitCode");
  c.reason = OptStr(o, "reason");
  c.runtime_id = OptStr(o, "runtimeId");
  c.health_status = OptStr(o, "healthStatus");
  c.image_digest = OptStr(o, "imageDigest");
  if (auto it = o.find("networkBindings"); it != o.end() && it->value().is_array()) {
    std::vector<NetworkBinding> bindings;
    for (const auto& v : it->value().get_array()) {
      if (!v.is_object()) continue;
      const json::object& b = v.get_object();
      NetworkBinding nb;
      if (auto ip = OptStr(b, "bindIP")) nb.bind_ip = *ip;
      nb.container_port = Int(b, "containerPort").value_or(0);
      nb.host_port = Int(b, "hostPort").value_or(0);
      if (auto p = OptStr(b, "protocol")) nb.protocol = *p;
      nb.container_port_range = OptStr(b, "containerPortRange").value_or("");
      nb.host_port_range = OptStr(b, "hostPortRange").value_or("");
      bindings.push_back(std::move(nb));
    }
    c.network_bindings = std::move(bindings);
  }
  return c;
}

}  // namespace paddock::agent::protocol
