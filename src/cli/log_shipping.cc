#include "cli/log_shipping.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "agent/awslogs.h"
#include "cli/execution_resources.h"
#include "ecs/execution/resolver.h"
#include "logs/errors.h"

namespace paddock::cli {
namespace {

namespace json = boost::json;

std::string StringMember(const std::string& json_text, std::string_view key) {
  boost::system::error_code ec;
  const json::value v = json::parse(json_text, ec);
  const json::value* m = !ec && v.is_object() ? v.get_object().if_contains(key) : nullptr;
  return m != nullptr && m->is_string() ? std::string(m->get_string()) : std::string();
}

// The answer to a failed call: CloudWatch's refusal, as ECS words it after `what` ("failed to create
// Cloudwatch log stream: ResourceNotFoundException: The specified log group does not exist."); a
// failure that is not a refusal (the store) is returned as it is, and the agent tries again.
StatusOr<agent::protocol::LogsAnswer> Refused(const Status& s, std::string_view what) {
  using logs::Error;
  for (auto [e, code] : {std::pair{Error::kResourceNotFound, "ResourceNotFoundException"},
                         std::pair{Error::kInvalidParameter, "InvalidParameterException"},
                         std::pair{Error::kResourceAlreadyExists, "ResourceAlreadyExistsException"}})
    if (IsError(s, e)) return agent::protocol::LogsAnswer{fmt::format("{}: {}: {}", what, code, s.message())};
  if (s.code() == StatusCode::kPermissionDenied)
    return agent::protocol::LogsAnswer{fmt::format("{}: AccessDeniedException: {}", what, s.message())};
  return s;
}

// Whether `stream` is the stream of container number `index` of task `task_id` when its
// configuration names no prefix: the container's runtime id, pdk-<instance>-<task id>-<index>.
bool IsRuntimeIdOf(std::string_view stream, std::string_view task_id, size_t index) {
  const std::string tail = fmt::format("-{}-{}", task_id, index);
  if (!stream.starts_with("pdk-") || !stream.ends_with(tail)) return false;
  const std::string_view instance = stream.substr(4, stream.size() - 4 - tail.size());
  if (instance.empty() || instance.size() > 8) return false;
  for (char c : instance)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  return true;
}

}  // namespace

agent::LogsProvider MakeLogsProvider(logs::LogGroups& groups, aws::Authorizer* authorizer, const Clock& clock,
                                     sts::RoleDirectory* roles, DefaultLogDriverMode default_mode) {
  return [&groups, authorizer, &clock, roles, default_mode = std::move(default_mode)](const ecs::task::LaunchSpec& record,
                                       const agent::protocol::LogsCall& call) -> StatusOr<agent::protocol::LogsAnswer> {
    agent::protocol::LogsAnswer out;
    const std::string task_id = record.task_arn.substr(record.task_arn.rfind('/') + 1);
    boost::system::error_code ec;
    const json::value definition = json::parse(record.definition, ec);
    const json::object* d = !ec ? definition.if_object() : nullptr;
    const json::value* containers = d != nullptr ? d->if_contains("containerDefinitions") : nullptr;
    std::optional<agent::awslogs::Config> config;
    size_t index = 0;
    bool found = false;
    if (containers != nullptr && containers->is_array()) {
      for (const json::value& c : containers->get_array()) {
        if (!c.is_object()) continue;
        const json::value* name = c.get_object().if_contains("name");
        if (name != nullptr && name->is_string() && name->get_string() == call.container) {
          ASSIGN_OR_RETURN(config, agent::awslogs::ConfigOf(c.get_object()));
          found = true;
          break;
        }
        ++index;
      }
    }
    // The agent may only write where the task's definition says, for a container it has.
    if (!found || !config) return PermissionDenied("The task's container has no awslogs log configuration.");
    const bool stream_ok = config->stream_prefix.empty()
                               ? IsRuntimeIdOf(call.stream, task_id, index)
                               : call.stream == agent::awslogs::StreamName(*config, call.container, task_id, "");
    if (!stream_ok) return PermissionDenied("The log stream is not the task's container's.");
    if (!config->region.empty() && config->region != record.scope.region.str()) {
      out.failure = fmt::format("awslogs-region '{}' is not this node's region '{}'", config->region,
                                record.scope.region.str());
      return out;
    }

    // RunTask's overrides.executionRoleArn wins over the revision's, as for the secrets.
    std::string role = StringMember(record.overrides, "executionRoleArn");
    if (role.empty()) role = StringMember(record.definition, "executionRoleArn");
    aws::CallContext ctx;
    ctx.scope = record.scope;
    ctx.principal.account = record.scope.account;
    if (role.empty()) {
      ctx.principal.kind = aws::PrincipalKind::kRoot;  // the account writes into its own logs
    } else {
      ctx.principal = ExecutionRolePrincipal(record.scope, role, task_id, authorizer != nullptr ? roles : nullptr);
    }
    ctx.now = clock.Now();
    auto authorize = [&](std::string_view action, std::string resource) -> Status {
      if (authorizer == nullptr || role.empty()) return OkStatus();
      return authorizer->Authorize(ctx, aws::AuthRequest{std::string(action), std::move(resource), {}});
    };
    const std::string& group = config->group;

    if (call.create_stream) {
      if (config->create_group) {
        Status s = authorize("logs:CreateLogGroup", logs::LogGroups::StreamArn(record.scope, group, ""));
        if (s.ok()) s = groups.CreateGroup(record.scope, logs::GroupSpec{.name = group});
        if (!s.ok() && !IsError(s, logs::Error::kResourceAlreadyExists))
          return Refused(s, "failed to create Cloudwatch log group");
      }
      Status s = authorize("logs:CreateLogStream", logs::LogGroups::StreamArn(record.scope, group, call.stream));
      if (s.ok()) s = groups.CreateStream(record.scope, group, call.stream);
      if (!s.ok() && !IsError(s, logs::Error::kResourceAlreadyExists))
        return Refused(s, "failed to create Cloudwatch log stream");
      if (default_mode) out.default_mode = default_mode(record.scope);
      return out;
    }

    Status s = authorize("logs:PutLogEvents", logs::LogGroups::StreamArn(record.scope, group, call.stream));
    if (s.ok()) {
      std::vector<logs::InputEvent> events;
      events.reserve(call.events.size());
      for (const agent::protocol::LogEvent& e : call.events) events.push_back({e.timestamp_ms, e.message});
      s = groups.Put(record.scope, group, call.stream, events).status();
    }
    if (!s.ok()) return Refused(s, "failed to put log events");
    return out;
  };
}

}  // namespace paddock::cli
