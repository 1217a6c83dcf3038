// What PolicyAuthorizer::Authorize costs per question for an IAM user with 10 policies (5 inline,
// 5 customer-managed, 5 statements each with wildcards and conditions, as bench/authz_bench.py),
// in the steady state: the principal's parsed policies and tags cached (the clock does not move,
// so the one-second TTL never lapses), the request context built and evaluated. This is the
// front's whole per-question authorization work (docs/benchmarks.md, "Authorization").
//
// Then a user with AWS's ReadOnlyAccess attached (thousands of action patterns in one statement):
// a repeated question (answered from the authorizer's remembered decisions) and questions that are
// each new (a distinct resource ARN apiece, so every one is evaluated): an allowed ECS read, an
// allowed SSM read, and a denied ECS write (which fails every statement).
//
//   build/release/src/iam/api/iam_authorizer_bench [questions]
//   valgrind --tool=callgrind build/release/src/iam/api/iam_authorizer_bench 20000  # instructions
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <functional>
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

// A call of the IAM user `name` from loopback, signed for us-east-1.
aws::CallContext UserCall(const AccountId& account, const std::string& name, const paddock::testing::FakeClock& clock) {
  aws::CallContext call;
  call.scope = Scope{account, Region("us-east-1")};
  call.principal.account = account;
  call.principal.kind = PrincipalKind::kUser;
  call.principal.arn = fmt::format("arn:aws:iam::{}:user/{}", account.str(), name);
  call.principal.user_name = name;
  call.source_ip = "127.0.0.1";
  call.now = clock.Now();
  return call;
}

// Times `questions` calls of ask(i); each must answer `allowed`.
double NanosEach(int questions, bool allowed, const std::function<Status(int)>& ask) {
  const auto begin = std::chrono::steady_clock::now();
  for (int i = 0; i < questions; ++i) {
    if (ask(i).ok() != allowed) {
      fmt::print(stderr, "unexpected decision\n");
      std::exit(1);
    }
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - begin).count() / questions;
}

int ReadOnlyAccess(Directory& dir, PolicyAuthorizer& authorizer, const AccountId& account,
                   const paddock::testing::FakeClock& clock, int questions) {
  UserSpec user;
  user.name = "reader";
  if (!dir.CreateUser(account, user).ok()) return fmt::print(stderr, "CreateUser failed\n"), 1;
  if (!dir.AttachPolicy(account, {PrincipalType::kUser, "reader"}, "arn:aws:iam::aws:policy/ReadOnlyAccess").ok())
    return fmt::print(stderr, "AttachPolicy failed\n"), 1;
  const aws::CallContext call = UserCall(account, "reader", clock);
  const aws::AuthRequest describe{"ecs:DescribeServices", "arn:aws:ecs:us-east-1:123456789012:service/web/api", {}};
  if (!authorizer.Authorize(call, describe).ok()) return fmt::print(stderr, "unexpected denial\n"), 1;
  const double cached = NanosEach(questions, true, [&](int) { return authorizer.Authorize(call, describe); });
  auto fresh = [&](std::string action, std::string arn_prefix) {
    return [&authorizer, &call, action = std::move(action), arn_prefix = std::move(arn_prefix)](int i) {
      return authorizer.Authorize(call, aws::AuthRequest{action, fmt::format("{}{}", arn_prefix, i), {}});
    };
  };
  const double ecs_read =
      NanosEach(questions, true, fresh("ecs:DescribeServices", "arn:aws:ecs:us-east-1:123456789012:service/web/api-"));
  const double ssm_read =
      NanosEach(questions, true, fresh("ssm:GetParameter", "arn:aws:ssm:us-east-1:123456789012:parameter/app/p"));
  const double ecs_write =
      NanosEach(questions, false, fresh("ecs:RunTask", "arn:aws:ecs:us-east-1:123456789012:task-definition/web:"));
  // A principal's first question reads and parses its policies (then kept, see PoliciesOf).
  constexpr int kNewUsers = 200;
  for (int i = 0; i < kNewUsers; ++i) {
    UserSpec u;
    u.name = fmt::format("reader-{}", i);
    if (!dir.CreateUser(account, u).ok() ||
        !dir.AttachPolicy(account, {PrincipalType::kUser, u.name}, "arn:aws:iam::aws:policy/ReadOnlyAccess").ok())
      return fmt::print(stderr, "CreateUser failed\n"), 1;
  }
  const double first = NanosEach(kNewUsers, true, [&](int i) {
    return authorizer.Authorize(UserCall(account, fmt::format("reader-{}", i), clock), describe);
  });
  fmt::print("iam_authorizer_bench: user with ReadOnlyAccess, {} questions each:\n", questions);
  fmt::print("  first question of each of {} new users: {:.0f} us each\n", kNewUsers, first / 1000);
  fmt::print("  repeated ecs:DescribeServices (remembered): {:.0f} ns each\n", cached);
  fmt::print("  new ecs:DescribeServices (allowed): {:.0f} ns each\n", ecs_read);
  fmt::print("  new ssm:GetParameter (allowed): {:.0f} ns each\n", ssm_read);
  fmt::print("  new ecs:RunTask (denied): {:.0f} ns each\n", ecs_write);
  return 0;
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
  const aws::CallContext call = UserCall(account, "bench", clock);
  const aws::AuthRequest q{"ecs:DescribeTaskDefinition", "*", {}};
  if (!authorizer.Authorize(call, q).ok()) return fmt::print(stderr, "unexpected denial\n"), 1;  // warms the cache
  const auto begin = std::chrono::steady_clock::now();
  for (int i = 0; i < questions; ++i)
    if (!authorizer.Authorize(call, q).ok()) return fmt::print(stderr, "unexpected denial\n"), 1;
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - begin).count();
  fmt::print("iam_authorizer_bench: user with 10 policies x 5 statements, {} questions: {:.0f} ns each\n", questions,
             ns / questions);
  return ReadOnlyAccess(dir, authorizer, account, clock, questions);
}

}  // namespace
}  // namespace paddock::iam::api

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 200000;
  return paddock::iam::api::Main(n > 0 ? n : 200000);
}
