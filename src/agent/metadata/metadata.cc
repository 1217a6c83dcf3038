#include "agent/metadata/metadata.h"

#include "common/netns.h"

#include "agent/net/net.h"

#include <arpa/inet.h>
#include <sys/timex.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/core.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/encoding.h"
#include "http/server.h"

namespace paddock::agent::metadata {
namespace json = boost::json;

namespace {

// Connections one address (one task's, in a VPC) may hold open to a metadata listener at once.
// Every listener lives in the node's process, whose descriptors every agent shares: unbounded, one
// task held 20,000 idle connections and the agents could no longer list containers, apply security
// groups or open image blobs (tests/test_security_limits.py, MetadataConnections). A task's own
// clients need a handful; the ECS agent likewise throttles the endpoint per task.
constexpr size_t kMaxConnectionsPerPeer = 64;

// ---- Reading the Task JSON (validated when written by ecs/task: only be safe here) ------------

std::string Str(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return (it != o.end() && it->value().is_string()) ? std::string(it->value().get_string()) : std::string();
}

std::optional<double> Num(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_number()) return std::nullopt;
  return it->value().to_number<double>();
}

const json::object& Obj(const json::object& o, std::string_view key) {
  static const json::object kEmpty;
  auto it = o.find(key);
  return (it != o.end() && it->value().is_object()) ? it->value().get_object() : kEmpty;
}

std::vector<const json::object*> Objects(const json::object& o, std::string_view key) {
  std::vector<const json::object*> out;
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_array()) return out;
  for (const auto& v : it->value().get_array())
    if (v.is_object()) out.push_back(&v.get_object());
  return out;
}

// The task's ENI attachment details by name (macAddress, privateDnsName, privateIPv4Address, …).
std::map<std::string, std::string> EniDetails(const json::object& task) {
  std::map<std::string, std::string> out;
  for (const json::object* a : Objects(task, "attachments")) {
    if (Str(*a, "type") != "ElasticNetworkInterface") continue;
    for (const json::object* d : Objects(*a, "details")) out[Str(*d, "name")] = Str(*d, "value");
    break;
  }
  return out;
}

// ECS's API timestamps are epoch seconds with millisecond precision.
std::optional<std::string> TimeField(const json::object& o, std::string_view key) {
  std::optional<double> v = Num(o, key);
  if (!v) return std::nullopt;
  return FormatTime(FromEpochMillis(std::llround(*v * 1000)));
}

// "arn:aws:ecs:r:a:task-definition/family:3" → {"family", "3"}.
std::pair<std::string, std::string> FamilyRevision(std::string_view task_definition_arn) {
  size_t slash = task_definition_arn.rfind('/');
  std::string_view rest = slash == std::string_view::npos ? task_definition_arn : task_definition_arn.substr(slash + 1);
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) return {std::string(rest), ""};
  return {std::string(rest.substr(0, colon)), std::string(rest.substr(colon + 1))};
}

// Fargate's agent names the cluster by ARN, the EC2 agent by the name it was configured with.
std::string ClusterName(const json::object& task) {
  std::string arn = Str(task, "clusterArn");
  if (Str(task, "launchType") == "FARGATE") return arn;
  size_t slash = arn.rfind('/');
  return slash == std::string::npos ? arn : arn.substr(slash + 1);
}

// The ECS agent's task status vocabulary: it knows a task as CREATED until every container
// runs, then RUNNING, and STOPPED once they have all stopped.
std::string TaskKnownStatus(std::string_view last_status) {
  if (last_status == "RUNNING" || last_status == "DEACTIVATING" || last_status == "STOPPING") return "RUNNING";
  if (last_status == "DEPROVISIONING" || last_status == "STOPPED") return "STOPPED";
  return "CREATED";
}

std::string DesiredStatus(std::string_view desired) { return desired == "STOPPED" ? "STOPPED" : "RUNNING"; }

std::string ContainerKnownStatus(std::string_view last_status, const ContainerFacts& f) {
  if (last_status == "RUNNING" || last_status == "STOPPED") return std::string(last_status);
  if (f.pid > 0) return "RUNNING";
  return f.docker_id.empty() ? "NONE" : "CREATED";
}

std::string NetworkAddress(const std::string& ip, int prefix_length) {
  in_addr a{};
  if (inet_pton(AF_INET, ip.c_str(), &a) != 1 || prefix_length <= 0 || prefix_length > 32) return "";
  uint32_t host = ntohl(a.s_addr);
  uint32_t mask = prefix_length == 32 ? 0xFFFFFFFFu : ~(0xFFFFFFFFu >> prefix_length);
  a.s_addr = htonl(host & mask);
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a, buf, sizeof(buf));
  return fmt::format("{}/{}", buf, prefix_length);
}

json::array StringArray(const std::vector<std::string>& v) {
  json::array out;
  for (const auto& s : v) out.emplace_back(s);
  return out;
}

json::object StringMap(const std::map<std::string, std::string>& m) {
  json::object out;
  for (const auto& [k, v] : m) out[k] = v;
  return out;
}

const ContainerFacts* FindFacts(const TaskFacts& facts, std::string_view name) {
  for (const auto& c : facts.containers)
    if (c.name == name) return &c;
  return nullptr;
}

