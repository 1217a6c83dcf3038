// IAM's authorization decision for one request: AWS's policy evaluation logic for a principal in
// one account (no Organizations SCPs/RCPs), as a pure function of the request and the policies.
//
//   RequestContext ctx(Principal::User(AccountId("123456789012"), "alice", "AIDAEXAMPLE"), "ecs:RunTask",
//                      "arn:aws:ecs:us-east-1:123456789012:task-definition/web:3");
//   ctx.Set("ecs:cluster", "arn:aws:ecs:us-east-1:123456789012:cluster/default");
//   PolicySet set;
//   set.identity.push_back({"arn:aws:iam::123456789012:policy/deploy", deploy_policy});
//   EvaluationResult r = Evaluate(ctx, set);
//   if (r.decision != Decision::kAllow)
//     return PermissionDenied(DenialMessage(ctx, r));
//
// Decision order (AWS, "Policy evaluation logic", same account):
//   1. A matching Deny statement in any policy (identity, resource, boundary, session) is final.
//   2. Otherwise an Allow is needed: from an identity-based policy, or from a resource-based
//      policy naming the principal (an account-only match delegates to identity policies).
//   3. A present permissions boundary and a present session policy must each also allow, except
//      that a same-account resource-based policy naming the exact user or session ARN is not
//      limited by them.
//   4. Cross-account (PolicySet::resource_account differs from the principal's account): both
//      the identity side and the resource policy must allow.
// Root principals are not evaluated here: the caller allows an account's root everything.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/ids.h"
#include "iam/policy/policy.h"

namespace paddock::iam::policy {

// kFederated: a web-identity or SAML caller, matched by a trust policy's "Federated" principal
// (a GetSessionToken session is evaluated as the user or root it belongs to).
enum class PrincipalType { kRoot, kUser, kAssumedRole, kService, kFederated, kAnonymous };

// Who is asking. Constructed with the factories, which fill the fields consistently. The fields
// mirror aws::Principal's (account, arn, user_id, user_name, role_arn) so the API front's
// conversion is a copy; this library does not depend on aws/.
struct Principal {
  PrincipalType type = PrincipalType::kAnonymous;
  std::string arn;        // user/root/session ARN; kService: the service ("ecs-tasks.amazonaws.com")
  AccountId account;      // empty for services and anonymous callers
  std::string user_name;  // aws:username (users only)
  std::string user_id;    // aws:userid: the account for root, AIDA... for users, AROA...:session
  std::string role_arn;   // kAssumedRole: the role's ARN (with path), which a Principal of a
                          // resource or trust policy names to admit every session of the role

  static Principal Root(AccountId account);
  // `path` is "/" or "/division/"; the ARN is arn:aws:iam::<account>:user<path><name>.
  static Principal User(AccountId account, std::string name, std::string user_id, std::string path = "/");
  // arn:aws:sts::<account>:assumed-role/<role>/<session>; role_arn keeps the role's path.
  static Principal AssumedRole(AccountId account, std::string role_name, std::string session,
                               std::string role_id, std::string role_path = "/");
  static Principal Service(std::string service);  // "ecs-tasks.amazonaws.com"
};

// The request: principal, action, resource and the context keys AWS would send for this action.
// Context-key names are case-insensitive (stored lowercase); values are case-sensitive.
class RequestContext {
 public:
  // Also sets the principal's global keys: aws:PrincipalArn, aws:PrincipalAccount,
  // aws:PrincipalType, aws:userid and (users) aws:username. Add aws:PrincipalTag/k with Set.
  // With `kept` (lowercase keys, sorted; outlives this), the context keeps only those keys and
  // drops every other as it is set: a context for one policy set's decision carries just the keys
  // that set reads (ReadKeys), which makes it cheap to build and to compare (AppendDecisionKey).
  RequestContext(Principal principal, std::string action, std::string resource,
                 const std::vector<std::string>* kept = nullptr);

  const Principal& principal() const { return principal_; }
  const std::string& action() const { return action_; }      // "ecs:RunTask", any case
  // action() in ASCII lowercase, computed once: every statement's action globs (lowercase
  // already) compare against it byte for byte instead of folding each byte per pattern.
  const std::string& action_lower() const { return action_lower_; }
  const std::string& resource() const { return resource_; }  // an ARN or "*"

  // Sets a single-valued key (replacing any values it had).
  void Set(std::string_view key, std::string value);
  // Sets a multivalued key such as aws:TagKeys. An empty list is the same as an absent key.
  void SetMulti(std::string_view key, std::vector<std::string> values);
  // As Set, for a key already lowercase ("aws:sourceip"): the hot path's keys skip the lowering,
  // and a key the context does not keep costs no copy. REQUIRES: `lower_key` has no uppercase letter.
  void SetLower(std::string_view lower_key, std::string_view value);
  // The key's values, or nullptr when the request does not carry it. Any case of `key`.
  const std::vector<std::string>* Find(std::string_view key) const;
  // As Find, for a key already lowercase (the compiled policy's keys are).
  const std::vector<std::string>* FindLower(std::string_view lower_key) const;

