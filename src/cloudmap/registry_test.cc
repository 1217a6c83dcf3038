// cloudmap::Registry on a real SQLite store and a fake clock: the operation life cycle, AWS's
// validation, the quotas, account isolation and the DNS read seam.
#include "cloudmap/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"

namespace paddock::cloudmap {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr std::string_view kVpc = "vpc-0123456789abcdef0";

class RegistryTest : public ::testing::Test {
 protected:
  RegistryTest()
      : registry_(*store_, clock_, [this](std::string_view prefix) {
          return fmt::format("{}{:016}", prefix == "op" ? "op-" : std::string(prefix), ++next_id_);
        }) {}

  // Creates an HTTP or private DNS namespace and runs its operation; its id.
  std::string Namespace(std::string name, NamespaceType type = NamespaceType::kHttp, const Scope* scope = nullptr) {
    const Scope& s = scope ? *scope : scope_;
    auto op = registry_.CreateNamespace(
        s, CreateNamespaceRequest{.name = std::move(name), .type = type, .vpc = std::string(kVpc)}, kVpc);
    EXPECT_TRUE(op.ok()) << op.status().ToString();
    EXPECT_TRUE(registry_.RunPending().ok());
    auto got = registry_.GetOperation(s, *op);
    EXPECT_TRUE(got.ok());
    EXPECT_EQ(got->status, OperationStatus::kSuccess);
    return got->targets["NAMESPACE"];
  }

  Service DnsService(const std::string& ns, std::string name, std::vector<DnsRecord> records,
                     std::optional<int> custom = std::nullopt) {
    auto s = registry_.CreateService(
        scope_, CreateServiceRequest{.name = std::move(name), .namespace_id = ns,
                                     .dns = DnsConfig{RoutingPolicy::kMultivalue, std::move(records)},
                                     .custom_health = custom});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : Service{};
  }

  void Register(const std::string& service, std::string id, std::map<std::string, std::string> attrs) {
    auto op = registry_.RegisterInstance(scope_, RegisterRequest{service, std::move(id), std::move(attrs), ""});
    ASSERT_TRUE(op.ok()) << op.status().ToString();
    ASSERT_TRUE(registry_.RunPending().ok());
    EXPECT_EQ(registry_.GetOperation(scope_, *op)->status, OperationStatus::kSuccess);
  }

  testing::TempStore store_;
  testing::FakeClock clock_;
  int next_id_ = 0;
  Registry registry_;
  Scope scope_{AccountId("111111111111"), Region("eu-west-1")};
};

TEST_F(RegistryTest, AnOperationMovesFromSubmittedThroughPendingToSuccess) {
  auto op = registry_.CreateNamespace(scope_, {.name = "web", .type = NamespaceType::kHttp}, kVpc);
  ASSERT_TRUE(op.ok()) << op.status().ToString();
  auto submitted = registry_.GetOperation(scope_, *op);
  ASSERT_TRUE(submitted.ok());
  EXPECT_EQ(submitted->status, OperationStatus::kSubmitted);
  EXPECT_EQ(submitted->type, OperationType::kCreateNamespace);
  const std::string ns = submitted->targets["NAMESPACE"];
  // Not there until the operation runs (as on AWS), but its name is already taken.
  EXPECT_EQ(registry_.GetNamespace(scope_, ns).status().detail(), Error::kNamespaceNotFound);
  EXPECT_EQ(registry_.CreateNamespace(scope_, {.name = "web"}, kVpc).status().detail(), Error::kNamespaceAlreadyExists);

  clock_.Advance(std::chrono::seconds(2));
  ASSERT_TRUE(registry_.RunPending().ok());
  auto done = registry_.GetOperation(scope_, *op);
  EXPECT_EQ(done->status, OperationStatus::kSuccess);
  EXPECT_EQ(done->created, submitted->created);
  EXPECT_EQ(done->updated, submitted->created + std::chrono::seconds(2));
  auto n = registry_.GetNamespace(scope_, ns);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->name, "web");
  EXPECT_EQ(n->arn, "arn:aws:servicediscovery:eu-west-1:111111111111:namespace/" + ns);
  // Nothing left queued.
  ASSERT_TRUE(registry_.RunPending().ok());
  EXPECT_EQ(registry_.GetOperation(scope_, *op)->updated, done->updated);
}

TEST_F(RegistryTest, AQueuedOperationOutlivesItsProcess) {
  auto op = registry_.CreateNamespace(scope_, {.name = "web"}, kVpc);
  ASSERT_TRUE(op.ok());
  // Another Registry on the same store (a restarted node) finds it queued and finishes it.
  Registry restarted(*store_, clock_);
  ASSERT_TRUE(restarted.RunPending().ok());
  EXPECT_EQ(restarted.GetOperation(scope_, *op)->status, OperationStatus::kSuccess);
  EXPECT_TRUE(registry_.GetNamespace(scope_, registry_.GetOperation(scope_, *op)->targets["NAMESPACE"]).ok());
  // Run again (a second worker, or the first one late): nothing is applied twice.
  ASSERT_TRUE(registry_.RunPending().ok());
  EXPECT_EQ(registry_.ListOperations(scope_, {}, 10, std::nullopt)->items.size(), 1u);
}

