#include "kms/keyring.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/encoding.h"

namespace paddock::kms {
namespace {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kms_test.XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const Binding kAt{"123456789012", "us-east-1", "arn:aws:ssm:us-east-1:123456789012:parameter/db/pw#1"};

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(KeyRingTest, RoundTrips) {
  TempDir dir;
  auto ring = KeyRing::Open(dir.path());
  ASSERT_TRUE(ring.ok()) << ring.status().ToString();
  for (std::string plain : {std::string(), std::string("hunter2"), std::string("\0\xff binary", 9),
                            std::string(8192, 'x')}) {
    auto blob = (*ring)->Encrypt(kAt, "alias/aws/ssm", plain);
    ASSERT_TRUE(blob.ok()) << blob.status().ToString();
    if (plain.size() >= 7) {
      EXPECT_EQ(blob->find(plain), std::string::npos) << "the plaintext shows in the blob";
    }
    auto back = (*ring)->Decrypt(kAt, *blob);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, plain);
  }
  // Two seals of one value differ (random nonce).
  EXPECT_NE(*(*ring)->Encrypt(kAt, "alias/aws/ssm", "v"), *(*ring)->Encrypt(kAt, "alias/aws/ssm", "v"));
}

TEST(KeyRingTest, ABlobOpensOnlyForItsOwnBinding) {
  auto ring = KeyRing::InMemory({{1, RandomBytes(32)}});
  auto blob = ring->Encrypt(kAt, "alias/aws/ssm", "secret");
  ASSERT_TRUE(blob.ok());
  std::vector<Binding> others = {
      {"210987654321", kAt.region, kAt.resource},                                   // another account
      {kAt.account, "eu-west-1", kAt.resource},                                     // another region
      {kAt.account, kAt.region, "arn:aws:ssm:us-east-1:123456789012:parameter/other#1"},  // another parameter
      {kAt.account, kAt.region, "arn:aws:ssm:us-east-1:123456789012:parameter/db/pw#2"},  // another version
  };
  for (const Binding& b : others) {
    auto got = ring->Decrypt(b, *blob);
    EXPECT_EQ(got.status().code(), StatusCode::kDataLoss) << b.account << " " << b.region << " " << b.resource;
    EXPECT_TRUE(IsError(got.status(), Error::kInvalidCiphertext));
  }
  EXPECT_TRUE(ring->Decrypt(kAt, *blob).ok());
}

TEST(KeyRingTest, AlteredBlobsFail) {
  auto ring = KeyRing::InMemory({{1, RandomBytes(32)}});
  auto blob = ring->Encrypt(kAt, "alias/app", "secret value");
  ASSERT_TRUE(blob.ok());
  // Every single-bit flip, in the header, nonce, ciphertext and tag alike.
  for (size_t i = 0; i < blob->size(); ++i) {
    std::string bad = *blob;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    auto got = ring->Decrypt(kAt, bad);
    EXPECT_FALSE(got.ok()) << "byte " << i;
    EXPECT_EQ(got.status().code(), StatusCode::kDataLoss) << "byte " << i;
  }
  // The key id in the header cannot be swapped for another of the same length.
  std::string swapped = *blob;
  swapped.replace(swapped.find("alias/app"), 9, "alias/ap2");
  EXPECT_FALSE(ring->Decrypt(kAt, swapped).ok());
  // Truncated, empty, foreign.
  for (size_t n : {size_t{0}, size_t{3}, size_t{9}, blob->size() - 1})
    EXPECT_FALSE(ring->Decrypt(kAt, blob->substr(0, n)).ok()) << n;
  EXPECT_FALSE(ring->Decrypt(kAt, "AQICAHh...not ours").ok());
}

TEST(KeyRingTest, InvalidKeyIdsAreRefused) {
  auto ring = KeyRing::InMemory({{1, RandomBytes(32)}});
  for (std::string id : {std::string(), std::string("alias/with space"), std::string("a|b"),
                         std::string(257, 'a')}) {
    auto got = ring->Encrypt(kAt, id, "v");
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << id;
    EXPECT_TRUE(IsError(got.status(), Error::kInvalidKeyId));
  }
  EXPECT_TRUE(IsValidKeyId("arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"));
  EXPECT_TRUE(IsValidKeyId(std::string(256, 'a')));
}

TEST(KeyRingTest, KeyFileIsPrivateAndKeptAcrossOpens) {
  TempDir dir;
  std::string blob;
  {
    auto ring = KeyRing::Open(dir.path());
    ASSERT_TRUE(ring.ok()) << ring.status().ToString();
    EXPECT_EQ((*ring)->path(), dir.path() + "/keys/master.key");
    blob = *(*ring)->Encrypt(kAt, "alias/aws/ssm", "kept");
  }
  EXPECT_EQ(ModeOf(dir.path() + "/keys"), 0700u);
  EXPECT_EQ(ModeOf(dir.path() + "/keys/master.key"), 0600u);
  EXPECT_THAT(ReadAll(dir.path() + "/keys/master.key"), ::testing::MatchesRegex("1 [0-9a-f]{64}\n"));

  // Loosened by someone: tightened again at the next open, and the same key is read.
  ASSERT_EQ(::chmod((dir.path() + "/keys").c_str(), 0755), 0);
  ASSERT_EQ(::chmod((dir.path() + "/keys/master.key").c_str(), 0644), 0);
  auto again = KeyRing::Open(dir.path());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(ModeOf(dir.path() + "/keys"), 0700u);
  EXPECT_EQ(ModeOf(dir.path() + "/keys/master.key"), 0600u);
  EXPECT_EQ(*(*again)->Decrypt(kAt, blob), "kept");

  // Another node's key file does not open this node's blobs.
  TempDir other;
  auto foreign = KeyRing::Open(other.path());
  ASSERT_TRUE(foreign.ok());
  EXPECT_FALSE((*foreign)->Decrypt(kAt, blob).ok());
}

TEST(KeyRingTest, MalformedKeyFileIsDataLoss) {
  TempDir dir;
  ASSERT_TRUE(KeyRing::Open(dir.path()).ok());
  const std::string path = dir.path() + "/keys/master.key";
  for (std::string text : {std::string(""), std::string("1 abcd\n"), std::string("x " + std::string(64, 'a') + "\n"),
                           "2 " + std::string(64, 'a') + "\n1 " + std::string(64, 'b') + "\n"}) {
    std::ofstream(path, std::ios::trunc) << text;
    auto ring = KeyRing::Open(dir.path());
    EXPECT_EQ(ring.status().code(), StatusCode::kDataLoss) << text;
    EXPECT_TRUE(IsError(ring.status(), Error::kKeyFile)) << text;
  }
  // A symlink in place of the key file is refused, not followed.
  std::filesystem::remove(path);
  std::filesystem::create_symlink("/etc/hostname", path);
  EXPECT_EQ(KeyRing::Open(dir.path()).status().code(), StatusCode::kDataLoss);
}

// Two processes starting on a fresh state directory (the server and `paddock admin`) must end up
// with the same key: the file is linked into place, never renamed over another's.
TEST(KeyRingTest, ConcurrentFirstOpensAgreeOnOneKey) {
  for (int i = 0; i < 20; ++i) {
    TempDir dir;
    StatusOr<std::unique_ptr<KeyRing>> a = Internal("not run"), b = Internal("not run");
    std::thread ta([&] { a = KeyRing::Open(dir.path()); });
    std::thread tb([&] { b = KeyRing::Open(dir.path()); });
    ta.join();
    tb.join();
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    auto blob = (*a)->Encrypt(kAt, "alias/aws/ssm", "shared");
    ASSERT_TRUE(blob.ok());
    auto opened = (*b)->Decrypt(kAt, *blob);
    ASSERT_TRUE(opened.ok()) << "round " << i << ": " << opened.status().ToString();
    EXPECT_EQ(*opened, "shared");
  }
}

TEST(KeyRingTest, RotationKeepsOldBlobsReadable) {
  TempDir dir;
  auto ring = KeyRing::Open(dir.path());
  ASSERT_TRUE(ring.ok());
  auto old_blob = (*ring)->Encrypt(kAt, "alias/aws/ssm", "before");
  ASSERT_TRUE(old_blob.ok());
  auto v = (*ring)->Rotate();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, 2u);
  EXPECT_EQ((*ring)->newest_version(), 2u);
  auto new_blob = (*ring)->Encrypt(kAt, "alias/aws/ssm", "after");
  ASSERT_TRUE(new_blob.ok());
  // The header names the version: "PK1" then u32 BE.
  EXPECT_EQ(old_blob->substr(0, 7), std::string("PK1\0\0\0\x01", 7));
  EXPECT_EQ(new_blob->substr(0, 7), std::string("PK1\0\0\0\x02", 7));
  EXPECT_EQ(*(*ring)->Decrypt(kAt, *old_blob), "before");
  EXPECT_EQ(*(*ring)->Decrypt(kAt, *new_blob), "after");

