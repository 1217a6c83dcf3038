// IAM policy documents, parsed once into a form that is cheap to evaluate many times.
//
// A Policy is the compiled form of one JSON policy document (identity-based, permissions boundary,
// session, trust or other resource-based policy). Parsing validates the grammar and the rules of the
// document's kind, lowercases actions and condition-key names, turns every Action/Resource/ARN
// pattern into a glob, parses numbers, dates, CIDRs and booleans in conditions, and splits policy
// variables out of the values that allow them. Evaluation (evaluator.h) then does no parsing and
// allocates nothing for statements without policy variables.
//
//   ASSIGN_OR_RETURN(Policy p, ParsePolicy(R"({"Version":"2012-10-17","Statement":[{
//       "Effect":"Allow","Action":"ecs:Describe*","Resource":"*"}]})", DocumentKind::kIdentity));
//
// This library does no I/O and knows nothing about where documents are stored: the IAM owner
// keeps the JSON, calls ParsePolicy when a document is written (to reject it with AWS's
// MalformedPolicyDocument text) and again when it builds a principal's PolicySet.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "iam/errors.h"

namespace paddock::iam::policy {

namespace internal {
struct CompiledPolicy;
}  // namespace internal

// What a document is for; decides which elements it must and must not have (AWS's rules):
//   kIdentity  identity-based policies, permissions boundaries, session policies:
//              no Principal/NotPrincipal; Resource or NotResource required.
//   kTrust     a role's trust policy (AssumeRolePolicyDocument): Principal or NotPrincipal
//              required; Resource/NotResource prohibited.
//   kResource  other resource-based policies (e.g. a secret's policy): Principal or NotPrincipal
//              and Resource or NotResource required.
enum class DocumentKind { kIdentity, kTrust, kResource };

// "2012-10-17" enables policy variables; "2008-10-17" (also the default when Version is absent)
// treats "${...}" as literal text, as AWS does.
enum class PolicyVersion { k2008_10_17, k2012_10_17 };

// A place in a policy document's text: 1-based line and column (bytes).
struct TextPosition {
  int line = 0;
  int column = 0;
  bool operator==(const TextPosition&) const = default;
};

// A parsed, validated, precompiled policy document. Immutable; copies share the compiled form,
// so a Policy is cheap to copy and safe to read from several threads.
class Policy {
 public:
  PolicyVersion version() const;
  size_t statement_count() const;
  // The statement's Sid, or empty. REQUIRES: i < statement_count().
  const std::string& sid(size_t i) const;
  // Where statement i is in the document (SimulatePrincipalPolicy's StartPosition/EndPosition):
  // its '{', and the column just past its '}'. {0, 0} when the text could not be mapped (e.g. a
  // "Statement" key written with escapes). REQUIRES: i < statement_count().
  TextPosition start(size_t i) const;
  TextPosition end(size_t i) const;

  const internal::CompiledPolicy& compiled() const { return *compiled_; }

 private:
  friend StatusOr<Policy> ParsePolicy(std::string_view json, DocumentKind kind);

// The context keys `policy` reads - its condition keys and the keys its policy variables name - as
// the document writes them, each once (compared case-insensitively), in order of appearance: IAM's
// GetContextKeysForCustomPolicy / GetContextKeysForPrincipalPolicy, and the keys a simulation
// reports as missing when the request lacks them.
std::vector<std::string> ContextKeys(const Policy& policy);
  explicit Policy(std::shared_ptr<const internal::CompiledPolicy> c) : compiled_(std::move(c)) {}
  std::shared_ptr<const internal::CompiledPolicy> compiled_;
};

// Parses and validates `json` as a policy document of `kind`.
// Fails with kInvalidArgument, detail iam::Error::kMalformedPolicyDocument and AWS's message for the
// first problem found, e.g. "This policy contains invalid Json", "Syntax errors in policy.",
// "Policy document should not specify a principal.", "Policy statement must contain actions.",
// "Policy statement must contain resources.", "Has prohibited field Resource", "Missing required
// field Principal", "Invalid principal in policy: \"AWS\":\"x\"", "Resource x must be in ARN
// format or \"*\".", "The policy failed legacy parsing" (unknown Version); the full list is in
// docs/contracts/iam.md. Never crashes on any input. Size limits are the IAM API's to check.
StatusOr<Policy> ParsePolicy(std::string_view json, DocumentKind kind);

// The context keys `policy` reads - its condition keys and the keys its policy variables name - as
// the document writes them, each once (compared case-insensitively), in order of appearance: IAM's
// GetContextKeysForCustomPolicy / GetContextKeysForPrincipalPolicy, and the keys a simulation
// reports as missing when the request lacks them.
std::vector<std::string> ContextKeys(const Policy& policy);

}  // namespace paddock::iam::policy
