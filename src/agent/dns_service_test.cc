// agent/dns_service in a network namespace the test makes (root; skipped otherwise): the server
// listens at 169.254.169.253:53 and 172.31.0.2:53 (the service adds them to lo), names its
// listener for the Authority, takes a new Authority at once, and is counted per namespace.
#include "agent/dns_service.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "agent/net/net.h"
#include "common/netns.h"
#include "common/subprocess.h"
#include "dns/message.h"
#include "dns/testing/fake_authority.h"
#include "dns/testing/loopback_client.h"

namespace paddock::agent {
namespace {

using namespace std::chrono_literals;

int RunTool(const std::vector<std::string>& argv) {
  StatusOr<subprocess::RunResult> r = subprocess::RunCaptured(argv, 20s);
  return r.ok() ? r->exit_code : -1;
}

class DnsServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: makes a network namespace";
    name_ = fmt::format("pdk-dnst{}", getpid() % 100000);
    path_ = "/var/run/netns/" + name_;
    RunTool({"ip", "netns", "delete", name_});
    ASSERT_EQ(RunTool({"ip", "netns", "add", name_}), 0);
    made_ = true;
    ASSERT_EQ(RunTool({"ip", "-n", name_, "link", "set", "lo", "up"}), 0);
  }
  void TearDown() override {
    if (made_) RunTool({"ip", "netns", "delete", name_});
  }

