// Real resolvers against the server: `dig` (bind9-dnsutils) over loopback, and glibc's stub
// resolver (getent, nslookup) inside a network namespace the test makes, where the server listens
// on 169.254.169.253:53 (the VPC resolver's address, on lo, as a task will reach it) and whose
// resolv.conf (`ip netns exec` binds /etc/netns/<name>/resolv.conf over /etc/resolv.conf) names it.
// Skips what the host lacks: dig, or root and iproute2 for the namespace.
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/subprocess.h"
#include "dns/server.h"
#include "dns/testing/fake_authority.h"

namespace paddock::dns {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

subprocess::RunResult RunTool(const std::vector<std::string>& argv) {
  StatusOr<subprocess::RunResult> r = subprocess::RunCaptured(argv, 20s);
  return r.ok() ? *r : subprocess::RunResult{-1, r.status().message()};
}

bool Have(const std::string& tool, const std::string& flag) { return RunTool({tool, flag}).exit_code == 0; }

void SetNames(testing::FakeAuthority& names) {
  names.Set("web.internal", 1, Answer::Records(10, {ARecord("172.31.0.7"), ARecord("172.31.0.8"), ARecord("172.31.0.9")}));
  names.Set("web.internal", 28, Answer::NoData());
  names.Set("nope.internal", 1, Answer::NxDomain());
  names.Set("nope.internal", 28, Answer::NxDomain());
  std::vector<Record> srv;
  for (int i = 0; i < 8; ++i) srv.push_back(SrvRecord(1, 1, 8080, "task-" + std::to_string(i) + "." + std::string(60, 'x') + ".internal"));
  names.Set("_web._tcp.internal", 33, Answer::Records(10, srv));
}

class DigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Have("dig", "-v")) GTEST_SKIP() << "needs dig (bind9-dnsutils; scripts/setup installs it)";
    upstream_names_.Set("example.com", 1, Answer::Records(300, {ARecord("93.184.216.34")}));
    ASSERT_TRUE(upstream_.Start().ok());
    SetNames(names_);
    front_ = std::make_unique<Server>(
        ServerOptions{.port = 0, .upstreams = {"127.0.0.1:" + std::to_string(upstream_.port())}}, names_);
    ASSERT_TRUE(front_->Start().ok());
  }
  subprocess::RunResult Dig(std::vector<std::string> args) {
    std::vector<std::string> argv = {"dig", "@127.0.0.1", "-p", std::to_string(front_->port()), "+time=3", "+tries=1"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunTool(argv);
  }

  testing::FakeAuthority upstream_names_, names_;
  Server upstream_{ServerOptions{.port = 0}, upstream_names_};
  std::unique_ptr<Server> front_;
};

