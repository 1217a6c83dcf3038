// ecs/execution/resolver: a task's secrets, read once at its start as its execution role
// (issue 12 §3). The values come from two seams the node fills from the owners
// (ssm::Parameters, secretsmanager::Secrets); each read is first asked of the same IAM
// authorizer the API front uses, for the execution role's session (`authorize`). A value that
// cannot be had is an answer, not an error: the task stops with ECS's stoppedReason for the case
// (value_from.h). Nothing here keeps a value: the caller hands them to the agent, which puts them
// in the containers' environment only.
//
//   Resolver resolver(parameters, secrets);
//   ASSIGN_OR_RETURN(Resolution r, resolver.Resolve(task, definitions, authorize));
//   if (!r.failure_reason.empty()) → stop the task TaskFailedToStart with it
//   else r.containers[i].env → the containers' environment
//
// Order, as the ECS agent fetches: SSM parameters first, grouped by (account, region) in order
// of first appearance and asked 10 names at a time (GetParameters' limit), then each Secrets
// Manager secret in the order the definitions name them. The first failure decides the reason.
// Tenancy: a value in another account is refused before any read, with AWS's cross-account
// denial (no resource-based policy admits it: Paddock has no resource policies on parameters or
// secrets), so no reader is ever asked for another account's data.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>

#include "common/ids.h"
#include "common/status.h"
#include "ecs/execution/value_from.h"

namespace paddock::ecs::execution {

// SSM Parameter Store, as the execution role reads it (GetParameters WithDecryption).
class ParameterReader {
 public:
  virtual ~ParameterReader() = default;
  struct Values {
    std::map<std::string, std::string> found;  // name → decrypted value
    std::vector<std::string> missing;          // the names that name no parameter, as given
  };
  // The values of `names` (at most 10) in `scope`. A non-OK status: the read itself failed (the
  // store), and the task start is retried.
  virtual StatusOr<Values> Read(const Scope& scope, const std::vector<std::string>& names) = 0;
};

// Secrets Manager, as the execution role reads it (GetSecretValue).
class SecretReader {
 public:
  virtual ~SecretReader() = default;
  // The full ARN of the secret `secret_id` (a full or partial ARN) names in `scope`; NotFound
  // when it names none.
  virtual StatusOr<std::string> FullArn(const Scope& scope, std::string_view secret_id) = 0;
  struct Value {
    std::optional<std::string> text;  // the SecretString; nullopt: the read was refused, below
    std::string error_code;           // AWS's, e.g. "ResourceNotFoundException", "InvalidRequestException"
    std::string error_message;        // AWS's text
  };
  // The value of version `version_id`, else of the version holding `stage` (both empty:
  // AWSCURRENT), of the secret `full_arn`. A non-OK status: the read itself failed.
  virtual StatusOr<Value> Read(const Scope& scope, std::string_view full_arn, std::string_view stage,
                               std::string_view version_id) = 0;
};

// Whether the task's execution role may perform `action` on `resource`: OK, PermissionDenied
// with AWS's denial text for the role's session, or another code when it could not be decided.
using Authorize = std::function<Status(std::string_view action, std::string_view resource)>;

struct SecretEnv {
  std::string name;
  std::string value;
};

struct ContainerSecrets {
  std::string container;
  std::vector<SecretEnv> env;  // in the order the definition lists its secrets
  // Its repositoryCredentials' secret, decoded (ParseRegistryCredentials), when it has one.
  std::optional<RegistryCredentials> registry_auth;
};

struct Resolution {
  // Every container with secrets or repositoryCredentials, when no failure.
  std::vector<ContainerSecrets> containers;
  std::string failure_reason;                // a complete stoppedReason; empty: resolved
};

// Who the reads are made as, for the texts: the session ECS makes of the execution role.
struct TaskIdentity {
  Scope scope;                 // the task's account and region
  std::string principal_arn;   // arn:aws:sts::<account>:assumed-role/<role name>/<task id>
};

class Resolver {
 public:
  // Both outlive this.
  Resolver(ParameterReader& parameters, SecretReader& secrets) : parameters_(parameters), secrets_(secrets) {}

  // The secrets and the repositoryCredentials of `container_definitions` (the pinned revision's)
  // for the task `task`: the secrets first, then each container's registry credentials in the
  // definitions' order (read as the secrets are: another account's refused unread, authorized as
  // secretsmanager:GetSecretValue, AWSCURRENT). Non-OK: something failed that a retry may mend (a
  // reader's or the authorizer's own failure).
  StatusOr<Resolution> Resolve(const TaskIdentity& task, const boost::json::array& container_definitions,
                               const Authorize& authorize);

  // The session principal ECS reads as: arn:aws:sts::<account>:assumed-role/<role name>/<task id>.
  static std::string ExecutionPrincipalArn(const AccountId& account, std::string_view role_arn,
                                           std::string_view task_id);

 private:
  // One secret's value as the execution role reads it: the cross-account refusal, the
  // authorization (on the full ARN, or on `ref.secret_id` as written when it names none), the
  // read. A refusal is a SecretReader::Value without text; its code and message are AWS's, and
  // `request_id` says whether AWS's status line goes with it (empty for ResourceNotFoundException).
  struct SecretRead {
    SecretReader::Value value;
    std::string request_id;
  };
  StatusOr<SecretRead> ReadSecret(const TaskIdentity& task, const SecretRef& ref, const Authorize& authorize);

  ParameterReader& parameters_;
  SecretReader& secrets_;
};

}  // namespace paddock::ecs::execution
