#include "logs/log_groups.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/testing/fake_clock.h"
#include "logs/schema.h"
#include "store/sqlite/sqlite_store.h"

namespace paddock::logs {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const Scope kA{AccountId("111111111111"), Region("us-east-1")};
const Scope kB{AccountId("222222222222"), Region("us-east-1")};

// The logs store as the node opens it (logs.db: only the logs module's tables), in a temp dir.
class LogsStore {
 public:
  LogsStore() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "paddock-logs-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    store::SqliteOptions options;
    options.path = dir_ + "/logs.db";
    options.durable = false;
    options.schemas = {kSchema};
    auto s = store::SqliteStore::Open(options);
    if (!s.ok()) std::abort();
    store_ = std::move(*s);
  }
  ~LogsStore() {
    store_->Close();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  store::Store& operator*() { return *store_; }

 private:
  std::string dir_;
  std::unique_ptr<store::SqliteStore> store_;
};

class LogGroupsTest : public ::testing::Test {
 protected:
  LogGroupsTest() : groups_(*store_, clock_) {}
  int64_t Now() const { return EpochMillis(clock_.Now()); }
  void MustGroupAndStream(const Scope& s, const std::string& g, const std::string& st) {
    auto c = groups_.CreateGroup(s, {.name = g});
    ASSERT_TRUE(c.ok() || c.code() == StatusCode::kAlreadyExists) << c.ToString();
    ASSERT_TRUE(groups_.CreateStream(s, g, st).ok());
  }
  void MustPut(const Scope& s, const std::string& g, const std::string& st, std::vector<InputEvent> events) {
    auto put = groups_.Put(s, g, st, events);
    ASSERT_TRUE(put.ok()) << put.status().ToString();
    ASSERT_FALSE(put->rejected.any());
  }
  std::vector<std::string> Messages(const std::vector<Event>& events) {
    std::vector<std::string> out;
    for (const auto& e : events) out.push_back(e.message);
    return out;
  }

