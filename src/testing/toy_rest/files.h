// The REST-JSON toy's owner: files in buckets, each write a new version, kept in memory (the
// toy proves the protocol; src/testing/toy_service/ proves the store). Typed values in and out,
// no wire format; failures are Status codes the adapter names (api/toy_files_service.cc).
//
//   Files files;
//   ASSIGN_OR_RETURN(int64_t version, files.Put(scope, "docs", "a/b.txt", data, Overwrite{true}));
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/ids.h"
#include "common/status.h"

namespace paddock::toyrest {

// The toy's failures, named on the wire by its adapter's table (api/toy_files_service.cc).
enum class Error {
  kFileNotFound = 1,  // NotFound: no such file or version
  kFileExists,        // AlreadyExists: a write without overwrite to an existing file
};
const ErrorDomain& ErrorDomainOf(Error);

struct FileData {
  std::string content;
  std::string owner;  // may be empty
  std::vector<std::string> tags;
  std::map<std::string, std::string> metadata;
};

struct File {
  std::string bucket;
  std::string key;
  int64_t version = 0;  // 1 for the first write
  FileData data;
};

struct Overwrite {
  bool value = false;
};

class Files {
 public:
  // A new version of (bucket, key). AlreadyExists (Error::kFileExists) when the file exists and
  // !overwrite.
  StatusOr<int64_t> Put(const Scope& scope, const std::string& bucket, const std::string& key, FileData data,
                        Overwrite overwrite);
  // The latest version, or `version`. NotFound (Error::kFileNotFound) when there is no such file
  // or version.
  StatusOr<File> Get(const Scope& scope, const std::string& bucket, const std::string& key,
                     std::optional<int64_t> version) const;
  // Every version number of the file, oldest first. NotFound (kFileNotFound) when there is none.
  StatusOr<std::vector<int64_t>> Versions(const Scope& scope, const std::string& bucket, const std::string& key) const;
  // Keys in `bucket` starting with `prefix`, sorted, at most `max`; only those whose latest
  // owner is one of `owners` when that is not empty.
  std::vector<std::string> List(const Scope& scope, const std::string& bucket, const std::string& prefix, size_t max,
                                const std::vector<std::string>& owners) const;
  // NotFound (kFileNotFound) when there is no such file.
  Status Delete(const Scope& scope, const std::string& bucket, const std::string& key);

 private:
  using Key = std::tuple<std::string, std::string, std::string, std::string>;  // account, region, bucket, key
  static Key KeyOf(const Scope& scope, const std::string& bucket, const std::string& key);

  mutable std::mutex mu_;
  std::map<Key, std::vector<FileData>> files_;  // GUARDED_BY(mu_): every version, oldest first
};

}  // namespace paddock::toyrest
