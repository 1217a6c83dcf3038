// How many queries a second a VPC's DNS server answers with Cloud Map behind it: a dns::Server
// on 127.0.0.1:0 whose Authority is a cloudmap::DnsAuthority over a Registry on a real SQLite store
// (a file in a fresh temporary directory) holding private namespace "internal", service "web" (A,
// TTL 10, MULTIVALUE) and 3 instances; one client thread keeps `window` queries for
// "web.internal A" in flight over UDP (dns/testing/udp_load.h). Prints answered q/s, the latency
// percentiles and the store reads the authority made (docs/benchmarks.md, "DNS server").
// `churn` > 0: the Registry's generation is moved that many times a second (as ECS registering
// tasks would), so every answer is read again from the store after each move.
//
//   build/release/src/cloudmap/cloudmap_dns_bench [seconds=5] [window=64] [churn=0]
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "cloudmap/dns_authority.h"
#include "cloudmap/schema.h"
#include "common/clock.h"
#include "dns/server.h"
#include "dns/testing/udp_load.h"
#include "store/sqlite/sqlite_store.h"

using namespace paddock;

namespace {

int Fail(const Status& s) {
  std::fprintf(stderr, "cloudmap_dns_bench: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 5;
  const int window = argc > 2 ? std::atoi(argv[2]) : 64;
  const double churn = argc > 3 ? std::atof(argv[3]) : 0;

  std::string dir = (std::filesystem::temp_directory_path() / "paddock-dns-bench-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) return Fail(Unavailable("mkdtemp failed"));
  store::SqliteOptions options;
  options.path = dir + "/state.db";
  options.schemas = {cloudmap::kSchema};
  StatusOr<std::unique_ptr<store::SqliteStore>> opened = store::SqliteStore::Open(options);
  if (!opened.ok()) return Fail(opened.status());
  store::SqliteStore& store = **opened;

  const Scope scope{AccountId("111111111111"), Region("us-east-1")};
  const std::string vpc = "vpc-0123456789abcdef0";
  cloudmap::Registry registry(store, SystemClock::Get());
  StatusOr<std::string> op = registry.CreateNamespace(
      scope, {.name = "internal", .type = cloudmap::NamespaceType::kDnsPrivate, .vpc = vpc}, vpc);
  if (!op.ok()) return Fail(op.status());
  if (Status s = registry.RunPending(); !s.ok()) return Fail(s);
  StatusOr<cloudmap::Operation> created = registry.GetOperation(scope, *op);
  if (!created.ok()) return Fail(created.status());
  StatusOr<cloudmap::Service> web = registry.CreateService(
      scope, {.name = "web", .namespace_id = created->targets["NAMESPACE"],
              .dns = cloudmap::DnsConfig{cloudmap::RoutingPolicy::kMultivalue, {{cloudmap::RecordType::kA, 10}}}});
  if (!web.ok()) return Fail(web.status());
  for (int i = 1; i <= 3; ++i) {
    StatusOr<std::string> r = registry.RegisterInstance(
        scope, {web->id, "task" + std::to_string(i), {{"AWS_INSTANCE_IPV4", "172.31.0." + std::to_string(10 + i)}}, ""});
    if (!r.ok()) return Fail(r.status());
  }
  if (Status s = registry.RunPending(); !s.ok()) return Fail(s);

  const std::string listener = "111111111111/us-east-1/" + vpc;
  cloudmap::DnsAuthority names(registry, [&](std::string_view l) -> std::optional<cloudmap::VpcRef> {
    if (l != listener) return std::nullopt;
    return cloudmap::VpcRef{scope, vpc};
  });
  dns::Server server(dns::ServerOptions{.port = 0, .listener = listener}, names);
  if (Status s = server.Start(); !s.ok()) return Fail(s);
  std::atomic<bool> done{false};
  std::thread churner;
  if (churn > 0)
    churner = std::thread([&] {
      const auto every = std::chrono::duration<double>(1.0 / churn);
      while (!done.load()) {
        registry.NoteChanged();
        std::this_thread::sleep_for(every);
      }
    });
  const dns::testing::UdpLoad load =
      dns::testing::DriveUdp(server.port(), dns::testing::QueryWire("web.internal", 1, 0), seconds, window);
  done = true;
  if (churner.joinable()) churner.join();
  const dns::ServerStats stats = server.stats();
  server.Stop();
  store.Close();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  std::printf("cloudmap_dns_bench: %.1f s, window %d, churn %.0f/s: %zu answered, %.0f q/s, p50 %u us, p99 %u us, "
              "lost %llu (server: %llu queries, %llu answered; authority: %llu store reads)\n",
              load.seconds, window, churn, load.latency_us.size(), load.per_second(), load.percentile(0.50),
              load.percentile(0.99), static_cast<unsigned long long>(load.lost),
              static_cast<unsigned long long>(stats.queries), static_cast<unsigned long long>(stats.answered),
              static_cast<unsigned long long>(names.store_reads()));
  return 0;
}
