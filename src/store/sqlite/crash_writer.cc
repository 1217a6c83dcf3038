// store_crash_writer DIR: writes to a durable SqliteStore in DIR/state.db from crash::kThreads
// threads, each key n after key n-1, forever, and prints "ack T N" once thread T's write N
// returned OK. crash_test kills it with SIGKILL and checks that every acknowledged write is there.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "store/sqlite/crash_writer.h"
#include "store/sqlite/sqlite_store.h"

namespace {

// One write(2) per line: lines from different threads never interleave on a pipe.
void WriteLine(const std::string& line) {
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(STDOUT_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);
    done += static_cast<size_t>(n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace paddock::store;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  auto store = SqliteStore::Open({.path = std::string(argv[1]) + "/state.db", .durable = true});
  if (!store.ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
    return 1;
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < crash::kThreads; ++t) {
    threads.emplace_back([&store, t] {
      for (uint64_t n = 0;; ++n) {
        paddock::Status s = (*store)->Write([&](WriteTxn& txn) {
          return txn.Put(crash::kTable, crash::RecordKey(t, n), crash::RecordValue(t, n));
        });
        if (!s.ok()) {
          std::fprintf(stderr, "write %d/%llu: %s\n", t, static_cast<unsigned long long>(n),
                       s.ToString().c_str());
          _exit(1);
        }
        WriteLine(fmt::format("ack {} {}\n", t, n));
      }
    });
  }
  for (auto& th : threads) th.join();  // never: the threads only stop by dying with the process
  return 0;
}
