// Opaque, tamper-checked pagination tokens.
//
// A token carries the position where the next page starts, bound to a context (the action and
// the filters that shaped the list), and authenticated with HMAC-SHA256 under a per-store key.
// A token that was altered, made for another list, or is not a token at all fails with
// InvalidParameterException, as ECS reports a bad nextToken.
//
//   TokenCodec codec(key);
//   std::string token = codec.Encode("ListClusters|acct|region", last_key);
//   ASSIGN_OR_RETURN(std::string position, codec.Decode("ListClusters|acct|region", token));
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace paddock::aws {

class TokenCodec {
 public:
  explicit TokenCodec(std::string key) : key_(std::move(key)) {}
  std::string Encode(std::string_view context, std::string_view position) const;
  StatusOr<std::string> Decode(std::string_view context, std::string_view token) const;

 private:
  std::string key_;
};

}  // namespace paddock::aws
