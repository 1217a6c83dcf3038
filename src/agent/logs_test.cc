#include "agent/logs.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

namespace paddock::agent {
namespace {
namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class LogsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt_name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string fmt_name() {
    return "paddock-logs-test-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  fs::path dir_;
};

// Opens `fifo` as a container gets it (agent/runtime: read-write, blocking).
int OpenAsContainer(const fs::path& fifo) { return ::open(fifo.c_str(), O_RDWR | O_CLOEXEC); }

void WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    ASSERT_GT(n, 0) << std::strerror(errno);
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// Waits (bounded) until the pump has moved `bytes` in all.
bool WaitPumped(LogPump& pump, uint64_t bytes) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pump.bytes_pumped() < bytes) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

uint64_t SizeOr0(const fs::path& p) {
  std::error_code ec;
  uint64_t n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

TEST_F(LogsTest, PumpRotatesByRenameAndKeepsEveryByteOfTheLastTwoParts) {
  LogPump pump(LogPump::Options{.max_bytes = 1000, .pipe_bytes = 1 << 16});
  ASSERT_TRUE(pump.Start().ok());
  const fs::path fifo = dir_ / "web.fifo", log = dir_ / "web.log";
  ASSERT_TRUE(pump.Attach(fifo, log).ok());
  ASSERT_TRUE(pump.Attach(fifo, log).ok());  // again: nothing changes
  int w = OpenAsContainer(fifo);
  ASSERT_GE(w, 0);
  std::string all;
  for (int i = 0; all.size() < 5500; ++i) all += std::to_string(i) + ",";
  all.resize(5500);
  for (size_t at = 0; at < all.size(); at += 700) WriteAll(w, std::string_view(all).substr(at, 700));
  ASSERT_TRUE(WaitPumped(pump, all.size()));
  // Rotated before each write that would pass the cap: .1 is a full part, the log the rest.
  EXPECT_EQ(Read(dir_ / "web.log.1"), all.substr(4000, 1000));
  EXPECT_EQ(Read(log), all.substr(5000));
  struct stat st;
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ::close(w);
  pump.Detach(fifo);
  EXPECT_FALSE(fs::exists(fifo));
}

// The attack of finding 6 in small: a writer as fast as the machine goes; sampled all along,
// the two files never hold more than twice the cap.
TEST_F(LogsTest, AFastWriterNeverTakesTheLogPastTwiceTheCap) {
  constexpr uint64_t kCap = 1 << 20;
  LogPump pump(LogPump::Options{.max_bytes = kCap, .pipe_bytes = 1 << 20});
  ASSERT_TRUE(pump.Start().ok());
  const fs::path fifo = dir_ / "spam.fifo", log = dir_ / "spam.log";
  ASSERT_TRUE(pump.Attach(fifo, log).ok());
  int w = OpenAsContainer(fifo);
  ASSERT_GE(w, 0);
  constexpr uint64_t kTotal = uint64_t{256} << 20;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    std::string block(64 * 1024, 'A');
    for (uint64_t sent = 0; sent < kTotal; sent += block.size()) WriteAll(w, block);
    done = true;
  });
  uint64_t most = 0, samples = 0;
  const auto started = std::chrono::steady_clock::now();
  while (!done) {
    most = std::max(most, SizeOr0(log) + SizeOr0(dir_ / "spam.log.1"));
    ++samples;
  }
  writer.join();
  ASSERT_TRUE(WaitPumped(pump, kTotal));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "pumped " << (kTotal >> 20) << " MiB in " << seconds << " s (" << (kTotal >> 20) / seconds
            << " MiB/s), " << samples << " samples, most on disk " << most << " bytes\n";
  EXPECT_LE(most, 2 * kCap);
  EXPECT_EQ(SizeOr0(log) + SizeOr0(dir_ / "spam.log.1"), 2 * kCap);  // 256 MiB is a whole number of caps
  ::close(w);
}

