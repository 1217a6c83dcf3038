// The node's Fargate capacity and the accounts' vCPU quota, through Tasks (docs/contracts/task.md,
// "Fargate capacity"): what RunTask admits and refuses, and that every path by which a task stops
// gives its reservation back exactly once.
#include "ecs/task/fargate_capacity.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "common/testing/fake_clock.h"
#include "ecs/task/tasks.h"
#include "ecs/testing/temp_store.h"
#include "store/sqlite/sqlite_store.h"
#include "vpc/default_vpc.h"
#include "vpc/ipam.h"
#include "cli/schemas.h"

namespace paddock::ecs::task {
namespace {
namespace json = boost::json;

const Scope kA{AccountId("123456789012"), Region("us-east-1")};
const Scope kAWest{AccountId("123456789012"), Region("us-west-2")};
const Scope kB{AccountId("210987654321"), Region("us-east-1")};
constexpr std::string_view kAgent = "fargate-local";

std::string CallerOf(const Scope& s) { return fmt::format("arn:aws:iam::{}:root", s.account.str()); }

json::object Def(std::string_view family, std::string_view cpu, std::string_view memory) {
  return json::parse(fmt::format(R"({{"family":"{}","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],)"
                                 R"("cpu":"{}","memory":"{}","containerDefinitions":[{{"name":"app","image":"nginx"}}]}})",
                                 family, cpu, memory))
      .as_object();
}

// A Tasks over a store that can be closed and opened again (a restart), with the node's Fargate
// capacity set to `limits`.
class FargateCapacityTest : public ::testing::Test {
 protected:
  explicit FargateCapacityTest(FargateLimits limits = {.cpu = 1024, .memory = 2048, .vcpus_per_account = 4000})
      : limits_(limits) {
    dir_ = tmp_.dir() + "/node";
    std::filesystem::create_directories(dir_);
    Open();
    for (const Scope& s : {kA, kAWest, kB}) {
      EXPECT_TRUE(node_->clusters.Create(s, json::parse(R"({"clusterName":"default"})").as_object()).ok());
      EXPECT_TRUE(node_->tds.Register(s, CallerOf(s), Def("small", "256", "512"), clock_.Now()).ok());
      EXPECT_TRUE(node_->tds.Register(s, CallerOf(s), Def("big", "4096", "8192"), clock_.Now()).ok());
      EXPECT_TRUE(node_->tds.Register(s, CallerOf(s), Def("wide", "1024", "2048"), clock_.Now()).ok());
    }
  }

  // Everything a node builds on its store: a restart is Close() then Open().
  struct Node {
    explicit Node(store::Store& s, FargateLimits limits)
        : tds(s), clusters(s), capacity(limits), tasks(s, tds, clusters, std::string(kAgent), nullptr, &capacity) {
      clusters.AddUsage(tasks.cluster_usage());
    }
    taskdef::TaskDefinitions tds;
    cluster::Clusters clusters;
    FargateCapacity capacity;
    Tasks tasks;
  };

  void Open() {
    store::SqliteOptions options;
    options.path = dir_ + "/state.db";
    options.durable = false;
    options.schemas = cli::NodeSchemas();
    auto s = store::SqliteStore::Open(options);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    node_ = std::make_unique<Node>(*store_, limits_);
  }
  void Close() {
    node_.reset();
    store_->Close();
    store_.reset();
  }

  RunRequest Req(const Scope& s, std::string td, int64_t count = 1) {
    RunRequest r;
    r.task_definition = std::move(td);
    r.count = count;
    r.launch_type = "FARGATE";
    r.network_configuration =
        json::object{{"awsvpcConfiguration", json::object{{"subnets", json::array{json::string(
                                                                          vpc::DefaultVpcFor(s).subnets[0].id)}}}}};
    return r;
  }

  RunResult Run(const Scope& s, const RunRequest& r) {
    auto res = node_->tasks.Run(s, CallerOf(s), r, clock_.Now());
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    return res.ok() ? *res : RunResult{};
  }

  std::vector<std::string> Arns(const RunResult& r) {
    std::vector<std::string> out;
    for (const auto& t : r.tasks) out.emplace_back(json::parse(t).at("taskArn").as_string());
    return out;
  }

  Status Report(const std::string& arn, std::string status) {
    TaskStateChange c;
    c.last_status = std::move(status);
    return node_->tasks.ReportState(kAgent, arn, c, clock_.Now());
  }

