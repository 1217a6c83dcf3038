// sts/sessions: temporary credentials ("ASIA…" + secret + session token) and what they
// authenticate as, until they expire.
//
//   Sessions sessions(store);
//   ASSIGN_OR_RETURN(IssuedCredentials c, sessions.IssueSessionToken(caller, std::chrono::hours(12), now));
//   ASSIGN_OR_RETURN(IssuedCredentials r, sessions.IssueRoleSession(account, role, spec, 1h, now));
//   ASSIGN_OR_RETURN(std::optional<Session> s, sessions.Find(AccessKeyId("ASIA…")));
//
// The API front authenticates session keys through sts::api::SessionCredentials
// (sts/api/session_credentials.h), which hands the verifier a session's token hash and expiry:
// this owner does not link aws/.
//
// The session token is handed out once and never stored: the record keeps its SHA-256, so a copy
// of the store does not yield usable tokens. Sessions live in the store, so they survive a
// restart; they stop authenticating at their expiry (the verifier compares against its clock),
// and the records go kExpiredRetention later (ReapExpired), so that until then a late caller is
// told its token expired rather than that it is unknown.
//
// Records (sts/schema.h):
//   sts_sessions          (access key id) -> session record JSON
//   sts_session_expiry    (expires ms, access key id) -> ""      ReapExpired's work list
//   sts_account_sessions  (account, access key id) -> ""        ReapAccount's index
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/principal.h"
#include "common/status.h"
#include "store/store.h"
#include "sts/roles.h"

namespace paddock::sts {

// Temporary credentials as handed to their caller, once.
struct IssuedCredentials {
  AccessKeyId access_key_id;  // "ASIA" + 16 of [A-Z0-9]
  std::string secret_access_key;
  std::string session_token;  // opaque; only its SHA-256 is stored
  TimePoint expiration;
  Principal principal;   // what they authenticate as
};

// A session as stored: what it authenticates as, until when, and how to check its token.
struct Session {
  std::string secret_access_key;
  Principal principal;  // principal.access_key_id is the session's key id
  // The SHA-256 (lowercase hex) of the session token: every request must carry the token itself.
  std::string session_token_sha256;
  TimePoint expires;
};

// What a role session carries besides the role.
struct RoleSessionSpec {
  std::string session_name;  // 2..64 of [\w+=,.@-] (the API validates it)
  std::string session_policy;  // inline session policy JSON; may be empty
  std::vector<std::string> policy_arns;  // managed session policies
  std::vector<std::pair<std::string, std::string>> tags;  // session tags
  std::string source_identity;
};

class Sessions final {
 public:
  explicit Sessions(store::Store& store) : store_(store) {}

  // Every session's access key id starts with this. Container instances' agent credentials
  // (ecs/instance/agent_identity.h) share the prefix, as both are AWS "temporary" keys; the
  // node's resolver asks the agents' table first and this one for the keys it does not know.
  static constexpr std::string_view kKeyPrefix = "ASIA";
  // How long an expired session's record stays, answering ExpiredToken rather than "invalid".
  static constexpr Duration kExpiredRetention = std::chrono::hours(24);

  // GetSessionToken: credentials that act as `caller` (root or an IAM user), valid for
  // `duration` from `now`. The principal keeps the caller's ARN, user id and user name with kind
  // kFederatedUser. PermissionDenied (AWS's AccessDenied text) for a caller that is itself a
  // session; InvalidArgument for a duration that is not positive.
  StatusOr<IssuedCredentials> IssueSessionToken(const Principal& caller, Duration duration, TimePoint now);

  // AssumeRole and task roles: a session of `role` (in `account`, the role's own account) named
  // spec.session_name, valid for `duration` from `now`. The principal is
  // "arn:aws:sts::<account>:assumed-role/<role name>/<session>" with user id
  // "<role id>:<session>", carrying the session policy and tags. The caller decides whether the
  // role may be assumed (trust policy, duration limits): this only mints.
  StatusOr<IssuedCredentials> IssueRoleSession(const AccountId& account, const AssumableRole& role,
                                               const RoleSessionSpec& spec, Duration duration, TimePoint now);

  // The session `id`, expired or not (the verifier tells the two apart); nullopt when there is
  // no such session (never issued, reaped, or its account deleted). One store read, no cache.
  StatusOr<std::optional<Session>> Find(const AccessKeyId& id);

  // Removes up to `limit` sessions that expired more than kExpiredRetention before `now`;
  // returns how many it removed (fewer than `limit`: none is left).
  StatusOr<size_t> ReapExpired(TimePoint now, size_t limit = 500);

  // Removes every session of `account` (iam::AccountReaper through the node's adapter).
  Status ReapAccount(const AccountId& account);

 private:
  StatusOr<IssuedCredentials> Mint(Principal principal, Duration duration, TimePoint now);

  store::Store& store_;
};

// "arn:aws:sts::<account>:assumed-role/<role name>/<session name>".
std::string AssumedRoleArn(const AccountId& account, std::string_view role_name, std::string_view session_name);

}  // namespace paddock::sts
