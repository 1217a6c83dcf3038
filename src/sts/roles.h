// The seam between STS and IAM: which roles exist and whose trust policy admits a caller. STS
// does not know how roles are stored or how policies are evaluated; the node wires an
// implementation over IAM's role owner and the policy evaluator (cli/node.cc). Tests use a fake.
//
//   ASSIGN_OR_RETURN(std::optional<AssumableRole> role, roles.FindRole(account, arn));
//   RETURN_IF_ERROR(roles.TrustAdmits(*role, caller, CallOrigin{now, "127.0.0.1", Region("us-east-1")},
//                                     {{"sts:ExternalId", "x"}}));
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/principal.h"
#include "common/status.h"

namespace paddock::sts {

// What AssumeRole needs to know of a role.
struct AssumableRole {
  std::string arn;      // "arn:aws:iam::123456789012:role/path/name"
  std::string role_id;  // "AROA…": the role's unique id, the first half of aws:userid
  std::string name;     // "name" (without the path): the assumed-role ARN's middle part
  std::string trust_policy_json;
  int max_session_seconds = 3600;  // the role's MaxSessionDuration, 3600..43200
};

// The request context of an AssumeRole call, as the trust policy's conditions see it:
// ("sts:ExternalId", "…"), ("sts:RoleSessionName", "…"), ("sts:SourceIdentity", "…"),
// ("aws:RequestTag/<key>", "<value>"), ("aws:TagKeys", "<key>") once per key, and
// ("sts:TransitiveTagKeys", "<key>") once per key.
using TrustContext = std::vector<std::pair<std::string, std::string>>;

// Where and when the AssumeRole call was made: what the keys every request carries come from
// (aws:CurrentTime, aws:SourceIp, aws:RequestedRegion), which a trust policy may test too.
struct CallOrigin {
  TimePoint now;
  std::string source_ip;  // the caller's address as the API front saw it; empty: unknown
  Region region;          // the caller's credential scope's region
};

class RoleDirectory {
 public:
  virtual ~RoleDirectory() = default;
  // The role `role_arn` of `account`; nullopt when the account has no such role. An error only
  // when the lookup itself failed.
  virtual StatusOr<std::optional<AssumableRole>> FindRole(const AccountId& account, std::string_view role_arn) = 0;
  // OK when the role's trust policy admits `caller`, calling from `origin`, for sts:AssumeRole
  // (and sts:TagSession, sts:SetSourceIdentity when the context carries tags or a source
  // identity) with `context` besides the keys every request carries; PermissionDenied otherwise
  // (any message: STS answers with its own AccessDenied text).
  virtual Status TrustAdmits(const AssumableRole& role, const Principal& caller, const CallOrigin& origin,
                             const TrustContext& context) = 0;
  // Task and execution roles (issue 11, sts/service_sessions.h): OK when the role's trust policy
  // lets the AWS service principal `service` ("ecs-tasks.amazonaws.com") call sts:AssumeRole;
  // PermissionDenied otherwise (any message). Not pure, so that a directory written before task
  // roles keeps compiling; the default admits no service.
  virtual Status ServiceMayAssume(const AssumableRole& role, std::string_view service) {
    return PermissionDenied(std::string(service) + " may not assume " + role.arn);
  }
};

}  // namespace paddock::sts