TEST_F(RegistryTest, OperationsRunInTheOrderTheyWereAccepted) {
  // Ids that sort against the order of acceptance, all at one instant of the clock.
  int down = 1000;
  Registry registry(*store_, clock_, [&](std::string_view prefix) {
    return fmt::format("{}{:016}", prefix == "op" ? "op-" : std::string(prefix), --down);
  });
  auto create = registry.CreateNamespace(scope_, {.name = "order"}, kVpc);
  ASSERT_TRUE(create.ok());
  ASSERT_TRUE(registry.RunPending().ok());
  const std::string ns = registry.GetOperation(scope_, *create)->targets["NAMESPACE"];
  auto s = registry.CreateService(scope_, {.name = "web", .namespace_id = ns});
  ASSERT_TRUE(s.ok());
  ASSERT_NO_FATAL_FAILURE(Register(s->id, "i-1", {}));
  auto again = registry.RegisterInstance(scope_, {s->id, "i-1", {{"v", "2"}}, ""});
  auto gone = registry.DeregisterInstance(scope_, s->id, "i-1");
  ASSERT_TRUE(again.ok() && gone.ok());
  ASSERT_TRUE(registry.RunPending().ok());
  EXPECT_EQ(registry.GetOperation(scope_, *again)->status, OperationStatus::kSuccess);
  EXPECT_EQ(registry.GetOperation(scope_, *gone)->status, OperationStatus::kSuccess);
  EXPECT_EQ(registry.GetInstance(scope_, s->id, "i-1").status().detail(), Error::kInstanceNotFound);
}

TEST_F(RegistryTest, WorkThatNoLongerAppliesFailsTheOperationAndChangesNothing) {
  const std::string ns = Namespace("web");
  auto del = registry_.DeleteNamespace(scope_, ns);
  ASSERT_TRUE(del.ok());
  // A service created after the delete was accepted: the delete fails when it runs.
  ASSERT_TRUE(registry_.CreateService(scope_, {.name = "api", .namespace_id = ns}).ok());
  ASSERT_TRUE(registry_.RunPending().ok());
  auto op = registry_.GetOperation(scope_, *del);
  EXPECT_EQ(op->status, OperationStatus::kFail);
  EXPECT_EQ(op->error_code, "ResourceInUse");
  EXPECT_TRUE(registry_.GetNamespace(scope_, ns).ok());
}

TEST_F(RegistryTest, ARetryWithTheSameCreatorRequestIdAnswersWhatTheFirstMade) {
  auto first = registry_.CreateNamespace(scope_, {.name = "api", .creator_request_id = "req-1"}, kVpc);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(registry_.RunPending().ok());
  // The name is taken by the first request itself: the retry answers its operation, no second one.
  auto again = registry_.CreateNamespace(scope_, {.name = "api", .creator_request_id = "req-1"}, kVpc);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(registry_.ListOperations(scope_, {}, 10, std::nullopt)->items.size(), 1u);
  EXPECT_EQ(registry_.CreateNamespace(scope_, {.name = "api", .creator_request_id = "req-2"}, kVpc).status().detail(),
            Error::kNamespaceAlreadyExists);
  const std::string ns = registry_.GetOperation(scope_, *first)->targets["NAMESPACE"];

  auto svc = registry_.CreateService(scope_, {.name = "web", .namespace_id = ns, .creator_request_id = "req-3"});
  ASSERT_TRUE(svc.ok());
  auto svc_again = registry_.CreateService(scope_, {.name = "web", .namespace_id = ns, .creator_request_id = "req-3"});
  ASSERT_TRUE(svc_again.ok()) << svc_again.status().ToString();
  EXPECT_EQ(svc_again->id, svc->id);
  EXPECT_EQ(registry_.CreateService(scope_, {.name = "web", .namespace_id = ns}).status().detail(),
            Error::kServiceAlreadyExists);

  auto reg = registry_.RegisterInstance(scope_, {svc->id, "i-1", {}, "req-4"});
  auto reg_again = registry_.RegisterInstance(scope_, {svc->id, "i-1", {}, "req-4"});
  ASSERT_TRUE(reg.ok() && reg_again.ok());
  EXPECT_EQ(*reg_again, *reg);
  // The same request id in another account is another request.
  const Scope other{AccountId("222222222222"), Region("eu-west-1")};
  auto theirs = registry_.CreateNamespace(other, {.name = "api", .creator_request_id = "req-1"}, kVpc);
  ASSERT_TRUE(theirs.ok());
  EXPECT_NE(*theirs, *first);
}

TEST_F(RegistryTest, NamespaceRules) {
  EXPECT_EQ(registry_.CreateNamespace(scope_, {.name = "pub.example", .type = NamespaceType::kDnsPublic}, kVpc)
                .status()
                .detail(),
            Error::kInvalidInput);
  EXPECT_EQ(registry_.CreateNamespace(scope_, {.name = "a.internal", .type = NamespaceType::kDnsPrivate,
                                               .vpc = "vpc-ffffffffffffffff0"}, kVpc)
                .status()
                .detail(),
            Error::kInvalidInput);
  EXPECT_EQ(registry_.CreateNamespace(scope_, {.name = "arn:aws:x"}, kVpc).status().detail(), Error::kInvalidInput);
  EXPECT_EQ(registry_.CreateNamespace(scope_, {.name = "has space"}, kVpc).status().detail(), Error::kInvalidInput);
  EXPECT_EQ(
      registry_.CreateNamespace(scope_, {.name = "bad_name-.x", .type = NamespaceType::kDnsPrivate, .vpc = std::string(kVpc)}, kVpc)
          .status()
          .detail(),
      Error::kInvalidInput);
  const std::string ns = Namespace("svc.internal", NamespaceType::kDnsPrivate);
  auto n = registry_.GetNamespace(scope_, ns);
  EXPECT_EQ(n->vpc, kVpc);
  EXPECT_EQ(n->soa_ttl, 15);
  EXPECT_FALSE(n->hosted_zone_id.empty());
  // Update*Namespace of the wrong type.
  EXPECT_EQ(registry_.UpdateNamespace(scope_, {.id = ns, .expected_type = NamespaceType::kHttp}).status().detail(),
            Error::kInvalidInput);
  auto up = registry_.UpdateNamespace(
      scope_, {.id = ns, .expected_type = NamespaceType::kDnsPrivate, .description = "d", .soa_ttl = 60});
  ASSERT_TRUE(up.ok());
  ASSERT_TRUE(registry_.RunPending().ok());
  EXPECT_EQ(registry_.GetNamespace(scope_, ns)->soa_ttl, 60);
  EXPECT_EQ(registry_.GetNamespace(scope_, ns)->description, "d");
}

