// The Store conformance suite: the behaviour every Store implementation must have, as one
// value-parameterized GoogleTest suite. An implementation's test instantiates it with a factory:
//
//   INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformanceTest,
//       ::testing::Values(StoreFactory{"Sqlite", [](const std::string& dir) {
//         return std::unique_ptr<Store>(*SqliteStore::Open({.path = dir + "/state.db", .schemas = {kTestSchema}}));
//       }}), StoreFactoryName);
//
// and links the paddock_store_conformance object library into its test binary.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "store/store.h"

namespace paddock::store::testing {

struct StoreFactory {
  std::string name;
  // Opens the store kept under `dir`, an existing directory (empty at first) that the suite owns
  // and removes afterwards. Called again with the same dir after the previous store was
  // destroyed, it must open the same data.
  // Returns null on failure (the test then fails).
  std::function<std::unique_ptr<Store>(const std::string& dir)> open;

  friend void PrintTo(const StoreFactory& f, std::ostream* os) { *os << f.name; }
};

// For INSTANTIATE_TEST_SUITE_P's name generator argument.
inline std::string StoreFactoryName(const ::testing::TestParamInfo<StoreFactory>& info) {
  return info.param.name;
}

// A directory under $TMPDIR (or /tmp) made by mkdtemp, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class StoreConformanceTest : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override;

  // Opens the store in tmp_ (again); null, with a test failure, if the factory fails.
  std::unique_ptr<Store> OpenStore();

  TempDir tmp_;
  std::unique_ptr<Store> store_;
};

}  // namespace paddock::store::testing
