// The Paddock agent protocol against a real in-process server (Node on port 0): RemoteControl's
// long-poll, reports and their authorization, the poll bound, ECS's own agent actions
// (SubmitTaskStateChange, SubmitContainerStateChange) on a real EC2 task, and the agent identity
// (docs/agent-protocol.md, "Identity"): each instance's own credential, the only one its calls are
// accepted from. No containers run: the test plays the agent.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <stop_token>
#include <thread>

#include "agent/inprocess/errors.h"
#include "agent/inprocess/inprocess_control.h"
#include "agent/remote/server/agent_service.h"
#include "agent/remote/registration.h"
#include "agent/remote/remote_control.h"
#include "cli/config.h"
#include "cli/node.h"
#include "cli/testing/served_node.h"
#include "ecs/api/errors.h"
#include "ecs/cluster/clusters.h"
#include "ecs/drain/drain_holds.h"
#include "ecs/instance/instances.h"
#include "ecs/task/tasks.h"
#include "ecs/taskdef/taskdefs.h"
#include "ecs/testing/temp_store.h"
#include "iam/directory.h"

namespace paddock::cli {
namespace {
namespace json = boost::json;
using agent::remote::ClientOptions;
using agent::remote::JsonClient;
using agent::remote::RemoteControl;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr std::string_view kEcs = "AmazonEC2ContainerServiceV20141113.";

class RemoteAgentTest : public ::testing::Test {
 protected:
  // The node's settings (a subclass may change them).
  virtual ServerConfig Config() {
    ServerConfig config;
    config.agent_long_polls = 1;
    return config;
  }

  void SetUp() override {
    const ServerConfig config = Config();
    auto served = testing::ServedNode::Start("paddock-remote", config);
    ASSERT_TRUE(served.ok()) << served.status().ToString();
    served_ = std::move(*served);
    options_ = served_->ClientOptions(served_->key());
    client_ = std::make_unique<JsonClient>(options_);

    Ecs("CreateCluster", {{"clusterName", "ec2"}});
    instance_arn_ = Register(&agent_);
    other_arn_ = Register(&other_agent_);
    Ecs("RegisterTaskDefinition", testing::WebTaskDefinition());
  }

  json::object Ecs(std::string_view action, const json::object& body) {
    auto r = client_->Call(std::string(kEcs) + std::string(action), body);
    EXPECT_TRUE(r.ok()) << action << ": " << r.status().ToString();
    return r.ok() ? r->as_object() : json::object{};
  }

  // Registers an instance as `paddock agent` does (RegisterAgent with the account's key); `as`
  // gets the client options that sign with its own agent credential.
  std::string Register(ClientOptions* as) {
    auto instance = testing::RegisterInstance(*client_, "ec2");
    EXPECT_TRUE(instance.ok()) << instance.status().ToString();
    if (!instance.ok()) return {};
    *as = options_;
    as->credentials = instance->credentials;
    return instance->arn;
  }

  std::string StartTask(const std::string& instance) {
    json::object r = Ecs("StartTask", {{"cluster", "ec2"}, {"taskDefinition", "web"},
                                       {"containerInstances", json::array{json::string(instance)}}});
    return std::string(r["tasks"].as_array().at(0).as_object()["taskArn"].as_string());
  }

  json::object Describe(const std::string& arn) {
    json::object r = Ecs("DescribeTasks", {{"cluster", "ec2"}, {"tasks", json::array{json::string(arn)}}});
    return r["tasks"].as_array().at(0).as_object();
  }

  // Counts `control`'s wakes in `wakes` (under `mu`, notifying `cv`), starts it and waits for its
  // first answer.
  void StartWatched(RemoteControl& control, std::mutex& mu, std::condition_variable& cv, int& wakes) {
    control.Watch(instance_arn_, [&] {
      std::lock_guard lock(mu);
      ++wakes;
      cv.notify_all();
    });
    ASSERT_TRUE(control.Start().ok());
    ASSERT_TRUE(control.WaitForFirstPoll(seconds(5)));
  }

