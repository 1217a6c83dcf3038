#include "cli/config.h"

#include <fmt/format.h>

#include <charconv>
#include <toml++/toml.h>

#include "common/ids.h"
#include "ecs/instance/instances.h"
#include "vpc/default_vpc.h"

namespace paddock::cli {

namespace {

Status LoadImages(const std::string& path, const toml::table& table, ImagesConfig& images) {
  for (const auto& [key, node] : table) {
    std::string_view k = key.str();
    auto bad = [&](std::string_view what) {
      return InvalidArgument(fmt::format("config file {}: 'images.{}' must be {}", path, k, what));
    };
    if (k == "insecure_registries" || k == "local_registries") {
      const toml::array* list = node.as_array();
      if (list == nullptr) return bad("an array of strings");
      std::vector<std::string>& out = k == "insecure_registries" ? images.insecure_registries : images.local_registries;
      out.clear();
      for (const auto& item : *list) {
        if (!item.is_string()) return bad("an array of strings");
        out.push_back(item.as_string()->get());
      }
    } else if (k == "insecure_loopback") {
      if (!node.is_boolean()) return bad("true or false");
      images.insecure_loopback = node.as_boolean()->get();
    } else if (k == "pull_timeout_seconds") {
      if (!node.is_integer()) return bad("an integer");
      images.pull_timeout_seconds = node.as_integer()->get();
    } else if (k == "auth_file") {
      if (!node.is_string()) return bad("a string");
      images.auth_file = node.as_string()->get();
    } else if (k == "max_unpacked_bytes") {
      if (!node.is_integer()) return bad("an integer");
      images.max_unpacked_bytes = node.as_integer()->get();
    } else if (k == "cluster_registry") {
      if (!node.is_boolean()) return bad("true or false");
      images.cluster_registry = node.as_boolean()->get();
    } else if (k == "cluster_registry_listen") {
      if (!node.is_string()) return bad("a string, HOST:PORT");
      images.cluster_registry_listen = node.as_string()->get();
    } else {
      return InvalidArgument(fmt::format("config file {}: unknown key 'images.{}'", path, k));
    }
  }
  return OkStatus();
}

Status LoadDns(const std::string& path, const toml::table& table, DnsConfig& dns) {
  for (const auto& [key, node] : table) {
    std::string_view k = key.str();
    if (k != "upstreams") return InvalidArgument(fmt::format("config file {}: unknown key 'dns.{}'", path, k));
    const toml::array* list = node.as_array();
    if (list == nullptr) return InvalidArgument(fmt::format("config file {}: 'dns.upstreams' must be an array of strings", path));
    dns.upstreams.clear();
    for (const auto& item : *list) {
      if (!item.is_string()) return InvalidArgument(fmt::format("config file {}: 'dns.upstreams' must be an array of strings", path));
      dns.upstreams.push_back(item.as_string()->get());
    }
  }
  return OkStatus();
}

Status LoadEc2Instances(const std::string& path, const toml::node& node, std::vector<Ec2InstanceConfig>& out) {
  const toml::array* list = node.as_array();
  if (list == nullptr) return InvalidArgument(fmt::format("config file {}: 'ec2_instance' must be [[ec2_instance]] tables", path));
  out.clear();
  for (const auto& item : *list) {
    const toml::table* t = item.as_table();
    if (t == nullptr) return InvalidArgument(fmt::format("config file {}: 'ec2_instance' must be [[ec2_instance]] tables", path));
    Ec2InstanceConfig e;
    for (const auto& [key, value] : *t) {
      std::string_view k = key.str();
      if ((k == "cluster" || k == "account") && value.is_string()) {
        (k == "cluster" ? e.cluster : e.account) = value.as_string()->get();
      } else if (k == "host_access" && value.is_boolean()) {
        e.host_access = value.as_boolean()->get();
      } else if ((k == "cpu" || k == "memory") && value.is_integer()) {
        (k == "cpu" ? e.cpu : e.memory) = value.as_integer()->get();
      } else {
        return InvalidArgument(fmt::format("config file {}: 'ec2_instance.{}' is unknown or of the wrong type "
                                           "(cluster, account: strings; host_access: true or false; cpu, memory: "
                                           "integers)", path, k));
      }
    }
    out.push_back(std::move(e));
  }
  return OkStatus();
}

// The [fargate] table: cpu and memory are integers, overcommit a number (1 or 1.5).
Status LoadFargate(const std::string& path, const toml::table& table, FargateConfig& out) {
  for (const auto& [key, node] : table) {
    std::string_view k = key.str();
    if ((k == "cpu" || k == "memory") && node.is_integer()) {
      (k == "cpu" ? out.cpu : out.memory) = node.as_integer()->get();
    } else if (k == "overcommit" && (node.is_floating_point() || node.is_integer())) {
      out.overcommit = node.is_integer() ? static_cast<double>(node.as_integer()->get()) : node.as_floating_point()->get();
    } else {
      return InvalidArgument(fmt::format("config file {}: 'fargate.{}' is unknown or of the wrong type "
                                         "(cpu, memory: integers; overcommit: a number)", path, k));
    }
  }
  return OkStatus();
}

// A table of integer settings: `fields` maps each key to where it goes.
Status LoadIntegers(const std::string& path, std::string_view table_name, const toml::table& table,
                    std::initializer_list<std::pair<std::string_view, int64_t*>> fields) {
  for (const auto& [key, node] : table) {
    int64_t* target = nullptr;
    for (const auto& [name, where] : fields)
      if (name == key.str()) target = where;
    if (target == nullptr) return InvalidArgument(fmt::format("config file {}: unknown key '{}.{}'", path, table_name, key.str()));
    if (!node.is_integer())
      return InvalidArgument(fmt::format("config file {}: '{}.{}' must be an integer", path, table_name, key.str()));
    *target = node.as_integer()->get();
  }
  return OkStatus();
}

}  // namespace

Status LoadConfigFile(const std::string& path, ServerConfig& config) {
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(fmt::format("config file {}: {}", path, e.description()));
  }
  for (const auto& [key, node] : table) {
    std::string_view k = key.str();
    auto str = [&](std::string& out) -> Status {
      if (!node.is_string()) return InvalidArgument(fmt::format("config file {}: '{}' must be a string", path, k));
      out = node.as_string()->get();
      return OkStatus();
    };
    if (k == "listen") {
      RETURN_IF_ERROR(str(config.listen));
    } else if (k == "state_dir") {
      RETURN_IF_ERROR(str(config.state_dir));
    } else if (k == "default_account") {
      RETURN_IF_ERROR(str(config.default_account));
    } else if (k == "api_rate_limits") {
      RETURN_IF_ERROR(str(config.api_rate_limits));
    } else if (k == "region") {
      RETURN_IF_ERROR(str(config.region));
    } else if (k == "accept_any_credentials" || k == "access_log" || k == "short_timings") {  // access_log: issue 10
      if (!node.is_boolean()) return InvalidArgument(fmt::format("config file {}: '{}' must be true or false", path, k));
      (k == "access_log" ? config.access_log
                         : k == "short_timings" ? config.short_timings : config.accept_any_credentials) =
          node.as_boolean()->get();
    } else if (k == "images") {
      if (!node.is_table()) return InvalidArgument(fmt::format("config file {}: 'images' must be a table ([images])", path));
      RETURN_IF_ERROR(LoadImages(path, *node.as_table(), config.images));
    } else if (k == "agent_long_polls" || k == "agent_timeout_seconds" || k == "host_lost_seconds") {
      if (!node.is_integer()) return InvalidArgument(fmt::format("config file {}: '{}' must be an integer", path, k));
      (k == "agent_long_polls"        ? config.agent_long_polls
       : k == "agent_timeout_seconds" ? config.agent_timeout_seconds
                                      : config.host_lost_seconds) = node.as_integer()->get();
    } else if (k == "ec2_instance") {
      RETURN_IF_ERROR(LoadEc2Instances(path, node, config.ec2_instances));
    } else if (k == "scheduler" && node.is_table()) {
      SchedulerConfig& c = config.scheduler;
      RETURN_IF_ERROR(LoadIntegers(path, k, *node.as_table(),
                                   {{"settle_seconds", &c.settle_seconds},
                                    {"resync_seconds", &c.resync_seconds},
                                    {"backoff_base_seconds", &c.backoff_base_seconds},
                                    {"backoff_cap_seconds", &c.backoff_cap_seconds},
                                    {"lease_seconds", &c.lease_seconds}}));
    } else if (k == "agent" && node.is_table()) {
      toml::table limits = *node.as_table();
      if (const toml::node* overlay = limits.get("overlay_address")) {
        uint32_t ip = 0;
        const std::optional<std::string> text = overlay->value<std::string>();
        if (!text || (!text->empty() && (!vpc::ParseIpv4(*text, &ip) || !vpc::IsHostAddressOtherHostsReach(ip))))
          return InvalidArgument(fmt::format("config file {}: 'agent.overlay_address' must be a unicast IPv4 address "
                                             "another host can reach, or \"\"", path));
        config.agent.overlay_address = *text;
        limits.erase("overlay_address");
      }
      RETURN_IF_ERROR(LoadIntegers(path, k, limits,
                                   {{"pids_per_task", &config.agent.pids_per_task},
                                    {"pids_per_node", &config.agent.pids_per_node},
                                    {"flows_per_task", &config.agent.flows_per_task},
                                    {"new_flows_per_second", &config.agent.new_flows_per_second}}));
    } else if (k == "quotas" && node.is_table()) {
      RETURN_IF_ERROR(LoadIntegers(path, k, *node.as_table(),
                                   {{"services_per_cluster", &config.quotas.services_per_cluster},
                                    {"tasks_per_service", &config.quotas.tasks_per_service},
                                    {"fargate_vcpus_per_account", &config.quotas.fargate_vcpus_per_account}}));
    } else if (k == "fargate" && node.is_table()) {
      RETURN_IF_ERROR(LoadFargate(path, *node.as_table(), config.fargate));
    } else if (k == "dns" && node.is_table()) {
      RETURN_IF_ERROR(LoadDns(path, *node.as_table(), config.dns));
    } else if (k == "store" && node.is_table()) {
      for (const auto& [store_key, value] : *node.as_table()) {
        if (store_key.str() != "url" || !value.is_string())
          return InvalidArgument(fmt::format("config file {}: [store] takes only url (a string)", path));
        config.store_url = *value.value<std::string>();
      }
    } else {
      return InvalidArgument(fmt::format("config file {}: unknown key '{}'", path, k));
    }
  }
  return OkStatus();
}

