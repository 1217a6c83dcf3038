#include "logs/live_tail.h"

#include <gtest/gtest.h>

namespace paddock::logs {
namespace {

const Scope kScope{AccountId("111111111111"), Region("us-east-1")};
const Scope kOtherAccount{AccountId("222222222222"), Region("us-east-1")};

LiveTailRequest Tail(std::vector<std::string> groups, std::string pattern = "") {
  LiveTailRequest r;
  for (auto& g : groups) r.groups.push_back({g, "arn:" + g});
  r.filter = *Filter::Compile(pattern);
  return r;
}

Event Ev(std::string stream, std::string message, int64_t ts = 1000) {
  return Event{std::move(stream), ts, ts + 1, std::move(message), ""};
}

std::vector<std::string> Messages(const LiveTailBatch& b) {
  std::vector<std::string> out;
  for (const auto& e : b.events) out.push_back(e.message);
  return out;
}

const auto kNow = [] { return std::chrono::steady_clock::now(); };

TEST(LiveTailTest, SessionSeesItsGroupsMatchingEventsOnly) {
  LiveTail hub;
  auto session = hub.Open(kScope, Tail({"/a", "/b"}, "ERROR"));
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  hub.OnIngest(kScope, "/a", {Ev("s1", "ERROR one"), Ev("s1", "fine")});
  hub.OnIngest(kScope, "/c", {Ev("s1", "ERROR other group")});
  hub.OnIngest(kOtherAccount, "/a", {Ev("s1", "ERROR other account")});
  hub.OnIngest(kScope, "/b", {Ev("s2", "ERROR two")});
  LiveTailBatch b = (*session)->Take(kNow());
  EXPECT_EQ(Messages(b), (std::vector<std::string>{"ERROR one", "ERROR two"}));
  EXPECT_FALSE(b.sampled);
  EXPECT_EQ(b.events[0].group_identifier, "arn:/a");
  EXPECT_EQ(b.events[1].stream, "s2");
  EXPECT_EQ(b.events[1].ingestion_ms, 1001);
  EXPECT_TRUE((*session)->Take(kNow()).events.empty());  // taken once
}

TEST(LiveTailTest, StreamNamesAndPrefixesNarrowTheSession) {
  LiveTail hub;
  LiveTailRequest by_name = Tail({"/a"});
  by_name.stream_names = {"web/1"};
  LiveTailRequest by_prefix = Tail({"/a"});
  by_prefix.stream_prefixes = {"db/", "cache/"};
  auto named = hub.Open(kScope, std::move(by_name));
  auto prefixed = hub.Open(kScope, std::move(by_prefix));
  ASSERT_TRUE(named.ok() && prefixed.ok());
  hub.OnIngest(kScope, "/a", {Ev("web/1", "w1"), Ev("web/2", "w2"), Ev("db/x", "d"), Ev("cache/y", "c")});
  EXPECT_EQ(Messages((*named)->Take(kNow())), (std::vector<std::string>{"w1"}));
  EXPECT_EQ(Messages((*prefixed)->Take(kNow())), (std::vector<std::string>{"d", "c"}));
}

TEST(LiveTailTest, MoreThanAnUpdateHoldsIsSampled) {
  LiveTail hub;
  auto session = hub.Open(kScope, Tail({"/a"}));
  ASSERT_TRUE(session.ok());
  std::vector<Event> many;
  for (int i = 0; i < 1200; ++i) many.push_back(Ev("s", std::to_string(i)));
  hub.OnIngest(kScope, "/a", many);
  LiveTailBatch b = (*session)->Take(kNow());
  EXPECT_TRUE(b.sampled);
  ASSERT_EQ(b.events.size(), LiveTail::kMaxEventsPerUpdate);
  EXPECT_EQ(b.events.front().message, "0");  // spread over the whole second's events
  EXPECT_GT(std::stoi(b.events.back().message), 1100);
  // Past the buffer's bound the oldest go.
  std::vector<Event> flood;
  for (size_t i = 0; i < LiveTail::kMaxBuffered + 10; ++i) flood.push_back(Ev("s", std::to_string(i)));
  hub.OnIngest(kScope, "/a", flood);
  b = (*session)->Take(kNow());
  EXPECT_TRUE(b.sampled);
  EXPECT_EQ(b.events.front().message, "10");
}

TEST(LiveTailTest, AnAccountHoldsAtMostFifteenSessions) {
  LiveTail hub;
  std::vector<std::unique_ptr<LiveTail::Session>> held;
  for (size_t i = 0; i < LiveTail::kMaxSessionsPerAccount; ++i) {
    auto s = hub.Open(kScope, Tail({"/a"}));
    ASSERT_TRUE(s.ok());
    held.push_back(std::move(*s));
  }
  auto refused = hub.Open(kScope, Tail({"/a"}));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(IsError(refused.status(), Error::kLimitExceeded));
  // Other accounts keep theirs.
  EXPECT_TRUE(hub.Open(kOtherAccount, Tail({"/a"})).ok());
  // A closed session frees its place.
  held.pop_back();
  EXPECT_EQ(hub.OpenSessions(kScope.account), LiveTail::kMaxSessionsPerAccount - 1);
  EXPECT_TRUE(hub.Open(kScope, Tail({"/a"})).ok());
}

TEST(LiveTailTest, TakeWaitsForItsDeadline) {
  LiveTail hub;
  auto session = hub.Open(kScope, Tail({"/a"}));
  ASSERT_TRUE(session.ok());
  auto start = kNow();
  (*session)->Take(start + std::chrono::milliseconds(30));
  EXPECT_GE(kNow() - start, std::chrono::milliseconds(30));
}

}  // namespace
}  // namespace paddock::logs
