"""Writes the golden cases of issue 10's ECS operations (python3 gen_account_ops.py <testdata dir>):
account settings, capacity providers, task protection and ContinueServiceDeployment.

The expected answers are built here from the contracts (docs/contracts/account-setting.md,
capacity-provider.md, task.md, service.md), not copied from Paddock's output. The golden fixture's
caller is the account's root user; its clock stands at 1780000000 s.
"""
import json, os, sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
ACCT = "123456789012"; R = "us-east-1"; ROOT = f"arn:aws:iam::{ACCT}:root"; OTHER = "210987654321"
ALICE = f"arn:aws:iam::{ACCT}:user/alice"
NOW = 1780000000.0

CASES = {}


def case(action, name, request, response, setup=None):
    CASES[(action, name)] = (setup, request, response)


def err(t, m): return {"__type": t, "message": m}
def carn(n): return f"arn:aws:ecs:{R}:{ACCT}:cluster/{n}"
def cparn(n, acct=ACCT): return f"arn:aws:ecs:{R}:{acct}:capacity-provider/{n}"


# ---------- Account settings ----------

def setting(name, value, principal=ROOT, type_="user"):
    return {"name": name, "value": value, "principalArn": principal, "type": type_}


def put_default(name, value): return {"action": "PutAccountSettingDefault", "request": {"name": name, "value": value}}


case("PutAccountSetting", "for_the_caller", {"name": "containerInsights", "value": "enhanced"},
     {"setting": setting("containerInsights", "enhanced")})
case("PutAccountSetting", "for_a_user", {"name": "awsvpcTrunking", "value": "enabled", "principalArn": ALICE},
     {"setting": setting("awsvpcTrunking", "enabled", ALICE)})
case("PutAccountSetting", "invalid_value", {"name": "containerInsights", "value": "ENABLED"},
     err("InvalidParameterException", "Invalid setting 'value'"))
case("PutAccountSetting", "long_arn_cannot_be_disabled", {"name": "taskLongArnFormat", "value": "disabled"},
     err("InvalidParameterException", "You can no longer disable Long Arn settings."))
case("PutAccountSetting", "retirement_wait_period", {"name": "fargateTaskRetirementWaitPeriod", "value": "14"},
     {"setting": setting("fargateTaskRetirementWaitPeriod", "14")})
case("PutAccountSetting", "retirement_wait_period_root_only",
     {"name": "fargateTaskRetirementWaitPeriod", "value": "0", "principalArn": ALICE},
     err("InvalidParameterException", "The fargateTaskRetirementWaitPeriod setting can only be set for the root user."))
case("PutAccountSetting", "guard_duty_is_read_only", {"name": "guardDutyActivate", "value": "on"},
     err("InvalidParameterException", "guardDutyActivate is managed by Amazon GuardDuty and is read-only."))
other_root = f"arn:aws:iam::{OTHER}:root"
case("PutAccountSetting", "other_account_principal", {"name": "containerInsights", "value": "enabled", "principalArn": other_root},
     err("AccessDeniedException", f"User: {ROOT} is not authorized to perform: ecs:PutAccountSetting on resource: {other_root} "
         "because no identity-based policy allows the ecs:PutAccountSetting action"))
case("PutAccountSetting", "malformed_principal", {"name": "containerInsights", "value": "enabled", "principalArn": "alice"},
     err("InvalidParameterException",
         "The principal ARN 'alice' is not valid. Specify the ARN of a user, a role or the root user of your account."))
case("PutAccountSetting", "unknown_name", {"name": "dualStackIPv6", "value": "enabled"}, None)  # model enum: front's text

case("PutAccountSettingDefault", "log_driver_mode", {"name": "defaultLogDriverMode", "value": "blocking"},
     {"setting": setting("defaultLogDriverMode", "blocking")})
case("PutAccountSettingDefault", "tag_authorization_on_off", {"name": "tagResourceAuthorization", "value": "enabled"},
     err("InvalidParameterException", "Invalid setting 'value'"))