ecs::task::FargateLimits FargateLimitsFor(const ServerConfig& config, int64_t host_cpu, int64_t host_memory) {
  const FargateConfig& f = config.fargate;
  auto times = [&](int64_t v) { return static_cast<int64_t>(static_cast<double>(v) * f.overcommit); };
  return ecs::task::FargateLimits{.cpu = times(f.cpu > 0 ? f.cpu : host_cpu),
                                  .memory = times(f.memory > 0 ? f.memory : host_memory),
                                  .vcpus_per_account = config.quotas.fargate_vcpus_per_account};
}

StatusOr<std::pair<std::string, uint16_t>> SplitListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return InvalidArgument(fmt::format("--listen '{}' is not HOST:PORT", listen));
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned port = 0;
  auto [p, ec] = std::from_chars(listen.data() + colon + 1, listen.data() + listen.size(), port);
  if (ec != std::errc() || p != listen.data() + listen.size() || port > 65535)
    return InvalidArgument(fmt::format("--listen '{}' has an invalid port", listen));
  return std::make_pair(host, static_cast<uint16_t>(port));
}

int64_t HostLostSeconds(const ServerConfig& config) {
  if (config.host_lost_seconds != 0) return config.host_lost_seconds;
  return std::max<int64_t>(ecs::instance::kHostLost.count(), 2 * config.agent_timeout_seconds);
}

