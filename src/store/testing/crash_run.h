// store_crash_writer under kill -9, for every Store implementation's crash test: the writer
// writes from crash::kThreads threads and prints an ack per durable write; the test kills it with
// SIGKILL and then checks that every acknowledged write is in the store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/store.h"

namespace paddock::store::testing {

struct CrashRun {
  std::vector<int64_t> last;  // per writer thread: its last acknowledged sequence number, or -1
  int acks = 0;
};

// Spawns `writer ARG`, reads its acks, kills it with SIGKILL once `kill_after` have arrived, and
// fills `out` with what it acknowledged before it died. Test failures on anything unexpected.
void RunWriterUntilKilled(const std::string& writer, const std::string& arg, int kill_after, CrashRun* out);

// Expects every write `run` acknowledged to be in `store`, with its value.
void ExpectAcknowledgedWrites(Store& store, const CrashRun& run);

}  // namespace paddock::store::testing
