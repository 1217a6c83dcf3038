#include "testing/toy_rest/files.h"

#include <fmt/format.h>

#include <algorithm>

namespace paddock::toyrest {

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"toyrest", [](int code) -> std::string_view {
                                         switch (static_cast<Error>(code)) {
                                           case Error::kFileNotFound: return "FileNotFound";
                                           case Error::kFileExists: return "FileExists";
                                         }
                                         return "?";
                                       }};
  return kDomain;
}

namespace {

Status NoSuchFile(const std::string& bucket, const std::string& key) {
  return NotFound(fmt::format("No file '{}' in bucket '{}'.", key, bucket), Error::kFileNotFound);
}

}  // namespace

Files::Key Files::KeyOf(const Scope& scope, const std::string& bucket, const std::string& key) {
  return {scope.account.str(), scope.region.str(), bucket, key};
}

StatusOr<int64_t> Files::Put(const Scope& scope, const std::string& bucket, const std::string& key, FileData data,
                             Overwrite overwrite) {
  std::lock_guard lock(mu_);
  std::vector<FileData>& versions = files_[KeyOf(scope, bucket, key)];
  if (!versions.empty() && !overwrite.value)
    return AlreadyExists(fmt::format("The file '{}' already exists in bucket '{}'.", key, bucket),
                         Error::kFileExists);
  versions.push_back(std::move(data));
  return static_cast<int64_t>(versions.size());
}

StatusOr<File> Files::Get(const Scope& scope, const std::string& bucket, const std::string& key,
                          std::optional<int64_t> version) const {
  std::lock_guard lock(mu_);
  auto it = files_.find(KeyOf(scope, bucket, key));
  if (it == files_.end()) return NoSuchFile(bucket, key);
  const int64_t n = static_cast<int64_t>(it->second.size());
  const int64_t want = version.value_or(n);
  if (want < 1 || want > n)
    return NotFound(fmt::format("No version {} of file '{}'.", want, key), Error::kFileNotFound);
  return File{bucket, key, want, it->second[static_cast<size_t>(want - 1)]};
}

StatusOr<std::vector<int64_t>> Files::Versions(const Scope& scope, const std::string& bucket,
                                               const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = files_.find(KeyOf(scope, bucket, key));
  if (it == files_.end()) return NoSuchFile(bucket, key);
  std::vector<int64_t> out;
  for (size_t i = 1; i <= it->second.size(); ++i) out.push_back(static_cast<int64_t>(i));
  return out;
}

std::vector<std::string> Files::List(const Scope& scope, const std::string& bucket, const std::string& prefix,
                                     size_t max, const std::vector<std::string>& owners) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (auto it = files_.lower_bound(KeyOf(scope, bucket, prefix)); it != files_.end() && out.size() < max; ++it) {
    const auto& [account, region, b, key] = it->first;
    if (account != scope.account.str() || region != scope.region.str() || b != bucket || !key.starts_with(prefix)) break;
    if (!owners.empty() && std::find(owners.begin(), owners.end(), it->second.back().owner) == owners.end()) continue;
    out.push_back(key);
  }
  return out;
}

Status Files::Delete(const Scope& scope, const std::string& bucket, const std::string& key) {
  std::lock_guard lock(mu_);
  if (files_.erase(KeyOf(scope, bucket, key)) == 0)
    return NoSuchFile(bucket, key);
  return OkStatus();
}

}  // namespace paddock::toyrest