TEST_F(DigTest, AnswersNxDomainAndForwards) {
  subprocess::RunResult r = Dig({"+short", "WEB.internal.", "A"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("172.31.0.7"));
  EXPECT_THAT(r.output, HasSubstr("172.31.0.9"));
  r = Dig({"nope.internal", "A"});
  EXPECT_THAT(r.output, HasSubstr("status: NXDOMAIN"));
  EXPECT_THAT(r.output, HasSubstr("flags: qr aa rd ra"));
  EXPECT_THAT(r.output, HasSubstr("EDNS: version: 0, flags:; udp: 1232"));  // dig sends EDNS0: echoed
  r = Dig({"example.com", "A"});
  EXPECT_THAT(r.output, HasSubstr("status: NOERROR"));
  EXPECT_THAT(r.output, HasSubstr("93.184.216.34"));
  r = Dig({"web.internal", "AAAA"});
  EXPECT_THAT(r.output, HasSubstr("status: NOERROR"));
  EXPECT_THAT(r.output, HasSubstr("ANSWER: 0"));
}

TEST_F(DigTest, RetriesOverTcpOnTruncation) {
  subprocess::RunResult r = Dig({"+noedns", "_web._tcp.internal", "SRV"});
  EXPECT_THAT(r.output, HasSubstr("Truncated, retrying in TCP mode"));
  EXPECT_THAT(r.output, HasSubstr("ANSWER: 8"));
  r = Dig({"+tcp", "+short", "_web._tcp.internal", "SRV"});
  EXPECT_THAT(r.output, HasSubstr("1 1 8080 task-7."));
}

// glibc's resolver: getent sends A and AAAA in parallel over one socket (its default), and
// nslookup is what users type in a task.
class GlibcResolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: makes a network namespace";
    if (!Have("ip", "-V")) GTEST_SKIP() << "needs iproute2's ip";
    name_ = "pd-dnstest-" + std::to_string(getpid());
    etc_ = "/etc/netns/" + name_;
    ASSERT_EQ(RunTool({"ip", "netns", "add", name_}).exit_code, 0);
    made_ = true;
    // As in a task's namespace: an interface with an address (without one, getaddrinfo's
    // AI_ADDRCONFIG, which getent uses, asks nothing at all), and the VPC resolver's two
    // addresses on lo (169.254.169.253 and base + 2).
    for (std::vector<std::string> step : std::vector<std::vector<std::string>>{
             {"link", "add", "v0", "type", "veth", "peer", "name", "v1"},
             {"addr", "add", "172.31.0.9/20", "dev", "v0"},
             {"link", "set", "v0", "up"},
             {"link", "set", "v1", "up"},
             {"addr", "add", "169.254.169.253/32", "dev", "lo"},
             {"addr", "add", "172.31.0.2/32", "dev", "lo"},
             {"link", "set", "lo", "up"}}) {
      step.insert(step.begin(), {"ip", "-n", name_});
      subprocess::RunResult r = RunTool(step);
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    std::filesystem::create_directories(etc_);
    std::ofstream(etc_ + "/resolv.conf") << "nameserver 169.254.169.253\noptions timeout:2 attempts:1\n";
    SetNames(names_);
    server_ = std::make_unique<Server>(
        ServerOptions{.addresses = {"169.254.169.253", "172.31.0.2"}, .port = 53, .netns_path = "/var/run/netns/" + name_}, names_);
    Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started.message();
  }
  void TearDown() override {
    server_.reset();
    if (made_) RunTool({"ip", "netns", "delete", name_});
    std::error_code ignored;
    if (!etc_.empty()) std::filesystem::remove_all(etc_, ignored);
  }
  subprocess::RunResult InNs(std::vector<std::string> argv) {
    argv.insert(argv.begin(), {"ip", "netns", "exec", name_});
    return RunTool(argv);
  }

  std::string name_, etc_;
  bool made_ = false;
  testing::FakeAuthority names_;
  std::unique_ptr<Server> server_;
};

TEST_F(GlibcResolverTest, GetentAndNslookupResolveThroughTheServer) {
  subprocess::RunResult r = InNs({"getent", "ahostsv4", "web.internal"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("172.31.0.7"));
  EXPECT_THAT(r.output, HasSubstr("172.31.0.8"));
  r = InNs({"getent", "ahosts", "web.internal"});  // A and AAAA together
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("172.31.0.9"));
  r = InNs({"getent", "hosts", "nope.internal"});
  EXPECT_EQ(r.exit_code, 2) << r.output;  // not found
  if (Have("nslookup", "-version")) {
    r = InNs({"nslookup", "web.internal"});
    EXPECT_THAT(r.output, HasSubstr("Address: 172.31.0.8"));
    EXPECT_THAT(r.output, Not(HasSubstr("SERVFAIL")));
  }
  if (Have("dig", "-v")) {  // the VPC's base + 2 answers too, from the address it was asked at
    r = InNs({"dig", "@172.31.0.2", "+time=3", "+tries=1", "+short", "web.internal"});
    EXPECT_THAT(r.output, HasSubstr("172.31.0.7"));
  }
  EXPECT_GE(names_.lookups().size(), 4u);
}

}  // namespace
}  // namespace paddock::dns
