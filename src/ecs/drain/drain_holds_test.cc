// DrainHolds (drain_holds.h), the specification of the drain before stop: an edge's heartbeat
// replaces its holds; an edge of one account can neither hold, release nor see another's task;
// every bound is refused past its limit; and the agent's wait ends at once with no hold, on
// release, at the longest drainTimeout since its first ask (a repeated ask does not extend it), or
// when every lease lapsed. A real store, a FakeClock and a fake task lookup; Await's waits are
// woken by Put, Release, Wake and stop requests, never by time passing in the test.
#include "ecs/drain/drain_holds.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <thread>

#include "common/testing/fake_clock.h"
#include "ecs/cluster/clusters.h"
#include "ecs/drain/errors.h"
#include "ecs/drain/task_lookup.h"
#include "ecs/task/tasks.h"
#include "ecs/taskdef/taskdefs.h"
#include "ecs/testing/temp_store.h"
#include "vpc/default_vpc.h"

namespace paddock::ecs::drain {
namespace {
using std::chrono::seconds;

const Scope kA{AccountId("111111111111"), Region("us-east-1")};
const Scope kB{AccountId("222222222222"), Region("us-east-1")};
constexpr std::string_view kAgent = "fargate-local";

std::string Arn(const Scope& s, std::string_view id, std::string_view cluster = "default") {
  return fmt::format("arn:aws:ecs:{}:{}:task/{}/{}", s.region.str(), s.account.str(), cluster, id);
}

// Tasks by ARN: their agent and whether it reported them STOPPED.
class FakeTasks final : public TaskLookup {
 public:
  struct Task {
    std::string agent = std::string(kAgent);
    bool stopped = false;
  };
  std::map<std::string, Task> tasks;

  StatusOr<std::vector<bool>> NotStopped(store::ReadTxn&, const Scope& scope, const std::vector<TaskRef>& refs) override {
    std::vector<bool> out;
    for (const TaskRef& r : refs) {
      auto it = tasks.find(Arn(scope, r.id, r.cluster));
      out.push_back(it != tasks.end() && !it->second.stopped);
    }
    return out;
  }
  StatusOr<bool> AssignedAndNotStopped(std::string_view agent_id, std::string_view task_arn) override {
    auto it = tasks.find(std::string(task_arn));
    return it != tasks.end() && it->second.agent == agent_id && !it->second.stopped;
  }
};

class DrainHoldsTest : public ::testing::Test {
 protected:
  DrainHoldsTest() {
    for (const char* id : {"t1", "t2", "t3"}) {
      lookup_.tasks[Arn(kA, id)] = {};
      lookup_.tasks[Arn(kB, id)] = {};
    }
  }

