#include "aws/internal/crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstdlib>
#include <memory>

namespace paddock::aws::internal {
namespace {

// OpenSSL failures here mean a broken installation, not bad input: crash loudly.
void Check(int ok) {
  if (ok != 1) std::abort();
}

const EVP_MD* Sha256Md() {
  static const EVP_MD* md = [] {
    EVP_MD* m = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    if (m == nullptr) std::abort();
    return m;
  }();
  return md;
}

EVP_MAC* HmacMac() {
  static EVP_MAC* mac = [] {
    EVP_MAC* m = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    if (m == nullptr) std::abort();
    return m;
  }();
  return mac;
}

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
struct MacCtxFree {
  void operator()(EVP_MAC_CTX* c) const { EVP_MAC_CTX_free(c); }
};

EVP_MD_CTX* ThreadMdCtx() {
  thread_local std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx) std::abort();
  return ctx.get();
}

EVP_MAC_CTX* ThreadMacCtx() {
  thread_local std::unique_ptr<EVP_MAC_CTX, MacCtxFree> ctx = [] {
    std::unique_ptr<EVP_MAC_CTX, MacCtxFree> c(EVP_MAC_CTX_new(HmacMac()));
    if (!c) std::abort();
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    Check(EVP_MAC_CTX_set_params(c.get(), params));
    return c;
  }();
  return ctx.get();
}

}  // namespace

Sha256Digest Sha256(std::string_view data) {
  Sha256Digest out;
  EVP_MD_CTX* ctx = ThreadMdCtx();
  Check(EVP_DigestInit_ex2(ctx, Sha256Md(), nullptr));
  Check(EVP_DigestUpdate(ctx, data.data(), data.size()));
  unsigned int len = 0;
  Check(EVP_DigestFinal_ex(ctx, out.data(), &len));
  return out;
}

Sha256Digest HmacSha256(std::string_view key, std::string_view data) {
  Sha256Digest out;
  EVP_MAC_CTX* ctx = ThreadMacCtx();
  // An empty key must still be a (zero-length) key, not "reuse the previous one".
  static const unsigned char kEmpty = 0;
  const auto* k = key.empty() ? &kEmpty : reinterpret_cast<const unsigned char*>(key.data());
  Check(EVP_MAC_init(ctx, k, key.size(), nullptr));
  Check(EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(data.data()), data.size()));
  size_t len = 0;
  Check(EVP_MAC_final(ctx, out.data(), &len, out.size()));
  return out;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace paddock::aws::internal
