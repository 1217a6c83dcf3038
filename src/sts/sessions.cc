#include "sts/sessions.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <openssl/evp.h>

#include "common/encoding.h"
#include "store/key.h"

namespace paddock::sts {
namespace json = boost::json;
using store::Key;

namespace {

constexpr std::string_view kSessions = "sts_sessions";
constexpr std::string_view kExpiry = "sts_session_expiry";
constexpr std::string_view kAccountSessions = "sts_account_sessions";

constexpr std::string_view kKeyAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
constexpr std::string_view kSecretAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
// 96 random bytes: 768 bits, far beyond guessing; base64url keeps it header- and XML-safe.
constexpr size_t kTokenBytes = 96;

std::string_view KindName(PrincipalKind kind) {
  switch (kind) {
    case PrincipalKind::kRoot: return "root";
    case PrincipalKind::kUser: return "user";
    case PrincipalKind::kAssumedRole: return "assumed-role";
    case PrincipalKind::kFederatedUser: return "federated-user";
  }
  return "root";
}

StatusOr<PrincipalKind> ParseKind(std::string_view s) {
  if (s == "root") return PrincipalKind::kRoot;
  if (s == "user") return PrincipalKind::kUser;
  if (s == "assumed-role") return PrincipalKind::kAssumedRole;
  if (s == "federated-user") return PrincipalKind::kFederatedUser;
  return DataLoss(fmt::format("corrupt session record: principal kind '{}'", s));
}

// The SHA-256 of a session token, lowercase hex: what the record keeps instead of the token (and
// what the SigV4 verifier compares the request's X-Amz-Security-Token against, hashed alike).
std::string TokenSha256Hex(std::string_view token) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  // SHA-256 of an in-memory string cannot fail short of memory exhaustion.
  EVP_Digest(token.data(), token.size(), digest, &size, EVP_sha256(), nullptr);
  return HexEncode(std::string_view(reinterpret_cast<const char*>(digest), size));
}

// The stored form of a session: the token only as its hash.
std::string EncodeRecord(const Session& c, TimePoint expires) {
  const Principal& p = c.principal;
  json::array tags;
  for (const auto& [k, v] : p.session_tags) tags.push_back(json::array{json::string(k), json::string(v)});
  json::array policy_arns;
  for (const auto& a : p.session_policy_arns) policy_arns.push_back(json::string(a));
  json::object o{{"account", p.account.str()},
                 {"secret", c.secret_access_key},
                 {"tokenSha256", c.session_token_sha256},
                 {"expires", EpochMillis(expires)},
                 {"kind", KindName(p.kind)},
                 {"arn", p.arn},
                 {"userId", p.user_id},
                 {"userName", p.user_name},
                 {"roleArn", p.role_arn},
                 {"sessionName", p.session_name},
                 {"sessionPolicy", p.session_policy},
                 {"policyArns", std::move(policy_arns)},
                 {"tags", std::move(tags)},
                 {"sourceIdentity", p.source_identity}};
  return json::serialize(o);
}

StatusOr<Session> DecodeRecord(const AccessKeyId& id, std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return DataLoss("corrupt session record");
  const json::object& o = v.get_object();
  auto str = [&](std::string_view name) -> std::string {
    const json::value* f = o.if_contains(name);
    return f != nullptr && f->is_string() ? std::string(f->get_string()) : std::string();
  };
  const json::value* expires = o.if_contains("expires");
  if (expires == nullptr || !expires->is_int64()) return DataLoss("corrupt session record: no expiry");
  Session c;
  c.secret_access_key = str("secret");
  c.session_token_sha256 = str("tokenSha256");
  c.expires = FromEpochMillis(expires->get_int64());
  if (c.secret_access_key.empty() || c.session_token_sha256.empty()) return DataLoss("corrupt session record");
  Principal& p = c.principal;
  p.account = AccountId(str("account"));
  p.access_key_id = id;
  ASSIGN_OR_RETURN(p.kind, ParseKind(str("kind")));
  p.arn = str("arn");
  p.user_id = str("userId");
  p.user_name = str("userName");
  p.role_arn = str("roleArn");
  p.session_name = str("sessionName");
  p.session_policy = str("sessionPolicy");
  p.source_identity = str("sourceIdentity");
  if (const json::value* arns = o.if_contains("policyArns"); arns != nullptr && arns->is_array()) {
    for (const json::value& a : arns->get_array())
      if (a.is_string()) p.session_policy_arns.emplace_back(a.get_string());
  }
  if (const json::value* tags = o.if_contains("tags"); tags != nullptr && tags->is_array()) {
    for (const json::value& t : tags->get_array()) {
      if (!t.is_array() || t.get_array().size() != 2 || !t.get_array()[0].is_string() ||
          !t.get_array()[1].is_string())
        return DataLoss("corrupt session record: tags");
      p.session_tags.emplace_back(std::string(t.get_array()[0].get_string()),
                                  std::string(t.get_array()[1].get_string()));
    }
  }
  return c;
}

uint64_t ExpiryKeyMillis(TimePoint t) {
  int64_t ms = EpochMillis(t);
  return ms < 0 ? 0 : static_cast<uint64_t>(ms);
}

// Deletes one session's record and index rows.
Status DeleteSession(store::WriteTxn& txn, const AccessKeyId& id, const AccountId& account, TimePoint expires) {
  RETURN_IF_ERROR(txn.Delete(kSessions, Key().Str(id.str()).Done()));
  RETURN_IF_ERROR(txn.Delete(kExpiry, Key().U64(ExpiryKeyMillis(expires)).Str(id.str()).Done()));
  return txn.Delete(kAccountSessions, Key().Str(account.str()).Str(id.str()).Done());
}

}  // namespace

