// What matching one event costs, per kind of filter pattern, on ordinary 100-byte lines, and what
// the hostile cases cost at their bounds (1 MiB messages; docs/contracts/logs.md "Filter patterns").
// Prints one line per case; not a timed test.
//
//   build/release/src/logs/logs_filter_bench
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "logs/filter.h"

namespace paddock::logs {
namespace {

template <typename F>
double Milliseconds(F f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

Filter MustCompile(const std::string& pattern) {
  StatusOr<Filter> f = Filter::Compile(pattern);
  if (!f.ok()) {
    std::fprintf(stderr, "%s: %s\n", pattern.c_str(), f.status().ToString().c_str());
    std::exit(1);
  }
  return *f;
}

void PerEvent(const char* what, const std::string& pattern, const std::string& message, int events) {
  const Filter f = MustCompile(pattern);
  int hits = 0;
  const double ms = Milliseconds([&] {
    for (int i = 0; i < events; ++i) hits += f.Matches(message);
  });
  std::printf("%-44s %8.1f ns/event  (%s)\n", what, ms * 1e6 / events, hits ? "match" : "no match");
}

void Once(const char* what, const std::string& pattern, const std::string& message) {
  const Filter f = MustCompile(pattern);
  bool matched = false;
  const double ms = Milliseconds([&] { matched = f.Matches(message); });
  std::printf("%-44s %8.1f ms        (%s)\n", what, ms, matched ? "match" : "no match");
}

void Run() {
  const std::string line =
      "2026-12-02T05:00:00Z INFO request completed path=/api/v1/items status=200 latency_ms=12 id=abcdef";
  const std::string json =
      R"({"ts":"2026-12-02T05:00:00Z","level":"INFO","path":"/api/v1/items","status":200,"latency_ms":12})";
  const std::string apache =
      R"(127.0.0.1 - frank [10/Oct/2000:13:25:15 -0700] "GET /index.html HTTP/1.0" 404 1534)";
  PerEvent("terms: rare term", "ERROR", line, 1000000);
  PerEvent("terms: ?ERROR ?WARN -health", "?ERROR ?WARN -health", line, 1000000);
  PerEvent("JSON: two conditions on a JSON line", R"({ $.status = 200 && $.path = "/api/*" })", json, 200000);
  PerEvent("JSON: on a plain line (refused unparsed)", R"({ $.status = 200 })", line, 1000000);
  PerEvent("space-delimited: Apache line", "[..., status_code = 4*, bytes > 1000]", apache, 1000000);
  PerEvent("regex: IPv4", R"(%\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}%)", line, 1000000);
  PerEvent("regex: [Ee]rror|[Ff]ail", "%[Ee]rror|[Ff]ail%", line, 1000000);

  const std::string as(1 << 20, 'a');
  Once("hostile: 1000 'a' + 'b' in 1 MiB of 'a'", "\"" + std::string(1000, 'a') + "b\"", as);
  const std::string needle = std::string(1000, 'a') + "b";
  volatile std::size_t found = 0;
  std::printf("%-44s %8.1f ms        (for comparison)\n", "  std::string_view::find, same input",
              Milliseconds([&] { found = std::string_view(as).find(needle); }));
  (void)found;
  std::string many;
  for (int i = 0; i < 512; ++i) many += "b ";
  Once("hostile: 512 terms, 1 MiB", many, as + "b");
  Once("hostile: regex at 256 positions, 1 MiB", "%a{255}b%", as);
  Once("hostile: regex a*a*...b (20 stars), 1 MiB", "%a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b%", as);
  std::string fields;
  for (int i = 0; i < (1 << 19); ++i) fields += "a ";
  Once("hostile: 512 Ki fields, [first, ..., last > 5]", "[first, ..., last > 5]", fields + "7");
  Once("hostile: JSON 100,000 levels deep", "{ $.a NOT EXISTS }",
       "{\"b\":" + std::string(100000, '[') + std::string(100000, ']') + "}");
  std::printf("%-44s %8.3f ms\n", "compile: the largest regex",
              Milliseconds([] {
                for (int i = 0; i < 100; ++i) (void)Filter::Compile("%a{255}b%");
              }) / 100);
}

}  // namespace
}  // namespace paddock::logs

int main() { paddock::logs::Run(); }
