#include "agent/remote/remote_control.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <stop_token>
#include <tuple>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "agent/protocol/wire.h"
#include "aws/errors.h"

namespace paddock::agent::remote {
namespace json = boost::json;
using protocol::DecodeLaunchSpec;
using protocol::DecodeRoleCredentials;
using protocol::DecodeVpcPolicy;
using protocol::EncodeStateChange;

StatusOr<std::pair<std::string, uint16_t>> ParseEndpoint(std::string_view url) {
  std::string_view rest = url;
  if (rest.starts_with("http://")) rest.remove_prefix(7);
  else if (rest.find("://") != std::string_view::npos)
    return InvalidArgument(fmt::format("endpoint '{}': only http:// is supported", url));
  if (size_t slash = rest.find('/'); slash != std::string_view::npos) rest = rest.substr(0, slash);
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    return InvalidArgument(fmt::format("endpoint '{}' must be http://HOST:PORT", url));
  std::string_view host = rest.substr(0, colon);
  if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
  std::string_view port_text = rest.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 || port > 65535)
    return InvalidArgument(fmt::format("endpoint '{}' has no valid port", url));
  return std::make_pair(std::string(host), static_cast<uint16_t>(port));
}

RemoteControl::RemoteControl(ClientOptions client, std::string cluster, std::string instance_arn,
                             RemoteOptions options)
    : client_options_(client),
      cluster_(std::move(cluster)),
      instance_arn_(std::move(instance_arn)),
      options_(options),
      poll_client_([&] {
        ClientOptions c = client;
        c.timeout = std::max<std::chrono::milliseconds>(c.timeout, options.poll_wait + std::chrono::seconds(10));
        return c;
      }()),
      report_client_(client),
      describe_client_(client),
      policy_client_(client),
      image_client_(client),
      credentials_client_(client),
      resources_client_(client),
      logs_client_(client),
      endpoint_host_(client.host) {}

RemoteControl::~RemoteControl() { Stop(); }

Status RemoteControl::Start() {
  thread_ = std::thread([this] { PollLoop(); });
  return OkStatus();
}

void RemoteControl::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  poll_client_.Cancel();
  if (thread_.joinable()) thread_.join();
}

void RemoteControl::Pause(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d, [&] { return stop_; });
}

bool RemoteControl::WaitForFirstPoll(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return stop_ || latest_.has_value(); }) && latest_.has_value();
}

std::chrono::milliseconds RemoteControl::FenceAfter() {
  std::lock_guard lock(mu_);
  return fence_after_;
}

bool RemoteControl::Revoked() {
  std::lock_guard lock(mu_);
  return revoked_;
}

