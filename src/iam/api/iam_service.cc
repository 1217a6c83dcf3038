#include "iam/api/iam_service.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <regex>
#include <set>
#include <vector>

#include "iam/api/models/iam_model.h"

namespace paddock::iam::api {
namespace json = boost::json;

namespace {

constexpr std::string_view kXmlns = "https://iam.amazonaws.com/doc/2010-05-08/";

constexpr std::string_view kActions[] = {
    // Roles
    "CreateRole", "GetRole", "ListRoles", "DeleteRole", "UpdateRole", "UpdateAssumeRolePolicy", "TagRole", "UntagRole",
    "ListRoleTags", "CreateServiceLinkedRole", "PutRolePermissionsBoundary", "DeleteRolePermissionsBoundary",
    "PutUserPermissionsBoundary", "DeleteUserPermissionsBoundary",
    // Inline policies
    "PutRolePolicy", "GetRolePolicy", "ListRolePolicies", "DeleteRolePolicy", "PutUserPolicy", "GetUserPolicy",
    "ListUserPolicies", "DeleteUserPolicy",
    // Managed policies
    "CreatePolicy", "GetPolicy", "ListPolicies", "DeletePolicy", "CreatePolicyVersion", "GetPolicyVersion",
    "ListPolicyVersions", "DeletePolicyVersion", "SetDefaultPolicyVersion", "AttachRolePolicy", "DetachRolePolicy",
    "ListAttachedRolePolicies", "AttachUserPolicy", "DetachUserPolicy", "ListAttachedUserPolicies",
    // Users and access keys
    "CreateUser", "GetUser", "ListUsers", "DeleteUser", "TagUser", "UntagUser", "ListUserTags", "CreateAccessKey",
    "ListAccessKeys", "UpdateAccessKey", "DeleteAccessKey",
    // Debugging
    "SimulatePrincipalPolicy"};

Status ValidationError(std::string message) { return InvalidArgument(std::move(message), "ValidationError"); }

// "RoleName" -> "roleName": how IAM names a member in a validation message.
std::string MemberWord(std::string_view name) {
  std::string out(name);
  if (!out.empty()) out[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(out[0])));
  return out;
}

size_t CodePoints(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

bool IsAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// IAM's URL encoding of policy documents: every byte but the unreserved ones as %XX (botocore
// decodes with urllib's unquote, so a space must be %20, not '+').
std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3 / 2);
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string Iso(TimePoint t) {
  const int64_t ms = EpochMillis(t);
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", fmt::gmtime(secs));
}

std::string X(std::string_view name, std::string_view text) {
  return fmt::format("<{0}>{1}</{0}>", name, aws::XmlEscape(text));
}

std::string TagsXml(const std::vector<Tag>& tags) {
  std::string out = "<Tags>";
  for (const auto& t : tags) out += "<member>" + X("Key", t.key) + X("Value", t.value) + "</member>";
  return out + "</Tags>";
}

std::string BoundaryXml(std::string_view arn) {
  if (arn.empty()) return "";
  return "<PermissionsBoundary><PermissionsBoundaryType>PermissionsBoundaryPolicy</PermissionsBoundaryType>" +
         X("PermissionsBoundaryArn", arn) + "</PermissionsBoundary>";
}

// What GetRole/CreateRole answer; ListRoles leaves out tags, the boundary and RoleLastUsed, as
// IAM does.
std::string RoleXml(const Role& r, bool full) {
  std::string out = X("Path", r.path) + X("RoleName", r.name) + X("RoleId", r.id) + X("Arn", r.arn) +
                    X("CreateDate", Iso(r.created_at)) + X("AssumeRolePolicyDocument", UrlEncode(r.trust_policy));
  if (!r.description.empty()) out += X("Description", r.description);
  out += X("MaxSessionDuration", std::to_string(r.max_session_duration));
  if (full) {
    out += BoundaryXml(r.boundary_arn);
    if (!r.tags.empty()) out += TagsXml(r.tags);
    out += "<RoleLastUsed/>";
  }
  return out;
}

std::string UserXml(const User& u, bool full) {
  std::string out = X("Path", u.path) + X("UserName", u.name) + X("UserId", u.id) + X("Arn", u.arn) +
                    X("CreateDate", Iso(u.created_at));
  if (full) {
    out += BoundaryXml(u.boundary_arn);
    if (!u.tags.empty()) out += TagsXml(u.tags);
  }
  return out;
}

std::string PolicyXml(const ManagedPolicy& p, bool full) {
  std::string out = X("PolicyName", p.name) + X("PolicyId", p.id) + X("Arn", p.arn) + X("Path", p.path) +
                    X("DefaultVersionId", p.default_version) +
                    X("AttachmentCount", std::to_string(p.attachment_count)) +
                    X("PermissionsBoundaryUsageCount", std::to_string(p.boundary_usage_count)) +
                    "<IsAttachable>true</IsAttachable>";
  if (full && !p.description.empty()) out += X("Description", p.description);
  out += X("CreateDate", Iso(p.created_at)) + X("UpdateDate", Iso(p.updated_at));
  if (full && !p.tags.empty()) out += TagsXml(p.tags);
  return out;
}

std::string VersionXml(const PolicyVersion& v, bool with_document) {
  std::string out;
  if (with_document) out += X("Document", UrlEncode(v.document));
  return out + X("VersionId", v.version_id) + X("IsDefaultVersion", v.is_default ? "true" : "false") +
         X("CreateDate", Iso(v.created_at));
}

std::string PageTail(const std::optional<std::string>& next_marker) {
  if (!next_marker) return "<IsTruncated>false</IsTruncated>";
  return "<IsTruncated>true</IsTruncated>" + X("Marker", *next_marker);
}

std::string Response(std::string_view action, std::string_view request_id, std::optional<std::string> result) {
  std::string out = fmt::format("<{}Response xmlns=\"{}\">", action, kXmlns);
  if (result) out += fmt::format("<{0}Result>{1}</{0}Result>", action, *result);
  out += fmt::format("<ResponseMetadata><RequestId>{}</RequestId></ResponseMetadata></{}Response>",
                     aws::XmlEscape(request_id), action);
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The model: input shapes and error statuses.

class IamService::Model {
 public:
  struct Shape {
    std::string type;
    std::optional<int64_t> min, max;
    std::optional<std::regex> pattern;
    std::string pattern_text;
    std::vector<std::string> enums;
    std::string member;                                       // list: the element shape
    std::vector<std::pair<std::string, std::string>> members;  // structure: (name, shape)
    std::set<std::string> required;
  };

  static StatusOr<std::unique_ptr<Model>> Parse(std::string_view text) {
    boost::system::error_code ec;
    json::value root = json::parse(text, ec);
    if (ec || !root.is_object()) return Internal("the embedded IAM model is not valid JSON");
    auto m = std::make_unique<Model>();
    for (const auto& [name, def] : root.at("shapes").as_object()) {
      const json::object& d = def.as_object();
      Shape s;
      s.type = std::string(d.at("type").as_string());
      if (const auto* v = d.if_contains("min")) s.min = v->to_number<int64_t>();
      if (const auto* v = d.if_contains("max")) s.max = v->to_number<int64_t>();
      if (const auto* v = d.if_contains("pattern")) {
        s.pattern_text = std::string(v->as_string());
        // ECMAScript has no Unicode classes: inside [...] (the only place the model uses them)
        // \p{L}, \p{Z} and \p{N} become their ASCII members; only ASCII values are matched.
        std::string ecma = s.pattern_text;
        for (auto [from, to] : {std::pair<std::string_view, std::string_view>{"\\p{L}", "A-Za-z"},
                                {"\\p{Z}", " "},
                                {"\\p{N}", "0-9"}})
          for (size_t at; (at = ecma.find(from)) != std::string::npos;) ecma.replace(at, from.size(), to);
        // A pattern std::regex still cannot read is left to the owner's checks.
        try {
          s.pattern.emplace(ecma, std::regex::ECMAScript | std::regex::optimize);
        } catch (const std::regex_error&) {
        }
      }
      if (const auto* v = d.if_contains("enum"))
        for (const auto& e : v->as_array()) s.enums.emplace_back(e.as_string());
      if (const auto* v = d.if_contains("member")) s.member = std::string(v->at("shape").as_string());
      if (const auto* v = d.if_contains("members"))
        for (const auto& [mn, md] : v->as_object())
          s.members.emplace_back(std::string(mn), std::string(md.at("shape").as_string()));
      if (const auto* v = d.if_contains("required"))
        for (const auto& r : v->as_array()) s.required.emplace(r.as_string());
      if (const auto* e = d.if_contains("error"); e && e->is_object()) {
        const json::object& eo = e->as_object();
        if (eo.contains("code") && eo.contains("httpStatusCode"))
          m->error_status_[std::string(eo.at("code").as_string())] = static_cast<int>(eo.at("httpStatusCode").to_number<int64_t>());
      }
      m->shapes_.emplace(std::string(name), std::move(s));
    }
    for (const auto& [name, def] : root.at("operations").as_object()) {
      const json::object& d = def.as_object();
      if (const auto* in = d.if_contains("input")) m->inputs_[std::string(name)] = std::string(in->at("shape").as_string());
    }
    return m;
  }

  // The request's parameters for `action`, decoded by the input shape (IAM's lists are
  // "Name.member.N", their structures "Name.member.N.Field") and checked against it.
  struct Input {
    std::map<std::string, std::string> scalars;
    std::map<std::string, std::vector<std::string>> lists;
    std::map<std::string, std::vector<std::map<std::string, std::string>>> structs;

    std::optional<std::string> Get(const std::string& name) const {
      auto it = scalars.find(name);
      if (it == scalars.end()) return std::nullopt;
      return it->second;
    }
    std::string Or(const std::string& name, std::string fallback) const { return Get(name).value_or(std::move(fallback)); }
  };

  StatusOr<Input> Decode(std::string_view action, const aws::QueryParams& params) const {
    Input in;
    auto op = inputs_.find(std::string(action));
    if (op == inputs_.end()) return in;
    const Shape& shape = shapes_.at(op->second);
    std::vector<std::string> errors;
    for (const auto& [member, shape_name] : shape.members) {
      const Shape& ms = shapes_.at(shape_name);
      const std::string word = MemberWord(member);
      if (ms.type == "list") {
        const Shape& elem = shapes_.at(ms.member);
        std::map<int, std::map<std::string, std::string>> items;
        const std::string prefix = member + ".member.";
        for (const auto& [k, v] : params) {
          if (!k.starts_with(prefix)) continue;
          std::string_view rest = std::string_view(k).substr(prefix.size());
          size_t dot = rest.find('.');
          int index = 0;
          std::string_view num = rest.substr(0, dot);
          auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), index);
          if (ec != std::errc() || p != num.data() + num.size() || index < 1) continue;
          items[index][dot == std::string_view::npos ? "" : std::string(rest.substr(dot + 1))] = v;
        }
        bool present = !items.empty() || aws::FindParam(params, member).has_value();
        if (!present) {
          if (shape.required.contains(member))
            errors.push_back(fmt::format("Value null at '{}' failed to satisfy constraint: Member must not be null", word));
          continue;
        }
        if (ms.max && static_cast<int64_t>(items.size()) > *ms.max)
          errors.push_back(fmt::format("Value at '{}' failed to satisfy constraint: Member must have length less than or "
                                       "equal to {}",
                                       word, *ms.max));
        if (elem.type == "structure") {
          auto& out = in.structs[member];
          for (auto& [i, fields] : items) {
            for (const auto& [fname, fshape] : elem.members) {
              auto it = fields.find(fname);
              const std::string fword = fmt::format("{}.{}.member.{}", word, i, MemberWord(fname));
              if (it == fields.end()) {
                if (elem.required.contains(fname))
                  errors.push_back(fmt::format("Value null at '{}' failed to satisfy constraint: Member must not be null", fword));
                continue;
              }
              CheckScalar(shapes_.at(fshape), fword, it->second, errors);
            }
            out.push_back(std::move(fields));
          }
        } else {
          auto& out = in.lists[member];
          for (auto& [i, fields] : items) {
            const std::string& v = fields[""];
            CheckScalar(elem, fmt::format("{}.{}.member", word, i), v, errors);
            out.push_back(v);
          }
        }
        continue;
      }
      std::optional<std::string_view> v = aws::FindParam(params, member);
      if (!v) {
        if (shape.required.contains(member))
          errors.push_back(fmt::format("Value null at '{}' failed to satisfy constraint: Member must not be null", word));
        continue;
      }
      CheckScalar(ms, word, *v, errors);
      in.scalars[member] = std::string(*v);
    }
    if (errors.empty()) return in;
    std::string message = fmt::format("{} validation error{} detected: ", errors.size(), errors.size() == 1 ? "" : "s");
    for (size_t i = 0; i < errors.size(); ++i) message += (i ? "; " : "") + errors[i];
    return ValidationError(message);
  }

