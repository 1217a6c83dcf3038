// The awslogs driver's pieces (agent/awslogs.h): options, lines, multiline events, batches, and
// the shipper's buffer in both modes — over a fake put, no control plane.
#include "agent/awslogs.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <condition_variable>
#include <mutex>

namespace paddock::agent::awslogs {
namespace {

namespace json = boost::json;

json::object Definition(std::string_view options) {
  return json::parse(fmt::format(R"({{"name":"web","logConfiguration":{{"logDriver":"awslogs","options":{}}}}})", options))
      .as_object();
}

std::string Refusal(std::string_view options) {
  auto c = ConfigOf(Definition(options));
  return c.ok() ? std::string() : std::string(c.status().message());
}

TEST(AwslogsConfig, ReadsEveryOption) {
  auto c = ConfigOf(Definition(R"({"awslogs-group":"/ecs/web","awslogs-region":"us-east-1",
      "awslogs-stream-prefix":"ecs","awslogs-create-group":"true","mode":"non-blocking","max-buffer-size":"64k"})"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ((*c)->group, "/ecs/web");
  EXPECT_EQ((*c)->region, "us-east-1");
  EXPECT_TRUE((*c)->create_group);
  EXPECT_EQ((*c)->mode, Mode::kNonBlocking);
  EXPECT_EQ((*c)->max_buffer_bytes, 64u * 1024);
  EXPECT_EQ(StreamName(**c, "web", "f00d", "pdk-a-f00d-0"), "ecs/web/f00d");
}

TEST(AwslogsConfig, DefaultsAndOtherDrivers) {
  auto c = ConfigOf(Definition(R"({"awslogs-group":"g"})"));
  ASSERT_TRUE(c.ok() && c->has_value());
  EXPECT_EQ((*c)->mode, Mode::kNonBlocking);  // AWS's default since June 25, 2025
  EXPECT_FALSE((*c)->mode_given);
  EXPECT_FALSE((*c)->create_group);
  EXPECT_EQ((*c)->max_buffer_bytes, kDefaultMaxBufferBytes);
  // Without a prefix: the container's runtime id, as ECS on EC2 names it.
  EXPECT_EQ(StreamName(**c, "web", "f00d", "pdk-a-f00d-0"), "pdk-a-f00d-0");
  auto none = ConfigOf(json::parse(R"({"name":"web"})").as_object());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

// Without a mode in its options a container takes the account's defaultLogDriverMode, as ECS
// writes it into the options; a max-buffer-size then holds only if that is non-blocking.
TEST(AwslogsConfig, TheAccountsDefaultModeAppliesOnlyWhereTheOptionsNameNone) {
  auto unnamed = ConfigOf(Definition(R"({"awslogs-group":"g","max-buffer-size":"2k"})"));
  ASSERT_TRUE(unnamed.ok() && unnamed->has_value()) << unnamed.status().ToString();
  auto non_blocking = WithDefaultMode(**unnamed, "non-blocking");
  ASSERT_TRUE(non_blocking.ok());
  EXPECT_EQ(non_blocking->mode, Mode::kNonBlocking);
  EXPECT_EQ(non_blocking->max_buffer_bytes, 2048u);
  auto blocking = WithDefaultMode(**unnamed, "blocking");
  EXPECT_EQ(blocking.status().message(), "logger: max-buffer-size option is only supported with 'mode=non-blocking'");
  auto plain = ConfigOf(Definition(R"({"awslogs-group":"g"})"));
  ASSERT_TRUE(plain.ok() && plain->has_value());
  EXPECT_EQ(WithDefaultMode(**plain, "blocking")->mode, Mode::kBlocking);
  EXPECT_EQ(WithDefaultMode(**plain, "")->mode, Mode::kNonBlocking);
  // A mode the options name wins over the account's.
  auto named = ConfigOf(Definition(R"({"awslogs-group":"g","mode":"non-blocking"})"));
  ASSERT_TRUE(named.ok() && named->has_value());
  EXPECT_EQ(WithDefaultMode(**named, "blocking")->mode, Mode::kNonBlocking);
}

TEST(AwslogsConfig, RefusesWhatDockerRefuses) {
  EXPECT_EQ(Refusal("{}"), "must specify a value for log opt 'awslogs-group'");
  EXPECT_EQ(Refusal(R"({"awslogs-group":"g","mode":"fast"})"), "logger: logger mode not supported: fast");
  EXPECT_EQ(Refusal(R"({"awslogs-group":"g","mode":"blocking","max-buffer-size":"1m"})"),
            "logger: max-buffer-size option is only supported with 'mode=non-blocking'");
  EXPECT_EQ(Refusal(R"({"awslogs-group":"g","mode":"non-blocking","max-buffer-size":"lots"})"),
            "logger: could not parse max-buffer-size: lots");
  EXPECT_EQ(Refusal(R"({"awslogs-group":"g","awslogs-datetime-format":"%Y","awslogs-multiline-pattern":"^x"})"),
            "you cannot configure log opt 'awslogs-datetime-format' and 'awslogs-multiline-pattern' at the same time");
  EXPECT_EQ(Refusal(R"({"awslogs-group":"g","awslogs-create-group":"yes"})"),
            "invalid value for log opt 'awslogs-create-group': yes");
  EXPECT_EQ(Refusal(R"({"awslogs-group":"g","awslogs-colour":"red"})"), "unknown log opt 'awslogs-colour' for awslogs log driver");
  EXPECT_NE(Refusal(R"({"awslogs-group":"g","awslogs-multiline-pattern":"(unclosed"})"), "");
}

TEST(AwslogsConfig, DatetimeFormatIsDockersRegex) {
  EXPECT_EQ(DatetimeFormatToRegex("%Y-%m-%d"), R"(^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[1,2][0-9]|3[0,1]))");
  EXPECT_EQ(DatetimeFormatToRegex("[%b %d, %Y %H:%M:%S]"),
            R"(^[(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (?:0[1-9]|[1,2][0-9]|3[0,1]), \d{4} )"
            R"((?:[0,1][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]])");
  EXPECT_EQ(ParseSize("1m"), 1u << 20);
  EXPECT_EQ(ParseSize("2G"), 2ull << 30);
  EXPECT_EQ(ParseSize("4096"), 4096u);
  EXPECT_EQ(ParseSize("k"), std::nullopt);
  EXPECT_EQ(ParseSize("-1"), std::nullopt);
}

std::vector<std::string> Split(LineSplitter& s, std::string_view bytes) {
  std::vector<std::string> out;
  s.Feed(bytes, [&](std::string_view l) { out.emplace_back(l); });
  return out;
}

TEST(LineSplitter, LinesAcrossReadsAndLongLinesInPieces) {
  LineSplitter s;
  EXPECT_EQ(Split(s, "one\ntw"), (std::vector<std::string>{"one"}));
  EXPECT_EQ(s.partial_bytes(), 2u);
  EXPECT_EQ(Split(s, "o\n\nthree\r\nfo"), (std::vector<std::string>{"two", "", "three\r"}));
  EXPECT_EQ(s.TakePartial(), "fo");
  EXPECT_EQ(s.partial_bytes(), 0u);
  // A line of 2.5 events: two full pieces as it grows, the rest with its newline.
  const std::string big(kMaxEventBytes * 2 + 10, 'x');
  auto pieces = Split(s, big.substr(0, kMaxEventBytes + 5));
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].size(), kMaxEventBytes);
  pieces = Split(s, big.substr(kMaxEventBytes + 5) + "\n");
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].size(), kMaxEventBytes);
  EXPECT_EQ(pieces[1].size(), 10u);
}