// The container holds its FIFO read-write: while no pump reads, its writes neither fail nor
// raise SIGPIPE; a new pump (an agent restarted) picks up what waited, after what the log has.
TEST_F(LogsTest, OutputWaitsInTheFifoWhileNoAgentReadsAndIsPumpedLater) {
  const fs::path fifo = dir_ / "web.fifo", log = dir_ / "web.log";
  {
    LogPump first(LogPump::Options{});
    ASSERT_TRUE(first.Start().ok());
    ASSERT_TRUE(first.Attach(fifo, log).ok());
    int w = OpenAsContainer(fifo);
    WriteAll(w, "before;");
    ASSERT_TRUE(WaitPumped(first, 7));
    first.Stop();  // the agent goes away; the container keeps its fd
    WriteAll(w, "while away;");  // no reader but itself: no EPIPE, no SIGPIPE
    LogPump second(LogPump::Options{});
    ASSERT_TRUE(second.Start().ok());
    ASSERT_TRUE(second.Attach(fifo, log).ok());
    ASSERT_TRUE(WaitPumped(second, 11));
    WriteAll(w, "after");
    ::close(w);  // the container exits
    second.Detach(fifo);  // drains what is left
  }
  EXPECT_EQ(Read(log), "before;while away;after");
  EXPECT_FALSE(fs::exists(fifo));
}

// A sink (the awslogs driver) gets every byte beside the log file; while it says it is full the
// pump leaves the FIFO alone (its writers block once the pipe is full), and resumes when told.
TEST_F(LogsTest, ASinkThatIsFullStopsThePumpReadingItsFifo) {
  struct Sink final : LogSink {
    std::mutex mu;
    std::string got;
    std::atomic<bool> full{false};
    std::function<void()> resume;
    void Write(std::string_view bytes) override {
      std::lock_guard lock(mu);
      got.append(bytes);
    }
    bool Full() override { return full.load(); }
    void SetResume(std::function<void()> r) override { resume = std::move(r); }
    size_t size() {
      std::lock_guard lock(mu);
      return got.size();
    }
  };
  auto sink = std::make_shared<Sink>();
  LogPump pump(LogPump::Options{.max_bytes = 0, .pipe_bytes = 64 * 1024});
  ASSERT_TRUE(pump.Start().ok());
  const fs::path fifo = dir_ / "web.fifo", log = dir_ / "web.log";
  ASSERT_TRUE(pump.Attach(fifo, log, sink).ok());
  ASSERT_TRUE(sink->resume);
  int fd = OpenAsContainer(fifo);
  ASSERT_GE(fd, 0);
  WriteAll(fd, "one\n");
  ASSERT_TRUE(WaitPumped(pump, 4));
  sink->full = true;
  WriteAll(fd, "two\n");  // the pump wakes, sees the sink full, and stops reading the FIFO
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(pump.bytes_pumped(), 4u);
  int waiting = 0;
  ASSERT_EQ(::ioctl(fd, FIONREAD, &waiting), 0);
  EXPECT_EQ(waiting, 4);
  sink->full = false;
  sink->resume();
  ASSERT_TRUE(WaitPumped(pump, 8));
  EXPECT_EQ(sink->size(), 8u);
  ::close(fd);
  pump.Detach(fifo);
  pump.Stop();
  EXPECT_EQ(Read(log), "one\ntwo\n");
  EXPECT_EQ(sink->got, "one\ntwo\n");
}

TEST_F(LogsTest, IndexMarkerAndExpiry) {
  const fs::path task = dir_ / "abc";
  ASSERT_TRUE(WriteLogIndex(task, {"web", "sidecar"}).ok());
  EXPECT_EQ(Read(task / "containers"), "web\nsidecar\n");
  struct stat st;
  ASSERT_EQ(::stat(task.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);  // container output is the tenant's
  EXPECT_EQ(RemoveExpiredLogs(dir_, std::chrono::seconds(0)), 0u);  // not stopped yet
  ASSERT_TRUE(MarkLogsStopped(task).ok());
  EXPECT_TRUE(fs::exists(task / "STOPPED"));
  EXPECT_EQ(RemoveExpiredLogs(dir_, std::chrono::hours(1)), 0u);  // stopped just now
  EXPECT_EQ(RemoveExpiredLogs(dir_, std::chrono::seconds(0)), 1u);
  EXPECT_FALSE(fs::exists(task));
  EXPECT_TRUE(MarkLogsStopped(dir_ / "never").ok());  // no directory: nothing to mark
}

}  // namespace
}  // namespace paddock::agent
