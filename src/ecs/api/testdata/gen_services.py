"""Writes the service golden cases (python3 gen_services.py <testdata dir>).

The expected answers are built here from the contract (docs/contracts/service.md), not copied from
Paddock's output. The golden fixture hands the service owner ids from one counter: n as a zero-padded
number of the asked width, each digit d mapped to the alphabet's d-th character (digits for
deployment and revision ids, A-J for a service deployment's URL-safe id). CreateService asks for the
deployment id, then the service deployment's, then the revision's. The clock stands at 1780000000 s.
"""
import json, os, sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
ACCT = "123456789012"; R = "us-east-1"; ROOT = f"arn:aws:iam::{ACCT}:root"
NOW = 1780000000.0
TD = f"arn:aws:ecs:{R}:{ACCT}:task-definition/web:1"


def err(t, m): return {"__type": t, "message": m}
def svc_arn(name, cluster="prod"): return f"arn:aws:ecs:{R}:{ACCT}:service/{cluster}/{name}"
def digits(n, width=19): return f"{n:0{width}d}"
def urlsafe(n): return "".join("ABCDEFGHIJ"[int(c)] for c in digits(n, 21))


SETUP = [{"action": "CreateCluster", "request": {"clusterName": "prod"}},
         {"action": "RegisterTaskDefinition",
          "request": {"family": "web", "containerDefinitions": [{"name": "app", "image": "nginx", "memory": 64}]}}]


def create_req(name="web", **extra):
    r = {"cluster": "prod", "serviceName": name, "taskDefinition": "web", "desiredCount": 2, "launchType": "EC2"}
    r.update(extra)
    return r


def service(name="web", first_id=1, desired=2, tags=None, status="ACTIVE"):
    dep = f"ecs-svc/{digits(first_id)}"
    o = {
        "serviceArn": svc_arn(name), "serviceName": name, "clusterArn": f"arn:aws:ecs:{R}:{ACCT}:cluster/prod",
        "loadBalancers": [], "serviceRegistries": [], "status": status, "desiredCount": desired,
        "runningCount": 0, "pendingCount": 0, "launchType": "EC2", "taskDefinition": TD,
        "deploymentConfiguration": {"deploymentCircuitBreaker": {"enable": False, "rollback": False},
                                    "maximumPercent": 200, "minimumHealthyPercent": 100, "strategy": "ROLLING"},
        "deployments": [{"id": dep, "status": "PRIMARY", "taskDefinition": TD, "desiredCount": desired,
                         "pendingCount": 0, "runningCount": 0, "failedTasks": 0, "createdAt": NOW, "updatedAt": NOW,
                         "launchType": "EC2", "rolloutState": "IN_PROGRESS",
                         "rolloutStateReason": f"ECS deployment {dep} in progress."}],
        "events": [], "createdAt": NOW, "placementConstraints": [], "placementStrategy": [],
        "schedulingStrategy": "REPLICA", "deploymentController": {"type": "ECS"}, "createdBy": ROOT,
        "enableECSManagedTags": False, "propagateTags": "NONE", "enableExecuteCommand": False,
        "availabilityZoneRebalancing": "ENABLED",
        "currentServiceDeployment": f"arn:aws:ecs:{R}:{ACCT}:service-deployment/prod/{name}/{urlsafe(first_id + 1)}",
        "currentServiceRevisions": [{"arn": f"arn:aws:ecs:{R}:{ACCT}:service-revision/prod/{name}/{digits(first_id + 2)}",
                                     "requestedTaskCount": desired, "runningTaskCount": 0, "pendingTaskCount": 0}],
        "resourceManagementType": "CUSTOMER",
    }
    if tags is not None:
        o["tags"] = tags
    return o


TAGS = [{"key": "team", "value": "blue"}]
CASES = {
    ("CreateService", "ec2_replica"): (SETUP, create_req(tags=TAGS), {"service": service(tags=TAGS)}),
    ("CreateService", "daemon_with_desired_count"): (
        SETUP, create_req(schedulingStrategy="DAEMON"),
        err("InvalidParameterException", "The daemon scheduling strategy does not support a desired count for services. "
                                          "Remove the desired count value and try again")),
    ("CreateService", "launch_type_and_strategy"): (
        SETUP, create_req(capacityProviderStrategy=[{"capacityProvider": "FARGATE"}]),
        err("InvalidParameterException",
            "Specifying both a launch type and capacity provider strategy is not supported. Remove one and try again.")),
    ("CreateService", "same_token_returns_the_service"): (
        SETUP + [{"action": "CreateService", "request": create_req(clientToken="t-1")}], create_req(clientToken="t-1"),
        {"service": service(tags=[])}),
    ("CreateService", "not_idempotent"): (
        SETUP + [{"action": "CreateService", "request": create_req()}], create_req(),
        err("InvalidParameterException", "Creation of service was not idempotent.")),
    ("CreateService", "draining_name"): (
        SETUP + [{"action": "CreateService", "request": create_req(desiredCount=0)},
                 {"action": "DeleteService", "request": {"cluster": "prod", "service": "web"}}],
        create_req(), err("InvalidParameterException", "Unable to Start a service that is still Draining.")),
    ("DescribeServices", "missing_and_tags"): (
        SETUP + [{"action": "CreateService", "request": create_req(tags=TAGS)}],
        {"cluster": "prod", "services": ["web", svc_arn("gone")], "include": ["TAGS"]},
        {"services": [service(tags=TAGS)], "failures": [{"arn": svc_arn("gone"), "reason": "MISSING"}]}),
    ("DescribeServices", "unknown_cluster"): (
        SETUP, {"cluster": "nope", "services": ["web"]}, err("ClusterNotFoundException", "Cluster not found.")),
    ("DeleteService", "scaled_above_zero"): (
        SETUP + [{"action": "CreateService", "request": create_req()}], {"cluster": "prod", "service": "web"},
        err("InvalidParameterException", "The service cannot be stopped while it is scaled above 0.")),
    ("UpdateService", "not_found"): (
        SETUP, {"cluster": "prod", "service": "web", "desiredCount": 1},
        err("ServiceNotFoundException", "Service not found.")),
    ("UpdateService", "draining_not_active"): (
        SETUP + [{"action": "CreateService", "request": create_req(desiredCount=0)},
                 {"action": "DeleteService", "request": {"cluster": "prod", "service": "web"}}],
        {"cluster": "prod", "service": "web", "desiredCount": 1},
        err("ServiceNotActiveException", "Service was not ACTIVE.")),
    ("ListServices", "draining_not_listed"): (
        SETUP + [{"action": "CreateService", "request": create_req("b", desiredCount=0)},
                 {"action": "CreateService", "request": create_req("a", desiredCount=0)},
                 {"action": "CreateService", "request": create_req("c", desiredCount=0)},
                 {"action": "DeleteService", "request": {"cluster": "prod", "service": "b"}}],
        {"cluster": "prod"}, {"serviceArns": [svc_arn("a"), svc_arn("c")]}),
}