TEST(Assembler, OneEventALineWithoutAPatternAndNoEmptyEvents) {
  Assembler a("");
  std::vector<Event> out;
  a.Add("a", 1, out);
  a.Add("", 2, out);
  a.Add("b", 3, out);
  EXPECT_EQ(out, (std::vector<Event>{{1, "a"}, {3, "b"}}));
}

TEST(Assembler, MultilineJoinsUntilTheNextStart) {
  Assembler a(DatetimeFormatToRegex("%Y-%m-%d"));
  std::vector<Event> out;
  a.Add("2026-12-01 boom", 10, out);
  a.Add("  at frame 1", 11, out);
  a.Add("  at frame 2", 12, out);
  EXPECT_TRUE(out.empty());
  a.Add("2026-12-01 next", 20, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], (Event{10, "2026-12-01 boom\n  at frame 1\n  at frame 2\n"}));
  // The pending one waits while lines keep coming, and goes once idle (or at once, forced).
  a.Flush(out, /*idle_since_ms=*/19);
  EXPECT_EQ(out.size(), 1u);
  a.Flush(out, /*idle_since_ms=*/20);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1], (Event{20, "2026-12-01 next\n"}));
}

TEST(Assembler, MultilinePatternSearchesTheLine) {
  Assembler a("INFO|ERROR");
  std::vector<Event> out;
  a.Add("[x] INFO start", 1, out);
  a.Add("detail", 2, out);
  a.Add("[y] ERROR again", 3, out);
  a.Flush(out);
  EXPECT_EQ(out, (std::vector<Event>{{1, "[x] INFO start\ndetail\n"}, {3, "[y] ERROR again\n"}}));
}

TEST(TakeBatch, KeepsPutLogEventsRules) {
  std::deque<Event> events;
  for (int i = 0; i < 10005; ++i) events.push_back({i, "m"});
  EXPECT_EQ(TakeBatch(events).size(), kMaxBatchEvents);
  EXPECT_EQ(TakeBatch(events).size(), 5u);
  EXPECT_TRUE(TakeBatch(events).empty());

  // Bytes: 26 an event counted. Four events of (262118 bytes) are 1,048,576 exactly; a fifth
  // starts the next batch.
  for (int i = 0; i < 5; ++i) events.push_back({1, std::string(kMaxEventBytes, 'x')});
  EXPECT_EQ(TakeBatch(events).size(), 4u);
  EXPECT_EQ(TakeBatch(events).size(), 1u);

  // Span: at most 24 h from the first event.
  events = {{0, "a"}, {kMaxBatchSpanMs, "b"}, {kMaxBatchSpanMs + 1, "c"}};
  EXPECT_EQ(TakeBatch(events).size(), 2u);
  EXPECT_EQ(TakeBatch(events).size(), 1u);
}

