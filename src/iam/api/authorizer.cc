#include "iam/api/authorizer.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/chrono.h>
#include <fmt/format.h>

namespace paddock::iam::api {
namespace {

// The last path segment of a role ARN ("arn:aws:iam::1:role/team/app" -> "app").
std::string_view RoleName(std::string_view role_arn) {
  size_t slash = role_arn.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : role_arn.substr(slash + 1);
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Who the evaluator sees, and which IAM entity's policies apply.
struct Subject {
  policy::Principal principal;
  PrincipalRef entity;
};

StatusOr<Subject> SubjectOf(const aws::Principal& p) {
  Subject s;
  s.principal.arn = p.arn;
  s.principal.account = p.account;
  s.principal.user_id = p.user_id;
  switch (p.kind) {
    case aws::PrincipalKind::kUser:
    case aws::PrincipalKind::kFederatedUser:  // a user's GetSessionToken session acts as the user
      s.principal.type = policy::PrincipalType::kUser;
      s.principal.user_name = p.user_name;
      s.entity = PrincipalRef{PrincipalType::kUser, p.user_name};
      break;
    case aws::PrincipalKind::kAssumedRole:
      s.principal.type = policy::PrincipalType::kAssumedRole;
      s.principal.role_arn = p.role_arn;
      s.entity = PrincipalRef{PrincipalType::kRole, std::string(RoleName(p.role_arn))};
      break;
    case aws::PrincipalKind::kRoot:
      return Internal("the root principal is not evaluated");
  }
  if (s.entity.name.empty()) return Internal(fmt::format("principal {} names no IAM user or role", p.arn));
  return s;
}

// Documents are checked when stored; one that no longer parses (or the Directory's empty stand-in
// for a policy that is gone) allows nothing, rather than failing every request of the principal.
policy::NamedPolicy ParseOne(const std::string& id, const std::string& text) {
  auto parsed = policy::ParsePolicy(text, policy::DocumentKind::kIdentity);
  if (parsed.ok()) return policy::NamedPolicy{id, std::move(*parsed)};
  // A statement that matches no action: neither allows nor denies. (A document with no statement
  // does not parse.)
  static const policy::Policy kNothing = *policy::ParsePolicy(
      R"({"Version":"2012-10-17","Statement":[{"Effect":"Deny","NotAction":"*","Resource":"*"}]})",
      policy::DocumentKind::kIdentity);
  return policy::NamedPolicy{id, kNothing};
}

// An AWS-managed policy's document is the same for every principal it is attached to, and AWS's
// can be large (ReadOnlyAccess: ~2,900 action patterns, ~2.5 ms to parse, ~0.5 MB compiled), so
// each is parsed once per process and its compiled form shared (a Policy's copies share it). Keyed
// by ARN with the text compared, so a different text is parsed anew; the Directory serves only its
// compiled-in catalogue under these ARNs, which bounds the map.
policy::NamedPolicy ParseNamed(const std::string& id, const std::string& text) {
  if (!IsAwsManagedArn(id)) return ParseOne(id, text);
  struct Parsed {
    std::string text;
    policy::NamedPolicy policy;
  };
  static std::mutex mu;
  static auto* shared = new std::unordered_map<std::string, Parsed>();  // GUARDED_BY(mu), by ARN
  std::lock_guard lock(mu);
  auto it = shared->find(id);
  if (it != shared->end() && it->second.text == text) return it->second.policy;
  policy::NamedPolicy parsed = ParseOne(id, text);
  shared->insert_or_assign(id, Parsed{text, parsed});
  return parsed;
}

// Whether a policy of `set` reads an aws:ResourceTag key (in a condition or a variable).
bool NamesResourceTags(const policy::PolicySet& set) {
  auto names = [](const policy::NamedPolicy& p) {
    for (const std::string& key : policy::ContextKeys(p.policy)) {
      if (key.size() >= 16 && std::equal(key.begin(), key.begin() + 16, std::string_view("aws:resourcetag/").begin(),
                                         [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; }))
        return true;
    }
    return false;
  };
  return std::any_of(set.identity.begin(), set.identity.end(), names) ||
         std::any_of(set.session.begin(), set.session.end(), names) || (set.boundary && names(*set.boundary)) ||
         (set.resource && names(*set.resource));
}

bool SameDocuments(const PrincipalPolicies& a, const PrincipalPolicies& b) {
  auto same = [](const PrincipalPolicies::Document& x, const PrincipalPolicies::Document& y) {
    return x.source == y.source && x.text == y.text;
  };
  auto same_all = [&](const std::vector<PrincipalPolicies::Document>& x, const std::vector<PrincipalPolicies::Document>& y) {
    return std::equal(x.begin(), x.end(), y.begin(), y.end(), same);
  };
  if (!same_all(a.identity, b.identity) || !same_all(a.session, b.session) || a.tags != b.tags) return false;
  if (a.boundary.has_value() != b.boundary.has_value()) return false;
  return !a.boundary || same(*a.boundary, *b.boundary);
}

}  // namespace

policy::Principal EvaluatedPrincipal(const aws::Principal& principal) {
  if (IsRootPrincipal(principal)) return policy::Principal::Root(principal.account);
  auto subject = SubjectOf(principal);
  if (!subject.ok()) return policy::Principal{};  // anonymous: matches only "*" principals
  return subject->principal;
}

bool IsRootPrincipal(const aws::Principal& principal) {
  return principal.kind == aws::PrincipalKind::kRoot ||
         (principal.kind == aws::PrincipalKind::kFederatedUser && EndsWith(principal.arn, ":root"));
}

StatusOr<std::shared_ptr<const PolicyAuthorizer::Entity>> PolicyAuthorizer::PoliciesOf(const aws::Principal& principal,
                                                                                    const PrincipalRef& entity) {
  // The key, built in a per-thread buffer (no allocation per request); lengths first, so no two
  // different session policies make the same key.
  // Appended, not formatted: this runs for every evaluated call.
  thread_local std::string cache_key;
  cache_key.clear();
  cache_key.append(principal.account.str()).append(1, '/').append(PrincipalTypeName(entity.type));
  cache_key.append(1, '/').append(entity.name).append(1, '/');
  auto counted = [](std::string_view s) {
    cache_key.append(std::to_string(s.size())).append(1, ':').append(s);
  };
  counted(principal.session_policy);
  for (const std::string& arn : principal.session_policy_arns) {
    cache_key.append(1, '/');
    counted(arn);
  }
  const TimePoint now = clock_.Now();
  // Read before the documents: a write that lands in between makes the entry stale, never wrong.
  const uint64_t generation = directory_.Generation();
  {
    std::lock_guard lock(mu_);
    auto it = parsed_.find(cache_key);
    if (it != parsed_.end() && it->second.generation == generation && now - it->second.checked < Directory::kCacheTtl)
      return it->second.entity;
  }
  ASSIGN_OR_RETURN(PrincipalPolicies documents,
                   directory_.PoliciesOf(principal.account, entity, principal.session_policy_arns));
  {
    std::lock_guard lock(mu_);
    auto it = parsed_.find(cache_key);
    if (it != parsed_.end() && SameDocuments(it->second.documents, documents)) {
      it->second.generation = generation;
      it->second.checked = now;
      return it->second.entity;
    }
  }
  auto parsed = std::make_shared<Entity>();
  policy::PolicySet& set = parsed->set;
  for (const auto& d : documents.identity) set.identity.push_back(ParseNamed(d.source, d.text));
  if (documents.boundary) set.boundary = ParseNamed(documents.boundary->source, documents.boundary->text);
  if (!principal.session_policy.empty()) set.session.push_back(ParseNamed("session policy", principal.session_policy));
  for (const auto& d : documents.session) set.session.push_back(ParseNamed(d.source, d.text));
  for (const Tag& t : documents.tags) {
    std::string key = fmt::format("aws:principaltag/{}", t.key);
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
    parsed->tags.emplace_back(std::move(key), t.value);
  }
  parsed->reads_resource_tags = NamesResourceTags(set);
  parsed->read_keys = policy::ReadKeys(set);
  std::lock_guard lock(mu_);
  parsed->serial = next_serial_++;
  std::shared_ptr<const Entity> out = parsed;
  // Bounded: a cache of every principal ever seen would grow with role sessions.
  if (parsed_.size() >= 4096) parsed_.clear();
  parsed_[cache_key] = Parsed{std::move(documents), out, generation, now};
  return out;
}

Status PolicyAuthorizer::BuildContext(const aws::CallContext& call, const aws::AuthRequest& request,
                                      const Entity* entity, bool resource_tags, policy::RequestContext& ctx) {
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(call.now.time_since_epoch()).count();
  // The time keys change once a second: format them once a second per thread.
  thread_local int64_t formatted_secs = -1;
  thread_local std::string current_time, epoch_time;
  if (secs != formatted_secs) {
    current_time = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(static_cast<std::time_t>(secs)));
    epoch_time = std::to_string(secs);
    formatted_secs = secs;
  }
  ctx.SetLower("aws:currenttime", current_time);
  ctx.SetLower("aws:epochtime", epoch_time);
  ctx.SetLower("aws:securetransport", "false");
  if (!call.source_ip.empty()) ctx.SetLower("aws:sourceip", call.source_ip);
  if (!call.scope.region.str().empty()) ctx.SetLower("aws:requestedregion", call.scope.region.str());
  // The entity's tags, then the session's: a session tag replaces the role's tag of the same key
  // (AWS, "Passing session tags in AWS STS": session tags override the role's). Keys compare
  // ignoring case, as the context's do.
  if (entity != nullptr)
    for (const auto& [k, v] : entity->tags) ctx.SetLower(k, v);
  for (const auto& [k, v] : call.principal.session_tags) ctx.Set(fmt::format("aws:PrincipalTag/{}", k), v);
  if (resource_tags && request.resource_tags) {
    ASSIGN_OR_RETURN(auto tags, request.resource_tags());
    for (auto& [k, v] : tags) ctx.Set(fmt::format("aws:ResourceTag/{}", k), std::move(v));
  }
  // A key the request names more than once is multivalued (aws:TagKeys): its values, in order.
  const auto& keys = request.context;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto same_key = [&](const auto& kv) { return kv.first == keys[i].first; };
    if (std::any_of(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(i), same_key)) continue;  // done
    std::vector<std::string> values;
    for (size_t j = i; j < keys.size(); ++j)
      if (same_key(keys[j])) values.push_back(keys[j].second);
    ctx.SetMulti(keys[i].first, std::move(values));
  }
  return OkStatus();
}

