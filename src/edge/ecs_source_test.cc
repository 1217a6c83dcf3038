#include "edge/ecs_source.h"

#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "edge/ecs_provider.h"
#include "http/server.h"

namespace paddock::edge {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// An ECS endpoint with two pages of tasks in cluster "web": three tasks of one revision, one of
// another; it records the calls it gets.
class FakeEcs {
 public:
  FakeEcs()
      : server_({}, [this](const http::Request& r) { return Answer(r); }) {
    auto port = server_.Start();
    EXPECT_TRUE(port.ok());
    port_ = *port;
  }
  uint16_t port() const { return port_; }
  int calls(const std::string& action) {
    std::lock_guard lock(mu_);
    return calls_[action];
  }
  std::atomic<bool> fail_describe_tasks{false};

 private:
  static std::string Task(const std::string& id, const std::string& def, const std::string& ip) {
    return R"({"taskArn":"arn:aws:ecs:us-east-1:123456789012:task/web/)" + id +
           R"(","group":"service:app","lastStatus":"RUNNING","desiredStatus":"RUNNING","healthStatus":"UNKNOWN",)"
           R"("taskDefinitionArn":")" + def + R"(","attachments":[{"type":"ElasticNetworkInterface"}],)"
           R"("containers":[{"name":"app","networkInterfaces":[{"privateIpv4Address":")" + ip + R"("}]}]})";
  }
  http::Response Answer(const http::Request& r) {
    std::string action(r.GetHeader("X-Amz-Target"));
    action = action.substr(action.find('.') + 1);
    {
      std::lock_guard lock(mu_);
      ++calls_[action];
    }
    http::Response resp;
    if (r.GetHeader("Authorization").find("AWS4-HMAC-SHA256 Credential=AKIDEDGE/") != 0) {
      resp.status = 403;
      resp.body = R"({"__type":"UnrecognizedClientException","message":"unsigned"})";
      return resp;
    }
    json::object body = json::parse(r.body).as_object();
    const std::string d1 = "arn:aws:ecs:us-east-1:123456789012:task-definition/app:1";
    const std::string d2 = "arn:aws:ecs:us-east-1:123456789012:task-definition/app:2";
    if (action == "ListTasks") {
      EXPECT_EQ(body["desiredStatus"], "RUNNING");
      EXPECT_EQ(body["cluster"], "web");
      if (!body.contains("nextToken"))
        resp.body = R"({"taskArns":["a","b"],"nextToken":"page2"})";
      else
        resp.body = R"({"taskArns":["c","d"]})";
    } else if (action == "DescribeTasks") {
      if (fail_describe_tasks.load()) {
        resp.status = 500;
        resp.body = R"({"__type":"ServerException","message":"boom"})";
        return resp;
      }
      std::string first = std::string(body["tasks"].as_array()[0].as_string());
      if (first == "a")
        resp.body = "{\"tasks\":[" + Task("a", d1, "172.31.0.5") + "," + Task("b", d1, "172.31.0.6") + "]}";
      else
        resp.body = "{\"tasks\":[" + Task("c", d1, "172.31.0.7") + "," + Task("d", d2, "172.31.0.8") + "]}";
    } else if (action == "DescribeTaskDefinition") {
      std::string arn(body["taskDefinition"].as_string());
      resp.body = R"({"taskDefinition":{"taskDefinitionArn":")" + arn +
                  R"(","networkMode":"awsvpc","containerDefinitions":[{"name":"app","dockerLabels":{"traefik.enable":"true","rev":")" +
                  arn.substr(arn.size() - 1) + R"("},"portMappings":[{"containerPort":8080,"hostPort":8080,"protocol":"tcp"}]}]}})";
    } else {
      resp.status = 400;
      resp.body = R"({"__type":"InvalidAction","message":"?"})";
    }
    return resp;
  }

  http::Server server_;
  uint16_t port_ = 0;
  std::mutex mu_;
  std::map<std::string, int> calls_;
};

EcsApiOptions Options(uint16_t port) {
  return EcsApiOptions{.host = "127.0.0.1", .port = port, .credentials = {"AKIDEDGE", "secret"},
                       .clusters = {"web"}};
}

