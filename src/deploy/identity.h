// deploy/identity: workload identity (ADR D8). The controller is an OIDC-style issuer: it signs
// short-lived JWTs (ES256) with a key kept in its state directory and publishes the public half as
// a JWKS. Each deployment gets one credential, minted by the controller into SSM before its first
// revision (only its hash stays in the controller's record); the identity sidecar of every task
// (its program: kIdentityAgentScript) reads it from its secret, writes it to
// /var/run/secrets/paddock/identity/credential and exchanges it, once per [identity] audience, for
// a token at the controller's exchange endpoint (deploy/api.h, POST /v1/identity/token), written
// to tokens/<file> and refreshed at half its lifetime.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<Issuer> issuer, Issuer::Load(state_dir + "/identity.key",
//                                                                 "http://127.0.0.1:4580", 3600s));
//   std::string credential = NewIdentityCredential(d.id);        // into SSM; its hash on the record
//   ASSIGN_OR_RETURN(Issuer::Token t, issuer->Mint(d, "default", "https://api.example.com", {}, now));
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "common/clock.h"
#include "common/es256.h"
#include "common/status.h"
#include "deploy/deployments.h"
#include "deploy/render.h"

namespace paddock::deploy {

// The sidecar's program, a POSIX shell script for busybox (sh, wget, timeout, sed, mv, mkdir, sleep):
// without arguments it writes the files and keeps them fresh; with --check it exits 0 only once
// the credential and every audience's first token have been written (the container's health
// check, which reads no environment). Its
// environment: PADDOCK_IDENTITY_CREDENTIAL, PADDOCK_IDENTITY_TOKEN_URL, PADDOCK_IDENTITY_AUDIENCES
// ("file=audience" pairs, space-separated) and PADDOCK_IDENTITY_TOKEN_TTL_SECONDS. A refused or
// failed exchange is retried after 2, 4, … up to 60 seconds; a token is refreshed at half its
// lifetime less up to 20% (random), so a deployment's tasks do not refresh in lockstep.
extern const std::string_view kIdentityAgentScript;

// "pdi.<deployment id>.<64 hex>": 256 random bits, and the deployment they belong to (so the
// exchange finds its record without an index).
std::string NewIdentityCredential(std::string_view deployment_id);
// The hash the record keeps (SHA-256, hex): the credential itself is only in SSM and the tasks.
std::string IdentityCredentialHash(std::string_view credential);
// The deployment a credential names, or nullopt when it is not one's form.
std::optional<std::string> IdentityCredentialDeployment(std::string_view credential);

class Issuer {
 public:
  // Reads (or makes, 0600) the signing key at `key_path`. `issuer_url` is the iss claim and where
  // the OpenID configuration says the keys are; `max_ttl` caps every token's lifetime (and is the
  // default one).
  static StatusOr<std::unique_ptr<Issuer>> Load(const std::string& key_path, std::string issuer_url,
                                                std::chrono::seconds max_ttl);

  // {"keys": [{kty EC, crv P-256, x, y, use sig, alg ES256, kid}]}; kid is the key's RFC 7638
  // thumbprint.
  boost::json::object Jwks() const;
  // The discovery document: issuer, jwks_uri, the algorithms and claims.
  boost::json::object OpenIdConfiguration() const;

  struct Token {
    std::string jwt;
    int64_t expires_in = 0;  // seconds
  };
  // A token for deployment `d` and `audience`: header {alg ES256, typ JWT, kid}; claims iss, sub
  // ("<class>:<project>:<group>": what stays the same across a group's deployments), aud, iat, nbf
  // (iat − 60 s for clocks), exp (iat + ttl, ttl ≤ max_ttl; default max_ttl), jti, and
  // paddock_project, paddock_group, paddock_deployment, paddock_class.
  StatusOr<Token> Mint(const Deployment& d, std::string_view controller_class, std::string_view audience,
                       std::optional<int64_t> ttl_seconds, TimePoint now) const;

  std::chrono::seconds max_ttl() const { return max_ttl_; }
  const std::string& key_id() const { return key_id_; }
  // For an issuer whose URL is known only once its API listens (an ephemeral port).
  void SetUrl(std::string issuer_url);
  std::string url() const;

 private:
  Issuer(Es256Key key, std::string issuer_url, std::chrono::seconds max_ttl);
  Es256Key key_;
  mutable std::mutex url_mu_;
  std::string issuer_url_;  // GUARDED_BY(url_mu_)
  std::chrono::seconds max_ttl_;
  std::string key_id_;
};

// Token buckets for the exchange endpoint (ADR D8: "its own limiter"): a valid credential spends
// its deployment's bucket, an unknown or wrong one its source address's, so that guessing slows
// down without one busy deployment — or many sidecars behind one address — throttling the rest.
class ExchangeLimiter {
 public:
  struct Bucket {
    double burst = 0;
    double per_second = 0;
  };
  ExchangeLimiter(Bucket per_deployment, Bucket per_failing_source)
      : per_deployment_(per_deployment), per_failing_source_(per_failing_source) {}
  // Takes a token of deployment `id`'s bucket; false (nothing taken) when it is empty.
  bool DeploymentMayMint(std::string_view id, TimePoint now) { return Take("d:" + std::string(id), per_deployment_, now); }
  // Whether `source` may try at all: its failures have left tokens in its bucket.
  bool SourceMayTry(std::string_view source, TimePoint now);
  // Charges a failed try to `source`.
  void SourceFailed(std::string_view source, TimePoint now) { Take("s:" + std::string(source), per_failing_source_, now); }

 private:
  bool Take(const std::string& key, Bucket spec, TimePoint now, bool spend = true);
  struct State {
    double tokens = 0;
    TimePoint last;
  };
  static constexpr size_t kMaxKeys = 10'000;  // beyond it, full buckets are forgotten (they start full)
  Bucket per_deployment_, per_failing_source_;
  std::mutex mu_;
  std::map<std::string, State, std::less<>> buckets_;  // GUARDED_BY(mu_)
};

}  // namespace paddock::deploy
