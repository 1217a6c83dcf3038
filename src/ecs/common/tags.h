// Tags of ECS resources. Each resource's owner stores and reads its tags with these helpers,
// inside its own transactions: nothing else writes a resource's tags (seed gap 6).
//
// Table "tags": (account, region, resource ARN, key) -> value.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "common/ids.h"
#include "common/status.h"
#include "store/store.h"

namespace paddock::ecs {

struct Tag {
  std::string key;
  std::string value;
  bool operator==(const Tag&) const = default;
};
using Tags = std::vector<Tag>;

inline constexpr size_t kMaxTagsPerResource = 50;

// ECS's wire shape of tags, [{key, value}]: read from a request's or record's member (absent: no
// tags), and written for an answer or a record.
Tags TagsFrom(const boost::json::object& in, std::string_view member = "tags");
boost::json::array TagsJson(const Tags& tags);

// Checks keys and values against AWS's limits (key 1-128 characters, value 0-256, allowed
// characters, the reserved "aws:" prefix). Errors are InvalidParameterException.
Status ValidateTags(const Tags& tags);
Status ValidateTagKeys(const std::vector<std::string>& keys);

// `current` with `added` put in (a key already there takes the new value), ordered by key. Fails
// (changing nothing) when the result would have more than 50 tags besides ECS's own "aws:" ones;
// the error names `arn`.
Status MergeTags(Tags& current, const Tags& added, std::string_view arn);

// The resource's tags, ordered by key.
StatusOr<Tags> ReadTags(store::ReadTxn& txn, const Scope& scope, std::string_view arn);
// Adds or overwrites tags. Fails (writing nothing) when the result would exceed 50 tags.
Status PutTags(store::WriteTxn& txn, const Scope& scope, std::string_view arn, const Tags& tags);
Status RemoveTags(store::WriteTxn& txn, const Scope& scope, std::string_view arn, const std::vector<std::string>& keys);
Status RemoveAllTags(store::WriteTxn& txn, const Scope& scope, std::string_view arn);

}  // namespace paddock::ecs
