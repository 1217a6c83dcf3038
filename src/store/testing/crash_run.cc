#include "store/testing/crash_run.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

#include <gtest/gtest.h>

#include "store/testing/crash_writer.h"

extern char** environ;

namespace paddock::store::testing {

void RunWriterUntilKilled(const std::string& writer, const std::string& arg, int kill_after, CrashRun* out) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  std::string program = writer, argument = arg;
  std::vector<char*> argv = {program.data(), argument.data(), nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, writer.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  ASSERT_EQ(rc, 0) << "spawn " << writer;

  // Kill once this many acks have arrived; keep reading what was already acked after that.
  std::vector<int64_t>& last = out->last;
  last.assign(crash::kThreads, -1);
  int& acks = out->acks;
  acks = 0;
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
}

void ExpectAcknowledgedWrites(Store& store, const CrashRun& run) {
  int checked = 0;
  Status s = store.Read([&](ReadTxn& txn) -> Status {
    for (int t = 0; t < crash::kThreads; ++t) {
      for (int64_t seq = 0; seq <= run.last[t]; ++seq) {
        auto n = static_cast<uint64_t>(seq);
        ASSIGN_OR_RETURN(auto v, txn.Get(crash::kTable, crash::RecordKey(t, n)));
        EXPECT_EQ(v, crash::RecordValue(t, n)) << "acked write " << t << "/" << n << " lost";
        ++checked;
      }
    }
    return OkStatus();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(checked, run.acks);
}

}  // namespace paddock::store::testing