// A put that records what it gets; `gate` closed: it blocks until opened.
struct FakePut {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<protocol::LogEvent> got;
  size_t calls = 0;
  bool gate_open = true;
  int fail_next = 0;  // transient failures before success
  std::string refuse;

  PutFn Fn() {
    return [this](std::vector<protocol::LogEvent> batch) -> StatusOr<protocol::LogsAnswer> {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return gate_open; });
      ++calls;
      if (fail_next > 0) {
        --fail_next;
        return Unavailable("control plane away");
      }
      if (!refuse.empty()) return protocol::LogsAnswer{refuse};
      for (auto& e : batch) got.push_back(std::move(e));
      cv.notify_all();
      return protocol::LogsAnswer{};
    };
  }
  void Open() {
    std::lock_guard lock(mu);
    gate_open = true;
    cv.notify_all();
  }
  size_t Count() {
    std::lock_guard lock(mu);
    return got.size();
  }
};

Config Cfg(Mode mode = Mode::kBlocking, uint64_t max = kDefaultMaxBufferBytes) {
  Config c;
  c.group = "g";
  c.mode = mode;
  c.max_buffer_bytes = max;
  return c;
}

Shipper::Options Opts() {
  Shipper::Options o;
  o.flush_interval = std::chrono::milliseconds(20);
  return o;
}

TEST(Shipper, ShipsLinesInOrderWithinTheIntervalAndThePartialLineAtClose) {
  FakePut put;
  Shipper s(Cfg(), put.Fn(), Opts());
  s.Write("one\ntwo\nthr");
  s.Write("ee\nfour");
  {
    std::unique_lock lock(put.mu);
    ASSERT_TRUE(put.cv.wait_for(lock, std::chrono::seconds(5), [&] { return put.got.size() == 3; }));
  }
  s.Close();
  ASSERT_EQ(put.got.size(), 4u);
  EXPECT_EQ(put.got[0].message, "one");
  EXPECT_EQ(put.got[2].message, "three");
  EXPECT_EQ(put.got[3].message, "four");
  for (size_t i = 1; i < put.got.size(); ++i) EXPECT_LE(put.got[i - 1].timestamp_ms, put.got[i].timestamp_ms);
  EXPECT_EQ(s.shipped_events(), 4u);
  s.Write("after close\n");  // dropped quietly
}

TEST(Shipper, BlockingModeFillsThenResumesAndLosesNothing) {
  FakePut put;
  put.gate_open = false;  // the control plane is slow
  Shipper s(Cfg(), put.Fn(), Opts());
  std::atomic<int> resumed{0};
  s.SetResume([&] { ++resumed; });
  const std::string line(1023, 'x');
  size_t written = 0;
  while (!s.Full()) {
    s.Write(line + "\n");
    ++written;
    ASSERT_LT(written, 100000u) << "never full";
  }
  EXPECT_GE(written * 1024, kBlockingBufferBytes - 1024);
  put.Open();
  for (int i = 0; i < 500 && resumed.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(resumed.load(), 1);
  EXPECT_FALSE(s.Full());
  s.Close();
  EXPECT_EQ(put.Count(), written);
  EXPECT_EQ(s.dropped_lines(), 0u);
}

TEST(Shipper, NonBlockingModeDropsPastTheBufferAndCounts) {
  FakePut put;
  put.gate_open = false;
  Shipper s(Cfg(Mode::kNonBlocking, 10 * 100), put.Fn(), Opts());
  const std::string line(99, 'y');
  for (int i = 0; i < 50; ++i) {
    s.Write(line + "\n");
    EXPECT_FALSE(s.Full());
  }
  // The thread may have taken some lines already; what is buffered never passes the bound.
  EXPECT_GE(s.dropped_lines(), 40u - 10u);
  put.Open();
  s.Close();
  EXPECT_EQ(put.Count() + s.dropped_lines(), 50u);
  EXPECT_LE(put.Count(), 20u);
}

TEST(Shipper, RetriesAFailingPutAndDropsARefusedBatch) {
  FakePut put;
  put.fail_next = 2;
  Shipper s(Cfg(), put.Fn(), Opts());
  s.Write("kept\n");
  s.Close();  // retries within Close (3 more tries at most)
  EXPECT_EQ(put.Count(), 1u);
  EXPECT_EQ(s.shipped_events(), 1u);

  FakePut refusing;
  refusing.refuse = "ResourceNotFoundException: The specified log stream does not exist.";
  Shipper r(Cfg(), refusing.Fn(), Opts());
  r.Write("lost\n");
  r.Close();
  EXPECT_EQ(r.refused_events(), 1u);
  EXPECT_EQ(r.shipped_events(), 0u);
}

}  // namespace
}  // namespace paddock::agent::awslogs
