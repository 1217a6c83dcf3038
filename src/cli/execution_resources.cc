#include "cli/execution_resources.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "ecs/execution/resolver.h"

namespace paddock::cli {
namespace {

namespace json = boost::json;

// SSM's GetParameters WithDecryption, on the owner.
class OwnerParameters final : public ecs::execution::ParameterReader {
 public:
  explicit OwnerParameters(ssm::Parameters& parameters) : parameters_(parameters) {}
  StatusOr<Values> Read(const Scope& scope, const std::vector<std::string>& names) override {
    ASSIGN_OR_RETURN(ssm::GetManyResult got, parameters_.GetMany(scope, names, ssm::Decryption::kYes));
    Values out;
    for (ssm::Parameter& p : got.found) out.found[p.name + p.selector] = std::move(p.value);
    out.missing = std::move(got.invalid);
    return out;
  }

 private:
  ssm::Parameters& parameters_;
};

// Until Secrets Manager is served: no secret exists.
class NoSecrets final : public ecs::execution::SecretReader {
 public:
  StatusOr<std::string> FullArn(const Scope&, std::string_view) override {
    return NotFound("Secrets Manager can't find the specified secret.");
  }
  StatusOr<Value> Read(const Scope&, std::string_view, std::string_view, std::string_view) override {
    return NotFound("Secrets Manager can't find the specified secret.");
  }
};

std::string StringMember(const std::string& json_text, std::string_view key) {
  boost::system::error_code ec;
  const json::value v = json::parse(json_text, ec);
  const json::value* m = !ec && v.is_object() ? v.get_object().if_contains(key) : nullptr;
  return m != nullptr && m->is_string() ? std::string(m->get_string()) : std::string();
}

}  // namespace

agent::ExecutionResourcesProvider MakeExecutionResourcesProvider(ssm::Parameters& parameters,
                                                                 aws::Authorizer* authorizer, const Clock& clock) {
  // Made in place: the resolver refers to the readers beside it.
  struct Parts {
    explicit Parts(ssm::Parameters& p) : parameters(p) {}
    Parts(const Parts&) = delete;
    Parts& operator=(const Parts&) = delete;
    OwnerParameters parameters;
    NoSecrets secrets;
    ecs::execution::Resolver resolver{parameters, secrets};
  };
  auto parts = std::make_shared<Parts>(parameters);
  return [parts, authorizer, &clock](const ecs::task::LaunchSpec& record) -> StatusOr<agent::protocol::ExecutionResources> {
    agent::protocol::ExecutionResources out;
    // RunTask's overrides.executionRoleArn wins over the revision's, as for the task role.
    std::string role = StringMember(record.overrides, "executionRoleArn");
    if (role.empty()) role = StringMember(record.definition, "executionRoleArn");
    const std::string task_id = record.task_arn.substr(record.task_arn.rfind('/') + 1);
    boost::system::error_code ec;
    const json::value definition = json::parse(record.definition, ec);
    const json::value* containers =
        !ec && definition.is_object() ? definition.get_object().if_contains("containerDefinitions") : nullptr;
    if (containers == nullptr || !containers->is_array()) return out;
    if (role.empty()) {  // registration refuses secrets without an execution role; a stored outlier
      out.failure_reason =
          "ResourceInitializationError: unable to pull secrets or registry auth: the task has no execution role";
      return out;
    }
    aws::CallContext call;
    call.scope = record.scope;
    call.principal.kind = aws::PrincipalKind::kAssumedRole;
    call.principal.account = record.scope.account;
    call.principal.role_arn = role;
    call.principal.session_name = task_id;
    call.principal.arn = ecs::execution::Resolver::ExecutionPrincipalArn(record.scope.account, role, task_id);
    call.now = clock.Now();
    const ecs::execution::TaskIdentity task{record.scope, call.principal.arn};
    auto authorize = [&](std::string_view action, std::string_view resource) -> Status {
      if (authorizer == nullptr) return OkStatus();
      return authorizer->Authorize(call, aws::AuthRequest{std::string(action), std::string(resource), {}});
    };
    ASSIGN_OR_RETURN(ecs::execution::Resolution r, parts->resolver.Resolve(task, containers->get_array(), authorize));
    out.failure_reason = std::move(r.failure_reason);
    for (ecs::execution::ContainerSecrets& c : r.containers) {
      agent::protocol::ExecutionResources::Container got{std::move(c.container), {}};
      for (ecs::execution::SecretEnv& e : c.env) got.secrets.push_back({std::move(e.name), std::move(e.value)});
      out.containers.push_back(std::move(got));
    }
    return out;
  };
}

}  // namespace paddock::cli
