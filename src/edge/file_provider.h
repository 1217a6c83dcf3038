// edge/file_provider: Traefik's file provider (pkg/provider/file) — dynamic configuration from one
// YAML or TOML file (`filename`) or from every .yml/.yaml/.toml file under a directory
// (`directory`, subdirectories included), converted to JSON and checked with CheckDynamic
// (edge/dynamic.h). A directory's files are merged as Traefik's provider does, in its walk order
// (each directory's entries by name, a subdirectory's files where the subdirectory sorts), with
// MergeStrategy::kSkipDuplicates (the first definition of a name wins, later ones are logged).
// The tls section (certificates, stores, options) is kept in the checked tree as written; the
// files it names are read by the TLS step, not here.
//
// Watch (Traefik's `watch`, always on): a cheap poll each second of every candidate file's
// (inode, size, mtime) — no inotify, so editors that replace a file by renaming and files under
// new subdirectories are seen alike. When the fingerprint changes the files are read again; if
// any file fails to read, parse or check, the last good configuration stays, and the error is
// logged once (Traefik: the whole directory fails on one bad file; it also keeps the last
// configuration). Go templates in the files (Traefik renders them with sprig) are not rendered:
// a `{{` is text.
//
//   edge::FileProvider file({.filename = "/etc/paddock/dynamic.yml"});
//   file.SetWake([&] { edge.Wake(); });
//   RETURN_IF_ERROR(file.Start());
//   ASSIGN_OR_RETURN(boost::json::object c, file.Current());  // {"http":{"routers":{...}}}
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "common/status.h"
#include "edge/config_provider.h"

namespace paddock::edge {

// A YAML document as JSON the way Traefik's YAML decoding feeds its structs: mappings -> objects
// (keys as text), sequences -> arrays, a plain `~`/`null`/empty scalar -> null, every other scalar
// -> a string (CheckDynamic converts text to the field's type). An empty document is {}.
// InvalidArgument with the parser's line and column; beyond 1,000,000 nodes (aliases expanded) or
// a depth of 64, InvalidArgument.
StatusOr<boost::json::value> YamlToJson(std::string_view text);
// A TOML document as JSON: tables -> objects, arrays -> arrays, strings, integers, floats and
// booleans as themselves, dates and times as their TOML text. InvalidArgument with the position.
StatusOr<boost::json::value> TomlToJson(std::string_view text);
// One file: read, parsed by its extension (".toml" -> TOML, ".yml"/".yaml" -> YAML, any case) and
// checked. Errors name the file.
StatusOr<boost::json::object> ReadDynamicFile(const std::string& path);

struct FileProviderOptions {
  std::string filename = {};   // one file; or
  std::string directory = {};  // every supported file under it
  std::chrono::milliseconds watch_interval{1000};
};

class FileProvider final : public ConfigProvider {
 public:
  explicit FileProvider(FileProviderOptions options);
  ~FileProvider() override;

  std::string name() const override { return "file"; }
  StatusOr<boost::json::object> Current() const override;
  void SetWake(std::function<void()> wake) override { wake_ = std::move(wake); }
  // InvalidArgument when neither or both of filename and directory are set, or filename's
  // extension is not supported (Traefik's refusals).
  Status Start() override;
  void Stop() override;

  // Reads every file now and, when all are good and the result differs, takes it and wakes.
  // The error (also logged) when a file is bad: the last good configuration stays.
  Status Reload();
  // What the watch does each second: Reload() when the files' fingerprint changed since the last
  // call (the first call always reloads). True when it reloaded.
  bool CheckForChanges();

 private:
  std::string Fingerprint() const;
  void Loop();

  const FileProviderOptions options_;
  std::function<void()> wake_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                    // GUARDED_BY(mu_)
  bool have_ = false;                    // GUARDED_BY(mu_)
  boost::json::object current_;          // GUARDED_BY(mu_)
  std::string last_error_;               // GUARDED_BY(mu_)
  std::string fingerprint_;              // the watch thread's (or the test's)
  bool fingerprinted_ = false;
  std::thread thread_;
};

}  // namespace paddock::edge
