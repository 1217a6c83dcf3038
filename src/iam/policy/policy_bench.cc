// What Evaluate costs for a principal with 10 realistic identity policies (~5 statements each, a
// few conditions, one policy variable), a permissions boundary, for the request an authorized
// DescribeTaskDefinition makes. The issue's budget: authorization adds <= 10% to
// DescribeTaskDefinition's throughput (docs/benchmarks.md).
//
//   build/release/src/iam/policy/iam_policy_bench [evaluations]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "iam/policy/evaluator.h"
#include "iam/policy/policy.h"

namespace paddock::iam::policy {
namespace {

// Policy i: five statements over services the principal does not call, its own ECS slice, a
// PassRole with a condition, a tag-scoped write and a Deny.
std::string Document(int i) {
  return fmt::format(R"({{"Version":"2012-10-17","Statement":[
    {{"Sid":"Logs{0}","Effect":"Allow","Action":["logs:CreateLogStream","logs:PutLogEvents"],
      "Resource":"arn:aws:logs:*:123456789012:log-group:/app{0}/*"}},
    {{"Sid":"Ecs{0}","Effect":"Allow","Action":["ecs:Describe*","ecs:List*"],
      "Resource":"arn:aws:ecs:us-east-1:123456789012:task-definition/app{0}-*"}},
    {{"Sid":"Run{0}","Effect":"Allow","Action":["ecs:RunTask","ecs:StartTask"],
      "Resource":"arn:aws:ecs:*:123456789012:task-definition/app{0}:*",
      "Condition":{{"ArnEquals":{{"ecs:cluster":"arn:aws:ecs:us-east-1:123456789012:cluster/team{0}"}},
                   "StringEquals":{{"aws:ResourceTag/team":"${{aws:PrincipalTag/team}}"}}}}}},
    {{"Sid":"Pass{0}","Effect":"Allow","Action":"iam:PassRole","Resource":"arn:aws:iam::123456789012:role/app{0}-*",
      "Condition":{{"StringEquals":{{"iam:PassedToService":"ecs-tasks.amazonaws.com"}}}}}},
    {{"Sid":"NoProd{0}","Effect":"Deny","Action":"ecs:*","Resource":"*",
      "Condition":{{"StringEquals":{{"aws:ResourceTag/env":"prod{0}"}},"IpAddress":{{"aws:SourceIp":"10.{0}.0.0/16"}}}}}}]}})",
                     i);
}

int Main(int evaluations) {
  PolicySet set;
  for (int i = 0; i < 10; ++i) {
    auto p = ParsePolicy(Document(i), DocumentKind::kIdentity);
    if (!p.ok()) return fmt::print(stderr, "parse: {}\n", p.status().ToString()), 1;
    set.identity.push_back({fmt::format("policy{}", i), *p});
  }
  auto boundary = ParsePolicy(R"({"Version":"2012-10-17","Statement":{"Effect":"Allow","NotAction":"iam:*User*","Resource":"*"}})",
                              DocumentKind::kIdentity);
  if (!boundary.ok()) return fmt::print(stderr, "parse: {}\n", boundary.status().ToString()), 1;
  set.boundary = NamedPolicy{"boundary", *boundary};

  // The request is built per evaluation, as the API front would (principal keys included).
  auto request = [] {
    RequestContext ctx(Principal::User(AccountId("123456789012"), "alice", "AIDAALICE"), "ecs:DescribeTaskDefinition",
                       "arn:aws:ecs:us-east-1:123456789012:task-definition/app9-web:3");
    ctx.Set("aws:PrincipalTag/team", "blue");
    ctx.Set("aws:SourceIp", "10.9.1.2");
    ctx.Set("aws:SecureTransport", "true");
    ctx.Set("aws:ResourceTag/env", "dev");
    return ctx;
  };
  std::vector<double> ns;
  ns.reserve(evaluations);
  size_t allowed = 0;
  const auto begin = std::chrono::steady_clock::now();
  for (int i = 0; i < evaluations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    RequestContext ctx = request();
    allowed += Evaluate(ctx, set).decision == Decision::kAllow;
    ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count());
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  if (allowed != static_cast<size_t>(evaluations)) return fmt::print(stderr, "unexpected decision\n"), 1;
  std::sort(ns.begin(), ns.end());
  fmt::print("iam_policy_bench: 10 policies x 5 statements + boundary, {} evaluations\n", evaluations);
  fmt::print("  request context + Evaluate: {:.0f} evaluations/s, p50 {:.0f} ns, p99 {:.0f} ns\n", evaluations / secs,
             ns[ns.size() / 2], ns[ns.size() * 99 / 100]);

  // Evaluate alone, on one context (what a cached context per request would cost).
  const RequestContext ctx = request();
  ns.clear();
  const auto begin2 = std::chrono::steady_clock::now();
  for (int i = 0; i < evaluations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    allowed += Evaluate(ctx, set).decision == Decision::kAllow;
    ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count());
  }
  const double secs2 = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin2).count();
  std::sort(ns.begin(), ns.end());
  fmt::print("  Evaluate alone:             {:.0f} evaluations/s, p50 {:.0f} ns, p99 {:.0f} ns\n", evaluations / secs2,
             ns[ns.size() / 2], ns[ns.size() * 99 / 100]);
  return 0;
}

}  // namespace
}  // namespace paddock::iam::policy

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 200000;
  return paddock::iam::policy::Main(n > 0 ? n : 200000);
}
