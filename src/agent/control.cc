#include "agent/control.h"

#include <fmt/format.h>

#include <algorithm>

#include <boost/json/parse.hpp>

namespace paddock::agent {

StatusOr<vpc::VpcPolicy> Control::NetworkPolicy(std::string_view agent_id, const Scope&) {
  return Unavailable(fmt::format("no network policies for agent {} here", agent_id));
}

StatusOr<metadata::RoleCredentials> Control::TaskRoleCredentials(std::string_view agent_id,
                                                                 const protocol::LaunchSpec&) {
  return Unavailable(fmt::format("no task role credentials for agent {} here", agent_id));
}

StatusOr<protocol::ExecutionResources> Control::PrepareExecutionResources(std::string_view agent_id,
                                                                         const protocol::LaunchSpec&) {
  return FailedPrecondition(fmt::format("this control plane fetches no execution resources (agent {})", agent_id));
}

StatusOr<protocol::LogsAnswer> Control::ShipLogs(std::string_view agent_id, const protocol::LaunchSpec&,
                                                 const protocol::LogsCall&) {
  return FailedPrecondition(fmt::format("this control plane ships no logs (agent {})", agent_id));
}

StatusOr<protocol::DrainAnswer> Control::AwaitDrain(std::string_view, const protocol::LaunchSpec&,
                                                   std::chrono::milliseconds, std::stop_token) {
  return protocol::DrainAnswer{};  // no holds here: nothing to wait for
}

bool NeedsExecutionResources(const protocol::LaunchSpec& spec) {
  namespace json = boost::json;
  boost::system::error_code ec;
  const json::value def = json::parse(spec.definition, ec);
  const json::object* o = !ec ? def.if_object() : nullptr;
  const json::value* containers = o != nullptr ? o->if_contains("containerDefinitions") : nullptr;
  if (containers == nullptr || !containers->is_array()) return false;
  for (const json::value& c : containers->get_array()) {
    const json::value* secrets = c.is_object() ? c.get_object().if_contains("secrets") : nullptr;
    if (secrets != nullptr && secrets->is_array() && !secrets->get_array().empty()) return true;
    if (c.is_object() && c.get_object().contains("repositoryCredentials")) return true;
  }
  return false;
}

namespace {

std::string StringMember(std::string_view json_text, std::string_view key) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(json_text, ec);
  if (ec || !v.is_object()) return {};
  const boost::json::value* m = v.get_object().if_contains(key);
  return m != nullptr && m->is_string() ? std::string(m->get_string()) : std::string();
}

}  // namespace

std::string TaskRoleArnOf(const protocol::LaunchSpec& spec) {
  // RunTask's overrides.taskRoleArn wins over the revision's, as on ECS.
  if (std::string o = StringMember(spec.overrides, "taskRoleArn"); !o.empty()) return o;
  return StringMember(spec.definition, "taskRoleArn");
}

std::string AssignmentsVersion(const std::vector<protocol::LaunchSpec>& specs) {
  std::vector<std::string> items;
  items.reserve(specs.size());
  for (const auto& s : specs) items.push_back(s.task_arn + "\n" + s.desired_status + "\n");
  std::sort(items.begin(), items.end());
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64
  for (const auto& item : items)
    for (unsigned char c : item) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{}-{:016x}", specs.size(), h);
}

}  // namespace paddock::agent
