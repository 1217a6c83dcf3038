#include "ecs/instance/agent_identity.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "common/encoding.h"
#include "ecs/common/records.h"
#include "ecs/instance/instances.h"
#include "store/key.h"

namespace paddock::ecs::instance {
namespace json = boost::json;
using store::Key;

namespace {

constexpr std::string_view kAgents = "container_instance_agents";
constexpr std::string_view kCredentials = "agent_credentials";

constexpr std::string_view kInProcessKind = "in-process";
constexpr std::string_view kRemoteKind = "remote";

std::string BindingKey(const Scope& scope, std::string_view cluster, std::string_view id) {
  return ScopeKey(scope).Str(cluster).Str(id).Done();
}
std::string CredentialKey(std::string_view access_key_id) { return Key().Str(access_key_id).Done(); }

std::string Str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

// The binding record of an instance, when it has one.
StatusOr<std::optional<json::object>> Binding(store::ReadTxn& txn, const std::string& key) {
  ASSIGN_OR_RETURN(auto v, txn.Get(kAgents, key));
  if (!v) return std::optional<json::object>();
  ASSIGN_OR_RETURN(json::object o, ParseRecordObject(*v, "container instance agent"));
  return std::optional<json::object>(std::move(o));
}

Status DeleteCredentialOf(store::WriteTxn& txn, const json::object& binding) {
  const std::string key_id = Str(binding, "accessKeyId");
  return key_id.empty() ? OkStatus() : txn.Delete(kCredentials, CredentialKey(key_id));
}

// The kind a binding record names.
StatusOr<AgentKind> KindNamed(const json::object& binding, std::string_view id) {
  const std::string kind = Str(binding, "kind");
  if (kind == kInProcessKind) return AgentKind::kInProcess;
  if (kind == kRemoteKind) return AgentKind::kRemote;
  return DataLoss(fmt::format("container instance {} has an unknown agent kind '{}'", id, kind));
}

}  // namespace

std::string AgentPrincipalArn(const Scope& scope, std::string_view instance_id) {
  return fmt::format("arn:aws:sts::{}:assumed-role/paddock-container-instance/{}", scope.account.str(), instance_id);
}

StatusOr<AgentKind> AgentIdentities::KindOf(store::ReadTxn& txn, const Scope& scope, std::string_view cluster,
                                             std::string_view id) {
  ASSIGN_OR_RETURN(auto binding, Binding(txn, BindingKey(scope, cluster, id)));
  if (!binding) return AgentKind::kNone;
  return KindNamed(*binding, id);
}

Status AgentIdentities::BindInProcess(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                      std::string_view id) {
  RETURN_IF_ERROR(Revoke(txn, scope, cluster, id));
  return txn.Put(kAgents, BindingKey(scope, cluster, id), json::serialize(json::object{{"kind", kInProcessKind}}));
}

StatusOr<AgentCredential> AgentIdentities::Issue(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                                 std::string_view id) {
  RETURN_IF_ERROR(Revoke(txn, scope, cluster, id));
  AgentCredential c;
  for (int attempt = 0;; ++attempt) {
    c.access_key_id = std::string(kAgentKeyPrefix) + RandomString(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567");
    ASSIGN_OR_RETURN(auto taken, txn.Get(kCredentials, CredentialKey(c.access_key_id)));
    if (!taken) break;
    if (attempt == 8) return Internal("could not pick an unused agent access key id");
  }
  c.secret_access_key = RandomString(40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
  RETURN_IF_ERROR(txn.Put(kCredentials, CredentialKey(c.access_key_id),
                          json::serialize(json::object{{"account", scope.account.str()},
                                                       {"region", scope.region.str()},
                                                       {"cluster", cluster},
                                                       {"id", id},
                                                       {"secret", c.secret_access_key}})));
  RETURN_IF_ERROR(txn.Put(kAgents, BindingKey(scope, cluster, id),
                          json::serialize(json::object{{"kind", kRemoteKind}, {"accessKeyId", c.access_key_id}})));
  return c;
}

Status AgentIdentities::SetOverlayAddress(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                          std::string_view id, std::string_view address) {
  const std::string key = BindingKey(scope, cluster, id);
  ASSIGN_OR_RETURN(auto binding, Binding(txn, key));
  if (!binding || Str(*binding, "kind") != kRemoteKind)
    return FailedPrecondition(fmt::format("container instance {} has no agent of its own", id));
  if (Str(*binding, "overlayAddress") == address) return OkStatus();
  if (address.empty()) {
    binding->erase("overlayAddress");
  } else {
    (*binding)["overlayAddress"] = address;
  }
  return txn.Put(kAgents, key, json::serialize(*binding));
}

StatusOr<AgentBinding> AgentIdentities::BindingOf(store::ReadTxn& txn, const Scope& scope, std::string_view cluster,
                                                   std::string_view id) {
  ASSIGN_OR_RETURN(auto binding, Binding(txn, BindingKey(scope, cluster, id)));
  if (!binding) return AgentBinding{};
  ASSIGN_OR_RETURN(AgentKind kind, KindNamed(*binding, id));
  return AgentBinding{kind, kind == AgentKind::kRemote ? Str(*binding, "overlayAddress") : std::string()};
}

Status AgentIdentities::Revoke(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                               std::string_view id) {
  const std::string key = BindingKey(scope, cluster, id);
  ASSIGN_OR_RETURN(auto binding, Binding(txn, key));
  if (!binding) return OkStatus();
  RETURN_IF_ERROR(DeleteCredentialOf(txn, *binding));
  return txn.Delete(kAgents, key);
}

StatusOr<std::optional<AgentPrincipal>> AgentIdentities::Lookup(std::string_view access_key_id) {
  std::optional<AgentPrincipal> out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    out.reset();
    ASSIGN_OR_RETURN(auto v, txn.Get(kCredentials, CredentialKey(access_key_id)));
    if (!v) return OkStatus();
    ASSIGN_OR_RETURN(json::object o, ParseRecordObject(*v, "agent credential"));
    AgentPrincipal p;
    p.scope = Scope{AccountId(Str(o, "account")), Region(Str(o, "region"))};
    p.cluster = Str(o, "cluster");
    p.id = Str(o, "id");
    p.instance_arn = ContainerInstanceArn(p.scope, p.cluster, p.id);
    p.secret = Str(o, "secret");
    out = std::move(p);
    return OkStatus();
  }));
  return out;
}

Status AgentIdentities::ReapAccount(const AccountId& account) {
  // The credentials are keyed by access key id: found through the account's bindings first.
  const store::Range range = store::PrefixRange(Key().Str(account.str()).Done());
  std::string begin = range.begin;
  while (true) {
    size_t seen = 0;
    RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kAgents, {begin, range.end}, 200));
      seen = rows.size();
      for (const auto& row : rows) {
        ASSIGN_OR_RETURN(json::object binding, ParseRecordObject(row.value, "container instance agent"));
        RETURN_IF_ERROR(DeleteCredentialOf(txn, binding));
        RETURN_IF_ERROR(txn.Delete(kAgents, row.key));
      }
      return OkStatus();
    }));
    if (seen < 200) return OkStatus();
  }
}

}  // namespace paddock::ecs::instance
