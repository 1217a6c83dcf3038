#include "deploy/identity.h"

#include <openssl/sha.h>

#include <algorithm>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "aws/sigv4.h"
#include "common/encoding.h"

namespace paddock::deploy {
namespace json = boost::json;

const std::string_view kIdentityAgentScript = R"SH(#!/bin/sh
# paddock-identity-agent (ADR D8): the deployment's credential, and a token for each audience kept
# fresh, under /var/run/secrets/paddock/identity. `--check` is the container's health check: it
# passes once every file has been written (.ready), and reads no environment (an exec may have none).
dir=/var/run/secrets/paddock/identity
if [ "${1:-}" = "--check" ]; then
  [ -s "$dir/credential" ] && [ -e "$dir/.ready" ]
  exit
fi
umask 022
mkdir -p "$dir/tokens"
printf '%s' "$PADDOCK_IDENTITY_CREDENTIAL" > "$dir/.credential" && mv -f "$dir/.credential" "$dir/credential"
ttl=${PADDOCK_IDENTITY_TOKEN_TTL_SECONDS:-3600}

# mint FILE AUDIENCE: writes tokens/FILE whole and prints its lifetime in seconds, or fails. (The
# bound is timeout's: busybox 1.35's own wget -T crashes.)
mint() {
  body=$(timeout 15 wget -q -O - --header "Authorization: Bearer $PADDOCK_IDENTITY_CREDENTIAL" \
    --header "Content-Type: application/json" \
    --post-data "{\"audience\":\"$2\",\"ttl_seconds\":$ttl}" "$PADDOCK_IDENTITY_TOKEN_URL") || return 1
  token=$(printf '%s' "$body" | sed -n 's/.*"token": *"\([^"]*\)".*/\1/p')
  life=$(printf '%s' "$body" | sed -n 's/.*"expires_in": *\([0-9][0-9]*\).*/\1/p')
  [ -n "$token" ] && [ -n "$life" ] || return 1
  printf '%s' "$token" > "$dir/tokens/.$1" && mv -f "$dir/tokens/.$1" "$dir/tokens/$1" || return 1
  echo "$life"
}

if [ -z "$PADDOCK_IDENTITY_AUDIENCES" ]; then
  : > "$dir/.ready"
  while :; do sleep 3600; done
fi
backoff=2
while :; do
  next=$ttl
  failed=0
  for pair in $PADDOCK_IDENTITY_AUDIENCES; do
    if life=$(mint "${pair%%=*}" "${pair#*=}"); then
      [ "$life" -lt "$next" ] && next=$life
    else
      failed=1
      echo "paddock-identity: no token for ${pair#*=} from $PADDOCK_IDENTITY_TOKEN_URL; trying again in ${backoff}s" >&2
    fi
  done
  if [ "$failed" = 1 ]; then
    sleep "$backoff"
    backoff=$((backoff * 2))
    [ "$backoff" -gt 60 ] && backoff=60
    continue
  fi
  [ -e "$dir/.ready" ] || : > "$dir/.ready"
  backoff=2
  half=$((next / 2))
  sleep $((half - RANDOM % (half / 5 + 1)))
done
)SH";

namespace {

constexpr std::string_view kCredentialPrefix = "pdi.";

std::string Sha256(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return std::string(reinterpret_cast<char*>(digest), sizeof digest);
}

// RFC 7638: the SHA-256 of the JWK's required members, in lexicographic order, no whitespace.
std::string Thumbprint(const Es256Key::Point& p) {
  return Base64UrlEncode(Sha256(fmt::format(R"({{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}})",
                                            Base64UrlEncode(p.x), Base64UrlEncode(p.y))));
}

}  // namespace

std::string NewIdentityCredential(std::string_view deployment_id) {
  return fmt::format("{}{}.{}", kCredentialPrefix, deployment_id, HexEncode(RandomBytes(32)));
}

std::string IdentityCredentialHash(std::string_view credential) { return aws::Sha256Hex(credential); }

std::optional<std::string> IdentityCredentialDeployment(std::string_view credential) {
  if (!credential.starts_with(kCredentialPrefix)) return std::nullopt;
  credential.remove_prefix(kCredentialPrefix.size());
  const size_t dot = credential.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || credential.size() - dot - 1 != 64) return std::nullopt;
  std::string_view id = credential.substr(0, dot);
  if (id.size() > 64 || !std::all_of(id.begin(), id.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
      })) {
    return std::nullopt;
  }
  return std::string(id);
}

Issuer::Issuer(Es256Key key, std::string issuer_url, std::chrono::seconds max_ttl)
    : key_(std::move(key)), issuer_url_(std::move(issuer_url)), max_ttl_(max_ttl),
      key_id_(Thumbprint(key_.public_point())) {}

