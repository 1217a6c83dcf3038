"""Issue 10's ECS operations against a real server through boto3 (every answer validated strictly
from the raw body against botocore's output shape): account settings, capacity providers (and a
strategy placing on the cluster's EC2 instances), task scale-in protection with the service
scheduler, ContinueServiceDeployment, an EXTERNAL service's primary task set, and EC2's
DescribeInstances of the container instances' hosts (its XML checked element by element against
botocore's ec2 output shape)."""

import json
import os
import re
import sys
import time
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402

import boto3  # noqa: E402
import botocore.session  # noqa: E402

TOTAL = [{"name": "CPU", "type": "INTEGER", "integerValue": 4096},
         {"name": "MEMORY", "type": "INTEGER", "integerValue": 8192},
         {"name": "PORTS", "type": "STRINGSET", "stringSetValue": ["22"]},
         {"name": "PORTS_UDP", "type": "STRINGSET", "stringSetValue": []}]
SCHEDULER_CONFIG = "[scheduler]\nsettle_seconds = 0\nresync_seconds = 2\nbackoff_base_seconds = 1\nbackoff_cap_seconds = 4\n"


def wait_until(test, what, fn, timeout=20):
    """Polls fn (an API read: the answer is the event) until it returns a truthy value."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            test.fail(f"timed out waiting for {what}")
        time.sleep(0.2)


class AccountSettings(h.PaddockTestCase):

    def test_put_list_delete_and_the_cluster_default(self):
        root = f"arn:aws:iam::{self.account}:root"
        s = self.ecs.put_account_setting_default(name="containerInsights", value="enhanced")["setting"]
        self.assertEqual(s, {"name": "containerInsights", "value": "enhanced", "principalArn": root, "type": "user"})
        # A new cluster without its own setting takes the account's.
        c = self.ecs.create_cluster(clusterName="insights")["cluster"]
        self.assertEqual(c["settings"], [{"name": "containerInsights", "value": "enhanced"}])
        own = self.ecs.list_account_settings()["settings"]
        self.assertIn(s, own)
        eff = self.ecs.list_account_settings(effectiveSettings=True, name="taskLongArnFormat")["settings"]
        self.assertEqual(eff, [{"name": "taskLongArnFormat", "value": "enabled", "principalArn": root, "type": "user"}])
        # Every effective setting, paged by botocore's paginator (10 per page at most).
        names = []
        for page in self.ecs.get_paginator("list_account_settings").paginate(effectiveSettings=True,
                                                                             PaginationConfig={"PageSize": 4}):
            self.assertLessEqual(len(page["settings"]), 4)
            names += [x["name"] for x in page["settings"]]
        self.assertEqual(names, sorted(names))
        self.assertEqual(len(names), 11)
        d = self.ecs.delete_account_setting(name="containerInsights")["setting"]
        self.assertEqual(d["value"], "enhanced")
        self.assertEqual(self.ecs.create_cluster(clusterName="plain")["cluster"]["settings"],
                         [{"name": "containerInsights", "value": "disabled"}])
        self.ecs.put_account_setting(name="defaultLogDriverMode", value="blocking")
        self.ecs.put_account_setting(name="fargateTaskRetirementWaitPeriod", value="14")

    def test_refusals_as_aws_words_them(self):
        self.assertClientError("InvalidParameterException", self.ecs.put_account_setting_default,
                               name="serviceLongArnFormat", value="disabled",
                               message="You can no longer disable Long Arn settings.")
        self.assertClientError("InvalidParameterException", self.ecs.put_account_setting, name="containerInsights",
                               value="on", message="Invalid setting 'value'")
        other = "arn:aws:iam::210987654321:root"
        self.assertClientError("AccessDeniedException", self.ecs.put_account_setting, name="awsvpcTrunking",
                               value="enabled", principalArn=other)
        self.assertClientError("InvalidParameterException", self.ecs.list_account_settings, value="enabled")


class CapacityProviders(h.PaddockTestCase):
    CONFIG = SCHEDULER_CONFIG

    def create(self, name, asg, **kw):
        return self.ecs.create_capacity_provider(
            name=name, autoScalingGroupProvider=dict({"autoScalingGroupArn": asg}, **kw))["capacityProvider"]

    def test_lifecycle_describe_and_tags(self):
        p = self.create("fleet-a", "asg-a", managedScaling={"status": "ENABLED", "targetCapacity": 80})
        self.assertEqual(p["capacityProviderArn"],
                         f"arn:aws:ecs:{h.REGION}:{self.account}:capacity-provider/fleet-a")
        self.assertEqual(p["autoScalingGroupProvider"]["managedScaling"]["targetCapacity"], 80)
        self.assertEqual(p["type"], "EC2_AUTOSCALING")
        listed, token = [], None
        while True:  # botocore has no paginator for it: nextToken by hand, one per page
            page = self.ecs.describe_capacity_providers(maxResults=1, **({"nextToken": token} if token else {}))
            self.assertLessEqual(len(page["capacityProviders"]), 1)
            listed += [x["name"] for x in page["capacityProviders"]]
            token = page.get("nextToken")
            if not token:
                break
        self.assertEqual(listed[:2], ["FARGATE", "FARGATE_SPOT"])
        self.assertIn("fleet-a", listed)
        self.ecs.tag_resource(resourceArn=p["capacityProviderArn"], tags=[{"key": "team", "value": "core"}])
        d = self.ecs.describe_capacity_providers(capacityProviders=["fleet-a", "nope"], include=["TAGS"])
        self.assertEqual(d["capacityProviders"][0]["tags"], [{"key": "team", "value": "core"}])
        self.assertEqual(d["failures"][0]["reason"], "MISSING")
        u = self.ecs.update_capacity_provider(name="fleet-a", autoScalingGroupProvider={"managedDraining": "DISABLED"})
        self.assertEqual(u["capacityProvider"]["autoScalingGroupProvider"]["managedDraining"], "DISABLED")
        self.assertEqual(u["capacityProvider"]["updateStatus"], "UPDATE_COMPLETE")
        self.assertClientError("InvalidParameterException", self.create, "fargate-mine", "asg-x")
        self.assertClientError("ClientException", self.create, "fleet-b", "asg-a")
        gone = self.ecs.delete_capacity_provider(capacityProvider="fleet-a")["capacityProvider"]
        self.assertEqual((gone["status"], gone["updateStatus"]), ("INACTIVE", "DELETE_COMPLETE"))

    def test_a_strategy_places_on_the_clusters_instances_and_keeps_the_provider_in_use(self):
        self.create("fleet-run", "asg-run")
        self.ecs.create_cluster(clusterName="cp", capacityProviders=["fleet-run"],
                                defaultCapacityProviderStrategy=[{"capacityProvider": "fleet-run", "weight": 1}])
        ci = self.ecs.register_container_instance(cluster="cp", totalResources=TOTAL)["containerInstance"]
        self.ecs.register_task_definition(**h.td_min("cpapp"))
        t = self.ecs.run_task(cluster="cp", taskDefinition="cpapp")["tasks"][0]
        self.assertEqual((t["launchType"], t["capacityProviderName"]), ("EC2", "fleet-run"))
        self.assertEqual(t["containerInstanceArn"], ci["containerInstanceArn"])
        self.assertClientError("ResourceInUseException", self.ecs.put_cluster_capacity_providers, cluster="cp",
                               capacityProviders=[], defaultCapacityProviderStrategy=[])
        d = self.ecs.delete_capacity_provider(capacityProvider="fleet-run")["capacityProvider"]
        self.assertEqual((d["status"], d["updateStatus"]), ("ACTIVE", "DELETE_FAILED"))
        self.assertIn("associated with cluster: cp", d["updateStatusReason"])
        self.ecs.stop_task(cluster="cp", task=t["taskArn"])


class TaskProtection(h.PaddockTestCase):
    """The scheduler scales a service in without touching its protected task. The container
    instance is registered through the API (no agent runs): its tasks stay PROVISIONING, which is
    enough for the scheduler to count, protect and stop them."""
    CONFIG = SCHEDULER_CONFIG

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ecs.create_cluster(clusterName="prot")
        cls.ecs.register_container_instance(cluster="prot", totalResources=TOTAL)
        cls.ecs.register_task_definition(**h.td_min("protapp"))

    def live_tasks(self, service):
        arns = self.ecs.list_tasks(cluster="prot", serviceName=service)["taskArns"]
        return self.ecs.describe_tasks(cluster="prot", tasks=arns)["tasks"] if arns else []

    def test_scale_in_passes_over_the_protected_task(self):
        self.ecs.create_service(cluster="prot", serviceName="web", taskDefinition="protapp", desiredCount=2,
                                launchType="EC2")
        tasks = wait_until(self, "two tasks", lambda: (lambda t: t if len(t) == 2 else None)(self.live_tasks("web")))
        newest = max(tasks, key=lambda t: (t["createdAt"], t["taskArn"]))
        older = [t for t in tasks if t is not newest][0]
        r = self.ecs.update_task_protection(cluster="prot", tasks=[newest["taskArn"]], protectionEnabled=True,
                                            expiresInMinutes=30)
        self.assertEqual(r["failures"], [])
        (p,) = r["protectedTasks"]
        self.assertTrue(p["protectionEnabled"])
        self.assertAlmostEqual(p["expirationDate"].timestamp(), time.time() + 1800, delta=60)
        # Scale-in gives up the newest task first, unless it is protected: the older one goes.
        self.ecs.update_service(cluster="prot", service="web", desiredCount=1)
        stopped = wait_until(self, "one task told to stop", lambda: [
            t for t in self.ecs.describe_tasks(cluster="prot", tasks=[newest["taskArn"], older["taskArn"]])["tasks"]
            if t["desiredStatus"] == "STOPPED"])
        self.assertEqual([t["taskArn"] for t in stopped], [older["taskArn"]])
        g = self.ecs.get_task_protection(cluster="prot", tasks=[newest["taskArn"]])["protectedTasks"][0]
        self.assertTrue(g["protectionEnabled"])
        # Unprotected, it may go when the service scales in again.
        self.ecs.update_task_protection(cluster="prot", tasks=[newest["taskArn"]], protectionEnabled=False)
        self.ecs.update_service(cluster="prot", service="web", desiredCount=0)
        wait_until(self, "the formerly protected task told to stop", lambda: self.ecs.describe_tasks(
            cluster="prot", tasks=[newest["taskArn"]])["tasks"][0]["desiredStatus"] == "STOPPED")
        self.ecs.delete_service(cluster="prot", service="web", force=True)

    def test_a_task_of_no_service_is_not_valid(self):
        t = self.ecs.run_task(cluster="prot", taskDefinition="protapp", launchType="EC2")["tasks"][0]
        r = self.ecs.update_task_protection(cluster="prot", tasks=[t["taskArn"]], protectionEnabled=True)
        self.assertEqual(r["protectedTasks"], [])
        self.assertEqual(r["failures"][0]["reason"], "TASK_NOT_VALID")
        self.assertClientError("InvalidParameterException", self.ecs.update_task_protection, cluster="prot",
                               tasks=[t["taskArn"]], protectionEnabled=True, expiresInMinutes=2881)
        self.ecs.stop_task(cluster="prot", task=t["taskArn"])


class Deployments(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ecs.create_cluster(clusterName="dep")
        cls.td = cls.ecs.register_task_definition(**h.td_min("depapp"))["taskDefinition"]["taskDefinitionArn"]

    def test_continue_service_deployment_has_no_paused_hook(self):
        self.ecs.create_service(cluster="dep", serviceName="roll", taskDefinition="depapp", desiredCount=0,
                                launchType="EC2")
        arn = self.ecs.describe_services(cluster="dep", services=["roll"])["services"][0]["currentServiceDeployment"]
        self.assertClientError("InvalidParameterException", self.ecs.continue_service_deployment,
                               serviceDeploymentArn=arn, hookId="hook-1")
        self.assertClientError("ServiceDeploymentNotFoundException", self.ecs.continue_service_deployment,
                               serviceDeploymentArn=arn[:-3] + "zzz", hookId="hook-1", action="ROLLBACK")

    def test_the_primary_task_sets_fields_are_the_services(self):
        self.ecs.create_service(cluster="dep", serviceName="ext", desiredCount=2,
                                deploymentController={"type": "EXTERNAL"})
        ts = self.ecs.create_task_set(cluster="dep", service="ext", taskDefinition=self.td,
                                      launchType="EC2")["taskSet"]
        self.ecs.update_service_primary_task_set(cluster="dep", service="ext", primaryTaskSet=ts["taskSetArn"])
        svc = self.ecs.describe_services(cluster="dep", services=["ext"])["services"][0]
        self.assertEqual(svc["taskSets"][0]["status"], "PRIMARY")
        self.assertEqual(svc["taskDefinition"], svc["taskSets"][0]["taskDefinition"])
        self.assertEqual(svc["launchType"], "EC2")
        missing = self.ecs.describe_services(cluster="dep", services=["nope"])["failures"]
        self.assertEqual(missing, [{"arn": f"arn:aws:ecs:{h.REGION}:{self.account}:service/nope", "reason": "MISSING"}])


# ---- EC2 DescribeInstances, with EC2's XML checked against botocore's shape ----

EC2_MODEL = botocore.session.get_session().get_service_model("ec2")


def _local(tag):
    return tag.rsplit("}", 1)[-1]


def validate_ec2_xml(elem, shape, path="$"):
    """Every element is a member of the shape (by its serialized name), leaves have the shape's type."""
    errors = []
    t = shape.type_name
    if t == "structure":
        by_name = {m.serialization.get("name", n[0].lower() + n[1:]): m for n, m in shape.members.items()}
        for child in elem:
            name = _local(child.tag)
            if name not in by_name:
                errors.append(f"{path}: unknown element {name!r} in {shape.name}")
                continue
            errors += validate_ec2_xml(child, by_name[name], f"{path}.{name}")
    elif t == "list":
        item = shape.member.serialization.get("name", "item")
        for i, child in enumerate(elem):
            if _local(child.tag) != item:
                errors.append(f"{path}: list {shape.name} holds {_local(child.tag)!r}, not {item!r}")
                continue
            errors += validate_ec2_xml(child, shape.member, f"{path}[{i}]")
    else:
        text = elem.text or ""
        if len(elem):
            errors.append(f"{path}: {t} {shape.name} has child elements")
        elif t in ("integer", "long"):
            try:
                int(text)
            except ValueError:
                errors.append(f"{path}: {text!r} is not an integer")
        elif t == "boolean" and text not in ("true", "false"):
            errors.append(f"{path}: {text!r} is not a boolean")
        elif t == "timestamp" and not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z", text):
            errors.append(f"{path}: {text!r} is not an ISO 8601 time")
        elif t == "string" and shape.enum and text not in shape.enum:
            errors.append(f"{path}: {text!r} not in {shape.name}")
    return errors