TEST_F(RegistryTest, NamespaceQuotaIsFifty) {
  for (int i = 0; i < Registry::kMaxNamespaces; ++i)
    ASSERT_TRUE(registry_.CreateNamespace(scope_, {.name = fmt::format("n{}", i)}, kVpc).ok());
  EXPECT_EQ(registry_.CreateNamespace(scope_, {.name = "one-more"}, kVpc).status().detail(),
            Error::kResourceLimitExceeded);
}

TEST_F(RegistryTest, ServiceDnsConfigRules) {
  const std::string dns = Namespace("svc.internal", NamespaceType::kDnsPrivate);
  const std::string http = Namespace("api");
  auto create = [&](std::string ns, std::optional<DnsConfig> d) {
    return registry_.CreateService(scope_, {.name = "x", .namespace_id = std::move(ns), .dns = std::move(d)}).status();
  };
  EXPECT_EQ(create(http, DnsConfig{RoutingPolicy::kMultivalue, {{RecordType::kA, 10}}}).detail(), Error::kInvalidInput);
  EXPECT_EQ(create(dns, DnsConfig{RoutingPolicy::kMultivalue, {{RecordType::kCname, 10}}}).detail(),
            Error::kInvalidInput);
  EXPECT_EQ(create(dns, DnsConfig{RoutingPolicy::kWeighted, {{RecordType::kCname, 10}, {RecordType::kA, 10}}}).detail(),
            Error::kInvalidInput);
  EXPECT_EQ(create(dns, DnsConfig{RoutingPolicy::kMultivalue, {{RecordType::kA, 10}, {RecordType::kA, 20}}}).detail(),
            Error::kInvalidInput);
  EXPECT_EQ(create(dns, DnsConfig{RoutingPolicy::kMultivalue, {}}).detail(), Error::kInvalidInput);
  EXPECT_EQ(create("ns-nope", std::nullopt).detail(), Error::kNamespaceNotFound);
  // ServiceName's pattern: DNS labels (or ".").
  EXPECT_EQ(registry_.CreateService(scope_, {.name = "-bad", .namespace_id = http}).status().detail(),
            Error::kInvalidInput);
  EXPECT_EQ(registry_.CreateService(scope_, {.name = "a b", .namespace_id = http}).status().detail(),
            Error::kInvalidInput);
  EXPECT_TRUE(create(dns, DnsConfig{RoutingPolicy::kWeighted, {{RecordType::kCname, 10}}}).ok());
  EXPECT_EQ(create(dns, DnsConfig{RoutingPolicy::kWeighted, {{RecordType::kCname, 10}}}).detail(),
            Error::kServiceAlreadyExists);
  // An HTTP namespace's service, and a DNS namespace's without DnsConfig, are HTTP (API only).
  auto s = registry_.CreateService(scope_, {.name = "y", .namespace_id = http});
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->http_only);
  EXPECT_EQ(registry_.GetNamespace(scope_, dns)->service_count, 1);
  EXPECT_EQ(registry_.DeleteNamespace(scope_, dns).status().detail(), Error::kResourceInUse);
}

