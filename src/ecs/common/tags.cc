#include "ecs/common/tags.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "common/json_fields.h"
#include "store/key.h"
#include "ecs/common/errors.h"

namespace paddock::ecs {
namespace {

constexpr std::string_view kTags = "tags";

std::string TagPrefix(const Scope& scope, std::string_view arn) {
  return store::Key().Str(scope.account.str()).Str(scope.region.str()).Str(arn).Done();
}

// Counts Unicode code points (the input is valid UTF-8; the front checks that).
size_t CodePoints(std::string_view s) {
  size_t n = 0;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

bool HasReservedPrefix(std::string_view s) {
  if (s.size() < 4) return false;
  return (s[0] == 'a' || s[0] == 'A') && (s[1] == 'w' || s[1] == 'W') && (s[2] == 's' || s[2] == 'S') && s[3] == ':';
}

// AWS allows letters, numbers and spaces representable in UTF-8, and + - = . _ : / @.
bool AllowedTagText(std::string_view s) {
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x80) continue;  // non-ASCII letters and spaces
    if (std::isalnum(c) || c == ' ' || std::string_view("+-=._:/@").find(static_cast<char>(c)) != std::string_view::npos)
      continue;
    return false;
  }
  return true;
}

}  // namespace

Status ValidateTagKeys(const std::vector<std::string>& keys) {
  for (const auto& key : keys) {
    size_t n = CodePoints(key);
    if (n < 1 || n > 128)
      return InvalidArgument(fmt::format("Tag key '{}' must be between 1 and 128 characters long.", key),
                             ecs::Error::kInvalidParameter);
    if (!AllowedTagText(key))
      return InvalidArgument(
          fmt::format("Tag key '{}' contains invalid characters. Tags may contain letters, numbers, spaces and + - = . _ : / @.", key),
          ecs::Error::kInvalidParameter);
    if (HasReservedPrefix(key))
      return InvalidArgument(fmt::format("Tag key '{}' uses the reserved prefix 'aws:'.", key),
                             ecs::Error::kInvalidParameter);
  }
  return OkStatus();
}

namespace {

// Tags whose key starts with "aws:" (ECS's managed tags) do not count toward the 50.
size_t UserTagCount(const std::map<std::string, std::string>& tags) {
  size_t n = 0;
  for (const auto& [key, value] : tags) n += key.starts_with("aws:") ? 0 : 1;
  return n;
}

}  // namespace

Status ValidateTags(const Tags& tags) {
  if (tags.size() > kMaxTagsPerResource)
    return InvalidArgument(fmt::format("Too many tags: {}. A resource can have at most {} tags.", tags.size(),
                                       kMaxTagsPerResource),
                           ecs::Error::kInvalidParameter);
  std::vector<std::string> keys;
  keys.reserve(tags.size());
  for (const auto& t : tags) keys.push_back(t.key);
  RETURN_IF_ERROR(ValidateTagKeys(keys));
  std::sort(keys.begin(), keys.end());
  if (auto dup = std::adjacent_find(keys.begin(), keys.end()); dup != keys.end())
    return InvalidArgument(fmt::format("The tag key '{}' appears more than once. Each tag key of a resource must be unique.", *dup),
                           ecs::Error::kInvalidParameter);
  for (const auto& t : tags) {
    if (CodePoints(t.value) > 256)
      return InvalidArgument(fmt::format("Tag value for key '{}' must be at most 256 characters long.", t.key),
                             ecs::Error::kInvalidParameter);
    if (!AllowedTagText(t.value))
      return InvalidArgument(fmt::format("Tag value for key '{}' contains invalid characters.", t.key),
                             ecs::Error::kInvalidParameter);
  }
  return OkStatus();
}

Tags TagsFrom(const boost::json::object& in, std::string_view member) {
  Tags tags;
  for (const boost::json::object* t : json_fields::Objects(in, member))
    tags.push_back(Tag{json_fields::Str(*t, "key"), json_fields::Str(*t, "value")});
  return tags;
}

boost::json::array TagsJson(const Tags& tags) {
  boost::json::array out;
  out.reserve(tags.size());
  for (const auto& t : tags) out.push_back(boost::json::object{{"key", t.key}, {"value", t.value}});
  return out;
}

StatusOr<Tags> ReadTags(store::ReadTxn& txn, const Scope& scope, std::string_view arn) {
  // 50 of the caller's plus the few "aws:" ones ECS adds (managed tags), which do not count.
  ASSIGN_OR_RETURN(auto rows, txn.Scan(kTags, store::PrefixRange(TagPrefix(scope, arn)), kMaxTagsPerResource + 10));
  Tags out;
  out.reserve(rows.size());
  for (auto& row : rows) {
    store::KeyReader r(row.key);
    for (int i = 0; i < 3; ++i) {
      ASSIGN_OR_RETURN(std::string skip, r.Str());
    }
    ASSIGN_OR_RETURN(std::string key, r.Str());
    out.push_back(Tag{std::move(key), std::move(row.value)});
  }
  return out;
}

Status MergeTags(Tags& current, const Tags& added, std::string_view arn) {
  std::map<std::string, std::string> merged;
  for (auto& t : current) merged[t.key] = t.value;
  for (auto& t : added) merged[t.key] = t.value;
  if (UserTagCount(merged) > kMaxTagsPerResource)
    return InvalidArgument(fmt::format("The resource {} would have {} tags; a resource can have at most {} tags.", arn,
                                       UserTagCount(merged), kMaxTagsPerResource),
                           ecs::Error::kInvalidParameter);
  current.clear();
  for (auto& [key, value] : merged) current.push_back(Tag{key, value});
  return OkStatus();
}

Status PutTags(store::WriteTxn& txn, const Scope& scope, std::string_view arn, const Tags& tags) {
  if (tags.empty()) return OkStatus();
  ASSIGN_OR_RETURN(Tags existing, ReadTags(txn, scope, arn));
  RETURN_IF_ERROR(MergeTags(existing, tags, arn));
  std::string prefix = TagPrefix(scope, arn);
  for (const auto& t : tags) RETURN_IF_ERROR(txn.Put(kTags, prefix + store::Key().Str(t.key).Done(), t.value));
  return OkStatus();
}

Status RemoveTags(store::WriteTxn& txn, const Scope& scope, std::string_view arn, const std::vector<std::string>& keys) {
  std::string prefix = TagPrefix(scope, arn);
  for (const auto& k : keys) RETURN_IF_ERROR(txn.Delete(kTags, prefix + store::Key().Str(k).Done()));
  return OkStatus();
}

Status RemoveAllTags(store::WriteTxn& txn, const Scope& scope, std::string_view arn) {
  ASSIGN_OR_RETURN(Tags existing, ReadTags(txn, scope, arn));
  std::vector<std::string> keys;
  for (auto& t : existing) keys.push_back(t.key);
  return RemoveTags(txn, scope, arn, keys);
}

}  // namespace paddock::ecs