TEST(EcsApiSourceTest, ReadsEveryPageAndEachRevisionOnce) {
  FakeEcs ecs;
  EcsApiSource source(Options(ecs.port()));
  auto r = source.Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tasks.size(), 4u);
  EXPECT_TRUE(r->errors.empty());
  const EcsTask& a = r->tasks[0];
  EXPECT_EQ(a.cluster, "web");
  EXPECT_EQ(a.group, "service:app");
  EXPECT_EQ(a.network_mode, "awsvpc");
  EXPECT_TRUE(a.has_attachments);
  ASSERT_EQ(a.containers.size(), 1u);
  EXPECT_EQ(a.containers[0].private_ip, "172.31.0.5");
  EXPECT_EQ(a.containers[0].labels.at("rev"), "1");
  ASSERT_EQ(a.containers[0].port_mappings.size(), 1u);
  EXPECT_EQ(a.containers[0].port_mappings[0].host_port, 8080);
  EXPECT_EQ(r->tasks[3].containers[0].labels.at("rev"), "2");
  // Two revisions among four tasks: two calls; a second read asks for none.
  EXPECT_EQ(ecs.calls("DescribeTaskDefinition"), 2);
  ASSERT_TRUE(source.Read().ok());
  EXPECT_EQ(ecs.calls("DescribeTaskDefinition"), 2);
  EXPECT_EQ(ecs.calls("ListTasks"), 4);
}

TEST(EcsApiSourceTest, ADescribeTasksErrorDropsThePageAsTraefikDoes) {
  FakeEcs ecs;
  ecs.fail_describe_tasks.store(true);
  EcsApiSource source(Options(ecs.port()));
  auto r = source.Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->tasks.empty());
  EXPECT_EQ(r->errors.size(), 2u);
}

TEST(EcsApiSourceTest, ARefusedListFailsTheRead) {
  FakeEcs ecs;
  EcsApiOptions o = Options(ecs.port());
  o.credentials.access_key_id = "AKIDOTHER";
  EcsApiSource source(o);
  auto r = source.Read();
  EXPECT_FALSE(r.ok());
}

// --- bridge and host tasks: the container instance's EC2 instance ------------------------------

// One endpoint for ECS (JSON) and EC2 (Query, XML), as Paddock serves them: cluster "ec2" with
//   t-bridge1, t-bridge2  bridge, on container instance A (EC2 i-0aaaaaaaaaaaaaaa1, 10.0.0.11)
//   t-host                host,   on container instance B (EC2 i-0bbbbbbbbbbbbbbb2, 10.0.0.12)
//   t-missing             bridge, on container instance C, which ECS does not describe (a failure)
//   t-anywhere            bridge, on container instance D, an ECS Anywhere machine (mi-...)
// It records what each call asked for.
class FakeEc2Cluster {
 public:
  static constexpr const char* kCi = "arn:aws:ecs:us-east-1:123456789012:container-instance/ec2/";
  FakeEc2Cluster() : server_({}, [this](const http::Request& r) { return Answer(r); }) {
    auto port = server_.Start();
    EXPECT_TRUE(port.ok());
    port_ = *port;
  }
  uint16_t port() const { return port_; }
  // The containerInstances each DescribeContainerInstances asked for, and each DescribeInstances'
  // form body.
  std::vector<std::vector<std::string>> container_instance_calls() {
    std::lock_guard lock(mu_);
    return container_instance_calls_;
  }
  std::vector<std::string> instance_calls() {
    std::lock_guard lock(mu_);
    return instance_calls_;
  }
  std::atomic<int> ec2_status{200};
  std::atomic<bool> ec2_garbage{false};

