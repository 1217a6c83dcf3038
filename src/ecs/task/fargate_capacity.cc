#include "ecs/task/fargate_capacity.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <vector>

#include "ecs/common/records.h"
#include "store/key.h"

namespace paddock::ecs::task {
namespace {

constexpr std::string_view kReservations = "fargate_reservations";
constexpr std::string_view kNodeUsage = "fargate_node_usage";
constexpr std::string_view kAccountUsage = "fargate_account_usage";
constexpr std::string_view kHosts = "fargate_hosts";
constexpr int64_t kCpuPerVcpu = 1024;
// More hosts than one store ever has: a scan this long reads the whole table.
constexpr size_t kMaxHosts = 10'000;

std::string NodeKey(std::string_view node) { return store::Key().Str(node).Done(); }
std::string AccountKey(const AccountId& account) { return store::Key().Str(account.str()).Done(); }
std::string ReservationKey(const Scope& s, std::string_view cluster, std::string_view task_id) {
  return ScopeKey(s).Str(cluster).Str(task_id).Done();
}

// "<a> <b> ..." -> the numbers; DataLoss when a row is not `n` integers.
StatusOr<std::vector<int64_t>> ParseNumbers(std::string_view text, size_t n, std::string_view what) {
  std::vector<int64_t> out;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  while (p < end) {
    while (p < end && *p == ' ') ++p;
    if (p == end) break;
    int64_t v = 0;
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc()) return DataLoss(fmt::format("corrupt {} record", what));
    out.push_back(v);
    p = next;
  }
  if (out.size() != n) return DataLoss(fmt::format("corrupt {} record", what));
  return out;
}

StatusOr<FargateUsage> ReadPair(store::ReadTxn& txn, std::string_view table, const std::string& key,
                                std::string_view what) {
  ASSIGN_OR_RETURN(auto text, txn.Get(table, key));
  if (!text) return FargateUsage{};
  ASSIGN_OR_RETURN(auto v, ParseNumbers(*text, 2, what));
  return FargateUsage{v[0], v[1]};
}

// A reservation: "<cpu> <memory>" (on the node "node"), or "<cpu> <memory> <node>".
struct Reservation {
  FargateUsage usage;
  std::string node = std::string(kDefaultFargateNode);
};
StatusOr<Reservation> ParseReservation(std::string_view text) {
  Reservation r;
  const size_t first = text.find(' ');
  const size_t second = first == std::string_view::npos ? first : text.find(' ', first + 1);
  if (second != std::string_view::npos) {
    r.node = std::string(text.substr(second + 1));
    text = text.substr(0, second);
    if (r.node.empty()) return DataLoss("corrupt Fargate reservation record");
  }
  ASSIGN_OR_RETURN(auto v, ParseNumbers(text, 2, "Fargate reservation"));
  r.usage = {v[0], v[1]};
  return r;
}

// An offer: "<expires ms> <cpu> <memory> <agent> <overlay address|->".
struct HostOffer {
  int64_t expires_ms = 0;
  FargateHost host;
};
StatusOr<HostOffer> ParseOffer(std::string_view node, std::string_view text) {
  std::vector<std::string_view> words;
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find(' ', start), text.size());
    words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  if (words.size() != 5 || words[3].empty() || words[4].empty()) return DataLoss("corrupt Fargate host record");
  const size_t numbers_end = static_cast<size_t>(words[2].data() + words[2].size() - text.data());
  ASSIGN_OR_RETURN(auto v, ParseNumbers(text.substr(0, numbers_end), 3, "Fargate host"));
  return HostOffer{v[0], FargateHost{std::string(node), std::string(words[3]), words[4] == "-" ? "" : std::string(words[4]),
                                 FargateUsage{v[1], v[2]}}};
}

// The larger share of `capacity` that `used` + `demand` would take, in millionths; nullopt when
// the demand does not fit.
std::optional<int64_t> ShareAfter(const FargateUsage& used, const FargateDemand& demand, const FargateUsage& capacity) {
  const int64_t cpu = used.cpu + demand.cpu;
  const int64_t memory = used.memory + demand.memory;
  if (cpu > capacity.cpu || memory > capacity.memory) return std::nullopt;
  auto share = [](int64_t part, int64_t whole) { return whole <= 0 ? int64_t{0} : part * 1'000'000 / whole; };
  return std::max(share(cpu, capacity.cpu), share(memory, capacity.memory));
}

StatusOr<int64_t> ReadCpu(store::ReadTxn& txn, const AccountId& account) {
  ASSIGN_OR_RETURN(auto text, txn.Get(kAccountUsage, AccountKey(account)));
  if (!text) return int64_t{0};
  ASSIGN_OR_RETURN(auto v, ParseNumbers(*text, 1, "Fargate account usage"));
  return v[0];
}

