// What the owner's hot paths cost on a real SQLite store (durable commits off, as in the unit
// tests): GetSecretValue (one snapshot read of the record and the version, one AES-256-GCM open)
// and PutSecretValue (one seal, one MAC, one write transaction), one thread each, over `secrets`
// secrets of 32-byte values. The front, HTTP and SigV4 come on top.
//
//   build/release/src/secretsmanager/secretsmanager_bench [reads] [secrets]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/clock.h"
#include "ecs/testing/temp_store.h"
#include "secretsmanager/secrets.h"

namespace paddock::secretsmanager {
namespace {

int Main(int argc, char** argv) {
  const int reads = argc > 1 ? std::atoi(argv[1]) : 100000;
  const int count = argc > 2 ? std::atoi(argv[2]) : 1000;
  testing::TempStore store;
  auto keys = kms::KeyRing::InMemory({{1, std::string(32, 'k')}});
  Secrets secrets(*store, *keys, SystemClock::Get());
  const Scope scope{AccountId("123456789012"), Region("us-east-1")};
  const std::string value(32, 'v');
  using Clock = std::chrono::steady_clock;

  auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    CreateRequest r;
    r.name = fmt::format("app/secret-{}", i);
    r.value = SecretValue::String(value);
    if (!secrets.Create(scope, r).ok()) return 1;
  }
  const double create_s = std::chrono::duration<double>(Clock::now() - start).count();

  std::vector<double> us;
  us.reserve(static_cast<size_t>(reads));
  start = Clock::now();
  for (int i = 0; i < reads; ++i) {
    auto t0 = Clock::now();
    auto v = secrets.GetValue(scope, fmt::format("app/secret-{}", i % count), {});
    if (!v.ok() || v->value.bytes != value) return 1;
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  const double read_s = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(us.begin(), us.end());

  start = Clock::now();
  const int puts = std::min(reads / 10, 10000);
  for (int i = 0; i < puts; ++i) {
    PutRequest r;
    r.secret_id = fmt::format("app/secret-{}", i % count);
    r.value = SecretValue::String(value + std::to_string(i));
    if (!secrets.Put(scope, r).ok()) return 1;
  }
  const double put_s = std::chrono::duration<double>(Clock::now() - start).count();

  fmt::print("CreateSecret: {} in {:.2f} s ({:.0f}/s)\n", count, create_s, count / create_s);
  fmt::print("GetSecretValue: {} in {:.2f} s ({:.0f}/s), p50 {:.1f} us, p99 {:.1f} us\n", reads, read_s,
             reads / read_s, us[us.size() / 2], us[us.size() * 99 / 100]);
  fmt::print("PutSecretValue: {} in {:.2f} s ({:.0f}/s)\n", puts, put_s, puts / put_s);
  return 0;
}

}  // namespace
}  // namespace paddock::secretsmanager

int main(int argc, char** argv) { return paddock::secretsmanager::Main(argc, argv); }
