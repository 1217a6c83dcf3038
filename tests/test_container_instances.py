"""Container instances end to end (docs/contracts/container-instance.md): what an agent registers,
what operators see and change — describe, list with the cluster query language, drain, attributes,
tags, deregister — through boto3 (every answer validated strictly from the raw body against
botocore's output shape) and through the AWS CLI v1 and v2 (their parsed output validated against
the same shapes)."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
from test_conformance import CLI_V1, CLI_V2, _cli_env  # noqa: E402

DOC = json.dumps({"instanceId": "i-0123456789abcdef0", "availabilityZone": "us-east-1b",
                  "instanceType": "m5.large", "imageId": "ami-0abcdef", "region": h.REGION})
TOTAL = [{"name": "CPU", "type": "INTEGER", "integerValue": 2048},
         {"name": "MEMORY", "type": "INTEGER", "integerValue": 3904},
         {"name": "PORTS", "type": "STRINGSET", "stringSetValue": ["22", "2376", "2375", "51678", "51679"]},
         {"name": "PORTS_UDP", "type": "STRINGSET", "stringSetValue": []}]
VERSION = {"agentVersion": "1.80.0", "agentHash": "4023248", "dockerVersion": "DockerVersion: 20.10.25"}


def resource(ci, which, name):
    return next(r for r in ci[which] if r["name"] == name)


def attributes(ci):
    return {a["name"]: a.get("value") for a in ci["attributes"]}


class ContainerInstances(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ecs.create_cluster(clusterName="ci")

    def register(self, cluster="ci", **kw):
        return self.ecs.register_container_instance(cluster=cluster, **kw)["containerInstance"]

    def test_register_describe_and_cluster_count(self):
        before = self.ecs.describe_clusters(clusters=["ci"])["clusters"][0]["registeredContainerInstancesCount"]
        ci = self.register(instanceIdentityDocument=DOC, instanceIdentityDocumentSignature="sig",
                           totalResources=TOTAL, versionInfo=VERSION,
                           attributes=[{"name": "stack", "value": "blue"}], tags=[{"key": "team", "value": "core"}])
        arn = ci["containerInstanceArn"]
        cid = arn.rsplit("/", 1)[1]
        self.assertRegex(arn, rf"^arn:aws:ecs:{h.REGION}:{self.account}:container-instance/ci/[0-9a-f]{{32}}$")
        self.assertEqual(ci["ec2InstanceId"], "i-0123456789abcdef0")
        self.assertEqual(ci["status"], "ACTIVE")
        self.assertTrue(ci["agentConnected"])
        self.assertEqual(resource(ci, "registeredResources", "CPU")["integerValue"], 2048)
        self.assertEqual(resource(ci, "remainingResources", "MEMORY")["integerValue"], 3904)
        self.assertEqual(resource(ci, "registeredResources", "PORTS")["stringSetValue"],
                         ["22", "2375", "2376", "51678", "51679"])
        a = attributes(ci)
        self.assertEqual(a["ecs.instance-type"], "m5.large")
        self.assertEqual(a["ecs.availability-zone"], "us-east-1b")
        self.assertEqual(a["ecs.ami-id"], "ami-0abcdef")
        self.assertEqual(a["ecs.os-type"], "linux")
        self.assertEqual(a["stack"], "blue")
        self.assertEqual(ci["versionInfo"], VERSION)
        self.assertEqual(ci["tags"], [{"key": "team", "value": "core"}])

        d = self.ecs.describe_container_instances(cluster="ci", containerInstances=[cid, arn, "f" * 32],
                                                  include=["TAGS", "CONTAINER_INSTANCE_HEALTH"])
        self.assertEqual([c["containerInstanceArn"] for c in d["containerInstances"]], [arn, arn])
        self.assertEqual(d["containerInstances"][0]["healthStatus"]["overallStatus"], "OK")
        self.assertEqual(d["containerInstances"][0]["tags"], [{"key": "team", "value": "core"}])
        self.assertEqual(d["failures"], [{"arn": f"arn:aws:ecs:{h.REGION}:{self.account}:container-instance/ci/{'f' * 32}",
                                          "reason": "MISSING"}])
        after = self.ecs.describe_clusters(clusters=["ci"])["clusters"][0]["registeredContainerInstancesCount"]
        self.assertEqual(after, before + 1)

    def test_register_refuses_bad_input_and_writes_nothing(self):
        before = self.ecs.list_container_instances(cluster="ci")["containerInstanceArns"]
        self.assertClientError("ClusterNotFoundException", self.ecs.register_container_instance, cluster="ghost")
        self.assertClientError("InvalidParameterException", self.ecs.register_container_instance, cluster="ci",
                               totalResources=[{"name": "CPU", "type": "INTEGER", "integerValue": -1}])
        self.assertClientError("InvalidParameterException", self.ecs.register_container_instance, cluster="ci",
                               instanceIdentityDocument="{nope")
        self.assertClientError("InvalidParameterException", self.ecs.register_container_instance, cluster="ci",
                               attributes=[{"name": "bad name", "value": "x"}])
        self.assertClientError("AttributeLimitExceededException", self.ecs.register_container_instance, cluster="ci",
                               attributes=[{"name": f"c{i}", "value": "x"} for i in range(11)])
        self.assertEqual(self.ecs.list_container_instances(cluster="ci")["containerInstanceArns"], before)

    def test_list_filters_status_and_pagination(self):
        self.ecs.create_cluster(clusterName="ci-list")
        blue = self.register("ci-list", attributes=[{"name": "stack", "value": "blue"}])["containerInstanceArn"]
        green = self.register("ci-list", attributes=[{"name": "stack", "value": "green"}])["containerInstanceArn"]
        plain = self.register("ci-list")["containerInstanceArn"]
        self.ecs.update_container_instances_state(cluster="ci-list", containerInstances=[plain], status="DRAINING")

        def arns(**kw):
            return set(self.ecs.list_container_instances(cluster="ci-list", **kw)["containerInstanceArns"])
        self.assertEqual(arns(), {blue, green, plain})
        self.assertEqual(arns(status="ACTIVE"), {blue, green})
        self.assertEqual(arns(status="DRAINING"), {plain})
        self.assertEqual(arns(filter="attribute:stack == blue"), {blue})
        self.assertEqual(arns(filter="attribute:stack != blue"), {green, plain})
        self.assertEqual(arns(filter="attribute:stack exists"), {blue, green})
        self.assertEqual(arns(filter="attribute:stack in [green, red] or not(attribute:stack exists)"), {green, plain})
        self.assertEqual(arns(filter="attribute:ecs.os-type == linux and runningTasksCount == 0"), {blue, green, plain})
        self.assertEqual(arns(filter="registeredAt < 2001-01-01"), set())
        self.assertEqual(arns(filter="ec2InstanceId =~ i-.*"), {blue, green, plain})
        self.assertClientError("InvalidParameterException", self.ecs.list_container_instances, cluster="ci-list",
                               filter="attribute:stack ==")
        self.assertClientError("ClusterNotFoundException", self.ecs.list_container_instances, cluster="ghost")

        seen, token, pages = [], None, 0
        while True:
            kw = {"nextToken": token} if token else {}
            page = self.ecs.list_container_instances(cluster="ci-list", maxResults=1, **kw)
            seen += page["containerInstanceArns"]
            pages += 1
            token = page.get("nextToken")
            if not token:
                break
        self.assertEqual(sorted(seen), sorted({blue, green, plain}))
        self.assertEqual(pages, 3)
        # A token is bound to its filters.
        first = self.ecs.list_container_instances(cluster="ci-list", maxResults=1)
        # (assertClientError's own `status` is the HTTP status, hence the lambda.)
        self.assertClientError("InvalidParameterException", lambda: self.ecs.list_container_instances(
            cluster="ci-list", maxResults=1, status="DRAINING", nextToken=first["nextToken"]))

    def test_drain_deregister_and_delete_cluster(self):
        self.ecs.create_cluster(clusterName="ci-life")
        ci = self.register("ci-life", versionInfo=VERSION)
        arn = ci["containerInstanceArn"]
        self.assertClientError("ClusterContainsContainerInstancesException", self.ecs.delete_cluster, cluster="ci-life")
        r = self.ecs.update_container_instances_state(cluster="ci-life", containerInstances=[arn, "e" * 32],
                                                      status="DRAINING")
        self.assertEqual(r["containerInstances"][0]["status"], "DRAINING")
        self.assertEqual(r["failures"][0]["reason"], "MISSING")
        self.assertClientError("InvalidParameterException", lambda: self.ecs.update_container_instances_state(
            cluster="ci-life", containerInstances=[arn], status="REGISTERING"))
        self.assertEqual(self.ecs.describe_clusters(clusters=["ci-life"])["clusters"][0]
                         ["registeredContainerInstancesCount"], 1)
        self.assertClientError("NoUpdateAvailableException", self.ecs.update_container_agent, cluster="ci-life",
                               containerInstance=arn)
        d = self.ecs.deregister_container_instance(cluster="ci-life", containerInstance=arn)["containerInstance"]
        self.assertEqual(d["status"], "INACTIVE")
        self.assertFalse(d["agentConnected"])
        self.assertEqual(self.ecs.list_container_instances(cluster="ci-life")["containerInstanceArns"], [])
        described = self.ecs.describe_container_instances(cluster="ci-life", containerInstances=[arn])
        self.assertEqual(described["containerInstances"][0]["status"], "INACTIVE")
        self.assertClientError("ClientException", self.ecs.register_container_instance, cluster="ci-life",
                               containerInstanceArn=arn)
        self.assertClientError("InvalidParameterException", self.ecs.deregister_container_instance,
                               cluster="ci-life", containerInstance="d" * 32)
        self.assertEqual(self.ecs.describe_clusters(clusters=["ci-life"])["clusters"][0]
                         ["registeredContainerInstancesCount"], 0)
        self.assertEqual(self.ecs.delete_cluster(cluster="ci-life")["cluster"]["status"], "INACTIVE")

    def test_attributes(self):
        self.ecs.create_cluster(clusterName="ci-attr")
        one = self.register("ci-attr")["containerInstanceArn"]
        two = self.register("ci-attr")["containerInstanceArn"]
        put = self.ecs.put_attributes(cluster="ci-attr", attributes=[
            {"name": "stack", "value": "blue", "targetType": "container-instance", "targetId": one.rsplit("/", 1)[1]},
            {"name": "stack", "value": "green", "targetId": two}])["attributes"]
        self.assertEqual(put, [
            {"name": "stack", "value": "blue", "targetType": "container-instance", "targetId": one},
            {"name": "stack", "value": "green", "targetType": "container-instance", "targetId": two}])
        listed = self.ecs.list_attributes(cluster="ci-attr", targetType="container-instance",
                                          attributeName="stack")["attributes"]
        self.assertEqual(sorted((a["targetId"], a["value"]) for a in listed), sorted([(one, "blue"), (two, "green")]))
        only = self.ecs.list_attributes(cluster="ci-attr", targetType="container-instance", attributeName="stack",
                                        attributeValue="green")["attributes"]
        self.assertEqual([a["targetId"] for a in only], [two])

        # Ten custom attributes per instance; the eleventh call fails and changes nothing.
        self.ecs.put_attributes(cluster="ci-attr", attributes=[
            {"name": f"c{i}", "value": "v", "targetId": one} for i in range(9)])
        self.assertClientError("AttributeLimitExceededException", self.ecs.put_attributes, cluster="ci-attr",
                               attributes=[{"name": "c9", "value": "v", "targetId": one}])
        self.assertNotIn("c9", attributes(self.ecs.describe_container_instances(
            cluster="ci-attr", containerInstances=[one])["containerInstances"][0]))
        self.assertClientError("InvalidParameterException", self.ecs.put_attributes, cluster="ci-attr",
                               attributes=[{"name": f"x{i}", "value": "v", "targetId": two} for i in range(11)])
        self.assertClientError("TargetNotFoundException", self.ecs.put_attributes, cluster="ci-attr",
                               attributes=[{"name": "x", "value": "v", "targetId": one.rsplit("/", 1)[0] + "/" + "c" * 32}])
        self.assertClientError("InvalidParameterException", self.ecs.put_attributes, cluster="ci-attr",
                               attributes=[{"name": "x", "value": " lead", "targetId": one}])

        deleted = self.ecs.delete_attributes(cluster="ci-attr", attributes=[{"name": "stack", "targetId": one}])
        self.assertEqual(deleted["attributes"], [{"name": "stack", "targetType": "container-instance", "targetId": one}])
        listed = self.ecs.list_attributes(cluster="ci-attr", targetType="container-instance",
                                          attributeName="stack")["attributes"]
        self.assertEqual([a["targetId"] for a in listed], [two])

        # Every attribute of the cluster, one per page, each once.
        seen, token = [], None
        while True:
            kw = {"nextToken": token} if token else {}
            page = self.ecs.list_attributes(cluster="ci-attr", targetType="container-instance", maxResults=1, **kw)
            seen += [(a["targetId"], a["name"]) for a in page["attributes"]]
            token = page.get("nextToken")
            if not token:
                break
        self.assertEqual(len(seen), len(set(seen)))
        both = self.ecs.describe_container_instances(cluster="ci-attr", containerInstances=[one, two])
        self.assertEqual(len(seen), sum(len(c["attributes"]) for c in both["containerInstances"]))

    def test_tags(self):
        arn = self.register(tags=[{"key": "a", "value": "1"}])["containerInstanceArn"]
        self.ecs.tag_resource(resourceArn=arn, tags=[{"key": "b", "value": "2"}])
        self.assertEqual(self.ecs.list_tags_for_resource(resourceArn=arn)["tags"],
                         [{"key": "a", "value": "1"}, {"key": "b", "value": "2"}])
        self.ecs.untag_resource(resourceArn=arn, tagKeys=["a"])
        self.assertEqual(self.ecs.list_tags_for_resource(resourceArn=arn)["tags"], [{"key": "b", "value": "2"}])
        missing = arn.rsplit("/", 1)[0] + "/" + "a" * 32
        self.assertClientError("ResourceNotFoundException", self.ecs.tag_resource, resourceArn=missing,
                               tags=[{"key": "x", "value": "y"}])

    def test_other_account_cannot_see_or_touch(self):
        arn = self.register()["containerInstanceArn"]
        other, key, secret = h.create_account(self.state_dir, None, "other")
        them = h.ecs_client(self.server.endpoint, key, secret)
        them.create_cluster(clusterName="ci")
        self.assertClientError("AccessDeniedException", them.describe_container_instances, cluster="ci",
                               containerInstances=[arn])
        self.assertClientError("AccessDeniedException", them.deregister_container_instance, cluster="ci",
                               containerInstance=arn)
        mine = self.ecs.describe_container_instances(cluster="ci", containerInstances=[arn])
        self.assertEqual(mine["containerInstances"][0]["status"], "ACTIVE")


    def test_delete_account_reaps_instances(self):
        acct = "%012d" % (int.from_bytes(os.urandom(6), "big") % 10 ** 12)
        _, key, secret = h.create_account(self.state_dir, acct, "doomed")
        doomed = h.ecs_client(self.server.endpoint, key, secret)
        doomed.create_cluster(clusterName="ci")
        arn = doomed.register_container_instance(cluster="ci", tags=[{"key": "t", "value": "1"}],
                                                 attributes=[{"name": "stack", "value": "blue"}])
        arn = arn["containerInstance"]["containerInstanceArn"]
        mine = self.register()["containerInstanceArn"]  # a bystander keeps its instance
        h.admin(self.state_dir, "delete-account", "--account", acct)
        _, key2, secret2 = h.create_account(self.state_dir, acct, "reborn")
        reborn = h.ecs_client(self.server.endpoint, key2, secret2)
        reborn.create_cluster(clusterName="ci")
        d = reborn.describe_container_instances(cluster="ci", containerInstances=[arn])
        self.assertEqual(d["containerInstances"], [])
        self.assertEqual(d["failures"][0]["reason"], "MISSING")
        self.assertEqual(reborn.list_container_instances(cluster="ci")["containerInstanceArns"], [])
        self.assertEqual(reborn.describe_clusters(clusters=["ci"])["clusters"][0]
                         ["registeredContainerInstancesCount"], 0)
        self.assertEqual(reborn.list_attributes(cluster="ci", targetType="container-instance")["attributes"], [])
        self.assertClientError("ResourceNotFoundException", reborn.list_tags_for_resource, resourceArn=arn)
        self.assertEqual(self.ecs.describe_container_instances(cluster="ci", containerInstances=[mine])
                         ["containerInstances"][0]["status"], "ACTIVE")


class _StrictCliOutput(h.ShapeValidator):
    """The CLI prints timestamps as ISO strings; everything else must match the output shape."""

    def _v(self, value, shape, path, errors):
        if shape.type_name == "timestamp" and isinstance(value, str):
            return
        super()._v(value, shape, path, errors)


class _CliContainerInstances:
    CLI = None

    @classmethod
    def setUpClass(cls):
        if cls.CLI is CLI_V2 and not os.path.exists(CLI_V2[0]):
            raise unittest.SkipTest("AWS CLI v2 (/usr/bin/aws) is not installed")
        super().setUpClass()
        cls.home = os.path.join(cls.tmp, "home")
        os.makedirs(cls.home, exist_ok=True)

    def aws(self, operation, *args, expect_rc=0):
        r = subprocess.run(self.CLI + ["--endpoint-url", self.server.endpoint, "--output", "json", "ecs",
                                       operation, *args],
                           env=_cli_env(self.home, self.key_id, self.secret), capture_output=True, text=True,
                           timeout=120)
        if expect_rc is None:
            self.assertNotEqual(r.returncode, 0, f"aws ecs {operation} {args}: {r.stdout}")
        else:
            self.assertEqual(r.returncode, expect_rc, f"aws ecs {operation} {args}: {r.stdout}\n{r.stderr}")
        if r.returncode != 0:
            return r
        out = json.loads(r.stdout) if r.stdout.strip() else {}
        name = "".join(p.capitalize() for p in operation.split("-"))
        shape = h.ECS_MODEL.operation_model(name).output_shape
        errors = _StrictCliOutput().validate(out, shape) if shape is not None else []
        self.assertEqual(errors, [], f"aws ecs {operation}: output violates {name}'s shape")
        return out

    def test_cli_flow(self):
        self.aws("create-cluster", "--cluster-name", "cli-ci")
        ci = self.aws("register-container-instance", "--cluster", "cli-ci", "--total-resources",
                      json.dumps(TOTAL), "--version-info", json.dumps(VERSION), "--attributes",
                      "name=stack,value=blue")["containerInstance"]
        arn = ci["containerInstanceArn"]
        self.assertEqual(ci["status"], "ACTIVE")
        d = self.aws("describe-container-instances", "--cluster", "cli-ci", "--container-instances", arn,
                     "--include", "TAGS", "CONTAINER_INSTANCE_HEALTH")
        self.assertEqual(d["containerInstances"][0]["containerInstanceArn"], arn)
        lst = self.aws("list-container-instances", "--cluster", "cli-ci", "--filter", "attribute:stack == blue")
        self.assertEqual(lst["containerInstanceArns"], [arn])
        self.aws("put-attributes", "--cluster", "cli-ci", "--attributes",
                 f"name=zone,value=a,targetType=container-instance,targetId={arn}")
        attrs = self.aws("list-attributes", "--cluster", "cli-ci", "--target-type", "container-instance",
                         "--attribute-name", "zone")["attributes"]
        self.assertEqual([(a["name"], a["value"]) for a in attrs], [("zone", "a")])
        self.aws("delete-attributes", "--cluster", "cli-ci", "--attributes", f"name=zone,targetId={arn}")
        s = self.aws("update-container-instances-state", "--cluster", "cli-ci", "--container-instances", arn,
                     "--status", "DRAINING")
        self.assertEqual(s["containerInstances"][0]["status"], "DRAINING")
        r = self.aws("update-container-agent", "--cluster", "cli-ci", "--container-instance", arn, expect_rc=None)
        self.assertIn("NoUpdateAvailableException", r.stderr)
        g = self.aws("deregister-container-instance", "--cluster", "cli-ci", "--container-instance", arn)
        self.assertEqual(g["containerInstance"]["status"], "INACTIVE")


class CliV1ContainerInstances(_CliContainerInstances, h.PaddockTestCase):
    CLI = CLI_V1


class CliV2ContainerInstances(_CliContainerInstances, h.PaddockTestCase):
    CLI = CLI_V2


if __name__ == "__main__":
    unittest.main()
