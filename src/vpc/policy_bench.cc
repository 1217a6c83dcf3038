// What SecurityGroups::PolicyFor costs for a busy VPC: 20 groups of 10 rules, 400 tasks in two
// groups each. Node agents fetch each of their VPCs' policies once a second, so this is the control
// plane's per-VPC cost of keeping rules current (docs/benchmarks.md).
//
//   build/release/src/vpc/vpc_policy_bench [runs]
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "ecs/testing/temp_store.h"
#include "vpc/default_vpc.h"
#include "vpc/ipam.h"
#include "vpc/security_groups.h"

namespace paddock::vpc {
namespace {

int Main(int runs) {
  const Scope scope{AccountId("123456789012"), Region("us-east-1")};
  paddock::testing::TempStore store;
  SecurityGroups groups(*store);
  const DefaultVpc vpc = DefaultVpcFor(scope);
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) {
    auto g = groups.Create(scope, CreateRequest{fmt::format("g{}", i), "bench", std::nullopt, {}});
    if (!g.ok()) return fmt::print(stderr, "create: {}\n", g.status().ToString()), 1;
    std::vector<RuleSpec> rules;
    for (int j = 0; j < 9; ++j) {
      RuleSpec r;
      r.protocol = "tcp";
      r.from_port = r.to_port = 8000 + j;
      r.cidr = fmt::format("10.{}.0.0/16", j);
      rules.push_back(std::move(r));
    }
    RuleSpec self;
    self.protocol = "-1";
    self.group_id = g->id;
    rules.push_back(std::move(self));
    if (auto s = groups.Authorize(scope, GroupRef{g->id, ""}, RuleDirection::kIngress, rules); !s.ok())
      return fmt::print(stderr, "authorize: {}\n", s.status().ToString()), 1;
    ids.push_back(g->id);
  }
  for (int t = 0; t < 400; ++t) {
    Status s = store->Write([&](store::WriteTxn& txn) -> Status {
      return AllocateIp(txn, scope, vpc.subnets[t % 3], fmt::format("arn:task/{}", t), {ids[t % 20], ids[(t + 1) % 20]})
          .status();
    });
    if (!s.ok()) return fmt::print(stderr, "allocate: {}\n", s.ToString()), 1;
  }
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    auto p = groups.PolicyFor(scope);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (!p.ok() || p->members.size() != 400 || p->groups.size() != 21)
      return fmt::print(stderr, "unexpected policy\n"), 1;
  }
  std::sort(ms.begin(), ms.end());
  fmt::print("PolicyFor, 21 groups / 201 rules / 400 members, {} calls: p50 {:.3f} ms  p90 {:.3f} ms  max {:.3f} ms\n",
             runs, ms[ms.size() / 2], ms[ms.size() * 9 / 10], ms.back());
  return 0;
}

}  // namespace
}  // namespace paddock::vpc

int main(int argc, char** argv) { return paddock::vpc::Main(argc > 1 ? std::max(1, std::atoi(argv[1])) : 50); }
