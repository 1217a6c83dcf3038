// postgres_store_bench [--seconds=N]: PostgresStore's write throughput on a PostgreSQL of its own
// (store/testing/postgres_server.h: a temp dir, fsync on), for writes shaped like API mutations:
// R Gets (a family's counters, a service, a cluster...) and two Puts, one ~2 KB (a record) and one
// small (the row the first Get reads). 16 writer threads on one store; then 8 on each of two stores
// on the same database (two servers). Prints writes/s, p50/p99 latency, the batch size and the
// writer's round trips per write (PostgresStore::writer_stats).
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "store/key.h"
#include "store/postgres/postgres_store.h"
#include "store/testing/postgres_server.h"
#include "store/testing/test_schema.h"

namespace {

using namespace paddock::store;
using Clock = std::chrono::steady_clock;

std::unique_ptr<PostgresStore> OpenOrDie(const std::string& url) {
  auto opened = PostgresStore::Open({.url = url, .schemas = {testing::kTestSchema}});
  if (!opened.ok()) {
    std::fprintf(stderr, "open: %s\n", opened.status().ToString().c_str());
    exit(1);
  }
  return std::move(opened).value();
}

// `stores` (1 or 2) on database `db`, 16 writer threads spread over them, each write `reads` Gets
// and two Puts.
void Run(testing::PostgresServer& pg, const std::string& db, int stores, int reads, double seconds) {
  if (!pg.CreateDatabase(db).ok()) exit(1);
  std::vector<std::unique_ptr<PostgresStore>> opened;
  for (int i = 0; i < stores; ++i) opened.push_back(OpenOrDie(pg.Url(db)));
  constexpr int kThreads = 16;
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::vector<double>> latencies(kThreads);
  std::vector<PostgresStore::WriterStats> before;
  for (auto& s : opened) before.push_back(s->writer_stats());
  std::vector<std::thread> workers;
  const auto start = Clock::now();
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      PostgresStore& store = *opened[static_cast<size_t>(t % stores)];
      const uint64_t thread = static_cast<uint64_t>(t);
      for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        const std::string record = Key().Str("acct").U64(thread).U64(i % 5000).Done();
        const std::string value = fmt::format("{:>2048}", fmt::format("{}/{}", t, i));
        const auto t0 = Clock::now();
        paddock::Status s = store.Write([&](WriteTxn& txn) -> paddock::Status {
          for (int r = 0; r < reads; ++r)
            RETURN_IF_ERROR(txn.Get("meta", Key().U64(thread).U64(static_cast<uint64_t>(r)).Done()).status());
          RETURN_IF_ERROR(txn.Put("clusters", record, value));
          return txn.Put("meta", Key().U64(thread).U64(0).Done(), std::to_string(i));
        });
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        latencies[static_cast<size_t>(t)].push_back(ms);
        if (!s.ok()) ++failures;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& w : workers) w.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  uint64_t transactions = 0, round_trips = 0;
  for (size_t i = 0; i < opened.size(); ++i) {
    const PostgresStore::WriterStats after = opened[i]->writer_stats();
    transactions += after.transactions - before[i].transactions;
    round_trips += after.round_trips - before[i].round_trips;
  }
  const double n = static_cast<double>(all.size());
  std::printf("%d store%s, %d read%s/write %8.0f writes/s  p50 %6.2f ms  p99 %6.2f ms  "
              "batch %5.1f  round trips/write %4.2f  failures %d\n",
              stores, stores == 1 ? " " : "s", reads, reads == 1 ? " " : "s", n / elapsed, all.empty() ? 0 : all[all.size() / 2], all.empty() ? 0 : all[all.size() * 99 / 100],
              transactions > 0 ? n / static_cast<double>(transactions) : 0,
              n > 0 ? static_cast<double>(round_trips) / n : 0, failures.load());
  std::fflush(stdout);
  for (auto& s : opened) s->Close();
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.starts_with("--seconds=")) seconds = std::atof(argv[i] + 10);
  }
  auto pg = testing::PostgresServer::Start();
  if (!pg.ok()) {
    std::fprintf(stderr, "%s\n", pg.status().ToString().c_str());
    return 1;
  }
  int db = 0;
  for (int stores : {1, 2})
    for (int reads : {1, 4}) Run(**pg, fmt::format("bench_{}", db++), stores, reads, seconds);
  return 0;
}
