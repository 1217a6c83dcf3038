// Cloud Map's API end to end, as a client sees it: the real API front with CloudMapService
// registered by one line, the module's worker running operations, a real SQLite store, a real
// HTTP server on an ephemeral port and SigV4-signed requests.
#include "cloudmap/api/cloudmap_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "aws/errors.h"
#include "aws/sigv4.h"
#include "testing/toy_front_fixture.h"
#include "vpc/default_vpc.h"

namespace paddock::cloudmap {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

class CloudMapServiceTest : public testing::ToyFrontTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenStore("cloudmap"));  // cloudmap's tables are among the node's
    auto module = api::CloudMapModule::Open(*store_, "token-key-for-tests");
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    cloudmap_ = std::move(*module);
    aws::FrontOptions options;
    options.authorizer = &authorizer_;
    authorizer_.Deny([](std::string_view resource) { return resource.ends_with("/srv-denied"); });
    CreateFront(options);
    front_->AddJsonService(&cloudmap_->service());  // the registration: one line
    ASSERT_NO_FATAL_FAILURE(StartServer());
  }
  void TearDown() override {
    testing::ToyFrontTest::TearDown();
    cloudmap_.reset();
  }

  http::Response Call(std::string_view action, const json::object& body, const iam::AccessKey* key = nullptr,
                      std::string host = "localhost") {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", std::move(host)},
                   {"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", "Route53AutoNaming_v20170314." + std::string(action)}};
    req.body = json::serialize(body);
    const iam::AccessKey& k = key ? *key : key_;
    aws::SignRequest(req, {k.id.str(), k.secret}, "eu-west-1", "servicediscovery", SystemClock::Get().Now());
    auto r = client_->Send(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : http::Response{};
  }

  static std::string Type(const http::Response& r) { return std::string(Body(r).at("__type").as_string()); }

  // Waits (at most 10 s) until operation `id` is SUCCESS or FAIL; its final status.
  std::string Await(const std::string& id, const iam::AccessKey* key = nullptr) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      http::Response r = Call("GetOperation", {{"OperationId", id}}, key);
      EXPECT_EQ(r.status, 200) << r.body;
      if (r.status != 200) return "";
      std::string status(Body(r).at("Operation").at("Status").as_string());
      if (status == "SUCCESS" || status == "FAIL" || std::chrono::steady_clock::now() > deadline) return status;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the worker runs on its own thread
    }
  }

  std::string OpId(const http::Response& r) {
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? std::string(Body(r).at("OperationId").as_string()) : "";
  }

  std::string Vpc() const { return vpc::DefaultVpcFor(Scope{key_.account, Region("eu-west-1")}).vpc_id; }

  testing::RecordingAuthorizer authorizer_;
  std::unique_ptr<api::CloudMapModule> cloudmap_;
};