class Ec2Instances(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)
        cls.raw = []
        cls.ec2.meta.events.register("before-parse.ec2.DescribeInstances",
                                     lambda response_dict, **kw: cls.raw.append(response_dict))
        cls.ecs.create_cluster(clusterName="hosts")

    def describe(self, **kw):
        out = self.ec2.describe_instances(**kw)
        body = self.raw[-1]["body"]
        root = ET.fromstring(body)
        self.assertEqual(_local(root.tag), "DescribeInstancesResponse")
        shape = EC2_MODEL.operation_model("DescribeInstances").output_shape
        errors = []
        for child in root:
            if _local(child.tag) == "requestId":
                continue
            wrapper = ET.Element("DescribeInstancesResult")
            wrapper.append(child)
            errors += validate_ec2_xml(wrapper, shape)
        self.assertEqual(errors, [], body)
        return out

    def register(self, instance_id, ip):
        doc = json.dumps({"instanceId": instance_id, "privateIp": ip, "availabilityZone": "us-east-1b",
                          "instanceType": "m5.large", "imageId": "ami-0abcdef1234567890"})
        return self.ecs.register_container_instance(cluster="hosts", instanceIdentityDocument=doc,
                                                    totalResources=TOTAL)["containerInstance"]

    def test_the_container_instances_host_as_traefik_reads_it(self):
        ci = self.register("i-0123456789abcdef0", "10.0.7.12")
        r = self.describe(InstanceIds=[ci["ec2InstanceId"]])
        (res,) = r["Reservations"]
        (i,) = res["Instances"]
        self.assertEqual(i["InstanceId"], "i-0123456789abcdef0")
        self.assertEqual(i["PrivateIpAddress"], "10.0.7.12")
        self.assertEqual(i["State"], {"Code": 16, "Name": "running"})
        self.assertEqual(i["Placement"]["AvailabilityZone"], "us-east-1b")
        self.assertEqual(i["InstanceType"], "m5.large")
        self.assertEqual(res["OwnerId"], self.account)
        vpc = self.ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
        self.assertEqual(i["VpcId"], vpc)
        by_filter = self.describe(Filters=[{"Name": "private-ip-address", "Values": ["10.0.7.*"]}])
        self.assertEqual([x["InstanceId"] for rr in by_filter["Reservations"] for x in rr["Instances"]],
                         ["i-0123456789abcdef0"])
        # Deregistered: terminated (it stays visible until reaped, as EC2 shows terminated instances).
        self.ecs.deregister_container_instance(cluster="hosts", containerInstance=ci["containerInstanceArn"])
        i = self.describe(InstanceIds=["i-0123456789abcdef0"])["Reservations"][0]["Instances"][0]
        self.assertEqual(i["State"]["Name"], "terminated")

    def test_errors_and_pages(self):
        for n in range(6):
            self.register(f"i-0aaaaaaaaaaaaaa{n:02d}", f"10.1.0.{n}")
        ids = []
        for page in self.ec2.get_paginator("describe_instances").paginate(PaginationConfig={"PageSize": 5}):
            ids += [x["InstanceId"] for rr in page["Reservations"] for x in rr["Instances"]]
        self.assertTrue(set(f"i-0aaaaaaaaaaaaaa{n:02d}" for n in range(6)) <= set(ids))
        self.assertEqual(len(ids), len(set(ids)))
        from botocore.exceptions import ClientError
        for kw, code in (({"InstanceIds": ["i-0ffffffffffffffff"]}, "InvalidInstanceID.NotFound"),
                         ({"InstanceIds": ["bogus"]}, "InvalidInstanceID.Malformed"),
                         ({"Filters": [{"Name": "flavour", "Values": ["x"]}]}, "InvalidParameterValue")):
            with self.assertRaises(ClientError) as cm:
                self.ec2.describe_instances(**kw)
            self.assertEqual(cm.exception.response["Error"]["Code"], code)
        # Another account sees none of them.
        _, key, secret = h.create_account(self.state_dir)
        other = boto3.client("ec2", endpoint_url=self.server.endpoint, region_name=h.REGION,
                             aws_access_key_id=key, aws_secret_access_key=secret)
        self.assertEqual(other.describe_instances()["Reservations"], [])


if __name__ == "__main__":
    unittest.main()