// Writes a total, deleting the row when it falls to zero (an idle node or account keeps none).
Status PutPair(store::WriteTxn& txn, std::string_view table, const std::string& key, FargateUsage u) {
  if (u.cpu <= 0 && u.memory <= 0) return txn.Delete(table, key);
  return txn.Put(table, key, fmt::format("{} {}", std::max<int64_t>(0, u.cpu), std::max<int64_t>(0, u.memory)));
}
Status PutCpu(store::WriteTxn& txn, const AccountId& account, int64_t cpu) {
  if (cpu <= 0) return txn.Delete(kAccountUsage, AccountKey(account));
  return txn.Put(kAccountUsage, AccountKey(account), fmt::format("{}", cpu));
}

// Subtracts one reservation from its node's and the account's totals.
Status GiveBack(store::WriteTxn& txn, const AccountId& account, const Reservation& held) {
  const FargateUsage& r = held.usage;
  const std::string node_key = NodeKey(held.node);
  ASSIGN_OR_RETURN(FargateUsage node, ReadPair(txn, kNodeUsage, node_key, "Fargate node usage"));
  RETURN_IF_ERROR(PutPair(txn, kNodeUsage, node_key, {node.cpu - r.cpu, node.memory - r.memory}));
  ASSIGN_OR_RETURN(int64_t cpu, ReadCpu(txn, account));
  return PutCpu(txn, account, cpu - r.cpu);
}

}  // namespace

bool IsFargateAdmissionReason(std::string_view reason) {
  return reason == kCapacityUnavailableReason || reason == kVcpuLimitReachedReason;
}

std::string_view FailureReason(Admission a) {
  switch (a) {
    case Admission::kAdmitted:
      return {};
    case Admission::kVcpuLimitReached:
      return kVcpuLimitReachedReason;
    case Admission::kCapacityUnavailable:
      return kCapacityUnavailableReason;
  }
  return {};
}

StatusOr<FargatePlacement> FargateCapacity::Reserve(store::WriteTxn& txn, const Scope& scope,
                                                    std::string_view cluster, std::string_view task_id,
                                                    const FargateDemand& demand, TimePoint now) {
  if (demand.cpu < 0 || demand.memory < 0) return InvalidArgument("A Fargate reservation cannot be negative.");
  const std::string rkey = ReservationKey(scope, cluster, task_id);
  ASSIGN_OR_RETURN(auto existing, txn.Get(kReservations, rkey));
  ASSIGN_OR_RETURN(std::vector<FargateHost> others, OtherHosts(txn, now));
  if (existing) {  // held already: where it is
    ASSIGN_OR_RETURN(Reservation held, ParseReservation(*existing));
    FargatePlacement placed;
    for (FargateHost& h : others)
      if (h.node == held.node) placed.elsewhere = std::move(h);
    return placed;
  }
  ASSIGN_OR_RETURN(int64_t account_cpu, ReadCpu(txn, scope.account));
  if (account_cpu + demand.cpu > limits_.vcpus_per_account * kCpuPerVcpu)
    return FargatePlacement{Admission::kVcpuLimitReached, std::nullopt};
  // The others by node, then this one, which takes any tie.
  std::optional<size_t> best;  // index into `others`, or others.size() for this node
  int64_t best_share = 0;
  FargateUsage best_usage;
  for (size_t i = 0; i <= others.size(); ++i) {
    const bool own = i == others.size();
    const std::string& node = own ? node_ : others[i].node;
    ASSIGN_OR_RETURN(FargateUsage used, ReadPair(txn, kNodeUsage, NodeKey(node), "Fargate node usage"));
    const std::optional<int64_t> share =
        ShareAfter(used, demand, own ? FargateUsage{limits_.cpu, limits_.memory} : others[i].capacity);
    if (!share) continue;
    // Strictly smaller wins; this node wins a tie with any other (it is looked at last).
    if (!best || *share < best_share || (own && *share == best_share)) {
      best = i;
      best_share = *share;
      best_usage = used;
    }
  }
  if (!best) return FargatePlacement{Admission::kCapacityUnavailable, std::nullopt};
  FargatePlacement placed;
  if (*best < others.size()) placed.elsewhere = std::move(others[*best]);
  const std::string& node = placed.elsewhere ? placed.elsewhere->node : node_;
  RETURN_IF_ERROR(txn.Put(kReservations, rkey,
                          node == kDefaultFargateNode ? fmt::format("{} {}", demand.cpu, demand.memory)
                                                      : fmt::format("{} {} {}", demand.cpu, demand.memory, node)));
  RETURN_IF_ERROR(
      PutPair(txn, kNodeUsage, NodeKey(node), {best_usage.cpu + demand.cpu, best_usage.memory + demand.memory}));
  RETURN_IF_ERROR(PutCpu(txn, scope.account, account_cpu + demand.cpu));
  return placed;
}

