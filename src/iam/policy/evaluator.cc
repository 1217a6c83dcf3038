#include "iam/policy/evaluator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>

#include "iam/policy/internal/compiled.h"

namespace paddock::iam::policy {
namespace {

using namespace internal;

inline char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c; }

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Lower(c);
  return out;
}

std::string_view PrincipalTypeName(PrincipalType t) {
  switch (t) {
    case PrincipalType::kRoot:
      return "Account";
    case PrincipalType::kUser:
      return "User";
    case PrincipalType::kAssumedRole:
      return "AssumedRole";
    case PrincipalType::kService:
      return "Service";
    case PrincipalType::kFederated:
      return "FederatedUser";
    case PrincipalType::kAnonymous:
      return "Anonymous";
  }
  return "";
}

}  // namespace

Principal Principal::Root(AccountId account) {
  Principal p;
  p.type = PrincipalType::kRoot;
  p.arn = fmt::format("arn:aws:iam::{}:root", account.str());
  p.user_id = account.str();
  p.account = std::move(account);
  return p;
}

Principal Principal::User(AccountId account, std::string name, std::string user_id, std::string path) {
  Principal p;
  p.type = PrincipalType::kUser;
  p.arn = fmt::format("arn:aws:iam::{}:user{}{}", account.str(), path, name);
  p.account = std::move(account);
  p.user_name = std::move(name);
  p.user_id = std::move(user_id);
  return p;
}

Principal Principal::AssumedRole(AccountId account, std::string role_name, std::string session,
                                 std::string role_id, std::string role_path) {
  Principal p;
  p.type = PrincipalType::kAssumedRole;
  p.arn = fmt::format("arn:aws:sts::{}:assumed-role/{}/{}", account.str(), role_name, session);
  p.role_arn = fmt::format("arn:aws:iam::{}:role{}{}", account.str(), role_path, role_name);
  p.user_id = fmt::format("{}:{}", role_id, session);
  p.account = std::move(account);
  return p;
}

Principal Principal::Service(std::string service) {
  Principal p;
  p.type = PrincipalType::kService;
  p.arn = std::move(service);
  return p;
}

RequestContext::RequestContext(Principal principal, std::string action, std::string resource,
                               const std::vector<std::string>* kept)
    : principal_(std::move(principal)),
      action_(std::move(action)),
      action_lower_(ToLower(action_)),
      resource_(std::move(resource)),
      kept_(kept) {
  // The principal's 5 keys, the authorizer's 3 time and transport keys, session tags and the
  // request's own: 16 avoids regrowing (moving every key and value list) on the common path.
  keys_.reserve(kept_ != nullptr ? kept_->size() : 16);
  if (principal_.type == PrincipalType::kService || principal_.type == PrincipalType::kAnonymous) return;
  // aws:PrincipalArn of a role session is the role's ARN (AWS global condition keys).
  SetLower("aws:principalarn", principal_.type == PrincipalType::kAssumedRole ? principal_.role_arn : principal_.arn);
  SetLower("aws:principalaccount", principal_.account.str());
  SetLower("aws:principaltype", PrincipalTypeName(principal_.type));
  if (!principal_.user_id.empty()) SetLower("aws:userid", principal_.user_id);
  if (principal_.type == PrincipalType::kUser) SetLower("aws:username", principal_.user_name);
}

bool RequestContext::Kept(std::string_view lower_key) const {
  if (kept_ == nullptr) return true;
  // A policy set reads a handful of keys: a scan that compares lengths first beats a search.
  if (kept_->size() <= 16)
    return std::any_of(kept_->begin(), kept_->end(),
                       [&](const std::string& k) { return k.size() == lower_key.size() && k == lower_key; });
  return std::binary_search(kept_->begin(), kept_->end(), lower_key, std::less<>());
}

void RequestContext::Set(std::string_view key, std::string value) {
  std::vector<std::string> v;
  v.push_back(std::move(value));
  SetMulti(key, std::move(v));
}

void RequestContext::SetMulti(std::string_view key, std::vector<std::string> values) {
  std::string lower = ToLower(key);
  if (!Kept(lower)) return;
  for (auto& [k, v] : keys_) {
    if (k == lower) {
      v = std::move(values);
      return;
    }
  }
  keys_.emplace_back(std::move(lower), std::move(values));
}

