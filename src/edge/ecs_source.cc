#include "edge/ecs_source.h"

#include <set>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>

#include "aws/json_client.h"

namespace paddock::edge {
namespace {

namespace json = boost::json;

std::string StringField(const json::object& o, std::string_view key) {
  if (const json::value* v = o.if_contains(key); v && v->is_string()) return std::string(v->get_string());
  return {};
}

int IntField(const json::object& o, std::string_view key) {
  if (const json::value* v = o.if_contains(key)) {
    if (v->is_int64()) return static_cast<int>(v->get_int64());
    if (v->is_uint64()) return static_cast<int>(v->get_uint64());
  }
  return 0;
}

const json::array* ArrayField(const json::object& o, std::string_view key) {
  if (const json::value* v = o.if_contains(key); v && v->is_array()) return &v->get_array();
  return nullptr;
}

std::vector<EcsPortMapping> Mappings(const json::array* list) {
  std::vector<EcsPortMapping> out;
  if (!list) return out;
  for (const json::value& m : *list) {
    if (!m.is_object()) continue;
    const json::object& o = m.get_object();
    EcsPortMapping p;
    p.container_port = IntField(o, "containerPort");
    p.host_port = IntField(o, "hostPort");
    if (std::string proto = StringField(o, "protocol"); !proto.empty()) p.protocol = proto;
    out.push_back(p);
  }
  return out;
}

// A cluster reference as ListTasks takes it; the name for EcsTask::cluster.
std::string ClusterName(std::string_view ref) {
  if (size_t slash = ref.rfind('/'); ref.rfind("arn:", 0) == 0 && slash != std::string_view::npos)
    return std::string(ref.substr(slash + 1));
  return std::string(ref);
}

struct Definition {
  std::string network_mode;
  struct Container {
    std::map<std::string, std::string> labels;
    std::vector<EcsPortMapping> port_mappings;
  };
  std::map<std::string, Container> containers;
};

}  // namespace

class EcsApiSource::Impl {
 public:
  explicit Impl(EcsApiOptions options)
      : options_(std::move(options)),
        client_({.host = options_.host, .port = options_.port, .region = options_.region,
                 .credentials = options_.credentials, .timeout = options_.timeout}) {}

  StatusOr<TaskRead> Read() {
    std::lock_guard lock(mu_);
    TaskRead result;
    std::vector<std::string> clusters = options_.clusters;
    if (options_.auto_discover_clusters) {
      clusters.clear();
      std::string token;
      do {
        json::object req;
        if (!token.empty()) req["nextToken"] = token;
        ASSIGN_OR_RETURN(json::value page, Call("ListClusters", req));
        if (const json::array* arns = ArrayField(page.as_object(), "clusterArns"))
          for (const json::value& a : *arns)
            if (a.is_string()) clusters.emplace_back(a.get_string());
        token = StringField(page.as_object(), "nextToken");
      } while (!token.empty());
    }
    for (const std::string& cluster : clusters) {
      std::string token;
      do {
        json::object req{{"cluster", cluster}, {"desiredStatus", "RUNNING"}};
        if (!token.empty()) req["nextToken"] = token;
        ASSIGN_OR_RETURN(json::value page, Call("ListTasks", req));
        token = StringField(page.as_object(), "nextToken");
        const json::array* arns = ArrayField(page.as_object(), "taskArns");
        if (!arns || arns->empty()) continue;
        json::object describe{{"cluster", cluster}, {"tasks", *arns}};
        StatusOr<json::value> described = Call("DescribeTasks", describe);
        if (!described.ok()) {  // Traefik logs it and drops the page
          result.errors.push_back(fmt::format("DescribeTasks in cluster {}: {}", cluster, described.status().message()));
          continue;
        }
        const json::array* tasks = ArrayField(described->as_object(), "tasks");
        if (!tasks) continue;
        for (const json::value& t : *tasks) {
          if (!t.is_object()) continue;
          StatusOr<EcsTask> task = Task(ClusterName(cluster), t.get_object());
          if (!task.ok()) return task.status();
          result.tasks.push_back(std::move(*task));
        }
      } while (!token.empty());
    }
    // Definitions no listed task uses any more are forgotten.
    std::erase_if(definitions_, [&](const auto& entry) { return !used_.count(entry.first); });
    used_.clear();
    return result;
  }