TEST_F(RegistryTest, RegisterValidatesReservedAttributesAndUpdatesInPlace) {
  const std::string ns = Namespace("svc.internal", NamespaceType::kDnsPrivate);
  Service srv = DnsService(ns, "web", {{RecordType::kA, 10}, {RecordType::kSrv, 10}});
  auto reg = [&](std::map<std::string, std::string> attrs) {
    return registry_.RegisterInstance(scope_, {srv.id, "i-1", std::move(attrs), ""}).status();
  };
  EXPECT_EQ(reg({{"AWS_INSTANCE_PORT", "80"}}).detail(), Error::kInvalidInput);                       // no IPv4 (A)
  EXPECT_EQ(reg({{"AWS_INSTANCE_IPV4", "10.0.0.1"}}).detail(), Error::kInvalidInput);                 // no port (SRV)
  EXPECT_EQ(reg({{"AWS_INSTANCE_IPV4", "10.0.0.300"}, {"AWS_INSTANCE_PORT", "80"}}).detail(), Error::kInvalidInput);
  EXPECT_EQ(reg({{"AWS_INSTANCE_IPV4", "10.0.0.1"}, {"AWS_INSTANCE_PORT", "0"}}).detail(), Error::kInvalidInput);
  EXPECT_EQ(reg({{"AWS_INSTANCE_IPV4", "10.0.0.1"}, {"AWS_INSTANCE_PORT", "80"}, {"AWS_INIT_HEALTH_STATUS", "HEALTHY"}})
                .detail(),
            Error::kInvalidInput);  // no custom health check
  EXPECT_EQ(reg({{"AWS_INSTANCE_IPV4", "10.0.0.1"}, {"AWS_INSTANCE_PORT", "80"}, {"AWS_INSTANCE_CNAME", "x"}}).detail(),
            Error::kInvalidInput);
  // A CNAME service's AWS_INSTANCE_CNAME is a domain name (the DNS server answers it as one).
  auto alias = registry_.CreateService(
      scope_, CreateServiceRequest{.name = "alias", .namespace_id = ns,
                                   .dns = DnsConfig{RoutingPolicy::kWeighted, {{RecordType::kCname, 10}}}});
  ASSERT_TRUE(alias.ok()) << alias.status().ToString();
  auto cname = [&](std::string target) {
    return registry_.RegisterInstance(scope_, {alias->id, "i-1", {{"AWS_INSTANCE_CNAME", std::move(target)}}, ""}).status();
  };
  for (const std::string& bad : std::vector<std::string>{"", "a..b", ".example.com", "-a.example.com", "a_b.example.com", "a b.example.com",
                          "ex\\ample.com", std::string(64, 'a') + ".com", std::string(250, 'a') + ".com"})
    EXPECT_EQ(cname(bad).detail(), Error::kInvalidInput) << bad;
  EXPECT_TRUE(cname("www.example.com").ok());
  EXPECT_TRUE(cname("Www.Example-1.com.").ok());
  EXPECT_EQ(registry_.RegisterInstance(scope_, {"srv-nope", "i-1", {}, ""}).status().detail(), Error::kServiceNotFound);
  // The model's InstanceId pattern ^[0-9a-zA-Z_/:.@-]+$ and length (the front checks no patterns).
  EXPECT_EQ(registry_.RegisterInstance(scope_, {srv.id, "bad id", {}, ""}).status().detail(), Error::kInvalidInput);
  EXPECT_EQ(registry_.RegisterInstance(scope_, {srv.id, std::string(65, 'a'), {}, ""}).status().detail(),
            Error::kInvalidInput);

  ASSERT_NO_FATAL_FAILURE(Register(srv.id, "i-1", {{"AWS_INSTANCE_IPV4", "10.0.0.1"}, {"AWS_INSTANCE_PORT", "80"}}));
  ASSERT_NO_FATAL_FAILURE(Register(srv.id, "i-1", {{"AWS_INSTANCE_IPV4", "10.0.0.2"}, {"AWS_INSTANCE_PORT", "81"}}));
  auto i = registry_.GetInstance(scope_, srv.id, "i-1");
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->attributes.at("AWS_INSTANCE_IPV4"), "10.0.0.2");
  EXPECT_EQ(i->health, HealthStatus::kUnknown);
  auto s = registry_.GetService(scope_, srv.id);
  EXPECT_EQ(s->instance_count, 1);
  EXPECT_EQ(s->revision, 2);
  EXPECT_EQ(registry_.DeleteService(scope_, srv.id).detail(), Error::kResourceInUse);

  auto dereg = registry_.DeregisterInstance(scope_, srv.id, "i-1");
  ASSERT_TRUE(dereg.ok());
  ASSERT_TRUE(registry_.RunPending().ok());
  EXPECT_EQ(registry_.GetInstance(scope_, srv.id, "i-1").status().detail(), Error::kInstanceNotFound);
  EXPECT_EQ(registry_.DeregisterInstance(scope_, srv.id, "i-1").status().detail(), Error::kInstanceNotFound);
  EXPECT_TRUE(registry_.DeleteService(scope_, srv.id).ok());
}

TEST_F(RegistryTest, AThousandInstancesPerService) {
  const std::string ns = Namespace("api");
  auto s = registry_.CreateService(scope_, {.name = "web", .namespace_id = ns});
  ASSERT_TRUE(s.ok());
  for (int i = 0; i < Registry::kMaxInstancesPerService; ++i)
    ASSERT_TRUE(registry_.RegisterInstance(scope_, {s->id, fmt::format("i-{}", i), {}, ""}).ok());
  ASSERT_TRUE(registry_.RunPending().ok());
  EXPECT_EQ(registry_.GetService(scope_, s->id)->instance_count, Registry::kMaxInstancesPerService);
  EXPECT_EQ(registry_.RegisterInstance(scope_, {s->id, "one-more", {}, ""}).status().detail(),
            Error::kResourceLimitExceeded);
  // Updating one in place is not a new instance.
  EXPECT_TRUE(registry_.RegisterInstance(scope_, {s->id, "i-7", {{"k", "v"}}, ""}).ok());
}

TEST_F(RegistryTest, DiscoverFiltersByQueryOptionalParametersAndHealth) {
  const std::string ns = Namespace("api");
  auto s = registry_.CreateService(scope_, {.name = "web", .namespace_id = ns, .custom_health = 1});
  ASSERT_TRUE(s.ok());
  ASSERT_NO_FATAL_FAILURE(Register(s->id, "a", {{"stage", "prod"}, {"az", "a"}}));
  ASSERT_NO_FATAL_FAILURE(Register(s->id, "b", {{"stage", "prod"}, {"az", "b"}, {"AWS_INIT_HEALTH_STATUS", "UNHEALTHY"}}));
  ASSERT_NO_FATAL_FAILURE(Register(s->id, "c", {{"stage", "dev"}}));
  auto ids = [&](DiscoverRequest r) {
    r.namespace_name = "api";
    r.service_name = "web";
    std::vector<std::string> out;
    auto d = registry_.Discover(scope_, r);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (d.ok())
      for (const auto& i : d->instances) out.push_back(i.id);
    return out;
  };
  EXPECT_THAT(ids({}), ElementsAre("a", "b", "c"));
  EXPECT_THAT(ids({.query = {{"stage", "prod"}}}), ElementsAre("a", "b"));
  EXPECT_THAT(ids({.query = {{"stage", "prod"}}, .optional = {{"az", "b"}}}), ElementsAre("b"));
  EXPECT_THAT(ids({.query = {{"stage", "prod"}}, .optional = {{"az", "z"}}}), ElementsAre("a", "b"));
  EXPECT_THAT(ids({.health = HealthFilter::kHealthy}), ElementsAre("a", "c"));
  EXPECT_THAT(ids({.health = HealthFilter::kUnhealthy}), ElementsAre("b"));
  EXPECT_THAT(ids({.query = {{"stage", "prod"}}, .health = HealthFilter::kHealthy, .max_results = 1}), ElementsAre("a"));
  ASSERT_TRUE(registry_.SetCustomHealth(scope_, s->id, "a", false).ok());
  ASSERT_TRUE(registry_.SetCustomHealth(scope_, s->id, "c", false).ok());
  EXPECT_THAT(ids({.health = HealthFilter::kHealthy}), IsEmpty());
  EXPECT_THAT(ids({.health = HealthFilter::kHealthyOrElseAll}), ElementsAre("a", "b", "c"));
  const int64_t rev = registry_.Discover(scope_, {.namespace_name = "api", .service_name = "web"})->revision;
  ASSERT_TRUE(registry_.SetCustomHealth(scope_, s->id, "c", true).ok());
  EXPECT_EQ(registry_.Discover(scope_, {.namespace_name = "api", .service_name = "web"})->revision, rev + 1);
  EXPECT_EQ(registry_.Discover(scope_, {.namespace_name = "nope", .service_name = "web"}).status().detail(),
            Error::kNamespaceNotFound);
  EXPECT_EQ(registry_.Discover(scope_, {.namespace_name = "api", .service_name = "nope"}).status().detail(),
            Error::kServiceNotFound);
}

