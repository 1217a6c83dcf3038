#include "registry/token.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "common/encoding.h"

namespace paddock::registry {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// A key id Distribution (libtrust) computes for this P-256 key; the same algorithm, run against a
// real docker-registry, made tokens it accepted.
TEST(LibtrustKeyIdTest, IsDistributionsFingerprint) {
  auto der = HexDecode(
      "3059301306072a8648ce3d020106082a8648ce3d03010703420004471c3e758c4904285bba7e53118ed0f524adeb0757d25bd2f8e7b0d7"
      "6dfa714cdd520f7aca8a8b917acc37f51de8f0c9bbe3ad858382e702dc25a12d09f7a858");
  ASSERT_TRUE(der.ok());
  EXPECT_EQ(LibtrustKeyId(*der), "YTMR:CQZD:BUZQ:PAEQ:5WE4:EBY6:XCT3:4KS2:H4RY:ZPNK:F6FS:PH2K");
}

class TokenSignerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/registry-token-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

// Checks the JWS signature of `jwt` with the certificate's key (what the registry does).
bool VerifiesWith(const std::string& cert_path, const std::string& jwt) {
  FILE* f = std::fopen(cert_path.c_str(), "r");
  if (f == nullptr) return false;
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (cert == nullptr) return false;
  EVP_PKEY* key = X509_get_pubkey(cert);
  const size_t dot = jwt.rfind('.');
  auto rs = Base64UrlDecode(jwt.substr(dot + 1));
  bool ok = false;
  if (rs.ok() && rs->size() == 64) {
    ECDSA_SIG* sig = ECDSA_SIG_new();
    ECDSA_SIG_set0(sig, BN_bin2bn(reinterpret_cast<const unsigned char*>(rs->data()), 32, nullptr),
                   BN_bin2bn(reinterpret_cast<const unsigned char*>(rs->data()) + 32, 32, nullptr));
    unsigned char* der = nullptr;
    const int n = i2d_ECDSA_SIG(sig, &der);
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    ok = EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
         EVP_DigestVerify(ctx, der, static_cast<size_t>(n), reinterpret_cast<const unsigned char*>(jwt.data()), dot) == 1;
    EVP_MD_CTX_free(ctx);
    OPENSSL_free(der);
    ECDSA_SIG_free(sig);
  }
  EVP_PKEY_free(key);
  X509_free(cert);
  return ok;
}

json::object Part(const std::string& jwt, int index) {
  size_t start = 0;
  for (int i = 0; i < index; ++i) start = jwt.find('.', start) + 1;
  auto text = Base64UrlDecode(jwt.substr(start, jwt.find('.', start) - start));
  EXPECT_TRUE(text.ok());
  return json::parse(*text).as_object();
}

TEST_F(TokenSignerTest, TokensAreSignedWithTheCertifiedKeyAndGrantOneRepository) {
  auto signer = TokenSigner::LoadOrCreate(dir_);
  ASSERT_TRUE(signer.ok()) << signer.status().ToString();
  const TimePoint now = std::chrono::system_clock::from_time_t(1780000000);
  auto jwt = signer->Mint({.subject = "arn:aws:ecs:us-east-1:123456789012:container-instance/prod/abc",
                           .repository = "images/ab12",
                           .actions = {"pull"},
                           .ttl = std::chrono::seconds(900)},
                          now);
  ASSERT_TRUE(jwt.ok()) << jwt.status().ToString();
  json::object header = Part(*jwt, 0), claims = Part(*jwt, 1);
  EXPECT_EQ(header.at("alg").as_string(), "ES256");
  EXPECT_EQ(header.at("kid").as_string(), signer->key_id());
  EXPECT_EQ(claims.at("iss").as_string(), "paddock");
  EXPECT_EQ(claims.at("aud").as_string(), "paddock-registry");
  EXPECT_EQ(claims.at("sub").as_string(), "arn:aws:ecs:us-east-1:123456789012:container-instance/prod/abc");
  EXPECT_EQ(claims.at("exp").as_int64(), 1780000900);
  EXPECT_EQ(claims.at("nbf").as_int64(), 1780000000 - 60);
  EXPECT_EQ(json::serialize(claims.at("access")),
            R"([{"type":"repository","name":"images/ab12","actions":["pull"]}])");
  EXPECT_TRUE(VerifiesWith(signer->certificate_path(), *jwt));
  std::string tampered = *jwt;
  tampered[tampered.find('.') + 5] ^= 1;
  EXPECT_FALSE(VerifiesWith(signer->certificate_path(), tampered));
}

TEST_F(TokenSignerTest, TheKeyIsPrivateAndKeptAcrossRestarts) {
  auto first = TokenSigner::LoadOrCreate(dir_);
  ASSERT_TRUE(first.ok());
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/token.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto again = TokenSigner::LoadOrCreate(dir_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->key_id(), first->key_id());
  // A lost certificate is made again from the same key.
  fs::remove(dir_ + "/token.crt");
  auto third = TokenSigner::LoadOrCreate(dir_);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->key_id(), first->key_id());
  auto jwt = third->Mint({.subject = "s", .repository = "r", .actions = {"pull"}}, std::chrono::system_clock::now());
  EXPECT_TRUE(VerifiesWith(third->certificate_path(), *jwt));
}

}  // namespace
}  // namespace paddock::registry