  FargateUsage NodeUsage() {
    FargateUsage u;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(u, node_->capacity.NodeUsage(txn));
      return OkStatus();
    }).ok());
    return u;
  }
  int64_t AccountCpu(const Scope& s) {
    int64_t cpu = -1;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(cpu, node_->capacity.AccountCpu(txn, s.account));
      return OkStatus();
    }).ok());
    return cpu;
  }
  size_t Rows(std::string_view table) {
    size_t n = 0;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(table, store::Range{"", ""}, 100000));
      n = rows.size();
      return OkStatus();
    }).ok());
    return n;
  }
  // The node and every account are back to nothing reserved, and no record is left over.
  void ExpectWhole() {
    EXPECT_EQ(NodeUsage(), FargateUsage{});
    EXPECT_EQ(AccountCpu(kA), 0);
    EXPECT_EQ(AccountCpu(kB), 0);
    EXPECT_EQ(Rows("fargate_reservations"), 0u);
    EXPECT_EQ(Rows("fargate_node_usage"), 0u);
    EXPECT_EQ(Rows("fargate_account_usage"), 0u);
  }

  paddock::testing::TempStore tmp_;  // only its directory: the node's store is opened below
  std::string dir_;
  FargateLimits limits_;
  paddock::testing::FakeClock clock_;
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<Node> node_;
};

TEST_F(FargateCapacityTest, TheRunThatDoesNotFitGetsEcssFailureAndTheRestOfTheRunStarts) {
  // 1024 CPU units / 2048 MiB: four tasks of 256/512 fit; a run of five places four.
  RunResult r = Run(kA, Req(kA, "small", 5));
  EXPECT_EQ(r.tasks.size(), 4u);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].arn, "") << "ECS names no resource for a Fargate capacity failure";
  EXPECT_EQ(r.failures[0].reason,
            "Capacity is unavailable at this time. Please try again later or in a different availability zone");
  EXPECT_EQ(r.failures[0].detail, "");
  EXPECT_EQ(NodeUsage(), (FargateUsage{1024, 2048}));
  EXPECT_EQ(AccountCpu(kA), 1024);

  // The node is full: nothing more, of any account, until a task stops.
  RunResult more = Run(kB, Req(kB, "small", 1));
  EXPECT_TRUE(more.tasks.empty());
  ASSERT_EQ(more.failures.size(), 1u);
  EXPECT_EQ(more.failures[0].reason, kCapacityUnavailableReason);
  // The refused runs wrote nothing: no task, no address.
  auto listed = node_->tasks.List(kB, ListQuery{}, CallerOf(kB));
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->arns.empty());

  // The finding's run: ten tasks of 4 vCPU / 8 GiB on a 1-vCPU node: every one refused.
  RunResult big = Run(kB, Req(kB, "big", 10));
  EXPECT_TRUE(big.tasks.empty());
  EXPECT_EQ(big.failures.size(), 10u);

  ASSERT_TRUE(Report(Arns(r)[0], "STOPPED").ok());
  EXPECT_EQ(NodeUsage(), (FargateUsage{768, 1536}));
  EXPECT_EQ(Run(kB, Req(kB, "small", 1)).tasks.size(), 1u);
}

TEST_F(FargateCapacityTest, MemoryAloneCanRefuse) {
  // 1024 cpu fits exactly; the memory is the whole node's too, so a second task of any size does not.
  EXPECT_EQ(Run(kA, Req(kA, "wide", 1)).tasks.size(), 1u);
  RunRequest small = Req(kA, "small", 1);
  RunResult r = Run(kA, small);
  EXPECT_TRUE(r.tasks.empty());
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].reason, kCapacityUnavailableReason);
}

TEST_F(FargateCapacityTest, ReservationsFollowTheOverriddenSize) {
  RunRequest r = Req(kA, "small", 1);
  r.overrides = json::parse(R"({"cpu":"512","memory":"1024"})").as_object();
  EXPECT_EQ(Run(kA, r).tasks.size(), 1u);
  EXPECT_EQ(NodeUsage(), (FargateUsage{512, 1024}));
  EXPECT_EQ(AccountCpu(kA), 512);
}

