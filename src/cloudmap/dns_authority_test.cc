// cloudmap::DnsAuthority over a real Registry on a real SQLite store: what a VPC's DNS server
// answers for Cloud Map names, that another account's VPC (or an unknown listener) is never
// answered from this account's namespaces, and that answers come from memory until the Registry's
// change generation moves (and from no store that is down).
#include "cloudmap/dns_authority.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"

namespace paddock::cloudmap {
namespace {

using ::testing::UnorderedElementsAre;

constexpr std::string_view kVpc = "vpc-0123456789abcdef0";
constexpr uint16_t kA = 1, kAaaa = 28, kSrv = 33;

// The registry's store: the test's, whose reads fail while `down` (a store that is unreachable).
class DownableStore final : public store::Store {
 public:
  explicit DownableStore(store::Store& inner) : inner_(inner) {}
  Status Read(const std::function<Status(store::ReadTxn&)>& fn) override {
    if (down) return Unavailable("store unreachable");
    return inner_.Read(fn);
  }
  Status Write(const std::function<Status(store::WriteTxn&)>& fn) override { return inner_.Write(fn); }
  void Close() override {}
  bool down = false;

 private:
  store::Store& inner_;
};

std::string AddressOf(const dns::Record& r) {
  const auto& a = std::get<dns::A>(r.data).address;
  return fmt::format("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
}

class DnsAuthorityTest : public ::testing::Test {
 protected:
  DnsAuthorityTest()
      : registry_(downable_, clock_, [this](std::string_view prefix) {
          return fmt::format("{}{:016}", prefix == "op" ? "op-" : std::string(prefix), ++next_id_);
        }),
        authority_(registry_, [this](std::string_view listener) -> std::optional<VpcRef> {
          if (listener == "mine") return VpcRef{scope_, std::string(kVpc)};
          if (listener == "theirs") return VpcRef{other_, std::string(kVpc)};  // the same VPC id, another account
          return std::nullopt;
        }) {}

  void SetUp() override {
    auto op = registry_.CreateNamespace(
        scope_, CreateNamespaceRequest{.name = "internal", .type = NamespaceType::kDnsPrivate, .vpc = std::string(kVpc)},
        kVpc);
    ASSERT_TRUE(op.ok()) << op.status().ToString();
    ASSERT_TRUE(registry_.RunPending().ok());
    ns_ = registry_.GetOperation(scope_, *op)->targets["NAMESPACE"];
  }

  std::string Service(std::string name, std::vector<DnsRecord> records, std::optional<int> custom = std::nullopt,
                      RoutingPolicy routing = RoutingPolicy::kMultivalue) {
    auto s = registry_.CreateService(scope_, CreateServiceRequest{.name = std::move(name), .namespace_id = ns_,
                                                                  .dns = DnsConfig{routing, std::move(records)},
                                                                  .custom_health = custom});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? s->id : std::string();
  }

  void Register(const std::string& service, std::string id, std::map<std::string, std::string> attrs) {
    auto op = registry_.RegisterInstance(scope_, RegisterRequest{service, std::move(id), std::move(attrs), ""});
    ASSERT_TRUE(op.ok()) << op.status().ToString();
    ASSERT_TRUE(registry_.RunPending().ok());
  }

  dns::Answer Ask(std::string_view name, uint16_t type, std::string_view listener = "mine") {
    return authority_.Lookup(dns::QuerySource{.listener = listener, .address = "172.31.0.9", .port = 5353, .tcp = false},
                             name, type);
  }

  std::vector<std::string> Addresses(const dns::Answer& a) {
    std::vector<std::string> out;
    for (const dns::Record& r : a.records) out.push_back(AddressOf(r));
    return out;
  }

  testing::TempStore store_;
  DownableStore downable_{*store_};
  testing::FakeClock clock_;
  int next_id_ = 0;
  Registry registry_;
  Scope scope_{AccountId("111111111111"), Region("us-east-1")};
  Scope other_{AccountId("222222222222"), Region("us-east-1")};
  DnsAuthority authority_;
  std::string ns_;
};

TEST_F(DnsAuthorityTest, AServiceAnswersItsInstancesAddressesWithItsTtl) {
  const std::string web = Service("web", {{RecordType::kA, 10}});
  for (int i = 1; i <= 3; ++i) Register(web, fmt::format("task{}", i), {{"AWS_INSTANCE_IPV4", fmt::format("172.31.0.{}", 10 + i)}});
  dns::Answer a = Ask("web.internal", kA);
  ASSERT_EQ(a.kind, dns::Answer::Kind::kRecords);
  EXPECT_EQ(a.ttl, 10u);
  EXPECT_THAT(Addresses(a), UnorderedElementsAre("172.31.0.11", "172.31.0.12", "172.31.0.13"));
  // No AAAA record in its DnsConfig: the name exists, with no data of that type.
  EXPECT_EQ(Ask("web.internal", kAaaa).kind, dns::Answer::Kind::kNoData);
  // Deregistered: gone from the next answer.
  auto op = registry_.DeregisterInstance(scope_, web, "task2");
  ASSERT_TRUE(op.ok()) << op.status().ToString();
  ASSERT_TRUE(registry_.RunPending().ok());
  EXPECT_THAT(Addresses(Ask("web.internal", kA)), UnorderedElementsAre("172.31.0.11", "172.31.0.13"));
}

TEST_F(DnsAuthorityTest, NamesUnderTheNamespaceAreOursAndEveryOtherNameIsForwarded) {
  Service("empty", {{RecordType::kA, 60}});
  EXPECT_EQ(Ask("nothing.internal", kA).kind, dns::Answer::Kind::kNxDomain);
  EXPECT_EQ(Ask("a.b.c.internal", kA).kind, dns::Answer::Kind::kNxDomain);
  EXPECT_EQ(Ask("internal", kA).kind, dns::Answer::Kind::kNoData);        // the namespace's own name
  EXPECT_EQ(Ask("empty.internal", kA).kind, dns::Answer::Kind::kNoData);  // a service without instances
  EXPECT_EQ(Ask("example.com", kA).kind, dns::Answer::Kind::kForward);
  EXPECT_EQ(Ask("com", kA).kind, dns::Answer::Kind::kForward);
}

TEST_F(DnsAuthorityTest, AnotherAccountsVpcAndUnknownListenersAreNeverAnsweredFromThisAccount) {
  const std::string web = Service("web", {{RecordType::kA, 10}});
  Register(web, "task1", {{"AWS_INSTANCE_IPV4", "172.31.0.11"}});
  ASSERT_EQ(Ask("web.internal", kA).kind, dns::Answer::Kind::kRecords);
  // The same VPC id in another account, and a listener nobody knows: not this account's names.
  EXPECT_EQ(Ask("web.internal", kA, "theirs").kind, dns::Answer::Kind::kForward);
  EXPECT_EQ(Ask("web.internal", kA, "nobody").kind, dns::Answer::Kind::kForward);
}

TEST_F(DnsAuthorityTest, SrvAnswersPortsAndTargetsAndEachTargetHasItsAddress) {
  const std::string api = Service("api", {{RecordType::kSrv, 30}, {RecordType::kA, 20}});
  Register(api, "task1", {{"AWS_INSTANCE_IPV4", "172.31.0.21"}, {"AWS_INSTANCE_PORT", "8080"}});
  Register(api, "task2", {{"AWS_INSTANCE_IPV4", "172.31.0.22"}, {"AWS_INSTANCE_PORT", "9090"}});
  dns::Answer srv = Ask("api.internal", kSrv);
  ASSERT_EQ(srv.kind, dns::Answer::Kind::kRecords);
  EXPECT_EQ(srv.ttl, 30u);
  std::vector<std::string> targets;
  for (const dns::Record& r : srv.records) {
    const auto& s = std::get<dns::Srv>(r.data);
    targets.push_back(fmt::format("{} {}", s.port, s.target));
  }
  EXPECT_THAT(targets, UnorderedElementsAre("8080 task1.api.internal", "9090 task2.api.internal"));
  EXPECT_EQ(srv.additional.size(), 2u);  // the targets' A records
  dns::Answer target = Ask("task2.api.internal", kA);
  ASSERT_EQ(target.kind, dns::Answer::Kind::kRecords);
  EXPECT_EQ(target.ttl, 20u);
  ASSERT_EQ(target.records.size(), 1u);
  EXPECT_EQ(AddressOf(target.records[0]), "172.31.0.22");
  EXPECT_EQ(Ask("task9.api.internal", kA).kind, dns::Answer::Kind::kNxDomain);
}

TEST_F(DnsAuthorityTest, AnUnhealthyInstanceIsLeftOutAndWeightedRoutingAnswersOne) {
  const std::string web = Service("web", {{RecordType::kA, 10}}, /*custom=*/1);
  Register(web, "task1", {{"AWS_INSTANCE_IPV4", "172.31.0.11"}});
  Register(web, "task2", {{"AWS_INSTANCE_IPV4", "172.31.0.12"}});
  ASSERT_TRUE(registry_.SetCustomHealth(scope_, web, "task2", false).ok());
  EXPECT_THAT(Addresses(Ask("web.internal", kA)), UnorderedElementsAre("172.31.0.11"));

  const std::string one = Service("one", {{RecordType::kA, 10}}, std::nullopt, RoutingPolicy::kWeighted);
  Register(one, "a", {{"AWS_INSTANCE_IPV4", "172.31.0.31"}});
  Register(one, "b", {{"AWS_INSTANCE_IPV4", "172.31.0.32"}});
  EXPECT_EQ(Ask("one.internal", kA).records.size(), 1u);
}

TEST_F(DnsAuthorityTest, AtMostEightAnswersAndOnlyTheirTargetsAddressesAndNamesIgnoreCase) {
  const std::string api = Service("api", {{RecordType::kSrv, 30}, {RecordType::kA, 20}});
  for (int i = 1; i <= 12; ++i)
    Register(api, fmt::format("Task{}", i),
             {{"AWS_INSTANCE_IPV4", fmt::format("172.31.1.{}", i)}, {"AWS_INSTANCE_PORT", "80"}});
  dns::Answer a = Ask("api.internal", kA);
  EXPECT_EQ(a.records.size(), DnsAuthority::kMaxAnswers);
  dns::Answer srv = Ask("api.internal", kSrv);
  ASSERT_EQ(srv.records.size(), DnsAuthority::kMaxAnswers);
  ASSERT_EQ(srv.additional.size(), DnsAuthority::kMaxAnswers);  // the eight targets', no more
  for (size_t k = 0; k < srv.records.size(); ++k)
    EXPECT_EQ(srv.additional[k].name, std::get<dns::Srv>(srv.records[k].data).target);
  // DNS names are case-insensitive: the server asks in lowercase, whatever the instance id's case.
  dns::Answer target = Ask("task7.api.internal", kA);
  ASSERT_EQ(target.kind, dns::Answer::Kind::kRecords);
  EXPECT_EQ(AddressOf(target.records[0]), "172.31.1.7");
}

TEST_F(DnsAuthorityTest, NamespacesAndServicesNamedWithCapitalsAnswerLowercaseQuestions) {
  auto op = registry_.CreateNamespace(
      scope_, CreateNamespaceRequest{.name = "Corp.Internal", .type = NamespaceType::kDnsPrivate, .vpc = std::string(kVpc)},
      kVpc);
  ASSERT_TRUE(op.ok()) << op.status().ToString();
  ASSERT_TRUE(registry_.RunPending().ok());
  const std::string corp = registry_.GetOperation(scope_, *op)->targets["NAMESPACE"];
  auto web = registry_.CreateService(scope_, CreateServiceRequest{.name = "Web", .namespace_id = corp,
                                                                  .dns = DnsConfig{RoutingPolicy::kMultivalue, {{RecordType::kA, 5}}}});
  ASSERT_TRUE(web.ok()) << web.status().ToString();
  Register(web->id, "t1", {{"AWS_INSTANCE_IPV4", "172.31.2.1"}});
  dns::Answer a = Ask("web.corp.internal", kA);  // the server lowercases every question
  ASSERT_EQ(a.kind, dns::Answer::Kind::kRecords);
  EXPECT_THAT(Addresses(a), UnorderedElementsAre("172.31.2.1"));
  EXPECT_EQ(Ask("other.corp.internal", kA).kind, dns::Answer::Kind::kNxDomain);  // ours, not forwarded
}

TEST_F(DnsAuthorityTest, AnswersComeFromMemoryUntilTheRegistryChanges) {
  const std::string web = Service("web", {{RecordType::kA, 10}});
  for (int i = 1; i <= 3; ++i) Register(web, fmt::format("task{}", i), {{"AWS_INSTANCE_IPV4", fmt::format("172.31.0.{}", 10 + i)}});
  ASSERT_EQ(Ask("web.internal", kA).records.size(), 3u);
  const uint64_t reads = authority_.store_reads();
  for (int round = 0; round < 100; ++round) {
    EXPECT_EQ(Ask("web.internal", kA).records.size(), 3u);
    EXPECT_EQ(Ask("task2.web.internal", kA).kind, dns::Answer::Kind::kRecords);
    EXPECT_EQ(Ask("web.internal", kAaaa).kind, dns::Answer::Kind::kNoData);
    EXPECT_EQ(Ask("internal", kA).kind, dns::Answer::Kind::kNoData);
    EXPECT_EQ(Ask("nothing.internal", kA).kind, dns::Answer::Kind::kNxDomain);
    EXPECT_EQ(Ask("example.com", kA).kind, dns::Answer::Kind::kForward);
  }
  EXPECT_EQ(authority_.store_reads(), reads);  // not one store read more
  // A change through the Registry's API: the next query after RunPending sees it.
  auto op = registry_.DeregisterInstance(scope_, web, "task2");
  ASSERT_TRUE(op.ok()) << op.status().ToString();
  EXPECT_EQ(Ask("web.internal", kA).records.size(), 3u);  // queued, not applied: no change yet
  ASSERT_TRUE(registry_.RunPending().ok());
  EXPECT_THAT(Addresses(Ask("web.internal", kA)), UnorderedElementsAre("172.31.0.11", "172.31.0.13"));
  // A custom health status set, a service created (its name now exists) and deleted (gone again).
  const std::string api = Service("api", {{RecordType::kA, 10}}, /*custom=*/1);
  Register(api, "a", {{"AWS_INSTANCE_IPV4", "172.31.0.21"}});
  ASSERT_EQ(Ask("api.internal", kA).kind, dns::Answer::Kind::kRecords);
  ASSERT_TRUE(registry_.SetCustomHealth(scope_, api, "a", false).ok());
  EXPECT_EQ(Ask("api.internal", kA).kind, dns::Answer::Kind::kNoData);
  const std::string db = Service("db", {{RecordType::kA, 10}});
  EXPECT_EQ(Ask("db.internal", kA).kind, dns::Answer::Kind::kNoData);
  ASSERT_TRUE(registry_.DeleteService(scope_, db).ok());
  EXPECT_EQ(Ask("db.internal", kA).kind, dns::Answer::Kind::kNxDomain);
  // The account reaped: its names are no longer this VPC's.
  ASSERT_TRUE(registry_.ReapAccount(scope_.account).ok());
  EXPECT_EQ(Ask("web.internal", kA).kind, dns::Answer::Kind::kForward);
}

TEST_F(DnsAuthorityTest, AChangeCommittedOutsideTheRegistryIsSeenOnceNoteChangedIsCalled) {
  const std::string web = Service("web", {{RecordType::kA, 10}});
  Register(web, "task1", {{"AWS_INSTANCE_IPV4", "172.31.0.11"}});
  ASSERT_THAT(Addresses(Ask("web.internal", kA)), UnorderedElementsAre("172.31.0.11"));
  // Another writer of the same records (as ECS's task transactions will be): its commits do not
  // move this Registry's generation, so what is kept is still answered...
  Registry elsewhere(*store_, clock_);
  auto op = elsewhere.RegisterInstance(scope_, RegisterRequest{web, "task2", {{"AWS_INSTANCE_IPV4", "172.31.0.12"}}, ""});
  ASSERT_TRUE(op.ok()) << op.status().ToString();
  ASSERT_TRUE(elsewhere.RunPending().ok());
  EXPECT_THAT(Addresses(Ask("web.internal", kA)), UnorderedElementsAre("172.31.0.11"));
  // ...until the writer says so, after its commit.
  registry_.NoteChanged();
  EXPECT_THAT(Addresses(Ask("web.internal", kA)), UnorderedElementsAre("172.31.0.11", "172.31.0.12"));
}

TEST_F(DnsAuthorityTest, QueriesOnSeveralThreadsWhileTasksComeAndGoSeeOnlyWholeAnswers) {
  // The servers' I/O threads ask while ECS registers and deregisters in its own transactions and
  // publishes after each commit (the node's shape; scripts/test runs this under TSan).
  const std::string web = Service("web", {{RecordType::kA, 10}});
  Register(web, "task1", {{"AWS_INSTANCE_IPV4", "172.31.0.11"}});
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0}, answered{0};
  std::vector<std::thread> askers;
  for (int t = 0; t < 3; ++t)
    askers.emplace_back([&, t] {
      while (!stop.load()) {
        std::vector<std::string> got = Addresses(Ask(t == 2 ? "task1.web.internal" : "web.internal", kA));
        std::sort(got.begin(), got.end());
        if (got != std::vector<std::string>{"172.31.0.11"} &&
            (t == 2 || got != std::vector<std::string>{"172.31.0.11", "172.31.0.12"}))
          ++wrong;
        if (Ask(fmt::format("random{}.internal", answered.load()), kA).kind != dns::Answer::Kind::kNxDomain) ++wrong;
        ++answered;
      }
    });
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) {
      return i % 2 == 0 ? registry_.RegisterIn(txn, scope_, web, "task2", {{"AWS_INSTANCE_IPV4", "172.31.0.12"}})
                        : registry_.DeregisterIn(txn, scope_, web, "task2");
    }).ok());
    registry_.NoteChanged();
  }
  stop = true;
  for (std::thread& t : askers) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(answered.load(), 0);
  // The last change (a deregistration) is what the next query answers.
  EXPECT_THAT(Addresses(Ask("web.internal", kA)), UnorderedElementsAre("172.31.0.11"));
}

