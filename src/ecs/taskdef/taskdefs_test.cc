#include "ecs/taskdef/taskdefs.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <set>
#include <thread>

#include "ecs/testing/temp_store.h"
#include "ecs/api/errors.h"

namespace paddock::ecs::taskdef {
namespace {
namespace json = boost::json;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
const Scope kOther{AccountId("210987654321"), Region("us-east-1")};
const TimePoint kNow = TimePoint(std::chrono::seconds(1'780'000'000));
constexpr std::string_view kCaller = "arn:aws:iam::123456789012:root";

json::object Def(std::string_view family, std::string_view image = "nginx") {
  return json::parse(fmt::format(R"({{"family":"{}","containerDefinitions":[{{"name":"app","image":"{}","memory":128}}]}})",
                                 family, image))
      .as_object();
}

Ref R(std::string family, std::optional<uint64_t> rev = std::nullopt) { return Ref{std::move(family), rev}; }

class TaskDefinitionsTest : public ::testing::Test {
 protected:
  paddock::testing::TempStore store_;
  TaskDefinitions tds_{*store_};
};

TEST_F(TaskDefinitionsTest, RegisterAllocatesRevisionsAndDescribeResolvesEveryForm) {
  ASSERT_TRUE(tds_.Register(kScope, kCaller, Def("web", "nginx:1"), kNow).ok());
  ASSERT_TRUE(tds_.Register(kScope, kCaller, Def("web", "nginx:2"), kNow).ok());
  auto latest = tds_.Describe(kScope, R("web"), false);
  ASSERT_TRUE(latest.ok());
  auto td = json::parse(latest->task_definition).as_object();
  EXPECT_EQ(td.at("revision"), 2);
  EXPECT_EQ(td.at("status"), "ACTIVE");
  EXPECT_EQ(td.at("taskDefinitionArn"), "arn:aws:ecs:us-east-1:123456789012:task-definition/web:2");
  EXPECT_EQ(td.at("registeredBy").as_string(), kCaller);
  auto first = tds_.Describe(kScope, R("web", 1), false);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(json::parse(first->task_definition).at("containerDefinitions").at(0).at("image"), "nginx:1");
  auto arn_ref = ParseRef("arn:aws:ecs:us-east-1:123456789012:task-definition/web:1", kScope, "DescribeTaskDefinition", kCaller);
  ASSERT_TRUE(arn_ref.ok());
  EXPECT_EQ(arn_ref->revision, 1u);
}

TEST_F(TaskDefinitionsTest, ConcurrentRegistersNeverShareARevision) {
  constexpr int kThreads = 8, kEach = 25;
  std::vector<std::thread> threads;
  std::mutex mu;
  std::set<int64_t> revisions;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        auto r = tds_.Register(kScope, kCaller, Def("busy"), kNow);
        ASSERT_TRUE(r.ok());
        std::lock_guard lock(mu);
        revisions.insert(json::parse(r->task_definition).at("revision").as_int64());
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(revisions.size(), size_t{kThreads * kEach});
  EXPECT_EQ(*revisions.begin(), 1);
  EXPECT_EQ(*revisions.rbegin(), kThreads * kEach);
}

TEST_F(TaskDefinitionsTest, ScopesAreIsolated) {
  ASSERT_TRUE(tds_.Register(kScope, kCaller, Def("web"), kNow).ok());
  EXPECT_FALSE(tds_.Describe(kOther, R("web"), false).ok());
  auto r = tds_.Register(kOther, "arn:aws:iam::210987654321:root", Def("web"), kNow);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(json::parse(r->task_definition).at("revision"), 1);  // numbering is per account
  auto cross = ParseRef("arn:aws:ecs:us-east-1:210987654321:task-definition/web:1", kScope, "DescribeTaskDefinition", kCaller);
  ASSERT_FALSE(cross.ok());
  EXPECT_EQ(api::AnswerFor(cross.status()).type, "AccessDeniedException");
}

TEST_F(TaskDefinitionsTest, DeregisterMovesBareFamilyToLatestActive) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(tds_.Register(kScope, kCaller, Def("web"), kNow).ok());
  auto d = tds_.Deregister(kScope, R("web", 3), kNow + std::chrono::seconds(5));
  ASSERT_TRUE(d.ok());
  auto td = json::parse(*d).as_object();
  EXPECT_EQ(td.at("status"), "INACTIVE");
  EXPECT_TRUE(td.contains("deregisteredAt"));
  auto again = tds_.Deregister(kScope, R("web", 3), kNow + std::chrono::seconds(9));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *d);  // a repeat returns the revision unchanged
  auto latest = tds_.Describe(kScope, R("web"), false);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(json::parse(latest->task_definition).at("revision"), 2);
  EXPECT_FALSE(tds_.Deregister(kScope, R("web"), kNow).ok());  // a revision is required
  EXPECT_FALSE(tds_.Deregister(kScope, R("web", 9), kNow).ok());
}

TEST_F(TaskDefinitionsTest, InactiveRevisionCannotLaunch) {
  ASSERT_TRUE(tds_.Register(kScope, kCaller, Def("web"), kNow).ok());
  ASSERT_TRUE(tds_.ResolveForLaunch(kScope, R("web", 1)).ok());
  ASSERT_TRUE(tds_.Deregister(kScope, R("web", 1), kNow).ok());
  auto launch = tds_.ResolveForLaunch(kScope, R("web", 1));
  ASSERT_FALSE(launch.ok());
  EXPECT_EQ(api::AnswerFor(launch.status()).type, "ClientException");
}

// Seed gap 8: what a launch reads of a revision is the owner's typed projection, not a document.
TEST_F(TaskDefinitionsTest, TheLaunchViewCarriesTypedContainersAndConstraints) {
  json::object def = json::parse(R"({"family":"web","networkMode":"bridge","cpu":"256",
    "containerDefinitions":[
      {"name":"app","image":"nginx:1","cpu":128,"memory":256,"memoryReservation":64,"essential":true,
       "portMappings":[{"containerPort":80,"hostPort":8080},{"containerPort":53,"protocol":"udp"}]},
      {"name":"side","image":"busybox","essential":false,"memoryReservation":32}],
    "placementConstraints":[{"type":"memberOf","expression":"attribute:ecs.instance-type =~ t2.*"}]})")
                         .as_object();
  ASSERT_TRUE(tds_.Register(kScope, kCaller, def, kNow).ok());
  auto view = tds_.ResolveForLaunch(kScope, R("web", 1));
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  ASSERT_EQ(view->containers.size(), 2u);
  const ContainerView& app = view->containers[0];
  EXPECT_EQ(app.name, "app");
  EXPECT_EQ(app.image, "nginx:1");
  EXPECT_TRUE(app.essential);
  EXPECT_EQ(app.cpu, 128);
  EXPECT_EQ(app.memory, 256);
  EXPECT_EQ(app.memory_reservation, 64);
  ASSERT_EQ(app.port_mappings.size(), 2u);
  EXPECT_EQ(app.port_mappings[0].container_port, 80);
  EXPECT_EQ(app.port_mappings[0].host_port, 8080);
  EXPECT_EQ(app.port_mappings[0].protocol, "tcp");
  EXPECT_EQ(app.port_mappings[1].container_port, 53);
  EXPECT_EQ(app.port_mappings[1].protocol, "udp");
  const ContainerView& side = view->containers[1];
  EXPECT_EQ(side.name, "side");
  EXPECT_FALSE(side.essential);
  EXPECT_EQ(side.memory, 0);
  EXPECT_EQ(side.memory_reservation, 32);
  ASSERT_EQ(view->placement_constraints.size(), 1u);
  EXPECT_EQ(view->placement_constraints[0].at("type"), "memberOf");
  EXPECT_EQ(view->network_mode, "bridge");
  EXPECT_EQ(view->cpu, "256");
}

TEST_F(TaskDefinitionsTest, ListsByStatusFamilyAndOrderWithPages) {
  for (const char* f : {"b", "a", "c"})
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(tds_.Register(kScope, kCaller, Def(f), kNow).ok());
  ASSERT_TRUE(tds_.Deregister(kScope, R("c", 1), kNow).ok());
  ListQuery q;
  q.limit = 4;
  std::vector<std::string> all;
  while (true) {
    auto page = tds_.List(kScope, q);
    ASSERT_TRUE(page.ok());
    all.insert(all.end(), page->items.begin(), page->items.end());
    if (page->next.empty()) break;
    q.after = page->next;
  }
  ASSERT_EQ(all.size(), 8u);
  EXPECT_EQ(all.front(), "arn:aws:ecs:us-east-1:123456789012:task-definition/a:1");
  EXPECT_EQ(all.back(), "arn:aws:ecs:us-east-1:123456789012:task-definition/c:3");

  ListQuery desc;
  desc.descending = true;
  desc.family = "a";
  auto d = tds_.List(kScope, desc);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->items, (std::vector<std::string>{"arn:aws:ecs:us-east-1:123456789012:task-definition/a:3",
                                                "arn:aws:ecs:us-east-1:123456789012:task-definition/a:2",
                                                "arn:aws:ecs:us-east-1:123456789012:task-definition/a:1"}));
  ListQuery inactive;
  inactive.status = "INACTIVE";
  auto i = tds_.List(kScope, inactive);
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->items, (std::vector<std::string>{"arn:aws:ecs:us-east-1:123456789012:task-definition/c:1"}));
}

