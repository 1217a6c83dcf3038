"""Writes the container-instance golden cases (python3 gen_container_instances.py <testdata dir>).

The expected answers are built here from the contract (docs/contracts/container-instance.md), not
copied from Paddock's output. The golden fixture hands out ids from a counter: the first id asked
for is 00..01 (32 hex digits for an instance, 17 for a generated EC2 id), then 00..02, and so on.
The clock stands at 1780000000 s.
"""
import json, os, sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
ACCT = "123456789012"; R = "us-east-1"; ROOT = f"arn:aws:iam::{ACCT}:root"; OTHER = "210987654321"
NOW = 1780000000.0


def hexid(n, width=32): return f"{n:0{width}x}"
def ciarn(n, cluster="prod"): return f"arn:aws:ecs:{R}:{ACCT}:container-instance/{cluster}/{hexid(n)}"
def err(t, m): return {"__type": t, "message": m}
def cc(n): return {"action": "CreateCluster", "request": {"clusterName": n}}


def res(cpu=0, mem=0, ports=(), udp=()):
    def i(name, v): return {"name": name, "type": "INTEGER", "doubleValue": 0.0, "longValue": 0, "integerValue": v}
    def s(name, v): return {"name": name, "type": "STRINGSET", "doubleValue": 0.0, "longValue": 0, "integerValue": 0,
                            "stringSetValue": list(v)}
    return [i("CPU", cpu), i("MEMORY", mem), s("PORTS", ports), s("PORTS_UDP", udp)]


def attrs(zone="us-east-1a", itype="paddock", ami=None, extra=None):
    a = {"ecs.availability-zone": zone, "ecs.capability.container-health-check": None, "ecs.capability.task-eni": None,
         "ecs.cpu-architecture": "x86_64", "ecs.instance-type": itype, "ecs.os-family": "LINUX", "ecs.os-type": "linux"}
    if ami: a["ecs.ami-id"] = ami
    a.update(extra or {})
    return [({"name": k} if v is None else {"name": k, "value": v}) for k, v in sorted(a.items())]


def ci(n, ec2=None, cluster="prod", version=1, status="ACTIVE", connected=True, registered=None, remaining=None,
       version_info=None, attributes=None, **extra):
    o = {"containerInstanceArn": ciarn(n, cluster), "ec2InstanceId": ec2 or "i-" + hexid(n + 1, 17),
         "version": version, "versionInfo": version_info or {},
         "remainingResources": remaining if remaining is not None else (registered or res()),
         "registeredResources": registered or res(), "status": status, "runningTasksCount": 0,
         "pendingTasksCount": 0, "registeredAt": NOW, "attachments": [],
         "attributes": attributes if attributes is not None else attrs(), "agentConnected": connected}
    o.update(extra)
    return o


DOC = json.dumps({"instanceId": "i-0123456789abcdef0", "availabilityZone": "us-east-1b", "instanceType": "m5.large",
                  "imageId": "ami-0abcdef", "region": R})
TOTAL = [{"name": "CPU", "type": "INTEGER", "integerValue": 2048},
         {"name": "MEMORY", "type": "INTEGER", "integerValue": 3904},
         {"name": "PORTS", "type": "STRINGSET", "stringSetValue": ["22", "2376", "2375", "51678", "51679"]},
         {"name": "PORTS_UDP", "type": "STRINGSET", "stringSetValue": []}]
TOTAL_RES = res(2048, 3904, ["22", "2375", "2376", "51678", "51679"])
VI = {"agentVersion": "1.80.0", "agentHash": "4023248", "dockerVersion": "DockerVersion: 20.10.25"}


def reg(cluster="prod", **kw): return {"action": "RegisterContainerInstance", "request": dict({"cluster": cluster}, **kw)}


cases = []
def case(action, name, req, resp, setup=None):
    cases.append((action, name, req, resp, setup))