  int HttpStatus(std::string_view code, int fallback) const {
    auto it = error_status_.find(std::string(code));
    return it == error_status_.end() ? fallback : it->second;
  }

 private:
  static void CheckScalar(const Shape& s, const std::string& word, std::string_view v, std::vector<std::string>& errors) {
    const std::string shown = v.size() > 64 ? std::string(v.substr(0, 64)) + "..." : std::string(v);
    if (s.type == "string") {
      const auto n = static_cast<int64_t>(CodePoints(v));
      if (s.min && n < *s.min)
        errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have length greater "
                                     "than or equal to {}",
                                     shown, word, *s.min));
      else if (s.max && n > *s.max)
        errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have length less than "
                                     "or equal to {}",
                                     shown, word, *s.max));
      else if (!s.enums.empty() && std::find(s.enums.begin(), s.enums.end(), v) == s.enums.end())
        errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must satisfy enum value set: "
                                     "[{}]",
                                     shown, word, fmt::join(s.enums, ", ")));
      // Short ASCII values only: std::regex recurses per character and reads bytes, not code points.
      else if (s.pattern && v.size() <= 2048 && IsAscii(v) && !std::regex_match(v.begin(), v.end(), *s.pattern))
        errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must satisfy regular "
                                     "expression pattern: {}",
                                     shown, word, s.pattern_text));
    } else if (s.type == "integer") {
      int64_t n = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || p != v.data() + v.size()) {
        errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must be a number", shown, word));
      } else if (s.min && n < *s.min) {
        errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have value greater than "
                                     "or equal to {}",
                                     shown, word, *s.min));
      } else if (s.max && n > *s.max) {
        errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have value less than or "
                                     "equal to {}",
                                     shown, word, *s.max));
      }
    } else if (s.type == "boolean") {
      if (v != "true" && v != "false")
        errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must be a boolean", shown, word));
    }
  }

  std::map<std::string, Shape, std::less<>> shapes_;
  std::map<std::string, std::string, std::less<>> inputs_;
  std::map<std::string, int, std::less<>> error_status_;
};