  LogsStore store_;
  testing::FakeClock clock_;
  LogGroups groups_;
};

TEST_F(LogGroupsTest, GroupsAreCreatedOnceListedByPrefixAndPaged) {
  for (std::string n : {"/ecs/b", "/ecs/a", "/other", "/ecs/c"}) ASSERT_TRUE(groups_.CreateGroup(kA, {.name = n}).ok());
  Status again = groups_.CreateGroup(kA, {.name = "/ecs/a"});
  EXPECT_TRUE(IsError(again, Error::kResourceAlreadyExists));
  EXPECT_EQ(again.message(), "The specified log group already exists");
  auto p1 = groups_.DescribeGroups(kA, "/ecs/", 2, std::nullopt);
  ASSERT_TRUE(p1.ok());
  ASSERT_EQ(p1->items.size(), 2u);
  EXPECT_EQ(p1->items[0].name, "/ecs/a");
  EXPECT_EQ(p1->items[0].arn, "arn:aws:logs:us-east-1:111111111111:log-group:/ecs/a");
  ASSERT_TRUE(p1->next);
  auto p2 = groups_.DescribeGroups(kA, "/ecs/", 2, p1->next);
  ASSERT_TRUE(p2.ok());
  ASSERT_EQ(p2->items.size(), 1u);
  EXPECT_EQ(p2->items[0].name, "/ecs/c");
  EXPECT_FALSE(p2->next);
  EXPECT_EQ(groups_.CreateGroup(kA, {.name = "a:b"}).message(),
            "1 validation error detected: Value 'a:b' at 'logGroupName' failed to satisfy constraint: Member must "
            "satisfy regular expression pattern: [\\.\\-_/#A-Za-z0-9]+");
  EXPECT_TRUE(IsError(groups_.CreateStream(kA, "/ecs/a", "x*y"), Error::kInvalidParameter));
  ASSERT_TRUE(groups_.DeleteGroup(kA, "/ecs/a").ok());
  Status gone = groups_.DeleteGroup(kA, "/ecs/a");
  EXPECT_TRUE(IsError(gone, Error::kResourceNotFound));
  EXPECT_EQ(gone.message(), "The specified log group does not exist.");
}

TEST_F(LogGroupsTest, AccountsNeverSeeEachOthersGroupsStreamsOrEvents) {
  MustGroupAndStream(kA, "/shared/name", "s");
  MustPut(kA, "/shared/name", "s", {{Now(), "secret of A"}});
  // B sees nothing of A's, by name or by ARN, and its own group of the same name is its own.
  EXPECT_THAT(groups_.DescribeGroups(kB, "", 50, std::nullopt)->items, IsEmpty());
  EXPECT_TRUE(IsError(groups_.DescribeStreams(kB, "/shared/name", "", StreamOrder::kName, false, 50, std::nullopt).status(),
                      Error::kResourceNotFound));
  EXPECT_TRUE(IsError(groups_.GetEvents(kB, {.group = "/shared/name", .stream = "s"}).status(), Error::kResourceNotFound));
  EXPECT_TRUE(IsError(groups_.FilterEvents(kB, {.group = "/shared/name"}).status(), Error::kResourceNotFound));
  EXPECT_TRUE(IsError(groups_.Put(kB, "/shared/name", "s", {{Now(), "x"}}).status(), Error::kResourceNotFound));
  EXPECT_TRUE(IsError(groups_.ListTags(kB, LogGroups::GroupArn(kA, "/shared/name")).status(), Error::kResourceNotFound));
  EXPECT_TRUE(IsError(groups_.TagResource(kB, LogGroups::GroupArn(kA, "/shared/name"), {{"k", "v"}}), Error::kResourceNotFound));
  EXPECT_TRUE(IsError(groups_.DeleteGroup(kB, "/shared/name"), Error::kResourceNotFound));
  MustGroupAndStream(kB, "/shared/name", "s");
  auto b = groups_.FilterEvents(kB, {.group = "/shared/name"});
  ASSERT_TRUE(b.ok());
  EXPECT_THAT(b->items, IsEmpty());
  // Reaping B leaves A's events.
  ASSERT_TRUE(groups_.ReapAccount(kB.account).ok());
  auto a = groups_.FilterEvents(kA, {.group = "/shared/name"});
  ASSERT_TRUE(a.ok());
  EXPECT_THAT(Messages(a->items), ElementsAre("secret of A"));
  EXPECT_THAT(groups_.DescribeGroups(kB, "", 50, std::nullopt)->items, IsEmpty());
}

TEST_F(LogGroupsTest, StreamsOrderByNameOrLastEventTimeBothWaysAndPage) {
  ASSERT_TRUE(groups_.CreateGroup(kA, {.name = "g"}).ok());
  for (std::string n : {"a", "b", "c"}) ASSERT_TRUE(groups_.CreateStream(kA, "g", n).ok());
  EXPECT_TRUE(IsError(groups_.CreateStream(kA, "g", "a"), Error::kResourceAlreadyExists));
  EXPECT_TRUE(IsError(groups_.CreateStream(kA, "nope", "a"), Error::kResourceNotFound));
  MustPut(kA, "g", "a", {{Now() - 1000, "a1"}});
  MustPut(kA, "g", "c", {{Now() - 3000, "c1"}});
  MustPut(kA, "g", "b", {{Now() - 2000, "b1"}});
  auto names = [&](StreamOrder o, bool desc, size_t limit, std::optional<std::string> after = std::nullopt) {
    auto p = groups_.DescribeStreams(kA, "g", "", o, desc, limit, after);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    std::vector<std::string> out;
    for (const auto& s : p->items) out.push_back(s.name);
    return std::make_pair(out, p->next);
  };
  EXPECT_THAT(names(StreamOrder::kName, false, 50).first, ElementsAre("a", "b", "c"));
  EXPECT_THAT(names(StreamOrder::kName, true, 50).first, ElementsAre("c", "b", "a"));
  EXPECT_THAT(names(StreamOrder::kLastEventTime, false, 50).first, ElementsAre("c", "b", "a"));
  EXPECT_THAT(names(StreamOrder::kLastEventTime, true, 50).first, ElementsAre("a", "b", "c"));
  auto first = names(StreamOrder::kLastEventTime, true, 2);
  EXPECT_THAT(first.first, ElementsAre("a", "b"));
  ASSERT_TRUE(first.second);
  EXPECT_THAT(names(StreamOrder::kLastEventTime, true, 2, first.second).first, ElementsAre("c"));
  auto prefixed = groups_.DescribeStreams(kA, "g", "b", StreamOrder::kName, false, 50, std::nullopt);
  ASSERT_TRUE(prefixed.ok());
  ASSERT_EQ(prefixed->items.size(), 1u);
  EXPECT_EQ(prefixed->items[0].last_event_ms, Now() - 2000);
  EXPECT_EQ(prefixed->items[0].arn, "arn:aws:logs:us-east-1:111111111111:log-group:g:log-stream:b");
  EXPECT_EQ(groups_.DescribeStreams(kA, "g", "b", StreamOrder::kLastEventTime, false, 50, std::nullopt).status().message(),
            "Cannot order by LastEventTime with a logStreamNamePrefix.");
  ASSERT_TRUE(groups_.DeleteStream(kA, "g", "b").ok());
  EXPECT_THAT(names(StreamOrder::kLastEventTime, false, 50).first, ElementsAre("c", "a"));
  EXPECT_TRUE(IsError(groups_.DeleteStream(kA, "g", "b"), Error::kResourceNotFound));
  EXPECT_EQ(groups_.DeleteStream(kA, "g", "b").message(), "The specified log stream does not exist.");
}

TEST_F(LogGroupsTest, PutFollowsAwsBatchRules) {
  MustGroupAndStream(kA, "g", "s");
  const int64_t now = Now();
  Status order = groups_.Put(kA, "g", "s", {{now, "b"}, {now - 1, "a"}}).status();
  EXPECT_EQ(order.message(), "Log events in a single PutLogEvents request must be in chronological order.");
  Status span = groups_.Put(kA, "g", "s", {{now - 25LL * 3600 * 1000 + 0, "a"}, {now, "b"}}).status();
  EXPECT_EQ(span.message(), "The batch of log events in a single PutLogEvents request cannot span more than 24 hours.");
  // 1,048,576 bytes counting 26 per event: exactly at the bound passes, one byte more fails.
  std::vector<InputEvent> full{{now, std::string(LogGroups::kMaxBatchBytes - 26, 'x')}};
  EXPECT_TRUE(groups_.Put(kA, "g", "s", full).ok());
  full[0].message.push_back('x');
  EXPECT_EQ(groups_.Put(kA, "g", "s", full).status().message(),
            "Upload too large: 1048577 bytes exceeds limit of 1048576");
  EXPECT_TRUE(IsError(groups_.Put(kA, "g", "nope", {{now, "a"}}).status(), Error::kResourceNotFound));
}

TEST_F(LogGroupsTest, TheIngestListenerSeesWhatWasStoredAfterItsCommit) {
  std::vector<std::string> heard;
  groups_.SetIngestListener([&](const Scope& s, std::string_view group, const std::vector<Event>& events) {
    for (const Event& e : events) {
      heard.push_back(fmt::format("{} {} {} {}", s.account.str(), group, e.stream, e.message));
      // Committed: a read from inside the listener's caller already finds it, with the same id.
      auto got = groups_.FilterEvents(s, {.group = std::string(group), .stream_names = {e.stream}});
      ASSERT_TRUE(got.ok());
      EXPECT_TRUE(std::any_of(got->items.begin(), got->items.end(),
                              [&](const Event& stored) { return stored.event_id == e.event_id; }));
    }
  });
  MustGroupAndStream(kA, "g", "s");
  MustPut(kA, "g", "s", {{Now(), "one"}, {Now() + 1, "two"}});
  ASSERT_TRUE(groups_.Put(kA, "g", "s", {{Now() - 15LL * 24 * 3600 * 1000, "too old"}}).ok());  // nothing stored
  EXPECT_FALSE(groups_.Put(kA, "g", "s", {{Now(), "b"}, {Now() - 1, "a"}}).ok());                // refused
  EXPECT_THAT(heard, ElementsAre("111111111111 g s one", "111111111111 g s two"));
}

TEST_F(LogGroupsTest, TooOldExpiredAndTooNewEventsAreSkippedAndReportedByIndex) {
  MustGroupAndStream(kA, "g", "s");
  const int64_t now = Now();
  const int64_t day = 24LL * 3600 * 1000;
  ASSERT_TRUE(groups_.PutRetention(kA, "g", 1).ok());
  // A batch spans at most 24 h: 2 expired (older than the 1-day retention) then 1 kept; then 1 kept
  // and 2 too new (more than 2 h ahead).
  auto put = groups_.Put(kA, "g", "s", {{now - day - 5000, "e1"}, {now - day - 10, "e2"}, {now - day + 1000, "ok"}});
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(put->accepted, 1u);
  EXPECT_EQ(put->rejected.expired_end, 2);
  EXPECT_FALSE(put->rejected.too_new_start);
  EXPECT_FALSE(put->rejected.too_old_end);
  auto ahead = groups_.Put(kA, "g", "s", {{now, "ok"}, {now + 2 * 3600 * 1000 + 1, "n1"}, {now + 3 * 3600 * 1000, "n2"}});
  ASSERT_TRUE(ahead.ok()) << ahead.status().ToString();
  EXPECT_EQ(ahead->accepted, 1u);
  EXPECT_EQ(ahead->rejected.too_new_start, 1);
  EXPECT_FALSE(ahead->rejected.expired_end);
  ASSERT_TRUE(groups_.DeleteRetention(kA, "g").ok());
  auto old = groups_.Put(kA, "g", "s", {{now - 15 * day, "o"}, {now - 15 * day + 1, "o2"}});
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->rejected.too_old_end, 2);
  auto got = groups_.GetEvents(kA, {.group = "g", .stream = "s", .start_from_head = true});
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(Messages(got->events), ElementsAre("ok", "ok"));
}

