#include "registry/cluster_registry.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "agent/images/skopeo_puller.h"
#include "agent/images/testing/tar_builder.h"
#include "common/subprocess.h"
#include "store/sqlite/sqlite_store.h"
#include "agent/images/schema.h"

namespace paddock::registry {
namespace {

namespace fs = std::filesystem;
using agent::images::ImageStore;
using agent::images::PullContext;
using agent::images::PullSource;
using agent::images::SkopeoPuller;
using agent::images::testing::TarBuilder;
using ::testing::HasSubstr;
using ::testing::StartsWith;

bool Installed(const char* tool) {
  auto r = subprocess::RunCaptured({"sh", "-c", std::string("command -v ") + tool}, std::chrono::seconds(5));
  return r.ok() && r->exit_code == 0;
}

agent::images::Reference Ref(const std::string& text) {
  auto r = agent::images::ParseReference(text);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : agent::images::Reference{};
}

// One HTTP/1.0 GET to the registry: the status line.
std::string Get(const std::string& address, const std::string& path, const std::string& token) {
  const size_t colon = address.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  ::inet_pton(AF_INET, address.substr(0, colon).c_str(), &a.sin_addr);
  subprocess::UniqueFd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return "no connection";
  const std::string request = "GET " + path + " HTTP/1.0\r\nAuthorization: Bearer " + token +
                              "\r\nAccept: application/vnd.oci.image.manifest.v1+json\r\n\r\n";
  if (::write(sock.get(), request.data(), request.size()) != static_cast<ssize_t>(request.size())) return "no write";
  char buf[512];
  const ssize_t n = ::read(sock.get(), buf, sizeof buf);
  std::string head(buf, n > 0 ? static_cast<size_t>(n) : 0);
  return head.substr(0, head.find("\r\n"));
}

// A server's store with two images, a registry over it, and an agent's empty store.
class ClusterRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Installed("docker-registry") || !Installed("skopeo")) GTEST_SKIP() << "needs docker-registry and skopeo";
    char tmpl[] = "/tmp/paddock-registry-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = fs::canonical(tmpl).string();
    for (const char* side : {"server", "agent"}) {
      auto s = store::SqliteStore::Open(
          {.path = root_ + "/" + side + ".db", .durable = false, .schemas = {agent::images::kSchema}});
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      stores_.push_back(std::move(*s));
    }
    server_ = std::make_unique<ImageStore>(*stores_[0], root_ + "/server-images");
    agent_ = std::make_unique<ImageStore>(*stores_[1], root_ + "/agent-images");
    for (const auto& [name, content] : {std::pair{"app:1", "one"}, std::pair{"other:1", "two"}}) {
      const std::string tar = root_ + "/" + content + ".tar";
      std::ofstream(tar, std::ios::binary) << TarBuilder().File("f", content).Finish();
      ASSERT_TRUE(server_->ImportRootfs(tar, name).ok());
    }
    registry_ = std::make_unique<ClusterRegistry>(RegistryOptions{.dir = root_ + "/registry"});
  }
  void TearDown() override {
    if (root_.empty()) return;
    registry_.reset();
    server_.reset();
    agent_.reset();
    for (auto& s : stores_) s->Close();
    fs::remove_all(root_);
  }

  // skopeo pulls `grant`'s image as the agent would, with `token`.
  Status PullAs(const ImageGrant& grant, const std::string& token, const std::string& archive) {
    SkopeoPuller skopeo;
    PullSource source{Ref(grant.registry + "/" + grant.repository + "@" + grant.digest), token, true,
                      "the cluster's registry"};
    PullContext context;
    return skopeo.PullFrom(Ref("app:1"), source, archive, context);
  }

  std::string root_;
  std::vector<std::unique_ptr<store::Store>> stores_;
  std::unique_ptr<ImageStore> server_, agent_;
  std::unique_ptr<ClusterRegistry> registry_;
};

