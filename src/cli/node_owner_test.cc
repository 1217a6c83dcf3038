// Whose node this is (node_owner.h), the [[ec2_instance]] keys that say so (config.h), and the
// profile name `paddock up` chooses (aws_profile.h).
#include "cli/node_owner.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli/aws_profile.h"
#include "cli/config.h"
#include "common/clock.h"
#include "store/sqlite/sqlite_store.h"
#include "cli/schemas.h"

namespace paddock::cli {
namespace {
namespace fs = std::filesystem;

std::string TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "paddock-owner-XXXXXX").string();
  return mkdtemp(tmpl.data());
}

TEST(Ec2InstanceConfigTest, AccountAndHostAccessKeys) {
  std::string dir = TempDir();
  std::string path = dir + "/paddock.toml";
  std::ofstream(path) << "[[ec2_instance]]\ncluster = \"a\"\naccount = \"123456789012\"\nhost_access = true\n"
                         "[[ec2_instance]]\ncluster = \"b\"\n";
  ServerConfig c;
  ASSERT_TRUE(LoadConfigFile(path, c).ok());
  ASSERT_EQ(c.ec2_instances.size(), 2u);
  EXPECT_EQ(c.ec2_instances[0].account, "123456789012");
  EXPECT_TRUE(c.ec2_instances[0].host_access);
  EXPECT_EQ(c.ec2_instances[1].account, "");      // the owner default
  EXPECT_FALSE(c.ec2_instances[1].host_access);  // off by default
  EXPECT_TRUE(ValidateConfig(c).ok());
  for (const char* bad : {"[[ec2_instance]]\ncluster = \"a\"\naccount = 123456789012\n",
                          "[[ec2_instance]]\ncluster = \"a\"\nhost_access = \"yes\"\n"}) {
    std::ofstream(path) << bad;
    ServerConfig b;
    EXPECT_FALSE(LoadConfigFile(path, b).ok()) << bad;
  }
  for (const char* account : {"12345678901", "1234567890123", "12345678901a", " 123456789012"}) {
    ServerConfig v;
    Ec2InstanceConfig e;
    e.cluster = "a";
    e.account = account;
    v.ec2_instances.push_back(e);
    Status s = ValidateConfig(v);
    EXPECT_FALSE(s.ok()) << account;
    EXPECT_NE(s.message().find("is not a 12-digit account id"), std::string::npos) << s.message();
  }
  fs::remove_all(dir);
}

TEST(Ec2OwnerTest, ExplicitThenEmulatorDefaultThenBootstrapNeverAnyOther) {
  ServerConfig server;
  const AccountId bootstrap("724091333728");
  Ec2InstanceConfig explicit_owner;
  explicit_owner.cluster = "ec2c";
  explicit_owner.account = "111122223333";
  EXPECT_EQ(Ec2Owner(explicit_owner, server, bootstrap)->str(), "111122223333");
  Ec2InstanceConfig defaulted;
  defaulted.cluster = "ec2c";
  EXPECT_EQ(Ec2Owner(defaulted, server, bootstrap)->str(), "724091333728");
  ServerConfig emulator = server;
  emulator.accept_any_credentials = true;
  emulator.default_account = "000000000000";
  EXPECT_EQ(Ec2Owner(defaulted, emulator, bootstrap)->str(), "000000000000");
  EXPECT_EQ(Ec2Owner(explicit_owner, emulator, bootstrap)->str(), "111122223333");
  auto none = Ec2Owner(defaulted, server, std::nullopt);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(none.status().message().find("set account = \"<12-digit account id>\""), std::string::npos);
}

class BootstrapAccountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir();
    auto s = store::SqliteStore::Open({.path = dir_ + "/paddock.db", .schemas = NodeSchemas()});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    accounts_ = std::make_unique<iam::Accounts>(*store_, SystemClock::Get());
  }
  void TearDown() override {
    store_->Close();
    fs::remove_all(dir_);
  }
  void WriteKey(const BootstrapIdentity& id) {
    std::ofstream(credentials()) << "[paddock]\naws_access_key_id = " << id.access_key_id
                                 << "\naws_secret_access_key = " << id.secret_access_key << "\n";
  }
  std::string credentials() const { return dir_ + "/credentials"; }

  std::string dir_;
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<iam::Accounts> accounts_;
};