  std::unique_ptr<testing::ServedNode> served_;
  ClientOptions options_;
  std::unique_ptr<JsonClient> client_;
  std::string instance_arn_, other_arn_;
  ClientOptions agent_, other_agent_;  // signing with each instance's agent credential
};

// GetImageAccess (docs/agent-protocol.md): only the instance's own credential, only for an image one
// of its own tasks names; a name the server's store lacks is "not found" (the agent then pulls from
// the image's own registry).
TEST_F(RemoteAgentTest, AnInstanceGetsAccessOnlyToTheImagesOfItsOwnTasks) {
  StartTask(instance_arn_);  // its container's image: busybox
  RemoteControl control(agent_, "ec2", instance_arn_);
  auto access = control.GetImageAccess("docker.io/library/busybox:latest");
  ASSERT_TRUE(access.ok()) << access.status().ToString();
  EXPECT_FALSE(access->found);  // the server's store has no busybox
  EXPECT_TRUE(access->token.empty());
  // An image no task of the instance names: refused, whatever the store holds.
  auto other_image = control.GetImageAccess("docker.io/library/nginx:1.27");
  EXPECT_EQ(ecs::api::AnswerFor(other_image.status()).type, "AccessDeniedException") << other_image.status().ToString();
  EXPECT_EQ(other_image.status().message(), "The container instance has no task that uses this image.");
  // Another instance (no task of its own) and the account's key: refused.
  RemoteControl other(other_agent_, "ec2", other_arn_);
  EXPECT_EQ(ecs::api::AnswerFor(other.GetImageAccess("docker.io/library/busybox:latest").status()).type, "AccessDeniedException");
  auto as_account = client_->Call(std::string(agent::remote::kAgentTargetPrefix) + ".GetImageAccess",
                                  {{"cluster", "ec2"}, {"containerInstance", instance_arn_},
                                   {"image", "docker.io/library/busybox:latest"}});
  EXPECT_EQ(ecs::api::AnswerFor(as_account.status()).type, "AccessDeniedException") << as_account.status().ToString();
  // A malformed name.
  EXPECT_EQ(ecs::api::AnswerFor(control.GetImageAccess("Not An Image").status()).type, "InvalidParameterException");
}

// GetTaskCredentials (docs/agent-protocol.md): the control plane answers a task's role credentials
// only to the instance's own credential, only for a task assigned to it and not STOPPED, and reads
// the role from its own record. The role exists at launch (ECS checks it can assume it) and is
// deleted after, so it "does not exist": a ClientException whose message the agent's endpoint
// hands the container.
TEST_F(RemoteAgentTest, AnInstanceGetsRoleCredentialsOnlyForItsOwnLiveTasks) {
  const std::string account = instance_arn_.substr(std::string("arn:aws:ecs:us-east-1:").size(), 12);
  iam::Directory roles(served_->node().store(), SystemClock::Get());  // the node's IAM records, as IAM writes them
  iam::RoleSpec role;
  role.name = "app";
  role.trust_policy = R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow",)"
                      R"("Principal":{"Service":"ecs-tasks.amazonaws.com"},"Action":"sts:AssumeRole"}]})";
  ASSERT_TRUE(roles.CreateRole(AccountId(account), role).ok());
  Ecs("RegisterTaskDefinition",
      json::parse(R"({"family": "roled", "networkMode": "bridge", "requiresCompatibilities": ["EC2"],
                      "taskRoleArn": "arn:aws:iam::)" + account + R"(:role/app",
                      "containerDefinitions": [{"name": "web", "image": "busybox", "memory": 64}]})")
          .as_object());
  json::object started = Ecs("StartTask", {{"cluster", "ec2"}, {"taskDefinition", "roled"},
                                           {"containerInstances", json::array{json::string(instance_arn_)}}});
  ASSERT_EQ(started["tasks"].as_array().size(), 1u) << json::serialize(started);
  ecs::task::LaunchSpec spec;
  spec.task_arn = std::string(started["tasks"].as_array()[0].as_object()["taskArn"].as_string());
  ASSERT_TRUE(roles.DeleteRole(AccountId(account), "app").ok());
  RemoteControl control(agent_, "ec2", instance_arn_);
  auto missing = control.TaskRoleCredentials(instance_arn_, spec);
  // A ClientException answer: the client reads it as InvalidArgument (the agent tells a role that
  // cannot be assumed from an outage by that code alone).
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument) << missing.status().ToString();
  EXPECT_EQ(missing.status().message(), "Unable to assume role arn:aws:iam::" + account +
                                            ":role/app for ecs-tasks.amazonaws.com: the role does not exist.");
  // Another instance's credential, and the account's key: refused.
  RemoteControl other(other_agent_, "ec2", other_arn_);
  EXPECT_EQ(ecs::api::AnswerFor(other.TaskRoleCredentials(other_arn_, spec).status()).type, "AccessDeniedException");
  auto as_account = client_->Call(std::string(agent::remote::kAgentTargetPrefix) + ".GetTaskCredentials",
                                  {{"cluster", "ec2"}, {"containerInstance", instance_arn_}, {"task", spec.task_arn}});
  EXPECT_EQ(ecs::api::AnswerFor(as_account.status()).type, "AccessDeniedException") << as_account.status().ToString();
  // A task of its own without a task role.
  ecs::task::LaunchSpec plain;
  plain.task_arn = StartTask(instance_arn_);
  auto none = control.TaskRoleCredentials(instance_arn_, plain);
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(none.status().message(), "The task has no task role.");
  // Once the task is STOPPED its credentials are gone.
  ecs::task::TaskStateChange stopped;
  stopped.last_status = "STOPPED";
  ASSERT_TRUE(control.Report(instance_arn_, spec.task_arn, stopped, SystemClock::Get().Now()).ok());
  ASSERT_EQ(Describe(spec.task_arn)["lastStatus"].as_string(), "STOPPED");
  auto gone = control.TaskRoleCredentials(instance_arn_, spec);
  EXPECT_EQ(ecs::api::AnswerFor(gone.status()).type, "AccessDeniedException") << gone.status().ToString();
  EXPECT_EQ(gone.status().message(), "The container instance has no such task.");
}