void RemoteControl::PollLoop() {
  int refused = 0;  // polls in a row whose credential was not accepted
  for (;;) {
    std::string known;
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
      known = version_;
    }
    json::object body{{"cluster", cluster_}, {"containerInstance", instance_arn_}};
    if (!known.empty()) body["knownVersion"] = known;
    body["waitSeconds"] = options_.poll_wait.count();
    const auto sent = SteadyNow();
    auto answer = poll_client_.Call(fmt::format("{}.PollAssignments", kAgentTargetPrefix), body);
    if (answer.ok()) {  // this endpoint answers: the per-call connections go there first
      const auto reached = std::make_pair(poll_client_.options().host, poll_client_.options().port);
      std::lock_guard lock(endpoint_mu_);
      for (size_t i = 0; i <= client_options_.alternates.size(); ++i) {
        const auto e = i == 0 ? std::make_pair(client_options_.host, client_options_.port)
                              : client_options_.alternates[i - 1];
        if (e == reached) endpoint_ = i;
      }
    }
    if (!answer.ok() || !answer->is_object()) {
      {
        std::lock_guard lock(mu_);
        if (stop_) return;
      }
      fmt::print(stderr, "paddock: agent: polling for assignments: {}\n",
                 answer.ok() ? std::string("not an object") : answer.status().ToString());
      const Status failure = answer.ok() ? OkStatus() : answer.status();
      const bool revoked =
          IsError(failure, aws::Error::kUnrecognizedClient) || failure.code() == StatusCode::kPermissionDenied;
      refused = revoked ? refused + 1 : 0;
      if (refused >= std::max(1, options_.revoked_after)) {
        std::vector<std::function<void()>> wakes;
        {
          std::lock_guard lock(mu_);
          revoked_ = true;
          latest_.emplace();  // nothing is assigned to a revoked agent
          version_ = "revoked";
          for (const auto& [id, w] : watchers_) wakes.push_back(w);
        }
        cv_.notify_all();
        for (const auto& w : wakes) w();
        fmt::print(stderr, "paddock: agent: the control plane no longer accepts this instance's credential "
                           "(deregistered, or its account deleted): stopping its tasks\n");
        return;
      }
      Pause(options_.retry_pause);
      continue;
    }
    refused = 0;
    const json::object& o = answer->get_object();
    std::vector<protocol::LaunchSpec> specs;
    bool bad = false;
    if (auto* tasks = o.if_contains("tasks"); tasks && tasks->is_array()) {
      for (const auto& t : tasks->get_array()) {
        auto spec = t.is_object() ? DecodeLaunchSpec(t.get_object()) : StatusOr<protocol::LaunchSpec>(DataLoss("task"));
        if (!spec.ok()) {
          bad = true;
          break;
        }
        specs.push_back(std::move(*spec));
      }
    }
    if (bad) {
      fmt::print(stderr, "paddock: agent: an assignment could not be read\n");
      Pause(options_.retry_pause);
      continue;
    }
    std::string version;
    if (auto* v = o.if_contains("version"); v && v->is_string()) version = v->get_string();
    const bool busy = o.if_contains("busy") && o.at("busy").is_bool() && o.at("busy").get_bool();
    std::vector<std::function<void()>> wakes;
    {
      std::lock_guard lock(mu_);
      if (auto* n = o.if_contains("networkIdentity"); n && n->is_string()) network_identity_ = n->get_string();
      answered_sent_ = sent;
      const json::value* fence = o.if_contains("fenceAfterMillis");
      fence_after_ = std::chrono::milliseconds(fence && fence->is_int64() ? fence->get_int64() : 0);
      if (fenced_) {  // the answer stands again: wake the agent to act on it
        fenced_ = false;
        version_ = "";
        fmt::print(stderr, "paddock: agent: the control plane answers again: its assignments stand\n");
      }
      // The agent's own reports change lastStatus without changing the version: keep the freshest.
      latest_ = std::move(specs);
      if (version != version_) {
        version_ = version;
        for (const auto& [id, w] : watchers_) wakes.push_back(w);
      }
    }
    cv_.notify_all();
    for (const auto& w : wakes) w();
    if (busy) Pause(options_.busy_pause);
  }
}

StatusOr<std::vector<protocol::LaunchSpec>> RemoteControl::Assignments(std::string_view agent_id) {
  if (agent_id != instance_arn_)
    return InvalidArgument(fmt::format("this control serves agent {}, not {}", instance_arn_, agent_id));
  std::lock_guard lock(mu_);
  if (!latest_) return Unavailable("no answer from the control plane yet");
  if (FenceDue()) return std::vector<protocol::LaunchSpec>();
  return *latest_;
}

bool RemoteControl::FenceDue() {
  if (fence_after_ <= std::chrono::milliseconds::zero() || revoked_) return false;
  const auto silent = SteadyNow() - answered_sent_;
  if (silent <= fence_after_) return false;
  if (!fenced_)
    fmt::print(stderr,
               "paddock: agent: no answer from the control plane for {} ms (fence time {} ms): stopping this "
               "instance's tasks before the control plane may count it lost and reuse their addresses\n",
               std::chrono::duration_cast<std::chrono::milliseconds>(silent).count(), fence_after_.count());
  fenced_ = true;
  return true;
}

bool RemoteControl::Fenced() {
  std::lock_guard lock(mu_);
  return FenceDue();
}

Status RemoteControl::Report(std::string_view agent_id, std::string_view task_arn,
                             const protocol::TaskStateChange& change, TimePoint) {
  if (agent_id != instance_arn_)
    return InvalidArgument(fmt::format("this control serves agent {}, not {}", instance_arn_, agent_id));
  json::object body{{"cluster", cluster_}, {"containerInstance", instance_arn_}, {"task", task_arn}};
  EncodeStateChange(change, body);
  const std::string target = fmt::format("{}.ReportTaskState", kAgentTargetPrefix);
  Status last;
  for (int attempt = 0; attempt < std::max(1, options_.report_attempts); ++attempt) {
    if (attempt > 0) Pause(options_.retry_pause);
    StatusOr<json::value> answer = [&] {
      std::lock_guard lock(report_mu_);
      return report_client_.Call(target, body);
    }();
    if (answer.ok()) return OkStatus();
    last = answer.status();
    if (last.code() != StatusCode::kUnavailable) return last;  // an answer, not a lost call
    std::lock_guard lock(mu_);
    if (stop_) break;
  }
  return last;
}