# ---------- RegisterContainerInstance ----------
case("RegisterContainerInstance", "agent_registration",
     {"cluster": "prod", "instanceIdentityDocument": DOC, "instanceIdentityDocumentSignature": "sig",
      "totalResources": TOTAL, "versionInfo": VI, "attributes": [{"name": "stack", "value": "blue"}],
      "tags": [{"key": "team", "value": "core"}]},
     {"containerInstance": ci(1, ec2="i-0123456789abcdef0", registered=TOTAL_RES, version_info=VI,
                              attributes=attrs("us-east-1b", "m5.large", "ami-0abcdef", {"stack": "blue"}),
                              tags=[{"key": "team", "value": "core"}])},
     setup=[cc("prod")])
case("RegisterContainerInstance", "minimal_default_cluster", {},
     {"containerInstance": ci(1, cluster="default")}, setup=[{"action": "CreateCluster", "request": {}}])
case("RegisterContainerInstance", "cluster_not_found", {"cluster": "ghost"},
     err("ClusterNotFoundException", "Cluster not found."))
case("RegisterContainerInstance", "re_registration_keeps_the_instance",
     {"cluster": "prod", "containerInstanceArn": ciarn(1), "totalResources": TOTAL, "versionInfo": VI},
     {"containerInstance": ci(1, version=2, registered=TOTAL_RES, version_info=VI)},
     setup=[cc("prod"), reg()])
case("RegisterContainerInstance", "re_registration_of_deregistered",
     {"cluster": "prod", "containerInstanceArn": ciarn(1)},
     err("ClientException", f"Container instance {hexid(1)} is inactive."),
     setup=[cc("prod"), reg(), {"action": "DeregisterContainerInstance", "request": {"cluster": "prod", "containerInstance": hexid(1)}}])
case("RegisterContainerInstance", "re_registration_unknown",
     {"cluster": "prod", "containerInstanceArn": ciarn(7)},
     err("InvalidParameterException", "The referenced container instance was not found."), setup=[cc("prod")])
case("RegisterContainerInstance", "invalid_attribute_value",
     {"cluster": "prod", "attributes": [{"name": "stack", "value": " blue"}]},
     err("InvalidParameterException", "Attribute value ' blue' of 'stack' is invalid. Up to 128 letters (uppercase and "
         "lowercase), numbers, hyphens, underscores, periods, at signs, forward slashes, back slashes, colons, and "
         "spaces are allowed; it cannot start or end with a space."), setup=[cc("prod")])
case("RegisterContainerInstance", "identity_document_not_json",
     {"cluster": "prod", "instanceIdentityDocument": "{nope"},
     err("InvalidParameterException", "The instance identity document is not a JSON document."), setup=[cc("prod")])
case("RegisterContainerInstance", "negative_memory",
     {"cluster": "prod", "totalResources": [{"name": "MEMORY", "type": "INTEGER", "integerValue": -5}]},
     err("InvalidParameterException", "The resource MEMORY cannot be negative."), setup=[cc("prod")])

# ---------- DescribeContainerInstances ----------
case("DescribeContainerInstances", "id_arn_and_missing",
     {"cluster": "prod", "containerInstances": [hexid(1), ciarn(3), hexid(9)]},
     {"containerInstances": [ci(1), ci(3)], "failures": [{"arn": ciarn(9), "reason": "MISSING"}]},
     setup=[cc("prod"), reg(), reg()])
case("DescribeContainerInstances", "include_tags_and_health",
     {"cluster": "prod", "containerInstances": [hexid(1)], "include": ["TAGS", "CONTAINER_INSTANCE_HEALTH"]},
     {"containerInstances": [ci(1, tags=[{"key": "env", "value": "prod"}],
                                healthStatus={"overallStatus": "OK", "details": [
                                    {"type": "CONTAINER_RUNTIME", "status": "OK", "lastUpdated": NOW,
                                     "lastStatusChange": NOW}]})], "failures": []},
     setup=[cc("prod"), reg(tags=[{"key": "env", "value": "prod"}])])
case("DescribeContainerInstances", "other_cluster_arn_is_missing",
     {"cluster": "prod", "containerInstances": [ciarn(1, "other")]},
     {"containerInstances": [], "failures": [{"arn": ciarn(1, "other"), "reason": "MISSING"}]},
     setup=[cc("prod"), cc("other"), reg("other")])
case("DescribeContainerInstances", "cluster_not_found", {"cluster": "ghost", "containerInstances": [hexid(1)]},
     err("ClusterNotFoundException", "Cluster not found."))