TEST_F(LogGroupsTest, RetentionHidesOlderEventsOnReadAndOnlyAwsValuesAreAccepted) {
  MustGroupAndStream(kA, "g", "s");
  const int64_t day = 24LL * 3600 * 1000;
  MustPut(kA, "g", "s", {{Now() - 2 * day + 1000, "old"}});
  MustPut(kA, "g", "s", {{Now(), "new"}});
  EXPECT_EQ(groups_.PutRetention(kA, "g", 2).message(),
            "1 validation error detected: Value '2' at 'retentionInDays' failed to satisfy constraint: Member must "
            "satisfy enum value set: [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, "
            "2192, 2557, 2922, 3288, 3653]");
  // A value that would truncate to an accepted int (2^32 + 1 -> 1) is still refused.
  EXPECT_TRUE(IsError(groups_.PutRetention(kA, "g", (int64_t{1} << 32) + 1), Error::kInvalidParameter));
  ASSERT_TRUE(groups_.PutRetention(kA, "g", 1).ok());
  EXPECT_EQ(groups_.DescribeGroups(kA, "g", 1, std::nullopt)->items[0].retention_days, 1);
  EXPECT_THAT(Messages(groups_.FilterEvents(kA, {.group = "g"})->items), ElementsAre("new"));
  EXPECT_THAT(Messages(groups_.GetEvents(kA, {.group = "g", .stream = "s"})->events), ElementsAre("new"));
  ASSERT_TRUE(groups_.DeleteRetention(kA, "g").ok());
  EXPECT_THAT(Messages(groups_.FilterEvents(kA, {.group = "g"})->items), ElementsAre("old", "new"));
}