// Finding 1: an account with a lower id than the bootstrap account (any tenant the admin creates
// may get one) never becomes the node's owner, on a restart or when the key file is lost.
TEST_F(BootstrapAccountTest, RecordedOnceAndKeptWhateverAccountsComeLater) {
  auto first = EnsureBootstrapAccount(*accounts_, *store_, credentials());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->notes.size(), 2u);  // created account, created access key
  WriteKey(*first);
  ASSERT_TRUE(accounts_->CreateAccount(AccountId("000000000001"), "attacker").ok());

  auto again = EnsureBootstrapAccount(*accounts_, *store_, credentials());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->account, first->account);
  EXPECT_EQ(again->access_key_id, first->access_key_id);  // the file's key, still valid
  EXPECT_TRUE(again->notes.empty());

  fs::remove(credentials());  // lost: a new key, of the recorded account, not of the lowest id
  auto rekeyed = EnsureBootstrapAccount(*accounts_, *store_, credentials());
  ASSERT_TRUE(rekeyed.ok());
  EXPECT_EQ(rekeyed->account, first->account);
  EXPECT_NE(rekeyed->access_key_id, first->access_key_id);

  auto recorded = RecordedBootstrapAccount(*store_, *accounts_);
  ASSERT_TRUE(recorded.ok());
  EXPECT_EQ(*recorded, first->account);
}

TEST_F(BootstrapAccountTest, StateDirectoriesBootstrappedBeforeTheRecordKeepTheirAccount) {
  // An older `paddock up`: account "paddock" and its key file, no record; a tenant with a lower id.
  ASSERT_TRUE(accounts_->CreateAccount(AccountId("000000000001"), "attacker").ok());
  auto old = accounts_->CreateAccount(AccountId("900000000000"), "paddock");
  ASSERT_TRUE(old.ok());
  auto key = accounts_->CreateAccessKey(old->id);
  ASSERT_TRUE(key.ok());
  WriteKey(BootstrapIdentity{old->id, key->id.str(), key->secret, {}});
  auto found = EnsureBootstrapAccount(*accounts_, *store_, credentials());
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->account, old->id);
  EXPECT_EQ(found->access_key_id, key->id.str());

  // The same without the key file: the one account named "paddock".
  BootstrapAccountTest::TearDown();
  BootstrapAccountTest::SetUp();
  ASSERT_TRUE(accounts_->CreateAccount(AccountId("000000000001"), "attacker").ok());
  ASSERT_TRUE(accounts_->CreateAccount(AccountId("900000000000"), "paddock").ok());
  auto by_name = EnsureBootstrapAccount(*accounts_, *store_, credentials());
  ASSERT_TRUE(by_name.ok());
  EXPECT_EQ(by_name->account.str(), "900000000000");
}

TEST_F(BootstrapAccountTest, NothingRecordedMeansNoOwner) {
  ASSERT_TRUE(accounts_->CreateAccount(AccountId("000000000001"), "attacker").ok());
  auto recorded = RecordedBootstrapAccount(*store_, *accounts_);
  ASSERT_TRUE(recorded.ok());
  EXPECT_FALSE(recorded->has_value());
}

class ProfileNameTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir();
    home_ = ProfileFiles{dir_ + "/credentials", dir_ + "/config"};
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Profile(const std::string& name, const std::string& key, const std::string& endpoint) {
    std::ofstream(home_.credentials, std::ios::app) << "[" << name << "]\naws_access_key_id = " << key
                                                    << "\naws_secret_access_key = s\n";
    std::ofstream(home_.config, std::ios::app) << "[profile " << name << "]\nregion = us-east-1\nendpoint_url = "
                                               << endpoint << "\n";
  }
  std::string dir_;
  ProfileFiles home_;
};