case("DescribeContainerInstances", "empty_list", {"cluster": "prod", "containerInstances": []},
     err("InvalidParameterException", "Container instances cannot be empty."), setup=[cc("prod")])
case("DescribeContainerInstances", "malformed_id", {"cluster": "prod", "containerInstances": ["nope"]},
     err("InvalidParameterException", "Invalid identifier: nope"), setup=[cc("prod")])
oarn = f"arn:aws:ecs:{R}:{OTHER}:container-instance/prod/{hexid(1)}"
case("DescribeContainerInstances", "other_account_arn_denied", {"cluster": "prod", "containerInstances": [oarn]},
     err("AccessDeniedException", f"User: {ROOT} is not authorized to perform: ecs:DescribeContainerInstances on "
         f"resource: {oarn} because no resource-based policy allows the ecs:DescribeContainerInstances action"),
     setup=[cc("prod")])

# ---------- ListContainerInstances ----------
three = [cc("prod"), reg(attributes=[{"name": "stack", "value": "blue"}]), reg(attributes=[{"name": "stack", "value": "green"}]),
         reg(), {"action": "UpdateContainerInstancesState",
                 "request": {"cluster": "prod", "containerInstances": [hexid(5)], "status": "DRAINING"}}]
case("ListContainerInstances", "active_and_draining", {"cluster": "prod"},
     {"containerInstanceArns": [ciarn(1), ciarn(3), ciarn(5)]}, setup=three)
case("ListContainerInstances", "status_draining", {"cluster": "prod", "status": "DRAINING"},
     {"containerInstanceArns": [ciarn(5)]}, setup=three)
case("ListContainerInstances", "filter_attribute", {"cluster": "prod", "filter": "attribute:stack == green"},
     {"containerInstanceArns": [ciarn(3)]}, setup=three)
case("ListContainerInstances", "filter_in_and_exists",
     {"cluster": "prod", "filter": "attribute:stack in [blue, red] or not(attribute:stack exists)"},
     {"containerInstanceArns": [ciarn(1), ciarn(5)]}, setup=three)
case("ListContainerInstances", "filter_invalid", {"cluster": "prod", "filter": "attribute:stack =="},
     err("InvalidParameterException", "The filter expression is invalid: a value is missing."), setup=[cc("prod")])
case("ListContainerInstances", "filter_unsupported_subject", {"cluster": "prod", "filter": "task:group == web"},
     err("InvalidParameterException", "The filter expression is invalid: 'task:group' is not a supported subject "
         "(attribute:<name>, ec2InstanceId, runningTasksCount, registeredAt, agentConnected, agentVersion)."),
     setup=[cc("prod")])
case("ListContainerInstances", "cluster_not_found", {"cluster": "ghost"}, err("ClusterNotFoundException", "Cluster not found."))
case("ListContainerInstances", "deregistered_not_listed", {"cluster": "prod"}, {"containerInstanceArns": [ciarn(3)]},
     setup=[cc("prod"), reg(), reg(),
            {"action": "DeregisterContainerInstance", "request": {"cluster": "prod", "containerInstance": hexid(1)}}])

# ---------- DeregisterContainerInstance ----------
case("DeregisterContainerInstance", "basic", {"cluster": "prod", "containerInstance": hexid(1)},
     {"containerInstance": ci(1, version=2, status="INACTIVE", connected=False)}, setup=[cc("prod"), reg()])
case("DeregisterContainerInstance", "by_arn_again_returns_inactive", {"cluster": "prod", "containerInstance": ciarn(1)},
     {"containerInstance": ci(1, version=2, status="INACTIVE", connected=False)},
     setup=[cc("prod"), reg(), {"action": "DeregisterContainerInstance", "request": {"cluster": "prod", "containerInstance": hexid(1)}}])
case("DeregisterContainerInstance", "unknown", {"cluster": "prod", "containerInstance": hexid(4)},
     err("InvalidParameterException", "The referenced container instance was not found."), setup=[cc("prod")])

