#include "ecs/task/fargate_capacity.h"

#include <fmt/format.h>

#include <charconv>
#include <vector>

#include "ecs/common/records.h"
#include "store/key.h"

namespace paddock::ecs::task {
namespace {

constexpr std::string_view kReservations = "fargate_reservations";
constexpr std::string_view kNodeUsage = "fargate_node_usage";
constexpr std::string_view kAccountUsage = "fargate_account_usage";
constexpr int64_t kCpuPerVcpu = 1024;

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

StatusOr<Admission> FargateCapacity::Reserve(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                             std::string_view task_id, const FargateDemand& demand) {
  if (demand.cpu < 0 || demand.memory < 0) return InvalidArgument("A Fargate reservation cannot be negative.");
  const std::string rkey = ReservationKey(scope, cluster, task_id);
  ASSIGN_OR_RETURN(auto existing, txn.Get(kReservations, rkey));
  if (existing) return Admission::kAdmitted;
  ASSIGN_OR_RETURN(int64_t account_cpu, ReadCpu(txn, scope.account));
  if (account_cpu + demand.cpu > limits_.vcpus_per_account * kCpuPerVcpu) return Admission::kVcpuLimitReached;
  const std::string node_key = NodeKey(node_);
  ASSIGN_OR_RETURN(FargateUsage node, ReadPair(txn, kNodeUsage, node_key, "Fargate node usage"));
  if (node.cpu + demand.cpu > limits_.cpu || node.memory + demand.memory > limits_.memory)
    return Admission::kCapacityUnavailable;
  RETURN_IF_ERROR(txn.Put(kReservations, rkey,
                          node_ == kDefaultFargateNode ? fmt::format("{} {}", demand.cpu, demand.memory)
                                                       : fmt::format("{} {} {}", demand.cpu, demand.memory, node_)));
  RETURN_IF_ERROR(PutPair(txn, kNodeUsage, node_key, {node.cpu + demand.cpu, node.memory + demand.memory}));
  RETURN_IF_ERROR(PutCpu(txn, scope.account, account_cpu + demand.cpu));
  return Admission::kAdmitted;
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