case("PutAccountSettingDefault", "long_arn_enabled", {"name": "serviceLongArnFormat", "value": "enabled"},
     {"setting": setting("serviceLongArnFormat", "enabled")})

case("ListAccountSettings", "none_set", {}, {"settings": []})
case("ListAccountSettings", "own_settings", {},
     {"settings": [setting("awsvpcTrunking", "enabled"), setting("containerInsights", "enabled")]},
     setup=[put_default("containerInsights", "enabled"), put_default("awsvpcTrunking", "enabled")])
case("ListAccountSettings", "effective_by_name", {"effectiveSettings": True, "name": "containerInsights"},
     {"settings": [setting("containerInsights", "enhanced")]}, setup=[put_default("containerInsights", "enhanced")])
case("ListAccountSettings", "effective_for_a_user_falls_back_to_root",
     {"effectiveSettings": True, "name": "awsvpcTrunking", "principalArn": ALICE},
     {"settings": [setting("awsvpcTrunking", "enabled")]}, setup=[put_default("awsvpcTrunking", "enabled")])
case("ListAccountSettings", "effective_default_one_name",
     {"effectiveSettings": True, "name": "taskLongArnFormat", "maxResults": 1},
     {"settings": [setting("taskLongArnFormat", "enabled")]})
case("ListAccountSettings", "guard_duty_is_aws_managed", {"effectiveSettings": True, "name": "guardDutyActivate"},
     {"settings": [setting("guardDutyActivate", "off", type_="aws_managed")]})
case("ListAccountSettings", "value_filter", {"effectiveSettings": True, "name": "containerInsights", "value": "enabled"},
     {"settings": []})
case("ListAccountSettings", "value_needs_name", {"value": "enabled"},
     err("InvalidParameterException", "The value parameter can only be used together with the name parameter."))
case("ListAccountSettings", "max_results_bound", {"maxResults": 11},
     err("InvalidParameterException", "maxResults must be between 1 and 10."))

case("DeleteAccountSetting", "removes_the_value", {"name": "containerInsights"},
     {"setting": setting("containerInsights", "enhanced")}, setup=[put_default("containerInsights", "enhanced")])
case("DeleteAccountSetting", "nothing_set_answers_what_applies", {"name": "containerInsights", "principalArn": ALICE},
     {"setting": setting("containerInsights", "enabled")}, setup=[put_default("containerInsights", "enabled")])

# The account setting is a new cluster's containerInsights default.
case("CreateCluster", "container_insights_from_the_account_setting", {"clusterName": "observed"},
     {"cluster": {"clusterArn": carn("observed"), "clusterName": "observed", "status": "ACTIVE",
                  "registeredContainerInstancesCount": 0, "runningTasksCount": 0, "pendingTasksCount": 0,
                  "activeServicesCount": 0, "statistics": [], "tags": [],
                  "settings": [{"name": "containerInsights", "value": "enhanced"}],
                  "capacityProviders": [], "defaultCapacityProviderStrategy": []}},
     setup=[put_default("containerInsights", "enhanced")])

# ---------- Capacity providers ----------

ASG = f"arn:aws:autoscaling:{R}:{ACCT}:autoScalingGroup:57ffcb94-11f0-4d6d-bf60-3bac5example:autoScalingGroupName/MyASG"


def asg_provider(arn=ASG, scaling="DISABLED", target=100, min_step=1, max_step=10000, warmup=300, protection="DISABLED",
                 draining="ENABLED"):
    return {"autoScalingGroupArn": arn,
            "managedScaling": {"status": scaling, "targetCapacity": target, "minimumScalingStepSize": min_step,
                               "maximumScalingStepSize": max_step, "instanceWarmupPeriod": warmup},
            "managedTerminationProtection": protection, "managedDraining": draining}


def provider(name, asg=None, status="ACTIVE", tags=None, update=None, reason=None):
    p = {"capacityProviderArn": cparn(name), "name": name, "status": status}
    if asg is not None: p["autoScalingGroupProvider"] = asg
    if update: p["updateStatus"] = update
    if reason: p["updateStatusReason"] = reason
    if tags is not None: p["tags"] = tags
    p["type"] = name if name in ("FARGATE", "FARGATE_SPOT") else "EC2_AUTOSCALING"
    return p


