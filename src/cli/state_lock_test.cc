// The state directory's lock and the running-server records, in one process: a second holder is
// refused by name, the holder is found without taking the lock, records of servers that are gone
// are ignored, and image/logs pick the running server's directory.
#include "cli/state_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace paddock::cli {
namespace {
namespace fs = std::filesystem;

class StateLockTest : public ::testing::Test {
 protected:
  StateLockTest() {
    std::string tmpl = (fs::temp_directory_path() / "paddock-lock-XXXXXX").string();
    root_ = mkdtemp(tmpl.data());
    setenv("PADDOCK_RUN_DIR", (root_ + "/run").c_str(), 1);
    fs::create_directories(root_ + "/a");
    fs::create_directories(root_ + "/b");
  }
  ~StateLockTest() override {
    unsetenv("PADDOCK_RUN_DIR");
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string root_;
};

TEST_F(StateLockTest, ASecondHolderIsRefusedNamingTheFirst) {
  auto first = StateDirLock::Acquire(root_ + "/a", "up");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE((*first)->Publish("http://127.0.0.1:4566").ok());
  for (const char* role : {"server", "up", "agent", "down"}) {
    auto second = StateDirLock::Acquire(root_ + "/a/", role);  // the same directory, spelled otherwise
    ASSERT_FALSE(second.ok()) << role;
    EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
    const std::string m(second.status().message());
    EXPECT_NE(m.find(fmt::format("paddock up (pid {}, http://127.0.0.1:4566)", getpid())), std::string::npos) << m;
    EXPECT_NE(m.find("another --state-dir"), std::string::npos) << m;
  }
  // Another directory is free.
  EXPECT_TRUE(StateDirLock::Acquire(root_ + "/b", "agent").ok());
  first->reset();
  EXPECT_TRUE(StateDirLock::Acquire(root_ + "/a", "server").ok());
}

TEST_F(StateLockTest, FindLockHolderNeverTakesTheLock) {
  auto none = FindLockHolder(root_ + "/a");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto lock = StateDirLock::Acquire(root_ + "/a", "server");
  ASSERT_TRUE(lock.ok());
  for (int i = 0; i < 2; ++i) {  // asking twice changes nothing
    auto held = FindLockHolder(root_ + "/a");
    ASSERT_TRUE(held.ok() && held->has_value());
    EXPECT_EQ((*held)->pid, getpid());
    EXPECT_EQ((*held)->role, "server");
    EXPECT_EQ((*held)->state_dir, fs::weakly_canonical(root_ + "/a").string());
  }
  EXPECT_FALSE(StateDirLock::Acquire(root_ + "/a", "up").ok());
  lock->reset();
  EXPECT_FALSE(FindLockHolder(root_ + "/a")->has_value());
}

TEST_F(StateLockTest, RunningServersAndTheDefaultStateDirectory) {
  std::string note;
  EXPECT_EQ(*DefaultStateDir(&note), "./.paddock");  // none runs
  EXPECT_EQ(note, "");
  auto a = StateDirLock::Acquire(root_ + "/a", "up");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE((*a)->Publish("http://127.0.0.1:1").ok());
  // A record whose server is gone (killed before removing it) is ignored and removed.
  const std::string stale = RunningServersDir() + "/999999999";
  std::ofstream(stale) << "pid=999999999\nrole=up\nendpoint=http://x\nstate_dir=" << root_ << "/b\n";
  std::vector<LockHolder> running = RunningServers();
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].endpoint, "http://127.0.0.1:1");
  EXPECT_FALSE(fs::exists(stale));
  auto one = DefaultStateDir(&note);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, fs::weakly_canonical(root_ + "/a").string());
  EXPECT_NE(note.find("paddock up (pid"), std::string::npos) << note;
  // An agent's directory is not a server's: image and logs do not pick it.
  auto agent = StateDirLock::Acquire(root_ + "/b", "agent");
  ASSERT_TRUE(agent.ok());
  EXPECT_EQ(*DefaultStateDir(&note), *one);
  // Two servers: ask which. The second is another process (records are keyed by pid).
  agent->reset();
  int ready[2], release[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(release), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    close(release[1]);
    auto b = StateDirLock::Acquire(root_ + "/b", "server");
    const bool ok = b.ok() && (*b)->Publish("http://127.0.0.1:2").ok();
    char c = ok ? '1' : '0';
    if (write(ready[1], &c, 1) != 1) _exit(1);
    if (read(release[0], &c, 1) < 0) _exit(1);  // until the parent closes it
    b->reset();
    _exit(0);
  }
  close(ready[1]);
  close(release[0]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  EXPECT_EQ(c, '1');
  EXPECT_EQ(RunningServers().size(), 2u);
  auto two = DefaultStateDir(&note);
  ASSERT_FALSE(two.ok());
  const std::string m(two.status().message());
  EXPECT_NE(m.find("pass --state-dir"), std::string::npos) << m;
  EXPECT_NE(m.find(fs::weakly_canonical(root_ + "/a").string()), std::string::npos) << m;
  EXPECT_NE(m.find(fs::weakly_canonical(root_ + "/b").string()), std::string::npos) << m;
  // ... unless one of them is ./.paddock here.
  const fs::path cwd = fs::current_path();
  fs::create_directories(root_ + "/work");
  fs::create_symlink(root_ + "/b", root_ + "/work/.paddock");
  fs::current_path(root_ + "/work");
  EXPECT_EQ(*DefaultStateDir(&note), "./.paddock");
  fs::current_path(cwd);
  close(release[1]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(RunningServers().size(), 1u);
  a->reset();
  EXPECT_TRUE(RunningServers().empty());
  EXPECT_EQ(*DefaultStateDir(&note), "./.paddock");
}

TEST_F(StateLockTest, RecordsInADirectoryOthersCanWriteAreNotTrusted) {
  // Another user planting a record naming their own state directory (where `paddock image import`
  // would then write) needs a directory they can write to: such a directory is not read, nor written.
  const std::string records = RunningServersDir();
  fs::create_directories(records);
  auto a = StateDirLock::Acquire(root_ + "/a", "server");
  ASSERT_TRUE(a.ok());
  for (const std::string& loose : {records, fs::path(records).parent_path().string()}) {
    fs::permissions(loose, fs::perms::group_write | fs::perms::others_write, fs::perm_options::add);
    Status published = (*a)->Publish("http://127.0.0.1:1");
    EXPECT_FALSE(published.ok()) << loose;
    EXPECT_NE(published.message().find("writable by no one else"), std::string::npos) << published.message();
    std::ofstream(records + "/" + std::to_string(getpid())) << "pid=" << getpid() << "\nrole=server\nstate_dir=" << root_
                                                          << "/a\n";
    EXPECT_TRUE(RunningServers().empty()) << loose;
    std::string note;
    EXPECT_EQ(*DefaultStateDir(&note), "./.paddock") << loose;
    fs::permissions(loose, fs::perms::group_write | fs::perms::others_write, fs::perm_options::remove);
  }
  EXPECT_EQ(RunningServers().size(), 1u);  // the same record, once the directory is tight again
}

}  // namespace
}  // namespace paddock::cli