  StatusOr<PutResult> Put(const Scope& s, std::string_view edge, std::vector<Hold> holds, seconds lease = seconds(15)) {
    return holds_.Put(s, EdgeId(std::string(edge)), holds, lease, clock_.Now());
  }
  // The edges holding `arn` now (in kA unless said).
  std::vector<std::string> Holders(const std::string& arn, const Scope& s = kA) {
    auto h = holds_.Holds(s, arn, clock_.Now());
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    std::vector<std::string> out;
    if (h.ok())
      for (const HoldView& v : *h) out.push_back(v.edge.str());
    return out;
  }
  DrainAnswer Check(const std::string& arn) {
    auto a = holds_.Check(kAgent, arn, clock_.Now());
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() ? *a : DrainAnswer{};
  }
  // Spins until `done` (10 s at most): for a waiter to have asked once.
  static bool WaitUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(10);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    return true;
  }

  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  FakeTasks lookup_;
  DrainHolds holds_{*store_, lookup_, clock_};
};

TEST_F(DrainHoldsTest, AHeartbeatReplacesTheEdgesHoldsAndIsIdempotent) {
  auto r = Put(kA, "edge-1", {{Arn(kA, "t1"), seconds(30)}, {Arn(kA, "t2"), seconds(30)}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->held, 2u);
  EXPECT_EQ(Holders(Arn(kA, "t1")), std::vector<std::string>{"edge-1"});
  ASSERT_TRUE(Put(kA, "edge-2", {{Arn(kA, "t1"), seconds(5)}}).ok());
  EXPECT_EQ(Holders(Arn(kA, "t1")), (std::vector<std::string>{"edge-1", "edge-2"}));

  // edge-1's next heartbeat no longer names t1: its hold on t1 is gone, edge-2's stays.
  r = Put(kA, "edge-1", {{Arn(kA, "t2"), seconds(30)}, {Arn(kA, "t3"), seconds(30)}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->held, 2u);
  EXPECT_EQ(Holders(Arn(kA, "t1")), std::vector<std::string>{"edge-2"});
  EXPECT_EQ(Holders(Arn(kA, "t2")), std::vector<std::string>{"edge-1"});
  EXPECT_EQ(Holders(Arn(kA, "t3")), std::vector<std::string>{"edge-1"});

  // The same heartbeat again changes nothing but the lease; a task named twice keeps its longest timeout.
  ASSERT_TRUE(Put(kA, "edge-1", {{Arn(kA, "t2"), seconds(30)}, {Arn(kA, "t3"), seconds(30)}}).ok());
  ASSERT_TRUE(Put(kA, "edge-1", {{Arn(kA, "t2"), seconds(30)}, {Arn(kA, "t3"), seconds(7)}, {Arn(kA, "t3"), seconds(9)}}).ok());
  auto h = holds_.Holds(kA, Arn(kA, "t3"), clock_.Now());
  ASSERT_TRUE(h.ok() && h->size() == 1);
  EXPECT_EQ((*h)[0].drain_timeout, seconds(9));
  EXPECT_EQ((*h)[0].lease_until, clock_.Now() + seconds(15));

  // An empty heartbeat releases everything the edge held.
  ASSERT_TRUE(Put(kA, "edge-1", {}).ok());
  EXPECT_TRUE(Holders(Arn(kA, "t2")).empty());
  EXPECT_TRUE(Holders(Arn(kA, "t3")).empty());
}

TEST_F(DrainHoldsTest, StoppedAndUnknownTasksAreNotHeldAndAStoppedTasksHoldGoesAtTheNextHeartbeat) {
  lookup_.tasks[Arn(kA, "t2")].stopped = true;
  auto r = Put(kA, "edge-1", {{Arn(kA, "t1"), seconds(30)}, {Arn(kA, "t2"), seconds(30)}, {Arn(kA, "nope"), seconds(30)}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->held, 1u);
  EXPECT_EQ(r->ignored, (std::vector<std::string>{Arn(kA, "nope"), Arn(kA, "t2")}));
  EXPECT_TRUE(Holders(Arn(kA, "t2")).empty());

  // t1 stops; the edge, not yet aware, names it again: the hold is dropped (lazily, by this Put).
  lookup_.tasks[Arn(kA, "t1")].stopped = true;
  r = Put(kA, "edge-1", {{Arn(kA, "t1"), seconds(30)}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->held, 0u);
  EXPECT_TRUE(Holders(Arn(kA, "t1")).empty());
}

TEST_F(DrainHoldsTest, AnEdgeOfAnotherAccountCanNeitherHoldReleaseNorSeeATask) {
  ASSERT_TRUE(Put(kA, "edge-1", {{Arn(kA, "t1"), seconds(30)}}).ok());
  ASSERT_TRUE(Put(kB, "edge-b", {{Arn(kB, "t1"), seconds(30)}}).ok());

  // Hold: refused, and nothing of the call is written (B's own hold in it included).
  auto r = Put(kB, "edge-b", {{Arn(kB, "t2"), seconds(30)}, {Arn(kA, "t2"), seconds(30)}});
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(Holders(Arn(kA, "t2")).empty());
  EXPECT_TRUE(Holders(Arn(kB, "t2"), kB).empty());
  EXPECT_EQ(Holders(Arn(kB, "t1"), kB), std::vector<std::string>{"edge-b"});  // its earlier heartbeat stands

  // Release and see: refused; A's hold stays.
  EXPECT_EQ(holds_.Release(kB, EdgeId("edge-1"), Arn(kA, "t1")).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(holds_.Holds(kB, Arn(kA, "t1"), clock_.Now()).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(Holders(Arn(kA, "t1")), std::vector<std::string>{"edge-1"});

  // The same edge name in B is another edge: its heartbeat does not replace A's edge's holds.
  ASSERT_TRUE(Put(kB, "edge-1", {}).ok());
  EXPECT_EQ(Holders(Arn(kA, "t1")), std::vector<std::string>{"edge-1"});

  // Another region of the same account is refused as a bad argument.
  const Scope west{kA.account, Region("us-west-2")};
  EXPECT_EQ(Put(west, "edge-1", {{Arn(kA, "t1"), seconds(30)}}).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(DrainHoldsTest, EveryBoundIsRefusedPastItsLimitAndNothingIsWritten) {
  const std::string t1 = Arn(kA, "t1");
  auto code = [&](std::string_view edge, std::vector<Hold> holds, seconds lease = seconds(15)) {
    return Put(kA, edge, std::move(holds), lease).status().code();
  };
  EXPECT_EQ(code("", {}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(std::string(65, 'e'), {}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("edge/1", {}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("edge 1", {}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(std::string(64, 'e'), {}), StatusCode::kOk);
  EXPECT_EQ(code("Edge_1.a-b", {}), StatusCode::kOk);

  EXPECT_EQ(code("e", {{t1, seconds(-1)}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("e", {{t1, seconds(3601)}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("e", {{t1, seconds(30)}}, seconds(0)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("e", {{t1, seconds(30)}}, seconds(301)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("e", {{"arn:aws:ecs:us-east-1:111111111111:service/default/web", seconds(30)}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("e", {{"arn:aws:ecs:us-east-1:111111111111:task/t1", seconds(30)}}),  // the short form: no cluster
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("e", {{"t1", seconds(30)}}), StatusCode::kInvalidArgument);
  std::vector<Hold> many(kMaxHoldsPerPut + 1, Hold{t1, seconds(30)});
  EXPECT_EQ(code("e", many), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Holders(t1).empty());

  many.pop_back();  // exactly the bound
  EXPECT_EQ(code("e", many), StatusCode::kOk);
  EXPECT_EQ(code("e", {{t1, seconds(0)}, {Arn(kA, "t2"), seconds(3600)}}, seconds(300)), StatusCode::kOk);
  EXPECT_EQ(code("e", {{t1, seconds(30)}}, seconds(1)), StatusCode::kOk);
}

TEST_F(DrainHoldsTest, AScopeHasABoundedNumberOfLiveEdges) {
  for (size_t i = 0; i < kMaxEdgesPerScope; ++i) ASSERT_TRUE(Put(kA, fmt::format("edge-{}", i), {}).ok()) << i;
  const Status refused = Put(kA, "one-more", {}).status();
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(refused.detail().Is(Error::kTooManyEdges)) << refused.ToString();  // LimitExceededException
  EXPECT_TRUE(Put(kA, "edge-0", {}).ok());  // a live edge renews
  EXPECT_TRUE(Put(kB, "one-more", {}).ok());  // another scope is not counted
  clock_.Advance(seconds(15));  // every lease lapsed
  EXPECT_TRUE(Put(kA, "one-more", {}).ok());
}

TEST_F(DrainHoldsTest, ATaskWithoutHoldsIsNotWaitedFor) {
  DrainAnswer a = Check(Arn(kA, "t1"));
  EXPECT_EQ(a.verdict, DrainVerdict::kNoHolds);
  EXPECT_TRUE(a.go());
  EXPECT_EQ(holds_.remembered(), 0u);  // an unheld task costs no memory
}

TEST_F(DrainHoldsTest, AReleaseEndsTheWaitAtOnce) {
  const std::string t1 = Arn(kA, "t1");
  ASSERT_TRUE(Put(kA, "edge-1", {{t1, seconds(30)}}).ok());
  DrainAnswer a = Check(t1);
  EXPECT_EQ(a.verdict, DrainVerdict::kWait);
  EXPECT_EQ(a.holds, 1);
  EXPECT_EQ(a.deadline, clock_.Now() + seconds(30));
  ASSERT_TRUE(holds_.Release(kA, EdgeId("edge-1"), t1).ok());
  EXPECT_EQ(Check(t1).verdict, DrainVerdict::kReleased);
  EXPECT_TRUE(holds_.Release(kA, EdgeId("edge-1"), t1).ok());  // again: nothing to release, no error
}

TEST_F(DrainHoldsTest, TheLongestDrainTimeoutSinceTheFirstAskEndsTheWaitAndARepeatedAskDoesNotExtendIt) {
  const std::string t1 = Arn(kA, "t1");
  const TimePoint first = clock_.Now();
  ASSERT_TRUE(Put(kA, "edge-1", {{t1, seconds(30)}}, seconds(300)).ok());
  ASSERT_TRUE(Put(kA, "edge-2", {{t1, seconds(10)}}, seconds(300)).ok());
  EXPECT_EQ(Check(t1).deadline, first + seconds(30));
  clock_.Advance(seconds(20));
  // The agent asks again (a remote agent re-polling) and the edges heartbeat: the bound stays.
  ASSERT_TRUE(Put(kA, "edge-1", {{t1, seconds(30)}}, seconds(300)).ok());
  DrainAnswer a = Check(t1);
  EXPECT_EQ(a.verdict, DrainVerdict::kWait);
  EXPECT_EQ(a.deadline, first + seconds(30));
  clock_.Advance(seconds(9));
  EXPECT_EQ(Check(t1).verdict, DrainVerdict::kWait);
  clock_.Advance(seconds(1));
  a = Check(t1);
  EXPECT_EQ(a.verdict, DrainVerdict::kTimedOut);
  EXPECT_EQ(a.holds, 2);
}

TEST_F(DrainHoldsTest, TheBoundIsTheLongestTimeoutOfTheHoldsStillLive) {
  const std::string t1 = Arn(kA, "t1");
  const TimePoint first = clock_.Now();
  ASSERT_TRUE(Put(kA, "edge-1", {{t1, seconds(60)}}, seconds(300)).ok());
  ASSERT_TRUE(Put(kA, "edge-2", {{t1, seconds(10)}}, seconds(300)).ok());
  EXPECT_EQ(Check(t1).deadline, first + seconds(60));
  ASSERT_TRUE(holds_.Release(kA, EdgeId("edge-1"), t1).ok());
  EXPECT_EQ(Check(t1).deadline, first + seconds(10));
  clock_.Advance(seconds(10));
  EXPECT_EQ(Check(t1).verdict, DrainVerdict::kTimedOut);
}

TEST_F(DrainHoldsTest, WhenEveryLeaseLapsedTheWaitEnds) {
  const std::string t1 = Arn(kA, "t1");
  ASSERT_TRUE(Put(kA, "edge-1", {{t1, seconds(3600)}}, seconds(15)).ok());
  ASSERT_TRUE(Put(kA, "edge-2", {{t1, seconds(3600)}}, seconds(20)).ok());
  EXPECT_EQ(Check(t1).verdict, DrainVerdict::kWait);
  clock_.Advance(seconds(15));
  EXPECT_EQ(Check(t1).verdict, DrainVerdict::kWait);  // edge-2's lease is still live
  clock_.Advance(seconds(5));
  DrainAnswer a = Check(t1);
  EXPECT_EQ(a.verdict, DrainVerdict::kLeasesExpired);
  EXPECT_EQ(a.holds, 0);
}

TEST_F(DrainHoldsTest, OnlyTheTasksOwnAgentMayAskAndNotOnceItIsStopped) {
  const std::string t1 = Arn(kA, "t1");
  ASSERT_TRUE(Put(kA, "edge-1", {{t1, seconds(30)}}).ok());
  EXPECT_EQ(holds_.Check("arn:aws:ecs:us-east-1:111111111111:container-instance/default/x", t1, clock_.Now()).status().code(),
            StatusCode::kPermissionDenied);
  lookup_.tasks[t1].stopped = true;
  EXPECT_EQ(holds_.Check(kAgent, t1, clock_.Now()).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(holds_.remembered(), 0u);
}

TEST_F(DrainHoldsTest, AwaitIsWokenByTheReleaseNotByPolling) {
  const std::string t1 = Arn(kA, "t1");
  ASSERT_TRUE(Put(kA, "edge-1", {{t1, seconds(30)}}).ok());
  auto waited = std::async(std::launch::async, [&] { return holds_.Await(kAgent, t1, std::chrono::minutes(10)); });
  ASSERT_TRUE(WaitUntil([&] { return holds_.remembered() == 1; }));  // it asked and found the hold
  EXPECT_EQ(waited.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  ASSERT_TRUE(holds_.Release(kA, EdgeId("edge-1"), t1).ok());
  auto a = waited.get();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->verdict, DrainVerdict::kReleased);
}

TEST_F(DrainHoldsTest, AwaitEndsAtTheBoundOnTheClock) {
  const std::string t1 = Arn(kA, "t1");
  ASSERT_TRUE(Put(kA, "edge-1", {{t1, seconds(30)}}, seconds(300)).ok());
  auto waited = std::async(std::launch::async, [&] { return holds_.Await(kAgent, t1, std::chrono::minutes(10)); });
  ASSERT_TRUE(WaitUntil([&] { return holds_.remembered() == 1; }));
  clock_.Advance(seconds(30));
  holds_.Wake();  // the fake clock jumped: the waiter's timer is real time
  auto a = waited.get();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->verdict, DrainVerdict::kTimedOut);
}

TEST_F(DrainHoldsTest, AwaitAnswersWaitAfterMaxWaitAndEndsOnAStopRequestOrShutdown) {
  const std::string t1 = Arn(kA, "t1");
  ASSERT_TRUE(Put(kA, "edge-1", {{t1, seconds(30)}}).ok());
  auto a = holds_.Await(kAgent, t1, std::chrono::milliseconds(1));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->verdict, DrainVerdict::kWait);

  std::stop_source stop;
  auto waited = std::async(std::launch::async,
                           [&] { return holds_.Await(kAgent, t1, std::chrono::minutes(10), stop.get_token()); });
  EXPECT_EQ(waited.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  stop.request_stop();
  EXPECT_EQ(waited.get().status().code(), StatusCode::kAborted);

  waited = std::async(std::launch::async, [&] { return holds_.Await(kAgent, t1, std::chrono::minutes(10)); });
  holds_.Shutdown();
  EXPECT_EQ(waited.get().status().code(), StatusCode::kUnavailable);
}

TEST_F(DrainHoldsTest, LapsedEdgesAreReapedWithTheirHoldsAndAnAccountsHoldsGoWithIt) {
  ASSERT_TRUE(Put(kA, "short", {{Arn(kA, "t1"), seconds(30)}}, seconds(15)).ok());
  ASSERT_TRUE(Put(kA, "long", {{Arn(kA, "t1"), seconds(30)}}, seconds(60)).ok());
  ASSERT_TRUE(Put(kB, "short", {{Arn(kB, "t1"), seconds(30)}}, seconds(15)).ok());
  clock_.Advance(seconds(15));
  auto reaped = holds_.ReapExpired(clock_.Now());
  ASSERT_TRUE(reaped.ok()) << reaped.status().ToString();
  EXPECT_EQ(*reaped, 2u);
  EXPECT_EQ(Holders(Arn(kA, "t1")), std::vector<std::string>{"long"});
  EXPECT_TRUE(Holders(Arn(kB, "t1"), kB).empty());

  // A renewed lease is not reaped by its old expiry.
  ASSERT_TRUE(Put(kA, "long", {{Arn(kA, "t1"), seconds(30)}}, seconds(300)).ok());
  clock_.Advance(seconds(60));
  EXPECT_EQ(*holds_.ReapExpired(clock_.Now()), 0u);
  EXPECT_EQ(Holders(Arn(kA, "t1")), std::vector<std::string>{"long"});

  ASSERT_TRUE(Put(kB, "b", {{Arn(kB, "t2"), seconds(30)}}).ok());
  ASSERT_TRUE(holds_.ReapAccount(kA.account).ok());
  EXPECT_TRUE(Holders(Arn(kA, "t1")).empty());
  EXPECT_EQ(Holders(Arn(kB, "t2"), kB), std::vector<std::string>{"b"});
  clock_.Advance(seconds(300));
  EXPECT_EQ(*holds_.ReapExpired(clock_.Now()), 1u);  // B's edge; A's expiry row finds no edge
}

// The lookup over a real task owner: a task is held until its agent reports it STOPPED.
TEST(TasksLookupTest, ATaskIsLiveUntilItsAgentReportsItStopped) {
  paddock::testing::TempStore store;
  paddock::testing::FakeClock clock;
  taskdef::TaskDefinitions tds(*store);
  cluster::Clusters clusters(*store);
  task::Tasks tasks(*store, tds, clusters, std::string(kAgent));
  ASSERT_TRUE(clusters.Create(kA, boost::json::parse(R"({"clusterName":"default"})").as_object()).ok());
  auto def = boost::json::parse(
                 R"({"family":"web","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],"cpu":"256",)"
                 R"("memory":"512","containerDefinitions":[{"name":"app","image":"busybox"}]})")
                 .as_object();
  const std::string caller = "arn:aws:iam::111111111111:root";
  ASSERT_TRUE(tds.Register(kA, caller, std::move(def), clock.Now()).ok());
  task::RunRequest run;
  run.task_definition = "web";
  run.launch_type = "FARGATE";
  run.network_configuration = boost::json::object{
      {"awsvpcConfiguration",
       boost::json::object{{"subnets", boost::json::array{boost::json::string(vpc::DefaultVpcFor(kA).subnets[0].id)}}}}};
  auto ran = tasks.Run(kA, caller, run, clock.Now());
  ASSERT_TRUE(ran.ok() && ran->tasks.size() == 1) << ran.status().ToString();
  const std::string arn(boost::json::parse(ran->tasks[0]).as_object().at("taskArn").as_string());

  TasksLookup lookup(tasks);
  DrainHolds holds(*store, lookup, clock);
  auto put = holds.Put(kA, EdgeId("e"), {{arn, seconds(30)}, {Arn(kA, std::string(32, 'a')), seconds(30)}}, seconds(15),
                       clock.Now());
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(put->held, 1u);  // the unknown task is ignored
  EXPECT_EQ(put->ignored, std::vector<std::string>{Arn(kA, std::string(32, 'a'))});
  auto assigned = [&](std::string_view agent) {
    StatusOr<bool> b = lookup.AssignedAndNotStopped(agent, arn);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() && *b;
  };
  auto report = [&](std::string_view status) {
    task::TaskStateChange change;
    change.last_status = std::string(status);
    return tasks.ReportState(kAgent, arn, change, clock.Now());
  };
  EXPECT_TRUE(assigned(kAgent));
  EXPECT_FALSE(assigned("someone-else"));

  // StopTask: desiredStatus STOPPED, the agent drains it in DEACTIVATING: still held.
  ASSERT_TRUE(tasks.Stop(kA, std::nullopt, arn, std::nullopt, caller, clock.Now()).ok());
  ASSERT_TRUE(report("DEACTIVATING").ok());
  EXPECT_EQ(holds.Put(kA, EdgeId("e"), {{arn, seconds(30)}}, seconds(15), clock.Now())->held, 1u);
  EXPECT_EQ(holds.Check(kAgent, arn, clock.Now())->verdict, DrainVerdict::kWait);

  ASSERT_TRUE(report("STOPPED").ok());
  EXPECT_EQ(holds.Put(kA, EdgeId("e"), {{arn, seconds(30)}}, seconds(15), clock.Now())->held, 0u);
  EXPECT_FALSE(assigned(kAgent));
}

}  // namespace
}  // namespace paddock::ecs::drain
