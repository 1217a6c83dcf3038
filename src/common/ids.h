// Typed identifiers. A bare std::string says nothing; an AccountId says what it holds.
//
//   Scope scope{AccountId("123456789012"), Region("us-east-1")};
//   std::string arn = ClusterArn(scope, "default");
#pragma once

#include <compare>
#include <string>
#include <string_view>

namespace paddock {

// A string with a type. Tag distinguishes AccountId from Region at compile time.
template <typename Tag>
class TypedString {
 public:
  TypedString() = default;
  explicit TypedString(std::string v) : v_(std::move(v)) {}
  const std::string& str() const { return v_; }
  bool empty() const { return v_.empty(); }
  auto operator<=>(const TypedString&) const = default;

 private:
  std::string v_;
};

using AccountId = TypedString<struct AccountIdTag>;      // 12 digits
using Region = TypedString<struct RegionTag>;            // "us-east-1"
using AccessKeyId = TypedString<struct AccessKeyIdTag>;  // "AKIA..."

// Every record lives in exactly one (account, region); nothing reads or writes across scopes.
struct Scope {
  AccountId account;
  Region region;
  auto operator<=>(const Scope&) const = default;
};

// Whether `s` is a 12-digit AWS account id.
bool IsAccountId(std::string_view s);

// Whether `s` looks like an AWS region name ("us-east-1", "eu-central-2", "us-gov-west-1").
bool IsRegionName(std::string_view s);

}  // namespace paddock