TEST_F(LogGroupsTest, PruneExpiredDeletesWhatRetentionHidesAndKeepsTheRest) {
  MustGroupAndStream(kA, "g", "s");
  MustGroupAndStream(kA, "keep", "s");
  MustPut(kA, "g", "s", {{Now(), "old"}});
  MustPut(kA, "keep", "s", {{Now(), "kept: no retention"}});
  ASSERT_TRUE(groups_.PutRetention(kA, "g", 1).ok());
  clock_.Advance(std::chrono::hours(20));
  MustPut(kA, "g", "s", {{Now(), "new"}});
  clock_.Advance(std::chrono::hours(5));  // "old" is 25 h old, "new" 5 h
  auto pruned = groups_.PruneExpired(clock_.Now());
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  EXPECT_EQ(*pruned, 1u);
  ASSERT_TRUE(groups_.DeleteRetention(kA, "g").ok());  // what was pruned does not come back
  EXPECT_THAT(Messages(groups_.FilterEvents(kA, {.group = "g"})->items), ElementsAre("new"));
  EXPECT_THAT(Messages(groups_.FilterEvents(kA, {.group = "keep"})->items), ElementsAre("kept: no retention"));
  auto streams = groups_.DescribeStreams(kA, "g", "", StreamOrder::kName, false, 50, std::nullopt);
  EXPECT_EQ(streams->items[0].first_event_ms, Now() - 5 * 3600 * 1000);
  EXPECT_EQ(*groups_.PruneExpired(clock_.Now()), 0u);  // nothing left to prune
}