StatusOr<policy::RequestContext> PolicyAuthorizer::ContextOf(const aws::CallContext& call,
                                                             const aws::AuthRequest& request) {
  if (IsRootPrincipal(call.principal)) {
    policy::RequestContext ctx(EvaluatedPrincipal(call.principal), request.action, request.resource);
    RETURN_IF_ERROR(BuildContext(call, request, nullptr, false, ctx));
    return ctx;
  }
  ASSIGN_OR_RETURN(Subject subject, SubjectOf(call.principal));
  ASSIGN_OR_RETURN(std::shared_ptr<const Entity> entity, PoliciesOf(call.principal, subject.entity));
  policy::RequestContext ctx(std::move(subject.principal), request.action, request.resource);
  RETURN_IF_ERROR(BuildContext(call, request, entity.get(), false, ctx));
  return ctx;
}

StatusOr<PolicyAuthorizer::Evaluation> PolicyAuthorizer::Evaluate(const aws::CallContext& call,
                                                                  const aws::AuthRequest& request,
                                                                  const Overrides* overrides) {
  const aws::Principal& principal = call.principal;
  const bool only_given = overrides != nullptr && overrides->only_given_policies;
  policy::Principal evaluated;  // anonymous: SimulateCustomPolicy without a caller
  evaluated.account = principal.account;
  std::shared_ptr<const Entity> entity;  // whose tags the context carries (null: none)
  if (!(only_given && IsRootPrincipal(principal))) {
    ASSIGN_OR_RETURN(Subject subject, SubjectOf(principal));
    ASSIGN_OR_RETURN(entity, PoliciesOf(principal, subject.entity));
    evaluated = std::move(subject.principal);
  }
  // `decider`'s policies decide; `entity` gives the principal's tags.
  std::shared_ptr<const Entity> decider = entity;
  if (overrides != nullptr) {
    if (overrides->policies_of && !only_given) {
      ASSIGN_OR_RETURN(decider, PoliciesOf(principal, *overrides->policies_of));
    }
    auto changed = only_given ? std::make_shared<Entity>() : std::make_shared<Entity>(*decider);
    policy::PolicySet& set = changed->set;
    set.identity.insert(set.identity.end(), overrides->extra_identity.begin(), overrides->extra_identity.end());
    if (overrides->boundary) set.boundary = overrides->boundary;
    set.resource = overrides->resource;
    set.resource_account = overrides->resource_account;
    changed->reads_resource_tags = NamesResourceTags(set);
    decider = std::move(changed);
  }
  // Built in place in the answer (a RequestContext is costly to move: the hot path's context).
  StatusOr<Evaluation> out(Evaluation{
      {}, policy::RequestContext(std::move(evaluated), request.action, request.resource),
      std::shared_ptr<const policy::PolicySet>(decider, &decider->set)});  // lives as long as `decider`
  RETURN_IF_ERROR(BuildContext(call, request, entity.get(), decider->reads_resource_tags, out->context));
  out->result = policy::Evaluate(out->context, decider->set);
  return out;
}