json::object ContainerDocument(const json::object& task, const TaskFacts& facts, const json::object& c,
                               const ContainerFacts& f, Version version) {
  const bool v4 = version == Version::kV4;
  const std::string task_arn = Str(task, "taskArn");
  const auto [family, revision] = FamilyRevision(Str(task, "taskDefinitionArn"));
  json::object d;
  d["DockerId"] = f.docker_id;
  d["Name"] = f.name;
  d["DockerName"] = f.name;  // Fargate's agent gives Docker the definition's name
  d["Image"] = Str(c, "image");
  d["ImageID"] = f.image_id;
  json::array ports;
  for (const json::object* b : Objects(c, "networkBindings")) {
    // A port range's binding (containerPortRange, no containerPort) has no Ports entry: the
    // endpoint's port shape has one port.
    if (b->contains("containerPortRange")) continue;
    json::object p;
    if (auto port = Num(*b, "containerPort"); port && *port != 0) p["ContainerPort"] = static_cast<int64_t>(*port);
    std::string protocol = Str(*b, "protocol");
    p["Protocol"] = protocol.empty() ? "tcp" : protocol;
    if (auto port = Num(*b, "hostPort"); port && *port != 0) p["HostPort"] = static_cast<int64_t>(*port);
    if (std::string ip = Str(*b, "bindIP"); v4 && !ip.empty()) p["HostIp"] = ip;
    ports.push_back(std::move(p));
  }
  if (!ports.empty()) d["Ports"] = std::move(ports);
  std::map<std::string, std::string> labels = f.docker_labels;
  labels["com.amazonaws.ecs.cluster"] = ClusterName(task);
  labels["com.amazonaws.ecs.container-name"] = f.name;
  labels["com.amazonaws.ecs.task-arn"] = task_arn;
  labels["com.amazonaws.ecs.task-definition-family"] = family;
  labels["com.amazonaws.ecs.task-definition-version"] = revision;
  d["Labels"] = StringMap(labels);
  d["DesiredStatus"] = DesiredStatus(Str(task, "desiredStatus"));
  d["KnownStatus"] = ContainerKnownStatus(Str(c, "lastStatus"), f);
  if (auto code = Num(c, "exitCode")) d["ExitCode"] = static_cast<int64_t>(*code);
  d["Limits"] = json::object{{"CPU", f.cpu_units < 2 ? int64_t{2} : f.cpu_units}, {"Memory", f.memory_mib}};
  if (f.created_at) d["CreatedAt"] = FormatTime(*f.created_at);
  if (f.started_at) d["StartedAt"] = FormatTime(*f.started_at);
  if (f.finished_at) d["FinishedAt"] = FormatTime(*f.finished_at);
  d["Type"] = "NORMAL";
  // The ECS agent's member order: v3's Networks (the v2 response's) come right after Type; v4's
  // (its own, richer) after ContainerARN.
  json::object networks_holder;
  json::object& out = v4 ? networks_holder : d;
  const std::map<std::string, std::string> eni = EniDetails(task);
  std::string ip;
  for (const json::object* ni : Objects(c, "networkInterfaces")) {
    ip = Str(*ni, "privateIpv4Address");
    if (!ip.empty()) break;
  }
  if (ip.empty() && eni.count("privateIPv4Address")) ip = eni.at("privateIPv4Address");
  if (!ip.empty()) {
    json::object n{{"NetworkMode", "awsvpc"}, {"IPv4Addresses", json::array{json::value(ip)}}};
    if (v4) {
      n["AttachmentIndex"] = 0;
      if (eni.count("macAddress")) n["MACAddress"] = eni.at("macAddress");
      if (std::string cidr = NetworkAddress(ip, facts.prefix_length); !cidr.empty()) n["IPv4SubnetCIDRBlock"] = cidr;
      if (!facts.dns_servers.empty()) n["DomainNameServers"] = StringArray(facts.dns_servers);
      if (!facts.dns_search.empty()) n["DomainNameSearchList"] = StringArray(facts.dns_search);
      if (eni.count("privateDnsName")) n["PrivateDNSName"] = eni.at("privateDnsName");
      if (!facts.gateway.empty() && facts.prefix_length > 0) {
        n["SubnetGatewayIpv4Address"] = fmt::format("{}/{}", facts.gateway, facts.prefix_length);
      }
    }
    out["Networks"] = json::array{std::move(n)};
  } else if (!facts.network_mode.empty()) {  // bridge and host tasks, as the ECS agent shows them
    json::object n{{"NetworkMode", facts.network_mode}};
    if (!facts.ipv4.empty()) n["IPv4Addresses"] = json::array{json::value(facts.ipv4)};
    out["Networks"] = json::array{std::move(n)};
  }
  if (std::string health = Str(c, "healthStatus"); health == "HEALTHY" || health == "UNHEALTHY") {
    d["Health"] = json::object{{"status", health}};
  }
  if (!f.volumes.empty()) {
    // Docker's Mounts of bind mounts have no Name, so DockerName is left out (Paddock has no
    // Docker volumes: a task volume is a directory of the task's, bound like a host path).
    json::array volumes;
    for (const MountedVolume& v : f.volumes)
      volumes.push_back(json::object{{"Source", v.source}, {"Destination", v.destination}});
    d["Volumes"] = std::move(volumes);
  }
  if (v4) {
    if (!f.log_driver.empty()) d["LogDriver"] = f.log_driver;
    if (!f.log_options.empty()) d["LogOptions"] = StringMap(f.log_options);
    if (std::string arn = Str(c, "containerArn"); !arn.empty()) d["ContainerARN"] = arn;
    if (auto it = networks_holder.find("Networks"); it != networks_holder.end()) d["Networks"] = it->value();
    if (f.restart_count) d["RestartCount"] = *f.restart_count;
  }
  return d;
}

// ---- JSON text ---------------------------------------------------------------------------------

void Write(const json::value& v, std::string& out) {
  switch (v.kind()) {
    case json::kind::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& [k, member] : v.get_object()) {
        if (!first) out.push_back(',');
        first = false;
        out += json::serialize(json::string_view(k));
        out.push_back(':');
        Write(member, out);
      }
      out.push_back('}');
      break;
    }
    case json::kind::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& e : v.get_array()) {
        if (!first) out.push_back(',');
        first = false;
        Write(e, out);
      }
      out.push_back(']');
      break;
    }
    case json::kind::double_: {
      double d = v.get_double();
      out += std::isfinite(d) ? fmt::format("{}", d) : "0";
      break;
    }
    default:
      out += json::serialize(v);
  }
}

// ---- Files -------------------------------------------------------------------------------------

std::string JoinPath(const std::string& root, std::string_view path) {
  std::string p(path);
  while (!p.empty() && p.front() == '/') p.erase(0, 1);
  return p.empty() ? root : root + "/" + p;
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<uint64_t> ReadU64(const std::string& path) {
  std::optional<std::string> s = ReadFile(path);
  if (!s) return std::nullopt;
  std::istringstream in(*s);
  uint64_t v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

// "key value" lines, in order.
std::vector<std::pair<std::string, uint64_t>> ReadKeyValues(const std::string& path) {
  std::vector<std::pair<std::string, uint64_t>> out;
  std::optional<std::string> s = ReadFile(path);
  if (!s) return out;
  std::istringstream in(*s);
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) out.emplace_back(key, value);
  return out;
}

uint64_t Lookup(const std::vector<std::pair<std::string, uint64_t>>& kv, std::string_view key) {
  for (const auto& [k, v] : kv)
    if (k == key) return v;
  return 0;
}

bool ParseDevice(std::string_view dev, BlkioEntry& e) {
  size_t colon = dev.find(':');
  if (colon == std::string_view::npos) return false;
  try {
    e.major = std::stoull(std::string(dev.substr(0, colon)));
    e.minor = std::stoull(std::string(dev.substr(colon + 1)));
  } catch (...) {
    return false;
  }
  return true;
}

// v1 blkio: "8:0 Read 1234" lines (the closing "Total N" line has no device and is skipped).
std::vector<BlkioEntry> ReadBlkioV1(const std::string& path) {
  std::vector<BlkioEntry> out;
  std::optional<std::string> s = ReadFile(path);
  if (!s) return out;
  std::istringstream in(*s);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string dev, op;
    BlkioEntry e;
    if (!(f >> dev >> op >> e.value) || !ParseDevice(dev, e)) continue;
    e.op = op;
    out.push_back(std::move(e));
  }
  return out;
}