// GetExecutionResources and ShipLogs (docs/agent-protocol.md): only the instance's own credential,
// only for a task assigned to it and not STOPPED; the group and the stream come from the control
// plane's record of the task (a stream not the container's is refused).
TEST_F(RemoteAgentTest, AnInstanceGetsExecutionResourcesAndShipsLogsOnlyForItsOwnLiveTasks) {
  Ecs("RegisterTaskDefinition",
      json::parse(R"({"family": "logged", "networkMode": "bridge", "requiresCompatibilities": ["EC2"],
                      "containerDefinitions": [{"name": "web", "image": "busybox", "memory": 64,
                        "logConfiguration": {"logDriver": "awslogs", "options": {"awslogs-group": "/remote/app",
                          "awslogs-create-group": "true", "awslogs-stream-prefix": "p"}}}]})")
          .as_object());
  json::object started = Ecs("StartTask", {{"cluster", "ec2"}, {"taskDefinition", "logged"},
                                           {"containerInstances", json::array{json::string(instance_arn_)}}});
  ASSERT_EQ(started["tasks"].as_array().size(), 1u) << json::serialize(started);
  ecs::task::LaunchSpec spec;
  spec.task_arn = std::string(started["tasks"].as_array()[0].as_object()["taskArn"].as_string());
  const std::string stream = "p/web/" + spec.task_arn.substr(spec.task_arn.rfind('/') + 1);
  RemoteControl control(agent_, "ec2", instance_arn_);

  // The control plane's answer for its own record of the task (which has no execution role).
  auto resources = control.PrepareExecutionResources(instance_arn_, spec);
  ASSERT_TRUE(resources.ok()) << resources.status().ToString();
  EXPECT_TRUE(resources->containers.empty());
  EXPECT_EQ(resources->failure_reason,
            "ResourceInitializationError: unable to pull secrets or registry auth: the task has no execution role");

  auto created = control.ShipLogs(instance_arn_, spec, {.container = "web", .stream = stream, .create_stream = true, .events = {}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->failure, "");
  EXPECT_EQ(created->default_mode, "non-blocking");
  const int64_t now_ms = std::chrono::duration_cast<milliseconds>(SystemClock::Get().Now().time_since_epoch()).count();
  auto put = control.ShipLogs(instance_arn_, spec,
                              {.container = "web", .stream = stream, .create_stream = false,
                               .events = {{now_ms, "one \"quoted\" line"}, {now_ms, "two"}}});
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(put->failure, "");
  // Another container's stream of the same task: refused, nothing written.
  auto wrong = control.ShipLogs(instance_arn_, spec, {.container = "web", .stream = "p/web/other", .create_stream = true, .events = {}});
  EXPECT_FALSE(wrong.ok() && wrong->failure.empty());

  // Another instance's credential, and the account's key: refused.
  RemoteControl other(other_agent_, "ec2", other_arn_);
  EXPECT_EQ(ecs::api::AnswerFor(other.PrepareExecutionResources(other_arn_, spec).status()).type, "AccessDeniedException");
  EXPECT_EQ(ecs::api::AnswerFor(other.ShipLogs(other_arn_, spec, {.container = "web", .stream = stream,
                                                                  .create_stream = true, .events = {}}).status()).type,
            "AccessDeniedException");
  for (std::string_view action : {".GetExecutionResources", ".ShipLogs"}) {
    auto as_account = client_->Call(std::string(agent::remote::kAgentTargetPrefix) + std::string(action),
                                    {{"cluster", "ec2"}, {"containerInstance", instance_arn_}, {"task", spec.task_arn},
                                     {"container", "web"}, {"stream", stream}});
    EXPECT_EQ(ecs::api::AnswerFor(as_account.status()).type, "AccessDeniedException") << action << as_account.status().ToString();
  }

  // Once the task is STOPPED: refused.
  ecs::task::TaskStateChange stopped;
  stopped.last_status = "STOPPED";
  ASSERT_TRUE(control.Report(instance_arn_, spec.task_arn, stopped, SystemClock::Get().Now()).ok());
  auto gone = control.ShipLogs(instance_arn_, spec, {.container = "web", .stream = stream, .create_stream = false,
                                                     .events = {{now_ms, "late"}}});
  EXPECT_EQ(ecs::api::AnswerFor(gone.status()).type, "AccessDeniedException") << gone.status().ToString();
  EXPECT_EQ(gone.status().message(), "The container instance has no such task.");
  EXPECT_EQ(ecs::api::AnswerFor(control.PrepareExecutionResources(instance_arn_, spec).status()).type,
            "AccessDeniedException");
}