  size_t definition_calls() const {
    std::lock_guard lock(mu_);
    return definition_calls_;
  }

 private:
  StatusOr<EcsTask> Task(std::string cluster, const json::object& t) {
    EcsTask task;
    task.task_arn = StringField(t, "taskArn");
    task.cluster = std::move(cluster);
    task.group = StringField(t, "group");
    task.last_status = StringField(t, "lastStatus");
    task.desired_status = StringField(t, "desiredStatus");
    task.health_status = StringField(t, "healthStatus");
    const json::array* attachments = ArrayField(t, "attachments");
    task.has_attachments = attachments && !attachments->empty();
    ASSIGN_OR_RETURN(const Definition* def, DefinitionOf(StringField(t, "taskDefinitionArn")));
    task.network_mode = def->network_mode;
    if (const json::array* containers = ArrayField(t, "containers")) {
      for (const json::value& c : *containers) {
        if (!c.is_object()) continue;
        const json::object& co = c.get_object();
        EcsContainer container;
        container.name = StringField(co, "name");
        if (auto it = def->containers.find(container.name); it != def->containers.end()) {
          container.labels = it->second.labels;
          container.port_mappings = it->second.port_mappings;
        }
        if (const json::array* nics = ArrayField(co, "networkInterfaces"); nics && !nics->empty() &&
                                                                          (*nics)[0].is_object()) {
          const json::object& nic = (*nics)[0].get_object();
          container.private_ip = StringField(nic, "privateIpv4Address");
          if (container.private_ip.empty()) container.private_ip = StringField(nic, "ipv6Address");
        }
        container.network_bindings = Mappings(ArrayField(co, "networkBindings"));
        task.containers.push_back(std::move(container));
      }
    }
    return task;
  }

  StatusOr<const Definition*> DefinitionOf(const std::string& arn) {
    used_.insert(arn);
    if (auto it = definitions_.find(arn); it != definitions_.end()) return &it->second;
    ++definition_calls_;
    ASSIGN_OR_RETURN(json::value answer, Call("DescribeTaskDefinition", json::object{{"taskDefinition", arn}}));
    const json::value* td = answer.as_object().if_contains("taskDefinition");
    if (!td || !td->is_object()) return DataLoss(fmt::format("DescribeTaskDefinition {}: no taskDefinition", arn));
    const json::object& o = td->get_object();
    Definition def;
    def.network_mode = StringField(o, "networkMode");
    if (def.network_mode.empty()) def.network_mode = "bridge";  // ECS's default on EC2
    if (const json::array* containers = ArrayField(o, "containerDefinitions")) {
      for (const json::value& c : *containers) {
        if (!c.is_object()) continue;
        const json::object& co = c.get_object();
        Definition::Container container;
        if (const json::value* labels = co.if_contains("dockerLabels"); labels && labels->is_object())
          for (const auto& [k, v] : labels->get_object())
            if (v.is_string()) container.labels.emplace(std::string(k), std::string(v.get_string()));
        container.port_mappings = Mappings(ArrayField(co, "portMappings"));
        def.containers.emplace(StringField(co, "name"), std::move(container));
      }
    }
    return &(definitions_[arn] = std::move(def));
  }

  // One ECS call on the source's connection (aws/json_client.h, shared with the drain holds'
  // client); any failure is the read's, named by the action.
  StatusOr<json::value> Call(std::string_view action, const json::object& body) {
    StatusOr<json::value> v = client_.Call(fmt::format("AmazonEC2ContainerServiceV20141113.{}", action), body);
    if (!v.ok()) return Status(v.status().code(), fmt::format("{}: {}", action, v.status().message()), v.status().detail());
    if (!v->is_object()) return DataLoss(fmt::format("{}: the answer is not a JSON object", action));
    return v;
  }

  const EcsApiOptions options_;
  mutable std::mutex mu_;  // one Read at a time: the client and the cache are its own
  aws::JsonClient client_;
  std::map<std::string, Definition> definitions_;
  std::set<std::string> used_;
  size_t definition_calls_ = 0;
};

EcsApiSource::EcsApiSource(EcsApiOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
EcsApiSource::~EcsApiSource() = default;
StatusOr<TaskRead> EcsApiSource::Read() { return impl_->Read(); }
size_t EcsApiSource::definition_calls() const { return impl_->definition_calls(); }

}  // namespace paddock::edge