TEST_F(TaskDefinitionsTest, FamiliesByStatus) {
  ASSERT_TRUE(tds_.Register(kScope, kCaller, Def("alive"), kNow).ok());
  ASSERT_TRUE(tds_.Register(kScope, kCaller, Def("gone"), kNow).ok());
  ASSERT_TRUE(tds_.Deregister(kScope, R("gone", 1), kNow).ok());
  auto families = [&](std::string status, std::string prefix = "") {
    FamilyQuery q;
    q.status = std::move(status);
    q.prefix = std::move(prefix);
    return tds_.ListFamilies(kScope, q)->items;
  };
  EXPECT_EQ(families("ACTIVE"), (std::vector<std::string>{"alive"}));
  EXPECT_EQ(families("INACTIVE"), (std::vector<std::string>{"gone"}));
  EXPECT_EQ(families("ALL"), (std::vector<std::string>{"alive", "gone"}));
  EXPECT_EQ(families("ALL", "go"), (std::vector<std::string>{"gone"}));
}

TEST_F(TaskDefinitionsTest, DeleteOnlyInactiveAndRemovesWhenUnreferenced) {
  ASSERT_TRUE(tds_.Register(kScope, kCaller, Def("web"), kNow).ok());
  ASSERT_TRUE(tds_.Register(kScope, kCaller, Def("web"), kNow).ok());
  ASSERT_TRUE(tds_.Deregister(kScope, R("web", 1), kNow).ok());
  auto r = tds_.Delete(kScope, {"web:1", "web:2", "web:7", "web"}, kCaller, kNow);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->task_definitions.size(), 1u);
  EXPECT_EQ(json::parse(r->task_definitions[0]).at("status"), "DELETE_IN_PROGRESS");
  ASSERT_EQ(r->failures.size(), 3u);
  EXPECT_EQ(r->failures[0].arn, "web:2");

  struct Pin : ReferenceCheck {
    bool pinned = true;
    StatusOr<bool> IsReferenced(store::ReadTxn&, const Scope&, std::string_view, uint64_t) override { return pinned; }
  } pin;
  tds_.AddReferenceCheck(&pin);
  EXPECT_EQ(*tds_.ReapDeleting(kScope), 0u);
  EXPECT_TRUE(tds_.Describe(kScope, R("web", 1), false).ok());  // still referenced: kept
  pin.pinned = false;
  EXPECT_EQ(*tds_.ReapDeleting(kScope), 1u);
  EXPECT_FALSE(tds_.Describe(kScope, R("web", 1), false).ok());
  // The revision number is never reused.
  auto next = tds_.Register(kScope, kCaller, Def("web"), kNow);
  EXPECT_EQ(json::parse(next->task_definition).at("revision"), 3);
}