# ---------- UpdateContainerInstancesState ----------
case("UpdateContainerInstancesState", "draining_and_missing",
     {"cluster": "prod", "containerInstances": [hexid(1), hexid(8)], "status": "DRAINING"},
     {"containerInstances": [ci(1, version=2, status="DRAINING")], "failures": [{"arn": ciarn(8), "reason": "MISSING"}]},
     setup=[cc("prod"), reg()])
case("UpdateContainerInstancesState", "back_to_active",
     {"cluster": "prod", "containerInstances": [hexid(1)], "status": "ACTIVE"},
     {"containerInstances": [ci(1, version=3)], "failures": []},
     setup=[cc("prod"), reg(), {"action": "UpdateContainerInstancesState",
                                "request": {"cluster": "prod", "containerInstances": [hexid(1)], "status": "DRAINING"}}])
case("UpdateContainerInstancesState", "status_not_allowed",
     {"cluster": "prod", "containerInstances": [hexid(1)], "status": "REGISTERING"},
     err("InvalidParameterException", "Container instance status REGISTERING is not valid. Valid values are ACTIVE and DRAINING."),
     setup=[cc("prod"), reg()])
case("UpdateContainerInstancesState", "eleven",
     {"cluster": "prod", "containerInstances": [hexid(i) for i in range(1, 12)], "status": "DRAINING"},
     err("InvalidParameterException", "The containerInstances list can contain at most 10 entries."), setup=[cc("prod")])

# ---------- UpdateContainerAgent ----------
case("UpdateContainerAgent", "no_update_available", {"cluster": "prod", "containerInstance": hexid(1)},
     err("NoUpdateAvailableException", "There is no update available for your container agent."),
     setup=[cc("prod"), reg(versionInfo=VI)])
case("UpdateContainerAgent", "missing_version", {"cluster": "prod", "containerInstance": hexid(1)},
     err("MissingVersionException", "Amazon ECS can't determine the current version of the Amazon ECS container agent "
         "on the container instance and doesn't have enough information to proceed with an update."),
     setup=[cc("prod"), reg()])

# ---------- PutAttributes / DeleteAttributes / ListAttributes ----------
def pa(*items, cluster="prod"): return {"action": "PutAttributes", "request": {"cluster": cluster, "attributes": list(items)}}
def ta(name, value=None, target=hexid(1), ttype="container-instance"):
    a = {"name": name}
    if value is not None: a["value"] = value
    if ttype: a["targetType"] = ttype
    a["targetId"] = target
    return a
def out(name, value=None, n=1):
    a = {"name": name}
    if value is not None: a["value"] = value
    a.update({"targetType": "container-instance", "targetId": ciarn(n)})
    return a

case("PutAttributes", "by_id_and_by_arn", {"cluster": "prod", "attributes": [ta("stack", "blue"), ta("gpu", target=ciarn(1), ttype=None)]},
     {"attributes": [out("stack", "blue"), out("gpu")]}, setup=[cc("prod"), reg()])
case("PutAttributes", "custom_limit",
     {"cluster": "prod", "attributes": [ta("c10", "v")]},
     err("AttributeLimitExceededException", "You can apply up to 10 custom attributes for each resource. You can view "
         "the attributes of a resource with ListAttributes. You can remove existing attributes on a resource with DeleteAttributes."),
     setup=[cc("prod"), reg(), pa(*[ta(f"c{i}", "v") for i in range(10)])])
case("PutAttributes", "target_not_found", {"cluster": "prod", "attributes": [ta("stack", "blue", target=hexid(6))]},
     err("TargetNotFoundException", f"Could not find the target {hexid(6)}."), setup=[cc("prod"), reg()])
case("PutAttributes", "short_id_needs_target_type", {"cluster": "prod", "attributes": [ta("stack", "blue", ttype=None)]},
     err("InvalidParameterException", "targetType is required when targetId is not a full ARN."), setup=[cc("prod"), reg()])
case("PutAttributes", "eleven_in_one_call", {"cluster": "prod", "attributes": [ta(f"c{i}", "v") for i in range(11)]},
     err("InvalidParameterException", "You can specify up to 10 attributes in a single call."), setup=[cc("prod"), reg()])