std::string AssumedRoleArn(const AccountId& account, std::string_view role_name, std::string_view session_name) {
  return fmt::format("arn:aws:sts::{}:assumed-role/{}/{}", account.str(), role_name, session_name);
}

StatusOr<IssuedCredentials> Sessions::Mint(Principal principal, Duration duration, TimePoint now) {
  if (duration <= Duration::zero()) return InvalidArgument("A session's duration must be positive.");
  IssuedCredentials out;
  out.secret_access_key = RandomString(40, kSecretAlphabet);
  out.session_token = Base64UrlEncode(RandomBytes(kTokenBytes));
  // Whole seconds, as AWS reports Expiration; the session ends exactly when it says.
  out.expiration = std::chrono::time_point_cast<std::chrono::seconds>(now + duration);
  Session session;
  session.secret_access_key = out.secret_access_key;
  session.session_token_sha256 = TokenSha256Hex(out.session_token);
  session.expires = out.expiration;
  Status s = store_.Write([&](store::WriteTxn& txn) -> Status {
    for (int attempt = 0; attempt < 16; ++attempt) {
      AccessKeyId id(std::string(kKeyPrefix) + RandomString(16, kKeyAlphabet));
      ASSIGN_OR_RETURN(auto existing, txn.Get(kSessions, Key().Str(id.str()).Done()));
      if (existing) continue;
      principal.access_key_id = id;
      session.principal = principal;
      RETURN_IF_ERROR(txn.Put(kSessions, Key().Str(id.str()).Done(), EncodeRecord(session, out.expiration)));
      RETURN_IF_ERROR(txn.Put(kExpiry, Key().U64(ExpiryKeyMillis(out.expiration)).Str(id.str()).Done(), ""));
      RETURN_IF_ERROR(txn.Put(kAccountSessions, Key().Str(principal.account.str()).Str(id.str()).Done(), ""));
      out.access_key_id = std::move(id);
      return OkStatus();
    }
    return Internal("could not pick an unused session access key id");
  });
  if (!s.ok()) return s;
  out.principal = std::move(principal);
  return out;
}