TEST_F(FargateCapacityTest, EveryStopPathReleasesExactlyOnce) {
  // The agent reports each task down, whatever led to it: a StopTask before the agent took it, a
  // task that failed to start, an essential container's exit, a service's scale-in (a Stop with
  // the scheduler's options). Each reaches ReportState(STOPPED) once; late or repeated reports
  // change nothing.
  auto arns = Arns(Run(kA, Req(kA, "small", 4)));
  ASSERT_EQ(arns.size(), 4u);

  // StopTask while still PROVISIONING: nothing is given back until the agent reports STOPPED.
  ASSERT_TRUE(node_->tasks.Stop(kA, std::nullopt, arns[0], std::nullopt, CallerOf(kA), clock_.Now()).ok());
  EXPECT_EQ(NodeUsage(), (FargateUsage{1024, 2048}));
  ASSERT_TRUE(Report(arns[0], "STOPPED").ok());
  EXPECT_EQ(NodeUsage(), (FargateUsage{768, 1536}));

  // A failed start: PENDING then STOPPED.
  ASSERT_TRUE(Report(arns[1], "PENDING").ok());
  TaskStateChange failed;
  failed.last_status = "STOPPED";
  failed.stop_code = "TaskFailedToStart";
  ASSERT_TRUE(node_->tasks.ReportState(kAgent, arns[1], failed, clock_.Now()).ok());
  EXPECT_EQ(NodeUsage(), (FargateUsage{512, 1024}));

  // A running task the service scheduler scales in.
  ASSERT_TRUE(Report(arns[2], "RUNNING").ok());
  StopOptions scale_in{.stop_code = "ServiceSchedulerInitiated", .in_txn = nullptr};
  ASSERT_TRUE(node_->tasks.Stop(kA, std::nullopt, arns[2], "Scaling activity", CallerOf(kA), clock_.Now(), scale_in).ok());
  EXPECT_EQ(NodeUsage(), (FargateUsage{512, 1024})) << "still running until its containers are down";
  for (const char* s : {"DEACTIVATING", "STOPPING", "DEPROVISIONING"}) ASSERT_TRUE(Report(arns[2], s).ok());
  EXPECT_EQ(NodeUsage(), (FargateUsage{512, 1024}));
  ASSERT_TRUE(Report(arns[2], "STOPPED").ok());
  EXPECT_EQ(NodeUsage(), (FargateUsage{256, 512}));

  // Repeated and late reports give nothing back twice.
  ASSERT_TRUE(Report(arns[2], "STOPPED").ok());
  ASSERT_TRUE(Report(arns[0], "RUNNING").ok());
  EXPECT_EQ(NodeUsage(), (FargateUsage{256, 512}));
  EXPECT_EQ(AccountCpu(kA), 256);

  // An essential container exits on its own.
  ASSERT_TRUE(Report(arns[3], "RUNNING").ok());
  TaskStateChange exited;
  exited.last_status = "STOPPED";
  exited.stop_code = "EssentialContainerExited";
  ASSERT_TRUE(node_->tasks.ReportState(kAgent, arns[3], exited, clock_.Now()).ok());
  ExpectWhole();
}

TEST_F(FargateCapacityTest, ATaskRefusedForItsAddressOrARefusedRunHoldsNothing) {
  // Every address of A's first subnet taken: the task is admitted, then finds no address
  // (RESOURCE:ENI) and gives its reservation back in the same transaction.
  const vpc::Subnet subnet = vpc::DefaultVpcFor(kA).subnets[0];
  ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) -> Status {
    for (uint32_t i = 0; i < subnet.UsableCount(); ++i) RETURN_IF_ERROR(vpc::AllocateIp(txn, kA, subnet, "filler", {}).status());
    return OkStatus();
  }).ok());
  RunResult r = Run(kA, Req(kA, "small", 2));
  EXPECT_TRUE(r.tasks.empty());
  ASSERT_EQ(r.failures.size(), 2u);
  EXPECT_EQ(r.failures[0].reason, "RESOURCE:ENI");
  ExpectWhole();
  // A run refused with an error (unknown cluster) writes nothing either.
  RunRequest unknown = Req(kB, "small", 1);
  unknown.cluster = "nope";
  EXPECT_FALSE(node_->tasks.Run(kB, CallerOf(kB), unknown, clock_.Now()).ok());
  ExpectWhole();
}

TEST_F(FargateCapacityTest, ManyRunsAndStopsLeaveTheCapacityWhole) {
  // 200 rounds of runs of 1-5 tasks of two accounts, stopped in a scrambled order, some with
  // StopTask first: afterwards nothing is reserved and the node takes a full load again.
  std::vector<std::string> live;
  for (int round = 0; round < 200; ++round) {
    const Scope& s = round % 3 == 0 ? kB : kA;
    RunResult r = Run(s, Req(s, "small", 1 + round % 5));
    for (const auto& arn : Arns(r)) live.push_back(arn);
    while (live.size() > static_cast<size_t>(round % 4)) {
      const std::string arn = live[static_cast<size_t>(round * 7) % live.size()];
      live.erase(std::find(live.begin(), live.end(), arn));
      if (round % 2 == 0) {
        const Scope& owner = arn.find(kB.account.str()) != std::string::npos ? kB : kA;
        ASSERT_TRUE(node_->tasks.Stop(owner, std::nullopt, arn, std::nullopt, CallerOf(owner), clock_.Now()).ok());
      }
      ASSERT_TRUE(Report(arn, "RUNNING").ok());
      ASSERT_TRUE(Report(arn, "STOPPED").ok());
    }
  }
  for (const auto& arn : live) ASSERT_TRUE(Report(arn, "STOPPED").ok());
  ExpectWhole();
  EXPECT_EQ(Run(kA, Req(kA, "small", 4)).tasks.size(), 4u);
}

