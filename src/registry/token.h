// registry/token: the bearer tokens the cluster's registry (Distribution's `token` auth) accepts.
//
// Distribution 2.8 (Debian's docker-registry) checks a JWT signed by a key whose certificate is in
// its `rootcertbundle`: ES256 here, the key named in the header by its libtrust key id (`kid`: the
// SHA-256 of the key's DER SubjectPublicKeyInfo, cut to 240 bits, base32 in 12 groups of 4 joined by
// ':'), and claims {iss, sub, aud, exp, nbf, iat, jti, access: [{type: "repository", name, actions}]}.
// The registry grants exactly the access listed, so a token names one repository and, for agents,
// only "pull". There is no token endpoint: Paddock hands tokens out itself (the agent protocol's
// GetImageAccess, signed with the instance's own credential) and pushes with its own.
//
//   ASSIGN_OR_RETURN(TokenSigner signer, TokenSigner::LoadOrCreate(state_dir + "/registry"));
//   std::string cert_path = signer.certificate_path();           // for the registry's config
//   std::string jwt = signer.Mint({.subject = instance_arn, .repository = "images/ab12…",
//                                  .actions = {"pull"}}, now);
//
// The key lives in <dir>/token.key (0600) with its certificate in <dir>/token.crt, made once;
// whoever reads the key can mint any token, so <dir> is in the private state directory.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace paddock::registry {

struct TokenRequest {
  std::string subject;      // who it is for (a container instance's ARN, "paddock" for pushes)
  std::string repository;   // the one repository it opens
  std::vector<std::string> actions;  // "pull", "push"
  std::chrono::seconds ttl{900};
};

// The issuer and audience (Distribution's `issuer` and `service`) every token carries.
inline constexpr std::string_view kTokenIssuer = "paddock";
inline constexpr std::string_view kTokenService = "paddock-registry";

class TokenSigner {
 public:
  // Reads <dir>/token.key and token.crt, or makes them (an EC P-256 key and a self-signed
  // certificate valid for 100 years) when the key is missing. <dir> must exist.
  static StatusOr<TokenSigner> LoadOrCreate(const std::string& dir);

  TokenSigner(TokenSigner&&) noexcept;
  TokenSigner& operator=(TokenSigner&&) noexcept;
  ~TokenSigner();

  // A signed JWT for `request`, valid from `now` (with a minute of leeway for clocks) for its ttl.
  StatusOr<std::string> Mint(const TokenRequest& request, TimePoint now) const;

  // The libtrust key id of the signing key (the JWT header's `kid`).
  const std::string& key_id() const { return key_id_; }
  // The PEM certificate file the registry trusts (its `rootcertbundle`).
  const std::string& certificate_path() const { return certificate_path_; }

 private:
  struct Key;
  TokenSigner(std::unique_ptr<Key> key, std::string key_id, std::string certificate_path);

  std::unique_ptr<Key> key_;
  std::string key_id_;
  std::string certificate_path_;
};

// libtrust's key id of a DER SubjectPublicKeyInfo (see the header).
std::string LibtrustKeyId(std::string_view der_public_key);

}  // namespace paddock::registry
