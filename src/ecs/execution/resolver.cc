#include "ecs/execution/resolver.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "common/encoding.h"
#include "iam/policy/evaluator.h"

namespace paddock::ecs::execution {
namespace {

namespace json = boost::json;

constexpr size_t kParametersPerCall = 10;  // GetParameters' limit, the ECS agent's batch

std::string_view Str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

// arn:aws:ssm:<region>:<account>:parameter/<name without its leading slash>: what IAM sees.
std::string ParameterArn(const Scope& scope, std::string_view name) {
  if (name.starts_with('/')) name.remove_prefix(1);
  return fmt::format("arn:aws:ssm:{}:{}:parameter/{}", scope.region.str(), scope.account.str(), name);
}

// AWS's denial of a read of another account's resource that no resource-based policy admits.
std::string CrossAccountDenial(const TaskIdentity& task, std::string_view action, std::string_view resource) {
  return iam::policy::DenialMessage(task.principal_arn, action, resource, iam::policy::Decision::kImplicitDeny,
                                    iam::policy::PolicyType::kResource);
}

// One secret a container asks for.
struct Wanted {
  size_t container;  // index into the answer's containers
  std::string env_name;
  std::string value_from;
  SecretRef ref;
};

}  // namespace

std::string Resolver::ExecutionPrincipalArn(const AccountId& account, std::string_view role_arn,
                                            std::string_view task_id) {
  const size_t slash = role_arn.rfind('/');
  const std::string_view role = slash == std::string_view::npos ? role_arn : role_arn.substr(slash + 1);
  return fmt::format("arn:aws:sts::{}:assumed-role/{}/{}", account.str(), role, task_id);
}

StatusOr<Resolution> Resolver::Resolve(const TaskIdentity& task, const json::array& container_definitions,
                                       const Authorize& authorize) {
  Resolution out;
  std::vector<Wanted> wanted;
  for (const json::value& c : container_definitions) {
    if (!c.is_object()) continue;
    const json::value* secrets = c.get_object().if_contains("secrets");
    if (secrets == nullptr || !secrets->is_array() || secrets->get_array().empty()) continue;
    out.containers.push_back(ContainerSecrets{std::string(Str(c.get_object(), "name")), {}, std::nullopt});
    for (const json::value& s : secrets->get_array()) {
      if (!s.is_object()) continue;
      Wanted w{out.containers.size() - 1, std::string(Str(s.get_object(), "name")),
               std::string(Str(s.get_object(), "valueFrom")), {}};
      StatusOr<SecretRef> ref = ParseValueFrom(w.value_from, task.scope);
      if (!ref.ok()) {
        out.failure_reason = SecretReadFailed(w.value_from, "InvalidParameterException", ref.status().message(), "");
        return out;
      }
      w.ref = std::move(ref).value();
      wanted.push_back(std::move(w));
    }
  }
  std::vector<std::optional<std::string>> values(wanted.size());

  // SSM: per (account, region), in order of first appearance, 10 distinct names a call.
  std::vector<Scope> scopes;
  for (const Wanted& w : wanted)
    if (w.ref.source == Source::kSsmParameter && std::find(scopes.begin(), scopes.end(), w.ref.scope) == scopes.end())
      scopes.push_back(w.ref.scope);
  for (const Scope& scope : scopes) {
    std::vector<std::string> names;
    for (const Wanted& w : wanted)
      if (w.ref.source == Source::kSsmParameter && w.ref.scope == scope &&
          std::find(names.begin(), names.end(), w.ref.name) == names.end())
        names.push_back(w.ref.name);
    if (scope.account != task.scope.account) {
      out.failure_reason = SsmDenied(CrossAccountDenial(task, "ssm:GetParameters", ParameterArn(scope, names[0])),
                                     RandomUuid());
      return out;
    }
    std::map<std::string, std::string> found;
    for (size_t start = 0; start < names.size(); start += kParametersPerCall) {
      const std::vector<std::string> batch(names.begin() + static_cast<std::ptrdiff_t>(start),
                                           names.begin() + static_cast<std::ptrdiff_t>(
                                                               std::min(names.size(), start + kParametersPerCall)));
      for (const std::string& name : batch) {
        Status allowed = authorize("ssm:GetParameters", ParameterArn(scope, name));
        if (allowed.code() == StatusCode::kPermissionDenied) {
          out.failure_reason = SsmDenied(allowed.message(), RandomUuid());
          return out;
        }
        RETURN_IF_ERROR(allowed);
      }
      ASSIGN_OR_RETURN(ParameterReader::Values got, parameters_.Read(scope, batch));
      if (!got.missing.empty()) {
        out.failure_reason = SsmParametersMissing(got.missing);
        return out;
      }
      found.merge(got.found);
    }
    for (size_t i = 0; i < wanted.size(); ++i) {
      const Wanted& w = wanted[i];
      if (w.ref.source != Source::kSsmParameter || w.ref.scope != scope) continue;
      auto it = found.find(w.ref.name);
      if (it == found.end()) {  // a reader that answered a name in neither list
        out.failure_reason = SsmParametersMissing({w.ref.name});
        return out;
      }
      values[i] = it->second;
    }
  }

  // Secrets Manager: each secret once (by secret, stage and version), in the definitions' order.
  std::map<std::tuple<std::string, std::string, std::string>, std::string> read;
  for (size_t i = 0; i < wanted.size(); ++i) {
    const Wanted& w = wanted[i];
    if (w.ref.source != Source::kSecretsManager) continue;
    const std::string& id = w.ref.secret_id;
    const auto key = std::make_tuple(id, w.ref.version_stage, w.ref.version_id);
    auto cached = read.find(key);
    if (cached == read.end()) {
      ASSIGN_OR_RETURN(SecretRead got, ReadSecret(task, w.ref, authorize));
      if (!got.value.text) {
        out.failure_reason = SecretReadFailed(id, got.value.error_code, got.value.error_message, got.request_id);
        return out;
      }
      cached = read.emplace(key, std::move(*got.value.text)).first;
    }
    if (w.ref.json_key.empty()) {
      values[i] = cached->second;
      continue;
    }
    // The ECS agent decodes the value as a JSON object and formats the key's value with %v; a
    // value that is not such an object has no key either.
    boost::system::error_code ec;
    const json::value doc = json::parse(cached->second, ec);
    const json::value* field = !ec && doc.is_object() ? doc.get_object().if_contains(w.ref.json_key) : nullptr;
    if (field == nullptr) {
      out.failure_reason = SecretJsonKeyMissing(w.ref.json_key);
      return out;
    }
    values[i] = GoValueText(*field);
  }

  for (size_t i = 0; i < wanted.size(); ++i)
    out.containers[wanted[i].container].env.push_back(SecretEnv{wanted[i].env_name, std::move(*values[i])});

  // Registry credentials (repositoryCredentials), each container's in the definitions' order.
  for (const json::value& c : container_definitions) {
    const json::object* credentials = nullptr;
    if (const json::value* v = c.is_object() ? c.get_object().if_contains("repositoryCredentials") : nullptr)
      credentials = v->if_object();
    if (credentials == nullptr) continue;
    const std::string name(Str(c.get_object(), "name"));
    const SecretRef ref = ParseCredentialsParameter(Str(*credentials, "credentialsParameter"), task.scope);
    ASSIGN_OR_RETURN(SecretRead got, ReadSecret(task, ref, authorize));
    if (!got.value.text) {
      out.failure_reason =
          RegistryAuthReadFailed(ref.secret_id, got.value.error_code, got.value.error_message, got.request_id);
      return out;
    }
    StatusOr<RegistryCredentials> parsed = ParseRegistryCredentials(*got.value.text);
    if (!parsed.ok()) {
      out.failure_reason = RegistryAuthFailed(parsed.status().message());
      return out;
    }
    auto mine = std::find_if(out.containers.begin(), out.containers.end(),
                             [&](const ContainerSecrets& s) { return s.container == name; });
    if (mine == out.containers.end()) mine = out.containers.insert(out.containers.end(), ContainerSecrets{name, {}, {}});
    mine->registry_auth = std::move(parsed).value();
  }
  return out;
}

StatusOr<Resolver::SecretRead> Resolver::ReadSecret(const TaskIdentity& task, const SecretRef& ref,
                                                    const Authorize& authorize) {
  const std::string& id = ref.secret_id;
  auto refused = [](std::string code, std::string message, std::string request_id) {
    return SecretRead{SecretReader::Value{std::nullopt, std::move(code), std::move(message)}, std::move(request_id)};
  };
  if (ref.scope.account != task.scope.account)
    return refused("AccessDeniedException", CrossAccountDenial(task, "secretsmanager:GetSecretValue", id),
                   RandomUuid());
  StatusOr<std::string> full = secrets_.FullArn(ref.scope, id);
  if (!full.ok() && full.status().code() != StatusCode::kNotFound) return full.status();
  // IAM decides on the secret's ARN; for a secret that does not exist, on the ARN as written, or
  // the name's (so a role that may not read it learns nothing of whether it exists).
  const std::string written = id.starts_with("arn:") ? id
                                                     : fmt::format("arn:aws:secretsmanager:{}:{}:secret:{}",
                                                                   ref.scope.region.str(), ref.scope.account.str(), id);
  Status allowed = authorize("secretsmanager:GetSecretValue", full.ok() ? *full : written);
  if (allowed.code() == StatusCode::kPermissionDenied)
    return refused("AccessDeniedException", std::string(allowed.message()), RandomUuid());
  RETURN_IF_ERROR(allowed);
  if (!full.ok()) return refused("ResourceNotFoundException", "Secrets Manager can't find the specified secret.", "");
  ASSIGN_OR_RETURN(SecretReader::Value v, secrets_.Read(ref.scope, *full, ref.version_stage, ref.version_id));
  std::string request_id = v.text ? std::string() : RandomUuid();
  return SecretRead{std::move(v), std::move(request_id)};
}

}  // namespace paddock::ecs::execution