TEST_F(FargateCapacityTest, ReservationsSurviveARestart) {
  auto arns = Arns(Run(kA, Req(kA, "small", 3)));
  ASSERT_EQ(arns.size(), 3u);
  Close();
  Open();
  EXPECT_EQ(NodeUsage(), (FargateUsage{768, 1536}));
  EXPECT_EQ(AccountCpu(kA), 768);
  RunResult r = Run(kA, Req(kA, "small", 2));
  EXPECT_EQ(r.tasks.size(), 1u) << "one more fits after the restart, not two";
  for (const auto& arn : Arns(r)) arns.push_back(arn);
  for (const auto& arn : arns) ASSERT_TRUE(Report(arn, "STOPPED").ok());
  ExpectWhole();
}

TEST_F(FargateCapacityTest, DeletingAnAccountGivesItsReservationsBack) {
  auto a = Arns(Run(kA, Req(kA, "small", 2)));
  auto west = Arns(Run(kAWest, Req(kAWest, "small", 1)));
  auto b = Arns(Run(kB, Req(kB, "small", 1)));
  EXPECT_EQ(AccountCpu(kA), 768) << "one count for the account over its regions";
  ASSERT_TRUE(node_->tasks.ReapAccount(kA.account).ok());
  EXPECT_EQ(NodeUsage(), (FargateUsage{256, 512}));
  EXPECT_EQ(AccountCpu(kA), 0);
  EXPECT_EQ(AccountCpu(kB), 256);
  ASSERT_TRUE(Report(b[0], "STOPPED").ok());
  ExpectWhole();
}

TEST_F(FargateCapacityTest, ClientTokenRepeatsReserveNothingMore) {
  RunRequest r = Req(kA, "small", 2);
  r.client_token = "again";
  EXPECT_EQ(Run(kA, r).tasks.size(), 2u);
  EXPECT_EQ(Run(kA, r).tasks.size(), 2u);
  EXPECT_EQ(NodeUsage(), (FargateUsage{512, 1024}));
}

// The quota: 1 vCPU per account on a node of 2 vCPUs / 4 GiB.
class FargateQuotaTest : public FargateCapacityTest {
 protected:
  FargateQuotaTest() : FargateCapacityTest({.cpu = 2048, .memory = 4096, .vcpus_per_account = 1}) {}
};

TEST_F(FargateQuotaTest, EachAccountIsBoundedByItsQuotaAndCannotStarveAnother) {
  RunResult a = Run(kA, Req(kA, "small", 5));
  EXPECT_EQ(a.tasks.size(), 4u);
  ASSERT_EQ(a.failures.size(), 1u);
  EXPECT_EQ(a.failures[0].arn, "");
  EXPECT_EQ(a.failures[0].reason, "You\u2019ve reached the limit on the number of vCPUs you can run concurrently");
  // Another region of the same account counts against the same quota.
  RunResult west = Run(kAWest, Req(kAWest, "small", 1));
  ASSERT_EQ(west.failures.size(), 1u);
  EXPECT_EQ(west.failures[0].reason, kVcpuLimitReachedReason);
  // B still gets its whole quota: A could not take the node.
  EXPECT_EQ(Run(kB, Req(kB, "small", 4)).tasks.size(), 4u);
  EXPECT_EQ(AccountCpu(kA), 1024);
  EXPECT_EQ(AccountCpu(kB), 1024);
  // A task larger than the quota never fits.
  RunResult wide = Run(kB, Req(kB, "big", 1));
  ASSERT_EQ(wide.failures.size(), 1u);
  EXPECT_EQ(wide.failures[0].reason, kVcpuLimitReachedReason);
  // Stopping one of A's tasks gives A room again.
  ASSERT_TRUE(Report(Arns(a)[0], "STOPPED").ok());
  EXPECT_EQ(Run(kA, Req(kA, "small", 1)).tasks.size(), 1u);
}