// v2 io.stat: "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0", as Docker maps it.
void ReadIoStatV2(const std::string& path, CgroupSample& s) {
  std::optional<std::string> text = ReadFile(path);
  if (!text) return;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string dev, kv;
    BlkioEntry base;
    if (!(f >> dev) || !ParseDevice(dev, base)) continue;
    while (f >> kv) {
      size_t eq = kv.find('=');
      if (eq == std::string::npos) continue;
      std::string key = kv.substr(0, eq);
      BlkioEntry e = base;
      try {
        e.value = std::stoull(kv.substr(eq + 1));
      } catch (...) {
        continue;
      }
      if (key == "rbytes" || key == "wbytes") {
        e.op = key == "rbytes" ? "read" : "write";
        s.io_service_bytes.push_back(e);
      } else if (key == "rios" || key == "wios") {
        e.op = key == "rios" ? "read" : "write";
        s.io_serviced.push_back(e);
      }
    }
  }
}

uint64_t HostMemTotal(const std::string& proc_root) {
  std::optional<std::string> s = ReadFile(proc_root + "/meminfo");
  if (!s) return 0;
  std::istringstream in(*s);
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemTotal:") return kb * 1024;
  }
  return 0;
}

// Docker's system_cpu_usage: user+nice+system+idle+iowait+irq+softirq of /proc/stat, in ns.
uint64_t SystemCpuNs(const std::string& proc_root) {
  std::optional<std::string> s = ReadFile(proc_root + "/stat");
  if (!s) return 0;
  std::istringstream in(*s);
  std::string label;
  in >> label;
  if (label != "cpu") return 0;
  uint64_t ticks = 0;
  for (int i = 0; i < 7; ++i) {
    uint64_t v = 0;
    if (!(in >> v)) break;
    ticks += v;
  }
  static const long hz = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
  return ticks * (1'000'000'000ull / static_cast<uint64_t>(hz));
}

// /proc/<pid>/net/dev: the interfaces of the namespace the process is in.
std::optional<std::map<std::string, NetDevCounters>> ReadNetDev(const std::string& path) {
  std::optional<std::string> s = ReadFile(path);
  if (!s) return std::nullopt;
  std::map<std::string, NetDevCounters> out;
  std::istringstream in(*s);
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name == "lo" || name.find('|') != std::string::npos) continue;
    std::istringstream f(line.substr(colon + 1));
    uint64_t v[16] = {};
    int n = 0;
    while (n < 16 && f >> v[n]) ++n;
    if (n < 16) continue;
    out[name] = NetDevCounters{v[0], v[1], v[2], v[3], v[8], v[9], v[10], v[11]};
  }
  return out;
}

// Each controller's cgroup of `pid` as /proc/<pid>/cgroup lists it ("" for the unified hierarchy).
// On v1 they may differ (crun puts a container at one path in every hierarchy; other processes
// need not be so tidy).
std::map<std::string, std::string> CgroupsOfPid(const std::string& proc_root, int pid) {
  std::map<std::string, std::string> out;
  std::optional<std::string> s = ReadFile(fmt::format("{}/{}/cgroup", proc_root, pid));
  if (!s) return out;
  std::istringstream in(*s);
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find(':');
    size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    if (controllers.empty()) out[""] = path;
    std::istringstream names(controllers);
    std::string name;
    while (std::getline(names, name, ',')) out[name] = path;
  }
  return out;
}

json::value BlkioArray(const std::vector<BlkioEntry>& entries, bool read) {
  if (!read) return nullptr;
  json::array out;
  for (const auto& e : entries)
    out.push_back(json::object{{"major", e.major}, {"minor", e.minor}, {"op", e.op}, {"value", e.value}});
  return out;
}

json::object CpuStats(const CgroupSample& s) {
  json::object usage{{"total_usage", s.cpu_total_ns}};
  if (!s.cpu_percpu_ns.empty()) {
    json::array per;
    for (uint64_t v : s.cpu_percpu_ns) per.emplace_back(v);
    usage["percpu_usage"] = std::move(per);
  }
  usage["usage_in_kernelmode"] = s.cpu_kernel_ns;
  usage["usage_in_usermode"] = s.cpu_user_ns;
  return json::object{{"cpu_usage", std::move(usage)},
                      {"system_cpu_usage", s.system_cpu_ns},
                      {"online_cpus", s.online_cpus},
                      {"throttling_data", json::object{{"periods", s.throttling_periods},
                                                       {"throttled_periods", s.throttled_periods},
                                                       {"throttled_time", s.throttled_time_ns}}}};
}

// Docker's precpu_stats before any earlier reading: zeros, the omitempty members left out.
json::object ZeroCpuStats() {
  return json::object{
      {"cpu_usage", json::object{{"total_usage", 0}, {"usage_in_kernelmode", 0}, {"usage_in_usermode", 0}}},
      {"throttling_data", json::object{{"periods", 0}, {"throttled_periods", 0}, {"throttled_time", 0}}}};
}

}  // namespace

// ---- Documents ---------------------------------------------------------------------------------