  // The reply to an A question for `name` sent over UDP from inside the namespace to address:53
  // ("" when none came).
  std::string Ask(const std::string& address, const std::string& name) { return AskIn(path_, address, name); }
  static std::string AskIn(const std::string& path, const std::string& address, const std::string& name) {
    std::string reply;
    Status s = netns::InNetworkNamespace(path, [&]() -> Status {
      int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(53);
      ::inet_pton(AF_INET, address.c_str(), &a.sin_addr);
      std::string q = dns::testing::QueryWire(name, 1, 7);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::send(fd, q.data(), q.size(), 0) > 0)
        reply = dns::testing::ReceiveUdp(fd, 2s);
      ::close(fd);
      return OkStatus();
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return reply;
  }

  std::string name_, path_;
  bool made_ = false;
};

// The rcode and answer count of a reply.
std::pair<int, size_t> Outcome(const std::string& reply) {
  StatusOr<dns::Message> m = dns::Parse(reply);
  if (!m.ok()) return {-1, 0};
  return {static_cast<int>(m->header.rcode), m->answers.size()};
}

TEST_F(DnsServiceTest, ServesBothAddressesWithTheListenerAndTheAuthoritySet) {
  DnsService service(DnsServiceOptions{});  // no upstreams: a forward is SERVFAIL
  const std::string listener = "123456789012/us-east-1/vpc-0a1b";
  ASSERT_TRUE(service.ServeNetwork(name_, path_, listener).ok());
  // Until an Authority is set, every name is forwarded (and, with no upstream, SERVFAIL).
  EXPECT_EQ(Outcome(Ask("169.254.169.253", "web.internal")), std::make_pair(2, size_t{0}));

  auto names = std::make_shared<dns::testing::FakeAuthority>();
  names->Set("web.internal", 1, dns::Answer::Records(10, {dns::ARecord("172.31.0.7")}));
  service.SetAuthority(names);
  for (const char* address : {"169.254.169.253", "172.31.0.2"})
    EXPECT_EQ(Outcome(Ask(address, "web.internal")), std::make_pair(0, size_t{1})) << address;
  ASSERT_FALSE(names->lookups().empty());
  for (const auto& l : names->lookups()) EXPECT_EQ(l.listener, listener);

  service.SetAuthority(nullptr);
  EXPECT_EQ(Outcome(Ask("172.31.0.2", "web.internal")).first, 2);
}

TEST_F(DnsServiceTest, IsCountedPerNamespaceAndStopsWithTheLastRelease) {
  DnsService service(DnsServiceOptions{});
  ASSERT_TRUE(service.ServeNetwork(name_, path_, "a/b/c").ok());
  ASSERT_TRUE(service.ServeNetwork(name_, path_, "a/b/c").ok());  // a second task of the VPC
  EXPECT_EQ(service.PortOf(name_), 53);
  service.ReleaseNetwork(name_);
  EXPECT_NE(Ask("169.254.169.253", "x.example"), "");
  service.ReleaseNetwork(name_);
  EXPECT_EQ(service.PortOf(name_), 0);
  EXPECT_EQ(Ask("169.254.169.253", "x.example"), "");
  // Served again after that (the VPC's next task).
  ASSERT_TRUE(service.ServeNetwork(name_, path_, "a/b/c").ok());
  EXPECT_NE(Ask("172.31.0.2", "x.example"), "");
}

TEST_F(DnsServiceTest, ForwardsToTheConfiguredUpstreamFromTheHost) {
  // The upstream: a server of the test on the host's loopback, which the namespace cannot reach.
  dns::testing::FakeAuthority upstream_names;
  upstream_names.Set("outside.example", 1, dns::Answer::Records(60, {dns::ARecord("192.0.2.55")}));
  dns::Server upstream(dns::ServerOptions{.addresses = {"127.0.0.1"}, .port = 0}, upstream_names);
  ASSERT_TRUE(upstream.Start().ok());
  DnsServiceOptions options;
  options.upstreams = {fmt::format("127.0.0.1:{}", upstream.port())};
  DnsService service(options);
  ASSERT_TRUE(service.ServeNetwork(name_, path_, "a/b/c").ok());
  EXPECT_EQ(Outcome(Ask("169.254.169.253", "outside.example")), std::make_pair(0, size_t{1}));
  EXPECT_EQ(upstream.stats().answered, 1u);
}

// Two VPCs (two namespaces, the same addresses, as every default VPC has): an Authority that
// answers by listener gives each its own answer for the same name.
class ByListener : public dns::Authority {
 public:
  dns::Answer Lookup(const dns::QuerySource& source, std::string_view name, uint16_t) override {
    if (name != "web.internal") return dns::Answer::Forward();
    if (source.listener == "111111111111/us-east-1/vpc-a") return dns::Answer::Records(10, {dns::ARecord("172.31.0.7")});
    return dns::Answer::NxDomain();
  }
};

TEST_F(DnsServiceTest, EachVpcGetsItsOwnAccountsAnswer) {
  const std::string other = name_ + "b";
  RunTool({"ip", "netns", "delete", other});
  ASSERT_EQ(RunTool({"ip", "netns", "add", other}), 0);
  ASSERT_EQ(RunTool({"ip", "-n", other, "link", "set", "lo", "up"}), 0);
  {
    DnsService service(DnsServiceOptions{});
    service.SetAuthority(std::make_shared<ByListener>());
    ASSERT_TRUE(service.ServeNetwork(name_, path_, "111111111111/us-east-1/vpc-a").ok());
    ASSERT_TRUE(service.ServeNetwork(other, "/var/run/netns/" + other, "222222222222/us-east-1/vpc-b").ok());
    EXPECT_EQ(Outcome(Ask("169.254.169.253", "web.internal")), std::make_pair(0, size_t{1}));
    EXPECT_EQ(Outcome(AskIn("/var/run/netns/" + other, "169.254.169.253", "web.internal")), std::make_pair(3, size_t{0}));
  }
  RunTool({"ip", "netns", "delete", other});
}

// VpcNetworks names the server to a task only when its router's input hook admits port 53: not in
// a namespace without the VPC table (or one an older agent wrote), yes once the policy is applied.
TEST_F(DnsServiceTest, TheRouterAdmitsDnsOnlyWithTheNewRules) {
  net::VpcNetwork vpc{{}, name_, path_, ""};
  ASSERT_TRUE(net::VpcRouterAdmitsDns(vpc).ok());
  EXPECT_FALSE(*net::VpcRouterAdmitsDns(vpc));
  StatusOr<std::string> script = net::CompileVpcPolicy(vpc::VpcPolicy{});
  ASSERT_TRUE(script.ok());
  std::string older = *script;
  older.erase(older.find("\t\tip daddr { 169.254.169.253"));  // what an agent before the DNS server applied
  older += "\t}\n}\n";
  auto apply = [&](const std::string& text) {
    const std::string file = fmt::format("/tmp/pdk-dnst-{}.nft", getpid());
    std::ofstream(file) << text;
    subprocess::RunResult r;
    Status s = netns::InNetworkNamespace(path_, [&]() -> Status {
      ASSIGN_OR_RETURN(r, subprocess::RunCaptured({"nft", "-f", file}, 20s));
      return OkStatus();
    });
    std::remove(file.c_str());
    return s.ok() && r.exit_code == 0;
  };
  ASSERT_TRUE(apply(older));
  EXPECT_FALSE(*net::VpcRouterAdmitsDns(vpc));
  ASSERT_TRUE(apply(*script));
  EXPECT_TRUE(*net::VpcRouterAdmitsDns(vpc));
}

TEST(DnsListenerName, NamesAccountRegionAndVpc) {
  EXPECT_EQ(DnsListenerName(Scope{AccountId("123456789012"), Region("eu-west-1")}, "vpc-0a1b"),
            "123456789012/eu-west-1/vpc-0a1b");
}

TEST(DnsListenerName, IsReadBackAndNothingElseIs) {
  const Scope scope{AccountId("123456789012"), Region("eu-west-1")};
  std::optional<DnsListener> l = ParseDnsListenerName(DnsListenerName(scope, "vpc-0a1b"));
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->scope, scope);
  EXPECT_EQ(l->vpc_id, "vpc-0a1b");
  for (std::string_view bad : {"", "vpc-0a1b", "123456789012/eu-west-1", "123456789012/eu-west-1/", "/eu-west-1/vpc-1",
                               "123456789012//vpc-1", "123456789012/eu-west-1/vpc-1/x"})
    EXPECT_FALSE(ParseDnsListenerName(bad).has_value()) << bad;
}

}  // namespace
}  // namespace paddock::agent