TEST_F(CloudMapServiceTest, NamespaceServiceInstanceAndDiscoveryOverTheWire) {
  const std::string create = OpId(Call("CreatePrivateDnsNamespace", {{"Name", "svc.internal"}, {"Vpc", Vpc()}}));
  ASSERT_EQ(Await(create), "SUCCESS");
  http::Response op = Call("GetOperation", {{"OperationId", create}});
  const std::string ns(Body(op).at("Operation").at("Targets").at("NAMESPACE").as_string());
  EXPECT_EQ(Body(op).at("Operation").at("Type").as_string(), "CREATE_NAMESPACE");

  http::Response got = Call("GetNamespace", {{"Id", ns}});
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(Body(got).at("Namespace").at("Type").as_string(), "DNS_PRIVATE");
  EXPECT_EQ(Body(got).at("Namespace").at("Properties").at("DnsProperties").at("SOA").at("TTL").as_int64(), 15);

  http::Response svc = Call("CreateService", {{"Name", "web"},
                                              {"NamespaceId", ns},
                                              {"DnsConfig", {{"RoutingPolicy", "MULTIVALUE"},
                                                             {"DnsRecords", json::array{{{"Type", "A"}, {"TTL", 10}}}}}}});
  ASSERT_EQ(svc.status, 200) << svc.body;
  const std::string srv(Body(svc).at("Service").at("Id").as_string());
  EXPECT_EQ(Body(svc).at("Service").at("Type").as_string(), "DNS_HTTP");

  const std::string reg = OpId(Call("RegisterInstance", {{"ServiceId", srv},
                                                         {"InstanceId", "task-1"},
                                                         {"Attributes", {{"AWS_INSTANCE_IPV4", "172.31.0.9"}}}}));
  ASSERT_EQ(Await(reg), "SUCCESS");
  // DiscoverInstances' host prefix: a client that injects it sends Host: data-<endpoint host>.
  http::Response found = Call("DiscoverInstances", {{"NamespaceName", "svc.internal"}, {"ServiceName", "web"}},
                              nullptr, "data-localhost");
  ASSERT_EQ(found.status, 200) << found.body;
  const json::object discovered = Body(found);
  const json::array& instances = discovered.at("Instances").as_array();
  ASSERT_EQ(instances.size(), 1u);
  EXPECT_EQ(instances[0].at("InstanceId").as_string(), "task-1");
  EXPECT_EQ(instances[0].at("HealthStatus").as_string(), "UNKNOWN");
  EXPECT_EQ(instances[0].at("Attributes").at("AWS_INSTANCE_IPV4").as_string(), "172.31.0.9");
  EXPECT_EQ(discovered.at("InstancesRevision").as_int64(), 1);

  // Errors by AWS's names.
  EXPECT_EQ(Type(Call("GetNamespace", {{"Id", "ns-nope"}})), "NamespaceNotFound");
  EXPECT_EQ(Type(Call("GetService", {{"Id", "srv-nope"}})), "ServiceNotFound");
  EXPECT_EQ(Type(Call("GetOperation", {{"OperationId", "nope"}})), "OperationNotFound");
  EXPECT_EQ(Type(Call("GetInstance", {{"ServiceId", srv}, {"InstanceId", "nope"}})), "InstanceNotFound");
  EXPECT_EQ(Type(Call("DeleteNamespace", {{"Id", ns}})), "ResourceInUse");
  EXPECT_EQ(Type(Call("DeleteService", {{"Id", srv}})), "ResourceInUse");
  EXPECT_EQ(Type(Call("CreatePublicDnsNamespace", {{"Name", "example.com"}})), "InvalidInput");
  EXPECT_EQ(Type(Call("RegisterInstance", {{"ServiceId", srv}, {"InstanceId", "bad id!"}, {"Attributes", json::object{}}})),
            "InvalidInput");  // the model's pattern, which the owner checks
  EXPECT_EQ(Type(Call("UpdateInstanceCustomHealthStatus",
                      {{"ServiceId", srv}, {"InstanceId", "task-1"}, {"Status", "HEALTHY"}})),
            "CustomHealthNotFound");
  EXPECT_EQ(Type(Call("ListNamespaces", {{"NextToken", "forged"}})), "InvalidInput");

  ASSERT_EQ(Await(OpId(Call("DeregisterInstance", {{"ServiceId", srv}, {"InstanceId", "task-1"}}))), "SUCCESS");
  ASSERT_EQ(Call("DeleteService", {{"Id", srv}}).status, 200);
  ASSERT_EQ(Await(OpId(Call("DeleteNamespace", {{"Id", ns}}))), "SUCCESS");
  EXPECT_EQ(Type(Call("GetNamespace", {{"Id", ns}})), "NamespaceNotFound");
}

TEST_F(CloudMapServiceTest, EveryCallIsAuthorizedOnTheNamespaceOrServiceArn) {
  const std::string ns = [&] {
    const std::string op = OpId(Call("CreateHttpNamespace", {{"Name", "api"}}));
    EXPECT_EQ(Await(op), "SUCCESS");
    return std::string(Body(Call("GetOperation", {{"OperationId", op}})).at("Operation").at("Targets").at("NAMESPACE").as_string());
  }();
  http::Response svc = Call("CreateService", {{"Name", "web"}, {"NamespaceId", ns}});
  const std::string srv(Body(svc).at("Service").at("Id").as_string());
  authorizer_.Take();
  const std::string arn = fmt::format("arn:aws:servicediscovery:eu-west-1:{}:", key_.account.str());
  ASSERT_EQ(Call("GetNamespace", {{"Id", ns}}).status, 200);
  ASSERT_EQ(Call("GetService", {{"Id", srv}}).status, 200);
  ASSERT_EQ(Call("ListInstances", {{"ServiceId", srv}}).status, 200);
  ASSERT_EQ(Call("ListServices", json::object{}).status, 200);
  ASSERT_EQ(Call("ListTagsForResource", {{"ResourceARN", arn + "service/" + srv}}).status, 200);
  EXPECT_THAT(authorizer_.Take(),
              ElementsAre("servicediscovery:GetNamespace " + arn + "namespace/" + ns,
                          "servicediscovery:GetService " + arn + "service/" + srv,
                          "servicediscovery:ListInstances " + arn + "service/" + srv, "servicediscovery:ListServices *",
                          "servicediscovery:ListTagsForResource " + arn + "service/" + srv));
  http::Response denied =
      Call("RegisterInstance", {{"ServiceId", "srv-denied"}, {"InstanceId", "x"}, {"Attributes", json::object{}}});
  EXPECT_EQ(Type(denied), "AccessDeniedException");
}

