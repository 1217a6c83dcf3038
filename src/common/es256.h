// common/es256: an ECDSA P-256 signing key kept in a PEM file, and compact JWS signatures with it
// (ES256, RFC 7515/7518) — what the registry's tokens (registry/token.h) and the deploy
// controller's workload identity tokens (deploy/identity.h) are signed with.
//
//   ASSIGN_OR_RETURN(Es256Key key, Es256Key::LoadOrCreate(state_dir + "/identity.key"));
//   ASSIGN_OR_RETURN(std::string jwt, key.SignJws(R"({"alg":"ES256","typ":"JWT"})", claims_json));
//   Es256Key::Point p = key.PublicPoint();  // a JWK's "x" and "y" (base64url of each)
//
// The key file is made once, 0600 from its creation on, and never rewritten: whoever reads it can
// sign anything, so it belongs in a private state directory.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY

namespace paddock {

class Es256Key {
 public:
  // Reads the PEM private key at `path`, or makes a P-256 key and writes it there when the file is
  // missing (`created` set then). Two processes starting at once on one path end with one key: the
  // file appears whole (linked in), and the one that finds it made reads it. DataLoss when the file
  // holds something other than an EC P-256 private key.
  static StatusOr<Es256Key> LoadOrCreate(const std::string& path, bool* created = nullptr);

  Es256Key(Es256Key&&) noexcept;
  Es256Key& operator=(Es256Key&&) noexcept;
  ~Es256Key();

  // "<b64url(header)>.<b64url(payload)>.<b64url(r || s)>": the JWS compact form, signed with
  // ECDSA over SHA-256, the signature as JWS wants it (r and s, 32 bytes each; not DER).
  StatusOr<std::string> SignJws(std::string_view header_json, std::string_view payload_json) const;

  // The public key as a DER SubjectPublicKeyInfo.
  const std::string& public_der() const { return public_der_; }

  // The public point's affine coordinates, 32 big-endian bytes each (a JWK's x and y, before
  // base64url).
  struct Point {
    std::string x, y;
  };
  const Point& public_point() const { return point_; }

  // For OpenSSL calls that need the key itself (a certificate for it).
  evp_pkey_st* pkey() const;

 private:
  struct Key;
  Es256Key(std::unique_ptr<Key> key, std::string public_der, Point point);
  std::unique_ptr<Key> key_;
  std::string public_der_;
  Point point_;
};

}  // namespace paddock