StatusOr<IssuedCredentials> Sessions::IssueSessionToken(const Principal& caller, Duration duration,
                                                        TimePoint now) {
  if (caller.kind != PrincipalKind::kRoot && caller.kind != PrincipalKind::kUser)
    return PermissionDenied("Cannot call GetSessionToken with session credentials");
  Principal p;
  p.account = caller.account;
  p.arn = caller.arn;
  p.kind = PrincipalKind::kFederatedUser;
  p.user_id = caller.user_id.empty() ? caller.account.str() : caller.user_id;
  p.user_name = caller.user_name;
  return Mint(std::move(p), duration, now);
}

StatusOr<IssuedCredentials> Sessions::IssueRoleSession(const AccountId& account, const AssumableRole& role,
                                                       const RoleSessionSpec& spec, Duration duration,
                                                       TimePoint now) {
  Principal p;
  p.account = account;
  p.kind = PrincipalKind::kAssumedRole;
  p.arn = AssumedRoleArn(account, role.name, spec.session_name);
  p.user_id = fmt::format("{}:{}", role.role_id, spec.session_name);
  p.role_arn = role.arn;
  p.session_name = spec.session_name;
  p.session_policy = spec.session_policy;
  p.session_policy_arns = spec.policy_arns;
  p.session_tags = spec.tags;
  p.source_identity = spec.source_identity;
  return Mint(std::move(p), duration, now);
}

StatusOr<std::optional<Session>> Sessions::Find(const AccessKeyId& id) {
  std::optional<Session> out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto v, txn.Get(kSessions, Key().Str(id.str()).Done()));
    if (!v) return OkStatus();
    ASSIGN_OR_RETURN(Session r, DecodeRecord(id, *v));
    out = std::move(r);
    return OkStatus();
  }));
  return out;
}

StatusOr<size_t> Sessions::ReapExpired(TimePoint now, size_t limit) {
  size_t removed = 0;
  const uint64_t horizon = ExpiryKeyMillis(now - kExpiredRetention);
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    removed = 0;
    // Expired at or before the horizon: keys below (horizon + 1, "").
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kExpiry, {"", Key().U64(horizon + 1).Done()}, limit));
    for (const auto& row : rows) {
      store::KeyReader r(row.key);
      ASSIGN_OR_RETURN(uint64_t ms, r.U64());
      ASSIGN_OR_RETURN(std::string id, r.Str());
      ASSIGN_OR_RETURN(auto v, txn.Get(kSessions, Key().Str(id).Done()));
      RETURN_IF_ERROR(txn.Delete(kExpiry, row.key));
      if (v) {
        ASSIGN_OR_RETURN(Session rec, DecodeRecord(AccessKeyId(id), *v));
        RETURN_IF_ERROR(DeleteSession(txn, AccessKeyId(id), rec.principal.account,
                                      FromEpochMillis(static_cast<int64_t>(ms))));
      }
      ++removed;
    }
    return OkStatus();
  }));
  return removed;
}

Status Sessions::ReapAccount(const AccountId& account) {
  constexpr size_t kBatch = 500;
  while (true) {
    size_t seen = 0;
    RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kAccountSessions, store::PrefixRange(Key().Str(account.str()).Done()), kBatch));
      seen = rows.size();
      for (const auto& row : rows) {
        store::KeyReader r(row.key);
        ASSIGN_OR_RETURN(std::string acct, r.Str());
        ASSIGN_OR_RETURN(std::string id, r.Str());
        RETURN_IF_ERROR(txn.Delete(kAccountSessions, row.key));
        ASSIGN_OR_RETURN(auto v, txn.Get(kSessions, Key().Str(id).Done()));
        if (!v) continue;
        ASSIGN_OR_RETURN(Session rec, DecodeRecord(AccessKeyId(id), *v));
        RETURN_IF_ERROR(DeleteSession(txn, AccessKeyId(id), account, rec.expires));
      }
      return OkStatus();
    }));
    if (seen < kBatch) return OkStatus();
  }
}

}  // namespace paddock::sts
