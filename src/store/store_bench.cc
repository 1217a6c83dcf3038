// store_bench [DIR] [--seconds=N] [--nondurable]: durable Write throughput and latency of
// SqliteStore with 1, 16 and 64 writer threads. Each write is the shape of an API mutation: a Get
// and two ~2 KB Puts (record and index). DIR (default: a temp dir under $TMPDIR or /tmp) must be
// on the disk being measured.
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "store/key.h"
#include "store/sqlite/sqlite_store.h"
#include "store/testing/test_schema.h"

namespace {

using namespace paddock::store;
using Clock = std::chrono::steady_clock;

struct Result {
  double writes_per_s;
  double p50_ms, p99_ms, max_ms;
  int failures;
};

Result Run(const std::string& dir, int threads, double seconds, bool durable) {
  std::string path = fmt::format("{}/bench-{}.db", dir, threads);
  auto opened = SqliteStore::Open({.path = path, .durable = durable, .schemas = {testing::kTestSchema}});
  if (!opened.ok()) {
    std::fprintf(stderr, "open: %s\n", opened.status().ToString().c_str());
    exit(1);
  }
  SqliteStore& store = **opened;
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::vector<double>> latencies(threads);
  std::vector<std::thread> workers;
  const auto start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        std::string key = Key().Str("acct").U64(static_cast<uint64_t>(t)).U64(i % 5000).Done();
        // Distinct every time: SQLite skips the page write when a Put stores identical bytes.
        std::string value = fmt::format("{:>2048}", fmt::format("{}/{}", t, i));
        auto t0 = Clock::now();
        paddock::Status s = store.Write([&](WriteTxn& txn) -> paddock::Status {
          ASSIGN_OR_RETURN(auto old, txn.Get("clusters", key));
          RETURN_IF_ERROR(txn.Put("clusters", key, value));
          return txn.Put("clusters_active", key, value);
        });
        latencies[t].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        if (!s.ok()) ++failures;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& w : workers) w.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  store.Close();

  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) { return all.empty() ? 0.0 : all[std::min(all.size() - 1, static_cast<size_t>(p * all.size()))]; };
  return Result{all.size() / elapsed, pct(0.50), pct(0.99), all.empty() ? 0.0 : all.back(), failures.load()};
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  double seconds = 5;
  bool durable = true;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.starts_with("--seconds=")) seconds = std::stod(std::string(a.substr(10)));
    else if (a == "--nondurable") durable = false;
    else dir = a;
  }
  std::string made;
  if (dir.empty()) {
    const char* base = getenv("TMPDIR");
    made = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/paddock-store-bench-XXXXXX";
    if (mkdtemp(made.data()) == nullptr) {
      std::perror("mkdtemp");
      return 1;
    }
    dir = made;
  }
  std::printf("store_bench: %s, durable=%s, %.0f s per run, write = Get + 2 x Put(2 KB)\n", dir.c_str(),
              durable ? "true" : "false", seconds);
  std::printf("%8s %12s %10s %10s %10s %9s\n", "threads", "writes/s", "p50 ms", "p99 ms", "max ms", "failures");
  for (int threads : {1, 16, 64}) {
    Result r = Run(dir, threads, seconds, durable);
    std::printf("%8d %12.0f %10.2f %10.2f %10.2f %9d\n", threads, r.writes_per_s, r.p50_ms, r.p99_ms,
                r.max_ms, r.failures);
    std::fflush(stdout);
  }
  if (!made.empty()) std::filesystem::remove_all(made);
  return 0;
}