std::string FormatTime(TimePoint t) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  int64_t secs = ns / 1'000'000'000;
  int64_t frac = ns % 1'000'000'000;
  if (frac < 0) {
    frac += 1'000'000'000;
    --secs;
  }
  std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  std::string out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                                tm.tm_hour, tm.tm_min, tm.tm_sec);
  if (frac != 0) {
    std::string f = fmt::format("{:09}", frac);
    while (f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out + "Z";
}

StatusOr<json::object> RenderContainer(const json::object& task, const TaskFacts& facts,
                                       std::string_view container_name, Version version) {
  const ContainerFacts* f = FindFacts(facts, container_name);
  for (const json::object* c : Objects(task, "containers")) {
    if (Str(*c, "name") != container_name) continue;
    if (f == nullptr) break;
    return ContainerDocument(task, facts, *c, *f, version);
  }
  return NotFound(fmt::format("no container '{}' in task {}", container_name, Str(task, "taskArn")));
}

json::object RenderTask(const json::object& task, const TaskFacts& facts, Version version, WithTags with_tags) {
  const bool v4 = version == Version::kV4;
  const auto [family, revision] = FamilyRevision(Str(task, "taskDefinitionArn"));
  json::array containers;
  for (const json::object* c : Objects(task, "containers")) {
    const ContainerFacts* f = FindFacts(facts, Str(*c, "name"));
    if (f == nullptr || f->docker_id.empty()) continue;  // not created: the agent has no record yet
    containers.push_back(ContainerDocument(task, facts, *c, *f, version));
  }
  json::object d;
  d["Cluster"] = ClusterName(task);
  d["TaskARN"] = Str(task, "taskArn");
  d["Family"] = family;
  d["Revision"] = revision;
  d["DesiredStatus"] = DesiredStatus(Str(task, "desiredStatus"));
  d["KnownStatus"] = TaskKnownStatus(Str(task, "lastStatus"));
  if (!v4 && !containers.empty()) d["Containers"] = containers;
  json::object limits;
  if (std::string cpu = Str(task, "cpu"); !cpu.empty()) {
    try {
      limits["CPU"] = std::stod(cpu) / 1024.0;  // vCPUs
    } catch (...) {
    }
  }
  if (std::string memory = Str(task, "memory"); !memory.empty()) {
    try {
      limits["Memory"] = static_cast<int64_t>(std::stoll(memory));
    } catch (...) {
    }
  }
  if (!limits.empty()) d["Limits"] = std::move(limits);
  if (auto t = TimeField(task, "pullStartedAt")) d["PullStartedAt"] = *t;
  if (auto t = TimeField(task, "pullStoppedAt")) d["PullStoppedAt"] = *t;
  if (auto t = TimeField(task, "executionStoppedAt")) d["ExecutionStoppedAt"] = *t;
  if (std::string az = Str(task, "availabilityZone"); !az.empty()) d["AvailabilityZone"] = az;
  if (!v4) return d;
  if (with_tags == WithTags::kYes) {
    json::object tags;
    for (const json::object* t : Objects(task, "tags")) tags[Str(*t, "key")] = Str(*t, "value");
    if (!tags.empty()) d["TaskTags"] = std::move(tags);
  }
  if (std::string lt = Str(task, "launchType"); !lt.empty()) d["LaunchType"] = lt;
  if (!containers.empty()) d["Containers"] = std::move(containers);
  if (!facts.vpc_id.empty() && Str(task, "launchType") == "EC2") d["VPCID"] = facts.vpc_id;
  if (std::string group = Str(task, "group"); group.starts_with("service:")) d["ServiceName"] = group.substr(8);
  if (const auto& clock = facts.clock_drift) {
    json::object drift;
    if (clock->error_bound_ms) drift["ClockErrorBound"] = *clock->error_bound_ms;
    drift["ReferenceTimestamp"] = FormatTime(clock->reference);
    drift["ClockSynchronizationStatus"] = clock->synchronized ? "SYNCHRONIZED" : "NOT_SYNCHRONIZED";
    d["ClockDrift"] = std::move(drift);
  }
  if (auto gib = Num(Obj(task, "ephemeralStorage"), "sizeInGiB"); gib && facts.ephemeral_utilized_mib) {
    d["EphemeralStorageMetrics"] = json::object{{"Utilized", *facts.ephemeral_utilized_mib},
                                                {"Reserved", static_cast<int64_t>(*gib) * 1024}};
  }
  d["FaultInjectionEnabled"] = false;
  return d;
}

ClockDrift ClockDriftOf(int state, int status, int64_t maxerror_us, TimePoint at) {
  ClockDrift d;
  d.reference = at;
  d.synchronized = state != TIME_ERROR && (status & STA_UNSYNC) == 0;
  // Unsynchronized, the kernel's figure is its ceiling (16 s), not a measurement.
  if (d.synchronized && maxerror_us >= 0) d.error_bound_ms = static_cast<double>(maxerror_us) / 1000.0;
  return d;
}

StatusOr<ClockDrift> ReadKernelClock() {
  struct timex tx {};
  tx.modes = 0;  // read only
  int state = ::adjtimex(&tx);
  if (state == -1) return Unavailable(fmt::format("adjtimex: {}", std::strerror(errno)));
  const int64_t fraction_ns = (tx.status & STA_NANO) ? tx.time.tv_usec : int64_t{tx.time.tv_usec} * 1000;
  const TimePoint at(std::chrono::duration_cast<Duration>(std::chrono::seconds(tx.time.tv_sec) +
                                                          std::chrono::nanoseconds(fraction_ns)));
  return ClockDriftOf(state, tx.status, tx.maxerror, at);
}

ContainerFacts FactsFromDefinition(const json::object& definition) {
  ContainerFacts f;
  f.name = Str(definition, "name");
  f.cpu_units = static_cast<int64_t>(Num(definition, "cpu").value_or(0));
  f.memory_mib = static_cast<int64_t>(Num(definition, "memory").value_or(0));
  const json::object& log = Obj(definition, "logConfiguration");
  f.log_driver = Str(log, "logDriver");
  for (const auto& [k, v] : Obj(log, "options"))
    if (v.is_string()) f.log_options[std::string(k)] = std::string(v.get_string());
  for (const auto& [k, v] : Obj(definition, "dockerLabels"))
    if (v.is_string()) f.docker_labels[std::string(k)] = std::string(v.get_string());
  return f;
}

void ParseResolvConf(std::string_view text, TaskFacts& facts) {
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string key, value;
    if (!(f >> key)) continue;
    if (key == "nameserver" && f >> value) {
      facts.dns_servers.push_back(value);
    } else if (key == "search") {
      facts.dns_search.clear();  // the last search line wins, as in the resolver
      while (f >> value) facts.dns_search.push_back(value);
    }
  }
}

std::string Serialize(const json::value& v) {
  std::string out;
  Write(v, out);
  return out;
}

// ---- Stats -------------------------------------------------------------------------------------

StatsSources StatsSources::FromLayout(const runtime::CgroupLayout& layout) {
  StatsSources s;
  s.layout = layout;
  if (layout.unified) {
    s.cpuacct_root = s.pids_root = s.blkio_root = layout.memory_root;
    return s;
  }
  // v1: each controller's hierarchy, named by its mount point ("…/cpuacct", "…/cpu,cpuacct").
  auto find = [&](std::string_view controller) -> std::string {
    for (const std::string& mp : layout.mount_points) {
      std::string base = mp.substr(mp.rfind('/') + 1);
      if (("," + base + ",").find(fmt::format(",{},", controller)) != std::string::npos) return mp;
    }
    return "";
  };
  s.cpuacct_root = find("cpuacct");
  s.pids_root = find("pids");
  s.blkio_root = find("blkio");
  return s;
}

