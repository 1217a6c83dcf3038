// Kills store_crash_writer with SIGKILL mid-stream, then checks that every write it acknowledged
// is in the store: an OK from Write means durable.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "store/sqlite/crash_writer.h"
#include "store/sqlite/sqlite_store.h"
#include "store/testing/store_conformance.h"

extern char** environ;

namespace paddock::store {
namespace {

constexpr int kRounds = 5;

TEST(SqliteCrashTest, AcknowledgedWritesSurviveKill9) {
  std::random_device rd;
  const unsigned seed = rd();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);

  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round);
    testing::TempDir dir;
    int fds[2];
    ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    std::string writer = PADDOCK_STORE_CRASH_WRITER;
    std::vector<char*> argv = {writer.data(), const_cast<char*>(dir.path().c_str()), nullptr};
    pid_t pid = -1;
    int rc = posix_spawn(&pid, writer.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    ASSERT_EQ(rc, 0) << "spawn " << writer;

    // Kill once this many acks have arrived; keep reading what was already acked after that.
    const int kill_after = std::uniform_int_distribution<int>(1, 4000)(rng);
    std::vector<int64_t> last(crash::kThreads, -1);
    int acks = 0;
    bool killed = false;
    std::string pending;
    char buf[4096];
    for (;;) {
      ssize_t n = read(fds[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      ASSERT_GE(n, 0) << "read: " << errno;
      if (n == 0) break;
      pending.append(buf, static_cast<size_t>(n));
      size_t eol;
      while ((eol = pending.find('\n')) != std::string::npos) {
        std::istringstream line(pending.substr(0, eol));
        pending.erase(0, eol + 1);
        std::string word;
        int t = -1;
        int64_t seq = -1;
        line >> word >> t >> seq;
        ASSERT_TRUE(word == "ack" && t >= 0 && t < crash::kThreads) << line.str();
        // Each thread acks its writes in order.
        ASSERT_EQ(seq, last[t] + 1) << "thread " << t;
        last[t] = seq;
        ++acks;
      }
      if (!killed && acks >= kill_after) {
        ASSERT_EQ(kill(pid, SIGKILL), 0);
        killed = true;
      }
    }
    close(fds[0]);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(killed) << "the writer exited by itself after " << acks << " acks, status " << status;
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
    EXPECT_EQ(pending, "") << "a torn line is not an ack";

    auto store = SqliteStore::Open({.path = dir.path() + "/state.db", .durable = true});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    int checked = 0;
    Status s = (*store)->Read([&](ReadTxn& txn) -> Status {
      for (int t = 0; t < crash::kThreads; ++t) {
        for (int64_t seq = 0; seq <= last[t]; ++seq) {
          auto n = static_cast<uint64_t>(seq);
          ASSIGN_OR_RETURN(auto v, txn.Get(crash::kTable, crash::RecordKey(t, n)));
          EXPECT_EQ(v, crash::RecordValue(t, n)) << "acked write " << t << "/" << n << " lost";
          ++checked;
        }
      }
      return OkStatus();
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(checked, acks);
    EXPECT_GE(acks, kill_after);
  }
}

}  // namespace
}  // namespace paddock::store