TEST_F(ProfileNameTest, TheProfileDisablesHostPrefixInjection) {
  std::ofstream(home_.config) << "[profile paddock]\n" << ProfileConfigBody("eu-west-1", "http://127.0.0.1:4566");
  EXPECT_EQ(IniValue(home_.config, "profile paddock", "region"), "eu-west-1");
  EXPECT_EQ(IniValue(home_.config, "profile paddock", "endpoint_url"), "http://127.0.0.1:4566");
  // botocore's config-file key (configprovider.py), so StartLiveTail's "stream-" host prefix is not
  // put before 127.0.0.1 (tests/test_aws_profile.py runs the CLIs through it).
  EXPECT_EQ(IniValue(home_.config, "profile paddock", "disable_host_prefix_injection"), "true");
}

TEST_F(ProfileNameTest, PaddockUnlessAnotherPaddockHasIt) {
  const std::string state = dir_ + "/proj-a/.paddock";
  EXPECT_EQ(ChooseProfileName(home_, state, "http://127.0.0.1:4566", "AKIAOURS"), "paddock");  // free
  Profile("default", "AKIAOTHER", "http://x");
  EXPECT_EQ(ChooseProfileName(home_, state, "http://127.0.0.1:4566", "AKIAOURS"), "paddock");
  Profile("paddock", "AKIAOURS", "http://127.0.0.1:4566");
  EXPECT_EQ(ChooseProfileName(home_, state, "http://127.0.0.1:4999", "AKIAOURS"), "paddock");  // ours, new port
  EXPECT_EQ(ChooseProfileName(home_, state, "http://127.0.0.1:4566", "AKIATHEIRS"), "paddock-proj-a");
  Profile("paddock-proj-a", "AKIATHIRD", "http://127.0.0.1:5000");
  std::string hashed = ChooseProfileName(home_, state, "http://127.0.0.1:4566", "AKIATHEIRS");
  EXPECT_TRUE(hashed.starts_with("paddock-proj-a-")) << hashed;
  EXPECT_EQ(hashed.size(), std::string("paddock-proj-a-").size() + 8);
  // A name holding the key is kept, even where an earlier candidate is free now.
  EXPECT_EQ(ChooseProfileName(home_, state, "http://127.0.0.1:5000", "AKIATHIRD"), "paddock-proj-a");
}

TEST_F(ProfileNameTest, ARestartKeepsItsNameWhenPaddockBecameFree) {
  Profile("paddock-s", "AKIAOURS", "http://127.0.0.1:4566");
  EXPECT_EQ(ChooseProfileName(home_, dir_ + "/s", "http://127.0.0.1:4567", "AKIAOURS"), "paddock-s");
}

TEST_F(ProfileNameTest, ASectionWithoutOurKeyIsTaken) {
  std::ofstream(home_.config) << "[profile paddock]\nsso_start_url = https://x\n";
  EXPECT_EQ(ChooseProfileName(home_, dir_ + "/s", "http://127.0.0.1:4566", "AKIAOURS"), "paddock-s");
  std::ofstream(home_.config, std::ios::trunc) << "[profile paddock]\nendpoint_url = http://127.0.0.1:4566\n";
  EXPECT_EQ(ChooseProfileName(home_, dir_ + "/s", "http://127.0.0.1:4566", "AKIAOURS"), "paddock");
}

TEST(StateDirProfileNameTest, SafeForIniAndShells) {
  EXPECT_EQ(StateDirProfileName("/srv/team-a/.paddock"), "paddock-team-a");
  EXPECT_EQ(StateDirProfileName("/srv/My State [prod]/"), "paddock-my-state-prod");
  EXPECT_EQ(StateDirProfileName("/var/lib/paddock2"), "paddock-paddock2");
  EXPECT_EQ(StateDirProfileName("/x/]]]"), "paddock-state");
  EXPECT_LE(StateDirProfileName("/x/" + std::string(100, 'a')).size(), 48u);
}

}  // namespace
}  // namespace paddock::cli
