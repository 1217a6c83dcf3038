#include "common/es256.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "common/encoding.h"
#include "common/ids.h"

namespace paddock {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
struct SigFree {
  void operator()(ECDSA_SIG* s) const { ECDSA_SIG_free(s); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

StatusOr<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("cannot read {}", path));
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// `text` at `path`, 0600 from its creation on, whole or not at all: written and synced under a
// private name, then linked in, which fails (kAlreadyExists) when the path exists already.
Status CreateWhole(const std::string& path, std::string_view text) {
  const std::string tmp = fmt::format("{}.{}.tmp", path, RandomString(8, "abcdefghijklmnopqrstuvwxyz0123456789"));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Unavailable(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  const int linked = written ? ::link(tmp.c_str(), path.c_str()) : -1;
  const int link_errno = errno;
  ::unlink(tmp.c_str());
  if (!written) return Unavailable(fmt::format("cannot write {}", tmp));
  if (linked != 0 && link_errno == EEXIST) return AlreadyExists(fmt::format("{} exists", path));
  if (linked != 0) return Unavailable(fmt::format("cannot create {}: {}", path, std::strerror(link_errno)));
  return OkStatus();
}

StatusOr<KeyPtr> ParsePrivateKey(const std::string& path, std::string_view pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  char group[32] = {};
  size_t group_size = 0;
  if (!key || EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_EC ||
      EVP_PKEY_get_utf8_string_param(key.get(), OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &group_size) != 1 ||
      std::string_view(group, group_size) != "prime256v1") {
    return DataLoss(fmt::format("{} is not an EC P-256 private key; remove it and start again", path));
  }
  return key;
}

}  // namespace

struct Es256Key::Key {
  KeyPtr pkey;
};

Es256Key::Es256Key(std::unique_ptr<Key> key, std::string public_der, Point point)
    : key_(std::move(key)), public_der_(std::move(public_der)), point_(std::move(point)) {}
Es256Key::Es256Key(Es256Key&&) noexcept = default;
Es256Key& Es256Key::operator=(Es256Key&&) noexcept = default;
Es256Key::~Es256Key() = default;

evp_pkey_st* Es256Key::pkey() const { return key_->pkey.get(); }

StatusOr<Es256Key> Es256Key::LoadOrCreate(const std::string& path, bool* created) {
  if (created) *created = false;
  auto key = std::make_unique<Key>();
  StatusOr<std::string> pem = ReadAll(path);
  if (!pem.ok()) {
    KeyPtr made(EVP_EC_gen("P-256"));
    if (!made) return Internal("cannot generate a P-256 key");
    std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
    char* data = nullptr;
    if (!bio || PEM_write_bio_PrivateKey(bio.get(), made.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1)
      return Internal("cannot encode a P-256 key");
    const long n = BIO_get_mem_data(bio.get(), &data);
    Status written = CreateWhole(path, std::string_view(data, n > 0 ? static_cast<size_t>(n) : 0));
    if (written.ok()) {
      if (created) *created = true;
      key->pkey = std::move(made);
    } else if (written.code() == StatusCode::kAlreadyExists) {
      pem = ReadAll(path);  // another process made it first: its key is the one
      if (!pem.ok()) return pem.status();
    } else {
      return written;
    }
  }
  if (!key->pkey) {
    ASSIGN_OR_RETURN(key->pkey, ParsePrivateKey(path, *pem));
  }
  unsigned char* der = nullptr;
  const int der_size = i2d_PUBKEY(key->pkey.get(), &der);
  if (der_size <= 0) return Internal("cannot encode a P-256 public key");
  std::string public_der(reinterpret_cast<char*>(der), static_cast<size_t>(der_size));
  OPENSSL_free(der);
  unsigned char encoded[65];
  size_t encoded_size = 0;
  if (EVP_PKEY_get_octet_string_param(key->pkey.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, encoded, sizeof encoded,
                                      &encoded_size) != 1 ||
      encoded_size != 65 || encoded[0] != 0x04) {
    return Internal("cannot read a P-256 public point");
  }
  Point point{std::string(reinterpret_cast<char*>(encoded + 1), 32), std::string(reinterpret_cast<char*>(encoded + 33), 32)};
  return Es256Key(std::move(key), std::move(public_der), std::move(point));
}

StatusOr<std::string> Es256Key::SignJws(std::string_view header_json, std::string_view payload_json) const {
  const std::string signing_input = Base64UrlEncode(header_json) + "." + Base64UrlEncode(payload_json);
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  size_t der_size = 0;
  const auto* input = reinterpret_cast<const unsigned char*>(signing_input.data());
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_->pkey.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &der_size, input, signing_input.size()) != 1)
    return Internal("cannot sign with the P-256 key");
  std::string der(der_size, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(der.data()), &der_size, input, signing_input.size()) != 1)
    return Internal("cannot sign with the P-256 key");
  // JWS wants r || s, 32 bytes each, not the DER ECDSA-Sig-Value OpenSSL makes.
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  std::unique_ptr<ECDSA_SIG, SigFree> sig(d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der_size)));
  if (!sig) return Internal("cannot decode an ECDSA signature");
  unsigned char rs[64];
  if (BN_bn2binpad(ECDSA_SIG_get0_r(sig.get()), rs, 32) != 32 || BN_bn2binpad(ECDSA_SIG_get0_s(sig.get()), rs + 32, 32) != 32)
    return Internal("cannot encode an ECDSA signature");
  return signing_input + "." + Base64UrlEncode(std::string_view(reinterpret_cast<char*>(rs), sizeof rs));
}

}  // namespace paddock
