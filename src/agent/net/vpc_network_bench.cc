// What awsvpc plumbing costs (root only): CreateTaskNetwork with and without a new VPC namespace,
// ApplyVpcPolicy changed and unchanged, DeleteTaskNetwork and RemoveVpcNetworkIfUnused, each
// timed over N rounds; prints p50/p90/max in ms. Its own prefixes ("b<pid>-", "u<pid>-") and
// 10.252.<pid % 200>.0/24, removed at the end.
//
//   sudo build/release/src/agent/net/agent_net_bench [rounds]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "agent/net/net.h"

namespace paddock::agent::net {
namespace {

using Clock = std::chrono::steady_clock;

struct Series {
  explicit Series(std::string n) : name(std::move(n)) {}
  std::string name;
  std::vector<double> ms;
  void Print() {
    if (ms.empty()) return;
    std::sort(ms.begin(), ms.end());
    auto at = [&](double p) { return ms[std::min(ms.size() - 1, static_cast<size_t>(p * ms.size()))]; };
    fmt::print("{:42} n={:3}  p50 {:6.1f} ms  p90 {:6.1f} ms  max {:6.1f} ms\n", name, ms.size(), at(0.5), at(0.9),
               ms.back());
  }
};

template <typename F>
void Time(Series& s, F&& f) {
  auto t0 = Clock::now();
  f();
  s.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
}

void Must(const Status& s, const char* what) {
  if (!s.ok()) {
    fmt::print(stderr, "{}: {}\n", what, s.ToString());
    std::exit(1);
  }
}

uint32_t Ip(int c, int d) { return (10u << 24) | (252u << 16) | (static_cast<uint32_t>(c) << 8) | static_cast<uint32_t>(d); }

int Main(int rounds) {
  if (geteuid() != 0) {
    fmt::print(stderr, "needs root\n");
    return 1;
  }
  const unsigned pid = static_cast<unsigned>(getpid());
  NetworkOptions o;
  o.netns_prefix = fmt::format("b{}-", pid % 100000);
  o.vpc_prefix = fmt::format("u{}-", pid % 100000);
  const int subnet = static_cast<int>(pid % 200);
  o.gateway_cidrs = {fmt::format("10.252.{}.1/24", subnet)};
  StatusOr<VpcNetwork> vpc = VpcNetworkFor(o, {"vpc-0bench", fmt::format("bench-{}", pid)});
  Must(vpc.status(), "VpcNetworkFor");
  auto policy = [&](int members) {
    FetchedPolicy p;
    p.fetched_at = MonotonicNanos();
    p.policy.vpc_id = vpc->ref.vpc_id;
    p.policy.version = fmt::format("v{}-{}", members, p.fetched_at);
    vpc::PolicyRule in{.protocol = "-1", .from_port = -1, .to_port = -1, .cidrs = {}, .groups = {"sg-d"}};
    vpc::PolicyRule out{.protocol = "-1", .from_port = -1, .to_port = -1, .cidrs = {"0.0.0.0/0"}, .groups = {}};
    p.policy.groups = {vpc::PolicyGroup{"sg-d", {in}, {out}}};
    for (int i = 0; i < members; ++i) p.policy.members.push_back({fmt::format("10.252.{}.{}", subnet, 10 + i), {"sg-d"}});
    return p;
  };

  Series first("CreateTaskNetwork, new VPC namespace"), create("CreateTaskNetwork, VPC namespace exists"),
      apply("ApplyVpcPolicy, changed (N+1 members)"), unchanged("ApplyVpcPolicy, unchanged"),
      del("DeleteTaskNetwork"), remove("RemoveVpcNetworkIfUnused (empty)"), compile("CompileVpcPolicy, 200 members");
  for (int r = 0; r < rounds; ++r) {
    std::vector<TaskNetwork> tasks;
    const int per_round = 5;
    for (int i = 0; i < per_round; ++i) {
      StatusOr<TaskNetwork> tn = Internal("not run");
      Time(i == 0 ? first : create, [&] {
        tn = CreateTaskNetwork(o, *vpc, policy(i + 1), fmt::format("t{}-{}", r, i), Ip(subnet, 10 + i), 24,
                               Ip(subnet, 1));
      });
      Must(tn.status(), "CreateTaskNetwork");
      tasks.push_back(*tn);
    }
    FetchedPolicy p = policy(per_round + 1);
    Time(apply, [&] { Must(ApplyVpcPolicy(o, *vpc, p).status(), "ApplyVpcPolicy"); });
    Time(unchanged, [&] { Must(ApplyVpcPolicy(o, *vpc, p).status(), "ApplyVpcPolicy"); });
    for (const TaskNetwork& tn : tasks) Time(del, [&] { Must(DeleteTaskNetwork(o, tn), "DeleteTaskNetwork"); });
    Time(remove, [&] { Must(RemoveVpcNetworkIfUnused(o, vpc->netns_name).status(), "RemoveVpcNetworkIfUnused"); });
  }
  vpc::VpcPolicy big = policy(200).policy;
  for (int r = 0; r < 20; ++r) Time(compile, [&] { Must(CompileVpcPolicy(big).status(), "CompileVpcPolicy"); });
  for (Series* s : {&first, &create, &apply, &unchanged, &del, &remove, &compile}) s->Print();
  std::remove(fmt::format("/run/lock/{}vpc.lock", o.vpc_prefix).c_str());
  return 0;
}

}  // namespace
}  // namespace paddock::agent::net

int main(int argc, char** argv) { return paddock::agent::net::Main(argc > 1 ? std::atoi(argv[1]) : 10); }
