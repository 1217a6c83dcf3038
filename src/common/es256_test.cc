// common/es256: the key file (made once, 0600, one key however many start at once, refused when it
// holds anything else) and JWS signatures that OpenSSL verifies with the public key alone.
#include "common/es256.h"

#include <gtest/gtest.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "common/encoding.h"

namespace paddock {
namespace {

std::string TempPath(const std::string& name) {
  std::string dir = (std::filesystem::temp_directory_path() / ("es256-" + RandomString(10, "abcdef0123456789"))).string();
  std::filesystem::create_directories(dir);
  return dir + "/" + name;
}

// Verifies a compact JWS with only the DER public key, as a relying party holding the JWKS would.
bool Verifies(const std::string& public_der, const std::string& jws) {
  const size_t last = jws.rfind('.');
  if (last == std::string::npos) return false;
  StatusOr<std::string> rs = Base64UrlDecode(jws.substr(last + 1));
  if (!rs.ok() || rs->size() != 64) return false;
  std::unique_ptr<ECDSA_SIG, decltype(&ECDSA_SIG_free)> sig(ECDSA_SIG_new(), ECDSA_SIG_free);
  const auto* raw = reinterpret_cast<const unsigned char*>(rs->data());
  ECDSA_SIG_set0(sig.get(), BN_bin2bn(raw, 32, nullptr), BN_bin2bn(raw + 32, 32, nullptr));
  unsigned char* der = nullptr;
  const int der_size = i2d_ECDSA_SIG(sig.get(), &der);
  const auto* p = reinterpret_cast<const unsigned char*>(public_der.data());
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(d2i_PUBKEY(nullptr, &p, static_cast<long>(public_der.size())),
                                                         EVP_PKEY_free);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  const bool ok = key && EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) == 1 &&
                  EVP_DigestVerify(ctx.get(), der, static_cast<size_t>(der_size),
                                   reinterpret_cast<const unsigned char*>(jws.data()), last) == 1;
  OPENSSL_free(der);
  return ok;
}

TEST(Es256KeyTest, IsMadeOnceAsAPrivateFileAndReadBackTheSame) {
  const std::string path = TempPath("identity.key");
  bool created = false;
  StatusOr<Es256Key> first = Es256Key::LoadOrCreate(path, &created);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(created);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(first->public_point().x.size(), 32u);
  EXPECT_EQ(first->public_point().y.size(), 32u);
  // The point is the DER key's last 64 bytes (SubjectPublicKeyInfo ends in 04 || x || y).
  EXPECT_EQ(first->public_der().substr(first->public_der().size() - 64), first->public_point().x + first->public_point().y);

  StatusOr<Es256Key> again = Es256Key::LoadOrCreate(path, &created);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(created);
  EXPECT_EQ(again->public_der(), first->public_der());
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(Es256KeyTest, SignaturesVerifyWithThePublicKeyAndNotWithAnother) {
  const std::string path = TempPath("k.pem");
  StatusOr<Es256Key> key = Es256Key::LoadOrCreate(path);
  StatusOr<Es256Key> other = Es256Key::LoadOrCreate(TempPath("other.pem"));
  ASSERT_TRUE(key.ok() && other.ok());
  StatusOr<std::string> jws = key->SignJws(R"({"alg":"ES256"})", R"({"sub":"shop"})");
  ASSERT_TRUE(jws.ok());
  EXPECT_EQ(jws->substr(0, jws->find('.')), Base64UrlEncode(R"({"alg":"ES256"})"));
  EXPECT_TRUE(Verifies(key->public_der(), *jws));
  EXPECT_FALSE(Verifies(other->public_der(), *jws));
  std::string tampered = *jws;
  tampered[tampered.find('.') + 2] ^= 1;  // a payload character
  EXPECT_FALSE(Verifies(key->public_der(), tampered));
}

TEST(Es256KeyTest, ProcessesStartingAtOnceEndWithOneKey) {
  const std::string path = TempPath("shared.key");
  std::vector<std::string> ders(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ders.size(); ++i) {
    threads.emplace_back([&, i] {
      StatusOr<Es256Key> k = Es256Key::LoadOrCreate(path);
      if (k.ok()) ders[i] = k->public_der();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& d : ders) EXPECT_EQ(d, ders[0]);
  EXPECT_FALSE(ders[0].empty());
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) ++files;
  EXPECT_EQ(files, 1u) << "no temporary file is left behind";
}

TEST(Es256KeyTest, AFileHoldingSomethingElseIsRefused) {
  const std::string path = TempPath("bad.key");
  std::ofstream(path) << "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n";
  StatusOr<Es256Key> key = Es256Key::LoadOrCreate(path);
  EXPECT_EQ(key.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(key.status().message().find("is not an EC P-256 private key"), std::string::npos);
}

}  // namespace
}  // namespace paddock
