#include "ecs/api/authorization.h"

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "common/json_fields.h"
#include "ecs/common/resource_arn.h"

namespace paddock::ecs::api {
namespace json = boost::json;
using json_fields::StrView;

namespace {

// "arn:aws:ecs:<region>:<account>:" + each of `rest`. Built by appending into one reserved
// string: every authorized ECS call builds one or two of these, and fmt's format-string parsing
// showed in the authorized request's profile.
std::string ScopeArn(const Scope& scope, std::initializer_list<std::string_view> rest) {
  constexpr std::string_view kHead = "arn:aws:ecs:";
  size_t size = kHead.size() + scope.region.str().size() + 1 + scope.account.str().size() + 1;
  for (std::string_view r : rest) size += r.size();
  std::string out;
  out.reserve(size);
  out.append(kHead).append(scope.region.str()).append(1, ':').append(scope.account.str()).append(1, ':');
  for (std::string_view r : rest) out.append(r);
  return out;
}

// A cluster as the caller named it (name, ARN, or absent: "default").
std::string ClusterOf(const Scope& scope, const json::object& input) {
  std::string_view c = StrView(input, "cluster");
  if (c.starts_with("arn:")) return std::string(c);
  return ClusterArn(scope, c.empty() ? "default" : c);
}

std::string ClusterName(std::string_view cluster_arn) {
  size_t slash = cluster_arn.rfind('/');
  return std::string(slash == std::string_view::npos ? cluster_arn : cluster_arn.substr(slash + 1));
}

// "family", "family:3" or an ARN -> the ARN IAM sees. A bare family stays bare
// (".../task-definition/web"), which a "web:*" resource does not match, as on AWS.
std::string TaskDefinitionOf(const Scope& scope, std::string_view ref) {
  if (ref.starts_with("arn:")) return std::string(ref);
  return ScopeArn(scope, {"task-definition/", ref});
}

// A service or task named by id/name or ARN, in the call's cluster.
std::string InCluster(const Scope& scope, std::string_view kind, std::string_view ref, const std::string& cluster_arn) {
  if (ref.starts_with("arn:")) return std::string(ref);
  return ScopeArn(scope, {kind, "/", ClusterName(cluster_arn), "/", ref});
}

// aws:RequestTag/<key> and aws:TagKeys of a create's or TagResource's `tags`.
void AddRequestTags(const json::object& input, aws::AuthRequest& q) {
  const json::value* tags = input.if_contains("tags");
  if (tags == nullptr || !tags->is_array()) return;
  for (const json::value& t : tags->get_array()) {
    if (!t.is_object()) continue;
    std::string_view key = StrView(t.get_object(), "key");
    q.context.emplace_back(fmt::format("aws:RequestTag/{}", key), std::string(StrView(t.get_object(), "value")));
    q.context.emplace_back("aws:TagKeys", std::string(key));
  }
}

bool HasTags(const json::object& input) {
  const json::value* tags = input.if_contains("tags");
  return tags != nullptr && tags->is_array() && !tags->get_array().empty();
}

void PassRole(std::string_view role, std::vector<aws::AuthRequest>& out) {
  if (role.empty()) return;
  out.push_back({"iam:PassRole", std::string(role), {{"iam:PassedToService", "ecs-tasks.amazonaws.com"}}});
}

}  // namespace

taskdef::LaunchCheck PassRoleCheck(const aws::CallContext& ctx) {
  if (ctx.authorizer == nullptr || !ctx.principal.agent_of.empty()) return {};
  return [call = ctx](const taskdef::LaunchView& view) {
    std::vector<aws::AuthRequest> questions;
    PassRole(view.task_role_arn, questions);
    PassRole(view.execution_role_arn, questions);
    for (const aws::AuthRequest& q : questions) RETURN_IF_ERROR(call.authorizer->Authorize(call, q));
    return OkStatus();
  };
}

std::vector<aws::AuthRequest> EcsAuthorization(const aws::CallContext& ctx, const json::object& input) {
  const Scope& scope = ctx.scope;
  const std::string& a = ctx.action;
  aws::AuthRequest q{"ecs:" + a, "*", {}};
  std::vector<aws::AuthRequest> out;
  // ECS sends ecs:cluster with the calls that act in a cluster — but not with TagResource,
  // UntagResource or ListTagsForResource, whose resource may be the cluster itself.
  const bool in_cluster = input.contains("cluster") || a == "RunTask" || a == "StartTask" || a == "StopTask" ||
                          a == "CreateService" || a == "UpdateService" || a == "DeleteService" ||
                          a == "DescribeServices" || a == "DescribeTasks" || a == "ListTasks" || a == "ListServices";
  // The cluster's ARN, built only for the calls that name it (not for every read).
  std::string cluster_arn;
  auto cluster = [&]() -> const std::string& {
    if (cluster_arn.empty()) cluster_arn = ClusterOf(scope, input);
    return cluster_arn;
  };
  if (in_cluster) q.context.emplace_back("ecs:cluster", cluster());

  if (a == "DescribeClusters") {
    // One question per cluster named (none: "default"), so a policy can scope it by cluster ARN
    // and aws:ResourceTag; one denied cluster denies the call (Paddock's choice: how AWS answers a
    // partly allowed DescribeClusters is not documented).
    const json::value* clusters = input.if_contains("clusters");
    if (clusters != nullptr && clusters->is_array() && !clusters->get_array().empty()) {
      for (const json::value& c : clusters->get_array()) {
        if (!c.is_string()) continue;
        std::string_view ref = c.get_string();
        out.push_back({q.action, ref.starts_with("arn:") ? std::string(ref) : ClusterArn(scope, ref), {}});
      }
      return out;
    }
    q.resource = ClusterArn(scope, "default");
  } else if (a == "CreateCluster") {
    q.resource = ClusterArn(scope, StrView(input, "clusterName").empty() ? "default" : StrView(input, "clusterName"));
  } else if (a == "DeleteCluster" || a == "UpdateCluster" || a == "UpdateClusterSettings" ||
             a == "PutClusterCapacityProviders") {
    q.resource = cluster();
  } else if (a == "RunTask" || a == "StartTask") {
    q.resource = TaskDefinitionOf(scope, StrView(input, "taskDefinition"));
  } else if (a == "StopTask") {
    q.resource = InCluster(scope, "task", StrView(input, "task"), cluster());
  } else if (a == "CreateService") {
    q.resource = InCluster(scope, "service", StrView(input, "serviceName"), cluster());
    if (!StrView(input, "taskDefinition").empty())
      q.context.emplace_back("ecs:task-definition", TaskDefinitionOf(scope, StrView(input, "taskDefinition")));
  } else if (a == "UpdateService" || a == "DeleteService") {
    q.resource = InCluster(scope, "service", StrView(input, "service"), cluster());
    if (!StrView(input, "taskDefinition").empty())
      q.context.emplace_back("ecs:task-definition", TaskDefinitionOf(scope, StrView(input, "taskDefinition")));
  } else if (a == "TagResource" || a == "UntagResource" || a == "ListTagsForResource") {
    q.resource = std::string(StrView(input, "resourceArn"));
  }

  if (a == "TagResource") AddRequestTags(input, q);
  if (a == "UntagResource") {
    if (const json::value* keys = input.if_contains("tagKeys"); keys != nullptr && keys->is_array()) {
      for (const json::value& k : keys->get_array())
        if (k.is_string()) q.context.emplace_back("aws:TagKeys", std::string(k.get_string()));
    }
  }
  const bool creates = a == "CreateCluster" || a == "CreateService" || a == "CreateTaskSet" ||
                       a == "RegisterContainerInstance" || a == "RegisterTaskDefinition" || a == "RunTask" ||
                       a == "StartTask" || a == "CreateCapacityProvider";
  if (creates) AddRequestTags(input, q);
  out.push_back(q);
  if (creates && HasTags(input)) {
    // Tag-on-create: the tags are authorized as ecs:TagResource too (ECS developer guide,
    // "Grant permission to tag resources on creation").
    aws::AuthRequest tag{"ecs:TagResource", q.resource, {{"ecs:CreateAction", a}}};
    AddRequestTags(input, tag);
    out.push_back(std::move(tag));
  }
  if (a == "RegisterTaskDefinition") {
    PassRole(StrView(input, "taskRoleArn"), out);
    PassRole(StrView(input, "executionRoleArn"), out);
  }
  if (a == "RunTask" || a == "StartTask") {
    if (const json::value* o = input.if_contains("overrides"); o != nullptr && o->is_object()) {
      PassRole(StrView(o->get_object(), "taskRoleArn"), out);
      PassRole(StrView(o->get_object(), "executionRoleArn"), out);
    }
  }
  return out;
}

}  // namespace paddock::ecs::api