StatusOr<CgroupSample> ReadCgroupSample(const StatsSources& sources, std::string_view cgroup_path, int pid,
                                        TimePoint now) {
  const runtime::CgroupLayout& layout = sources.layout;
  // Every controller's path: the one given, or each from /proc/<pid>/cgroup.
  std::map<std::string, std::string> of_pid;
  if (cgroup_path.empty() && pid > 0) of_pid = CgroupsOfPid(sources.proc_root, pid);
  auto path_of = [&](const std::string& controller) {
    if (!cgroup_path.empty()) return std::string(cgroup_path);
    auto it = of_pid.find(layout.unified ? "" : controller);
    return it == of_pid.end() ? std::string() : it->second;
  };
  const std::string path = path_of("memory");
  if (path.empty() || path == "/") return NotFound("the container's cgroup is not known");

  CgroupSample s;
  s.read = now;
  const std::string memory_dir = JoinPath(layout.memory_root, path);
  const uint64_t host_memory = HostMemTotal(sources.proc_root);
  if (layout.unified) {
    std::optional<uint64_t> current = ReadU64(memory_dir + "/memory.current");
    if (!current) return NotFound(fmt::format("cannot read {}/memory.current", memory_dir));
    s.memory_usage = *current;
    std::optional<uint64_t> max = ReadU64(memory_dir + "/memory.max");  // "max" does not parse
    s.memory_limit = max.value_or(host_memory);
    s.memory_stat = ReadKeyValues(memory_dir + "/memory.stat");
    auto cpu = ReadKeyValues(memory_dir + "/cpu.stat");
    s.cpu_total_ns = Lookup(cpu, "usage_usec") * 1000;
    s.cpu_user_ns = Lookup(cpu, "user_usec") * 1000;
    s.cpu_kernel_ns = Lookup(cpu, "system_usec") * 1000;
    s.throttling_periods = Lookup(cpu, "nr_periods");
    s.throttled_periods = Lookup(cpu, "nr_throttled");
    s.throttled_time_ns = Lookup(cpu, "throttled_usec") * 1000;
    s.pids_current = ReadU64(memory_dir + "/pids.current");
    ReadIoStatV2(memory_dir + "/io.stat", s);
  } else {
    std::optional<uint64_t> usage = ReadU64(memory_dir + "/memory.usage_in_bytes");
    if (!usage) return NotFound(fmt::format("cannot read {}/memory.usage_in_bytes", memory_dir));
    s.memory_usage = *usage;
    s.memory_max_usage = ReadU64(memory_dir + "/memory.max_usage_in_bytes");
    s.memory_failcnt = ReadU64(memory_dir + "/memory.failcnt");
    s.memory_limit = ReadU64(memory_dir + "/memory.limit_in_bytes").value_or(host_memory);
    s.memory_stat = ReadKeyValues(memory_dir + "/memory.stat");
    if (const std::string cpuacct = path_of("cpuacct"); !sources.cpuacct_root.empty() && !cpuacct.empty()) {
      const std::string dir = JoinPath(sources.cpuacct_root, cpuacct);
      s.cpu_total_ns = ReadU64(dir + "/cpuacct.usage").value_or(0);
      static const long hz = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
      const uint64_t tick_ns = 1'000'000'000ull / static_cast<uint64_t>(hz);
      auto stat = ReadKeyValues(dir + "/cpuacct.stat");
      s.cpu_user_ns = Lookup(stat, "user") * tick_ns;
      s.cpu_kernel_ns = Lookup(stat, "system") * tick_ns;
      if (std::optional<std::string> per = ReadFile(dir + "/cpuacct.usage_percpu")) {
        std::istringstream in(*per);
        uint64_t v = 0;
        while (in >> v) s.cpu_percpu_ns.push_back(v);
      }
    }
    if (const std::string cpu_path = path_of("cpu"); !layout.cpu_root.empty() && !cpu_path.empty()) {
      auto cpu = ReadKeyValues(JoinPath(layout.cpu_root, cpu_path) + "/cpu.stat");
      s.throttling_periods = Lookup(cpu, "nr_periods");
      s.throttled_periods = Lookup(cpu, "nr_throttled");
      s.throttled_time_ns = Lookup(cpu, "throttled_time");
    }
    if (const std::string pids = path_of("pids"); !sources.pids_root.empty() && !pids.empty()) {
      s.pids_current = ReadU64(JoinPath(sources.pids_root, pids) + "/pids.current");
    }
    if (const std::string blkio = path_of("blkio"); !sources.blkio_root.empty() && !blkio.empty()) {
      const std::string dir = JoinPath(sources.blkio_root, blkio);
      s.io_service_bytes = ReadBlkioV1(dir + "/blkio.io_service_bytes_recursive");
      if (s.io_service_bytes.empty()) {
        s.io_service_bytes = ReadBlkioV1(dir + "/blkio.throttle.io_service_bytes_recursive");
      }
      s.io_serviced = ReadBlkioV1(dir + "/blkio.io_serviced_recursive");
      if (s.io_serviced.empty()) s.io_serviced = ReadBlkioV1(dir + "/blkio.throttle.io_serviced_recursive");
    }
  }
  // Unlimited (v1's 9223372036854771712, v2's "max") reads as the host's memory, as Docker.
  if (host_memory != 0 && (s.memory_limit == 0 || s.memory_limit > host_memory)) s.memory_limit = host_memory;
  s.system_cpu_ns = SystemCpuNs(sources.proc_root);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  s.online_cpus = static_cast<uint32_t>(cpus > 0 ? cpus : 1);
  if (pid > 0) s.networks = ReadNetDev(fmt::format("{}/{}/net/dev", sources.proc_root, pid));
  return s;
}