// Losing a Fargate host (issue 16 §3): another server's host runs tasks of two accounts; its
// offer lapses, and once it has been lapsed for the grace time the sweep's part records every task
// its agent holds STOPPED as ECS writes a lost host's (TerminationNotice), gives the host's room,
// the accounts' quota and the addresses back, and forgets the host — once.
TEST_F(FargateCapacityTest, ALostHostsTasksAreStoppedAndWhatTheyHeldGoesBackOnce) {
  const std::chrono::milliseconds ttl = std::chrono::seconds(6), grace = std::chrono::seconds(10);
  const std::string other_agent = "fargate-local@h2:bbbb";
  FargateCapacity other({.cpu = 4096, .memory = 8192, .vcpus_per_account = 4000}, other_agent);
  ASSERT_TRUE(other.Offer(*store_, clock_.Now(), ttl, other_agent, "10.0.0.2").ok());
  // The other host is four times this one: three small tasks all go there.
  RunResult a = Run(kA, Req(kA, "small", 2));
  RunResult b = Run(kB, Req(kB, "small", 1));
  ASSERT_EQ(a.tasks.size(), 2u);
  ASSERT_EQ(b.tasks.size(), 1u);
  auto assigned = [&](std::string_view agent) {
    auto specs = node_->tasks.Assignments(agent);
    EXPECT_TRUE(specs.ok());
    return specs.ok() ? specs->size() : 0;
  };
  EXPECT_EQ(assigned(other_agent), 3u);
  EXPECT_EQ(assigned(kAgent), 0u);
  auto sweep = [&]() {
    size_t stopped = 0;
    std::vector<FargateHost> lapsed;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(lapsed, node_->tasks.LapsedFargateHosts(txn, clock_.Now(), grace));
      return OkStatus();
    }).ok());
    for (const FargateHost& host : lapsed) {
      Tasks::LostTasks lost;
      EXPECT_TRUE(store_->Write([&](store::WriteTxn& txn) -> Status {
        ASSIGN_OR_RETURN(lost, node_->tasks.StopLostFargateHost(txn, host, clock_.Now(), grace));
        return OkStatus();
      }).ok());
      if (lost.notify) lost.notify();
      stopped += lost.stopped;
    }
    return stopped;
  };
  clock_.Advance(ttl + grace - std::chrono::milliseconds(1));
  EXPECT_EQ(sweep(), 0u) << "not lapsed for the grace time yet";
  clock_.Advance(std::chrono::milliseconds(1));
  EXPECT_EQ(sweep(), 3u);
  auto described = node_->tasks.Describe(kA, "default", Arns(a), false, CallerOf(kA));
  ASSERT_TRUE(described.ok());
  ASSERT_EQ(described->tasks.size(), 2u);
  for (const std::string& text : described->tasks) {
    const json::object task = json::parse(text).as_object();
    EXPECT_EQ(task.at("lastStatus").as_string(), "STOPPED");
    EXPECT_EQ(task.at("desiredStatus").as_string(), "STOPPED");
    EXPECT_EQ(task.at("stopCode").as_string(), kHostLostStopCode);
    EXPECT_EQ(task.at("stoppedReason").as_string(), FargateHostLostReason());
  }
  EXPECT_EQ(assigned(other_agent), 0u);
  EXPECT_EQ(AccountCpu(kA), 0);
  EXPECT_EQ(AccountCpu(kB), 0);
  EXPECT_EQ(Rows("fargate_node_usage"), 0u) << "the lost host's room is given back";
  EXPECT_EQ(Rows("fargate_hosts"), 0u) << "and the host forgotten";
  EXPECT_EQ(sweep(), 0u) << "once";
}

const TimePoint kNow = FromEpochMillis(1'800'000'000'000);

// Reserve's admission, for the tests that place on one host.
StatusOr<Admission> Admit(FargateCapacity& capacity, store::WriteTxn& txn, const Scope& scope, std::string_view task,
                          FargateDemand demand) {
  ASSIGN_OR_RETURN(FargatePlacement placed, capacity.Reserve(txn, scope, "c", task, demand, kNow));
  return placed.admission;
}