def create_cp(name, asg=ASG, **extra):
    return {"action": "CreateCapacityProvider",
            "request": dict({"name": name, "autoScalingGroupProvider": {"autoScalingGroupArn": asg}}, **extra)}


TAGS = [{"key": "team", "value": "core"}]
case("CreateCapacityProvider", "asg_defaults",
     {"name": "ec2-fleet", "autoScalingGroupProvider": {"autoScalingGroupArn": ASG}, "tags": TAGS},
     {"capacityProvider": provider("ec2-fleet", asg_provider(), tags=TAGS)})
case("CreateCapacityProvider", "managed_scaling_given",
     {"name": "scaled", "autoScalingGroupProvider": {
         "autoScalingGroupArn": "my-asg", "managedScaling": {"status": "ENABLED", "targetCapacity": 90},
         "managedTerminationProtection": "ENABLED"}},
     {"capacityProvider": provider("scaled", asg_provider("my-asg", "ENABLED", 90, protection="ENABLED"), tags=[])})
NAME_RULE = ("is invalid. Up to 255 letters (uppercase and lowercase), numbers, underscores, and hyphens are allowed, "
             "and the name can't be prefixed with \"aws\", \"ecs\", or \"fargate\".")
for bad in ("FARGATE_X", "ecs-fleet", "AWSome"):
    case("CreateCapacityProvider", f"reserved_prefix_{bad.lower().replace('-', '_')}",
         {"name": bad, "autoScalingGroupProvider": {"autoScalingGroupArn": "g"}},
         err("InvalidParameterException", f"The capacity provider name '{bad}' {NAME_RULE}"))
case("CreateCapacityProvider", "name_exists", {"name": "ec2-fleet", "autoScalingGroupProvider": {"autoScalingGroupArn": "other"}},
     err("ClientException", "The specified capacity provider already exists. To change the configuration of an existing "
         "capacity provider, update the capacity provider."), setup=[create_cp("ec2-fleet")])
case("CreateCapacityProvider", "group_in_use", {"name": "second", "autoScalingGroupProvider": {"autoScalingGroupArn": ASG}},
     err("ClientException", "The specified Auto Scaling group ARN is already being used by another capacity provider. "
         "Specify a unique Auto Scaling group ARN and try again."), setup=[create_cp("ec2-fleet")])
case("CreateCapacityProvider", "managed_instances_unsupported",
     {"name": "mi", "cluster": "prod", "managedInstancesProvider": {
         "infrastructureRoleArn": f"arn:aws:iam::{ACCT}:role/infra",
         "instanceLaunchTemplate": {"ec2InstanceProfileArn": f"arn:aws:iam::{ACCT}:instance-profile/p",
                                    "networkConfiguration": {"subnets": ["subnet-1"]}}}},
     err("UnsupportedFeatureException", "Amazon ECS Managed Instances capacity providers are not supported by Paddock."))
case("CreateCapacityProvider", "no_provider", {"name": "empty"},
     err("InvalidParameterException", "An autoScalingGroupProvider is required to create a capacity provider."))
foreign_asg = f"arn:aws:autoscaling:{R}:{OTHER}:autoScalingGroup:u:autoScalingGroupName/theirs"
case("CreateCapacityProvider", "other_accounts_group", {"name": "theirs", "autoScalingGroupProvider": {"autoScalingGroupArn": foreign_asg}},
     err("InvalidParameterException", f"The Auto Scaling group '{foreign_asg}' must be in the account and Region of the "
         "capacity provider."))

FARGATE = provider("FARGATE"); SPOT = provider("FARGATE_SPOT")
case("DescribeCapacityProviders", "built_ins_always", {}, {"capacityProviders": [FARGATE, SPOT], "failures": []})
case("DescribeCapacityProviders", "by_name_arn_and_missing_with_tags",
     {"capacityProviders": ["ec2-fleet", cparn("FARGATE_SPOT"), "ghost"], "include": ["TAGS"]},
     {"capacityProviders": [provider("ec2-fleet", asg_provider(), tags=TAGS), provider("FARGATE_SPOT", tags=[])],
      "failures": [{"arn": cparn("ghost"), "reason": "MISSING"}]},
     setup=[create_cp("ec2-fleet", tags=TAGS)])
