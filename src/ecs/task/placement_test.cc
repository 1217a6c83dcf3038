#include "ecs/task/placement.h"
#include "ecs/api/errors.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace paddock::ecs::task::placement {
namespace {
namespace json = boost::json;

Candidate Instance(std::string id, int64_t cpu, int64_t memory, std::string zone = "us-east-1a") {
  Candidate c;
  c.arn = "arn:aws:ecs:us-east-1:000000000000:container-instance/default/" + id;
  c.id = std::move(id);
  c.cpu = cpu;
  c.memory = memory;
  c.facts.attributes = {{"ecs.availability-zone", std::move(zone)}, {"ecs.os-type", "linux"}};
  c.facts.agent_connected = true;
  return c;
}

Demand Needs(int64_t cpu, int64_t memory) {
  Demand d;
  d.cpu = cpu;
  d.memory = memory;
  return d;
}

std::vector<Strategy> Strategies(std::string_view text) {
  auto r = ParseStrategies(json::parse(text).as_array());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<Strategy>{};
}

std::vector<std::string> PlacedIds(const Outcome& out, const std::vector<Candidate>& cands) {
  std::vector<std::string> ids;
  for (const auto& p : out.placed) ids.push_back(p ? cands[*p].id : "-");
  return ids;
}

TEST(PlacementTest, BinpackFillsTheFullestInstanceFirst) {
  std::vector<Candidate> cands = {Instance("a", 2048, 4096), Instance("b", 2048, 1024), Instance("c", 2048, 2048)};
  std::mt19937_64 rng(1);
  Outcome out = Place(cands, Needs(256, 512), 4, Strategies(R"([{"type":"binpack","field":"memory"}])"), {}, rng);
  // b has least memory (1024 → 2 tasks), then c, …
  EXPECT_EQ(PlacedIds(out, cands), (std::vector<std::string>{"b", "b", "c", "c"}));
  EXPECT_TRUE(out.failures.empty());
  EXPECT_EQ(cands[1].memory, 0);
  EXPECT_EQ(cands[1].cpu, 2048 - 512);
  EXPECT_EQ(cands[1].group_tasks, 2);
}

TEST(PlacementTest, SpreadAcrossZonesThenBinpackWithinAZone) {
  std::vector<Candidate> cands = {Instance("a1", 4096, 8192, "us-east-1a"), Instance("a2", 4096, 2048, "us-east-1a"),
                                  Instance("b1", 4096, 8192, "us-east-1b")};
  cands[0].group_tasks = 1;  // zone a already runs one task of the group
  std::mt19937_64 rng(7);
  auto strategies = Strategies(R"([{"type":"spread","field":"attribute:ecs.availability-zone"},
                                   {"type":"binpack","field":"memory"}])");
  Outcome out = Place(cands, Needs(128, 512), 3, strategies, {}, rng);
  // b first (zone b has 0), then zone a vs b tie at 1 → binpack picks a2 (least memory), then b.
  EXPECT_EQ(PlacedIds(out, cands), (std::vector<std::string>{"b1", "a2", "b1"}));
}

TEST(PlacementTest, SpreadOnInstanceIdBalancesTasks) {
  std::vector<Candidate> cands = {Instance("a", 4096, 8192), Instance("b", 4096, 8192), Instance("c", 4096, 8192)};
  std::mt19937_64 rng(3);
  Outcome out = Place(cands, Needs(100, 100), 6, Strategies(R"([{"type":"spread","field":"instanceId"}])"), {}, rng);
  for (const Candidate& c : cands) EXPECT_EQ(c.group_tasks, 2) << c.id;
}

TEST(PlacementTest, NoCapacityIsAFailurePerInstanceWithTheFirstUnmetRequirement) {
  std::vector<Candidate> cands = {Instance("cpu", 100, 8192), Instance("mem", 4096, 100), Instance("port", 4096, 8192),
                                  Instance("gone", 4096, 8192), Instance("drain", 4096, 8192)};
  cands[2].tcp_ports = {8080};
  cands[3].facts.agent_connected = false;
  cands[4].active = false;  // DRAINING: silently not a candidate
  Demand d = Needs(256, 512);
  d.tcp_ports = {8080};
  std::mt19937_64 rng(1);
  Outcome out = Place(cands, d, 2, {}, {}, rng);
  EXPECT_EQ(PlacedIds(out, cands), (std::vector<std::string>{"-", "-"}));
  std::vector<Failure> want = {{cands[0].arn, "RESOURCE:CPU"},
                               {cands[1].arn, "RESOURCE:MEMORY"},
                               {cands[2].arn, "RESOURCE:PORTS"},
                               {cands[3].arn, "AGENT"}};
  EXPECT_EQ(out.failures, want);  // distinct: the second task's identical rejections are not repeated
}