// ---------------------------------------------------------------------------------------------

StatusOr<std::unique_ptr<IamService>> IamService::Create(Directory& directory, Accounts& accounts) {
  ASSIGN_OR_RETURN(auto model, Model::Parse(IamModelJson()));
  return std::unique_ptr<IamService>(new IamService(directory, accounts, std::move(model)));
}

IamService::IamService(Directory& directory, Accounts& accounts, std::unique_ptr<Model> model)
    : directory_(directory), accounts_(accounts), model_(std::move(model)) {}

IamService::~IamService() = default;

bool IamService::Implements(std::string_view action) const {
  return std::find(std::begin(kActions), std::end(kActions), action) != std::end(kActions);
}

std::optional<aws::ThrottleGroup> IamService::ThrottleGroupFor(std::string_view) const { return std::nullopt; }

namespace {

std::string_view IamCode(std::string_view code) {
  // The front's generic authentication failure, in IAM's and STS's words.
  if (code == "UnrecognizedClientException") return "InvalidClientTokenId";
  if (code == "AccessDeniedException") return "AccessDenied";
  if (code == "InvalidParameterException") return "InvalidInput";
  if (code == "ClientException") return "InvalidInput";
  if (code == "ServerException") return "ServiceFailure";
  return code;
}

}  // namespace