void Issuer::SetUrl(std::string issuer_url) {
  while (issuer_url.ends_with('/')) issuer_url.pop_back();
  std::lock_guard lock(url_mu_);
  issuer_url_ = std::move(issuer_url);
}

std::string Issuer::url() const {
  std::lock_guard lock(url_mu_);
  return issuer_url_;
}

StatusOr<std::unique_ptr<Issuer>> Issuer::Load(const std::string& key_path, std::string issuer_url,
                                               std::chrono::seconds max_ttl) {
  if (max_ttl < std::chrono::seconds(60)) return InvalidArgument("the identity token lifetime must be at least 60 seconds");
  while (issuer_url.ends_with('/')) issuer_url.pop_back();
  ASSIGN_OR_RETURN(Es256Key key, Es256Key::LoadOrCreate(key_path));
  return std::unique_ptr<Issuer>(new Issuer(std::move(key), std::move(issuer_url), max_ttl));
}

json::object Issuer::Jwks() const {
  const Es256Key::Point& p = key_.public_point();
  return {{"keys", json::array{json::object{{"kty", "EC"},
                                            {"crv", "P-256"},
                                            {"x", Base64UrlEncode(p.x)},
                                            {"y", Base64UrlEncode(p.y)},
                                            {"use", "sig"},
                                            {"alg", "ES256"},
                                            {"kid", key_id_}}}}};
}

json::object Issuer::OpenIdConfiguration() const {
  const std::string issuer = url();
  return {{"issuer", issuer},
          {"jwks_uri", issuer + "/.well-known/jwks.json"},
          {"token_endpoint", issuer + "/v1/identity/token"},
          {"response_types_supported", json::array{"id_token"}},
          {"subject_types_supported", json::array{"public"}},
          {"id_token_signing_alg_values_supported", json::array{"ES256"}},
          {"claims_supported", json::array{"iss", "sub", "aud", "iat", "nbf", "exp", "jti", "paddock_project",
                                           "paddock_group", "paddock_deployment", "paddock_class"}}};
}

StatusOr<Issuer::Token> Issuer::Mint(const Deployment& d, std::string_view controller_class, std::string_view audience,
                                     std::optional<int64_t> ttl_seconds, TimePoint now) const {
  const int64_t ttl = std::min<int64_t>(ttl_seconds.value_or(max_ttl_.count()), max_ttl_.count());
  if (ttl < 60) return InvalidArgument(fmt::format("ttl_seconds must be at least 60 (got {})", ttl));
  const int64_t t = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  const json::object header{{"alg", "ES256"}, {"typ", "JWT"}, {"kid", key_id_}};
  const json::object claims{{"iss", url()},
                            {"sub", fmt::format("{}:{}:{}", controller_class, d.project, d.group)},
                            {"aud", audience},
                            {"iat", t},
                            {"nbf", t - 60},
                            {"exp", t + ttl},
                            {"jti", RandomUuid()},
                            {"paddock_project", d.project},
                            {"paddock_group", d.group},
                            {"paddock_deployment", d.id},
                            {"paddock_class", controller_class}};
  ASSIGN_OR_RETURN(std::string jwt, key_.SignJws(json::serialize(header), json::serialize(claims)));
  return Token{std::move(jwt), ttl};
}

bool ExchangeLimiter::SourceMayTry(std::string_view source, TimePoint now) {
  return Take("s:" + std::string(source), per_failing_source_, now, /*spend=*/false);
}

bool ExchangeLimiter::Take(const std::string& key, Bucket spec, TimePoint now, bool spend) {
  std::lock_guard lock(mu_);
  auto it = buckets_.find(key);
  if (it == buckets_.end()) {
    if (buckets_.size() >= kMaxKeys) {
      std::erase_if(buckets_, [&](const auto& kv) {
        const double elapsed = std::chrono::duration<double>(now - kv.second.last).count();
        return kv.second.tokens + elapsed * std::max(per_deployment_.per_second, per_failing_source_.per_second) >=
               std::max(per_deployment_.burst, per_failing_source_.burst);
      });
    }
    it = buckets_.emplace(key, State{spec.burst, now}).first;
  }
  State& s = it->second;
  const double elapsed = std::max(0.0, std::chrono::duration<double>(now - s.last).count());
  s.tokens = std::min(spec.burst, s.tokens + elapsed * spec.per_second);
  s.last = now;
  if (s.tokens < 1) return false;
  if (spend) s.tokens -= 1;
  return true;
}

}  // namespace paddock::deploy