TEST_F(DnsAuthorityTest, AStoreFailureAnswersServFailAndIsNotKept) {
  const std::string web = Service("web", {{RecordType::kA, 10}});
  Register(web, "task1", {{"AWS_INSTANCE_IPV4", "172.31.0.11"}});
  downable_.down = true;
  // Nothing kept yet: whether a name is this VPC's is not known, so nothing is forwarded.
  EXPECT_EQ(Ask("web.internal", kA).kind, dns::Answer::Kind::kServFail);
  EXPECT_EQ(Ask("example.com", kA).kind, dns::Answer::Kind::kServFail);
  downable_.down = false;
  EXPECT_THAT(Addresses(Ask("web.internal", kA)), UnorderedElementsAre("172.31.0.11"));
  // Kept and current: answered from memory while the store is down.
  downable_.down = true;
  EXPECT_THAT(Addresses(Ask("web.internal", kA)), UnorderedElementsAre("172.31.0.11"));
  EXPECT_EQ(Ask("example.com", kA).kind, dns::Answer::Kind::kForward);
  // Stale (Cloud Map changed) and the store down: SERVFAIL, never an old answer passed off as new.
  registry_.NoteChanged();
  EXPECT_EQ(Ask("web.internal", kA).kind, dns::Answer::Kind::kServFail);
  downable_.down = false;
  EXPECT_EQ(Ask("web.internal", kA).kind, dns::Answer::Kind::kRecords);
}

