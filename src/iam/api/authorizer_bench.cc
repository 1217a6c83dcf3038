// What PolicyAuthorizer::Authorize costs per question for an IAM user with 10 policies (5 inline,
// 5 customer-managed, 5 statements each with wildcards and conditions, as bench/authz_bench.py),
// in the steady state: the principal's parsed policies and tags cached (the clock does not move,
// so the one-second TTL never lapses), the request context built and evaluated. This is the
// front's whole per-question authorization work (docs/benchmarks.md, "Authorization").
//
//   build/release/src/iam/api/iam_authorizer_bench [questions]
//   valgrind --tool=callgrind build/release/src/iam/api/iam_authorizer_bench 20000  # instructions
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"
#include "iam/api/authorizer.h"

namespace paddock::iam::api {
namespace {

std::string Statement(int i, int j, bool last) {
  if (last) {
    return fmt::format(R"({{"Sid":"Describe{0}","Effect":"Allow","Action":["ecs:Describe*","ecs:List*"],"Resource":"*",
      "Condition":{{"Bool":{{"aws:SecureTransport":"false"}}}}}})",
                       i);
  }
  return fmt::format(R"({{"Sid":"S{0}x{1}","Effect":"Allow","Action":["ecs:Update{1}*","ecs:Create{0}?","logs:PutLogEvents"],
      "Resource":["arn:aws:ecs:*:*:service/cluster-{0}/*","arn:aws:ecs:*:*:task/cluster-{1}/*"],
      "Condition":{{"StringEquals":{{"aws:RequestTag/team":"team-{0}"}},
                   "ArnLike":{{"ecs:cluster":"arn:aws:ecs:*:*:cluster/cluster-{0}"}}}}}})",
                     i, j);
}

std::string Document(int i, bool with_describe) {
  std::string out = R"({"Version":"2012-10-17","Statement":[)";
  for (int j = 0; j < 5; ++j) out += (j ? "," : "") + Statement(i, j, j == 4 && with_describe);
  return out + "]}";
}

int Main(int questions) {
  paddock::testing::TempStore store;
  paddock::testing::FakeClock clock;
  Directory dir(*store, clock);
  const AccountId account("123456789012");
  UserSpec user;
  user.name = "bench";
  user.tags = {{"team", "blue"}, {"cost-center", "42"}};
  if (!dir.CreateUser(account, user).ok()) return fmt::print(stderr, "CreateUser failed\n"), 1;
  const PrincipalRef bench{PrincipalType::kUser, "bench"};
  for (int i = 0; i < 5; ++i) {
    if (!dir.PutInlinePolicy(account, bench, fmt::format("inline-{}", i), Document(i, i == 4)).ok())
      return fmt::print(stderr, "PutInlinePolicy failed\n"), 1;
    PolicySpec spec;
    spec.name = fmt::format("managed-{}", i);
    spec.document = Document(10 + i, false);
    auto p = dir.CreatePolicy(account, spec);
    if (!p.ok() || !dir.AttachPolicy(account, bench, p->arn).ok()) return fmt::print(stderr, "managed failed\n"), 1;
  }
  PolicyAuthorizer authorizer(dir, clock);
  aws::CallContext call;
  call.scope = Scope{account, Region("us-east-1")};
  call.principal.account = account;
  call.principal.kind = PrincipalKind::kUser;
  call.principal.arn = "arn:aws:iam::123456789012:user/bench";
  call.principal.user_name = "bench";
  call.source_ip = "127.0.0.1";
  call.now = clock.Now();
  const aws::AuthRequest q{"ecs:DescribeTaskDefinition", "*", {}};
  if (!authorizer.Authorize(call, q).ok()) return fmt::print(stderr, "unexpected denial\n"), 1;  // warms the cache
  const auto begin = std::chrono::steady_clock::now();
  for (int i = 0; i < questions; ++i)
    if (!authorizer.Authorize(call, q).ok()) return fmt::print(stderr, "unexpected denial\n"), 1;
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - begin).count();
  fmt::print("iam_authorizer_bench: user with 10 policies x 5 statements, {} questions: {:.0f} ns each\n", questions,
             ns / questions);
  return 0;
}

}  // namespace
}  // namespace paddock::iam::api

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 200000;
  return paddock::iam::api::Main(n > 0 ? n : 200000);
}