case("DescribeCapacityProviders", "of_a_cluster", {"cluster": "prod"},
     {"capacityProviders": [SPOT, provider("ec2-fleet", asg_provider())], "failures": []},
     setup=[create_cp("ec2-fleet"), create_cp("unused", asg="g2"),
            {"action": "CreateCluster", "request": {"clusterName": "prod", "capacityProviders": ["FARGATE_SPOT", "ec2-fleet"]}}])
case("DescribeCapacityProviders", "unknown_cluster", {"cluster": "ghost"}, err("ClusterNotFoundException", "Cluster not found."))
oarn = cparn("theirs", OTHER)
case("DescribeCapacityProviders", "other_account_arn_denied", {"capacityProviders": [oarn]},
     err("AccessDeniedException", f"User: {ROOT} is not authorized to perform: ecs:DescribeCapacityProviders on resource: "
         f"{oarn} because no resource-based policy allows the ecs:DescribeCapacityProviders action"))

case("UpdateCapacityProvider", "merges_settings",
     {"name": "ec2-fleet", "autoScalingGroupProvider": {"managedScaling": {"status": "ENABLED", "targetCapacity": 50},
                                                        "managedDraining": "DISABLED"}},
     {"capacityProvider": provider("ec2-fleet", asg_provider(scaling="ENABLED", target=50, draining="DISABLED"),
                                   update="UPDATE_COMPLETE")},
     setup=[create_cp("ec2-fleet")])
case("UpdateCapacityProvider", "reserved", {"name": "FARGATE", "autoScalingGroupProvider": {"managedDraining": "DISABLED"}},
     err("InvalidParameterException", "The FARGATE and FARGATE_SPOT capacity providers are reserved and can't be updated."))
case("UpdateCapacityProvider", "unknown", {"name": "ghost", "autoScalingGroupProvider": {"managedDraining": "DISABLED"}},
     err("ClientException", "The specified capacity provider does not exist. Specify a valid name or ARN and try again."))

case("DeleteCapacityProvider", "unassociated_is_deleted", {"capacityProvider": cparn("ec2-fleet")},
     {"capacityProvider": provider("ec2-fleet", asg_provider(), status="INACTIVE", update="DELETE_COMPLETE")},
     setup=[create_cp("ec2-fleet")])
case("DeleteCapacityProvider", "associated_fails_with_reason", {"capacityProvider": "ec2-fleet"},
     {"capacityProvider": provider(
         "ec2-fleet", asg_provider(), update="DELETE_FAILED",
         reason="The capacity provider cannot be deleted because it is associated with cluster: prod. Remove the capacity "
                "provider from the cluster and try again.")},
     setup=[create_cp("ec2-fleet"),
            {"action": "CreateCluster", "request": {"clusterName": "prod", "capacityProviders": ["ec2-fleet"]}}])
case("DeleteCapacityProvider", "reserved", {"capacityProvider": "FARGATE_SPOT"},
     err("InvalidParameterException", "The FARGATE and FARGATE_SPOT capacity providers are reserved and can't be deleted."))
case("DeleteCapacityProvider", "unknown", {"capacityProvider": "ghost"},
     err("ClientException", "The specified capacity provider does not exist. Specify a valid name or ARN and try again."))

# Clusters associate the account's providers; one cluster at a time.
case("PutClusterCapacityProviders", "asg_provider",
     {"cluster": "prod", "capacityProviders": ["ec2-fleet", "FARGATE"],
      "defaultCapacityProviderStrategy": [{"capacityProvider": "ec2-fleet", "weight": 1}]},
     {"cluster": {"clusterArn": carn("prod"), "clusterName": "prod", "status": "ACTIVE",
                  "registeredContainerInstancesCount": 0, "runningTasksCount": 0, "pendingTasksCount": 0,
                  "activeServicesCount": 0, "statistics": [], "tags": [],
                  "settings": [{"name": "containerInsights", "value": "disabled"}],
                  "capacityProviders": ["ec2-fleet", "FARGATE"],
                  "defaultCapacityProviderStrategy": [{"capacityProvider": "ec2-fleet", "weight": 1, "base": 0}]}},
     setup=[create_cp("ec2-fleet"), {"action": "CreateCluster", "request": {"clusterName": "prod"}}])
