#include "deploy/verify.h"

#include <boost/json.hpp>
#include <fmt/format.h>

#include "common/encoding.h"

namespace paddock::deploy {
namespace json = boost::json;

namespace {

Check ClusterCheck(Aws& aws, const ControllerSettings& s, const VerifyOptions& o) {
  Check c{"cluster", false, ""};
  StatusOr<json::value> v = aws.Call(AwsService::kEcs, "DescribeClusters", {{"clusters", json::array{s.cluster}}});
  if (!v.ok()) {
    c.detail = fmt::format("DescribeClusters failed: {}", v.status().message());
    return c;
  }
  const json::value* cs = v->as_object().if_contains("clusters");
  if (cs && cs->is_array() && !cs->as_array().empty()) {
    const json::object& cl = cs->as_array()[0].as_object();
    const json::value* status = cl.if_contains("status");
    std::string st = status && status->is_string() ? std::string(status->as_string()) : "";
    c.ok = st == "ACTIVE";
    c.detail = c.ok ? fmt::format("{} is ACTIVE", s.cluster) : fmt::format("{} is {}: it must be ACTIVE", s.cluster, st);
    return c;
  }
  c.ok = o.create_cluster;
  c.detail = o.create_cluster ? fmt::format("{} does not exist yet: it is made with the first deployment", s.cluster)
                              : fmt::format("{} does not exist: create it (aws ecs create-cluster --cluster-name {})",
                                            s.cluster, s.cluster);
  return c;
}

Check IdentityCheck(QueryAws& q) {
  Check c{"identity", false, ""};
  StatusOr<std::string> v = q.Query("sts", {{"Action", "GetCallerIdentity"}, {"Version", "2011-06-15"}});
  if (!v.ok()) {
    c.detail = fmt::format("sts:GetCallerIdentity failed: {}", v.status().message());
    return c;
  }
  c.ok = true;
  c.detail = fmt::format("calling as {} (account {})", XmlText(*v, "Arn"), XmlText(*v, "Account"));
  return c;
}

Check Ec2Check(QueryAws& q, std::string name, std::string_view action, std::string_view param,
               const std::vector<std::string>& ids, std::string_view flag) {
  Check c{std::move(name), false, ""};
  if (ids.empty()) {
    c.detail = fmt::format("none configured: tasks need them (give the controller {})", flag);
    return c;
  }
  std::vector<std::pair<std::string, std::string>> params = {{"Action", std::string(action)}, {"Version", "2016-11-15"}};
  for (size_t i = 0; i < ids.size(); ++i) params.emplace_back(fmt::format("{}.{}", param, i + 1), ids[i]);
  StatusOr<std::string> v = q.Query("ec2", params);
  if (!v.ok()) {
    c.detail = v.status().message();
    return c;
  }
  c.ok = true;
  std::string list;
  for (const std::string& id : ids) list += (list.empty() ? "" : ", ") + id;
  c.detail = fmt::format("{} exist", list);
  return c;
}

Check RoleCheck(QueryAws& q, std::string name, const std::string& arn, bool required) {
  Check c{std::move(name), false, ""};
  if (arn.empty()) {
    c.ok = !required;
    c.detail = required ? "none configured: Fargate tasks need one for awslogs and secrets (--execution-role-arn)"
                        : "none configured: tasks get no AWS credentials";
    return c;
  }
  size_t slash = arn.rfind('/');
  std::string role = slash == std::string::npos ? arn : arn.substr(slash + 1);
  StatusOr<std::string> v = q.Query("iam", {{"Action", "GetRole"}, {"RoleName", role}, {"Version", "2010-05-08"}});
  if (!v.ok()) {
    c.detail = fmt::format("{}: {}", arn, v.status().message());
    return c;
  }
  std::string trust = PercentDecode(XmlText(*v, "AssumeRolePolicyDocument"));
  c.ok = TrustsEcsTasks(trust);
  c.detail = c.ok ? fmt::format("{} exists and trusts ecs-tasks.amazonaws.com", arn)
                  : fmt::format("{}'s trust policy does not admit ecs-tasks.amazonaws.com: ECS cannot pass it to tasks", arn);
  return c;
}

}  // namespace

std::vector<Check> Verify(Aws& aws, QueryAws& query, EdgeView* edge, const ControllerSettings& s,
                          const VerifyOptions& o) {
  std::vector<Check> out;
  out.push_back(ClusterCheck(aws, s, o));
  out.push_back(IdentityCheck(query));
  out.push_back(Ec2Check(query, "subnets", "DescribeSubnets", "SubnetId", s.subnets, "--subnet"));
  if (!s.security_groups.empty()) {
    out.push_back(Ec2Check(query, "security groups", "DescribeSecurityGroups", "GroupId", s.security_groups,
                           "--security-group"));
  }
  out.push_back(RoleCheck(query, "execution role", s.execution_role_arn, !s.log_group.empty()));
  if (s.task_role_pattern.empty()) {
    out.push_back(RoleCheck(query, "task role", s.task_role_arn, false));
  } else {
    // Each project's own role, checked (or made) when the project deploys: here, that the
    // controller may read roles at all, so a deployment's check cannot be refused.
    Check c{"task role", false, ""};
    const std::string example = TaskRoleArn(s, "example");
    StatusOr<std::string> v = query.Query(
        "iam", {{"Action", "GetRole"}, {"RoleName", example.substr(example.rfind('/') + 1)}, {"Version", "2010-05-08"}});
    c.ok = v.ok() || IsError(v.status(), Error::kNotFound);
    c.detail = !c.ok ? fmt::format("each project's own ({}), but reading one fails: {}", s.task_role_pattern,
                                   v.status().message())
               : o.create_task_roles
                   ? fmt::format("each project's own ({}): made, trusting ecs-tasks.amazonaws.com, when it first deploys",
                                 s.task_role_pattern)
                   : fmt::format("each project's own ({}): a deployment fails when its project's role is missing",
                                 s.task_role_pattern);
    out.push_back(std::move(c));
  }
  Check e{"edge", false, ""};
  if (!edge) {
    e.ok = true;
    e.detail = "none configured: a deployment is Healthy once its tasks run (--edge-api makes the edge's verdict count)";
  } else if (StatusOr<std::map<std::string, std::string>> servers = edge->Servers(); servers.ok()) {
    e.ok = true;
    e.detail = fmt::format("reachable; it knows {} server(s)", servers->size());
  } else {
    e.detail = fmt::format("its API cannot be read: {}", servers.status().message());
  }
  out.push_back(std::move(e));
  return out;
}

}  // namespace paddock::deploy
