#include "ecs/taskdef/port_mappings.h"

#include <fmt/format.h>

#include <charconv>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "common/json_fields.h"
#include "ecs/common/records.h"
#include "ecs/taskdef/value_ranges.h"

namespace paddock::ecs::taskdef {
namespace json = boost::json;
using json_fields::Int;
using json_fields::OptStr;
using json_fields::Str;

namespace {

// "first-last" as two decimal numbers; nullopt when it is not that form.
std::optional<std::pair<int64_t, int64_t>> SplitRange(std::string_view text) {
  size_t dash = text.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == text.size()) return std::nullopt;
  auto number = [](std::string_view part) -> std::optional<int64_t> {
    if (part.size() > 6) return std::nullopt;
    int64_t v = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (ec != std::errc() || end != part.data() + part.size()) return std::nullopt;
    return v;
  };
  std::optional<int64_t> first = number(text.substr(0, dash)), last = number(text.substr(dash + 1));
  if (!first || !last) return std::nullopt;
  return std::pair(*first, *last);
}

}  // namespace

Status CheckPortMappings(json::object& cd, std::string_view network_mode) {
  json::value* list = cd.if_contains("portMappings");
  if (list == nullptr || !list->is_array()) return OkStatus();
  const std::string cname = Str(cd, "name");
  const bool awsvpc = network_mode == "awsvpc";
  const bool bridge = network_mode.empty() || network_mode == "bridge";
  const bool host_port_is_container_port = awsvpc || network_mode == "host";

  // The container ports of the mappings so far, by protocol.
  struct PortsHeld {
    std::map<int64_t, int64_t> ranges;  // first -> last
    std::set<int64_t> singles;
  };
  std::map<std::string, PortsHeld> taken;
  size_t ranges = 0;
  for (json::value& m_value : list->as_array()) {
    json::object& m = m_value.as_object();
    const std::optional<int64_t> container_port = Int(m, "containerPort");
    const std::optional<int64_t> host_port = Int(m, "hostPort");
    const std::optional<std::string> range_text = OptStr(m, "containerPortRange");
    const std::string protocol = OptStr(m, "protocol").value_or("tcp");

    int64_t first = 0, last = 0;
    if (range_text) {
      if (container_port)
        return InvalidContainerSetting("containerPortRange", cname,
                       "A port mapping has either a 'containerPort' or a 'containerPortRange', not both.");
      if (!bridge && !awsvpc)
        return InvalidContainerSetting("containerPortRange", cname,
                       fmt::format("Port ranges are supported only in the bridge and awsvpc network modes, not "
                                   "networkMode={}.",
                                   network_mode));
      if (host_port && *host_port != 0)  // 0 is "not set", as for a single dynamic port
        return InvalidContainerSetting("hostPort", cname,
                       "A port mapping with a 'containerPortRange' takes no 'hostPort': the host port range is "
                       "assigned when the task starts.");
      std::optional<std::pair<int64_t, int64_t>> range = SplitRange(*range_text);
      if (!range)
        return InvalidContainerSetting("containerPortRange", cname,
                       fmt::format("'{}' is not a port range of the form first-last, for example 8000-8010.",
                                   *range_text));
      std::tie(first, last) = *range;
      if (first < 1 || last > 65535)
        return InvalidContainerSetting("containerPortRange", cname,
                       fmt::format("The ports of '{}' must be between 1 and 65535.", *range_text));
      if (first >= last)
        return InvalidContainerSetting("containerPortRange", cname,
                       fmt::format("The first port of '{}' must be less than the last.", *range_text));
      if (++ranges > kMaxPortRanges)
        return InvalidContainerSetting("containerPortRange", cname,
                       fmt::format("A container can have at most {} port ranges.", kMaxPortRanges));
    } else {
      if (!container_port)
        return InvalidContainerSetting("containerPort", cname,
                                       "A port mapping needs a 'containerPort' or a 'containerPortRange'.");
      if (*container_port < 1 || *container_port > 65535)
        return InvalidContainerSetting("containerPort", cname, "The value must be between 1 and 65535.");
      first = last = *container_port;
    }
    if (host_port && (*host_port < 0 || *host_port > 65535))
      return InvalidContainerSetting("hostPort", cname, "The value must be between 0 and 65535.");
    if (host_port_is_container_port && container_port) {
      if (host_port && *host_port != *container_port)
        return ClientError(fmt::format(
            "When networkMode={}, the host ports and container ports in port mappings must match.", network_mode));
      m["hostPort"] = *container_port;
    }

    // A range may share no port with another mapping of its protocol (ECS's rule for ranges; two
    // single mappings of one container port, to two host ports, stay allowed as before).
    PortsHeld& held = taken[protocol];
    std::optional<std::pair<int64_t, int64_t>> clash;
    // The range whose first port is the greatest at or below `last` is the only one that can
    // overlap [first, last] (the ranges held never overlap each other).
    if (auto it = held.ranges.upper_bound(last); it != held.ranges.begin() && std::prev(it)->second >= first)
      clash = *std::prev(it);
    if (auto it = held.singles.lower_bound(first); range_text && it != held.singles.end() && *it <= last)
      clash = std::pair(*it, *it);
    if (clash) {
      auto shown = [](int64_t a, int64_t b) { return a == b ? fmt::format("{}", a) : fmt::format("{}-{}", a, b); };
      return InvalidContainerSetting("portMappings", cname,
                     fmt::format("Container port {}/{} overlaps {}/{}: a port can be in only one port mapping.",
                                 shown(first, last), protocol, shown(clash->first, clash->second), protocol));
    }
    if (range_text)
      held.ranges.emplace(first, last);
    else
      held.singles.insert(first);
    if (m.find("protocol") == m.end()) m["protocol"] = "tcp";
  }
  return OkStatus();
}

}  // namespace paddock::ecs::taskdef
