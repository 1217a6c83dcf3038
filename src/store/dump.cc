#include "store/dump.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "common/encoding.h"
#include "store/key.h"

namespace paddock::store {
namespace {

namespace json = boost::json;

constexpr int kFormat = 1;
constexpr size_t kPage = 1000;

// kStoreSchema and `modules`, in order.
std::vector<ModuleSchema> AllModules(std::span<const ModuleSchema> modules) {
  std::vector<ModuleSchema> all = {kStoreSchema};
  all.insert(all.end(), modules.begin(), modules.end());
  return all;
}

}  // namespace

Status ExportStore(Store& store, std::span<const ModuleSchema> modules, std::ostream& out) {
  const std::vector<ModuleSchema> all = AllModules(modules);
  json::object versions;
  for (const ModuleSchema& m : all) versions[m.module] = m.version;
  out << json::serialize(json::object{{"paddock-store-dump", kFormat}, {"modules", versions}}) << '\n';
  // One snapshot for the whole dump: a server writing meanwhile cannot tear it.
  return store.Read([&](ReadTxn& txn) -> Status {
    for (const ModuleSchema& m : all) {
      for (const TableDef& t : m.tables) {
        Range range;
        for (;;) {
          ASSIGN_OR_RETURN(std::vector<Row> rows, txn.Scan(t.name, range, kPage));
          for (const Row& r : rows)
            out << json::serialize(json::object{{"t", t.name}, {"k", Base64UrlEncode(r.key)}, {"v", Base64UrlEncode(r.value)}})
                << '\n';
          if (rows.size() < kPage) break;
          range.begin = KeySuccessor(rows.back().key);
        }
      }
    }
    if (!out) return Unavailable("cannot write the dump");
    return OkStatus();
  });
}

StatusOr<size_t> ImportStore(Store& store, std::span<const ModuleSchema> modules, std::istream& in) {
  const std::vector<ModuleSchema> all = AllModules(modules);
  std::map<std::string, int, std::less<>> version_of;
  std::set<std::string, std::less<>> known_tables;
  for (const ModuleSchema& m : all) {
    version_of[std::string(m.module)] = m.version;
    for (const TableDef& t : m.tables) known_tables.emplace(t.name);
  }
  // Only into an empty store: a dump merged into live state could contradict it.
  RETURN_IF_ERROR(store.Read([&](ReadTxn& txn) -> Status {
    for (const std::string& table : known_tables) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(table, Range{}, 1));
      if (!rows.empty())
        return FailedPrecondition(fmt::format("the target store is not empty (table '{}' has rows): import needs a new one",
                                              table));
    }
    return OkStatus();
  }));

  std::string line;
  size_t number = 0;
  auto bad = [&](std::string_view why) { return InvalidArgument(fmt::format("dump line {}: {}", number, why)); };
  if (!std::getline(in, line)) return InvalidArgument("the dump is empty");
  ++number;
  {
    boost::system::error_code ec;
    json::value header = json::parse(line, ec);
    const json::object* h = ec ? nullptr : header.if_object();
    if (h == nullptr || !h->contains("paddock-store-dump") || !h->at("paddock-store-dump").is_int64() ||
        h->at("paddock-store-dump").as_int64() != kFormat || !h->contains("modules") || !h->at("modules").is_object())
      return bad("not a Paddock store dump of format 1");
    for (const auto& [module, v] : h->at("modules").as_object()) {
      auto it = version_of.find(std::string_view(module));
      if (it != version_of.end() && v.is_int64() && v.as_int64() > it->second)
        return bad(fmt::format("the dump has version {} of the '{}' tables, newer than the {} this build supports",
                               v.as_int64(), std::string_view(module), it->second));
    }
  }
  struct Pending {
    std::string table, key, value;
  };
  std::vector<Pending> batch;
  size_t written = 0;
  auto flush = [&]() -> Status {
    if (batch.empty()) return OkStatus();
    RETURN_IF_ERROR(store.Write([&](WriteTxn& txn) -> Status {
      for (const Pending& p : batch) RETURN_IF_ERROR(txn.Put(p.table, p.key, p.value));
      return OkStatus();
    }));
    written += batch.size();
    batch.clear();
    return OkStatus();
  };
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    boost::system::error_code ec;
    json::value row = json::parse(line, ec);
    const json::object* o = ec ? nullptr : row.if_object();
    if (o == nullptr || !o->contains("t") || !o->contains("k") || !o->contains("v") || !o->at("t").is_string() ||
        !o->at("k").is_string() || !o->at("v").is_string())
      return bad("not a row {\"t\", \"k\", \"v\"}");
    const std::string table(o->at("t").as_string());
    if (!known_tables.contains(table)) return bad(fmt::format("table '{}' is not one this build declares", table));
    auto key = Base64UrlDecode(std::string_view(o->at("k").as_string()));
    auto value = Base64UrlDecode(std::string_view(o->at("v").as_string()));
    if (!key.ok() || !value.ok()) return bad("key or value is not base64url");
    batch.push_back(Pending{table, std::move(*key), std::move(*value)});
    if (batch.size() >= kPage) RETURN_IF_ERROR(flush());
  }
  RETURN_IF_ERROR(flush());
  return written;
}

}  // namespace paddock::store
