#include "store/postgres/internal/read_cache.h"

#include <charconv>
#include <utility>

#include <fmt/format.h>

#include "store/postgres/internal/connection.h"

namespace paddock::store::postgres_internal {
namespace {

// A Scan's identity within its table: direction, limit, then the range's bounds, length-prefixed.
std::string ScanKey(const Range& range, size_t limit, Direction dir) {
  return fmt::format("{}{}:{}:{}{}:{}", dir == Direction::kForward ? 'f' : 'b', limit, range.begin.size(),
                     range.begin, range.end.size(), range.end);
}

size_t RowsBytes(const std::vector<Row>& rows) {
  size_t n = 0;
  for (const Row& r : rows) n += r.key.size() + r.value.size() + 32;
  return n;
}

}  // namespace

ReadCache::ReadCache(size_t max_bytes) : max_bytes_(max_bytes) {}

// Every table counts as changed at the cache's generation from now on: a lookup as of an earlier
// generation must not find what a later fill holds.
void ReadCache::ForgetEntriesLocked() {
  for (auto& [name, t] : tables_) stats_.forgets += t.gets.size() + t.scans.size();
  tables_.clear();
  bytes_ = 0;
  base_ = generation_;
}

void ReadCache::Publish(bool serving, uint64_t generation) {
  {
    std::lock_guard lock(wait_mu_);
    serving_ = serving;
    generation_ = generation;
  }
  advanced_.notify_all();
}

void ReadCache::Reset(uint64_t generation) {
  std::lock_guard lock(mu_);
  ForgetEntriesLocked();
  base_ = generation;
  Publish(true, generation);
}

void ReadCache::Suspend() {
  std::lock_guard lock(mu_);
  ForgetEntriesLocked();
  Publish(false, generation_);
}

void ReadCache::Apply(uint64_t generation, const std::vector<std::string>& tables) {
  {
    std::lock_guard lock(mu_);
    if (!serving_ || generation <= generation_) return;  // heard before the feed's Reset: included
    if (generation != generation_ + 1 || tables.empty()) {
      // Something was not heard, or anything may have changed: nothing held stands.
      ForgetEntriesLocked();
      base_ = generation;
    } else {
      for (const std::string& name : tables) {
        Table& t = TableLocked(name);
        stats_.forgets += t.gets.size() + t.scans.size();
        for (const auto& [k, v] : t.gets) bytes_ -= k.size() + (v ? v->size() : 0) + 32;
        for (const auto& [k, rows] : t.scans) bytes_ -= k.size() + RowsBytes(rows);
        t.gets.clear();
        t.scans.clear();
        t.changed_at = generation;
      }
    }
    Publish(true, generation);
  }
}

std::optional<uint64_t> ReadCache::AwaitGeneration(uint64_t generation, std::chrono::microseconds timeout) {
  if (serving_ && generation_ >= generation) return generation_.load();  // the usual case: no lock
  std::unique_lock lock(wait_mu_);
  if (!advanced_.wait_for(lock, timeout, [&] { return serving_ && generation_ >= generation; })) return std::nullopt;
  return generation_.load();
}

ReadCache::Table& ReadCache::TableLocked(std::string_view table) {
  auto it = tables_.find(table);
  if (it == tables_.end()) {
    it = tables_.emplace(std::string(table), Table{}).first;
    it->second.changed_at = base_;
  }
  return it->second;
}

bool ReadCache::ServesLocked(uint64_t at, std::string_view table, const Table** out) const {
  if (!serving_ || at > generation_) return false;
  auto it = tables_.find(table);
  const uint64_t changed_at = it == tables_.end() ? base_ : it->second.changed_at;
  if (changed_at > at) return false;
  *out = it == tables_.end() ? nullptr : &it->second;
  return true;
}

bool ReadCache::ChangedAfter(uint64_t at, std::string_view table) {
  std::shared_lock lock(mu_);
  const Table* t = nullptr;
  return !ServesLocked(at, table, &t);
}

std::optional<std::optional<std::string>> ReadCache::Get(uint64_t at, std::string_view table, std::string_view key) {
  std::shared_lock lock(mu_);
  const Table* t = nullptr;
  if (ServesLocked(at, table, &t) && t != nullptr) {
    if (auto it = t->gets.find(key); it != t->gets.end()) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      return it->second;
    }
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  return std::nullopt;
}

std::optional<std::vector<Row>> ReadCache::Scan(uint64_t at, std::string_view table, const Range& range, size_t limit,
                                                Direction dir) {
  const std::string key = ScanKey(range, limit, dir);
  std::shared_lock lock(mu_);
  const Table* t = nullptr;
  if (ServesLocked(at, table, &t) && t != nullptr) {
    if (auto it = t->scans.find(key); it != t->scans.end()) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      return it->second;
    }
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  return std::nullopt;
}

void ReadCache::Admit(size_t bytes) {
  if (bytes_ + bytes > max_bytes_) ForgetEntriesLocked();
  bytes_ += bytes;
  ++stats_.fills;
}

void ReadCache::FillGet(uint64_t at, std::string_view table, std::string_view key,
                        const std::optional<std::string>& value) {
  const size_t bytes = key.size() + (value ? value->size() : 0) + 32;
  std::lock_guard lock(mu_);
  if (!serving_ || at != generation_ || bytes > max_bytes_ / 16) return;
  Table& t = TableLocked(table);
  if (t.changed_at > at || t.gets.contains(key)) return;
  Admit(bytes);
  TableLocked(table).gets.emplace(std::string(key), value);  // Admit may have forgotten `t`
}

void ReadCache::FillScan(uint64_t at, std::string_view table, const Range& range, size_t limit, Direction dir,
                         const std::vector<Row>& rows) {
  std::string key = ScanKey(range, limit, dir);
  const size_t bytes = key.size() + RowsBytes(rows);
  std::lock_guard lock(mu_);
  if (!serving_ || at != generation_ || bytes > max_bytes_ / 16) return;
  Table& t = TableLocked(table);
  if (t.changed_at > at || t.scans.contains(key)) return;
  Admit(bytes);
  TableLocked(table).scans.emplace(std::move(key), rows);
}

ReadCache::Stats ReadCache::stats() const {
  std::shared_lock lock(mu_);
  Stats s = stats_;
  s.hits = hits_;
  s.misses = misses_;
  return s;
}

GenerationBarrier::GenerationBarrier(std::unique_ptr<Connection> conn) : conn_(std::move(conn)) {}

GenerationBarrier::~GenerationBarrier() = default;

StatusOr<uint64_t> GenerationBarrier::Await() {
  std::unique_lock lock(mu_);
  // Queries start one after another: the one after any in flight now began after this call.
  const uint64_t need = started_ + 1;
  while (completed_ < need) {
    if (in_flight_) {
      done_.wait(lock);
      continue;
    }
    in_flight_ = true;
    const uint64_t number = ++started_;
    lock.unlock();
    StatusOr<uint64_t> result = [&]() -> StatusOr<uint64_t> {
      RETURN_IF_ERROR(conn_->EnsureConnected());
      ASSIGN_OR_RETURN(std::optional<std::string> text, conn_->QueryPrepared("generation", ReadGenerationSql()));
      if (!text) return Internal("postgresql: the store's generation row is missing");
      return ParseGeneration(*text);
    }();
    lock.lock();
    in_flight_ = false;
    completed_ = number;
    last_ = std::move(result);
    done_.notify_all();
  }
  return last_;
}

uint64_t GenerationBarrier::queries() const {
  std::lock_guard lock(mu_);
  return completed_;
}

std::string ReadGenerationSql() { return fmt::format("SELECT n FROM {}", kGenerationTable); }

std::string AnnounceSql(std::string_view channel, std::string_view origin, std::string_view tables_part) {
  return fmt::format("WITH g AS (UPDATE {} SET n = n + 1 RETURNING n) SELECT pg_notify('{}', '{} ' || g.n || ' {}') FROM g",
                     kGenerationTable, channel, origin, tables_part);
}

StatusOr<uint64_t> ParseGeneration(std::string_view text) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size())
    return Internal(fmt::format("postgresql: the store's generation is not a number: '{}'", text));
  return n;
}

}  // namespace paddock::store::postgres_internal
