// What PutLogEvents ingest and FilterLogEvents cost on the node's own logs store (logs::LogGroups
// on <dir>/logs.db, opened as the node opens it: LogsModule), over many events — issue 12's
// "10 million events" numbers. Not a timed test: it prints, and docs/benchmarks.md records.
//
//   build/release/src/logs/logs_store_bench [events (10000000)] [dir (a new temp dir, removed)]
//
// Ingest: batches of 10,000 events (~110-byte lines: access-log JSON, one in 50 a 500, and plain
// text lines, one in 100 an ERROR) into 10 streams in turn, timestamps spread over the last hour;
// per-batch latency p50/p99 and events/s. Then the first page of FilterLogEvents (limit 100,
// as `aws logs filter-log-events` asks) for each pattern, 30 times each, p50/p99 — over the whole
// hour and over its last minute.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/clock.h"
#include "logs/api/logs_service.h"
#include "logs/log_groups.h"

namespace paddock::logs {
namespace {

using Ms = std::chrono::duration<double, std::milli>;

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

void Die(const Status& s, const char* what) {
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

std::string Line(uint64_t i) {
  if (i % 2 == 0)
    return fmt::format(R"({{"level":"info","method":"GET","path":"/api/items/{}","status":{},"ms":{}}})", i % 9973,
                       i % 50 == 0 ? 500 : 200, i % 300);
  return fmt::format("{} request {} served from cache shard {} in {} us", i % 100 == 1 ? "ERROR" : "INFO", i,
                     i % 64, i % 5000);
}

int Main(int argc, char** argv) {
  const uint64_t total = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  namespace fs = std::filesystem;
  std::string dir = argc > 2 ? argv[2] : "";
  const bool own_dir = dir.empty();
  if (own_dir) {
    std::string tmpl = (fs::temp_directory_path() / "paddock-logs-bench-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return 1;
    dir = tmpl;
  }
  {
    auto module = api::LogsModule::Open(dir, std::string(32, 't'));
    if (!module.ok()) Die(module.status(), "open");
    LogGroups& groups = (*module)->groups();
    const Scope scope{AccountId("123456789012"), Region("us-east-1")};
    const std::string group = "/bench/app";
    if (Status s = groups.CreateGroup(scope, GroupSpec{.name = group}); !s.ok()) Die(s, "create group");
    constexpr int kStreams = 10;
    for (int i = 0; i < kStreams; ++i)
      if (Status s = groups.CreateStream(scope, group, fmt::format("web/app/{}", i)); !s.ok()) Die(s, "create stream");

    constexpr uint64_t kBatch = 10'000;
    const int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(SystemClock::Get().Now().time_since_epoch()).count();
    const int64_t start_ms = now_ms - 3'600'000;
    std::vector<double> put_ms;
    uint64_t bytes = 0;
    const auto ingest_start = std::chrono::steady_clock::now();
    for (uint64_t done = 0; done < total;) {
      const uint64_t n = std::min(kBatch, total - done);
      std::vector<InputEvent> batch;
      batch.reserve(n);
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t k = done + i;
        batch.push_back({start_ms + static_cast<int64_t>(k * 3'600'000 / total), Line(k)});
        bytes += batch.back().message.size();
      }
      const auto t = std::chrono::steady_clock::now();
      auto put = groups.Put(scope, group, fmt::format("web/app/{}", (done / kBatch) % kStreams), batch);
      put_ms.push_back(Ms(std::chrono::steady_clock::now() - t).count());
      if (!put.ok()) Die(put.status(), "put");
      if (put->accepted != n) {
        std::fprintf(stderr, "put: %llu of %llu accepted\n", static_cast<unsigned long long>(put->accepted),
                     static_cast<unsigned long long>(n));
        return 1;
      }
      done += n;
    }
    const double ingest_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - ingest_start).count();
    std::printf("ingest: %llu events (%.0f MiB of messages) in %.1f s: %.0f events/s; PutLogEvents of %llu: p50 %.1f ms, "
                "p99 %.1f ms\n",
                static_cast<unsigned long long>(total), bytes / 1048576.0, ingest_s, total / ingest_s,
                static_cast<unsigned long long>(kBatch), Percentile(put_ms, 0.5), Percentile(put_ms, 0.99));
    std::error_code ec;
    std::printf("logs.db: %.0f MiB\n", fs::file_size(dir + "/logs.db", ec) / 1048576.0);

    struct Case {
      const char* what;
      std::string pattern;
    };
    const std::vector<Case> cases = {{"no pattern", ""},
                                     {"term ERROR (1 in 200)", "ERROR"},
                                     {"JSON { $.status = 500 } (1 in 100)", "{ $.status = 500 }"},
                                     {"term nowhere (matches none)", "nowhere"}};
    for (const bool last_minute : {false, true}) {
      for (const Case& c : cases) {
        std::vector<double> ms;
        size_t found = 0;
        for (int run = 0; run < 30; ++run) {
          FilterEventsRequest req;
          req.group = group;
          req.filter_pattern = c.pattern;
          req.limit = 100;
          if (last_minute) {
            req.start_ms = now_ms - 60'000;
            req.end_ms = now_ms;
          }
          const auto t = std::chrono::steady_clock::now();
          auto page = groups.FilterEvents(scope, req);
          ms.push_back(Ms(std::chrono::steady_clock::now() - t).count());
          if (!page.ok()) Die(page.status(), "filter");
          found = page->items.size();
        }
        std::printf("FilterLogEvents first page, %s, %-36s p50 %7.2f ms, p99 %7.2f ms (%zu events)\n",
                    last_minute ? "last minute" : "whole hour ", c.what, Percentile(ms, 0.5), Percentile(ms, 0.99),
                    found);
      }
    }
  }
  if (own_dir) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return 0;
}

}  // namespace
}  // namespace paddock::logs

int main(int argc, char** argv) { return paddock::logs::Main(argc, argv); }
