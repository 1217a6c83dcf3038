// Private to store/: the tables a store serves (store/schema.h's modules), shared by the SQLite and
// PostgreSQL implementations, which both make one real table `t_<name>` of each.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "store/schema.h"

namespace paddock::store::internal {

// The tables a store serves, each with a dense index for the connections' statement caches.
class TableCatalog {
 public:
  // The store's own tables (kStoreSchema) and every table of `modules`. InvalidArgument for a
  // module or table declared twice, or a table newer than its module's version.
  static StatusOr<std::shared_ptr<const TableCatalog>> Build(std::span<const ModuleSchema> modules);

  // The table's index in [0, size()), or -1 when no module declares it.
  int Index(std::string_view table) const;
  size_t size() const { return names_.size(); }
  // The name of the table at `index` (REQUIRES: 0 <= index < size()).
  const std::string& name(int index) const { return names_[static_cast<size_t>(index)]; }
  // kStoreSchema first, then `modules` in order.
  const std::vector<ModuleSchema>& modules() const { return modules_; }

 private:
  std::vector<ModuleSchema> modules_;
  std::vector<std::vector<TableDef>> tables_;  // owned copies behind modules_[i].tables
  std::vector<std::string> names_;
  std::unordered_map<std::string_view, int> index_;  // views into names_
};

}  // namespace paddock::store::internal