Status FargateCapacity::Offer(store::Store& store, TimePoint now, std::chrono::milliseconds ttl,
                              std::string_view agent, std::string_view overlay_address) {
  if (agent.empty() || agent.find(' ') != std::string_view::npos || overlay_address.find(' ') != std::string_view::npos)
    return InvalidArgument("A Fargate host's agent and overlay address are single words.");
  const std::string offer = fmt::format("{} {} {} {} {}", EpochMillis(now) + ttl.count(), limits_.cpu, limits_.memory,
                                        agent, overlay_address.empty() ? std::string_view("-") : overlay_address);
  return store.Write([&](store::WriteTxn& txn) { return txn.Put(kHosts, NodeKey(node_), offer); });
}

Status FargateCapacity::Withdraw(store::Store& store) {
  return store.Write([&](store::WriteTxn& txn) { return txn.Delete(kHosts, NodeKey(node_)); });
}

namespace {

// The offers of the other nodes for which `keep(expires_ms)` holds, by node.
template <typename Keep>
StatusOr<std::vector<FargateHost>> OffersOfOthers(store::ReadTxn& txn, std::string_view own, Keep keep) {
  ASSIGN_OR_RETURN(std::vector<store::Row> rows, txn.Scan(kHosts, store::Range{}, kMaxHosts));
  std::vector<FargateHost> hosts;
  for (const store::Row& row : rows) {
    store::KeyReader key(row.key);
    ASSIGN_OR_RETURN(std::string node, key.Str());
    if (node == own) continue;
    ASSIGN_OR_RETURN(HostOffer offer, ParseOffer(node, row.value));
    if (keep(offer.expires_ms)) hosts.push_back(std::move(offer.host));
  }
  return hosts;
}

}  // namespace

StatusOr<std::vector<FargateHost>> FargateCapacity::OtherHosts(store::ReadTxn& txn, TimePoint now) {
  const int64_t now_ms = EpochMillis(now);
  return OffersOfOthers(txn, node_, [&](int64_t expires_ms) { return now_ms < expires_ms; });
}

StatusOr<std::vector<FargateHost>> FargateCapacity::LapsedHosts(store::ReadTxn& txn, TimePoint now,
                                                                std::chrono::milliseconds grace) {
  const int64_t lapsed_before_ms = EpochMillis(now) - grace.count();
  return OffersOfOthers(txn, node_, [&](int64_t expires_ms) { return expires_ms <= lapsed_before_ms; });
}

StatusOr<bool> FargateCapacity::Forget(store::WriteTxn& txn, std::string_view node, TimePoint now,
                                       std::chrono::milliseconds grace) {
  const std::string key = NodeKey(node);
  ASSIGN_OR_RETURN(auto text, txn.Get(kHosts, key));
  if (!text) return false;
  ASSIGN_OR_RETURN(HostOffer offer, ParseOffer(node, *text));
  if (offer.expires_ms > EpochMillis(now) - grace.count()) return false;
  RETURN_IF_ERROR(txn.Delete(kHosts, key));
  return true;
}

Status FargateCapacity::Release(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                std::string_view task_id) {
  const std::string rkey = ReservationKey(scope, cluster, task_id);
  ASSIGN_OR_RETURN(auto held, txn.Get(kReservations, rkey));
  if (!held) return OkStatus();
  ASSIGN_OR_RETURN(Reservation r, ParseReservation(*held));
  RETURN_IF_ERROR(txn.Delete(kReservations, rkey));
  return GiveBack(txn, scope.account, r);
}

StatusOr<FargateUsage> FargateCapacity::NodeUsage(store::ReadTxn& txn) {
  return ReadPair(txn, kNodeUsage, NodeKey(node_), "Fargate node usage");
}

StatusOr<int64_t> FargateCapacity::AccountCpu(store::ReadTxn& txn, const AccountId& account) {
  return ReadCpu(txn, account);
}

Status FargateCapacity::ReapAccount(store::Store& store, const AccountId& account) {
  const store::Range range = store::PrefixRange(AccountKey(account));
  while (true) {
    size_t seen = 0;
    RETURN_IF_ERROR(store.Write([&](store::WriteTxn& txn) -> Status {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kReservations, range, 200));
      seen = rows.size();
      for (const auto& row : rows) {
        ASSIGN_OR_RETURN(Reservation r, ParseReservation(row.value));
        RETURN_IF_ERROR(txn.Delete(kReservations, row.key));
        RETURN_IF_ERROR(GiveBack(txn, account, r));
      }
      // Whatever is left of the account's total belongs to no reservation: drop it.
      if (rows.empty()) return txn.Delete(kAccountUsage, AccountKey(account));
      return OkStatus();
    }));
    if (seen == 0) return OkStatus();
  }
}

}  // namespace paddock::ecs::task
