#include "store/internal/table_catalog.h"

#include <algorithm>

#include <fmt/format.h>

namespace paddock::store::internal {

StatusOr<std::shared_ptr<const TableCatalog>> TableCatalog::Build(std::span<const ModuleSchema> modules) {
  auto catalog = std::make_shared<TableCatalog>();
  std::vector<ModuleSchema> all = {kStoreSchema};
  all.insert(all.end(), modules.begin(), modules.end());
  for (const ModuleSchema& m : all) {
    for (const ModuleSchema& other : catalog->modules_) {
      if (other.module == m.module) return InvalidArgument(fmt::format("store module '{}' is declared twice", m.module));
    }
    catalog->tables_.emplace_back(m.tables.begin(), m.tables.end());
    for (const TableDef& t : m.tables) {
      if (t.since_version > m.version) {
        return InvalidArgument(fmt::format("store table '{}' is newer ({}) than its module '{}' ({})", t.name,
                                           t.since_version, m.module, m.version));
      }
      if (std::find(catalog->names_.begin(), catalog->names_.end(), t.name) != catalog->names_.end()) {
        return InvalidArgument(fmt::format("store table '{}' is declared twice", t.name));
      }
      catalog->names_.emplace_back(t.name);
    }
    catalog->modules_.push_back(ModuleSchema{m.module, m.version, catalog->tables_.back()});
  }
  // names_ no longer grows: the views below stay valid.
  for (size_t i = 0; i < catalog->names_.size(); ++i) catalog->index_.emplace(catalog->names_[i], static_cast<int>(i));
  return std::shared_ptr<const TableCatalog>(std::move(catalog));
}

int TableCatalog::Index(std::string_view table) const {
  auto it = index_.find(table);
  return it == index_.end() ? -1 : it->second;
}

}  // namespace paddock::store::internal