// AwaitDrain (docs/agent-protocol.md): drain before stop over the node's drain holds — "go" at once
// without a hold; WAIT, with the bound, after waitSeconds while held; answered as soon as the hold
// is released; cancelled at once by the agent; past the server's bound of waiting drains, answered
// at once; only to the instance's own credential, for its own live task.
TEST_F(RemoteAgentTest, AwaitDrainWaitsOnTheNodesHoldsAndIsAnsweredByTheirRelease) {
  using agent::protocol::DrainVerdict;
  const Scope scope{AccountId(instance_arn_.substr(std::string("arn:aws:ecs:us-east-1:").size(), 12)),
                    Region("us-east-1")};
  ecs::task::LaunchSpec spec, others;
  spec.task_arn = StartTask(instance_arn_);
  others.task_arn = StartTask(other_arn_);
  RemoteControl control(agent_, "ec2", instance_arn_);
  RemoteControl other(other_agent_, "ec2", other_arn_);
  auto free = control.AwaitDrain(instance_arn_, spec, seconds(20), {});
  ASSERT_TRUE(free.ok()) << free.status().ToString();
  EXPECT_EQ(free->verdict, DrainVerdict::kNoHolds);

  ecs::drain::DrainHolds& holds = served_->node().drain_holds();
  const ecs::drain::EdgeId edge("edge-1");
  ASSERT_TRUE(holds.Put(scope, edge, {{spec.task_arn, seconds(30)}, {others.task_arn, seconds(30)}}, seconds(60),
                        SystemClock::Get().Now())
                  .ok());
  auto held = control.AwaitDrain(instance_arn_, spec, milliseconds(0), {});
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_EQ(held->verdict, DrainVerdict::kWait);
  EXPECT_EQ(held->holds, 1);
  ASSERT_TRUE(held->deadline.has_value());
  EXPECT_GT(*held->deadline, SystemClock::Get().Now() + seconds(25));

  // A waiting long-poll; meanwhile (agent_long_polls = 1: one waiting drain) another's is answered at once.
  const auto began = std::chrono::steady_clock::now();
  auto waiting = std::async(std::launch::async, [&] { return control.AwaitDrain(instance_arn_, spec, seconds(20), {}); });
  const auto spin_until = [](const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(10);
    while (!done() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    return done();
  };
  ASSERT_TRUE(spin_until([&] { return holds.waiters() == 1; }));  // the server holds it
  auto at_once = other.AwaitDrain(other_arn_, others, seconds(20), {});
  ASSERT_TRUE(at_once.ok()) << at_once.status().ToString();
  EXPECT_EQ(at_once->verdict, DrainVerdict::kWait);
  ASSERT_TRUE(holds.Release(scope, edge, spec.task_arn).ok());
  auto released = waiting.get();
  ASSERT_TRUE(released.ok()) << released.status().ToString();
  EXPECT_EQ(released->verdict, DrainVerdict::kReleased);
  EXPECT_LT(std::chrono::steady_clock::now() - began, seconds(10));  // the release answered it, not waitSeconds

  // The agent abandons the task: its long-poll ends at once.
  std::stop_source stop;
  auto cancelled = std::async(std::launch::async,
                              [&] { return other.AwaitDrain(other_arn_, others, seconds(20), stop.get_token()); });
  ASSERT_TRUE(spin_until([&] { return holds.waiters() == 1; }));
  stop.request_stop();
  EXPECT_EQ(cancelled.get().status().code(), StatusCode::kAborted);

  // Not the instance's task, or not its credential: refused.
  EXPECT_EQ(ecs::api::AnswerFor(other.AwaitDrain(other_arn_, spec, milliseconds(0), {}).status()).type,
            "AccessDeniedException");
  auto as_account = client_->Call(std::string(agent::remote::kAgentTargetPrefix) + ".AwaitDrain",
                                  {{"cluster", "ec2"}, {"containerInstance", instance_arn_}, {"task", spec.task_arn}});
  EXPECT_EQ(ecs::api::AnswerFor(as_account.status()).type, "AccessDeniedException") << as_account.status().ToString();
}

TEST_F(RemoteAgentTest, LongPollDeliversAssignmentsAtOnceAndReportsMoveTheTask) {
  const std::string first = StartTask(instance_arn_);
  RemoteControl control(agent_, "ec2", instance_arn_);
  std::mutex mu;
  std::condition_variable cv;
  int wakes = 0;
  StartWatched(control, mu, cv, wakes);
  auto specs = control.Assignments(instance_arn_);
  ASSERT_TRUE(specs.ok());
  ASSERT_EQ(specs->size(), 1u);
  EXPECT_EQ((*specs)[0].task_arn, first);
  EXPECT_EQ((*specs)[0].desired_status, "RUNNING");
  EXPECT_FALSE((*specs)[0].definition.empty());

  // A second task reaches the waiting poll long before its 20 s are up.
  int seen = 0;
  {
    std::lock_guard lock(mu);
    seen = wakes;
  }
  const auto started = std::chrono::steady_clock::now();
  const std::string second = StartTask(instance_arn_);
  // A wake may still be the previous poll's answer: wait for the one that carries the second task.
  for (;;) {
    {
      std::unique_lock lock(mu);
      ASSERT_TRUE(cv.wait_until(lock, started + seconds(5), [&] { return wakes > seen; }))
          << "the second task never reached the waiting poll";
      seen = wakes;
    }
    specs = control.Assignments(instance_arn_);
    ASSERT_TRUE(specs.ok());
    if (specs->size() == 2u) break;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(5));

  // The owning agent's reports move the task; a backwards one is ignored.
  ecs::task::TaskStateChange running;
  running.last_status = "RUNNING";
  ecs::task::ContainerStateChange web;
  web.name = "web";
  web.last_status = "RUNNING";
  web.runtime_id = "pdk-x-1";
  web.health_status = "HEALTHY";
  running.containers.push_back(web);
  ASSERT_TRUE(control.Report(instance_arn_, first, running, SystemClock::Get().Now()).ok());
  json::object t = Describe(first);
  EXPECT_EQ(t["lastStatus"].as_string(), "RUNNING");
  EXPECT_EQ(t["containers"].as_array()[0].as_object()["runtimeId"].as_string(), "pdk-x-1");
  EXPECT_EQ(t["containers"].as_array()[0].as_object()["healthStatus"].as_string(), "HEALTHY");
  ecs::task::TaskStateChange pending;
  pending.last_status = "PENDING";
  ASSERT_TRUE(control.Report(instance_arn_, first, pending, SystemClock::Get().Now()).ok());
  EXPECT_EQ(Describe(first)["lastStatus"].as_string(), "RUNNING");

  // Another instance's agent may not report it.
  RemoteControl other(other_agent_, "ec2", other_arn_);
  Status denied = other.Report(other_arn_, first, running, SystemClock::Get().Now());
  EXPECT_EQ(denied.code(), StatusCode::kPermissionDenied) << denied.ToString();
  EXPECT_EQ(ecs::api::AnswerFor(denied).type, "AccessDeniedException");

  // StopTask reaches the agent at once too; STOPPED with a stop code releases the assignment.
  {
    std::lock_guard lock(mu);
    seen = wakes;
  }
  Ecs("StopTask", {{"cluster", "ec2"}, {"task", first}});
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, seconds(5), [&] { return wakes > seen; }));
  }
  specs = control.Assignments(instance_arn_);
  ASSERT_TRUE(specs.ok());
  for (const auto& s : *specs) {
    if (s.task_arn == first) {
      EXPECT_EQ(s.desired_status, "STOPPED");
    }
  }
  ecs::task::TaskStateChange stopped;
  stopped.last_status = "STOPPED";
  stopped.stop_code = "EssentialContainerExited";
  stopped.stopped_reason = "Essential container in task exited";
  ecs::task::ContainerStateChange exited;
  exited.name = "web";
  exited.last_status = "STOPPED";
  exited.exit_code = 3;
  stopped.containers.push_back(exited);
  ASSERT_TRUE(control.Report(instance_arn_, first, stopped, SystemClock::Get().Now()).ok());
  t = Describe(first);
  EXPECT_EQ(t["lastStatus"].as_string(), "STOPPED");
  EXPECT_EQ(t["containers"].as_array()[0].as_object()["exitCode"].as_int64(), 3);

  // The instance is connected: its polls are heartbeats.
  json::object ci = Ecs("DescribeContainerInstances",
                        {{"cluster", "ec2"}, {"containerInstances", json::array{json::string(instance_arn_)}}});
  EXPECT_TRUE(ci["containerInstances"].as_array()[0].as_object()["agentConnected"].as_bool());
  control.Stop();
}