TEST(FargateCapacityUnit, ReserveChecksTheQuotaThenTheNodeAndReleaseIsIdempotent) {
  paddock::testing::TempStore store;
  FargateCapacity capacity({.cpu = 1024, .memory = 1024, .vcpus_per_account = 1});
  auto write = [&](auto fn) { return store->Write([&](store::WriteTxn& txn) -> Status { return fn(txn); }); };
  ASSERT_TRUE(write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Admission a, Admit(capacity, txn, kA, "t1", {512, 512}));
    EXPECT_EQ(a, Admission::kAdmitted);
    ASSIGN_OR_RETURN(a, Admit(capacity, txn, kA, "t1", {512, 512}));  // repeated: no-op
    EXPECT_EQ(a, Admission::kAdmitted);
    ASSIGN_OR_RETURN(a, Admit(capacity, txn, kB, "t2", {512, 1024}));  // memory: 512 left
    EXPECT_EQ(a, Admission::kCapacityUnavailable);
    ASSIGN_OR_RETURN(a, Admit(capacity, txn, kA, "t3", {1024, 1}));  // over A's 1 vCPU
    EXPECT_EQ(a, Admission::kVcpuLimitReached);
    EXPECT_FALSE(capacity.Reserve(txn, kA, "c", "t4", {-1, 0}, kNow).ok());
    ASSIGN_OR_RETURN(FargateUsage u, capacity.NodeUsage(txn));
    EXPECT_EQ(u, (FargateUsage{512, 512}));
    RETURN_IF_ERROR(capacity.Release(txn, kA, "c", "t1"));
    RETURN_IF_ERROR(capacity.Release(txn, kA, "c", "t1"));  // nothing left to give
    RETURN_IF_ERROR(capacity.Release(txn, kB, "c", "never"));
    ASSIGN_OR_RETURN(u, capacity.NodeUsage(txn));
    EXPECT_EQ(u, FargateUsage{});
    return OkStatus();
  }).ok());
  EXPECT_EQ(FailureReason(Admission::kAdmitted), "");
  EXPECT_TRUE(IsFargateAdmissionReason(FailureReason(Admission::kCapacityUnavailable)));
  EXPECT_TRUE(IsFargateAdmissionReason(FailureReason(Admission::kVcpuLimitReached)));
  EXPECT_FALSE(IsFargateAdmissionReason("RESOURCE:MEMORY"));
}

// Several servers on one store (docs/scaling.md, "Several servers"): each admits against its own
// host's capacity, the account's quota is one for all of them, and a reservation goes back to the
// node that took it whichever server releases it (a StopTask through another replica, account
// deletion); a default node's reservation (an older or single server's) still releases.
TEST(FargateCapacityUnit, EachServerOfAStoreHasItsOwnCapacityAndOneQuotaPerAccount) {
  paddock::testing::TempStore store;
  FargateCapacity a({.cpu = 1024, .memory = 1024, .vcpus_per_account = 3}, "fargate-local@h1:aaaa");
  FargateCapacity b({.cpu = 1024, .memory = 1024, .vcpus_per_account = 3}, "fargate-local@h2:bbbb");
  FargateCapacity single({.cpu = 1024, .memory = 1024, .vcpus_per_account = 3});
  auto write = [&](auto fn) { return store->Write([&](store::WriteTxn& txn) -> Status { return fn(txn); }); };
  ASSERT_TRUE(write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Admission admitted, Admit(a, txn, kA, "t1", {1024, 1024}));
    EXPECT_EQ(admitted, Admission::kAdmitted);
    ASSIGN_OR_RETURN(admitted, Admit(a, txn, kA, "t2", {1024, 512}));
    EXPECT_EQ(admitted, Admission::kCapacityUnavailable) << "a's host is full";
    ASSIGN_OR_RETURN(admitted, Admit(b, txn, kA, "t2", {1024, 512}));
    EXPECT_EQ(admitted, Admission::kAdmitted) << "b's host is not";
    ASSIGN_OR_RETURN(admitted, Admit(single, txn, kA, "t3", {1024, 512}));
    EXPECT_EQ(admitted, Admission::kAdmitted);
    ASSIGN_OR_RETURN(admitted, Admit(single, txn, kA, "t4", {512, 1}));
    EXPECT_EQ(admitted, Admission::kVcpuLimitReached) << "the account's 3 vCPUs are one quota on all servers";
    // Released through the other server: back to the node that took it.
    RETURN_IF_ERROR(b.Release(txn, kA, "c", "t1"));
    ASSIGN_OR_RETURN(FargateUsage u, a.NodeUsage(txn));
    EXPECT_EQ(u, FargateUsage{});
    ASSIGN_OR_RETURN(u, b.NodeUsage(txn));
    EXPECT_EQ(u, (FargateUsage{1024, 512}));
    RETURN_IF_ERROR(a.Release(txn, kA, "c", "t3"));
    ASSIGN_OR_RETURN(u, single.NodeUsage(txn));
    EXPECT_EQ(u, FargateUsage{});
    ASSIGN_OR_RETURN(int64_t cpu, a.AccountCpu(txn, kA.account));
    EXPECT_EQ(cpu, 1024);
    return OkStatus();
  }).ok());
  ASSERT_TRUE(a.ReapAccount(*store, kA.account).ok());
  ASSERT_TRUE(store->Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(FargateUsage u, b.NodeUsage(txn));
    EXPECT_EQ(u, FargateUsage{}) << "the account's deletion gave b's host back its reservation";
    return OkStatus();
  }).ok());
}

