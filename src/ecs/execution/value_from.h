// ecs/execution/value_from: what a container definition's `secrets[].valueFrom` names, and the
// texts ECS puts in a task's stoppedReason when it cannot fetch one (issue 12 §3). Pure: no store,
// no IAM; the resolver that reads the values as the task's execution role builds on it.
//
//   ASSIGN_OR_RETURN(SecretRef ref, ParseValueFrom("arn:aws:secretsmanager:us-east-1:123456789012:"
//                                                  "secret:db-AbCdEf:password::", task_scope));
//   // ref.source == Source::kSecretsManager, ref.secret_id == "arn:…:secret:db-AbCdEf",
//   // ref.json_key == "password"
//
// The forms (ECS developer guide, "Pass sensitive data to an Amazon ECS container"):
// - a Secrets Manager secret: its full or partial ARN, optionally followed by
//   `:json-key:version-stage:version-id` (each part may be empty);
// - an SSM parameter: its ARN (any region of the account), or its name, read in the task's region.
// As the ECS backend does, anything that is not a Secrets Manager ARN is an SSM parameter, named
// as written; a name SSM refuses is then a parameter ECS could not fetch ("invalid ssm parameters").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "common/ids.h"
#include "common/status.h"

namespace paddock::ecs::execution {

enum class Source { kSsmParameter, kSecretsManager };

struct SecretRef {
  Source source = Source::kSsmParameter;
  Scope scope;  // where the value lives: the ARN's account and region, else the task's
  // kSsmParameter: the parameter's name ("/app/db" or "db"); the ARN form "parameter/app/db"
  // names "/app/db" (a name with a slash starts with one). kSecretsManager: empty.
  std::string name;
  // kSecretsManager: the secret as GetSecretValue's SecretId takes it (the full or partial ARN,
  // without the json-key part). kSsmParameter: empty.
  std::string secret_id;
  std::string json_key, version_stage, version_id;  // kSecretsManager only; empty when not given
};

// What `value_from` names for a task of `task`. InvalidArgument only for a Secrets Manager ARN
// with more than the three optional parts, with ECS's text.
StatusOr<SecretRef> ParseValueFrom(std::string_view value_from, const Scope& task);

// A JSON value as the ECS agent puts a json-key's value into the environment: Go's
// fmt.Sprintf("%v") of what encoding/json decodes — strings as they are, numbers as float64
// ("42", "1.5", "1e+06", "1.2345678e+07"), true/false, "<nil>" for null, "[a b]" for arrays and
// "map[k:v k2:v2]" (keys sorted) for objects.
std::string GoValueText(const boost::json::value& v);

// What a container definition's `repositoryCredentials.credentialsParameter` names: a Secrets
// Manager secret by its full or partial ARN (of any region of an account), or by its name, read in
// the task's region (ECS: "either the full ARN or the name of the secret"). The answer has
// source kSecretsManager and secret_id as GetSecretValue's SecretId takes it (as written).
SecretRef ParseCredentialsParameter(std::string_view credentials_parameter, const Scope& task);

// A private registry's credentials, as the ECS agent reads them from a secret's SecretString.
struct RegistryCredentials {
  std::string username;
  std::string password;
};

// The registry credentials in `secret_string`, as the ECS agent's asm.go decodes them with
// encoding/json (keys matched without regard to case, others ignored): a JSON object whose
// "username" and "password" are non-empty strings. InvalidArgument otherwise, with the ECS agent's
// text ("asm fetching authorization data: unable to unmarshal secret value, invalid schema",
// "asm fetching username: AuthorizationData is malformed, empty field", …).
StatusOr<RegistryCredentials> ParseRegistryCredentials(std::string_view secret_string);

// stoppedReason texts, each complete ("ResourceInitializationError: unable to pull secrets or
// registry auth: execution resource retrieval failed: …"), in the Fargate platform's words
// (docs/contracts/task.md, "Secrets"). `request_id`: a UUID, as AWS's service errors carry.
std::string SsmParametersMissing(const std::vector<std::string>& names);
std::string SsmDenied(std::string_view denial_message, std::string_view request_id);
std::string SecretNotFound(std::string_view secret_id);
std::string SecretDenied(std::string_view secret_id, std::string_view denial_message, std::string_view request_id);
std::string SecretJsonKeyMissing(std::string_view json_key);
// A secret read failed for another reason AWS names with a code and a message (a version or
// stage that does not exist, a secret marked for deletion).
std::string SecretReadFailed(std::string_view secret_id, std::string_view code, std::string_view message,
                             std::string_view request_id);
// The registry credentials of a container's repositoryCredentials could not be had:
// "…: unable to get registry auth from asm: service call has been retried 1 time(s): <why>", where
// <why> is a read's failure (RegistryAuthReadFailed) or ParseRegistryCredentials's text.
std::string RegistryAuthFailed(std::string_view why);
// The read of the secret `secret_id` failed as AWS words it (code, message; `request_id` empty:
// no status line, as ResourceNotFoundException reads everywhere).
std::string RegistryAuthReadFailed(std::string_view secret_id, std::string_view code, std::string_view message,
                                   std::string_view request_id);

}  // namespace paddock::ecs::execution
