// store_crash_writer DIR | postgres:CONNINFO: writes to a durable SqliteStore in DIR/state.db, or
// to a PostgresStore on CONNINFO, from crash::kThreads threads, each key n after key n-1, forever,
// and prints "ack T N" once thread T's write N returned OK. The crash tests kill it with SIGKILL
// (store/testing/crash_run.h) and check that every acknowledged write is there.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "store/testing/crash_writer.h"
#include "store/postgres/postgres_store.h"
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
    std::fprintf(stderr, "usage: %s DIR | postgres:CONNINFO\n", argv[0]);
    return 2;
  }
  const std::string where = argv[1];
  auto open = [&]() -> paddock::StatusOr<std::unique_ptr<Store>> {
    if (where.starts_with("postgres:")) {
      ASSIGN_OR_RETURN(auto pg, PostgresStore::Open({.url = where.substr(9)}));
      return std::unique_ptr<Store>(std::move(pg));
    }
    ASSIGN_OR_RETURN(auto lite, SqliteStore::Open({.path = where + "/state.db", .durable = true}));
    return std::unique_ptr<Store>(std::move(lite));
  };
  auto store = open();
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