// Fargate across hosts (issue 16 §3): each server offers its host's capacity; a task goes to the
// live host with the most room left after it (this server's on a tie), so tasks spread over the
// hosts and a full host's task goes to another; an expired or withdrawn offer takes nothing, and
// whichever server releases a task gives its host the room back.
TEST(FargateCapacityUnit, ATaskGoesToTheLiveHostWithTheMostRoomLeftAndAFullHostsToAnother) {
  paddock::testing::TempStore store;
  const std::chrono::milliseconds ttl = std::chrono::seconds(6);
  FargateCapacity a({.cpu = 1024, .memory = 2048, .vcpus_per_account = 100}, "fargate-local@h1:aaaa");
  FargateCapacity b({.cpu = 2048, .memory = 4096, .vcpus_per_account = 100}, "fargate-local@h2:bbbb");
  FargateCapacity c({.cpu = 8192, .memory = 16384, .vcpus_per_account = 100}, "fargate-local@h3:cccc");
  ASSERT_TRUE(a.Offer(*store, kNow, ttl, "fargate-local@h1:aaaa", "10.0.0.1").ok());
  ASSERT_TRUE(b.Offer(*store, kNow, ttl, "fargate-local@h2:bbbb", "10.0.0.2").ok());
  // c's offer ran out before now (a killed server): the largest host, and never chosen.
  ASSERT_TRUE(c.Offer(*store, kNow - std::chrono::seconds(10), ttl, "fargate-local@h3:cccc", "").ok());
  const FargateHost host_b{"fargate-local@h2:bbbb", "fargate-local@h2:bbbb", "10.0.0.2", {2048, 4096}};
  auto write = [&](auto fn) { return store->Write([&](store::WriteTxn& txn) -> Status { return fn(txn); }); };
  ASSERT_TRUE(write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(std::vector<FargateHost> others, a.OtherHosts(txn, kNow));
    EXPECT_EQ(others, std::vector<FargateHost>{host_b});
    const FargateDemand half_of_a{512, 1024};
    // Shares after the task: a takes two such tasks, b four. t1: a 1/2, b 1/4: b. t2: 1/2 and 1/2:
    // a, the placing server's own. t3: a 1, b 1/2: b. t4: a 1, b 3/4: b. t5: 1 and 1: a. t6: a has
    // no room, b 1: b. t7 fits nowhere live (c's room does not count).
    const std::vector<bool> on_b = {true, false, true, true, false, true};
    for (size_t i = 0; i < on_b.size(); ++i) {
      ASSIGN_OR_RETURN(FargatePlacement p, a.Reserve(txn, kA, "c", fmt::format("t{}", i + 1), half_of_a, kNow));
      EXPECT_EQ(p.admission, Admission::kAdmitted) << "t" << i + 1;
      EXPECT_EQ(p.elsewhere, on_b[i] ? std::optional(host_b) : std::nullopt) << "t" << i + 1;
    }
    ASSIGN_OR_RETURN(FargatePlacement p, a.Reserve(txn, kA, "c", "t7", half_of_a, kNow));
    EXPECT_EQ(p.admission, Admission::kCapacityUnavailable);
    // Asked again, t1 is where it is.
    ASSIGN_OR_RETURN(p, a.Reserve(txn, kA, "c", "t1", half_of_a, kNow));
    EXPECT_EQ(p.elsewhere, host_b);
    ASSIGN_OR_RETURN(FargateUsage u, a.NodeUsage(txn));
    EXPECT_EQ(u, (FargateUsage{1024, 2048}));
    ASSIGN_OR_RETURN(u, b.NodeUsage(txn));
    EXPECT_EQ(u, (FargateUsage{2048, 4096}));
    // A stop through a gives b's task's room back to b; the next task goes there (a is full).
    RETURN_IF_ERROR(a.Release(txn, kA, "c", "t1"));
    ASSIGN_OR_RETURN(u, b.NodeUsage(txn));
    EXPECT_EQ(u, (FargateUsage{1536, 3072}));
    ASSIGN_OR_RETURN(p, a.Reserve(txn, kA, "c", "t8", half_of_a, kNow));
    EXPECT_EQ(p.elsewhere, host_b);
    // From b, a is the other host.
    ASSIGN_OR_RETURN(others, b.OtherHosts(txn, kNow));
    EXPECT_EQ(others, (std::vector<FargateHost>{
                          {"fargate-local@h1:aaaa", "fargate-local@h1:aaaa", "10.0.0.1", {1024, 2048}}}));
    return OkStatus();
  }).ok());
  // A withdrawn offer takes nothing more (and is gone: a clean stop is no lost host).
  ASSERT_TRUE(b.Withdraw(*store).ok());
  ASSERT_TRUE(write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(a.Release(txn, kA, "c", "t3"));  // room on b again, but b offers none
    ASSIGN_OR_RETURN(FargatePlacement p, a.Reserve(txn, kA, "c", "t9", {512, 1024}, kNow));
    EXPECT_EQ(p.admission, Admission::kCapacityUnavailable);
    ASSIGN_OR_RETURN(auto rows, txn.Scan("fargate_hosts", store::Range{}, 10));
    EXPECT_EQ(rows.size(), 2u) << "a's offer and c's lapsed one, which only the host-loss sweep forgets";
    return OkStatus();
  }).ok());
  // A bad offer is refused and writes nothing.
  EXPECT_EQ(a.Offer(*store, kNow, ttl, "two words", "").code(), StatusCode::kInvalidArgument);
}