case("PutClusterCapacityProviders", "provider_of_another_cluster",
     {"cluster": "dev", "capacityProviders": ["ec2-fleet"], "defaultCapacityProviderStrategy": []},
     err("InvalidParameterException", "The capacity provider 'ec2-fleet' is already associated with cluster 'prod'. An Auto "
         "Scaling group capacity provider can be associated with one cluster only."),
     setup=[create_cp("ec2-fleet"), {"action": "CreateCluster", "request": {"clusterName": "prod", "capacityProviders": ["ec2-fleet"]}},
            {"action": "CreateCluster", "request": {"clusterName": "dev"}}])
case("PutClusterCapacityProviders", "unknown_provider",
     {"cluster": "prod", "capacityProviders": ["ghost"], "defaultCapacityProviderStrategy": []},
     err("InvalidParameterException", "The specified capacity provider 'ghost' does not exist. Specify a valid capacity "
         "provider and try again."), setup=[{"action": "CreateCluster", "request": {"clusterName": "prod"}}])

TD = {"action": "RegisterTaskDefinition",
      "request": {"family": "web", "containerDefinitions": [{"name": "app", "image": "nginx", "memory": 64}]}}
FLEET_CLUSTER = [create_cp("ec2-fleet"),
                 {"action": "CreateCluster", "request": {"clusterName": "prod", "capacityProviders": ["ec2-fleet", "FARGATE"]}},
                 TD]
MIX = ("The specified capacity provider strategy cannot contain a mix of capacity providers using Auto Scaling groups and "
       "Fargate providers. Specify one or the other and try again.")
case("RunTask", "capacity_provider_strategy_mix",
     {"cluster": "prod", "taskDefinition": "web",
      "capacityProviderStrategy": [{"capacityProvider": "ec2-fleet", "weight": 1}, {"capacityProvider": "FARGATE", "weight": 1}]},
     err("InvalidParameterException", MIX), setup=FLEET_CLUSTER)
case("CreateService", "capacity_provider_strategy_mix",
     {"cluster": "prod", "serviceName": "web", "taskDefinition": "web", "desiredCount": 1,
      "capacityProviderStrategy": [{"capacityProvider": "FARGATE", "weight": 1}, {"capacityProvider": "ec2-fleet", "weight": 1}]},
     err("InvalidParameterException", MIX), setup=FLEET_CLUSTER)
case("PutClusterCapacityProviders", "in_use_by_a_service",
     {"cluster": "prod", "capacityProviders": ["FARGATE"], "defaultCapacityProviderStrategy": []},
     err("ResourceInUseException", "The specified capacity provider is in use and cannot be removed."),
     setup=FLEET_CLUSTER + [{"action": "CreateService", "request": {
         "cluster": "prod", "serviceName": "web", "taskDefinition": "web", "desiredCount": 0,
         "capacityProviderStrategy": [{"capacityProvider": "ec2-fleet", "weight": 1}]}}])

case("TagResource", "capacity_provider", {"resourceArn": cparn("ec2-fleet"), "tags": TAGS}, {},
     setup=[create_cp("ec2-fleet")])
case("ListTagsForResource", "capacity_provider", {"resourceArn": cparn("ec2-fleet")}, {"tags": TAGS},
     setup=[create_cp("ec2-fleet", tags=TAGS)])
case("TagResource", "capacity_provider_not_found", {"resourceArn": cparn("ghost"), "tags": TAGS},
     err("ResourceNotFoundException", f"The specified resource is not found: {cparn('ghost')}"))