TEST_F(RegistryTest, CustomHealthOnlyForServicesThatHaveIt) {
  const std::string ns = Namespace("api");
  auto s = registry_.CreateService(scope_, {.name = "web", .namespace_id = ns});
  ASSERT_NO_FATAL_FAILURE(Register(s->id, "a", {}));
  EXPECT_EQ(registry_.SetCustomHealth(scope_, s->id, "a", true).detail(), Error::kCustomHealthNotFound);
  EXPECT_EQ(registry_.SetCustomHealth(scope_, s->id, "zz", true).detail(), Error::kInstanceNotFound);
}

TEST_F(RegistryTest, ResolveDnsAnswersHealthyInstancesOfThePrivateNamespaceInThatVpc) {
  const std::string ns = Namespace("svc.internal", NamespaceType::kDnsPrivate);
  Service s = DnsService(ns, "web", {{RecordType::kA, 30}}, 1);
  ASSERT_NO_FATAL_FAILURE(Register(s.id, "a", {{"AWS_INSTANCE_IPV4", "172.31.0.10"}}));
  ASSERT_NO_FATAL_FAILURE(
      Register(s.id, "b", {{"AWS_INSTANCE_IPV4", "172.31.0.11"}, {"AWS_INIT_HEALTH_STATUS", "UNHEALTHY"}}));
  auto answer = registry_.ResolveDns(scope_, kVpc, "svc.internal", "web");
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  ASSERT_EQ(answer->instances.size(), 1u);
  EXPECT_EQ(answer->instances[0].attributes.at("AWS_INSTANCE_IPV4"), "172.31.0.10");
  EXPECT_EQ(answer->service.dns->records, (std::vector<DnsRecord>{{RecordType::kA, 30}}));
  EXPECT_EQ(registry_.ResolveDns(scope_, "vpc-other", "svc.internal", "web").status().detail(),
            Error::kNamespaceNotFound);
  const Scope other{AccountId("222222222222"), Region("eu-west-1")};
  EXPECT_EQ(registry_.ResolveDns(other, kVpc, "svc.internal", "web").status().detail(), Error::kNamespaceNotFound);
}

TEST_F(RegistryTest, EcsRegistersInItsOwnTransactionAndOnlyACommitKeepsIt) {
  const std::string ns = Namespace("svc.internal", NamespaceType::kDnsPrivate);
  Service s = DnsService(ns, "web", {{RecordType::kA, 10}}, 1);
  const std::map<std::string, std::string> attrs{{"AWS_INSTANCE_IPV4", "172.31.0.10"}, {"ECS_SERVICE_NAME", "web"}};
  // A transaction that fails after the registration leaves nothing registered.
  Status aborted = store_->Write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(registry_.RegisterIn(txn, scope_, s.arn, "task1", attrs));
    return Aborted("the task's own change failed");
  });
  EXPECT_EQ(aborted.code(), StatusCode::kAborted);
  EXPECT_EQ(registry_.GetInstance(scope_, s.id, "task1").status().detail(), Error::kInstanceNotFound);
  ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) { return registry_.RegisterIn(txn, scope_, s.arn, "task1", attrs); })
                  .ok());
  auto got = registry_.GetInstance(scope_, s.id, "task1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->attributes, attrs);
  EXPECT_EQ(got->health, HealthStatus::kHealthy) << "a custom-health service's ECS instance starts HEALTHY";
  EXPECT_EQ(registry_.ListOperations(scope_, {}, 100, std::nullopt)->items.size(), 1u)
      << "ECS's registrations record no operation (only the namespace's create is there)";
  // Refusals carry Cloud Map's details; the instance's attributes follow the service's rules.
  Status invalid = store_->Write([&](store::WriteTxn& txn) {
    return registry_.RegisterIn(txn, scope_, s.arn, "task2", {{"ECS_SERVICE_NAME", "web"}});
  });
  EXPECT_EQ(invalid.detail(), Error::kInvalidInput);
  Status gone = store_->Write([&](store::WriteTxn& txn) {
    return registry_.RegisterIn(txn, scope_, Registry::ServiceArn(scope_, "srv-nothere"), "task2", attrs);
  });
  EXPECT_EQ(gone.detail(), Error::kServiceNotFound);
  // Another account's service, named by its ARN with the same id: nothing of this scope's.
  const Scope other{AccountId("222222222222"), scope_.region};
  Status theirs = store_->Write([&](store::WriteTxn& txn) {
    return registry_.RegisterIn(txn, other, s.arn, "task2", attrs);
  });
  EXPECT_EQ(theirs.detail(), Error::kServiceNotFound);
  EXPECT_TRUE(store_->Write([&](store::WriteTxn& txn) { return registry_.DeregisterIn(txn, other, s.arn, "task1"); })
                  .ok());
  EXPECT_TRUE(registry_.GetInstance(scope_, s.id, "task1").ok()) << "another account cannot deregister it";
  // Deregistration: once, then a no-op, as for a service that is gone.
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) { return registry_.DeregisterIn(txn, scope_, s.arn, "task1"); })
                    .ok());
  EXPECT_EQ(registry_.GetInstance(scope_, s.id, "task1").status().detail(), Error::kInstanceNotFound);
  EXPECT_EQ(registry_.GetService(scope_, s.id)->instance_count, 0);
  EXPECT_TRUE(store_->Write([&](store::WriteTxn& txn) {
                      return registry_.DeregisterIn(txn, scope_, Registry::ServiceArn(scope_, "srv-nothere"), "task1");
                    })
                  .ok());
}