case("PutAttributes", "invalid_name", {"cluster": "prod", "attributes": [ta("bad name", "v")]},
     err("InvalidParameterException", "Attribute name 'bad name' is invalid. Up to 128 letters (uppercase and lowercase), "
         "numbers, hyphens, underscores, forward slashes, back slashes, and periods are allowed."), setup=[cc("prod"), reg()])
case("DeleteAttributes", "basic", {"cluster": "prod", "attributes": [ta("stack")]},
     {"attributes": [out("stack")]}, setup=[cc("prod"), reg(), pa(ta("stack", "blue"))])
case("DeleteAttributes", "target_not_found", {"cluster": "prod", "attributes": [ta("stack", target=hexid(6))]},
     err("TargetNotFoundException", f"Could not find the target {hexid(6)}."), setup=[cc("prod")])
two = [cc("prod"), reg(), reg(), pa(ta("stack", "blue"), ta("stack", "green", target=hexid(3)))]
case("ListAttributes", "by_name", {"cluster": "prod", "targetType": "container-instance", "attributeName": "stack"},
     {"attributes": [out("stack", "blue"), out("stack", "green", 3)]}, setup=two)
case("ListAttributes", "by_name_and_value",
     {"cluster": "prod", "targetType": "container-instance", "attributeName": "stack", "attributeValue": "green"},
     {"attributes": [out("stack", "green", 3)]}, setup=two)
case("ListAttributes", "value_without_name",
     {"cluster": "prod", "targetType": "container-instance", "attributeValue": "green"},
     err("InvalidParameterException", "attributeValue can be given only with attributeName."), setup=[cc("prod")])
case("ListAttributes", "ecs_attributes_are_listed",
     {"cluster": "prod", "targetType": "container-instance", "attributeName": "ecs.os-type"},
     {"attributes": [out("ecs.os-type", "linux")]}, setup=[cc("prod"), reg()])

# ---------- Tags, clusters ----------
case("ListTagsForResource", "container_instance", {"resourceArn": ciarn(1)},
     {"tags": [{"key": "env", "value": "prod"}, {"key": "team", "value": "core"}]},
     setup=[cc("prod"), reg(tags=[{"key": "team", "value": "core"}]),
            {"action": "TagResource", "request": {"resourceArn": ciarn(1), "tags": [{"key": "env", "value": "prod"}]}}])
case("UntagResource", "container_instance", {"resourceArn": ciarn(1), "tagKeys": ["team"]}, {},
     setup=[cc("prod"), reg(tags=[{"key": "team", "value": "core"}])])
case("TagResource", "container_instance_not_found", {"resourceArn": ciarn(5), "tags": [{"key": "a", "value": "b"}]},
     err("ResourceNotFoundException", f"The specified resource is not found: {ciarn(5)}"), setup=[cc("prod")])
case("DeleteCluster", "with_container_instances", {"cluster": "prod"},
     err("ClusterContainsContainerInstancesException",
         "The Cluster cannot be deleted while Container Instances are active or draining."), setup=[cc("prod"), reg()])
case("DescribeClusters", "counts_container_instances", {"clusters": ["prod"]},
     {"clusters": [{"clusterArn": f"arn:aws:ecs:{R}:{ACCT}:cluster/prod", "clusterName": "prod", "status": "ACTIVE",
                    "registeredContainerInstancesCount": 2, "runningTasksCount": 0, "pendingTasksCount": 0,
                    "activeServicesCount": 0, "statistics": [], "tags": [], "settings": [], "capacityProviders": [],
                    "defaultCapacityProviderStrategy": []}], "failures": []},
     setup=[cc("prod"), reg(), reg(), reg(),
            {"action": "DeregisterContainerInstance", "request": {"cluster": "prod", "containerInstance": hexid(3)}}])

n = 0
for action, name, req, resp, setup in cases:
    d = os.path.join(OUT, action); os.makedirs(d, exist_ok=True)
    b = os.path.join(d, name)
    for suffix, body in ((".request.json", req), (".response.json", resp), (".setup.json", setup)):
        if body is None: continue
        with open(b + suffix, "w") as f:
            json.dump(body, f, ensure_ascii=False); f.write("\n")
    n += 1
print(n, "cases")