std::string IamService::ErrorXml(std::string_view code, std::string_view message, std::string_view request_id) const {
  const std::string_view c = IamCode(code);
  return aws::QueryErrorXml(c, message, request_id, /*server_fault=*/ErrorHttpStatus(code, 400) >= 500);
}

int IamService::ErrorHttpStatus(std::string_view code, int status) const {
  const std::string_view c = IamCode(code);
  if (c == "InvalidClientTokenId" || c == "AccessDenied") return 403;
  if (c == "ValidationError") return 400;
  return model_->HttpStatus(c, status);
}

namespace {

using Input = IamService::Model::Input;

// MaxItems and Marker of a list call.
StatusOr<PageRequest> PageOf(const Input& in) {
  PageRequest page;
  page.marker = in.Or("Marker", "");
  if (auto m = in.Get("MaxItems")) page.max_items = std::stoi(*m);  // checked 1..1000 by the model
  return page;
}

std::vector<Tag> TagsOf(const Input& in) {
  std::vector<Tag> out;
  auto it = in.structs.find("Tags");
  if (it == in.structs.end()) return out;
  for (const auto& fields : it->second) {
    Tag t;
    if (auto k = fields.find("Key"); k != fields.end()) t.key = k->second;
    if (auto v = fields.find("Value"); v != fields.end()) t.value = v->second;
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<std::string> ListOf(const Input& in, const std::string& name) {
  auto it = in.lists.find(name);
  return it == in.lists.end() ? std::vector<std::string>{} : it->second;
}

bool IsAwsPolicyArn(std::string_view arn) { return arn.starts_with("arn:aws:iam::aws:policy/"); }

// IAM refuses changes to AWS-managed policies as it refuses any action on another account's
// resource.
Status NotAuthorized(const aws::CallContext& ctx, std::string_view arn) {
  return PermissionDenied(fmt::format("User: {} is not authorized to perform: iam:{} on resource: policy {}",
                                      ctx.principal.arn, ctx.action, arn),
                          "AccessDenied");
}

// ContextEntries.member.N.{ContextKeyName, ContextKeyValues.member.M}, as request context keys.
std::vector<std::pair<std::string, std::string>> ContextEntriesOf(const aws::QueryParams& params) {
  std::map<std::string, std::string> names;                      // N -> key name
  std::map<std::string, std::vector<std::string>> values;         // N -> values in order
  constexpr std::string_view kPrefix = "ContextEntries.member.";
  for (const auto& [k, v] : params) {
    if (!k.starts_with(kPrefix)) continue;
    std::string_view rest = std::string_view(k).substr(kPrefix.size());
    size_t dot = rest.find('.');
    if (dot == std::string_view::npos) continue;
    std::string n(rest.substr(0, dot));
    std::string_view field = rest.substr(dot + 1);
    if (field == "ContextKeyName") names[n] = v;
    if (field.starts_with("ContextKeyValues.member.")) values[n].push_back(v);
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [n, name] : names)
    for (const std::string& v : values[n]) out.emplace_back(name, v);
  return out;
}

std::string_view DecisionName(policy::Decision d) {
  switch (d) {
    case policy::Decision::kAllow: return "allowed";
    case policy::Decision::kExplicitDeny: return "explicitDeny";
    case policy::Decision::kImplicitDeny: return "implicitDeny";
  }
  return "implicitDeny";
}

std::string PositionXml(std::string_view name, policy::TextPosition p) {
  return fmt::format("<{0}><Line>{1}</Line><Column>{2}</Column></{0}>", name, p.line, p.column);
}

// SimulatePrincipalPolicy (IamService::SetAuthorizer).
StatusOr<std::string> Simulate(Directory& directory, PolicyAuthorizer* authorizer, const aws::CallContext& ctx,
                               const Input& in, const aws::QueryParams& params) {
  if (authorizer == nullptr) return Internal("SimulatePrincipalPolicy needs the node's authorizer");
  const AccountId& account = ctx.scope.account;
  const std::string source = in.Or("PolicySourceArn", "");
  // arn:aws:iam::<account>:user/<path><name> or role/<path><name>: the simulated principal is the
  // user, or a session of the role, with that entity's own policies — what a live call sees.
  const std::string prefix = fmt::format("arn:aws:iam::{}:", account.str());
  if (!source.starts_with(prefix)) {
    return InvalidArgument(fmt::format("Invalid ARN: {} is not a user or role of this account.", source), "InvalidInput");
  }
  const std::string_view entity = std::string_view(source).substr(prefix.size());
  const std::string name(entity.substr(entity.rfind('/') + 1));
  aws::Principal who;
  who.account = account;
  if (entity.starts_with("user/")) {
    ASSIGN_OR_RETURN(User u, directory.GetUser(account, name));
    who.kind = aws::PrincipalKind::kUser;
    who.arn = u.arn;
    who.user_id = u.id;
    who.user_name = u.name;
  } else if (entity.starts_with("role/")) {
    ASSIGN_OR_RETURN(Role r, directory.GetRole(account, name));
    who.kind = aws::PrincipalKind::kAssumedRole;
    who.arn = r.arn;
    who.role_arn = r.arn;
    who.user_id = r.id;
  } else {
    return InvalidArgument(fmt::format("Invalid ARN: {} is not a user or role of this account.", source), "InvalidInput");
  }
  std::vector<std::string> resources = ListOf(in, "ResourceArns");
  if (resources.empty()) resources.push_back("*");
  const auto context = ContextEntriesOf(params);
  std::string out = "<EvaluationResults>";
  for (const std::string& action : ListOf(in, "ActionNames")) {
    for (const std::string& resource : resources) {
      ASSIGN_OR_RETURN(PolicyAuthorizer::Evaluation e,
                       authorizer->Evaluate(who, aws::AuthRequest{action, resource, context}, ctx.now));
      out += "<member>" + X("EvalActionName", action) + X("EvalResourceName", resource) +
             X("EvalDecision", DecisionName(e.result.decision)) + "<MatchedStatements>";
      for (const policy::MatchedStatement& m : e.result.matched) {
        const policy::NamedPolicy* p = nullptr;
        std::string_view type = "none";
        if (m.type == policy::PolicyType::kIdentity && m.policy_index < e.policies->identity.size()) {
          p = &e.policies->identity[m.policy_index];
          type = p->id.starts_with("arn:aws:iam::aws:") ? "aws-managed"
                 : p->id.starts_with("arn:")           ? "user-managed"
                 : who.kind == aws::PrincipalKind::kUser ? "user"
                                                          : "role";
        } else if (m.type == policy::PolicyType::kPermissionsBoundary && e.policies->boundary) {
          p = &*e.policies->boundary;
          type = p->id.starts_with("arn:aws:iam::aws:") ? "aws-managed" : "user-managed";
        }
        if (p == nullptr) continue;
        out += "<member>" + X("SourcePolicyId", p->id) + X("SourcePolicyType", type) +
               PositionXml("StartPosition", p->policy.start(m.statement_index)) +
               PositionXml("EndPosition", p->policy.end(m.statement_index)) + "</member>";
      }
      out += "</MatchedStatements><MissingContextValues/>";
      if (e.result.allowed_by_boundary) {
        out += "<PermissionsBoundaryDecisionDetail>" +
               X("AllowedByPermissionsBoundary", *e.result.allowed_by_boundary ? "true" : "false") +
               "</PermissionsBoundaryDecisionDetail>";
      }
      out += "</member>";
    }
  }
  out += "</EvaluationResults><IsTruncated>false</IsTruncated>";
  return Response(ctx.action, ctx.request_id, std::move(out));
}

}  // namespace

StatusOr<std::string> IamService::Call(const aws::CallContext& ctx, const aws::QueryParams& params) {
  const std::string& a = ctx.action;
  const AccountId& account = ctx.scope.account;
  ASSIGN_OR_RETURN(Input in, model_->Decode(a, params));
  auto ok = [&](std::optional<std::string> result = std::nullopt) -> StatusOr<std::string> {
    return Response(a, ctx.request_id, std::move(result));
  };
  const PrincipalRef role{PrincipalType::kRole, in.Or("RoleName", "")};

  // ---- Roles
  if (a == "CreateRole") {
    RoleSpec spec;
    spec.name = in.Or("RoleName", "");
    spec.path = in.Or("Path", "/");
    spec.trust_policy = in.Or("AssumeRolePolicyDocument", "");
    spec.description = in.Or("Description", "");
    if (auto d = in.Get("MaxSessionDuration")) spec.max_session_duration = std::stoi(*d);
    spec.boundary_arn = in.Or("PermissionsBoundary", "");
    spec.tags = TagsOf(in);
    ASSIGN_OR_RETURN(Role r, directory_.CreateRole(account, spec));
    return ok("<Role>" + RoleXml(r, true) + "</Role>");
  }
  if (a == "GetRole") {
    ASSIGN_OR_RETURN(Role r, directory_.GetRole(account, role.name));
    return ok("<Role>" + RoleXml(r, true) + "</Role>");
  }
  if (a == "ListRoles") {
    ASSIGN_OR_RETURN(PageRequest page, PageOf(in));
    ASSIGN_OR_RETURN(Page<Role> roles, directory_.ListRoles(account, in.Or("PathPrefix", "/"), page));
    std::string out = "<Roles>";
    for (const auto& r : roles.items) out += "<member>" + RoleXml(r, false) + "</member>";
    return ok(out + "</Roles>" + PageTail(roles.next_marker));
  }
  if (a == "DeleteRole") {
    RETURN_IF_ERROR(directory_.DeleteRole(account, role.name));
    return ok();
  }
  if (a == "UpdateRole") {
    std::optional<int32_t> max;
    if (auto d = in.Get("MaxSessionDuration")) max = std::stoi(*d);
    RETURN_IF_ERROR(directory_.UpdateRole(account, role.name, in.Get("Description"), max));
    return ok("");
  }
  if (a == "UpdateAssumeRolePolicy") {
    RETURN_IF_ERROR(directory_.UpdateTrustPolicy(account, role.name, in.Or("PolicyDocument", "")));
    return ok();
  }
  if (a == "CreateServiceLinkedRole") {
    ASSIGN_OR_RETURN(Role r, directory_.CreateServiceLinkedRole(account, in.Or("AWSServiceName", ""), in.Or("Description", "")));
    return ok("<Role>" + RoleXml(r, true) + "</Role>");
  }

  // ---- Permissions boundaries
  if (a == "PutRolePermissionsBoundary" || a == "DeleteRolePermissionsBoundary" || a == "PutUserPermissionsBoundary" ||
      a == "DeleteUserPermissionsBoundary") {
    const PrincipalRef who =
        a.find("Role") != std::string::npos ? role : PrincipalRef{PrincipalType::kUser, in.Or("UserName", "")};
    std::optional<std::string> arn;
    if (a.starts_with("Put")) arn = in.Or("PermissionsBoundary", "");
    RETURN_IF_ERROR(directory_.SetBoundary(account, who, std::move(arn)));
    return ok();
  }

  // ---- Tags of roles and users
  if (a == "TagRole" || a == "TagUser") {
    const PrincipalRef who = a == "TagRole" ? role : PrincipalRef{PrincipalType::kUser, in.Or("UserName", "")};
    RETURN_IF_ERROR(directory_.TagPrincipal(account, who, TagsOf(in)));
    return ok();
  }
  if (a == "UntagRole" || a == "UntagUser") {
    const PrincipalRef who = a == "UntagRole" ? role : PrincipalRef{PrincipalType::kUser, in.Or("UserName", "")};
    RETURN_IF_ERROR(directory_.UntagPrincipal(account, who, ListOf(in, "TagKeys")));
    return ok();
  }
  if (a == "ListRoleTags" || a == "ListUserTags") {
    std::vector<Tag> tags;
    if (a == "ListRoleTags") {
      ASSIGN_OR_RETURN(Role r, directory_.GetRole(account, role.name));
      tags = std::move(r.tags);
    } else {
      ASSIGN_OR_RETURN(User u, directory_.GetUser(account, in.Or("UserName", "")));
      tags = std::move(u.tags);
    }
    return ok(TagsXml(tags) + "<IsTruncated>false</IsTruncated>");
  }

  // ---- Inline policies
  if (a == "PutRolePolicy" || a == "PutUserPolicy" || a == "GetRolePolicy" || a == "GetUserPolicy" ||
      a == "ListRolePolicies" || a == "ListUserPolicies" || a == "DeleteRolePolicy" || a == "DeleteUserPolicy") {
    const bool is_role = a.find("Role") != std::string::npos;
    const PrincipalRef who = is_role ? role : PrincipalRef{PrincipalType::kUser, in.Or("UserName", "")};
    const std::string policy = in.Or("PolicyName", "");
    if (a.starts_with("Put")) {
      RETURN_IF_ERROR(directory_.PutInlinePolicy(account, who, policy, in.Or("PolicyDocument", "")));
      return ok();
    }
    if (a.starts_with("Get")) {
      ASSIGN_OR_RETURN(std::string doc, directory_.GetInlinePolicy(account, who, policy));
      return ok(X(is_role ? "RoleName" : "UserName", who.name) + X("PolicyName", policy) +
                X("PolicyDocument", UrlEncode(doc)));
    }
    if (a.starts_with("List")) {
      ASSIGN_OR_RETURN(PageRequest page, PageOf(in));
      ASSIGN_OR_RETURN(Page<std::string> names, directory_.ListInlinePolicies(account, who, page));
      std::string out = "<PolicyNames>";
      for (const auto& n : names.items) out += X("member", n);
      return ok(out + "</PolicyNames>" + PageTail(names.next_marker));
    }
    RETURN_IF_ERROR(directory_.DeleteInlinePolicy(account, who, policy));
    return ok();
  }

  // ---- Managed policies
  const std::string policy_arn = in.Or("PolicyArn", "");
  if (a == "CreatePolicy") {
    PolicySpec spec;
    spec.name = in.Or("PolicyName", "");
    spec.path = in.Or("Path", "/");
    spec.document = in.Or("PolicyDocument", "");
    spec.description = in.Or("Description", "");
    spec.tags = TagsOf(in);
    ASSIGN_OR_RETURN(ManagedPolicy p, directory_.CreatePolicy(account, spec));
    return ok("<Policy>" + PolicyXml(p, true) + "</Policy>");
  }
  if (a == "GetPolicy") {
    ASSIGN_OR_RETURN(ManagedPolicy p, directory_.GetPolicy(account, policy_arn));
    return ok("<Policy>" + PolicyXml(p, true) + "</Policy>");
  }
  if (a == "ListPolicies") {
    PolicyFilter filter;
    const std::string scope = in.Or("Scope", "All");
    filter.scope = scope == "AWS" ? PolicyScope::kAws : scope == "Local" ? PolicyScope::kLocal : PolicyScope::kAll;
    filter.only_attached = in.Or("OnlyAttached", "false") == "true";
    filter.path_prefix = in.Or("PathPrefix", "/");
    ASSIGN_OR_RETURN(PageRequest page, PageOf(in));
    ASSIGN_OR_RETURN(Page<ManagedPolicy> policies, directory_.ListPolicies(account, filter, page));
    std::string out = "<Policies>";
    for (const auto& p : policies.items) out += "<member>" + PolicyXml(p, false) + "</member>";
    return ok(out + "</Policies>" + PageTail(policies.next_marker));
  }
  if ((a == "DeletePolicy" || a == "CreatePolicyVersion" || a == "DeletePolicyVersion" ||
       a == "SetDefaultPolicyVersion") &&
      IsAwsPolicyArn(policy_arn))
    return NotAuthorized(ctx, policy_arn);
  if (a == "DeletePolicy") {
    RETURN_IF_ERROR(directory_.DeletePolicy(account, policy_arn));
    return ok();
  }
  if (a == "CreatePolicyVersion") {
    ASSIGN_OR_RETURN(PolicyVersion v, directory_.CreatePolicyVersion(account, policy_arn, in.Or("PolicyDocument", ""),
                                                                     in.Or("SetAsDefault", "false") == "true"));
    return ok("<PolicyVersion>" + VersionXml(v, false) + "</PolicyVersion>");
  }
  if (a == "GetPolicyVersion") {
    ASSIGN_OR_RETURN(PolicyVersion v, directory_.GetPolicyVersion(account, policy_arn, in.Or("VersionId", "")));
    return ok("<PolicyVersion>" + VersionXml(v, true) + "</PolicyVersion>");
  }
  if (a == "ListPolicyVersions") {
    ASSIGN_OR_RETURN(std::vector<PolicyVersion> versions, directory_.ListPolicyVersions(account, policy_arn));
    std::string out = "<Versions>";
    for (const auto& v : versions) out += "<member>" + VersionXml(v, false) + "</member>";
    return ok(out + "</Versions><IsTruncated>false</IsTruncated>");
  }
  if (a == "DeletePolicyVersion") {
    RETURN_IF_ERROR(directory_.DeletePolicyVersion(account, policy_arn, in.Or("VersionId", "")));
    return ok();
  }
  if (a == "SetDefaultPolicyVersion") {
    RETURN_IF_ERROR(directory_.SetDefaultPolicyVersion(account, policy_arn, in.Or("VersionId", "")));
    return ok();
  }
  if (a == "AttachRolePolicy" || a == "AttachUserPolicy" || a == "DetachRolePolicy" || a == "DetachUserPolicy") {
    const PrincipalRef who =
        a.find("Role") != std::string::npos ? role : PrincipalRef{PrincipalType::kUser, in.Or("UserName", "")};
    if (a.starts_with("Attach")) {
      RETURN_IF_ERROR(directory_.AttachPolicy(account, who, policy_arn));
    } else {
      RETURN_IF_ERROR(directory_.DetachPolicy(account, who, policy_arn));
    }
    return ok();
  }
  if (a == "ListAttachedRolePolicies" || a == "ListAttachedUserPolicies") {
    const PrincipalRef who = a == "ListAttachedRolePolicies" ? role : PrincipalRef{PrincipalType::kUser, in.Or("UserName", "")};
    ASSIGN_OR_RETURN(PageRequest page, PageOf(in));
    ASSIGN_OR_RETURN(Page<AttachedPolicy> attached,
                     directory_.ListAttachedPolicies(account, who, in.Or("PathPrefix", "/"), page));
    std::string out = "<AttachedPolicies>";
    for (const auto& p : attached.items) out += "<member>" + X("PolicyName", p.name) + X("PolicyArn", p.arn) + "</member>";
    return ok(out + "</AttachedPolicies>" + PageTail(attached.next_marker));
  }

  // ---- Users
  if (a == "CreateUser") {
    UserSpec spec;
    spec.name = in.Or("UserName", "");
    spec.path = in.Or("Path", "/");
    spec.boundary_arn = in.Or("PermissionsBoundary", "");
    spec.tags = TagsOf(in);
    ASSIGN_OR_RETURN(User u, directory_.CreateUser(account, spec));
    return ok("<User>" + UserXml(u, true) + "</User>");
  }
  // The user a user-scoped call names, or the caller: root acts for its own keys (empty name),
  // a user for itself; a role session must name a user.
  std::optional<std::string> named_user = in.Get("UserName");
  auto caller_user = [&]() -> StatusOr<std::string> {
    if (named_user) return *named_user;
    if (ctx.principal.kind == aws::PrincipalKind::kRoot) return std::string();
    if (ctx.principal.kind == aws::PrincipalKind::kUser) return ctx.principal.user_name;
    return ValidationError("Must specify userName when calling with non-User credentials");
  };
  if (a == "GetUser") {
    ASSIGN_OR_RETURN(std::string name, caller_user());
    if (name.empty()) {
      // The root user: IAM answers with its id and ARN only (no name, no path).
      ASSIGN_OR_RETURN(auto acct, accounts_.GetAccount(account));
      const TimePoint created = acct ? acct->created_at : ctx.now;
      return ok("<User>" + X("UserId", account.str()) + X("Arn", RootArn(account)) + X("CreateDate", Iso(created)) +
                "</User>");
    }
    ASSIGN_OR_RETURN(User u, directory_.GetUser(account, name));
    return ok("<User>" + UserXml(u, true) + "</User>");
  }
  if (a == "ListUsers") {
    ASSIGN_OR_RETURN(PageRequest page, PageOf(in));
    ASSIGN_OR_RETURN(Page<User> users, directory_.ListUsers(account, in.Or("PathPrefix", "/"), page));
    std::string out = "<Users>";
    for (const auto& u : users.items) out += "<member>" + UserXml(u, false) + "</member>";
    return ok(out + "</Users>" + PageTail(users.next_marker));
  }
  if (a == "DeleteUser") {
    RETURN_IF_ERROR(directory_.DeleteUser(account, in.Or("UserName", ""), &Accounts::UserHasKeys));
    return ok();
  }

  // ---- Access keys
  if (a == "CreateAccessKey") {
    ASSIGN_OR_RETURN(std::string name, caller_user());
    AccessKey key;
    if (name.empty()) {
      ASSIGN_OR_RETURN(key, accounts_.CreateAccessKey(account));
    } else {
      ASSIGN_OR_RETURN(key, accounts_.CreateUserAccessKey(account, [&](store::ReadTxn& txn) -> StatusOr<KeyOwner> {
        ASSIGN_OR_RETURN(auto user, Directory::FindUser(txn, account, name));
        if (!user) return NotFound(fmt::format("The user with name {} cannot be found.", name), "NoSuchEntity");
        return KeyOwner{user->name, user->id, user->arn};
      }));
    }
    std::string out = "<AccessKey>";
    if (!key.user_name.empty()) out += X("UserName", key.user_name);
    out += X("AccessKeyId", key.id.str()) + X("Status", "Active") + X("SecretAccessKey", key.secret) +
           X("CreateDate", Iso(key.created_at)) + "</AccessKey>";
    return ok(out);
  }
  if (a == "ListAccessKeys") {
    ASSIGN_OR_RETURN(std::string name, caller_user());
    if (!name.empty()) {
      ASSIGN_OR_RETURN(User u, directory_.GetUser(account, name));
      name = u.name;
    }
    ASSIGN_OR_RETURN(std::vector<AccessKey> keys, accounts_.ListUserAccessKeys(account, name));
    std::string out = "<AccessKeyMetadata>";
    for (const auto& k : keys) {
      out += "<member>";
      if (!k.user_name.empty()) out += X("UserName", k.user_name);
      out += X("AccessKeyId", k.id.str()) +
             X("Status", k.status == AccessKeyStatus::kActive ? "Active" : "Inactive") +
             X("CreateDate", Iso(k.created_at)) + "</member>";
    }
    return ok(out + "</AccessKeyMetadata><IsTruncated>false</IsTruncated>");
  }
  if (a == "UpdateAccessKey" || a == "DeleteAccessKey") {
    ASSIGN_OR_RETURN(std::string name, caller_user());
    if (!name.empty()) RETURN_IF_ERROR(directory_.GetUser(account, name).status());
    const AccessKeyId id(in.Or("AccessKeyId", ""));
    if (a == "DeleteAccessKey") {
      RETURN_IF_ERROR(accounts_.DeleteAccessKey(account, name, id));
    } else {
      const std::string status = in.Or("Status", "");
      if (status == "Expired") return ValidationError("Status 'Expired' cannot be set by UpdateAccessKey.");
      RETURN_IF_ERROR(accounts_.SetAccessKeyStatus(account, name, id,
                                                   status == "Active" ? AccessKeyStatus::kActive : AccessKeyStatus::kInactive));
    }
    return ok();
  }
  if (a == "SimulatePrincipalPolicy") return Simulate(directory_, authorizer_, ctx, in, params);
  return Internal(fmt::format("IAM action {} is listed but not dispatched", a));
}



std::vector<aws::AuthRequest> IamService::AuthorizationFor(const aws::CallContext& ctx,
                                                           const aws::QueryParams& params) const {
  const std::string account = ctx.principal.account.str();
  auto param = [&](std::string_view name) { return std::string(aws::FindParam(params, name).value_or("")); };
  // An entity's ARN as IAM authorizes it: the path the call gives (CreateRole, CreateUser,
  // CreatePolicy), else "/" — a role or user under another path is authorized as if at "/"
  // (Paddock does not read the record to authorize; docs/contracts/iam.md).
  auto arn = [&](std::string_view kind, std::string_view name) {
    std::string path = param("Path");
    if (path.empty() || !ctx.action.starts_with("Create")) path = "/";
    return fmt::format("arn:aws:iam::{}:{}{}{}", account, kind, path, name);
  };
  aws::AuthRequest q{"iam:" + ctx.action, "*", {}};
  const std::string user = param("UserName"), role = param("RoleName"), policy_arn = param("PolicyArn");
  if (!role.empty()) {
    q.resource = arn("role", role);
  } else if (!user.empty()) {
    q.resource = arn("user", user);
  } else if (!policy_arn.empty()) {
    q.resource = policy_arn;
  } else if (ctx.action == "CreatePolicy") {
    q.resource = arn("policy", param("PolicyName"));
  } else if (ctx.action == "SimulatePrincipalPolicy" && !param("PolicySourceArn").empty()) {
    q.resource = param("PolicySourceArn");
  } else if (ctx.action == "CreateServiceLinkedRole") {
    q.resource = fmt::format("arn:aws:iam::{}:role/aws-service-role/{}/*", account, param("AWSServiceName"));
  } else if (ctx.principal.kind == aws::PrincipalKind::kUser &&
             (ctx.action == "GetUser" || ctx.action == "CreateAccessKey" || ctx.action == "ListAccessKeys" ||
              ctx.action == "UpdateAccessKey" || ctx.action == "DeleteAccessKey")) {
    q.resource = ctx.principal.arn;  // a user's call about itself
  }
  if (!policy_arn.empty() && (ctx.action.starts_with("Attach") || ctx.action.starts_with("Detach"))) {
    q.context.emplace_back("iam:PolicyARN", policy_arn);
  }
  if (std::string boundary = param("PermissionsBoundary"); !boundary.empty()) {
    q.context.emplace_back("iam:PermissionsBoundary", boundary);
  }
  return {std::move(q)};
}

}  // namespace paddock::iam::api
