#include "edge/ecs_source.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

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
    if (o.contains("containerPortRange")) continue;  // a port range: the edge routes to single ports
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

// ECS and EC2 take at most 100 ids per call (Traefik's chunkIDs).
constexpr size_t kIdsPerCall = 100;

// --- EC2's XML, as much as DescribeInstances needs ---------------------------------------------

// One element: its name, its text (entities decoded, CDATA kept) and its child elements.
struct XmlElement {
  std::string name;
  std::string text;
  std::vector<XmlElement> children;

  const XmlElement* Child(std::string_view n) const {
    for (const XmlElement& c : children)
      if (c.name == n) return &c;
    return nullptr;
  }
  // The text of the first child named `n`, without surrounding white space ("" when none).
  std::string ChildText(std::string_view n) const {
    const XmlElement* c = Child(n);
    if (c == nullptr) return {};
    size_t b = c->text.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return {};
    return c->text.substr(b, c->text.find_last_not_of(" \t\r\n") - b + 1);
  }
};

constexpr size_t kMaxXmlDepth = 64;

std::string XmlUnescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    size_t semi = s.find(';', i);
    std::string_view entity = semi == std::string_view::npos ? std::string_view() : s.substr(i + 1, semi - i - 1);
    static constexpr std::pair<std::string_view, char> kNamed[] = {
        {"lt", '<'}, {"gt", '>'}, {"amp", '&'}, {"quot", '"'}, {"apos", '\''}};
    bool done = false;
    for (const auto& [name, ch] : kNamed) {
      if (entity == name) {
        out += ch;
        done = true;
      }
    }
    if (done) {
      i = semi;
    } else {
      out += '&';  // a character reference or a stray '&': kept as written
    }
  }
  return out;
}

// The document's root element. Untrusted input: a malformed or too deep document is an error,
// never a crash. Attributes, processing instructions, comments and declarations are skipped.
StatusOr<XmlElement> ParseXml(std::string_view s) {
  std::vector<XmlElement> open(1);  // [0]: the document
  size_t i = 0;
  auto skip_past = [&](std::string_view end) -> bool {
    size_t at = s.find(end, i);
    if (at == std::string_view::npos) return false;
    i = at + end.size();
    return true;
  };
  while (i < s.size()) {
    if (s[i] != '<') {
      size_t next = s.find('<', i);
      if (next == std::string_view::npos) next = s.size();
      open.back().text += XmlUnescape(s.substr(i, next - i));
      i = next;
      continue;
    }
    std::string_view rest = s.substr(i);
    if (rest.starts_with("<?")) {
      if (!skip_past("?>")) return DataLoss("XML: an unterminated processing instruction");
    } else if (rest.starts_with("<!--")) {
      if (!skip_past("-->")) return DataLoss("XML: an unterminated comment");
    } else if (rest.starts_with("<![CDATA[")) {
      size_t end = s.find("]]>", i);
      if (end == std::string_view::npos) return DataLoss("XML: an unterminated CDATA section");
      open.back().text += s.substr(i + 9, end - i - 9);
      i = end + 3;
    } else if (rest.starts_with("<!")) {
      if (!skip_past(">")) return DataLoss("XML: an unterminated declaration");
    } else {
      // A start or end tag; '>' inside a quoted attribute value does not end it.
      size_t end = i + 1;
      char quote = 0;
      for (; end < s.size(); ++end) {
        if (quote != 0) {
          if (s[end] == quote) quote = 0;
        } else if (s[end] == '"' || s[end] == '\'') {
          quote = s[end];
        } else if (s[end] == '>') {
          break;
        }
      }
      if (end >= s.size()) return DataLoss("XML: an unterminated tag");
      std::string_view tag = s.substr(i + 1, end - i - 1);
      i = end + 1;
      const bool closing = tag.starts_with('/');
      if (closing) tag.remove_prefix(1);
      const bool empty = !closing && tag.ends_with('/');
      if (empty) tag.remove_suffix(1);
      std::string_view name = tag.substr(0, std::min(tag.find_first_of(" \t\r\n/"), tag.size()));
      if (name.empty()) return DataLoss("XML: a tag without a name");
      if (closing) {
        if (open.size() < 2 || open.back().name != name)
          return DataLoss(fmt::format("XML: </{}> closes no open element", name.substr(0, 64)));
        XmlElement done = std::move(open.back());
        open.pop_back();
        open.back().children.push_back(std::move(done));
        continue;
      }
      if (open.size() > kMaxXmlDepth) return DataLoss("XML: nested too deeply");
      XmlElement element;
      element.name = std::string(name);
      if (empty) {
        open.back().children.push_back(std::move(element));
      } else {
        open.push_back(std::move(element));
      }
    }
  }
  if (open.size() != 1) return DataLoss(fmt::format("XML: <{}> is not closed", open.back().name.substr(0, 64)));
  if (open[0].children.size() != 1) return DataLoss("XML: not one root element");
  return std::move(open[0].children[0]);
}