bool PolicyAuthorizer::Evaluates(const aws::Principal& principal) const { return !IsRootPrincipal(principal); }

Status PolicyAuthorizer::Authorize(const aws::CallContext& call, const aws::AuthRequest& request) {
  if (IsRootPrincipal(call.principal)) return OkStatus();
  // Evaluate's work on a context that keeps only the keys the entity's policies read (the same
  // decision, as ReadKeys promises), remembered by what it depends on.
  ASSIGN_OR_RETURN(Subject subject, SubjectOf(call.principal));
  ASSIGN_OR_RETURN(std::shared_ptr<const Entity> entity, PoliciesOf(call.principal, subject.entity));
  policy::RequestContext ctx(std::move(subject.principal), request.action, request.resource, &entity->read_keys);
  RETURN_IF_ERROR(BuildContext(call, request, entity.get(), entity->reads_resource_tags, ctx));
  // The decision key: the entity, then the context. (A set with a resource policy would also
  // depend on the principal; PoliciesOf's sets have none.)
  thread_local std::string key;
  key.assign(reinterpret_cast<const char*>(&entity->serial), sizeof entity->serial);
  ctx.AppendDecisionKey(key);
  std::optional<Decided> decided;
  {
    std::lock_guard lock(decisions_mu_);
    if (auto it = decisions_.find(key); it != decisions_.end()) decided = it->second;
  }
  if (!decided) {
    const policy::EvaluationResult r = policy::Evaluate(ctx, entity->set);
    decided = Decided{r.decision, r.decided_by};
    std::lock_guard lock(decisions_mu_);
    if (decisions_.size() >= kMaxDecisions) decisions_.clear();
    decisions_.emplace(key, *decided);
  }
  if (decided->decision == policy::Decision::kAllow) return OkStatus();
  if (request.denial_form == aws::DenialForm::kUnauthorizedOperation) {
    const std::string why = policy::DenialMessage(ctx.principal().arn, ctx.action(), /*resource=*/"",
                                                  decided->decision, decided->decided_by);
    return PermissionDenied(fmt::format("You are not authorized to perform this operation. {}", why));
  }
  return PermissionDenied(
      policy::DenialMessage(ctx.principal().arn, ctx.action(), ctx.resource(), decided->decision, decided->decided_by));
}

}  // namespace paddock::iam::api