StatusOr<std::string> RemoteControl::DescribeTask(const protocol::LaunchSpec& spec, bool with_tags) {
  json::object body{{"cluster", spec.cluster.empty() ? cluster_ : spec.cluster}, {"tasks", json::array{spec.task_arn}}};
  if (with_tags) body["include"] = json::array{"TAGS"};
  StatusOr<json::value> answer = [&] {
    std::lock_guard lock(describe_mu_);
    return describe_client_.Call("AmazonEC2ContainerServiceV20141113.DescribeTasks", body);
  }();
  if (!answer.ok()) return answer.status();
  const json::value* tasks = answer->is_object() ? answer->get_object().if_contains("tasks") : nullptr;
  if (!tasks || !tasks->is_array() || tasks->get_array().empty() || !tasks->get_array()[0].is_object())
    return NotFound(fmt::format("task {} not found", spec.task_arn));
  return json::serialize(tasks->get_array()[0]);
}

StatusOr<vpc::VpcPolicy> RemoteControl::NetworkPolicy(std::string_view agent_id, const Scope&) {
  if (agent_id != instance_arn_)
    return InvalidArgument(fmt::format("this control serves agent {}, not {}", instance_arn_, agent_id));
  json::object body{{"cluster", cluster_}, {"containerInstance", instance_arn_}};
  StatusOr<json::value> answer = [&] {
    std::lock_guard lock(policy_mu_);
    return policy_client_.Call(fmt::format("{}.GetNetworkPolicy", kAgentTargetPrefix), body);
  }();
  if (!answer.ok()) return answer.status();
  const json::value* policy = answer->is_object() ? answer->get_object().if_contains("policy") : nullptr;
  if (policy == nullptr || !policy->is_object()) return DataLoss("GetNetworkPolicy: the answer has no policy");
  return DecodeVpcPolicy(policy->get_object());
}

StatusOr<ImageAccess> RemoteControl::GetImageAccess(const std::string& reference) {
  json::object body{{"cluster", cluster_}, {"containerInstance", instance_arn_}, {"image", reference}};
  StatusOr<json::value> answer = [&] {
    std::lock_guard lock(image_mu_);
    return image_client_.Call(fmt::format("{}.GetImageAccess", kAgentTargetPrefix), body);
  }();
  if (!answer.ok() && IsError(answer.status(), aws::Error::kUnknownOperation)) return ImageAccess{};
  if (!answer.ok()) return answer.status();
  if (!answer->is_object()) return DataLoss("GetImageAccess: the answer is not an object");
  const json::object& o = answer->get_object();
  auto str = [&](std::string_view key) {
    const json::value* v = o.if_contains(key);
    return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
  };
  ImageAccess access;
  const json::value* found = o.if_contains("found");
  access.found = found != nullptr && found->is_bool() && found->get_bool();
  if (const json::value* near = o.if_contains("nearImages"); near != nullptr && near->is_array())
    for (const auto& n : near->get_array())
      if (n.is_string()) access.near_images.emplace_back(n.get_string());
  if (!access.found) return access;
  access.registry = str("registry");
  access.repository = str("repository");
  access.digest = str("imageDigest");
  access.token = str("token");
  if (access.registry.empty() || access.repository.empty() || access.digest.empty())
    return DataLoss("GetImageAccess: the answer lacks registry, repository or imageDigest");
  // A registry listening on every address is reached where the server is.
  const size_t colon = access.registry.rfind(':');
  const std::string host = access.registry.substr(0, colon == std::string::npos ? 0 : colon);
  if (host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]") {
    const std::string endpoint = endpoint_host_.find(':') != std::string::npos && !endpoint_host_.starts_with('[')
                                     ? "[" + endpoint_host_ + "]"
                                     : endpoint_host_;
    access.registry = endpoint + access.registry.substr(colon == std::string::npos ? access.registry.size() : colon);
  }
  return access;
}

StatusOr<json::object> RemoteControl::CallAboutTask(std::mutex& mu, JsonClient& client, std::string_view action,
                                                    std::string_view agent_id, const protocol::LaunchSpec& spec,
                                                    json::object body) {
  if (agent_id != instance_arn_)
    return InvalidArgument(fmt::format("this control serves agent {}, not {}", instance_arn_, agent_id));
  body["cluster"] = cluster_;
  body["containerInstance"] = instance_arn_;
  body["task"] = spec.task_arn;
  StatusOr<json::value> answer = [&] {
    std::lock_guard lock(mu);
    return client.Call(fmt::format("{}.{}", kAgentTargetPrefix, action), body);
  }();
  if (!answer.ok()) return answer.status();
  if (!answer->is_object()) return DataLoss(fmt::format("{}: the answer is not an object", action));
  return std::move(answer->get_object());
}