// GetNetworkPolicy: an instance learns the policy of the VPC it has tasks in, and the node's
// network identity with its polls (both name its VPC namespaces, shared with the node's agents).
TEST_F(RemoteAgentTest, AnInstanceGetsThePolicyOfTheVpcItServesOnly) {
  const std::string task = StartTask(instance_arn_);
  RemoteControl control(agent_, "ec2", instance_arn_);
  EXPECT_EQ(control.NetworkIdentity(), "");  // not before the first poll
  ASSERT_TRUE(control.Start().ok());
  ASSERT_TRUE(control.WaitForFirstPoll(seconds(5)));
  const std::string identity = control.NetworkIdentity();
  EXPECT_EQ(identity.size(), 16u);
  auto specs = control.Assignments(instance_arn_);
  ASSERT_TRUE(specs.ok());
  ASSERT_EQ(specs->size(), 1u);
  auto policy = control.NetworkPolicy(instance_arn_, (*specs)[0].scope);
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  EXPECT_TRUE(policy->vpc_id.starts_with("vpc-"));
  EXPECT_FALSE(policy->version.empty());
  ASSERT_FALSE(policy->groups.empty());  // the default group, at least

  // An instance with no task in the VPC learns nothing of it.
  RemoteControl other(other_agent_, "ec2", other_arn_);
  ASSERT_TRUE(other.Start().ok());
  ASSERT_TRUE(other.WaitForFirstPoll(seconds(5)));
  EXPECT_EQ(other.NetworkIdentity(), identity);  // one node, one identity
  auto denied = other.NetworkPolicy(other_arn_, (*specs)[0].scope);
  EXPECT_EQ(denied.status().code(), StatusCode::kPermissionDenied) << denied.status().ToString();
  EXPECT_EQ(ecs::api::AnswerFor(denied.status()).type, "AccessDeniedException");
  // A VPC id that is not the caller's own is refused too.
  JsonClient as_agent(agent_);
  auto foreign = as_agent.Call("PaddockAgentV20261130.GetNetworkPolicy",
                               {{"cluster", "ec2"}, {"containerInstance", instance_arn_}, {"vpcId", "vpc-0123456789abcdef0"}});
  EXPECT_EQ(foreign.status().code(), StatusCode::kPermissionDenied) << foreign.status().ToString();
  // The account's own key is not the instance's agent: refused even for its own VPC.
  auto by_key = client_->Call("PaddockAgentV20261130.GetNetworkPolicy",
                              {{"cluster", "ec2"}, {"containerInstance", instance_arn_}});
  EXPECT_EQ(ecs::api::AnswerFor(by_key.status()).type, "AccessDeniedException") << by_key.status().ToString();
  other.Stop();
  control.Stop();
}

TEST_F(RemoteAgentTest, StopCancelsAWaitingPollPromptly) {
  RemoteControl control(agent_, "ec2", instance_arn_);
  ASSERT_TRUE(control.Start().ok());
  ASSERT_TRUE(control.WaitForFirstPoll(seconds(5)));
  // The second poll now waits (nothing changes); Stop must not wait for its 20 s.
  std::this_thread::sleep_for(milliseconds(200));  // let the second poll reach the server
  const auto started = std::chrono::steady_clock::now();
  control.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(3));
}