TEST_F(RegistryTest, DnsZonesAreTheVpcsPrivateNamespacesWithTheirServices) {
  const std::string ns = Namespace("svc.internal", NamespaceType::kDnsPrivate);
  Namespace("api.example", NamespaceType::kHttp);
  DnsService(ns, "web", {{RecordType::kA, 30}});
  DnsService(ns, "Db", {{RecordType::kA, 30}});
  auto zones = registry_.DnsZones(scope_, kVpc);
  ASSERT_TRUE(zones.ok()) << zones.status().ToString();
  ASSERT_EQ(zones->size(), 1u);
  EXPECT_EQ((*zones)[0].name, "svc.internal");
  EXPECT_THAT((*zones)[0].services, ::testing::UnorderedElementsAre("web", "Db"));
  EXPECT_TRUE(registry_.DnsZones(scope_, "vpc-other")->empty());
  EXPECT_TRUE(registry_.DnsZones(Scope{AccountId("222222222222"), Region("us-east-1")}, kVpc)->empty());
}

TEST_F(RegistryTest, TheGenerationMovesAfterEveryCommittedChangeDnsCouldSee) {
  const std::string ns = Namespace("svc.internal", NamespaceType::kDnsPrivate);  // applied by RunPending
  uint64_t g = registry_.Generation();
  auto moved = [&] {
    const uint64_t now = registry_.Generation();
    const bool m = now > g;
    g = now;
    return m;
  };
  Service s = DnsService(ns, "web", {{RecordType::kA, 30}}, 1);
  EXPECT_TRUE(moved());
  auto op = registry_.RegisterInstance(scope_, RegisterRequest{s.id, "a", {{"AWS_INSTANCE_IPV4", "172.31.0.10"}}, ""});
  ASSERT_TRUE(op.ok());
  EXPECT_FALSE(moved());  // queued only: nothing DNS answers changed
  ASSERT_TRUE(registry_.RunPending().ok());
  EXPECT_TRUE(moved());
  ASSERT_TRUE(registry_.SetCustomHealth(scope_, s.id, "a", false).ok());
  EXPECT_TRUE(moved());
  EXPECT_FALSE(registry_.DeleteService(scope_, s.id).ok());  // it holds an instance: refused, nothing committed
  EXPECT_FALSE(moved());
  registry_.NoteChanged();
  EXPECT_TRUE(moved());
  ASSERT_TRUE(registry_.ReapAccount(scope_.account).ok());
  EXPECT_TRUE(moved());
}

TEST_F(RegistryTest, ServiceArnsInANamespaceByNameOrArn) {
  const std::string ns = Namespace("svc.internal", NamespaceType::kDnsPrivate);
  Service a = DnsService(ns, "a", {{RecordType::kA, 5}});
  Service b = DnsService(ns, "b", {{RecordType::kA, 5}});
  auto by_name = registry_.ServiceArnsIn(scope_, "svc.internal");
  ASSERT_TRUE(by_name.ok());
  ASSERT_TRUE(by_name->has_value());
  EXPECT_THAT(**by_name, ::testing::UnorderedElementsAre(a.arn, b.arn));
  auto by_arn = registry_.ServiceArnsIn(scope_, Registry::NamespaceArn(scope_, ns));
  ASSERT_TRUE(by_arn.ok() && by_arn->has_value());
  EXPECT_EQ((*by_arn)->size(), 2u);
  EXPECT_FALSE(registry_.ServiceArnsIn(scope_, "nope")->has_value());
  const Scope other{AccountId("222222222222"), Region("eu-west-1")};
  EXPECT_FALSE(registry_.ServiceArnsIn(other, "svc.internal")->has_value());
  EXPECT_FALSE(registry_.ServiceArnsIn(other, Registry::NamespaceArn(scope_, ns))->has_value());
}