TEST_F(ClusterRegistryTest, AGrantServesTheServersImageByDigestToItsTokenOnly) {
  auto grant = registry_->Grant(*server_, "app:1", "arn:aws:ecs:us-east-1:123456789012:container-instance/prod/a");
  ASSERT_TRUE(grant.ok()) << grant.status().ToString();
  auto stored = server_->Resolve("app:1");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(grant->digest, stored->manifest_digest.str());
  EXPECT_EQ(grant->repository, "images/" + std::string(stored->manifest_digest.hex()));
  EXPECT_THAT(grant->registry, StartsWith("127.0.0.1:"));
  EXPECT_EQ(registry_->Address(), grant->registry);

  // The agent pulls exactly the server's manifest, and its store names it as the task does.
  const std::string archive = root_ + "/pulled.tar";
  Status pulled = PullAs(*grant, grant->token, archive);
  ASSERT_TRUE(pulled.ok()) << pulled.ToString();
  ASSERT_TRUE(agent_->ImportArchive(archive, {.name = "docker.io/library/app:1"}).ok());
  auto got = agent_->Resolve("app:1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->manifest_digest, stored->manifest_digest);

  // No token, or another image's token: nothing.
  EXPECT_FALSE(PullAs(*grant, "", root_ + "/anonymous.tar").ok());
  auto other = registry_->Grant(*server_, "other:1", "arn:aws:ecs:us-east-1:123456789012:container-instance/prod/b");
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  Status crossed = PullAs(*grant, other->token, root_ + "/crossed.tar");
  EXPECT_FALSE(crossed.ok());
  EXPECT_THAT(crossed.message(), HasSubstr("denied"));
  // A pull token neither pushes nor lists.
  auto push = subprocess::RunCaptured(
      {"skopeo", "copy", "--quiet", "--dest-tls-verify=false", "--dest-registry-token", grant->token,
       "oci-archive:" + archive, "docker://" + grant->registry + "/" + grant->repository + ":evil"},
      std::chrono::seconds(60));
  ASSERT_TRUE(push.ok());
  EXPECT_NE(push->exit_code, 0) << push->output;
  EXPECT_THAT(Get(grant->registry, "/v2/_catalog", grant->token), HasSubstr("401"));
  EXPECT_THAT(Get(grant->registry, "/v2/" + grant->repository + "/manifests/" + grant->digest, grant->token),
              HasSubstr("200"));
}

TEST_F(ClusterRegistryTest, AMissingImageIsNotFoundAndTheProviderNamesNearOnes) {
  EXPECT_EQ(registry_->Grant(*server_, "ap:1", "s").status().code(), StatusCode::kNotFound);
  auto provider = AccessProvider(*registry_, *server_);
  auto missing = provider("docker.io/library/ap:1", "s");
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_FALSE(missing->found);
  EXPECT_THAT(missing->near_images, ::testing::ElementsAre("app:1"));
  auto found = provider("docker.io/library/app:1", "s");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_TRUE(found->found);
  EXPECT_FALSE(found->token.empty());
}

TEST_F(ClusterRegistryTest, AStoppedOrDeadRegistryStartsAgainOnTheNextGrant) {
  auto first = registry_->Grant(*server_, "app:1", "s");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  registry_->Stop();
  EXPECT_EQ(registry_->Address(), "");
  auto again = registry_->Grant(*server_, "app:1", "s");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(PullAs(*again, again->token, root_ + "/a.tar").ok());
  // Killed behind its back: the next grant notices and starts it again.
  std::ifstream pid_in(root_ + "/registry/registry.pid");
  pid_t pid = 0;
  ASSERT_TRUE(pid_in >> pid);
  ::kill(pid, SIGKILL);
  // Dead (a zombie of this process until the registry reaps it) before the next grant looks.
  for (int i = 0; i < 500; ++i) {
    std::ifstream stat(fmt::format("/proc/{}/stat", pid));
    std::string line;
    std::getline(stat, line);
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos || line.substr(paren + 2, 1) == "Z") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto third = registry_->Grant(*server_, "app:1", "s");
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  Status pulled = PullAs(*third, third->token, root_ + "/b.tar");
  EXPECT_TRUE(pulled.ok()) << pulled.ToString();
}

TEST(ClusterRegistryStartTest, AMissingDockerRegistrySaysWhatToInstall) {
  char tmpl[] = "/tmp/paddock-registry-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  auto s = store::SqliteStore::Open({.path = root + "/p.db", .durable = false, .schemas = {agent::images::kSchema}});
  ASSERT_TRUE(s.ok());
  ImageStore images(**s, root + "/images");
  std::ofstream(root + "/l.tar", std::ios::binary) << TarBuilder().File("f", "f").Finish();
  ASSERT_TRUE(images.ImportRootfs(root + "/l.tar", "app:1").ok());
  ClusterRegistry registry(RegistryOptions{.dir = root + "/registry", .binary = root + "/no-such-registry"});
  auto grant = registry.Grant(images, "app:1", "s");
  EXPECT_EQ(grant.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(grant.status().message(), HasSubstr("apt-get install docker-registry"));
  (*s)->Close();
  fs::remove_all(root);
}

}  // namespace
}  // namespace paddock::registry
