#include "agent/pull_progress.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/testing/fake_clock.h"

namespace paddock::agent {
namespace {
namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(PullReporterTest, KeepsTheLatestProgressInTheTasksLogDirectoryWhileThePullLasts) {
  char tmpl[] = "/tmp/paddock-pull-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  testing::FakeClock clock;
  {
    PullReporter reporter("arn:task/1", "web", "nginx:1.27", dir, clock);
    auto fn = reporter.Fn();
    fn(images::PullProgress{0, 2, 1 << 20, 8 << 20});
    EXPECT_EQ(Read(dir / "pull"), "pulling nginx:1.27 for container web: 0/2 layers, 1.0 MiB of 8.0 MiB\n");
    struct stat st {};
    ASSERT_EQ(::stat((dir / "pull").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);  // the task's logs are its account's
    // Bytes alone are rewritten at most every 200 ms; a finished layer at once.
    fn(images::PullProgress{0, 2, 2 << 20, 8 << 20});
    EXPECT_EQ(Read(dir / "pull"), "pulling nginx:1.27 for container web: 0/2 layers, 1.0 MiB of 8.0 MiB\n");
    fn(images::PullProgress{1, 2, 3 << 20, 8 << 20});
    EXPECT_EQ(Read(dir / "pull"), "pulling nginx:1.27 for container web: 1/2 layers, 3.0 MiB of 8.0 MiB\n");
    clock.Advance(std::chrono::milliseconds(250));
    fn(images::PullProgress{1, 2, 5 << 20, 8 << 20});
    EXPECT_EQ(Read(dir / "pull"), "pulling nginx:1.27 for container web: 1/2 layers, 5.0 MiB of 8.0 MiB\n");
  }
  EXPECT_FALSE(fs::exists(dir / "pull"));  // the pull is over
  EXPECT_FALSE(fs::exists(dir / "pull.tmp"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace paddock::agent