namespace {

// The object `key` of `action`'s answer (DataLoss when it has none).
StatusOr<const json::object*> AnswerMember(const json::object& answer, std::string_view key, std::string_view action) {
  const json::value* v = answer.if_contains(key);
  if (v == nullptr || !v->is_object()) return DataLoss(fmt::format("{}: the answer has no {}", action, key));
  return &v->get_object();
}

}  // namespace

StatusOr<metadata::RoleCredentials> RemoteControl::TaskRoleCredentials(std::string_view agent_id,
                                                                       const protocol::LaunchSpec& spec) {
  ASSIGN_OR_RETURN(json::object answer,
                   CallAboutTask(credentials_mu_, credentials_client_, "GetTaskCredentials", agent_id, spec));
  ASSIGN_OR_RETURN(const json::object* c, AnswerMember(answer, "credentials", "GetTaskCredentials"));
  return DecodeRoleCredentials(*c);
}

StatusOr<protocol::ExecutionResources> RemoteControl::PrepareExecutionResources(std::string_view agent_id,
                                                                              const protocol::LaunchSpec& spec) {
  ASSIGN_OR_RETURN(json::object answer,
                   CallAboutTask(resources_mu_, resources_client_, "GetExecutionResources", agent_id, spec));
  ASSIGN_OR_RETURN(const json::object* r, AnswerMember(answer, "resources", "GetExecutionResources"));
  return protocol::DecodeExecutionResources(*r);
}

StatusOr<protocol::LogsAnswer> RemoteControl::ShipLogs(std::string_view agent_id, const protocol::LaunchSpec& spec,
                                                       const protocol::LogsCall& call) {
  json::object body;
  protocol::EncodeLogsCall(call, body);
  ASSIGN_OR_RETURN(json::object answer, CallAboutTask(logs_mu_, logs_client_, "ShipLogs", agent_id, spec, std::move(body)));
  return protocol::DecodeLogsAnswer(answer);
}

StatusOr<protocol::DrainAnswer> RemoteControl::AwaitDrain(std::string_view agent_id, const protocol::LaunchSpec& spec,
                                                          std::chrono::milliseconds max_wait, std::stop_token stop) {
  if (agent_id != instance_arn_)
    return InvalidArgument(fmt::format("this control serves agent {}, not {}", instance_arn_, agent_id));
  const auto wait = std::chrono::duration_cast<std::chrono::seconds>(
      std::clamp<std::chrono::milliseconds>(max_wait, std::chrono::milliseconds(0), protocol::kMaxDrainAsk));
  ClientOptions options = PerCallOptions();
  options.timeout = std::max<std::chrono::milliseconds>(options.timeout, wait + std::chrono::seconds(10));
  JsonClient client(options);
  std::stop_callback cancel(stop, [&client] { client.Cancel(); });  // at once if already requested
  json::object body{{"cluster", cluster_}, {"containerInstance", instance_arn_}, {"task", spec.task_arn},
                    {"waitSeconds", wait.count()}};
  StatusOr<json::value> answer = client.Call(fmt::format("{}.AwaitDrain", kAgentTargetPrefix), body);
  if (stop.stop_requested()) return Aborted("the agent stopped waiting");
  if (!answer.ok() && IsError(answer.status(), aws::Error::kUnknownOperation)) return protocol::DrainAnswer{};
  if (!answer.ok()) return answer.status();
  if (!answer->is_object()) return DataLoss("AwaitDrain: the answer is not an object");
  ASSIGN_OR_RETURN(const json::object* drain, AnswerMember(answer->get_object(), "drain", "AwaitDrain"));
  return protocol::DecodeDrainAnswer(*drain);
}

ClientOptions RemoteControl::PerCallOptions() {
  std::vector<std::pair<std::string, uint16_t>> endpoints{{client_options_.host, client_options_.port}};
  for (const auto& e : client_options_.alternates) endpoints.push_back(e);
  size_t first = 0;
  {
    std::lock_guard lock(endpoint_mu_);
    first = endpoint_;
  }
  ClientOptions options = client_options_;
  std::tie(options.host, options.port) = endpoints[first % endpoints.size()];
  options.alternates.clear();
  for (size_t i = 1; i < endpoints.size(); ++i) options.alternates.push_back(endpoints[(first + i) % endpoints.size()]);
  return options;
}

std::string RemoteControl::NetworkIdentity() {
  std::lock_guard lock(mu_);
  return network_identity_;
}

uint64_t RemoteControl::Watch(std::string_view, std::function<void()> wake) {
  std::lock_guard lock(mu_);
  uint64_t id = next_watch_++;
  watchers_[id] = std::move(wake);
  return id;
}

void RemoteControl::Unwatch(uint64_t handle) {
  std::lock_guard lock(mu_);
  watchers_.erase(handle);
}

}  // namespace paddock::agent::remote
