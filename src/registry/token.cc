#include "registry/token.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/encoding.h"
#include "common/es256.h"

namespace paddock::registry {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};

StatusOr<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("cannot read {}", path));
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Writes `text` to `path` (a certificate: public), replacing what was there.
Status WriteFile(const std::string& path, std::string_view text, mode_t mode) {
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return Unavailable(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Unavailable(fmt::format("cannot write {}", path));
  }
  return OkStatus();
}

// A self-signed certificate for `key`: what Distribution's rootcertbundle holds.
StatusOr<std::string> SelfSignedCertificate(EVP_PKEY* key) {
  std::unique_ptr<X509, X509Free> cert(X509_new());
  if (!cert) return Internal("X509_new failed");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -24L * 3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 100L * 365 * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("paddock registry tokens"),
                             -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  if (X509_sign(cert.get(), key, EVP_sha256()) == 0) return Internal("cannot sign the token certificate");
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  char* data = nullptr;
  if (!bio || PEM_write_bio_X509(bio.get(), cert.get()) != 1) return Internal("cannot encode the token certificate");
  const long n = BIO_get_mem_data(bio.get(), &data);
  if (n <= 0) return Internal("cannot encode the token certificate");
  return std::string(data, static_cast<size_t>(n));
}

}  // namespace

struct TokenSigner::Key {
  Es256Key es256;
};

std::string LibtrustKeyId(std::string_view der_public_key) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(der_public_key.data()), der_public_key.size(), digest);
  // RFC 4648 base32 of the first 240 bits (30 bytes: exactly 48 characters, no padding).
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  std::string b32;
  uint64_t buffer = 0;
  int bits = 0;
  for (int i = 0; i < 30; ++i) {
    buffer = (buffer << 8) | digest[i];
    bits += 8;
    while (bits >= 5) {
      b32 += kAlphabet[(buffer >> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  std::string out;
  for (size_t i = 0; i < b32.size(); i += 4) {
    if (!out.empty()) out += ':';
    out += b32.substr(i, 4);
  }
  return out;
}

TokenSigner::TokenSigner(std::unique_ptr<Key> key, std::string key_id, std::string certificate_path)
    : key_(std::move(key)), key_id_(std::move(key_id)), certificate_path_(std::move(certificate_path)) {}
TokenSigner::TokenSigner(TokenSigner&&) noexcept = default;
TokenSigner& TokenSigner::operator=(TokenSigner&&) noexcept = default;
TokenSigner::~TokenSigner() = default;

StatusOr<TokenSigner> TokenSigner::LoadOrCreate(const std::string& dir) {
  const std::string key_path = dir + "/token.key", cert_path = dir + "/token.crt";
  bool created = false;
  StatusOr<Es256Key> es256 = Es256Key::LoadOrCreate(key_path, &created);
  if (!es256.ok()) {
    if (es256.status().code() != StatusCode::kDataLoss) return es256.status();
    return DataLoss(fmt::format("{} is not an EC private key; remove it (and token.crt) and restart", key_path));
  }
  auto key = std::make_unique<Key>(Key{std::move(*es256)});
  if (created) ::unlink(cert_path.c_str());  // a certificate of an older key is made again below
  // The certificate is public, but made from the key: again whenever it is missing.
  if (!ReadAll(cert_path).ok()) {
    ASSIGN_OR_RETURN(std::string cert, SelfSignedCertificate(key->es256.pkey()));
    RETURN_IF_ERROR(WriteFile(cert_path, cert, 0644));
  }
  std::string id = LibtrustKeyId(key->es256.public_der());
  return TokenSigner(std::move(key), std::move(id), cert_path);
}

StatusOr<std::string> TokenSigner::Mint(const TokenRequest& request, TimePoint now) const {
  namespace json = boost::json;
  const int64_t t = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  json::array actions;
  for (const auto& a : request.actions) actions.emplace_back(a);
  const json::object header{{"typ", "JWT"}, {"alg", "ES256"}, {"kid", key_id_}};
  const json::object claims{
      {"iss", kTokenIssuer},
      {"sub", request.subject},
      {"aud", kTokenService},
      {"exp", t + request.ttl.count()},
      {"nbf", t - 60},
      {"iat", t},
      {"jti", RandomUuid()},
      {"access", json::array{json::object{{"type", "repository"}, {"name", request.repository},
                                          {"actions", std::move(actions)}}}}};
  return key_->es256.SignJws(json::serialize(header), json::serialize(claims));
}

}  // namespace paddock::registry
