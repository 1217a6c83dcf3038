// Arbitrary bytes through ParsePolicy for each document kind; what parses is evaluated once, so
// the compiled form (globs, variables, CIDRs, dates) is exercised as well as the parser.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "iam/policy/evaluator.h"
#include "iam/policy/policy.h"

using namespace paddock::iam::policy;
using paddock::AccountId;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (DocumentKind kind : {DocumentKind::kIdentity, DocumentKind::kTrust, DocumentKind::kResource}) {
    auto p = ParsePolicy(text, kind);
    if (!p.ok()) {
      // Every rejection is a MalformedPolicyDocument with a message.
      if (!IsError(p.status(), paddock::iam::Error::kMalformedPolicyDocument) || p.status().message().empty()) std::abort();
      continue;
    }
    RequestContext ctx(Principal::User(AccountId("123456789012"), "alice", "AIDAEXAMPLE"), "ecs:RunTask",
                       "arn:aws:ecs:us-east-1:123456789012:task-definition/web:1");
    ctx.Set("aws:SourceIp", "10.1.2.3");
    ctx.Set("aws:CurrentTime", "2026-12-01T12:00:00Z");
    ctx.SetMulti("aws:TagKeys", {"team", "env"});
    PolicySet set;
    if (kind == DocumentKind::kIdentity) {
      set.identity.push_back({"fuzz", *p});
    } else {
      set.resource = NamedPolicy{"fuzz", *p};
    }
    (void)Evaluate(ctx, set);
    (void)TrustPolicyAllows(*p, ctx);
  }
  return 0;
}