TEST_F(RemoteAgentTest, ExcessLongPollsAreAnsweredAtOnce) {
  // agent_long_polls = 1: one agent waits, the next is answered at once with busy=true.
  const std::string target = std::string(agent::remote::kAgentTargetPrefix) + ".PollAssignments";
  JsonClient first_agent(agent_), other_agent(other_agent_);
  json::object first = first_agent.Call(target, {{"cluster", "ec2"}, {"containerInstance", instance_arn_}})->as_object();
  const std::string version(first["version"].as_string());
  // The waiter polls until it holds the one slot (a 20 s wait), and stops once released.
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    JsonClient c(agent_);
    while (!done.load()) {
      auto r = c.Call(target, {{"cluster", "ec2"}, {"containerInstance", instance_arn_}, {"knownVersion", version},
                               {"waitSeconds", 20}});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (r->as_object()["busy"].as_bool()) std::this_thread::sleep_for(milliseconds(10));
    }
  });
  bool busy = false;
  for (int i = 0; i < 20 && !busy; ++i) {
    if (i > 0) std::this_thread::sleep_for(milliseconds(50));  // lets the waiter take the slot
    const auto started = std::chrono::steady_clock::now();
    auto r = other_agent.Call(target, {{"cluster", "ec2"}, {"containerInstance", other_arn_}, {"knownVersion", version},
                                       {"waitSeconds", 1}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    busy = r->as_object()["busy"].as_bool();
    if (busy) {
      EXPECT_LT(std::chrono::steady_clock::now() - started, milliseconds(900));
    }
  }
  EXPECT_TRUE(busy);
  done = true;
  StartTask(instance_arn_);  // releases the waiter
  waiter.join();

  // Another account's instance ARN is refused.
  auto denied = other_agent.Call(
      target, {{"cluster", "ec2"},
               {"containerInstance", "arn:aws:ecs:us-east-1:210987654321:container-instance/ec2/0123456789abcdef0123456789abcdef"}});
  EXPECT_EQ(ecs::api::AnswerFor(denied.status()).type, "AccessDeniedException");
}

TEST_F(RemoteAgentTest, EcsAgentActionsReportAsTheTasksInstance) {
  const std::string arn = StartTask(instance_arn_);
  JsonClient as_agent(agent_);
  auto Agent = [&](std::string_view action, const json::object& in) {
    auto r = as_agent.Call(std::string(kEcs) + std::string(action), in);
    EXPECT_TRUE(r.ok()) << action << ": " << r.status().ToString();
    return r.ok() ? r->as_object() : json::object{};
  };
  json::object body = json::parse(R"({"cluster": "ec2", "status": "RUNNING", "pullStartedAt": 1780000000,
                                      "containers": [{"containerName": "web", "status": "RUNNING", "runtimeId": "abc"}]})")
                          .as_object();
  body["task"] = arn;
  EXPECT_EQ(Agent("SubmitTaskStateChange", body)["acknowledgment"].as_string(), "ACK");
  json::object t = Describe(arn);
  EXPECT_EQ(t["lastStatus"].as_string(), "RUNNING");
  EXPECT_EQ(t["containers"].as_array()[0].as_object()["runtimeId"].as_string(), "abc");
  EXPECT_EQ(t["pullStartedAt"].as_double(), 1780000000.0);

  body["status"] = "PENDING";  // backwards: acknowledged, ignored
  EXPECT_EQ(Agent("SubmitTaskStateChange", body)["acknowledgment"].as_string(), "ACK");
  EXPECT_EQ(Describe(arn)["lastStatus"].as_string(), "RUNNING");

  json::object container{{"cluster", "ec2"}, {"task", arn}, {"containerName", "web"}, {"status", "STOPPED"},
                         {"exitCode", 7}, {"reason", "done"}};
  EXPECT_EQ(Agent("SubmitContainerStateChange", container)["acknowledgment"].as_string(), "ACK");
  t = Describe(arn);
  EXPECT_EQ(t["lastStatus"].as_string(), "RUNNING");  // a container report leaves the task where it is
  EXPECT_EQ(t["containers"].as_array()[0].as_object()["exitCode"].as_int64(), 7);

  container["status"] = "EXPLODED";
  auto bad = as_agent.Call(std::string(kEcs) + "SubmitContainerStateChange", container);
  EXPECT_EQ(ecs::api::AnswerFor(bad.status()).type, "InvalidParameterException");

  json::object endpoint = Agent("DiscoverPollEndpoint", {{"cluster", "ec2"}});
  EXPECT_EQ(endpoint["endpoint"].as_string(), "http://127.0.0.1:" + std::to_string(options_.port));

  // Its own task is the agent's to describe (the metadata endpoint); another instance's is MISSING.
  const std::string elsewhere = StartTask(other_arn_);
  json::object d = Agent("DescribeTasks", {{"cluster", "ec2"}, {"tasks", json::array{json::string(arn), json::string(elsewhere)}}});
  ASSERT_EQ(d["tasks"].as_array().size(), 1u);
  EXPECT_EQ(d["tasks"].as_array()[0].as_object()["taskArn"].as_string(), arn);
  EXPECT_EQ(d["failures"].as_array()[0].as_object()["reason"].as_string(), "MISSING");
}