// Losing a Fargate host (issue 16 §3): an offer that lapsed at least the grace time ago is the
// sweep's to forget, once, and only while it is still lapsed; a live or withdrawn one never is.
TEST(FargateCapacityUnit, AnOfferLapsedLongerThanTheGraceIsLostOnceAndARenewedOneIsNot) {
  paddock::testing::TempStore store;
  const std::chrono::milliseconds ttl = std::chrono::seconds(6);
  FargateCapacity a({.cpu = 1024, .memory = 2048, .vcpus_per_account = 100}, "fargate-local@h1:aaaa");
  FargateCapacity b({.cpu = 1024, .memory = 2048, .vcpus_per_account = 100}, "fargate-local@h2:bbbb");
  FargateCapacity c({.cpu = 1024, .memory = 2048, .vcpus_per_account = 100}, "fargate-local@h3:cccc");
  ASSERT_TRUE(a.Offer(*store, kNow, ttl, "fargate-local@h1:aaaa", "").ok());
  ASSERT_TRUE(b.Offer(*store, kNow - std::chrono::seconds(10), ttl, "fargate-local@h2:bbbb", "").ok());  // lapsed 4 s ago
  ASSERT_TRUE(c.Offer(*store, kNow - std::chrono::seconds(10), ttl, "fargate-local@h3:cccc", "").ok());
  ASSERT_TRUE(c.Withdraw(*store).ok());
  auto lapsed = [&](std::chrono::milliseconds grace) {
    std::vector<std::string> nodes;
    EXPECT_TRUE(store->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(std::vector<FargateHost> hosts, a.LapsedHosts(txn, kNow, grace));
      for (const FargateHost& h : hosts) nodes.push_back(h.node);
      return OkStatus();
    }).ok());
    return nodes;
  };
  EXPECT_EQ(lapsed(std::chrono::seconds(3)), std::vector<std::string>{"fargate-local@h2:bbbb"});
  EXPECT_EQ(lapsed(std::chrono::seconds(5)), std::vector<std::string>{}) << "not lapsed that long yet";
  auto forget = [&](FargateCapacity& by, std::string_view node, TimePoint now) {
    bool forgotten = false;
    EXPECT_TRUE(store->Write([&](store::WriteTxn& txn) -> Status {
      ASSIGN_OR_RETURN(forgotten, by.Forget(txn, node, now, std::chrono::seconds(3)));
      return OkStatus();
    }).ok());
    return forgotten;
  };
  EXPECT_FALSE(forget(b, "fargate-local@h1:aaaa", kNow)) << "a's offer is live";
  // b's server renews just before the sweep's write: it is not lost.
  ASSERT_TRUE(b.Offer(*store, kNow, ttl, "fargate-local@h2:bbbb", "").ok());
  EXPECT_FALSE(forget(a, "fargate-local@h2:bbbb", kNow));
  EXPECT_TRUE(forget(a, "fargate-local@h2:bbbb", kNow + std::chrono::seconds(10))) << "lapsed 4 s by then";
  EXPECT_FALSE(forget(a, "fargate-local@h2:bbbb", kNow + std::chrono::seconds(10))) << "once";
  EXPECT_FALSE(forget(a, "fargate-local@h3:cccc", kNow + std::chrono::seconds(10))) << "withdrawn: never lost";
}

}  // namespace
}  // namespace paddock::ecs::task
