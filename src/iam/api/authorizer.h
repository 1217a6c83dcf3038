// The front's authorizer over IAM: decides each call of a non-root principal with the policy
// evaluator (iam/policy/) against the policies the Directory says apply to the principal.
//
//   iam::api::PolicyAuthorizer authorizer(directory);
//   front_options.authorizer = &authorizer;
//
// Who is evaluated (aws::Principal::kind):
// - an account's root, and a GetSessionToken session of root: allowed everything, as on AWS;
// - a user, and a GetSessionToken session of a user: the user's inline and attached policies,
//   gated by the user's permissions boundary;
// - a role session: the role's inline and attached policies, gated by the role's boundary and
//   by the session's policies (AssumeRole's Policy and PolicyArns), with the session tags as
//   aws:PrincipalTag/* (overriding the role's own tags of the same key, as on AWS).
// The request context is built in one place, Evaluate, for live calls and simulations alike:
// aws:CurrentTime, aws:EpochTime, aws:SecureTransport (false: the API is served over HTTP),
// aws:SourceIp (CallContext::source_ip), aws:RequestedRegion (the credential scope's region),
// aws:PrincipalTag/* (the user's or role's IAM tags, then the session's tags), aws:ResourceTag/*
// (AuthRequest::resource_tags, read only when a policy of the principal names such a key), then
// the request's own keys (AuthRequest::context), which replace any of those. A denial is
// PermissionDenied with AWS's AccessDenied text, and the call changes nothing.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aws/service.h"
#include "iam/directory.h"
#include "iam/policy/evaluator.h"

namespace paddock::iam::api {

class PolicyAuthorizer final : public aws::Authorizer {
 public:
  // `directory` outlives this.
  PolicyAuthorizer(Directory& directory, const Clock& clock) : directory_(directory), clock_(clock) {}

  Status Authorize(const aws::CallContext& call, const aws::AuthRequest& request) override;
  // False for root (IsRootPrincipal), which Authorize allows everything: the front then builds
  // no questions for root's calls.
  bool Evaluates(const aws::Principal& principal) const override;

  // The evaluation behind Authorize, for SimulatePrincipalPolicy: the decision for `request` by
  // call.principal, with the policies it read. Root is not evaluated (callers allow it).
  struct Evaluation {
    policy::EvaluationResult result;
    policy::RequestContext context;
    std::shared_ptr<const policy::PolicySet> policies;
  };
  // What a simulation changes (SimulatePrincipalPolicy's and SimulateCustomPolicy's parameters):
  // whose policies decide, when not call.principal's own user or role, identity policies
  // evaluated with them, a boundary replacing theirs, and a resource-based policy. The
  // principal's keys and tags stay call.principal's.
  struct Overrides {
    std::optional<PrincipalRef> policies_of;
    // SimulateCustomPolicy: no entity's policies decide, only `extra_identity` (and `boundary`,
    // `resource`). call.principal may then be the account's root, which stands for "no caller":
    // the evaluator sees an anonymous principal of the account, with no principal keys or tags.
    bool only_given_policies = false;
    std::vector<policy::NamedPolicy> extra_identity;
    std::optional<policy::NamedPolicy> boundary;  // PermissionsBoundaryPolicyInputList
    std::optional<policy::NamedPolicy> resource;  // ResourcePolicy
    AccountId resource_account;                   // ResourceOwner; empty: the principal's account
  };
  StatusOr<Evaluation> Evaluate(const aws::CallContext& call, const aws::AuthRequest& request,
                                const Overrides* overrides = nullptr);

  // The request context of `request` made by call.principal, without evaluating it: for a
  // resource's own policy decided elsewhere (a role's trust policy, IamRoleDirectory). The same
  // keys as Evaluate's but aws:ResourceTag/*. Root gets the time, source and region keys only.
  StatusOr<policy::RequestContext> ContextOf(const aws::CallContext& call, const aws::AuthRequest& request);

 private:
  // What one user or role (with one set of session policies) brings to every request it makes.
  struct Entity {
    policy::PolicySet set;
    // The entity's IAM tags as context keys, lowercase ("aws:principaltag/team", "blue").
    std::vector<std::pair<std::string, std::string>> tags;
    // Whether a policy of `set` names an aws:ResourceTag key (a condition or a variable): only
    // then does a request read its resource's tags.
    bool reads_resource_tags = false;
    // The keys `set` reads (policy::ReadKeys): Authorize's contexts keep only these.
    std::vector<std::string> read_keys;
    // Unique per parse: Authorize's remembered decisions name the entity they were made for, so
    // a changed document (a new parse) is never answered from a decision of the old one.
    uint64_t serial = 0;
  };

  // The parsed policies and tags of `principal`, whose IAM user or role is `entity`: served from
  // the cache while the Directory's generation is unchanged and for at most Directory::kCacheTtl
  // (so this server's changes show at once and another server's within a second; the Directory
  // itself does not cache), and reparsed only when a document or tag changed. Entries are per
  // entity and session policies, so every session of a role without its own session policies
  // shares one.
  StatusOr<std::shared_ptr<const Entity>> PoliciesOf(const aws::Principal& principal, const PrincipalRef& entity);

  // The one builder of a request context (Evaluate, ContextOf): fills `ctx`, made for
  // call.principal as the evaluator sees it and the request's action and resource, with every
  // other key. `entity`: the user or role whose IAM tags it carries (null: none);
  // `resource_tags`: whether to read request.resource_tags.
  Status BuildContext(const aws::CallContext& call, const aws::AuthRequest& request, const Entity* entity,
                      bool resource_tags, policy::RequestContext& ctx);

  Directory& directory_;
  const Clock& clock_;
  struct Parsed {
    PrincipalPolicies documents;  // what `entity` was parsed from
    std::shared_ptr<const Entity> entity;
    uint64_t generation = 0;
    TimePoint checked;  // when `documents` were last found current
  };
  std::mutex mu_;
  // GUARDED_BY(mu_), by (account, user|role, name, session policy, session policy ARNs).
  std::unordered_map<std::string, Parsed> parsed_;
  uint64_t next_serial_ = 1;  // GUARDED_BY(mu_)

  // Authorize's recent decisions, by entity serial and the pruned context's decision key
  // (RequestContext::AppendDecisionKey): a decision is a pure function of those, so a repeated
  // question (the same caller, action, resource and read keys' values) is not evaluated again.
  struct Decided {
    policy::Decision decision;
    policy::PolicyType decided_by;
  };
  static constexpr size_t kMaxDecisions = 8192;  // then the map starts over: bounded memory
  std::mutex decisions_mu_;
  std::unordered_map<std::string, Decided> decisions_;  // GUARDED_BY(decisions_mu_)
};

// Whether `principal` is allowed everything (an account's root, or a session of root).
bool IsRootPrincipal(const aws::Principal& principal);

// The evaluator's view of an authenticated caller: root, a user (also a user's GetSessionToken
// session), or a role session.
policy::Principal EvaluatedPrincipal(const aws::Principal& principal);

}  // namespace paddock::iam::api
