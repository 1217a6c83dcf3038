#include "edge/ecs_source.h"

#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include "http/server.h"

namespace paddock::edge {
namespace {

namespace json = boost::json;

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

}  // namespace
}  // namespace paddock::edge