TEST_F(CloudMapServiceTest, AnotherAccountSeesNoneOfThisAccountsResources) {
  const std::string op = OpId(Call("CreateHttpNamespace", {{"Name", "api"}}));
  ASSERT_EQ(Await(op), "SUCCESS");
  const std::string ns(
      Body(Call("GetOperation", {{"OperationId", op}})).at("Operation").at("Targets").at("NAMESPACE").as_string());
  const std::string srv(Body(Call("CreateService", {{"Name", "web"}, {"NamespaceId", ns}})).at("Service").at("Id").as_string());
  ASSERT_EQ(Await(OpId(Call("RegisterInstance",
                            {{"ServiceId", srv}, {"InstanceId", "i-1"}, {"Attributes", {{"k", "v"}}}}))),
            "SUCCESS");
  auto other_account = accounts_->CreateAccount(std::nullopt, "other");
  ASSERT_TRUE(other_account.ok());
  auto other = accounts_->CreateAccessKey(other_account->id);
  ASSERT_TRUE(other.ok());

  EXPECT_EQ(Type(Call("GetOperation", {{"OperationId", op}}, &*other)), "OperationNotFound");
  EXPECT_EQ(Type(Call("GetNamespace", {{"Id", ns}}, &*other)), "NamespaceNotFound");
  EXPECT_EQ(Type(Call("GetService", {{"Id", srv}}, &*other)), "ServiceNotFound");
  EXPECT_EQ(Type(Call("GetInstance", {{"ServiceId", srv}, {"InstanceId", "i-1"}}, &*other)), "ServiceNotFound");
  EXPECT_EQ(Type(Call("DiscoverInstances", {{"NamespaceName", "api"}, {"ServiceName", "web"}}, &*other)),
            "NamespaceNotFound");
  EXPECT_EQ(Type(Call("DeregisterInstance", {{"ServiceId", srv}, {"InstanceId", "i-1"}}, &*other)), "ServiceNotFound");
  EXPECT_EQ(Type(Call("DeleteNamespace", {{"Id", ns}}, &*other)), "NamespaceNotFound");
  EXPECT_THAT(Body(Call("ListNamespaces", json::object{}, &*other)).at("Namespaces").as_array(), IsEmpty());
  EXPECT_THAT(Body(Call("ListServices", json::object{}, &*other)).at("Services").as_array(), IsEmpty());
  EXPECT_THAT(Body(Call("ListOperations", json::object{}, &*other)).at("Operations").as_array(), IsEmpty());
  // Its own namespace of the same name is its own.
  ASSERT_EQ(Await(OpId(Call("CreateHttpNamespace", {{"Name", "api"}}, &*other)), &*other), "SUCCESS");
  http::Response mine = Call("DiscoverInstances", {{"NamespaceName", "api"}, {"ServiceName", "web"}});
  EXPECT_EQ(Body(mine).at("Instances").as_array().size(), 1u);
}

TEST_F(CloudMapServiceTest, DiscoverInstancesHasAwsBucketAndThrottlingIsRequestLimitExceeded) {
  const api::CloudMapService& service = cloudmap_->service();
  for (std::string_view action : {"DiscoverInstances", "DiscoverInstancesRevision"}) {
    std::optional<aws::ThrottleGroup> group = service.ThrottleGroupFor(action);
    ASSERT_TRUE(group.has_value()) << action;
    EXPECT_EQ(group->spec.burst, 2000) << action;
    EXPECT_EQ(group->spec.refill_per_second, 1000) << action;
  }
  EXPECT_NE(service.ThrottleGroupFor("DiscoverInstances")->name,
            service.ThrottleGroupFor("DiscoverInstancesRevision")->name);
  EXPECT_FALSE(service.ThrottleGroupFor("CreateService").has_value());
  std::optional<aws::AwsError> error = service.ErrorFor(ResourceExhausted("Rate exceeded", aws::Error::kThrottling));
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->type, "RequestLimitExceeded");
  EXPECT_EQ(error->http_status, 400);
}

}  // namespace
}  // namespace paddock::cloudmap