  // The file gained a line and stayed private; a reopen reads both versions.
  EXPECT_THAT(ReadAll(dir.path() + "/keys/master.key"),
              ::testing::MatchesRegex("1 [0-9a-f]{64}\n2 [0-9a-f]{64}\n"));
  EXPECT_EQ(ModeOf(dir.path() + "/keys/master.key"), 0600u);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path() + "/keys"), {}), 1);  // no temporary left
  auto reopened = KeyRing::Open(dir.path());
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->newest_version(), 2u);
  EXPECT_EQ(*(*reopened)->Decrypt(kAt, *old_blob), "before");
  EXPECT_EQ(*(*reopened)->Decrypt(kAt, *new_blob), "after");

  // A ring without version 1 cannot open version-1 blobs.
  auto lines = ReadAll(dir.path() + "/keys/master.key");
  std::ofstream(dir.path() + "/keys/master.key", std::ios::trunc) << lines.substr(lines.find('\n') + 1);
  auto only_v2 = KeyRing::Open(dir.path());
  ASSERT_TRUE(only_v2.ok()) << only_v2.status().ToString();
  EXPECT_TRUE(IsError((*only_v2)->Decrypt(kAt, *old_blob).status(), Error::kInvalidCiphertext));
  EXPECT_EQ(*(*only_v2)->Decrypt(kAt, *new_blob), "after");
}