void RequestContext::SetLower(std::string_view lower_key, std::string_view value) {
  if (!Kept(lower_key)) return;
  for (auto& [k, v] : keys_) {
    if (k == lower_key) {
      v.assign(1, std::string(value));
      return;
    }
  }
  keys_.emplace_back(std::string(lower_key), std::vector<std::string>{std::string(value)});
}

void RequestContext::AppendDecisionKey(std::string& out) const {
  auto field = [&out](std::string_view s) {
    const uint32_t n = static_cast<uint32_t>(s.size());
    out.append(reinterpret_cast<const char*>(&n), sizeof n).append(s);
  };
  field(action_lower_);
  field(resource_);
  for (const auto& [k, v] : keys_) {
    // An empty list reads as an absent key (FindLower's callers test both), so it adds nothing.
    if (v.empty()) continue;
    field(k);
    const uint32_t count = static_cast<uint32_t>(v.size());
    out.append(reinterpret_cast<const char*>(&count), sizeof count);
    for (const std::string& value : v) field(value);
  }
}

const std::vector<std::string>* RequestContext::FindLower(std::string_view lower_key) const {
  for (const auto& [k, v] : keys_)
    if (k == lower_key) return &v;
  return nullptr;
}

const std::vector<std::string>* RequestContext::Find(std::string_view key) const { return FindLower(ToLower(key)); }