 private:
  static std::string Task(const std::string& id, const std::string& mode, const std::string& ci,
                          const std::string& bindings) {
    return R"({"taskArn":"arn:aws:ecs:us-east-1:123456789012:task/ec2/)" + id +
           R"(","group":"service:)" + id + R"(","lastStatus":"RUNNING","desiredStatus":"RUNNING",)"
           R"("taskDefinitionArn":"arn:aws:ecs:us-east-1:123456789012:task-definition/)" + mode +
           R"(:1","containerInstanceArn":")" + kCi + ci + R"(","attachments":[],)"
           R"("containers":[{"name":"web","networkBindings":)" + bindings +
           R"(},{"name":"not-in-the-definition","networkBindings":[]}]})";
  }
  static std::string Instance(const std::string& id, const std::string& ip) {
    // Pretty-printed as EC2 prints it, with a nested privateIpAddress (the interface's) that is
    // not the instance's.
    return "\n  <item>\n    <reservationId>r-1</reservationId>\n    <instancesSet>\n      <item>\n"
           "        <instanceId>" + id + "</instanceId>\n"
           "        <instanceState><code>16</code><name>running</name></instanceState>\n"
           "        <networkInterfaceSet><item><privateIpAddress>192.168.9.9</privateIpAddress></item>"
           "</networkInterfaceSet>\n"
           "        <privateIpAddress>" + ip + "</privateIpAddress>\n"
           "        <tagSet/>\n      </item>\n    </instancesSet>\n  </item>";
  }
  http::Response Answer(const http::Request& r) {
    http::Response resp;
    if (r.GetHeader("Content-Type").starts_with("application/x-www-form-urlencoded")) {
      EXPECT_THAT(std::string(r.GetHeader("Authorization")), HasSubstr("/us-east-1/ec2/aws4_request"));
      {
        std::lock_guard lock(mu_);
        instance_calls_.push_back(r.body);
      }
      resp.status = ec2_status.load();
      if (resp.status != 200) {
        resp.body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>"
                    "InvalidInstanceID.NotFound</Code><Message>The instance ID 'i-0aaaaaaaaaaaaaaa1' does not "
                    "exist</Message></Error></Errors><RequestID>x</RequestID></Response>";
        return resp;
      }
      if (ec2_garbage.load()) {
        resp.body = "<DescribeInstancesResponse><reservationSet><item>";
        return resp;
      }
      // Two pages: A, then B.
      const bool second = r.body.find("NextToken=") != std::string::npos;
      resp.body = std::string("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                              "<DescribeInstancesResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">"
                              "<requestId>x</requestId><reservationSet>") +
                  (second ? Instance("i-0bbbbbbbbbbbbbbb2", "10.0.0.12") : Instance("i-0aaaaaaaaaaaaaaa1", "10.0.0.11")) +
                  "</reservationSet>" + (second ? "" : "<nextToken>p&amp;2</nextToken>") +
                  "</DescribeInstancesResponse>";
      return resp;
    }
    std::string action(r.GetHeader("X-Amz-Target"));
    action = action.substr(action.find('.') + 1);
    json::object body = json::parse(r.body).as_object();
    if (action == "ListTasks") {
      resp.body = R"({"taskArns":["t-bridge1","t-bridge2","t-host","t-missing","t-anywhere"]})";
    } else if (action == "DescribeTasks") {
      resp.body = "{\"tasks\":[" +
                  Task("t-bridge1", "bridge", "A", R"([{"containerPort":80,"hostPort":32768,"protocol":"tcp"}])") + "," +
                  Task("t-bridge2", "bridge", "A", R"([{"containerPort":80,"hostPort":32769,"protocol":"tcp"}])") + "," +
                  Task("t-host", "host", "B", R"([])") + "," +
                  Task("t-missing", "bridge", "C", R"([{"containerPort":80,"hostPort":32770,"protocol":"tcp"}])") + "," +
                  Task("t-anywhere", "bridge", "D", R"([{"containerPort":80,"hostPort":32771,"protocol":"tcp"}])") + "]}";
    } else if (action == "DescribeContainerInstances") {
      EXPECT_EQ(body["cluster"], "ec2");
      std::vector<std::string> asked;
      json::array described;
      json::array failures;
      for (const json::value& v : body["containerInstances"].as_array()) {
        std::string arn(v.as_string());
        asked.push_back(arn.substr(arn.rfind('/') + 1));
        const std::string id = asked.back() == "A"   ? "i-0aaaaaaaaaaaaaaa1"
                               : asked.back() == "B" ? "i-0bbbbbbbbbbbbbbb2"
                               : asked.back() == "D" ? "mi-0ddddddddddddddd4"
                                                     : "";
        if (id.empty()) {
          failures.push_back(json::object{{"arn", arn}, {"reason", "MISSING"}});
        } else {
          described.push_back(json::object{{"containerInstanceArn", arn}, {"ec2InstanceId", id}});
        }
      }
      {
        std::lock_guard lock(mu_);
        container_instance_calls_.push_back(asked);
      }
      resp.body = json::serialize(json::object{{"containerInstances", described}, {"failures", failures}});
    } else if (action == "DescribeTaskDefinition") {
      std::string arn(body["taskDefinition"].as_string());
      std::string mode = arn.find("/host:") != std::string::npos ? "host" : "bridge";
      resp.body = R"({"taskDefinition":{"taskDefinitionArn":")" + arn + R"(","networkMode":")" + mode +
                  R"(","containerDefinitions":[{"name":"web","dockerLabels":{)" +
                  (mode == "host" ? R"("traefik.http.services.h.loadbalancer.server.port":"8080")" : "") +
                  R"(},"portMappings":[{"containerPort":80,"protocol":"tcp"}]}]}})";
    } else {
      resp.status = 400;
      resp.body = R"({"__type":"InvalidAction","message":"?"})";
    }
    return resp;
  }

  http::Server server_;
  uint16_t port_ = 0;
  std::mutex mu_;
  std::vector<std::vector<std::string>> container_instance_calls_;
  std::vector<std::string> instance_calls_;
};

const EcsTask& Find(const TaskRead& read, std::string_view id) {
  for (const EcsTask& t : read.tasks)
    if (t.task_arn.ends_with(id)) return t;
  ADD_FAILURE() << "no task " << id;
  return read.tasks.at(0);
}