json::object RenderStats(const CgroupSample& current, const CgroupSample* previous, std::string_view docker_id,
                         std::string_view name, Version version) {
  const CgroupSample& s = current;
  json::object d;
  d["read"] = FormatTime(s.read);
  d["preread"] = previous ? FormatTime(previous->read) : "0001-01-01T00:00:00Z";
  d["pids_stats"] = s.pids_current ? json::object{{"current", *s.pids_current}} : json::object{};
  const bool io = !s.io_service_bytes.empty() || !s.io_serviced.empty();
  d["blkio_stats"] = json::object{{"io_service_bytes_recursive", BlkioArray(s.io_service_bytes, io)},
                                  {"io_serviced_recursive", BlkioArray(s.io_serviced, io)},
                                  {"io_queue_recursive", nullptr},
                                  {"io_service_time_recursive", nullptr},
                                  {"io_wait_time_recursive", nullptr},
                                  {"io_merged_recursive", nullptr},
                                  {"io_time_recursive", nullptr},
                                  {"sectors_recursive", nullptr}};
  d["num_procs"] = 0;
  d["storage_stats"] = json::object{};
  d["cpu_stats"] = CpuStats(s);
  d["precpu_stats"] = previous ? CpuStats(*previous) : ZeroCpuStats();
  json::object memory{{"usage", s.memory_usage}};
  if (s.memory_max_usage) memory["max_usage"] = *s.memory_max_usage;
  json::object stat;
  for (const auto& [k, v] : s.memory_stat) stat[k] = v;
  memory["stats"] = std::move(stat);
  if (s.memory_failcnt) memory["failcnt"] = *s.memory_failcnt;
  memory["limit"] = s.memory_limit;
  d["memory_stats"] = std::move(memory);
  d["name"] = name;
  d["id"] = docker_id;
  if (version == Version::kV4 && s.networks) {
    json::object nets;
    for (const auto& [ifname, n] : *s.networks) {
      nets[ifname] = json::object{{"rx_bytes", n.rx_bytes},     {"rx_packets", n.rx_packets},
                                  {"rx_errors", n.rx_errors},   {"rx_dropped", n.rx_dropped},
                                  {"tx_bytes", n.tx_bytes},     {"tx_packets", n.tx_packets},
                                  {"tx_errors", n.tx_errors},   {"tx_dropped", n.tx_dropped}};
    }
    d["networks"] = std::move(nets);
    if (previous && previous->networks) {
      const double seconds = std::chrono::duration<double>(s.read - previous->read).count();
      if (seconds > 0) {
        auto sum = [](const std::map<std::string, NetDevCounters>& m, bool rx) {
          uint64_t total = 0;
          for (const auto& [k, n] : m) total += rx ? n.rx_bytes : n.tx_bytes;
          return total;
        };
        auto rate = [&](bool rx) {
          uint64_t now = sum(*s.networks, rx), before = sum(*previous->networks, rx);
          return now >= before ? static_cast<double>(now - before) / seconds : 0.0;
        };
        d["network_rate_stats"] = json::object{{"rx_bytes_per_sec", rate(true)}, {"tx_bytes_per_sec", rate(false)}};
      }
    }
  }
  return d;
}

// ---- The service -------------------------------------------------------------------------------

std::vector<std::string> ContainerEndpoint::Env() const {
  return {"ECS_CONTAINER_METADATA_URI_V4=" + v4_uri, "ECS_CONTAINER_METADATA_URI=" + v3_uri};
}

MetadataService::MetadataService(MetadataServiceOptions options) : options_(std::move(options)) {}

MetadataService::~MetadataService() { Stop(); }

Status MetadataService::Start() {
  if (server_) return FailedPrecondition("the metadata service is already started");
  if (!options_.interface.empty())
    RETURN_IF_ERROR(net::EnsureInterfaceAddress(options_.interface, options_.host + "/32"));
  if (options_.stats_sources) {
    sources_ = options_.stats_sources;
  } else if (StatusOr<runtime::CgroupLayout> layout = runtime::DetectCgroupLayout(); layout.ok()) {
    sources_ = StatsSources::FromLayout(*layout);
  }
  http::ServerOptions so;
  so.host = options_.host;
  so.port = options_.port;
  so.max_body_bytes = 4096;
  so.io_threads = 1;
  so.worker_threads = options_.worker_threads;
  so.max_connections_per_peer = kMaxConnectionsPerPeer;
  server_ = std::make_unique<http::Server>(so, [this](const http::Request& r) { return Handle(r); });
  StatusOr<uint16_t> port = server_->Start();
  if (!port.ok()) {
    server_.reset();
    return port.status();
  }
  port_ = *port;
  return OkStatus();
}

void MetadataService::Stop() {
  std::map<std::string, Listener, std::less<>> networks;
  {
    std::lock_guard<std::mutex> lock(listeners_mu_);
    networks.swap(networks_);
  }
  for (auto& [name, l] : networks) l.server->Stop();
  if (server_) server_->Stop();
}

Status MetadataService::ServeNetwork(std::string_view network, const std::string& netns_path) {
  if (!server_) return FailedPrecondition("the metadata service is not started");
  if (network.empty()) return InvalidArgument("a served network needs a name");
  const uint64_t id = netns::NamespaceId(netns_path);
  if (id == 0) return NotFound(fmt::format("no network namespace {}", netns_path));
  std::unique_ptr<http::Server> stale;
  std::lock_guard<std::mutex> lock(listeners_mu_);
  auto it = networks_.find(network);
  if (it != networks_.end() && it->second.netns_id == id) {
    ++it->second.users;
    return OkStatus();
  }
  http::ServerOptions so;
  so.host = options_.host;
  so.max_body_bytes = 4096;
  so.io_threads = 1;
  // One per VPC the node has tasks in: fewer threads than the host listener's.
  so.worker_threads = std::min(2, options_.worker_threads);
  so.max_connections_per_peer = kMaxConnectionsPerPeer;
  so.netns_path = netns_path;
  auto handler = [this, name = std::string(network)](const http::Request& r) { return Handle(r, name); };
  Listener l;
  StatusOr<uint16_t> port = Unavailable("not started");
  // AWS's port, unless another process of the node serves this namespace on it already: then any
  // port of the address will do (the containers' URIs carry it).
  for (uint16_t want : {options_.network_port, uint16_t{0}}) {
    so.port = want;
    l.server = std::make_unique<http::Server>(so, handler);
    port = l.server->Start();
    if (port.ok() || want == 0) break;
  }
  if (!port.ok()) return port.status();
  l.port = *port;
  l.netns_id = id;
  l.users = 1;
  if (it != networks_.end()) {
    // The namespace was made again: the old listener serves a namespace nobody can reach.
    l.users += it->second.users;
    stale = std::move(it->second.server);
    it->second = std::move(l);
  } else {
    networks_.emplace(std::string(network), std::move(l));
  }
  if (stale) stale->Stop();
  return OkStatus();
}

void MetadataService::ReleaseNetwork(std::string_view network) {
  std::unique_ptr<http::Server> done;
  {
    std::lock_guard<std::mutex> lock(listeners_mu_);
    auto it = networks_.find(network);
    if (it == networks_.end() || --it->second.users > 0) return;
    done = std::move(it->second.server);
    networks_.erase(it);
  }
  done->Stop();
}

uint16_t MetadataService::PortOf(std::string_view network) {
  if (network.empty()) return port_;
  std::lock_guard<std::mutex> lock(listeners_mu_);
  auto it = networks_.find(network);
  return it == networks_.end() ? 0 : it->second.port;
}

std::string MetadataService::BaseUri(uint16_t port) const {
  return port == 80 ? "http://" + options_.host : fmt::format("http://{}:{}", options_.host, port);
}

