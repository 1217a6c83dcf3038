#include "cli/execution_resources.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "ecs/execution/resolver.h"
#include "secretsmanager/errors.h"

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

// Secrets Manager's GetSecretValue, on the owner. Its refusals become AWS's code and message;
// anything else (the store) is an error the agent retries.
class OwnerSecrets final : public ecs::execution::SecretReader {
 public:
  explicit OwnerSecrets(secretsmanager::Secrets& secrets) : secrets_(secrets) {}
  StatusOr<std::string> FullArn(const Scope& scope, std::string_view secret_id) override {
    ASSIGN_OR_RETURN(std::optional<std::string> arn, secrets_.ArnOf(scope, secret_id));
    if (!arn) return NotFound("Secrets Manager can't find the specified secret.");
    return *arn;
  }
  StatusOr<Value> Read(const Scope& scope, std::string_view full_arn, std::string_view stage,
                       std::string_view version_id) override {
    secretsmanager::VersionSelector which;
    if (!version_id.empty()) which.version_id = std::string(version_id);
    if (!stage.empty()) which.stage = std::string(stage);
    StatusOr<secretsmanager::SecretVersion> v = secrets_.GetValue(scope, full_arn, which);
    if (!v.ok()) {
      using secretsmanager::Error;
      for (auto [e, code] : {std::pair{Error::kResourceNotFound, "ResourceNotFoundException"},
                             std::pair{Error::kInvalidRequest, "InvalidRequestException"},
                             std::pair{Error::kInvalidParameter, "InvalidParameterException"},
                             std::pair{Error::kValidation, "ValidationException"},
                             std::pair{Error::kDecryptionFailure, "DecryptionFailure"}})
        if (IsError(v.status(), e)) return Value{std::nullopt, code, std::string(v.status().message())};
      return v.status();
    }
    // The ECS agent puts SecretString values into the environment; a binary one has none.
    if (v->value.kind != secretsmanager::SecretValue::Kind::kString)
      return Value{std::nullopt, "InvalidParameterException",
                   "The secret's value is binary (SecretBinary): only a SecretString can be an environment variable."};
    return Value{std::move(v->value.bytes), "", ""};
  }

 private:
  secretsmanager::Secrets& secrets_;
};

std::string StringMember(const std::string& json_text, std::string_view key) {
  boost::system::error_code ec;
  const json::value v = json::parse(json_text, ec);
  const json::value* m = !ec && v.is_object() ? v.get_object().if_contains(key) : nullptr;
  return m != nullptr && m->is_string() ? std::string(m->get_string()) : std::string();
}

}  // namespace

Principal ExecutionRolePrincipal(const Scope& scope, const std::string& role_arn, std::string_view task_id,
                                 sts::RoleDirectory* roles) {
  Principal p;
  p.kind = PrincipalKind::kAssumedRole;
  p.account = scope.account;
  p.role_arn = role_arn;
  p.session_name = std::string(task_id);
  p.arn = ecs::execution::Resolver::ExecutionPrincipalArn(scope.account, role_arn, task_id);
  if (roles != nullptr) {
    StatusOr<std::optional<sts::AssumableRole>> role = roles->FindRole(scope.account, role_arn);
    if (role.ok() && role->has_value()) p.user_id = fmt::format("{}:{}", (*role)->role_id, task_id);
  }
  return p;
}

agent::ExecutionResourcesProvider MakeExecutionResourcesProvider(ssm::Parameters& parameters,
                                                                 secretsmanager::Secrets& secrets,
                                                                 aws::Authorizer* authorizer, const Clock& clock,
                                                                 sts::RoleDirectory* roles) {
  // Made in place: the resolver refers to the readers beside it.
  struct Parts {
    Parts(ssm::Parameters& p, secretsmanager::Secrets& s) : parameters(p), secrets(s) {}
    Parts(const Parts&) = delete;
    Parts& operator=(const Parts&) = delete;
    OwnerParameters parameters;
    OwnerSecrets secrets;
    ecs::execution::Resolver resolver{parameters, secrets};
  };
  auto parts = std::make_shared<Parts>(parameters, secrets);
  return [parts, authorizer, &clock, roles](const ecs::task::LaunchSpec& record) -> StatusOr<agent::protocol::ExecutionResources> {
    agent::protocol::ExecutionResources out;
    const std::string task_id = record.task_arn.substr(record.task_arn.rfind('/') + 1);
    boost::system::error_code ec;
    const json::value definition = json::parse(record.definition, ec);  // once: role and containers
    if (ec || !definition.is_object()) return out;
    const json::value* containers = definition.get_object().if_contains("containerDefinitions");
    if (containers == nullptr || !containers->is_array()) return out;
    // RunTask's overrides.executionRoleArn wins over the revision's, as for the task role.
    std::string role = StringMember(record.overrides, "executionRoleArn");
    if (const json::value* r = definition.get_object().if_contains("executionRoleArn");
        role.empty() && r != nullptr && r->is_string())
      role = std::string(r->get_string());
    if (role.empty()) {  // registration refuses secrets (and repositoryCredentials) without one; an outlier
      out.failure_reason =
          "ResourceInitializationError: unable to pull secrets or registry auth: the task has no execution role";
      return out;
    }
    aws::CallContext call;
    call.scope = record.scope;
    call.principal = ExecutionRolePrincipal(record.scope, role, task_id, authorizer != nullptr ? roles : nullptr);
    call.now = clock.Now();
    const ecs::execution::TaskIdentity task{record.scope, call.principal.arn};
    auto authorize = [&](std::string_view action, std::string_view resource) -> Status {
      if (authorizer == nullptr) return OkStatus();
      return authorizer->Authorize(call, aws::AuthRequest{std::string(action), std::string(resource), {}});
    };
    ASSIGN_OR_RETURN(ecs::execution::Resolution r, parts->resolver.Resolve(task, containers->get_array(), authorize));
    out.failure_reason = std::move(r.failure_reason);
    for (ecs::execution::ContainerSecrets& c : r.containers) {
      agent::protocol::ExecutionResources::Container got{std::move(c.container), {}, std::nullopt};
      for (ecs::execution::SecretEnv& e : c.env) got.secrets.push_back({std::move(e.name), std::move(e.value)});
      if (c.registry_auth)
        got.registry_auth = agent::protocol::RegistryAuth{std::move(c.registry_auth->username),
                                                          std::move(c.registry_auth->password)};
      out.containers.push_back(std::move(got));
    }
    return out;
  };
}

}  // namespace paddock::cli