namespace {

// REQUIRES: `action_lower` is lowercase. The action globs are compiled lowercase, so comparing
// them exactly with the lowered action decides as a case-folding comparison with the action would.
bool ActionMatches(const Statement& st, std::string_view action_lower, uint64_t action_head) {
  auto matches = [&](const Template& p) { return p.MayMatch(action_head) && p.Matches(action_lower, /*fold_case=*/false); };
  bool any = false;
  if (!st.action_index) {
    any = std::any_of(st.actions.begin(), st.actions.end(), matches);
  } else {
    // Only the action's service's patterns and the unkeyed ones can match (ActionIndex).
    auto matches_at = [&](uint32_t i) { return matches(st.actions[i]); };
    const ActionIndex& index = *st.action_index;
    const size_t colon = action_lower.find(':');
    if (colon != std::string_view::npos) {
      if (const ActionIndex::Service* group = index.Find(action_lower.substr(0, colon)))
        any = std::any_of(group->patterns.begin(), group->patterns.end(), matches_at);
    }
    any = any || std::any_of(index.unkeyed.begin(), index.unkeyed.end(), matches_at);
  }
  return st.not_action ? !any : any;
}

// Resource globs: '*' spans ':' and '/' (IAM User Guide, "IAM JSON policy elements: Resource":
// a '*' "can expand to replace everything within a segment, including characters like a forward
// slash", and a trailing '*' "can expand to match beyond the colon boundaries"). So
// "task-definition/web:*" needs the ':' and does not match the bare family "task-definition/web".
bool ResourceMatches(const Statement& st, const RequestContext& ctx) {
  if (!st.has_resource) return true;
  const bool any = std::any_of(st.resources.begin(), st.resources.end(), [&](const Template& t) {
    if (!t.has_variables) return t.Matches(ctx.resource(), false);
    // An unresolvable variable makes this entry match nothing.
    std::optional<std::string> r = t.Resolve(ctx, false);
    return r && GlobMatch(*r, ctx.resource(), false);
  });
  return st.not_resource ? !any : any;
}

bool ConditionsHold(const Statement& st, const RequestContext& ctx) {
  return std::all_of(st.conditions.begin(), st.conditions.end(),
                     [&](const Condition& c) { return ConditionHolds(c, ctx); });
}

// How a resource-based policy's Principal names the caller; a higher value is a stronger grant.
enum class PrincipalMatch { kNone, kAccount, kOther, kRole, kExact };

PrincipalMatch MatchEntry(const PrincipalEntry& e, const Principal& p) {
  switch (e.kind) {
    case PrincipalEntry::Kind::kAny:
      return PrincipalMatch::kOther;
    case PrincipalEntry::Kind::kAccount:
      return !p.account.empty() && e.value == p.account.str() ? PrincipalMatch::kAccount : PrincipalMatch::kNone;
    case PrincipalEntry::Kind::kArn:
      if (e.value == p.arn) return PrincipalMatch::kExact;
      // A role's ARN admits every session of the role.
      if (p.type == PrincipalType::kAssumedRole && e.value == p.role_arn) return PrincipalMatch::kRole;
      return PrincipalMatch::kNone;
    case PrincipalEntry::Kind::kService:
      return p.type == PrincipalType::kService && e.value == p.arn ? PrincipalMatch::kOther : PrincipalMatch::kNone;
    case PrincipalEntry::Kind::kFederated:
      return p.type == PrincipalType::kFederated && e.value == p.arn ? PrincipalMatch::kOther : PrincipalMatch::kNone;
    case PrincipalEntry::Kind::kCanonicalUser:
      return PrincipalMatch::kNone;
  }
  return PrincipalMatch::kNone;
}

PrincipalMatch MatchPrincipal(const Statement& st, const Principal& p) {
  if (!st.has_principal) return PrincipalMatch::kOther;
  PrincipalMatch best = PrincipalMatch::kNone;
  for (const PrincipalEntry& e : st.principals) best = std::max(best, MatchEntry(e, p));
  if (st.not_principal) return best == PrincipalMatch::kNone ? PrincipalMatch::kOther : PrincipalMatch::kNone;
  return best;
}

struct LayerResult {
  bool present = false;
  bool allow = false;
  bool deny = false;
  PrincipalMatch grant = PrincipalMatch::kNone;  // resource layer: the strongest allowing match
  std::vector<MatchedStatement> allows;
  std::vector<MatchedStatement> denies;
};

void Scan(const Policy& policy, PolicyType type, size_t index, const RequestContext& ctx, bool check_principal,
          LayerResult& out) {
  out.present = true;
  const std::vector<Statement>& statements = policy.compiled().statements;
  const uint64_t action_head = Head(ctx.action_lower());
  for (size_t i = 0; i < statements.size(); ++i) {
    const Statement& st = statements[i];
    // Cheapest tests first: most statements fail on the action.
    if (!ActionMatches(st, ctx.action_lower(), action_head) || !ResourceMatches(st, ctx)) continue;
    PrincipalMatch pm = PrincipalMatch::kOther;
    if (check_principal) {
      pm = MatchPrincipal(st, ctx.principal());
      if (pm == PrincipalMatch::kNone) continue;
    }
    if (!ConditionsHold(st, ctx)) continue;
    if (st.allow) {
      out.allow = true;
      out.grant = std::max(out.grant, pm);
      out.allows.push_back({type, index, i});
    } else {
      out.deny = true;
      out.denies.push_back({type, index, i});
    }
  }
}

EvaluationResult Deny(Decision d, PolicyType by) {
  EvaluationResult r;
  r.decision = d;
  r.decided_by = by;
  return r;
}

}  // namespace