std::string MetadataService::IdFor(std::string_view message) const {
  if (options_.id_key.empty()) return HexEncode(RandomBytes(16));
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), options_.id_key.data(), static_cast<int>(options_.id_key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &mac_len);
  return HexEncode(std::string_view(reinterpret_cast<const char*>(mac), 16));
}

std::vector<std::string> CredentialsEndpoint::Env() const {
  if (!relative_uri.empty()) return {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=" + relative_uri};
  return {"AWS_CONTAINER_CREDENTIALS_FULL_URI=" + full_uri, "AWS_CONTAINER_AUTHORIZATION_TOKEN=" + token};
}

std::string RenderCredentials(const RoleCredentials& c) {
  const std::time_t t = std::chrono::system_clock::to_time_t(c.expiration);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char expiration[32];
  std::strftime(expiration, sizeof expiration, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return Serialize(json::object{{"RoleArn", c.role_arn},
                                {"AccessKeyId", c.access_key_id},
                                {"SecretAccessKey", c.secret_access_key},
                                {"Token", c.token},
                                {"Expiration", expiration}});
}

CredentialsEndpoint MetadataService::RegisterCredentials(std::string_view task_arn, CredentialsProvider provider,
                                                         std::string_view task_ip, std::string_view network) {
  CredentialsEndpoint ep;
  // '/' never occurs in a container name: no container's metadata id is this one.
  ep.id = IdFor(fmt::format("{}\n/v2/credentials", task_arn));
  uint16_t port = PortOf(network);
  if (port == 0) port = network.empty() ? options_.port : options_.network_port;  // not served (yet)
  const std::string path = "/v2/credentials/" + ep.id;
  if (port == 80) {
    ep.relative_uri = path;
  } else {
    // The SDKs cannot add a port to the relative form: the full URI, with a token (botocore
    // accepts a full URI on 169.254.170.2 over plain http).
    ep.full_uri = BaseUri(port) + path;
    ep.token = IdFor(fmt::format("{}\n/v2/credentials token", task_arn));
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<TaskEntry>& t = by_task_[std::string(task_arn)];
  if (!t) t = std::make_shared<TaskEntry>();
  t->credentials = std::make_shared<const CredentialsProvider>(std::move(provider));
  if (!t->credentials_id.empty() && t->credentials_id != ep.id) credentials_.erase(t->credentials_id);
  t->credentials_id = ep.id;
  credentials_[ep.id] = CredentialsEntry{std::string(task_arn), std::string(task_ip), std::string(network), ep.token};
  return ep;
}

ContainerEndpoint MetadataService::RegisterContainer(std::string_view task_arn, std::string_view container_name,
                                                     TaskProvider provider, std::string_view task_ip,
                                                     std::string_view network) {
  ContainerEndpoint ep;
  ep.id = IdFor(fmt::format("{}\n{}", task_arn, container_name));
  uint16_t port = PortOf(network);
  if (port == 0) port = network.empty() ? options_.port : options_.network_port;  // not served (yet)
  ep.v4_uri = BaseUri(port) + "/v4/" + ep.id;
  ep.v3_uri = BaseUri(port) + "/v3/" + ep.id;
  std::lock_guard<std::mutex> lock(mu_);
  by_id_[ep.id] = Entry{std::string(task_arn), std::string(container_name), std::string(task_ip), std::string(network)};
  std::shared_ptr<TaskEntry>& t = by_task_[std::string(task_arn)];
  if (!t) t = std::make_shared<TaskEntry>();
  t->provider = std::make_shared<const TaskProvider>(std::move(provider));
  if (std::find(t->ids.begin(), t->ids.end(), ep.id) == t->ids.end()) t->ids.push_back(ep.id);
  return ep;
}

void MetadataService::UnregisterTask(std::string_view task_arn) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = by_task_.find(std::string(task_arn));
  if (it == by_task_.end()) return;
  std::shared_ptr<TaskEntry> task = it->second;
  for (const std::string& id : task->ids) by_id_.erase(id);
  if (!task->credentials_id.empty()) credentials_.erase(task->credentials_id);
  by_task_.erase(it);
  idle_.wait(lock, [&] { return task->in_flight == 0; });
}

json::value MetadataService::StatsFor(TaskEntry& task, const ContainerFacts& c, Version version) {
  if (!sources_ || c.docker_id.empty() || (c.pid <= 0 && c.cgroup_path.empty())) return nullptr;
  StatusOr<CgroupSample> sample = ReadCgroupSample(*sources_, c.cgroup_path, c.pid, SystemClock::Get().Now());
  if (!sample.ok()) return nullptr;
  std::optional<CgroupSample> previous;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& samples = task.last_samples;
    if (auto s = samples.find(c.docker_id); s != samples.end() && s->second.read < sample->read) previous = s->second;
    samples[c.docker_id] = *sample;
  }
  return RenderStats(*sample, previous ? &*previous : nullptr, c.docker_id, c.name, version);
}

namespace {

http::Response JsonResponse(int status, const json::value& body) {
  http::Response r;
  r.status = status;
  r.SetHeader("Content-Type", "application/json");
  r.body = Serialize(body);
  return r;
}

std::string_view RemoteIp(std::string_view remote) {
  size_t colon = remote.rfind(':');
  std::string_view ip = colon == std::string_view::npos ? remote : remote.substr(0, colon);
  if (ip.starts_with("::ffff:")) ip.remove_prefix(7);
  return ip;
}

}  // namespace

void MetadataService::SetControllerDoor(std::function<http::Response(const http::Request&)> door) {
  std::unique_lock lock(mu_);
  door_ = door ? std::make_shared<const std::function<http::Response(const http::Request&)>>(std::move(door)) : nullptr;
  idle_.wait(lock, [&] { return door_in_flight_ == 0; });
}

http::Response MetadataService::Handle(const http::Request& request, std::string_view network) {
  if (std::string_view path = request.Path(); path.starts_with("/paddock/")) {
    path.remove_prefix(std::string_view("/paddock").size());
    const bool open = (request.method == "POST" && path == "/v1/identity/token") ||
                      (request.method == "GET" && (path == "/.well-known/jwks.json" || path == "/.well-known/openid-configuration"));
    std::shared_ptr<const std::function<http::Response(const http::Request&)>> door;
    {
      std::lock_guard lock(mu_);
      if (open && door_) {
        door = door_;
        ++door_in_flight_;
      }
    }
    if (!door) return JsonResponse(404, "Not found");
    http::Request forwarded = request;
    forwarded.target = std::string(request.target.substr(std::string_view("/paddock").size()));
    forwarded.remote_address = fmt::format("{}/{}", network, request.remote_address);
    http::Response response = (*door)(forwarded);
    {
      std::lock_guard lock(mu_);
      --door_in_flight_;
    }
    idle_.notify_all();
    return response;
  }
  if (request.method != "GET") return JsonResponse(405, "Method not allowed");
  if (std::string_view path = request.Path(); path.starts_with("/v2/credentials")) {
    path.remove_prefix(std::string_view("/v2/credentials").size());
    if (path.starts_with('/')) path.remove_prefix(1);
    return HandleCredentials(request, path, network);
  }
  // /v4/<id>, /v4/<id>/task, /v4/<id>/stats, /v4/<id>/task/stats (and /v3/…), /v4/<id>/taskWithTags;
  // a trailing '/' is fine.
  std::string_view path = request.Path();
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  Version version;
  if (path.starts_with("/v4/")) {
    version = Version::kV4;
  } else if (path.starts_with("/v3/")) {
    version = Version::kV3;
  } else {
    return JsonResponse(404, "Not found");
  }
  path.remove_prefix(4);
  size_t slash = path.find('/');
  const std::string id(path.substr(0, slash));
  const std::string_view rest = slash == std::string_view::npos ? std::string_view() : path.substr(slash);
  if (rest != "" && rest != "/task" && rest != "/stats" && rest != "/task/stats" &&
      !(rest == "/taskWithTags" && version == Version::kV4)) {
    return JsonResponse(404, "Not found");
  }

  Entry entry;
  std::shared_ptr<TaskEntry> task;
  std::shared_ptr<const TaskProvider> provider;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return JsonResponse(404, "Not found");
    entry = it->second;
    // Unknown id, another network and a foreign source answer alike, so none tells the others
    // apart. The network first: two VPCs may both have the source address.
    if (entry.network != network) return JsonResponse(404, "Not found");
    if (options_.check_source && !entry.source_ip.empty() && RemoteIp(request.remote_address) != entry.source_ip) {
      return JsonResponse(404, "Not found");
    }
    task = by_task_.at(entry.task_arn);
    provider = task->provider;
    ++task->in_flight;
  }
  http::Response response = Serve(entry, rest, version, *task, *provider);
  {
    std::lock_guard<std::mutex> lock(mu_);
    --task->in_flight;
  }
  idle_.notify_all();
  return response;
}