TEST_F(LogGroupsTest, GetEventsPagesForwardAndBackwardAndRepeatsTheForwardTokenAtTheEnd) {
  MustGroupAndStream(kA, "g", "s");
  std::vector<InputEvent> batch;
  for (int i = 0; i < 5; ++i) batch.push_back({Now() + i, "m" + std::to_string(i)});
  MustPut(kA, "g", "s", batch);
  // Without startFromHead: the newest `limit` events, oldest first.
  auto tail = groups_.GetEvents(kA, {.group = "g", .stream = "s", .limit = 2});
  ASSERT_TRUE(tail.ok());
  EXPECT_THAT(Messages(tail->events), ElementsAre("m3", "m4"));
  auto back = groups_.GetEvents(kA, {.group = "g", .stream = "s", .limit = 2, .token = tail->next_backward});
  EXPECT_THAT(Messages(back->events), ElementsAre("m1", "m2"));
  auto head = groups_.GetEvents(kA, {.group = "g", .stream = "s", .limit = 3, .start_from_head = true});
  EXPECT_THAT(Messages(head->events), ElementsAre("m0", "m1", "m2"));
  auto next = groups_.GetEvents(kA, {.group = "g", .stream = "s", .limit = 3, .token = head->next_forward});
  EXPECT_THAT(Messages(next->events), ElementsAre("m3", "m4"));
  auto end = groups_.GetEvents(kA, {.group = "g", .stream = "s", .limit = 3, .token = next->next_forward});
  EXPECT_THAT(end->events, IsEmpty());
  EXPECT_EQ(end->next_forward, next->next_forward);
  auto again = groups_.GetEvents(kA, {.group = "g", .stream = "s", .limit = 3, .token = end->next_forward});
  EXPECT_EQ(again->next_forward, end->next_forward);
  // A new event appears at the end position.
  MustPut(kA, "g", "s", {{Now() + 10, "m5"}});
  auto more = groups_.GetEvents(kA, {.group = "g", .stream = "s", .limit = 3, .token = end->next_forward});
  EXPECT_THAT(Messages(more->events), ElementsAre("m5"));
  // An empty stream read from its end: the tokens it answers are good, and the forward one sees what comes.
  MustGroupAndStream(kA, "g", "empty");
  auto none = groups_.GetEvents(kA, {.group = "g", .stream = "empty"});
  ASSERT_TRUE(none.ok());
  EXPECT_THAT(none->events, IsEmpty());
  auto still = groups_.GetEvents(kA, {.group = "g", .stream = "empty", .token = none->next_forward});
  ASSERT_TRUE(still.ok()) << still.status().ToString();
  EXPECT_EQ(still->next_forward, none->next_forward);
  ASSERT_TRUE(groups_.GetEvents(kA, {.group = "g", .stream = "empty", .token = none->next_backward}).ok());
  MustPut(kA, "g", "empty", {{Now(), "late"}});
  EXPECT_THAT(Messages(groups_.GetEvents(kA, {.group = "g", .stream = "empty", .token = none->next_forward})->events),
              ElementsAre("late"));
  // [start, end): end exclusive.
  auto window = groups_.GetEvents(kA, {.group = "g", .stream = "s", .start_ms = Now() + 1, .end_ms = Now() + 3,
                                       .start_from_head = true});
  EXPECT_THAT(Messages(window->events), ElementsAre("m1", "m2"));
}