// Finding 8 (docs/agent-protocol.md, "Identity"): an account's own key cannot report for its
// tasks, poll an instance's assignments, or re-register an agent's instance; an agent's
// credential is good for nothing but its own instance, and deregistering the instance revokes it.
// Several servers (issue 16 §2): a client whose endpoint refuses the connection fails that call
// (it may not be sent twice) and sends the next one to the next endpoint, where it is answered; an
// endpoint that answers, even with an error, is kept.
TEST_F(RemoteAgentTest, AClientTurnsToTheNextEndpointAfterACallFailsInTransport) {
  // A port nobody listens on: bound, then closed.
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const uint16_t dead_port = ntohs(addr.sin_port);
  ::close(fd);

  agent::remote::ClientOptions options = agent_;
  options.alternates = {{options.host, options.port}};
  options.port = dead_port;
  JsonClient as_agent(options);
  const json::object poll{{"cluster", "ec2"}, {"containerInstance", instance_arn_}, {"waitSeconds", 0}};
  const std::string target = std::string(agent::remote::kAgentTargetPrefix) + ".PollAssignments";
  auto first = as_agent.Call(target, poll);
  EXPECT_EQ(first.status().code(), StatusCode::kUnavailable) << first.status().ToString();
  auto second = as_agent.Call(target, poll);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(as_agent.options().port, served_->port());
  // An error answer is no reason to move: the endpoint stays.
  auto refused = as_agent.Call(target, {{"cluster", "ec2"}, {"containerInstance", other_arn_}});
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(as_agent.options().port, served_->port());
}

TEST_F(RemoteAgentTest, OnlyTheInstancesOwnCredentialSpeaksForItsAgent) {
  const std::string arn = StartTask(instance_arn_);
  const std::string agent_target = std::string(agent::remote::kAgentTargetPrefix);
  json::object stopped{{"cluster", "ec2"}, {"containerInstance", instance_arn_}, {"task", arn}, {"status", "STOPPED"},
                       {"reason", "faked by a tenant key"}};
  for (const auto& [target, body] :
       std::vector<std::pair<std::string, json::object>>{
           {agent_target + ".ReportTaskState", stopped},
           {agent_target + ".PollAssignments", {{"cluster", "ec2"}, {"containerInstance", instance_arn_}}},
           {std::string(kEcs) + "SubmitTaskStateChange", {{"cluster", "ec2"}, {"task", arn}, {"status", "STOPPED"}}},
           {std::string(kEcs) + "SubmitContainerStateChange",
            {{"cluster", "ec2"}, {"task", arn}, {"containerName", "web"}, {"status", "STOPPED"}}},
           {agent_target + ".RegisterAgent", {{"cluster", "ec2"}, {"containerInstanceArn", instance_arn_}}},
           {std::string(kEcs) + "RegisterContainerInstance", {{"cluster", "ec2"}, {"containerInstanceArn", instance_arn_}}},
       }) {
    auto denied = client_->Call(target, body);  // the account's own key
    EXPECT_EQ(ecs::api::AnswerFor(denied.status()).type, "AccessDeniedException") << target << ": " << denied.status().ToString();
  }
  // Another instance's agent credential is no better.
  JsonClient other(other_agent_);
  EXPECT_EQ(ecs::api::AnswerFor(other.Call(agent_target + ".ReportTaskState", stopped).status()).type, "AccessDeniedException");
  EXPECT_EQ(ecs::api::AnswerFor(other.Call(std::string(kEcs) + "SubmitTaskStateChange",
                                           {{"cluster", "ec2"}, {"task", arn}, {"status", "STOPPED"}})
                                     .status())
                .type,
            "AccessDeniedException");
  EXPECT_EQ(Describe(arn)["lastStatus"].as_string(), "PROVISIONING");

  // The agent's credential does nothing but the agent's calls.
  JsonClient as_agent(agent_);
  EXPECT_EQ(ecs::api::AnswerFor(as_agent.Call(std::string(kEcs) + "ListClusters", {}).status()).type, "AccessDeniedException");
  EXPECT_EQ(ecs::api::AnswerFor(as_agent.Call(std::string(kEcs) + "StopTask", {{"cluster", "ec2"}, {"task", arn}}).status()).type,
            "AccessDeniedException");
  EXPECT_EQ(ecs::api::AnswerFor(as_agent.Call(std::string(kEcs) + "RegisterContainerInstance", {{"cluster", "ec2"}}).status()).type,
            "AccessDeniedException");  // no new instances
  // ...and re-registers its own instance, keeping its credential.
  auto again = as_agent.Call(agent_target + ".RegisterAgent",
                             agent::remote::RegistrationRequest("ec2", {2048, 2048, ""}, {"22"}, instance_arn_));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(again->as_object().contains("credentials"));
  EXPECT_TRUE(as_agent.Call(agent_target + ".ReportTaskState",
                            {{"cluster", "ec2"}, {"containerInstance", instance_arn_}, {"task", arn}, {"status", "PENDING"}})
                  .ok());

  // Deregistering the instance revokes its credential at once.
  Ecs("DeregisterContainerInstance", {{"cluster", "ec2"}, {"containerInstance", instance_arn_}, {"force", true}});
  auto revoked = as_agent.Call(agent_target + ".PollAssignments", {{"cluster", "ec2"}, {"containerInstance", instance_arn_}});
  EXPECT_EQ(ecs::api::AnswerFor(revoked.status()).type, "UnrecognizedClientException") << revoked.status().ToString();
}