http::Response MetadataService::Serve(const Entry& entry, std::string_view rest, Version version, TaskEntry& task,
                                      const TaskProvider& provider) {
  StatusOr<TaskFacts> facts = provider(rest == "/taskWithTags" ? WithTags::kYes : WithTags::kNo);
  if (!facts.ok()) return JsonResponse(500, json::value(json::string(facts.status().message())));
  boost::system::error_code ec;
  json::value parsed = json::parse(facts->task_json, ec);
  if (ec || !parsed.is_object()) return JsonResponse(500, "Task record unavailable");
  const json::object& task_json = parsed.get_object();

  if (rest == "") {
    StatusOr<json::object> doc = RenderContainer(task_json, *facts, entry.container_name, version);
    if (!doc.ok()) return JsonResponse(404, "Not found");
    return JsonResponse(200, *doc);
  }
  if (rest == "/task" || rest == "/taskWithTags") {
    if (version == Version::kV4 && !facts->clock_drift && options_.clock) {
      if (StatusOr<ClockDrift> clock = options_.clock(); clock.ok()) facts->clock_drift = *clock;
    }
    return JsonResponse(200, RenderTask(task_json, *facts, version,
                                        rest == "/taskWithTags" ? WithTags::kYes : WithTags::kNo));
  }
  if (rest == "/stats") {
    const ContainerFacts* c = FindFacts(*facts, entry.container_name);
    if (c == nullptr) return JsonResponse(404, "Not found");
    return JsonResponse(200, StatsFor(task, *c, version));
  }
  json::object all;  // /task/stats: by DockerId, null for a container without stats
  for (const ContainerFacts& c : facts->containers) {
    if (c.docker_id.empty()) continue;
    all[c.docker_id] = StatsFor(task, c, version);
  }
  return JsonResponse(200, all);
}

http::Response MetadataService::HandleCredentials(const http::Request& request, std::string_view id,
                                                  std::string_view network) {
  // ECS agent's code and text for an id it does not know. Every refusal answers it, so none tells
  // an unknown id from another task's, another network's or a missing token.
  static const json::object kNotFound{{"code", "InvalidIdInRequest"},
                                      {"message", "CredentialsV2Request: Credentials not found"}};
  std::shared_ptr<TaskEntry> task;
  std::shared_ptr<const CredentialsProvider> provider;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = credentials_.find(id);
    if (id.empty() || it == credentials_.end()) return JsonResponse(404, kNotFound);
    const CredentialsEntry& entry = it->second;
    if (entry.network != network) return JsonResponse(404, kNotFound);
    if (options_.check_source && !entry.source_ip.empty() && RemoteIp(request.remote_address) != entry.source_ip)
      return JsonResponse(404, kNotFound);
    if (!entry.token.empty()) {
      const std::string_view given = request.GetHeader("Authorization");
      if (given.size() != entry.token.size() || CRYPTO_memcmp(given.data(), entry.token.data(), given.size()) != 0)
        return JsonResponse(404, kNotFound);
    }
    task = by_task_.at(entry.task_arn);
    provider = task->credentials;
    ++task->in_flight;
  }
  StatusOr<RoleCredentials> creds = (*provider)();
  {
    std::lock_guard<std::mutex> lock(mu_);
    --task->in_flight;
  }
  idle_.notify_all();
  if (creds.ok()) {
    http::Response r;
    r.status = 200;
    r.SetHeader("Content-Type", "application/json");
    r.body = RenderCredentials(*creds);
    return r;
  }
  // The role cannot be assumed (missing, not trusting ecs-tasks.amazonaws.com, another account's):
  // the SDK fails with the control plane's message, which is meant for the task.
  const StatusCode code = creds.status().code();
  if (code == StatusCode::kNotFound || code == StatusCode::kPermissionDenied || code == StatusCode::kInvalidArgument)
    return JsonResponse(400, json::object{{"code", "AssumeRoleError"}, {"message", std::string(creds.status().message())}});
  // Anything else passes (the control plane unreachable, a store error): a fixed text, so that
  // nothing of the node (addresses, paths) reaches the task; the SDK may retry.
  fmt::print(stderr, "paddock: task metadata: credentials unavailable: {}\n", creds.status().ToString());
  return JsonResponse(503, json::object{{"code", "CredentialsUnavailable"},
                                        {"message", "Credentials are unavailable right now; try again later."}});
}

}  // namespace paddock::agent::metadata