  // Appends to `out` everything of this context that Evaluate can read for a PolicySet without a
  // resource policy: the action (lowercase), the resource, and every key with its values, each
  // length-prefixed so no two different contexts append the same bytes. Two contexts that append
  // the same bytes get the same decision from the same such set.
  void AppendDecisionKey(std::string& out) const;

 private:
  bool Kept(std::string_view lower_key) const;

  Principal principal_;
  std::string action_;
  std::string action_lower_;
  std::string resource_;
  std::vector<std::pair<std::string, std::vector<std::string>>> keys_;
  const std::vector<std::string>* kept_ = nullptr;
};

// The policy layers, as the denial texts name them.
enum class PolicyType { kIdentity, kResource, kPermissionsBoundary, kSession };

struct NamedPolicy {
  std::string id;  // for MatchedStatements: a policy ARN, or "user/alice/inline-name"
  Policy policy;
};

struct PolicySet {
  std::vector<NamedPolicy> identity;         // inline and attached (user, group, role)
  std::optional<NamedPolicy> boundary;       // the user's or role's permissions boundary
  std::vector<NamedPolicy> session;          // AssumeRole's Policy and PolicyArns; empty: no gate
  std::optional<NamedPolicy> resource;       // the resource's own policy (e.g. a trust policy)
  AccountId resource_account;                // owner of `resource`; empty: the principal's account
};

enum class Decision { kAllow, kExplicitDeny, kImplicitDeny };

struct MatchedStatement {
  PolicyType type;
  size_t policy_index;  // into PolicySet::identity / session (0 for boundary and resource)
  size_t statement_index;
};

struct EvaluationResult {
  Decision decision = Decision::kImplicitDeny;
  // kExplicitDeny: the first layer holding a matching Deny; kImplicitDeny: the layer that failed
  // to allow; kAllow: the layer that granted (identity or resource).
  PolicyType decided_by = PolicyType::kIdentity;
  // The statements that decided: the matching Denies for kExplicitDeny, the matching Allows of
  // the granting layer for kAllow, none for kImplicitDeny (SimulatePrincipalPolicy's
  // MatchedStatements).
  std::vector<MatchedStatement> matched;
  // With a permissions boundary: whether it allows the request (an Allow matches and no Deny does;
  // SimulatePrincipalPolicy's PermissionsBoundaryDecisionDetail). Without one: nullopt.
  std::optional<bool> allowed_by_boundary;
};

// The decision for `ctx` under `set` (the order is in the header's opening comment).
EvaluationResult Evaluate(const RequestContext& ctx, const PolicySet& set);

// The keys (lowercase, sorted, each once) that the policies of `set` read: every context key
// Evaluate can look up for `set`. A context keeping only these decides as a full one does.
std::vector<std::string> ReadKeys(const PolicySet& set);

// Whether `trust` (a role's trust policy) lets ctx.principal() perform ctx.action()
// (sts:AssumeRole, sts:TagSession, ...) on the role: an Allow statement whose Principal matches,
// whose conditions hold (sts:ExternalId, aws:SourceAccount, ...), and no matching Deny. A trust
// policy grants on its own; the caller separately checks the caller's identity policies for
// sts:AssumeRole when the caller is an IAM principal. Services (ecs-tasks.amazonaws.com) pass a
// Principal::Service.
bool TrustPolicyAllows(const Policy& trust, const RequestContext& ctx);

// AWS's AccessDenied text for a denied decision, e.g.
//   User: arn:aws:iam::123456789012:user/alice is not authorized to perform: iam:PassRole on
//   resource: arn:aws:iam::123456789012:role/app because no identity-based policy allows the
//   iam:PassRole action
// and "... with an explicit deny in an identity-based policy", "... because no permissions
// boundary allows the <action> action", "... with an explicit deny in a session policy", ...
// An empty `resource` names none ("User: ... is not authorized to perform: ec2:DescribeVpcs
// because ...", as EC2 words it). REQUIRES: result.decision != kAllow.
std::string DenialMessage(std::string_view principal_arn, std::string_view action, std::string_view resource,
                          Decision decision, PolicyType type);
inline std::string DenialMessage(const RequestContext& ctx, const EvaluationResult& r) {
  return DenialMessage(ctx.principal().arn, ctx.action(), ctx.resource(), r.decision, r.decided_by);
}

}  // namespace paddock::iam::policy