TEST(KeyRingTest, MacsMatchOnlyTheSameValueForTheSameBindingAndSurviveRotation) {
  auto ring = KeyRing::InMemory({{1, std::string(32, 'k')}});
  auto mac = ring->Mac(kAt, "hunter2");
  ASSERT_TRUE(mac.ok()) << mac.status().ToString();
  EXPECT_TRUE(ring->MacMatches(kAt, "hunter2", *mac));
  EXPECT_FALSE(ring->MacMatches(kAt, "hunter3", *mac));
  Binding other = kAt;
  other.account = "210987654321";
  EXPECT_FALSE(ring->MacMatches(other, "hunter2", *mac));
  other = kAt;
  other.resource += "x";
  EXPECT_FALSE(ring->MacMatches(other, "hunter2", *mac));
  // Not a plain hash: another node key gives another MAC.
  auto stranger = KeyRing::InMemory({{1, std::string(32, 'j')}});
  EXPECT_NE(*stranger->Mac(kAt, "hunter2"), *mac);
  EXPECT_FALSE(stranger->MacMatches(kAt, "hunter2", *mac));
  // A MAC made before a rotation still matches after it.
  ASSERT_TRUE(ring->Rotate().ok());
  EXPECT_TRUE(ring->MacMatches(kAt, "hunter2", *mac));
  EXPECT_NE(*ring->Mac(kAt, "hunter2"), *mac);
  for (const std::string& bad : std::vector<std::string>{"", ":", "x:abc", "9:abc", mac->substr(0, mac->size() - 1)})
    EXPECT_FALSE(ring->MacMatches(kAt, "hunter2", bad)) << bad;
}

}  // namespace
}  // namespace paddock::kms