Status ValidateConfig(const ServerConfig& config) {
  RETURN_IF_ERROR(SplitListen(config.listen).status());
  if (config.api_rate_limits != "aws" && config.api_rate_limits != "off")
    return InvalidArgument(fmt::format("--api-rate-limits must be 'aws' or 'off', not '{}'", config.api_rate_limits));
  if (!IsAccountId(config.default_account))
    return InvalidArgument(fmt::format("--default-account '{}' is not a 12-digit account id", config.default_account));
  if (!IsRegionName(config.region)) return InvalidArgument(fmt::format("--region '{}' is not a region name", config.region));
  if (!config.store_url.empty() && !config.store_url.starts_with("postgres://") &&
      !config.store_url.starts_with("postgresql://"))
    return InvalidArgument("--store must be a postgres:// or postgresql:// URL (without it, the state directory's SQLite file)");
  if (config.images.pull_timeout_seconds < 1 || config.images.pull_timeout_seconds > 86400)
    return InvalidArgument(fmt::format("images.pull_timeout_seconds must be 1 to 86400, not {}",
                                       config.images.pull_timeout_seconds));
  if (config.images.max_unpacked_bytes < 1)
    return InvalidArgument(fmt::format("images.max_unpacked_bytes must be at least 1, not {}",
                                       config.images.max_unpacked_bytes));
  // pid_max's ceiling (PID_MAX_LIMIT on 64-bit): a larger bound would be no bound.
  if (config.agent.pids_per_task < 0 || config.agent.pids_per_task > 4194304)
    return InvalidArgument(fmt::format("agent.pids_per_task must be 0 (no bound) to 4194304, not {}",
                                       config.agent.pids_per_task));
  if (config.agent.pids_per_node < -1 || config.agent.pids_per_node > 4194304)
    return InvalidArgument(fmt::format("agent.pids_per_node must be 0 (no bound) to 4194304, not {}",
                                       config.agent.pids_per_node));
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"flows_per_task", config.agent.flows_per_task},
                                    {"new_flows_per_second", config.agent.new_flows_per_second}}) {
    if (value < 0 || value > 1000000)
      return InvalidArgument(fmt::format("agent.{} must be 0 (no bound) to 1000000, not {}", name, value));
  }
  if (config.agent_long_polls < 0 || config.agent_long_polls > 1024)
    return InvalidArgument(fmt::format("agent_long_polls must be 0 to 1024, not {}", config.agent_long_polls));
  const SchedulerConfig& sc = config.scheduler;
  if (sc.settle_seconds < 0 || sc.settle_seconds > 3600)
    return InvalidArgument(fmt::format("scheduler.settle_seconds must be 0 to 3600, not {}", sc.settle_seconds));
  if (sc.resync_seconds < 1 || sc.resync_seconds > 3600)
    return InvalidArgument(fmt::format("scheduler.resync_seconds must be 1 to 3600, not {}", sc.resync_seconds));
  if (sc.backoff_base_seconds < 1 || sc.backoff_cap_seconds < sc.backoff_base_seconds || sc.backoff_cap_seconds > 86400)
    return InvalidArgument("scheduler.backoff_base_seconds must be at least 1 and at most backoff_cap_seconds (at most 86400)");
  if (sc.lease_seconds < 3 || sc.lease_seconds > 600)
    return InvalidArgument(fmt::format("scheduler.lease_seconds must be 3 to 600, not {}", sc.lease_seconds));
  if (config.quotas.services_per_cluster < 1 || config.quotas.tasks_per_service < 1)
    return InvalidArgument("quotas.services_per_cluster and quotas.tasks_per_service must be at least 1");
  if (config.quotas.fargate_vcpus_per_account < 1 || config.quotas.fargate_vcpus_per_account > 1000000)
    return InvalidArgument(fmt::format("quotas.fargate_vcpus_per_account must be 1 to 1000000, not {}",
                                       config.quotas.fargate_vcpus_per_account));
  if (config.fargate.cpu < 0 || config.fargate.memory < 0)
    return InvalidArgument("fargate.cpu and fargate.memory must not be negative (0: the host's)");
  if (!(config.fargate.overcommit > 0 && config.fargate.overcommit <= 100))
    return InvalidArgument(fmt::format("fargate.overcommit must be more than 0 and at most 100, not {}",
                                       config.fargate.overcommit));
  if (config.agent_timeout_seconds < 3 || config.agent_timeout_seconds > 3600)
    return InvalidArgument(fmt::format("agent_timeout_seconds must be 3 to 3600, not {}", config.agent_timeout_seconds));
  // The agents' fence (ecs::instance::AgentFenceTime) must come after they count as disconnected.
  if (config.host_lost_seconds != 0 &&
      (config.host_lost_seconds < 2 * config.agent_timeout_seconds || config.host_lost_seconds > 86400))
    return InvalidArgument(fmt::format("host_lost_seconds must be 2 x agent_timeout_seconds ({}) to 86400, not {}",
                                       2 * config.agent_timeout_seconds, config.host_lost_seconds));
  for (const auto& e : config.ec2_instances) {
    if (e.cluster.empty()) return InvalidArgument("ec2_instance: cluster is required");
    if (e.cpu < 0 || e.memory < 0) return InvalidArgument("ec2_instance: cpu and memory must not be negative");
    if (!e.account.empty() && !IsAccountId(e.account))
      return InvalidArgument(fmt::format("ec2_instance '{}': account '{}' is not a 12-digit account id", e.cluster,
                                         e.account));
  }
  if (!config.images.cluster_registry_listen.empty()) {
    if (Status s = SplitListen(config.images.cluster_registry_listen).status(); !s.ok())
      return InvalidArgument(fmt::format("images.cluster_registry_listen: {}", s.message()));
  }
  for (const std::string& u : config.dns.upstreams) {
    if (u.empty() || u.find_first_of("/ ") != std::string::npos)
      return InvalidArgument(fmt::format("dns.upstreams: '{}' is not ADDRESS or ADDRESS:PORT", u));
  }
  for (const auto& [name, list] : {std::pair{"insecure_registries", &config.images.insecure_registries},
                                   std::pair{"local_registries", &config.images.local_registries}}) {
    for (const std::string& r : *list) {
      if (r.empty() || r.find_first_of("/ ") != std::string::npos)
        return InvalidArgument(fmt::format("images.{}: '{}' is not HOST or HOST:PORT (no scheme, no path)", name, r));
    }
  }
  return OkStatus();
}

}  // namespace paddock::cli