TEST_F(LogGroupsTest, FilterInterleavesStreamsByTimeMatchesThePatternAndPagesWithStableIds) {
  ASSERT_TRUE(groups_.CreateGroup(kA, {.name = "g"}).ok());
  for (std::string n : {"web/1", "web/2", "db/1"}) ASSERT_TRUE(groups_.CreateStream(kA, "g", n).ok());
  const int64_t t = Now();
  MustPut(kA, "g", "web/1", {{t + 1, "ERROR one"}, {t + 4, "INFO four"}, {t + 5, "ERROR five"}});
  MustPut(kA, "g", "web/2", {{t + 2, "ERROR two"}, {t + 3, "ERROR three"}});
  MustPut(kA, "g", "db/1", {{t + 2, "ERROR db"}});
  auto all = groups_.FilterEvents(kA, {.group = "g", .filter_pattern = "ERROR"});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_THAT(Messages(all->items), ElementsAre("ERROR one", "ERROR two", "ERROR db", "ERROR three", "ERROR five"));
  EXPECT_FALSE(all->next);
  auto web = groups_.FilterEvents(kA, {.group = "g", .stream_prefix = "web/", .filter_pattern = "ERROR -two"});
  EXPECT_THAT(Messages(web->items), ElementsAre("ERROR one", "ERROR three", "ERROR five"));
  auto named = groups_.FilterEvents(kA, {.group = "g", .stream_names = {"db/1", "missing"}});
  EXPECT_THAT(Messages(named->items), ElementsAre("ERROR db"));
  EXPECT_EQ(named->items[0].stream, "db/1");
  auto window = groups_.FilterEvents(kA, {.group = "g", .start_ms = t + 2, .end_ms = t + 3});
  EXPECT_THAT(Messages(window->items), ElementsAre("ERROR two", "ERROR db", "ERROR three"));
  auto widest = groups_.FilterEvents(kA, {.group = "g", .start_ms = INT64_MIN, .end_ms = INT64_MAX});
  ASSERT_TRUE(widest.ok());
  EXPECT_EQ(widest->items.size(), 6u);
  // Pages of 2 give the same events, in the same order, with the same ids.
  std::vector<std::string> ids, msgs;
  std::optional<std::string> after;
  do {
    auto p = groups_.FilterEvents(kA, {.group = "g", .filter_pattern = "ERROR", .limit = 2, .after = after});
    ASSERT_TRUE(p.ok());
    for (const auto& e : p->items) ids.push_back(e.event_id), msgs.push_back(e.message);
    after = p->next;
  } while (after);
  EXPECT_EQ(msgs, Messages(all->items));
  std::vector<std::string> all_ids;
  for (const auto& e : all->items) all_ids.push_back(e.event_id);
  EXPECT_EQ(ids, all_ids);
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size());
  Status bad = groups_.FilterEvents(kA, {.group = "g", .filter_pattern = "a@b"}).status();
  EXPECT_TRUE(IsError(bad, Error::kInvalidParameter));
  EXPECT_TRUE(IsError(groups_.FilterEvents(kA, {.group = "g", .stream_names = {"a"}, .stream_prefix = "w"}).status(),
                      Error::kInvalidParameter));
}

TEST_F(LogGroupsTest, FilterStopsAtItsScanBudgetWithAnEmptyPageAndAPosition) {
  MustGroupAndStream(kA, "g", "s");
  const size_t n = LogGroups::kFilterScanBudget + 10;
  std::vector<InputEvent> batch;
  for (size_t i = 0; i < n; ++i) {
    batch.push_back({Now(), i + 1 == n ? "needle" : "hay"});
    if (batch.size() == 10000 || i + 1 == n) MustPut(kA, "g", "s", std::exchange(batch, {}));
  }
  auto p1 = groups_.FilterEvents(kA, {.group = "g", .filter_pattern = "needle"});
  ASSERT_TRUE(p1.ok());
  EXPECT_THAT(p1->items, IsEmpty());
  ASSERT_TRUE(p1->next);
  auto p2 = groups_.FilterEvents(kA, {.group = "g", .filter_pattern = "needle", .after = p1->next});
  ASSERT_TRUE(p2.ok());
  EXPECT_THAT(Messages(p2->items), ElementsAre("needle"));
  EXPECT_FALSE(p2->next);
}