SD = f"arn:aws:ecs:{R}:{ACCT}:service-deployment/prod/web/{urlsafe(2)}"
REV = f"arn:aws:ecs:{R}:{ACCT}:service-revision/prod/web/{digits(3)}"
WITH_SERVICE = SETUP + [{"action": "CreateService", "request": create_req()}]
DC = {"deploymentCircuitBreaker": {"enable": False, "rollback": False}, "maximumPercent": 200,
      "minimumHealthyPercent": 100, "strategy": "ROLLING"}
CASES.update({
    ("DescribeServiceDeployments", "first_deployment_and_missing"): (
        WITH_SERVICE, {"serviceDeploymentArns": [SD, SD[:-1] + "Z"]},
        {"serviceDeployments": [{
            "serviceDeploymentArn": SD, "serviceArn": svc_arn("web"), "clusterArn": f"arn:aws:ecs:{R}:{ACCT}:cluster/prod",
            "createdAt": NOW, "startedAt": NOW, "updatedAt": NOW, "sourceServiceRevisions": [],
            "targetServiceRevision": {"arn": REV, "requestedTaskCount": 2, "runningTaskCount": 0, "pendingTaskCount": 0},
            "status": "IN_PROGRESS", "deploymentConfiguration": DC,
            "deploymentCircuitBreaker": {"status": "DISABLED", "failureCount": 0, "threshold": 3},
            "alarms": {"status": "DISABLED"}}],
         "failures": [{"arn": SD[:-1] + "Z", "reason": "MISSING"}]}),
    ("DescribeServiceRevisions", "first_revision"): (
        WITH_SERVICE, {"serviceRevisionArns": [REV]},
        {"serviceRevisions": [{
            "serviceRevisionArn": REV, "serviceArn": svc_arn("web"), "clusterArn": f"arn:aws:ecs:{R}:{ACCT}:cluster/prod",
            "taskDefinition": TD, "launchType": "EC2", "loadBalancers": [], "serviceRegistries": [],
            "containerImages": [{"containerName": "app", "image": "nginx"}], "guardDutyEnabled": False,
            "createdAt": NOW}], "failures": []}),
    ("StopServiceDeployment", "abort_refused"): (
        WITH_SERVICE, {"serviceDeploymentArn": SD, "stopType": "ABORT"},
        err("InvalidParameterException", "The stop type ABORT is not supported. The only valid stop type is ROLLBACK.")),
    ("StopServiceDeployment", "rollback_requested"): (
        WITH_SERVICE, {"serviceDeploymentArn": SD, "stopType": "ROLLBACK"}, {"serviceDeploymentArn": SD}),
    ("ListServiceDeployments", "newest_first"): (
        WITH_SERVICE + [{"action": "UpdateService", "request": {"cluster": "prod", "service": "web",
                                                                 "forceNewDeployment": True}}],
        {"cluster": "prod", "service": "web", "status": ["STOPPED"]},
        {"serviceDeployments": [{
            "serviceDeploymentArn": SD, "serviceArn": svc_arn("web"), "clusterArn": f"arn:aws:ecs:{R}:{ACCT}:cluster/prod",
            "startedAt": NOW, "createdAt": NOW, "finishedAt": NOW, "status": "STOPPED",
            "statusReason": "Service deployment stopped: a newer service deployment started.",
            "targetServiceRevisionArn": REV}]}),
})

for (action, case), (setup, request, response) in CASES.items():
    d = os.path.join(OUT, action)
    os.makedirs(d, exist_ok=True)
    base = os.path.join(d, case)
    with open(base + ".request.json", "w") as f:
        json.dump(request, f, indent=2)
        f.write("\n")
    with open(base + ".response.json", "w") as f:
        json.dump(response, f, indent=2)
        f.write("\n")
    if setup:
        with open(base + ".setup.json", "w") as f:
            json.dump(setup, f)