TEST_F(RegistryTest, AccountsNeverSeeEachOthersResources) {
  const std::string ns = Namespace("svc.internal", NamespaceType::kDnsPrivate);
  Service s = DnsService(ns, "web", {{RecordType::kA, 30}});
  ASSERT_NO_FATAL_FAILURE(Register(s.id, "a", {{"AWS_INSTANCE_IPV4", "172.31.0.10"}}));
  const Scope other{AccountId("222222222222"), Region("eu-west-1")};
  EXPECT_EQ(registry_.GetNamespace(other, ns).status().detail(), Error::kNamespaceNotFound);
  EXPECT_EQ(registry_.GetNamespace(other, Registry::NamespaceArn(scope_, ns)).status().detail(),
            Error::kNamespaceNotFound);
  EXPECT_EQ(registry_.GetService(other, s.id).status().detail(), Error::kServiceNotFound);
  EXPECT_EQ(registry_.GetInstance(other, s.id, "a").status().detail(), Error::kServiceNotFound);
  EXPECT_THAT(registry_.ListNamespaces(other, {}, 100, std::nullopt)->items, IsEmpty());
  EXPECT_THAT(registry_.ListServices(other, {}, 100, std::nullopt)->items, IsEmpty());
  EXPECT_THAT(registry_.ListOperations(other, {}, 100, std::nullopt)->items, IsEmpty());
  EXPECT_EQ(registry_.Discover(other, {.namespace_name = "svc.internal", .service_name = "web"}).status().detail(),
            Error::kNamespaceNotFound);
  EXPECT_EQ(registry_.DeleteService(other, s.id).detail(), Error::kServiceNotFound);
  EXPECT_EQ(registry_.ListTags(other, s.arn).status().detail(), Error::kResourceNotFound);
  // The same name is free in the other account.
  EXPECT_FALSE(Namespace("svc.internal", NamespaceType::kDnsPrivate, &other).empty());

  ASSERT_TRUE(registry_.ReapAccount(scope_.account).ok());
  EXPECT_EQ(registry_.GetNamespace(scope_, ns).status().detail(), Error::kNamespaceNotFound);
  EXPECT_EQ(registry_.ListNamespaces(other, {}, 100, std::nullopt)->items.size(), 1u);
}

TEST_F(RegistryTest, ListsFilterAndPage) {
  Namespace("a-http");
  Namespace("b.internal", NamespaceType::kDnsPrivate);
  Namespace("c-http");
  auto page = registry_.ListNamespaces(scope_, {{"TYPE", "EQ", {"HTTP"}}}, 1, std::nullopt);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->items.size(), 1u);
  EXPECT_EQ(page->items[0].name, "a-http");
  ASSERT_TRUE(page->next);
  auto rest = registry_.ListNamespaces(scope_, {{"TYPE", "EQ", {"HTTP"}}}, 1, page->next);
  ASSERT_EQ(rest->items.size(), 1u);
  EXPECT_EQ(rest->items[0].name, "c-http");
  EXPECT_FALSE(rest->next);
  EXPECT_EQ(registry_.ListNamespaces(scope_, {{"NAME", "BEGINS_WITH", {"b."}}}, 10, std::nullopt)->items.size(), 1u);
  EXPECT_EQ(registry_.ListNamespaces(scope_, {{"NAME", "BETWEEN", {"a", "b"}}}, 10, std::nullopt).status().detail(),
            Error::kInvalidInput);
  EXPECT_EQ(registry_.ListOperations(scope_, {{"STATUS", "IN", {"SUCCESS", "FAIL"}}}, 10, std::nullopt)->items.size(),
            3u);
  EXPECT_THAT(registry_.ListOperations(scope_, {{"STATUS", "EQ", {"PENDING"}}}, 10, std::nullopt)->items, IsEmpty());
  EXPECT_EQ(registry_.ListOperations(scope_, {{"UPDATE_DATE", "BETWEEN", {"0", "1780000001"}}}, 10, std::nullopt)
                ->items.size(),
            3u);
}

TEST_F(RegistryTest, TagsOnNamespacesAndServices) {
  const std::string ns = Namespace("api");
  const std::string arn = Registry::NamespaceArn(scope_, ns);
  ASSERT_TRUE(registry_.TagResource(scope_, arn, {{"team", "a"}, {"env", "prod"}}).ok());
  EXPECT_THAT(*registry_.ListTags(scope_, arn), ElementsAre(Tag{"env", "prod"}, Tag{"team", "a"}));
  ASSERT_TRUE(registry_.UntagResource(scope_, arn, {"env"}).ok());
  EXPECT_THAT(*registry_.ListTags(scope_, arn), ElementsAre(Tag{"team", "a"}));
  std::vector<Tag> many;
  for (size_t i = 0; i < Registry::kMaxTags; ++i) many.push_back({fmt::format("k{}", i), "v"});
  EXPECT_EQ(registry_.TagResource(scope_, arn, many).detail(), Error::kTooManyTags);
  EXPECT_THAT(*registry_.ListTags(scope_, arn), ElementsAre(Tag{"team", "a"}));  // nothing written
  EXPECT_EQ(registry_.TagResource(scope_, Registry::ServiceArn(scope_, "srv-nope"), {{"a", "b"}}).detail(),
            Error::kResourceNotFound);
}


// One account's flood of asynchronous calls waits on its own quota: past kMaxQueuedOperations
// queued, RequestLimitExceeded (nothing written), while another account still submits; once the
// worker runs them, the account submits again.
TEST_F(RegistryTest, AScopeMayQueueOnlySoManyOperations) {
  const std::string ns = Namespace("flood");
  auto svc = registry_.CreateService(scope_, CreateServiceRequest{.name = "web", .namespace_id = ns});
  ASSERT_TRUE(svc.ok()) << svc.status().ToString();
  for (int64_t i = 0; i < Registry::kMaxQueuedOperations; ++i)
    ASSERT_TRUE(registry_.RegisterInstance(scope_, RegisterRequest{svc->id, "i-1", {{"AWS_INSTANCE_IPV4", "10.0.0.1"}}, ""}).ok()) << i;
  auto refused = registry_.RegisterInstance(scope_, RegisterRequest{svc->id, "i-1", {{"AWS_INSTANCE_IPV4", "10.0.0.1"}}, ""});
  EXPECT_EQ(refused.status().detail(), Error::kRequestLimitExceeded) << refused.status().ToString();
  // Another account is not held back by this one's queue.
  const Scope other{AccountId("222222222222"), scope_.region};
  EXPECT_TRUE(registry_.CreateNamespace(other, {.name = "theirs", .type = NamespaceType::kHttp}, kVpc).ok());
  ASSERT_TRUE(registry_.RunPending().ok());
  EXPECT_TRUE(registry_.RegisterInstance(scope_, RegisterRequest{svc->id, "i-1", {{"AWS_INSTANCE_IPV4", "10.0.0.2"}}, ""}).ok());
}

