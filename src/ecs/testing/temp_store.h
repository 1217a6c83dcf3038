// A SQLite store in a fresh temporary directory, removed when the test ends.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "cli/schemas.h"
#include "store/sqlite/sqlite_store.h"

namespace paddock::testing {

class TempStore {
 public:
  TempStore() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "paddock-test-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    store::SqliteOptions options;
    options.path = dir_ + "/state.db";
    options.durable = false;
    options.schemas = cli::NodeSchemas();  // every module's tables, as a node's store has
    auto s = store::SqliteStore::Open(options);
    if (!s.ok()) std::abort();
    store_ = std::move(*s);
  }
  ~TempStore() {
    store_->Close();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  store::Store& operator*() { return *store_; }
  store::Store* get() { return store_.get(); }
  store::Store* operator->() { return store_.get(); }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::unique_ptr<store::SqliteStore> store_;
};

}  // namespace paddock::testing