TEST_F(TaskDefinitionsTest, PeriodicReaperCoversEveryScope) {
  struct Pin : ReferenceCheck {
    bool pinned = true;
    StatusOr<bool> IsReferenced(store::ReadTxn&, const Scope&, std::string_view, uint64_t) override { return pinned; }
  } pin;
  tds_.AddReferenceCheck(&pin);
  for (const Scope& scope : {kScope, kOther}) {
    ASSERT_TRUE(tds_.Register(scope, kCaller, Def("web"), kNow).ok());
    ASSERT_TRUE(tds_.Deregister(scope, R("web", 1), kNow).ok());
    ASSERT_TRUE(tds_.Delete(scope, {"web:1"}, kCaller, kNow).ok());
  }
  EXPECT_EQ(*tds_.ReapAllDeleting(), 0u);  // still referenced
  pin.pinned = false;
  EXPECT_EQ(*tds_.ReapAllDeleting(), 2u);
  EXPECT_FALSE(tds_.Describe(kScope, R("web", 1), false).ok());
  EXPECT_FALSE(tds_.Describe(kOther, R("web", 1), false).ok());
  EXPECT_EQ(*tds_.ReapAllDeleting(), 0u);
}

TEST_F(TaskDefinitionsTest, TagsGoThroughTheOwner) {
  auto def = Def("web");
  def["tags"] = json::array{json::object{{"key", "team"}, {"value", "core"}}};
  ASSERT_TRUE(tds_.Register(kScope, kCaller, def, kNow).ok());
  ASSERT_TRUE(tds_.TagResource(kScope, R("web", 1), {{"env", "prod"}}).ok());
  auto tags = tds_.ListTags(kScope, R("web", 1));
  ASSERT_TRUE(tags.ok());
  EXPECT_EQ(*tags, (Tags{{"env", "prod"}, {"team", "core"}}));
  ASSERT_TRUE(tds_.UntagResource(kScope, R("web", 1), {"team"}).ok());
  EXPECT_EQ(*tds_.ListTags(kScope, R("web", 1)), (Tags{{"env", "prod"}}));
  EXPECT_FALSE(tds_.TagResource(kScope, R("nope", 1), {{"a", "b"}}).ok());
  EXPECT_EQ(api::AnswerFor(tds_.ListTags(kScope, R("web")).status()).type, "InvalidParameterException");  // no revision
  Tags too_many;
  for (int i = 0; i < 50; ++i) too_many.push_back({"k" + std::to_string(i), "v"});
  EXPECT_FALSE(tds_.TagResource(kScope, R("web", 1), too_many).ok());  // 1 existing + 50 > 50
}

TEST_F(TaskDefinitionsTest, ReapAccountRemovesEverything) {
  ASSERT_TRUE(tds_.Register(kScope, kCaller, Def("web"), kNow).ok());
  ASSERT_TRUE(tds_.Register(kOther, kCaller, Def("web"), kNow).ok());
  ASSERT_TRUE(tds_.ReapAccount(kScope.account).ok());
  EXPECT_FALSE(tds_.Describe(kScope, R("web"), false).ok());
  FamilyQuery q;
  q.status = "ALL";
  EXPECT_TRUE(tds_.ListFamilies(kScope, q)->items.empty());
  EXPECT_TRUE(tds_.Describe(kOther, R("web"), false).ok());
}

}  // namespace
}  // namespace paddock::ecs::taskdef
