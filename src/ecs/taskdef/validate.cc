#include "ecs/taskdef/validate.h"

#include "ecs/common/records.h"
#include "ecs/taskdef/container_values.h"
#include "ecs/taskdef/fargate.h"
#include "ecs/taskdef/host_grants.h"
#include "ecs/taskdef/port_mappings.h"
#include "ecs/taskdef/value_ranges.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

namespace paddock::ecs::taskdef {
namespace json = boost::json;

namespace {


bool IsNameChars(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  return true;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits "1.5 GB" into (1.5, "gb"). Fails unless the number is a plain decimal.
bool SplitQuantity(std::string_view text, double* number, std::string* unit) {
  text = Trim(text);
  size_t i = 0;
  bool digits = false, dot = false;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || (text[i] == '.' && !dot))) {
    if (text[i] == '.') dot = true; else digits = true;
    ++i;
  }
  if (!digits) return false;
  *number = std::strtod(std::string(text.substr(0, i)).c_str(), nullptr);
  *unit = Lower(Trim(text.substr(i)));
  return true;
}

const json::string* GetString(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return (it != o.end() && it->value().is_string()) ? &it->value().get_string() : nullptr;
}

std::optional<int64_t> GetInt(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_number()) return std::nullopt;
  return it->value().to_number<int64_t>();
}

bool GetBool(const json::object& o, std::string_view key, bool dflt) {
  auto it = o.find(key);
  return (it != o.end() && it->value().is_bool()) ? it->value().get_bool() : dflt;
}

bool NonEmptyList(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_array() && !it->value().get_array().empty();
}

void Require(json::array& attrs, std::set<std::string>& seen, std::string name) {
  if (seen.insert(name).second) attrs.push_back(json::object{{"name", name}});
}

}  // namespace

// Task sizes beyond these are nonsense for any host (and would overflow an int): 1,024 vCPUs, 64 TiB.
constexpr double kMaxCpuUnits = 1024.0 * 1024;
constexpr double kMaxMemoryMib = 64.0 * 1024 * 1024;

StatusOr<std::string> NormalizeCpu(std::string_view text) {
  double n = 0;
  std::string unit;
  if (!SplitQuantity(text, &n, &unit))
    return ClientError(fmt::format("Invalid 'cpu' setting for task. '{}' is not a number of CPU units or vCPU.", text));
  if ((unit.empty() ? n : n * 1024) > kMaxCpuUnits)
    return ClientError(fmt::format("Invalid 'cpu' setting for task. '{}' is larger than any supported task size.", text));
  if (unit.empty()) {
    if (n != std::floor(n)) return ClientError(fmt::format("Invalid 'cpu' setting for task. '{}' is not an integer.", text));
    return fmt::format("{}", static_cast<int64_t>(n));
  }
  if (unit == "vcpu") return fmt::format("{}", static_cast<int64_t>(std::llround(n * 1024)));
  return ClientError(fmt::format("Invalid 'cpu' setting for task. Unit '{}' in '{}' is not vCPU.", unit, text));
}

StatusOr<std::string> NormalizeMemory(std::string_view text) {
  double n = 0;
  std::string unit;
  if (!SplitQuantity(text, &n, &unit))
    return ClientError(fmt::format("Invalid 'memory' setting for task. '{}' is not an amount of memory.", text));
  if ((unit == "gb" || unit == "gib" ? n * 1024 : n) > kMaxMemoryMib)
    return ClientError(fmt::format("Invalid 'memory' setting for task. '{}' is larger than any supported task size.", text));
  if (unit.empty() || unit == "mb" || unit == "mib") {
    if (n != std::floor(n)) return ClientError(fmt::format("Invalid 'memory' setting for task. '{}' is not an integer.", text));
    return fmt::format("{}", static_cast<int64_t>(n));
  }
  if (unit == "gb" || unit == "gib") return fmt::format("{}", static_cast<int64_t>(std::llround(n * 1024)));
  return ClientError(fmt::format("Invalid 'memory' setting for task. Unit '{}' in '{}' is not MB or GB.", unit, text));
}