TEST_F(DnsAuthorityTest, RandomNamesAddNothingToWhatIsKept) {
  const std::string web = Service("web", {{RecordType::kA, 10}});
  Register(web, "task1", {{"AWS_INSTANCE_IPV4", "172.31.0.11"}});
  ASSERT_EQ(Ask("web.internal", kA).kind, dns::Answer::Kind::kRecords);
  const size_t kept = authority_.cached();
  const uint64_t reads = authority_.store_reads();
  for (int i = 0; i < 5000; ++i) {
    EXPECT_EQ(Ask(fmt::format("r{}.internal", i), kA).kind, dns::Answer::Kind::kNxDomain);
    EXPECT_EQ(Ask(fmt::format("r{}.web.internal", i), kA).kind, dns::Answer::Kind::kNxDomain);
    EXPECT_EQ(Ask(fmt::format("r{}.example.com", i), kA).kind, dns::Answer::Kind::kForward);
  }
  EXPECT_EQ(authority_.cached(), kept);  // the VPC's namespaces and web's answer
  EXPECT_EQ(authority_.store_reads(), reads);
}

TEST_F(DnsAuthorityTest, AnotherAccountsNamespaceOfTheSameNameAnswersOnlyItsOwnServices) {
  const std::string web = Service("web", {{RecordType::kA, 10}});
  Register(web, "task1", {{"AWS_INSTANCE_IPV4", "172.31.0.11"}});
  ASSERT_EQ(Ask("web.internal", kA).kind, dns::Answer::Kind::kRecords);
  EXPECT_EQ(Ask("web.internal", kA, "theirs").kind, dns::Answer::Kind::kForward);
  // The other account makes its own "internal" for its VPC (the same id): its name, not ours.
  auto op = registry_.CreateNamespace(
      other_, CreateNamespaceRequest{.name = "internal", .type = NamespaceType::kDnsPrivate, .vpc = std::string(kVpc)},
      kVpc);
  ASSERT_TRUE(op.ok()) << op.status().ToString();
  ASSERT_TRUE(registry_.RunPending().ok());
  EXPECT_EQ(Ask("web.internal", kA, "theirs").kind, dns::Answer::Kind::kNxDomain);
  EXPECT_EQ(Ask("internal", kA, "theirs").kind, dns::Answer::Kind::kNoData);
  EXPECT_THAT(Addresses(Ask("web.internal", kA)), UnorderedElementsAre("172.31.0.11"));
  EXPECT_EQ(Ask("web.internal", kA, "nobody").kind, dns::Answer::Kind::kForward);
}

}  // namespace
}  // namespace paddock::cloudmap