// Issue 16 §3: RegisterAgent's overlayAddress — an address other hosts can send to, or refused in
// ECS's words with nothing registered.
TEST_F(RemoteAgentTest, RegisterAgentTakesOnlyAnOverlayAddressOtherHostsCanReach) {
  const std::string agent_target = "PaddockAgentV20261130";
  JsonClient as_agent(agent_);
  for (const char* bad : {"127.0.0.1", "0.0.0.0", "169.254.1.1", "224.0.0.1", "255.255.255.255", "10.1.2", "h.lan"}) {
    json::object request = agent::remote::RegistrationRequest("ec2", {2048, 2048, ""}, {"22"}, instance_arn_);
    request["overlayAddress"] = bad;
    auto refused = as_agent.Call(agent_target + ".RegisterAgent", request);
    EXPECT_EQ(ecs::api::AnswerFor(refused.status()).type, "InvalidParameterException") << bad;
  }
  json::object request = agent::remote::RegistrationRequest("ec2", {2048, 2048, "", "10.1.2.3"}, {"22"}, instance_arn_);
  EXPECT_EQ(request["overlayAddress"], "10.1.2.3");
  EXPECT_TRUE(as_agent.Call(agent_target + ".RegisterAgent", request).ok());
}

// The agent service's table: InProcessControl's details in ECS's words (the answers
// AnInstanceGetsRoleCredentialsOnlyForItsOwnLiveTasks reads back), then ECS's table.
// Fencing (docs/agent-protocol.md): every answered poll carries the control plane's fence time;
// once that long has passed since the agent sent its last answered poll, its assignments read as
// none (so it stops its tasks' containers) until a poll sent since is answered again.
class FencedAgentTest : public RemoteAgentTest {
 protected:
  ServerConfig Config() override {
    ServerConfig config = RemoteAgentTest::Config();
    config.agent_timeout_seconds = 3;  // long-polls wait at most 1 s
    config.host_lost_seconds = 6;      // fence time (6 - 3/4) / 2 = 2.625 s
    return config;
  }
};

TEST_F(FencedAgentTest, AnAgentUnheardForItsFenceTimeHasNothingAssignedUntilAPollIsAnsweredAgain) {
  StartTask(instance_arn_);
  std::mutex mu;
  std::condition_variable cv;
  std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now();  // GUARDED_BY(mu)
  int wakes = 0;                                                                  // GUARDED_BY(mu)
  agent::remote::RemoteOptions options;
  options.steady_now = [&] {
    std::lock_guard lock(mu);
    return now;
  };
  RemoteControl control(agent_, "ec2", instance_arn_, options);
  StartWatched(control, mu, cv, wakes);
  auto specs = control.Assignments(instance_arn_);
  ASSERT_TRUE(specs.ok());
  ASSERT_EQ(specs->size(), 1u);
  EXPECT_FALSE(control.Fenced());

  {
    std::lock_guard lock(mu);
    now += milliseconds(2600);  // not yet: 2.625 s
  }
  EXPECT_FALSE(control.Fenced());
  {
    std::lock_guard lock(mu);
    now += milliseconds(100);  // past it, with no poll sent since answered
  }
  EXPECT_TRUE(control.Fenced());
  specs = control.Assignments(instance_arn_);
  ASSERT_TRUE(specs.ok());
  EXPECT_TRUE(specs->empty()) << "a fenced agent keeps nothing running";

  // The control plane answers again (a poll sent after the time moved): its assignments stand, and
  // the agent is woken to act on them.
  int seen = 0;
  {
    std::lock_guard lock(mu);
    seen = wakes;
  }
  StartTask(instance_arn_);
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  for (;;) {
    auto listed = control.Assignments(instance_arn_);
    ASSERT_TRUE(listed.ok());
    if (listed->size() == 2u) break;
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_until(lock, deadline, [&] { return wakes > seen; })) << "the assignments never stood again";
    seen = wakes;
  }
  EXPECT_FALSE(control.Fenced());
  control.Stop();
}

TEST(AgentServiceErrorsTest, TheControlsRefusalsAreAnsweredInEcsWords) {
  paddock::testing::TempStore store;
  ecs::taskdef::TaskDefinitions tds(*store);
  ecs::cluster::Clusters clusters(*store);
  ecs::task::Tasks tasks(*store, tds, clusters, "fargate-local");
  ecs::instance::ContainerInstances instances(*store, clusters);
  agent::InProcessControl control(tasks, nullptr);
  agent::remote::AgentService service(control, instances);
  auto answer = [&](const Status& s) { return service.ErrorFor(s); };
  ASSERT_TRUE(answer(PermissionDenied("x", agent::Error::kTaskNotAssigned)).has_value());
  EXPECT_EQ(answer(PermissionDenied("x", agent::Error::kTaskNotAssigned))->type, "AccessDeniedException");
  EXPECT_EQ(answer(InvalidArgument("x", agent::Error::kNoTaskRole))->type, "ClientException");
  EXPECT_EQ(answer(InvalidArgument("x", agent::Error::kNoTaskRole))->http_status, 400);
  EXPECT_EQ(answer(NotFound("x", ecs::Error::kClusterNotFound))->type, "ClusterNotFoundException");
  EXPECT_EQ(answer(NotFound("x")), std::nullopt);  // the front's default
}

}  // namespace
}  // namespace paddock::cli