// application/x-www-form-urlencoded, as the Query protocol takes it (RFC 3986 unreserved kept).
std::string FormEncode(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string out;
  for (const auto& [key, value] : params) {
    if (!out.empty()) out += '&';
    for (const std::string* part : {&key, &value}) {
      for (unsigned char c : *part) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
          out += static_cast<char>(c);
        } else {
          out += fmt::format("%{:02X}", c);
        }
      }
      if (part == &key) out += '=';
    }
  }
  return out;
}

// What DescribeInstances says of one EC2 instance.
struct Machine {
  std::string private_ip;
  std::string state;  // instanceState.name: running, terminated, ...
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
      std::vector<EcsTask> found;
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
          found.push_back(std::move(*task));
        }
      } while (!token.empty());
      RETURN_IF_ERROR(LocateInstances(cluster, found));
      for (EcsTask& task : found) result.tasks.push_back(std::move(task));
    }
    // Definitions and container instances no listed task uses any more are forgotten.
    std::erase_if(definitions_, [&](const auto& entry) { return !used_.count(entry.first); });
    used_.clear();
    std::erase_if(ec2_ids_, [&](const auto& entry) { return !used_instances_.count(entry.first); });
    used_instances_.clear();
    return result;
  }

  size_t calls(std::string_view action) const {
    std::lock_guard lock(mu_);
    auto it = calls_.find(action);
    return it == calls_.end() ? 0 : it->second;
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
    task.container_instance_arn = StringField(t, "containerInstanceArn");
    ASSIGN_OR_RETURN(const Definition* def, DefinitionOf(StringField(t, "taskDefinitionArn")));
    task.network_mode = def->network_mode;
    if (const json::array* containers = ArrayField(t, "containers")) {
      for (const json::value& c : *containers) {
        if (!c.is_object()) continue;
        const json::object& co = c.get_object();
        EcsContainer container;
        container.name = StringField(co, "name");
        auto it = def->containers.find(container.name);
        if (it == def->containers.end()) continue;  // Traefik skips it (a debug line, no error)
        container.labels = it->second.labels;
        container.port_mappings = it->second.port_mappings;
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

  // Traefik's lookupEc2Instances: the tasks' container instances -> their ec2InstanceIds
  // (DescribeContainerInstances, 100 a call; an ARN -> id pair never changes, so it is cached
  // while a listed task runs there) -> each instance's privateIpAddress and state
  // (ec2:DescribeInstances, 100 ids a call, every read: the state is live). Ids of ECS Anywhere
  // (mi-) are not looked up. A container instance ECS does not describe, or an instance EC2 does
  // not list, leaves its tasks without a machine. A failed call fails the read, and forgets the
  // cached ids (one gone stale must not fail every later read).
  Status LocateInstances(const std::string& cluster, std::vector<EcsTask>& tasks) {
    std::vector<std::string> unknown;
    std::set<std::string> seen;
    for (const EcsTask& task : tasks) {
      const std::string& arn = task.container_instance_arn;
      if (arn.empty() || !seen.insert(arn).second) continue;
      used_instances_.insert(arn);
      if (!ec2_ids_.count(arn)) unknown.push_back(arn);
    }
    if (seen.empty()) return OkStatus();
    Status located = [&]() -> Status {
      for (size_t at = 0; at < unknown.size(); at += kIdsPerCall) {
        json::array chunk;
        for (size_t k = at; k < std::min(unknown.size(), at + kIdsPerCall); ++k) chunk.emplace_back(unknown[k]);
        ASSIGN_OR_RETURN(json::value answer, Call("DescribeContainerInstances",
                                                  json::object{{"cluster", cluster}, {"containerInstances", chunk}}));
        if (const json::array* described = ArrayField(answer.as_object(), "containerInstances"))
          for (const json::value& ci : *described)
            if (ci.is_object())
              ec2_ids_[StringField(ci.get_object(), "containerInstanceArn")] = StringField(ci.get_object(), "ec2InstanceId");
      }
      std::vector<std::string> ids;
      std::set<std::string> distinct;
      for (const std::string& arn : seen) {
        auto it = ec2_ids_.find(arn);
        if (it == ec2_ids_.end() || it->second.empty() || it->second.starts_with("mi-")) continue;
        if (distinct.insert(it->second).second) ids.push_back(it->second);
      }
      std::map<std::string, Machine> machines;
      for (size_t at = 0; at < ids.size(); at += kIdsPerCall) {
        std::vector<std::pair<std::string, std::string>> params;
        for (size_t k = at; k < std::min(ids.size(), at + kIdsPerCall); ++k)
          params.emplace_back(fmt::format("InstanceId.{}", k - at + 1), ids[k]);
        std::string token;
        do {
          std::vector<std::pair<std::string, std::string>> page = params;
          if (!token.empty()) page.emplace_back("NextToken", token);
          ASSIGN_OR_RETURN(XmlElement answer, Ec2Call("DescribeInstances", page));
          if (const XmlElement* reservations = answer.Child("reservationSet")) {
            for (const XmlElement& reservation : reservations->children) {
              const XmlElement* instances = reservation.Child("instancesSet");
              if (instances == nullptr) continue;
              for (const XmlElement& instance : instances->children) {
                std::string id = instance.ChildText("instanceId");
                if (id.empty()) continue;
                Machine& m = machines[id];
                m.private_ip = instance.ChildText("privateIpAddress");
                const XmlElement* state = instance.Child("instanceState");
                m.state = state != nullptr ? state->ChildText("name") : std::string();
              }
            }
          }
          token = answer.ChildText("nextToken");
        } while (!token.empty());
      }
      for (EcsTask& task : tasks) {
        auto id = ec2_ids_.find(task.container_instance_arn);
        if (id == ec2_ids_.end()) continue;
        auto machine = machines.find(id->second);
        if (machine == machines.end()) continue;
        task.host_ip = machine->second.private_ip;
        task.machine_state = machine->second.state;
      }
      return OkStatus();
    }();
    if (!located.ok()) ec2_ids_.clear();
    return located;
  }

  // An EC2 Query call: a form-encoded POST signed for "ec2"; the answer's root element.
  StatusOr<XmlElement> Ec2Call(std::string_view action, const std::vector<std::pair<std::string, std::string>>& params) {
    ++calls_[std::string(action)];
    std::vector<std::pair<std::string, std::string>> all = {{"Action", std::string(action)}, {"Version", "2016-11-15"}};
    all.insert(all.end(), params.begin(), params.end());
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
    req.body = FormEncode(all);
    ASSIGN_OR_RETURN(http::Response resp, client_.SendSigned(std::move(req), "ec2"));
    StatusOr<XmlElement> root = ParseXml(resp.body);
    if (resp.status != 200) {
      std::string message = resp.body.substr(0, 512);
      if (root.ok())
        if (const XmlElement* errors = root->Child("Errors"))
          if (const XmlElement* error = errors->Child("Error"))
            message = fmt::format("{}: {}", error->ChildText("Code"), error->ChildText("Message"));
      return Unavailable(fmt::format("{}: {} {}", action, resp.status, message));
    }
    if (!root.ok()) return DataLoss(fmt::format("{}: {}", action, root.status().message()));
    return root;
  }

  StatusOr<const Definition*> DefinitionOf(const std::string& arn) {
    used_.insert(arn);
    if (auto it = definitions_.find(arn); it != definitions_.end()) return &it->second;
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
    ++calls_[std::string(action)];
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
  // containerInstanceArn -> ec2InstanceId ("" when ECS gave none), and the ARNs this read used.
  std::map<std::string, std::string> ec2_ids_;
  std::set<std::string> used_instances_;
  std::map<std::string, size_t, std::less<>> calls_;  // by action
};

EcsApiSource::EcsApiSource(EcsApiOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
EcsApiSource::~EcsApiSource() = default;
StatusOr<TaskRead> EcsApiSource::Read() { return impl_->Read(); }
size_t EcsApiSource::calls(std::string_view action) const { return impl_->calls(action); }

}  // namespace paddock::edge
