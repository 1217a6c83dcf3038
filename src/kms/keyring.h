// kms/keyring: envelope encryption at rest for the values tenants hand us as secret (SSM
// SecureString, later Secrets Manager), under a node key that never leaves the state directory.
//
// Paddock has no KMS API. A key id ("alias/aws/ssm", "alias/app", a key UUID or ARN) is a label:
// each (account, region, key id) gets its own data key, derived with HKDF-SHA256 from the node's
// master key, and each value is sealed with AES-256-GCM, its additional data naming the account,
// region and resource it belongs to. So a blob copied onto another parameter, account or region
// does not open, and a flipped bit is an error, never a wrong plaintext.
//
//   ASSIGN_OR_RETURN(auto ring, kms::KeyRing::Open(state_dir));
//   kms::Binding at{account, region, "arn:aws:ssm:us-east-1:123456789012:parameter/db/pw#3"};
//   ASSIGN_OR_RETURN(std::string blob, ring->Encrypt(at, "alias/aws/ssm", "hunter2"));
//   ASSIGN_OR_RETURN(std::string plain, ring->Decrypt(at, blob));
//
// The key file `<state-dir>/keys/master.key` (0600, in a 0700 directory) holds one line per key
// version, "<version> <64 hex digits>", newest last. Rotate() appends a version: new blobs use it,
// older blobs keep opening with the version they name. Losing the file loses every sealed value;
// replicas sharing a store must share the file (docs/contracts/ssm.md, "Encryption at rest").
//
// Blob: "PK1" | key version (u32 BE) | key id length (u16 BE) | key id | nonce (12) | ciphertext |
// tag (16). The header is part of the additional data, so neither the version nor the key id can
// be swapped either.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace paddock::kms {

enum class Error {
  kInvalidKeyId = 1,    // a key id that is empty, too long or has characters outside [a-zA-Z0-9:/_-]
  kInvalidCiphertext,   // a blob that is not ours, is for another resource, or was altered
  kKeyFile,             // the key file is missing, unreadable or malformed
};
const ErrorDomain& ErrorDomainOf(Error);

// What a sealed value belongs to. Every field takes part in the seal: decrypting with any other
// Binding fails with kInvalidCiphertext.
struct Binding {
  std::string account;
  std::string region;
  // The resource (and, where the owner wants it, its version): any string the owner chooses.
  std::string resource;
};

// The key ids KeyRing accepts: 1-256 characters of [a-zA-Z0-9:/_-] (SSM's KeyId shape).
bool IsValidKeyId(std::string_view key_id);

class KeyRing {
 public:
  // Opens `<state_dir>/keys/master.key`, creating it with one fresh key (version 1) when it does
  // not exist. The directory is made 0700 and the file 0600 (tightened if looser).
  // Error::kKeyFile (kDataLoss) for a file that exists but does not parse; kUnavailable when it
  // cannot be read or written.
  static StatusOr<std::unique_ptr<KeyRing>> Open(const std::string& state_dir);

  // A ring over `keys` (version, 32-byte key), newest last, with no file: for tests.
  static std::unique_ptr<KeyRing> InMemory(std::vector<std::pair<uint32_t, std::string>> keys);

  // Seals `plaintext` for `at` under the data key of (account, region, key_id), with the newest
  // key version. InvalidArgument with kInvalidKeyId for a key id IsValidKeyId refuses.
  StatusOr<std::string> Encrypt(const Binding& at, std::string_view key_id, std::string_view plaintext) const;

  // Opens a blob Encrypt made for the same Binding. DataLoss with kInvalidCiphertext for anything
  // else: another binding, a truncated or altered blob, or a key version this ring lacks.
  StatusOr<std::string> Decrypt(const Binding& at, std::string_view blob) const;

  // A keyed digest of `data` for `at` (HMAC-SHA256 under a key derived from the newest key
  // version for this binding's account and region, with the resource inside the MAC), as
  // "<version>:" + 32 bytes. For telling later whether a value equals one sealed before without
  // storing anything an offline guesser could test (a plain hash of a short secret is one): the
  // MAC means nothing without the node key. Secrets Manager's ClientRequestToken idempotency.
  StatusOr<std::string> Mac(const Binding& at, std::string_view data) const;
  // Whether `mac` (from Mac, under any key version this ring holds) is `data`'s MAC for `at`;
  // false for anything else. Compares in constant time.
  bool MacMatches(const Binding& at, std::string_view data, std::string_view mac) const;

  // Adds a new newest key version and, for a ring with a file, writes the file (atomically:
  // a crash leaves the old file or the new one). Returns the new version.
  StatusOr<uint32_t> Rotate();

  uint32_t newest_version() const;
  // The key file's path; empty for an in-memory ring.
  const std::string& path() const { return path_; }

 private:
  struct Version {
    uint32_t version;
    std::string key;  // 32 bytes
  };
  KeyRing(std::string path, std::vector<Version> keys) : path_(std::move(path)), keys_(std::move(keys)) {}

  const std::string path_;
  mutable std::mutex mutex_;
  std::vector<Version> keys_;  // GUARDED_BY(mutex_); ascending versions, never empty
};

}  // namespace paddock::kms