TEST_F(RegistryTest, FinishedOperationsAreKeptUpToTheCapPerScopeAndThirtyDays) {
  // The cap made small here (the rule is the same at kMaxFinishedOperations, 1,000).
  constexpr int64_t kMax = 20;
  registry_.SetMaxFinishedOperationsForTesting(kMax);
  const std::string ns = Namespace("kept");  // operation 1 (op-…01), finished now
  auto svc = registry_.CreateService(scope_, CreateServiceRequest{.name = "web", .namespace_id = ns});
  ASSERT_TRUE(svc.ok()) << svc.status().ToString();
  auto count = [&] {
    size_t n = 0;
    std::optional<std::string> after;
    do {
      auto page = registry_.ListOperations(scope_, {}, 100, after);
      EXPECT_TRUE(page.ok());
      if (!page.ok()) return n;
      n += page->items.size();
      after = page->next;
    } while (after);
    return n;
  };
  // A finished operation keeps only what GetOperation shows; a day later it is still there.
  clock_.Advance(std::chrono::hours(24));
  std::vector<std::string> ops;
  for (int64_t i = 0; i < kMax; ++i) {
    auto op = registry_.RegisterInstance(scope_, RegisterRequest{svc->id, "i-1", {{"AWS_INSTANCE_IPV4", "10.0.0.1"}}, ""});
    ASSERT_TRUE(op.ok()) << op.status().ToString();
    ops.push_back(*op);
    if (i % 5 == 4) {
      ASSERT_TRUE(registry_.RunPending().ok());
    }
  }
  // kMax + 1 finished: the oldest (the namespace's create) went when the last one finished.
  EXPECT_EQ(count(), static_cast<size_t>(kMax));
  EXPECT_EQ(registry_.GetOperation(scope_, "op-0000000000000001").status().detail(), Error::kOperationNotFound);
  EXPECT_EQ(registry_.GetOperation(scope_, ops.front())->status, OperationStatus::kSuccess);
  // Thirty days after they finished, the next finish takes the expired ones with it, a few at a time.
  clock_.Advance(Registry::kFinishedRetention + std::chrono::hours(1));
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(registry_.DeregisterInstance(scope_, svc->id, "i-1").ok() ||
                registry_.RegisterInstance(scope_, RegisterRequest{svc->id, "i-1", {{"AWS_INSTANCE_IPV4", "10.0.0.1"}}, ""}).ok());
    ASSERT_TRUE(registry_.RunPending().ok());
  }
  EXPECT_EQ(count(), static_cast<size_t>(kMax) - 6 + 2);
  EXPECT_EQ(registry_.GetOperation(scope_, ops.front()).status().detail(), Error::kOperationNotFound);
  // Another account's operations are not counted against this one's.
  const Scope other{AccountId("222222222222"), scope_.region};
  auto theirs = registry_.CreateNamespace(other, {.name = "theirs", .type = NamespaceType::kHttp}, kVpc);
  ASSERT_TRUE(theirs.ok());
  ASSERT_TRUE(registry_.RunPending().ok());
  EXPECT_EQ(registry_.GetOperation(other, *theirs)->status, OperationStatus::kSuccess);
  EXPECT_EQ(count(), static_cast<size_t>(kMax) - 6 + 2);
}

TEST_F(RegistryTest, ARequestsRetryRecordGoesWithWhatItMade) {
  auto requests = [&] {
    size_t n = 0;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(auto rows, txn.Scan("cloudmap_requests", store::Range{}, 100));
      n = rows.size();
      return OkStatus();
    }).ok());
    return n;
  };
  const std::string ns = Namespace("kept");
  auto svc = registry_.CreateService(scope_, {.name = "web", .namespace_id = ns, .creator_request_id = "svc-req"});
  ASSERT_TRUE(svc.ok()) << svc.status().ToString();
  auto first = registry_.RegisterInstance(scope_, RegisterRequest{svc->id, "i-1", {{"AWS_INSTANCE_IPV4", "10.0.0.1"}}, "reg-req"});
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(registry_.RunPending().ok());
  EXPECT_EQ(requests(), 2u);
  EXPECT_EQ(*registry_.RegisterInstance(scope_, RegisterRequest{svc->id, "i-1", {{"AWS_INSTANCE_IPV4", "10.0.0.1"}}, "reg-req"}),
            *first) << "a retry answers the operation it made";
  // Past its retention the operation goes (with the next finish), and its request with it: the
  // same CreatorRequestId is then a new request.
  clock_.Advance(Registry::kFinishedRetention + std::chrono::hours(1));
  ASSERT_TRUE(registry_.DeregisterInstance(scope_, svc->id, "i-1").ok());
  ASSERT_TRUE(registry_.RunPending().ok());
  EXPECT_EQ(registry_.GetOperation(scope_, *first).status().detail(), Error::kOperationNotFound);
  EXPECT_EQ(requests(), 1u);
  auto again = registry_.RegisterInstance(scope_, RegisterRequest{svc->id, "i-1", {{"AWS_INSTANCE_IPV4", "10.0.0.1"}}, "reg-req"});
  ASSERT_TRUE(again.ok());
  EXPECT_NE(*again, *first);
  ASSERT_TRUE(registry_.RunPending().ok());
  ASSERT_TRUE(registry_.DeregisterInstance(scope_, svc->id, "i-1").ok());
  ASSERT_TRUE(registry_.RunPending().ok());
  // A deleted service's create request goes with it.
  EXPECT_EQ(requests(), 2u);
  ASSERT_TRUE(registry_.DeleteService(scope_, svc->id).ok());
  EXPECT_EQ(requests(), 1u);
}

}  // namespace
}  // namespace paddock::cloudmap