EvaluationResult Evaluate(const RequestContext& ctx, const PolicySet& set) {
  LayerResult identity, boundary, session, resource;
  for (size_t i = 0; i < set.identity.size(); ++i)
    Scan(set.identity[i].policy, PolicyType::kIdentity, i, ctx, false, identity);
  if (set.boundary) Scan(set.boundary->policy, PolicyType::kPermissionsBoundary, 0, ctx, false, boundary);
  for (size_t i = 0; i < set.session.size(); ++i)
    Scan(set.session[i].policy, PolicyType::kSession, i, ctx, false, session);
  if (set.resource) Scan(set.resource->policy, PolicyType::kResource, 0, ctx, true, resource);

  auto finish = [&](EvaluationResult r) {
    if (boundary.present) r.allowed_by_boundary = boundary.allow && !boundary.deny;
    return r;
  };

  // 1. An explicit Deny anywhere is final. The text names one layer, as AWS's does.
  const std::pair<const LayerResult*, PolicyType> layers[] = {{&identity, PolicyType::kIdentity},
                                                              {&resource, PolicyType::kResource},
                                                              {&boundary, PolicyType::kPermissionsBoundary},
                                                              {&session, PolicyType::kSession}};
  for (const auto& [layer, type] : layers) {
    if (!layer->deny) continue;
    EvaluationResult r = Deny(Decision::kExplicitDeny, type);
    for (const auto& [l, t] : layers) r.matched.insert(r.matched.end(), l->denies.begin(), l->denies.end());
    return finish(std::move(r));
  }

  const bool same_account = set.resource_account.empty() || set.resource_account == ctx.principal().account;
  const bool resource_allows = resource.allow;
  if (!same_account) {
    // Cross-account: both sides must allow (the resource policy naming the account suffices).
    if (!identity.allow) return finish(Deny(Decision::kImplicitDeny, PolicyType::kIdentity));
    if (!resource_allows) return finish(Deny(Decision::kImplicitDeny, PolicyType::kResource));
  } else if (resource_allows && resource.grant == PrincipalMatch::kExact) {
    // 3. A same-account resource policy naming the exact user or session ARN is not limited by a
    // permissions boundary or session policy (IAM User Guide, policy evaluation logic table).
    EvaluationResult r;
    r.decision = Decision::kAllow;
    r.decided_by = PolicyType::kResource;
    r.matched = std::move(resource.allows);
    return finish(std::move(r));
  }
  // An account-only Principal delegates to the account's identity policies: it grants nothing alone.
  const bool resource_grants = same_account && resource_allows && resource.grant != PrincipalMatch::kAccount;
  if (!identity.allow && !resource_grants) return finish(Deny(Decision::kImplicitDeny, PolicyType::kIdentity));
  if (boundary.present && !boundary.allow)
    return finish(Deny(Decision::kImplicitDeny, PolicyType::kPermissionsBoundary));
  if (session.present && !session.allow) return finish(Deny(Decision::kImplicitDeny, PolicyType::kSession));

  EvaluationResult r;
  r.decision = Decision::kAllow;
  if (identity.allow) {
    r.decided_by = PolicyType::kIdentity;
    r.matched = std::move(identity.allows);
  } else {
    r.decided_by = PolicyType::kResource;
    r.matched = std::move(resource.allows);
  }
  return finish(std::move(r));
}

bool TrustPolicyAllows(const Policy& trust, const RequestContext& ctx) {
  LayerResult r;
  Scan(trust, PolicyType::kResource, 0, ctx, true, r);
  return r.allow && !r.deny;
}

// The texts follow the IAM User Guide, "Troubleshoot access denied error messages": "with an
// explicit deny in a <type> policy" / "because no <type> policy allows the <action> action", with
// the types "identity-based policy", "resource-based policy", "permissions boundary" and "session
// policy"; and the ECS/IAM answers quoted in wellcomecollection/platform#374 and
// aws/serverless-application-model#2247 ("User: ... is not authorized to perform: iam:PassRole on
// resource: ... because no identity-based policy allows the iam:PassRole action").
std::string DenialMessage(std::string_view principal_arn, std::string_view action, std::string_view resource,
                          Decision decision, PolicyType type) {
  std::string_view what;
  std::string_view article = "a";
  switch (type) {
    case PolicyType::kIdentity:
      what = "identity-based policy";
      article = "an";
      break;
    case PolicyType::kResource:
      what = "resource-based policy";
      break;
    case PolicyType::kPermissionsBoundary:
      what = "permissions boundary";
      break;
    case PolicyType::kSession:
      what = "session policy";
      break;
  }
  const std::string on = resource.empty() ? std::string() : fmt::format(" on resource: {}", resource);
  if (decision == Decision::kExplicitDeny)
    return fmt::format("User: {} is not authorized to perform: {}{} with an explicit deny in {} {}", principal_arn,
                       action, on, article, what);
  return fmt::format("User: {} is not authorized to perform: {}{} because no {} allows the {} action", principal_arn,
                     action, on, what, action);
}

std::vector<std::string> ReadKeys(const PolicySet& set) {
  std::vector<std::string> out;
  auto add = [&out](const NamedPolicy& p) {
    for (const std::string& key : ContextKeys(p.policy)) out.push_back(ToLower(key));
  };
  for (const NamedPolicy& p : set.identity) add(p);
  if (set.boundary) add(*set.boundary);
  for (const NamedPolicy& p : set.session) add(p);
  if (set.resource) add(*set.resource);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace paddock::iam::policy