bool IsFargateSize(int cpu, int mem) {
  auto steps = [&](int lo_gb, int hi_gb, int step_gb) {
    if (mem % 1024 != 0) return false;
    int gb = mem / 1024;
    return gb >= lo_gb && gb <= hi_gb && (gb - lo_gb) % step_gb == 0;
  };
  switch (cpu) {
    case 256: return mem == 512 || mem == 1024 || mem == 2048;
    case 512: return steps(1, 4, 1);
    case 1024: return steps(2, 8, 1);
    case 2048: return steps(4, 16, 1);
    case 4096: return steps(8, 30, 1);
    case 8192: return steps(16, 60, 4);
    case 16384: return steps(32, 120, 8);
    default: return false;
  }
}

StatusOr<Validated> ValidateRegister(json::object input, const RegisterRules& rules) {
  Validated out;

  // Tags travel beside the definition, not in it.
  if (auto it = input.find("tags"); it != input.end()) {
    for (const auto& t : it->value().as_array()) {
      const auto& o = t.as_object();
      const json::string* k = GetString(o, "key");
      const json::string* v = GetString(o, "value");
      out.tags.push_back(Tag{k ? std::string(*k) : std::string(), v ? std::string(*v) : std::string()});
    }
    RETURN_IF_ERROR(ValidateTags(out.tags));
    input.erase(it);
  }

  const json::string* family = GetString(input, "family");
  if (family == nullptr || family->empty()) return ClientError("Family can not be blank.");
  if (!IsNameChars(*family, 255)) return ClientError("Family contains invalid characters.");

  const std::string network_mode = GetString(input, "networkMode") ? std::string(*GetString(input, "networkMode")) : "";
  const bool awsvpc = network_mode == "awsvpc";

  std::set<std::string> requires_compat;
  if (auto it = input.find("requiresCompatibilities"); it != input.end())
    for (const auto& c : it->value().as_array()) requires_compat.insert(std::string(c.as_string()));
  const bool fargate = requires_compat.count("FARGATE") > 0;

  // Task size: normalized to the integer strings AWS reports.
  std::optional<int> task_cpu, task_mem;
  for (const char* field : {"cpu", "memory"}) {
    auto it = input.find(field);
    if (it == input.end()) continue;
    std::string_view field_name = field;
    ASSIGN_OR_RETURN(std::string normalized,
                     field_name == "cpu" ? NormalizeCpu(it->value().as_string()) : NormalizeMemory(it->value().as_string()));
    int value = 0;  // the normalized text is a bounded decimal integer (see NormalizeCpu/NormalizeMemory)
    std::from_chars(normalized.data(), normalized.data() + normalized.size(), value);
    if (value <= 0) return ClientError(fmt::format("Invalid '{}' setting for task. The value must be greater than 0.", field));
    (field_name == "cpu" ? task_cpu : task_mem) = value;
    it->value() = json::string(normalized);
  }

  if (fargate) {
    if (input.find("ipcMode") != input.end()) return ClientError("Tasks using the Fargate launch type do not support ipcMode.");
    if (const json::string* pid = GetString(input, "pidMode"); pid != nullptr && *pid == "host")
      return ClientError("Tasks using the Fargate launch type do not support pidMode 'host'. The supported value for pidMode is 'task'.");
    if (!awsvpc) return ClientError("Fargate only supports network mode \u2018awsvpc\u2019.");
    if (!task_cpu) return ClientError("Fargate requires that 'cpu' be defined at the task level.");
    if (!task_mem) return ClientError("Fargate requires that 'memory' be defined at the task level.");
    if (!IsFargateSize(*task_cpu, *task_mem))
      return ClientError(fmt::format(
          "No Fargate configuration exists for given values: {} CPU, {} memory. See the Amazon ECS documentation for "
          "the valid values.",
          *task_cpu, *task_mem));
  }

  RETURN_IF_ERROR(CheckTaskRanges(input));

  auto cds_it = input.find("containerDefinitions");
  json::array& cds = cds_it->value().as_array();
  if (cds.empty()) return ClientError("Container list cannot be empty.");
  if (cds.size() > kMaxContainers)
    return ClientError(fmt::format("Too many containers: {}. A task definition can have at most {} containers.",
                                   cds.size(), kMaxContainers));

  std::set<std::string> names;
  std::map<std::string, std::vector<std::string>> deps;
  json::array requires_attributes;
  std::set<std::string> required_seen;
  bool uses_awslogs = false;
  int64_t reservation_sum = 0;

  for (auto& cd_value : cds) {
    json::object& cd = cd_value.as_object();
    const json::string* name = GetString(cd, "name");
    if (name == nullptr || name->empty()) return ClientError("Container.name should not be null or empty.");
    if (!IsNameChars(*name, 255)) return ClientError("Container.name contains invalid characters.");
    const std::string cname(*name);
    if (!names.insert(cname).second)
      return ClientError(fmt::format("Duplicate container name found: {}. Container names must be unique within a task definition.", cname));
    const json::string* image = GetString(cd, "image");
    if (image == nullptr || image->empty()) return ClientError("Container.image should not be null or empty.");

    // Memory: with no task-level memory, every container needs a hard or soft limit.
    std::optional<int64_t> mem = GetInt(cd, "memory"), reservation = GetInt(cd, "memoryReservation");
    if (!task_mem && !mem && !reservation)
      return ClientError(fmt::format(
          "Invalid setting for container '{}'. At least one of 'memory' or 'memoryReservation' must be specified.", cname));
    if (mem && *mem < 6)
      return ClientError(fmt::format("Invalid 'memory' setting for container '{}'. The minimum is 6 MiB.", cname));
    if (reservation && *reservation < 6)
      return ClientError(fmt::format("Invalid 'memoryReservation' setting for container '{}'. The minimum is 6 MiB.", cname));
    if (mem && reservation && *reservation > *mem)
      return ClientError(fmt::format(
          "Invalid setting for container '{}'. The value for 'memoryReservation' must be less than or equal to the value for 'memory'.",
          cname));
    if (mem && task_mem && *mem > *task_mem)
      return ClientError(fmt::format("The 'memory' setting for container '{}' is greater than for the task.", cname));
    if (reservation) reservation_sum += *reservation;
    if (awsvpc && cd.find("hostname") != cd.end())
      return ClientError("hostname is not supported on container when networkMode=awsvpc.");
    // Under awsvpc the task's network is its interface's, not Docker's per container (AWS's texts).
    if (awsvpc && NonEmptyList(cd, "extraHosts"))
      return ClientError("Extra hosts are not supported on container when networkMode=awsvpc.");
    if (awsvpc && NonEmptyList(cd, "dnsServers"))
      return ClientError("DNS servers are not supported on container when networkMode=awsvpc.");
    if (awsvpc && NonEmptyList(cd, "links")) return ClientError("Links are not supported when networkMode=awsvpc.");
    if (awsvpc && GetBool(cd, "disableNetworking", false))
      return ClientError("Disable Networking is not supported on container when networkMode=awsvpc.");
    // Values the agent writes into /etc files and the environment (finding 11).
    RETURN_IF_ERROR(CheckContainerValues(cd));
    if (cd.find("secrets") != cd.end() && !cd.at("secrets").as_array().empty() &&
        GetString(input, "executionRoleArn") == nullptr)
      return ClientError("When you are specifying container secrets, you must also specify a value for 'executionRoleArn'.");
    // The execution role reads the credentials' secret (AWS's text, ClientException).
    if (cd.find("repositoryCredentials") != cd.end() && GetString(input, "executionRoleArn") == nullptr)
      return ClientError("Private repository authentication requires that the task definition specify a value for executionRoleArn.");
    if (auto c = GetInt(cd, "cpu"); c && *c < 0)
      return ClientError(fmt::format("Invalid 'cpu' setting for container '{}'.", cname));

    // Port mappings, checked and normalized (port_mappings.h); numeric fields in ECS's ranges
    // (value_ranges.h).
    RETURN_IF_ERROR(CheckPortMappings(cd, network_mode));
    RETURN_IF_ERROR(CheckContainerRanges(cd, {.fargate = fargate, .short_timings = rules.short_timings}));

    if (auto dep = cd.find("dependsOn"); dep != cd.end()) {
      for (const auto& d : dep->value().as_array()) {
        const json::string* other = GetString(d.as_object(), "containerName");
        deps[cname].push_back(other ? std::string(*other) : std::string());
      }
      Require(requires_attributes, required_seen, "ecs.capability.container-ordering");
    }

    // AWS's defaults, as DescribeTaskDefinition reports them.
    if (cd.find("cpu") == cd.end()) cd["cpu"] = 0;
    if (cd.find("portMappings") == cd.end()) cd["portMappings"] = json::array();
    if (cd.find("essential") == cd.end()) cd["essential"] = true;
    for (const char* list : {"environment", "mountPoints", "volumesFrom", "systemControls"})
      if (cd.find(list) == cd.end()) cd[list] = json::array();

    // What a container instance must support to run this (requiresAttributes).
    if (reservation) Require(requires_attributes, required_seen, "com.amazonaws.ecs.capability.docker-remote-api.1.21");
    if (cd.find("healthCheck") != cd.end()) Require(requires_attributes, required_seen, "ecs.capability.container-health-check");
    if (cd.find("restartPolicy") != cd.end()) Require(requires_attributes, required_seen, "ecs.capability.container-restart-policy");
    if (cd.find("environmentFiles") != cd.end()) Require(requires_attributes, required_seen, "ecs.capability.env-files.s3");
    if (auto lc = cd.find("logConfiguration"); lc != cd.end()) {
      const json::string* driver = GetString(lc->value().as_object(), "logDriver");
      if (driver != nullptr) {
        Require(requires_attributes, required_seen, "com.amazonaws.ecs.capability.logging-driver." + std::string(*driver));
        if (*driver == "awslogs") {
          uses_awslogs = true;
          Require(requires_attributes, required_seen, "com.amazonaws.ecs.capability.docker-remote-api.1.19");
        }
      }
    }
    if (auto sec = cd.find("secrets"); sec != cd.end()) {
      for (const auto& s : sec->value().as_array()) {
        const json::string* from = GetString(s.as_object(), "valueFrom");
        bool asm_secret = from && std::string_view(*from).find(":secretsmanager:") != std::string_view::npos;
        Require(requires_attributes, required_seen,
                asm_secret ? "ecs.capability.secrets.asm.environment-variables"
                           : "ecs.capability.secrets.ssm.environment-variables");
      }
    }
    if (cd.find("repositoryCredentials") != cd.end())
      Require(requires_attributes, required_seen, "com.amazonaws.ecs.capability.private-registry-authentication.secretsmanager");
    if (auto fl = cd.find("firelensConfiguration"); fl != cd.end()) {
      const json::string* type = GetString(fl->value().as_object(), "type");
      Require(requires_attributes, required_seen, "ecs.capability.firelens." + (type ? std::string(*type) : std::string("fluentbit")));
    }
    if (auto lp = cd.find("linuxParameters"); lp != cd.end() && lp->value().is_object()) {
      if (GetBool(lp->value().as_object(), "initProcessEnabled", false))
        Require(requires_attributes, required_seen, "com.amazonaws.ecs.capability.docker-remote-api.1.25");
    }
  }

  if (task_mem && reservation_sum > *task_mem)
    return ClientError("The sum of all container 'memoryReservation' values cannot be greater than the value of the task 'memory'.");

  // dependsOn names existing containers and has no cycle.
  for (const auto& [from, targets] : deps) {
    for (const auto& to : targets) {
      if (!names.count(to))
        return ClientError(fmt::format("Container '{}' depends on container '{}', which does not exist in the task definition.", from, to));
      if (to == from) return ClientError(fmt::format("Container '{}' cannot depend on itself.", from));
    }
  }
  {
    std::map<std::string, int> state;  // 0 new, 1 on stack, 2 done
    std::function<bool(const std::string&)> cyclic = [&](const std::string& n) {
      if (state[n] == 1) return true;
      if (state[n] == 2) return false;
      state[n] = 1;
      for (const auto& m : deps[n])
        if (cyclic(m)) return true;
      state[n] = 2;
      return false;
    };
    for (const auto& n : names)
      if (cyclic(n))
        return ClientError(fmt::format("Circular dependency detected in 'dependsOn' involving container '{}'.", n));
  }

  // What Fargate does not give (fargate.h), with AWS's texts.
  if (fargate) RETURN_IF_ERROR(CheckFargateOptions(input));

  // Host-level grants run only where an operator allowed them (host_grants.h).
  for (std::string& name : HostGrantAttributes(HostGrantsOf(input)))
    Require(requires_attributes, required_seen, std::move(name));

  // Fargate needs an execution role to ship awslogs.
  if (fargate && uses_awslogs && GetString(input, "executionRoleArn") == nullptr)
    return ClientError("Fargate requires task definition to have execution role ARN to support log driver awslogs.");

  if (awsvpc) {
    Require(requires_attributes, required_seen, "com.amazonaws.ecs.capability.docker-remote-api.1.18");
    Require(requires_attributes, required_seen, "ecs.capability.task-eni");
  }
  if (GetString(input, "taskRoleArn") != nullptr)
    Require(requires_attributes, required_seen, "com.amazonaws.ecs.capability.task-iam-role");
  if (GetString(input, "executionRoleArn") != nullptr && uses_awslogs)
    Require(requires_attributes, required_seen, "ecs.capability.execution-role-awslogs");

  // Launch types this definition can run on, as AWS computes them.
  // FARGATE only for a definition Fargate can run as registered (nothing dropped at launch).
  const json::string* pid_mode = GetString(input, "pidMode");
  bool fargate_ok = awsvpc && task_cpu && task_mem && IsFargateSize(*task_cpu, *task_mem) &&
                    input.find("ipcMode") == input.end() && (pid_mode == nullptr || *pid_mode != "host") &&
                    CheckFargateOptions(input).ok();
  out.compatibilities.push_back("EC2");
  if (!awsvpc) out.compatibilities.insert(out.compatibilities.begin(), "EXTERNAL");
  if (fargate_ok) out.compatibilities.push_back("FARGATE");
  if (fargate && !fargate_ok) return ClientError("The task definition is not compatible with FARGATE.");

  if (input.find("volumes") == input.end()) input["volumes"] = json::array();
  // AWS fills in an EFS volume's rootDirectory ("/", the file system's root) when it is omitted
  // (CircleCI-Public/aws-ecs-orb#105; the state terraform-provider-aws#26793 reads back).
  for (auto& v : input["volumes"].as_array()) {
    if (!v.is_object()) continue;
    json::value* efs = v.as_object().if_contains("efsVolumeConfiguration");
    if (efs != nullptr && efs->is_object() && !efs->as_object().contains("rootDirectory"))
      efs->as_object()["rootDirectory"] = "/";
  }
  if (input.find("placementConstraints") == input.end()) input["placementConstraints"] = json::array();

  out.requires_attributes = std::move(requires_attributes);
  out.definition = std::move(input);

  size_t size = json::serialize(out.definition).size();
  if (size > kMaxDefinitionBytes)
    return ClientError(fmt::format("Task definition size ({} bytes) exceeds the limit of {} bytes.", size, kMaxDefinitionBytes));
  return out;
}

}  // namespace paddock::ecs::taskdef