TEST(EcsApiSourceTest, BridgeAndHostTasksGetTheirInstancesAddressAndState) {
  FakeEc2Cluster fake;
  EcsApiOptions o = Options(fake.port());
  o.clusters = {"ec2"};
  EcsApiSource source(o);
  auto r = source.Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tasks.size(), 5u);
  const EcsTask& bridge1 = Find(*r, "t-bridge1");
  EXPECT_EQ(bridge1.container_instance_arn, std::string(FakeEc2Cluster::kCi) + "A");
  EXPECT_EQ(bridge1.network_mode, "bridge");
  EXPECT_EQ(bridge1.host_ip, "10.0.0.11");  // the instance's, not its interface's
  EXPECT_EQ(bridge1.machine_state, "running");
  // The container the definition does not name is left out, as Traefik skips it.
  ASSERT_EQ(bridge1.containers.size(), 1u);
  ASSERT_EQ(bridge1.containers[0].network_bindings.size(), 1u);
  EXPECT_EQ(bridge1.containers[0].network_bindings[0].host_port, 32768);
  EXPECT_EQ(Find(*r, "t-bridge2").host_ip, "10.0.0.11");
  EXPECT_EQ(Find(*r, "t-host").host_ip, "10.0.0.12");
  EXPECT_EQ(Find(*r, "t-host").network_mode, "host");
  // C is not described, D is not EC2's: no machine.
  EXPECT_EQ(Find(*r, "t-missing").machine_state, "");
  EXPECT_EQ(Find(*r, "t-anywhere").machine_state, "");

  // One DescribeContainerInstances for the four instances; DescribeInstances for the two EC2 ids,
  // both pages, the token sent back encoded.
  EXPECT_THAT(fake.container_instance_calls(), ElementsAre(ElementsAre("A", "B", "C", "D")));
  std::vector<std::string> instance_calls = fake.instance_calls();
  ASSERT_EQ(instance_calls.size(), 2u);
  EXPECT_EQ(instance_calls[0],
            "Action=DescribeInstances&Version=2016-11-15&InstanceId.1=i-0aaaaaaaaaaaaaaa1&InstanceId.2=i-0bbbbbbbbbbbbbbb2");
  EXPECT_EQ(instance_calls[1], instance_calls[0] + "&NextToken=p%262");

  // What Traefik makes of it: the instance's address and the binding's host port; the host-mode
  // task (no bindings) at its label port; the tasks without a machine skipped, logged.
  EcsBuild b = BuildEcsConfiguration(r->tasks, EcsProviderOptions{});
  std::vector<std::string> urls;
  for (const EcsServer& s : b.servers) urls.push_back(s.service + " " + s.url);
  EXPECT_THAT(urls, ElementsAre("h http://10.0.0.12:8080", "service-t-bridge1-web http://10.0.0.11:32768",
                                "service-t-bridge2-web http://10.0.0.11:32769"));
  EXPECT_THAT(b.errors, ElementsAre(HasSubstr("unable to find container instance information for web"),
                                    HasSubstr("unable to find container instance information for web")));

  // A second read asks ECS only for the instance it could not describe; EC2 every time (the
  // state is live).
  ASSERT_TRUE(source.Read().ok());
  EXPECT_THAT(fake.container_instance_calls(), ElementsAre(ElementsAre("A", "B", "C", "D"), ElementsAre("C")));
  EXPECT_EQ(fake.instance_calls().size(), 4u);
  EXPECT_EQ(source.calls("DescribeInstances"), 4u);
}

TEST(EcsApiSourceTest, AFailedInstanceLookupFailsTheReadAndForgetsTheCachedIds) {
  FakeEc2Cluster fake;
  EcsApiOptions o = Options(fake.port());
  o.clusters = {"ec2"};
  EcsApiSource source(o);
  ASSERT_TRUE(source.Read().ok());
  fake.ec2_status.store(400);
  auto failed = source.Read();
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.status().message(), HasSubstr("InvalidInstanceID.NotFound"));
  fake.ec2_status.store(200);
  fake.ec2_garbage.store(true);
  auto garbage = source.Read();
  ASSERT_FALSE(garbage.ok());
  EXPECT_THAT(garbage.status().message(), HasSubstr("DescribeInstances: XML"));
  fake.ec2_garbage.store(false);
  ASSERT_TRUE(source.Read().ok());
  // After each failure the container instances are described anew.
  EXPECT_THAT(fake.container_instance_calls(),
              ElementsAre(ElementsAre("A", "B", "C", "D"), ElementsAre("C"), ElementsAre("A", "B", "C", "D"),
                          ElementsAre("A", "B", "C", "D")));
}

TEST(EcsApiSourceTest, FargateTasksCostNoInstanceLookup) {
  FakeEcs ecs;
  EcsApiSource source(Options(ecs.port()));
  ASSERT_TRUE(source.Read().ok());
  EXPECT_EQ(source.calls("DescribeContainerInstances"), 0u);
  EXPECT_EQ(source.calls("DescribeInstances"), 0u);
  EXPECT_EQ(source.calls("ListTasks"), 2u);
}

}  // namespace
}  // namespace paddock::edge