# ---------- Task scale-in protection ----------
# A task of a service is needed for a protected answer: the golden fixture runs no scheduler, so
# the positive cases are in tasks_test.cc (TasksTest.Protection*) and tests/test_ecs_ops.py.
TASK_ID = "0123456789abcdef0123456789abcdef"
TASK_ARN = f"arn:aws:ecs:{R}:{ACCT}:task/prod/{TASK_ID}"
PROD = [{"action": "CreateCluster", "request": {"clusterName": "prod"}}]
case("UpdateTaskProtection", "missing_task", {"cluster": "prod", "tasks": [TASK_ID], "protectionEnabled": True},
     {"protectedTasks": [], "failures": [{"arn": TASK_ARN, "reason": "MISSING"}]}, setup=PROD)
case("UpdateTaskProtection", "expires_out_of_range",
     {"cluster": "prod", "tasks": [TASK_ID], "protectionEnabled": True, "expiresInMinutes": 2881},
     err("InvalidParameterException", "expiresInMinutes must be between 1 and 2880."), setup=PROD)
case("UpdateTaskProtection", "too_many_tasks", {"cluster": "prod", "tasks": [TASK_ID] * 11, "protectionEnabled": True},
     err("InvalidParameterException", "Tasks cannot contain more than 10 elements."), setup=PROD)
case("UpdateTaskProtection", "unknown_cluster", {"cluster": "ghost", "tasks": [TASK_ID], "protectionEnabled": False},
     err("ClusterNotFoundException", "Cluster not found."))
case("GetTaskProtection", "none_protected", {"cluster": "prod"}, {"protectedTasks": [], "failures": []}, setup=PROD)
case("GetTaskProtection", "invalid_identifier", {"cluster": "prod", "tasks": ["nope"]},
     err("InvalidParameterException", "Invalid identifier: nope"), setup=PROD)
case("GetTaskProtection", "other_cluster_arn_is_missing", {"cluster": "prod", "tasks": [f"arn:aws:ecs:{R}:{ACCT}:task/dev/{TASK_ID}"]},
     {"protectedTasks": [], "failures": [{"arn": f"arn:aws:ecs:{R}:{ACCT}:task/dev/{TASK_ID}", "reason": "MISSING"}]},
     setup=PROD)

# ---------- ContinueServiceDeployment ----------
# The fixture's ids: the first CreateService's service deployment is AAAAAAAAAAAAAAAAAAAAC (gen_services.py).
SD_ARN = f"arn:aws:ecs:{R}:{ACCT}:service-deployment/prod/web/AAAAAAAAAAAAAAAAAAAAC"
SERVICE = PROD + [TD, {"action": "CreateService", "request": {"cluster": "prod", "serviceName": "web", "taskDefinition": "web",
                                                              "desiredCount": 2, "launchType": "EC2"}}]
case("ContinueServiceDeployment", "no_paused_hook", {"serviceDeploymentArn": SD_ARN, "hookId": "hook-1"},
     err("InvalidParameterException", f"The service deployment {SD_ARN} is not paused at lifecycle hook hook-1: Paddock's "
         "rolling deployments have no lifecycle hooks."), setup=SERVICE)
GHOST_SD = f"arn:aws:ecs:{R}:{ACCT}:service-deployment/prod/web/ZZZZZZZZZZZZZZZZZZZZZ"
case("ContinueServiceDeployment", "unknown_deployment", {"serviceDeploymentArn": GHOST_SD, "hookId": "hook-1", "action": "ROLLBACK"},
     err("ServiceDeploymentNotFoundException", f"The service deployment {GHOST_SD} does not exist."))


def main():
    n = 0
    for (action, name), (setup, request, response) in CASES.items():
        if response is None:
            continue
        d = os.path.join(OUT, action)
        os.makedirs(d, exist_ok=True)
        base = os.path.join(d, name)
        for suffix, value in ((".request.json", request), (".response.json", response), (".setup.json", setup)):
            if value is None:
                continue
            with open(base + suffix, "w") as f:
                json.dump(value, f, ensure_ascii=False)
                f.write("\n")
        n += 1
    print(n, "cases")


if __name__ == "__main__":
    main()
