// The container instances' hosts as EC2 instances (ContainerInstances::ec2_instances()), for
// EC2's DescribeInstances (ec2/api/ec2_describe_instances.cc).
//
// Records: container_instance_ec2 (account, region, ec2InstanceId, cluster, id) -> {"privateIp"},
// written with the registration, removed when the instance is reaped; the rest is read from the
// instance's record (status, registeredAt, its ecs.* attributes).
#include <boost/json.hpp>

#include "ecs/common/records.h"
#include "ecs/instance/instances.h"
#include "store/key.h"

namespace paddock::ecs::instance {
namespace json = boost::json;

namespace {

constexpr std::string_view kEc2 = "container_instance_ec2";
constexpr std::string_view kInstances = "container_instances";

std::string Str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::string Attribute(const json::object& record, std::string_view name) {
  if (const json::value* a = record.if_contains("attributes"); a != nullptr && a->is_array())
    for (const auto& item : a->get_array())
      if (item.is_object() && Str(item.get_object(), "name") == name) return Str(item.get_object(), "value");
  return "";
}

// One row of the index: (ec2 id, cluster, instance id) and the reported private IP.
struct Row {
  std::string ec2_id, cluster, id, private_ip;
};

StatusOr<Row> ReadRow(const store::Row& row) {
  store::KeyReader r(row.key);
  Row out;
  std::string part;
  for (int i = 0; i < 2; ++i) {  // account, region
    ASSIGN_OR_RETURN(part, r.Str());
  }
  ASSIGN_OR_RETURN(out.ec2_id, r.Str());
  ASSIGN_OR_RETURN(out.cluster, r.Str());
  ASSIGN_OR_RETURN(out.id, r.Str());
  ASSIGN_OR_RETURN(json::object value, ParseRecordObject(row.value, "container instance EC2 row"));
  out.private_ip = Str(value, "privateIp");
  return out;
}

// The instance a row stands for; nullopt when its record is gone.
StatusOr<std::optional<ec2::Instance>> Load(store::ReadTxn& txn, const Scope& scope, const Row& row) {
  ASSIGN_OR_RETURN(auto text, txn.Get(kInstances, ScopeKey(scope).Str(row.cluster).Str(row.id).Done()));
  if (!text) return std::optional<ec2::Instance>();
  ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*text, "container instance"));
  ec2::Instance i;
  i.instance_id = row.ec2_id;
  i.running = Str(record, "status") != "INACTIVE";
  i.private_ip = row.private_ip;
  i.availability_zone = Attribute(record, "ecs.availability-zone");
  i.instance_type = Attribute(record, "ecs.instance-type");
  i.image_id = Attribute(record, "ecs.ami-id");
  i.architecture = Attribute(record, "ecs.cpu-architecture");
  if (const json::value* at = record.if_contains("registeredAt"); at != nullptr && at->is_number())
    i.launch_time = FromEpochMillis(static_cast<int64_t>(at->to_number<double>() * 1000));
  return std::optional<ec2::Instance>(std::move(i));
}

// Of several registrations of one EC2 instance id (re-registered into another cluster after a
// deregistration), the running one; else the first.
void Prefer(std::optional<ec2::Instance>& best, std::optional<ec2::Instance> candidate) {
  if (!candidate) return;
  if (!best || (!best->running && candidate->running)) best = std::move(candidate);
}

}  // namespace

Status ContainerInstances::IndexEc2(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                    std::string_view id, std::string_view previous_ec2_id, std::string_view ec2_id,
                                    std::string_view private_ip) {
  const std::string key = ScopeKey(scope).Str(ec2_id).Str(cluster).Str(id).Done();
  std::string ip(private_ip);
  if (!previous_ec2_id.empty()) {
    const std::string old_key = ScopeKey(scope).Str(previous_ec2_id).Str(cluster).Str(id).Done();
    ASSIGN_OR_RETURN(auto old, txn.Get(kEc2, old_key));
    if (old && ip.empty()) {
      ASSIGN_OR_RETURN(json::object value, ParseRecordObject(*old, "container instance EC2 row"));
      ip = Str(value, "privateIp");
    }
    if (old_key != key) RETURN_IF_ERROR(txn.Delete(kEc2, old_key));
  }
  json::object value;
  if (!ip.empty()) value["privateIp"] = ip;
  return txn.Put(kEc2, key, json::serialize(value));
}

StatusOr<std::vector<ec2::Instance>> ContainerInstances::Ec2View::Find(const Scope& scope,
                                                                          const std::vector<std::string>& ids) {
  std::vector<ec2::Instance> out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    out.clear();
    for (const auto& ec2_id : ids) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kEc2, store::PrefixRange(ScopeKey(scope).Str(ec2_id).Done()), 100));
      std::optional<ec2::Instance> best;
      for (const auto& row : rows) {
        ASSIGN_OR_RETURN(Row r, ReadRow(row));
        ASSIGN_OR_RETURN(auto instance, Load(txn, scope, r));
        Prefer(best, std::move(instance));
      }
      if (best) out.push_back(std::move(*best));
    }
    return OkStatus();
  }));
  return out;
}

StatusOr<std::vector<ec2::Instance>> ContainerInstances::Ec2View::List(const Scope& scope, const std::string& after,
                                                                          size_t limit, bool* more) {
  std::vector<ec2::Instance> out;
  *more = false;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    out.clear();
    store::Range range = store::PrefixRange(ScopeKey(scope).Done());
    // Past every row of the previous page's last instance id.
    if (!after.empty()) range.begin = store::PrefixRange(ScopeKey(scope).Str(after).Done()).end;
    std::optional<ec2::Instance> pending;  // the instance id being gathered
    std::string pending_id;
    while (true) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kEc2, range, 200));
      for (const auto& row : rows) {
        ASSIGN_OR_RETURN(Row r, ReadRow(row));
        if (r.ec2_id != pending_id) {
          if (pending) {
            if (out.size() == limit) {
              *more = true;
              return OkStatus();
            }
            out.push_back(std::move(*pending));
            pending.reset();
          }
          pending_id = r.ec2_id;
        }
        ASSIGN_OR_RETURN(auto instance, Load(txn, scope, r));
        Prefer(pending, std::move(instance));
      }
      if (rows.size() < 200) break;
      range.begin = store::KeySuccessor(rows.back().key);
    }
    if (pending) {
      if (out.size() == limit) {
        *more = true;
      } else {
        out.push_back(std::move(*pending));
      }
    }
    return OkStatus();
  }));
  return out;
}

}  // namespace paddock::ecs::instance