TEST_F(LogGroupsTest, FilterOverManyStreamsPagesEveryEventOnceInTimeOrder) {
  ASSERT_TRUE(groups_.CreateGroup(kA, {.name = "g"}).ok());
  constexpr int kStreams = 1000;
  for (int i = 0; i < kStreams; ++i) {
    const std::string name = fmt::format("task/{:04}", (i * 7919) % kStreams);  // names not in time order
    ASSERT_TRUE(groups_.CreateStream(kA, "g", name).ok());
    MustPut(kA, "g", name, {{Now() + i, fmt::format("m{:04}", i)}, {Now() + kStreams + i, fmt::format("n{:04}", i)}});
  }
  std::vector<std::string> got;
  std::optional<std::string> after;
  int pages = 0;
  do {
    auto p = groups_.FilterEvents(kA, {.group = "g", .limit = 150, .after = after});
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    for (const auto& e : p->items) got.push_back(e.message);
    after = p->next;
    ASSERT_LT(++pages, 100);
  } while (after);
  ASSERT_EQ(got.size(), 2u * kStreams);
  for (int i = 0; i < kStreams; ++i) {
    EXPECT_EQ(got[static_cast<size_t>(i)], fmt::format("m{:04}", i));
    EXPECT_EQ(got[static_cast<size_t>(kStreams + i)], fmt::format("n{:04}", i));
  }
}

TEST_F(LogGroupsTest, DeletingABigGroupRemovesItsEventsInBoundedTransactions) {
  MustGroupAndStream(kA, "big", "s");
  MustGroupAndStream(kA, "other", "s");
  const size_t n = LogGroups::kPurgeChunk * 2 + 17;
  std::vector<InputEvent> batch;
  for (size_t i = 0; i < n; ++i) {
    batch.push_back({Now(), "x"});
    if (batch.size() == 10000 || i + 1 == n) MustPut(kA, "big", "s", std::exchange(batch, {}));
  }
  MustPut(kA, "other", "s", {{Now(), "stays"}});
  ASSERT_TRUE(groups_.DeleteGroup(kA, "big").ok());
  size_t left = 0;
  ASSERT_TRUE((*store_).Read([&](store::ReadTxn& txn) -> Status {
    auto rows = txn.Scan("logs_events", store::Range{"", ""}, 10);
    left = rows.ok() ? rows->size() : 99;
    auto work = txn.Scan("logs_deleted_groups", store::Range{"", ""}, 10);
    EXPECT_TRUE(work.ok() && work->empty());
    return OkStatus();
  }).ok());
  EXPECT_EQ(left, 1u);  // only the other group's event
  EXPECT_THAT(Messages(groups_.FilterEvents(kA, {.group = "other"})->items), ElementsAre("stays"));
}

TEST_F(LogGroupsTest, TagsOnCreateAndByArnAndDeletingAGroupRemovesEverything) {
  ASSERT_TRUE(groups_.CreateGroup(kA, {.name = "g", .tags = {{"team", "web"}}}).ok());
  const std::string arn = LogGroups::GroupArn(kA, "g");
  ASSERT_TRUE(groups_.TagResource(kA, arn + ":*", {{"env", "prod"}}).ok());
  EXPECT_THAT(*groups_.ListTags(kA, arn), ElementsAre(Tag{"env", "prod"}, Tag{"team", "web"}));
  ASSERT_TRUE(groups_.UntagResource(kA, arn, {"team"}).ok());
  EXPECT_THAT(*groups_.ListTags(kA, arn), ElementsAre(Tag{"env", "prod"}));
  std::vector<Tag> many;
  for (int i = 0; i < 50; ++i) many.push_back({"k" + std::to_string(i), "v"});
  EXPECT_TRUE(IsError(groups_.TagResource(kA, arn, many), Error::kTooManyTags));
  ASSERT_TRUE(groups_.CreateStream(kA, "g", "s").ok());
  MustPut(kA, "g", "s", {{Now(), "x"}});
  ASSERT_TRUE(groups_.DeleteGroup(kA, "g").ok());
  ASSERT_TRUE(groups_.CreateGroup(kA, {.name = "g"}).ok());
  EXPECT_THAT(*groups_.ListTags(kA, arn), IsEmpty());
  EXPECT_TRUE(IsError(groups_.GetEvents(kA, {.group = "g", .stream = "s"}).status(), Error::kResourceNotFound));
  EXPECT_TRUE((*store_).Read([&](store::ReadTxn& txn) -> Status {
    auto rows = txn.Scan("logs_events", store::Range{"", ""}, 10);
    EXPECT_TRUE(rows.ok() && rows->empty());
    return OkStatus();
  }).ok());
}

}  // namespace
}  // namespace paddock::logs
