#include "agent/logs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

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

TEST_F(LogsTest, RotatesByCopyTruncateAndAppendsContinueAtZero) {
  const fs::path log = dir_ / "web.log";
  // The writer holds an O_APPEND fd across the rotation, as the container does.
  FILE* w = std::fopen(log.c_str(), "a");
  ASSERT_NE(w, nullptr);
  std::fputs("0123456789", w);
  std::fflush(w);
  auto r = RotateLog(log, 100);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);  // under the limit
  std::fputs("abcdefghij", w);
  std::fflush(w);
  r = RotateLog(log, 15);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(*r);
  EXPECT_EQ(Read(dir_ / "web.log.1"), "0123456789abcdefghij");
  EXPECT_EQ(fs::file_size(log), 0u);
  std::fputs("new", w);
  std::fflush(w);
  std::fclose(w);
  EXPECT_EQ(Read(log), "new");  // no hole: O_APPEND writes at the new end
  r = RotateLog(dir_ / "missing.log", 1);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
}

TEST_F(LogsTest, IndexMarkerAndExpiry) {
  const fs::path task = dir_ / "abc";
  ASSERT_TRUE(WriteLogIndex(task, {"web", "sidecar"}).ok());
  EXPECT_EQ(Read(task / "containers"), "web\nsidecar\n");
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
