// Kills store_crash_writer with SIGKILL mid-stream, then checks that every write it acknowledged
// is in the store: an OK from Write means durable.
#include <random>

#include <gtest/gtest.h>

#include "store/sqlite/sqlite_store.h"
#include "store/testing/crash_run.h"
#include "store/testing/store_conformance.h"

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
    const int kill_after = std::uniform_int_distribution<int>(1, 4000)(rng);
    testing::CrashRun run;
    testing::RunWriterUntilKilled(PADDOCK_STORE_CRASH_WRITER, dir.path(), kill_after, &run);
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_GE(run.acks, kill_after);
    auto store = SqliteStore::Open({.path = dir.path() + "/state.db", .durable = true});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    testing::ExpectAcknowledgedWrites(**store, run);
  }
}

}  // namespace
}  // namespace paddock::store