TEST(PlacementTest, PartialPlacementReportsOnlyTheUnplacedTasksFailures) {
  std::vector<Candidate> cands = {Instance("a", 1024, 1024)};
  std::mt19937_64 rng(1);
  Outcome out = Place(cands, Needs(512, 512), 3, {}, {}, rng);
  EXPECT_EQ(PlacedIds(out, cands), (std::vector<std::string>{"a", "a", "-"}));
  EXPECT_EQ(out.failures, (std::vector<Failure>{{cands[0].arn, "RESOURCE:CPU"}}));
}

TEST(PlacementTest, ConstraintsBind) {
  std::vector<Candidate> cands = {Instance("a", 4096, 8192, "us-east-1a"), Instance("b", 4096, 8192, "us-east-1b"),
                                  Instance("c", 4096, 8192, "us-east-1b")};
  auto constraints = ParseConstraints(
      json::parse(R"([{"type":"distinctInstance"},{"type":"memberOf","expression":"attribute:ecs.availability-zone == us-east-1b"}])")
          .as_array());
  ASSERT_TRUE(constraints.ok()) << constraints.status().ToString();
  std::mt19937_64 rng(5);
  Outcome out = Place(cands, Needs(10, 10), 3, {}, *constraints, rng);
  ASSERT_EQ(out.placed.size(), 3u);
  EXPECT_TRUE(out.placed[0] && out.placed[1] && !out.placed[2]);
  EXPECT_NE(*out.placed[0], *out.placed[1]);
  EXPECT_EQ(out.failures, (std::vector<Failure>{{cands[0].arn, "MemberOf placement constraint unsatisfied."},
                                                {cands[1].arn, "DistinctInstance placement constraint unsatisfied."},
                                                {cands[2].arn, "DistinctInstance placement constraint unsatisfied."}}));
}

TEST(PlacementTest, RequiredAttributes) {
  std::vector<Candidate> cands = {Instance("a", 4096, 8192), Instance("b", 4096, 8192)};
  cands[1].facts.attributes["com.amazonaws.ecs.capability.docker-remote-api.1.40"] = "";
  Demand d = Needs(1, 1);
  d.attributes = {{"com.amazonaws.ecs.capability.docker-remote-api.1.40", std::nullopt}, {"ecs.os-type", "linux"}};
  std::mt19937_64 rng(1);
  Outcome out = Place(cands, d, 1, {}, {}, rng);
  EXPECT_EQ(PlacedIds(out, cands), (std::vector<std::string>{"b"}));
  d.attributes.push_back({"ecs.os-type", "windows"});
  out = Place(cands, d, 1, {}, {}, rng);
  EXPECT_EQ(out.failures, (std::vector<Failure>{{cands[0].arn, "ATTRIBUTE"}, {cands[1].arn, "ATTRIBUTE"}}));
}

TEST(PlacementTest, RandomUsesEveryInstanceEventually) {
  std::vector<Candidate> cands = {Instance("a", 1 << 20, 1 << 20), Instance("b", 1 << 20, 1 << 20)};
  std::mt19937_64 rng(11);
  Outcome out = Place(cands, Needs(1, 1), 64, Strategies(R"([{"type":"random"}])"), {}, rng);
  EXPECT_GT(cands[0].group_tasks, 0);
  EXPECT_GT(cands[1].group_tasks, 0);
}

TEST(PlacementTest, ValidationMessages) {
  auto strategy_error = [](std::string_view text) {
    return ParseStrategies(json::parse(text).as_array()).status();
  };
  EXPECT_EQ(api::AnswerFor(strategy_error(R"([{"type":"binpack","field":"disk"}])")).type, "InvalidParameterException");
  EXPECT_EQ(api::AnswerFor(strategy_error(R"([{"type":"spread","field":"zone"}])")).type, "InvalidParameterException");
  EXPECT_EQ(api::AnswerFor(strategy_error(R"([{"type":"random","field":"cpu"}])")).type, "InvalidParameterException");
  EXPECT_EQ(api::AnswerFor(strategy_error(R"([{"type":"pack"}])")).type, "InvalidParameterException");
  EXPECT_EQ(api::AnswerFor(strategy_error(R"([{"type":"random"},{"type":"random"},{"type":"random"},{"type":"random"},
                               {"type":"random"},{"type":"random"}])")).type, "InvalidParameterException");
  EXPECT_TRUE(ParseStrategies(json::parse(R"([{"type":"binpack","field":"CPU"}])").as_array()).ok());

  auto constraint_error = [](std::string_view text) {
    return ParseConstraints(json::parse(text).as_array()).status();
  };
  EXPECT_EQ(api::AnswerFor(constraint_error(R"([{"type":"memberOf"}])")).type, "InvalidParameterException");
  EXPECT_EQ(api::AnswerFor(constraint_error(R"([{"type":"memberOf","expression":"attribute:x === y"}])")).type, "InvalidParameterException");
  EXPECT_EQ(api::AnswerFor(constraint_error(R"([{"type":"distinctInstance","expression":"attribute:a == b"}])")).type,
            "InvalidParameterException");
  EXPECT_EQ(api::AnswerFor(constraint_error(R"([{"type":"sameInstance"}])")).type, "InvalidParameterException");
}

}  // namespace
}  // namespace paddock::ecs::task::placement
