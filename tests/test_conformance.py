"""Conformance: every implemented ECS action through boto3 (every response validated strictly
against botocore's output shape from the RAW body), then the core flow through AWS CLI v1 and v2,
and the `paddock up` bootstrap profile."""

import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402

from botocore.exceptions import ClientError  # noqa: E402


def sorted_tags(tags):
    """Tag order is unspecified by AWS."""
    return sorted(tags, key=lambda t: t["key"])


def uniq(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def full_td(acct, family):
    return {
        "family": family,
        "taskRoleArn": f"arn:aws:iam::{acct}:role/task-role",
        "executionRoleArn": f"arn:aws:iam::{acct}:role/exec-role",
        "networkMode": "awsvpc",
        "requiresCompatibilities": ["EC2"],
        "cpu": "1024",
        "memory": "2048",
        "pidMode": "task",
        "ipcMode": "task",
        "ephemeralStorage": {"sizeInGiB": 50},
        "runtimePlatform": {"cpuArchitecture": "X86_64", "operatingSystemFamily": "LINUX"},
        "enableFaultInjection": False,
        "proxyConfiguration": {
            "type": "APPMESH", "containerName": "envoy",
            "properties": [{"name": "IgnoredUID", "value": "1337"},
                           {"name": "ProxyIngressPort", "value": "15000"},
                           {"name": "ProxyEgressPort", "value": "15001"},
                           {"name": "AppPorts", "value": "80"},
                           {"name": "EgressIgnoredIPs", "value": "169.254.170.2,169.254.169.254"}]},
        "placementConstraints": [{"type": "memberOf", "expression": "attribute:ecs.instance-type =~ t3.*"}],
        "volumes": [
            {"name": "data", "host": {"sourcePath": "/srv/data"}},
            {"name": "scratch", "dockerVolumeConfiguration": {
                "scope": "shared", "autoprovision": True, "driver": "local",
                "driverOpts": {"type": "tmpfs", "device": "tmpfs"}, "labels": {"team": "core"}}},
            {"name": "efs", "efsVolumeConfiguration": {
                "fileSystemId": "fs-12345678", "rootDirectory": "/", "transitEncryption": "ENABLED",
                "transitEncryptionPort": 2049,
                "authorizationConfig": {"accessPointId": "fsap-1234567890abcdef0", "iam": "ENABLED"}}},
            {"name": "empty"},
        ],
        "containerDefinitions": [
            {
                "name": "web",
                "image": "public.ecr.aws/nginx/nginx:1.25",
                "repositoryCredentials": {"credentialsParameter": f"arn:aws:secretsmanager:us-east-1:{acct}:secret:creds-AbCdEf"},
                "cpu": 512, "memory": 1024, "memoryReservation": 512,
                "portMappings": [
                    {"containerPort": 80, "hostPort": 80, "protocol": "tcp", "name": "http", "appProtocol": "http"},
                    {"containerPort": 5353, "hostPort": 5353, "protocol": "udp"}],
                "essential": True,
                "restartPolicy": {"enabled": True, "ignoredExitCodes": [0, 2], "restartAttemptPeriod": 120},
                "entryPoint": ["/bin/sh", "-c"],
                "command": ["exec nginx -g 'daemon off;'"],
                "environment": [{"name": "MODE", "value": "prod"}, {"name": "UNICODE", "value": "h\u00e9llo \u2603 \U0001F600"}],
                "environmentFiles": [{"value": "arn:aws:s3:::my-bucket/app.env", "type": "s3"}],
                "mountPoints": [{"sourceVolume": "data", "containerPath": "/data", "readOnly": False},
                                {"sourceVolume": "efs", "containerPath": "/efs", "readOnly": True}],
                "volumesFrom": [{"sourceContainer": "envoy", "readOnly": True}],
                "linuxParameters": {
                    "capabilities": {"add": ["NET_ADMIN", "SYS_PTRACE"], "drop": ["MKNOD"]},
                    "devices": [{"hostPath": "/dev/fuse", "containerPath": "/dev/fuse", "permissions": ["read", "write"]}],
                    "initProcessEnabled": True, "sharedMemorySize": 64,
                    "tmpfs": [{"containerPath": "/run", "size": 64, "mountOptions": ["noexec", "nosuid"]}],
                    "maxSwap": 512, "swappiness": 10},
                "secrets": [{"name": "DB_PASSWORD", "valueFrom": f"arn:aws:ssm:us-east-1:{acct}:parameter/db/password"}],
                "dependsOn": [{"containerName": "envoy", "condition": "HEALTHY"},
                              {"containerName": "log_router", "condition": "START"}],
                "startTimeout": 60, "stopTimeout": 30,
                "versionConsistency": "disabled",
                "user": "1000:1000",
                "workingDirectory": "/srv",
                "disableNetworking": False,
                "privileged": False,
                "readonlyRootFilesystem": True,
                "dnsSearchDomains": ["svc.local"],
                "dockerSecurityOptions": ["no-new-privileges"],
                "interactive": False,
                "pseudoTerminal": False,
                "dockerLabels": {"com.example.team": "core", "traefik.enable": "true"},
                "ulimits": [{"name": "nofile", "softLimit": 65536, "hardLimit": 65536},
                            {"name": "nproc", "softLimit": 1024, "hardLimit": 2048}],
                "logConfiguration": {
                    "logDriver": "awsfirelens",
                    "options": {"Name": "cloudwatch", "region": "us-east-1", "log_group_name": "/app"},
                    "secretOptions": [{"name": "apikey", "valueFrom": f"arn:aws:ssm:us-east-1:{acct}:parameter/log/key"}]},
                "healthCheck": {"command": ["CMD-SHELL", "curl -f http://localhost/ || exit 1"],
                                "interval": 30, "timeout": 5, "retries": 3, "startPeriod": 10},
                "systemControls": [{"namespace": "net.core.somaxconn", "value": "1024"}],
                "credentialSpecs": ["credentialspecdomainless:arn:aws:s3:::bucket/spec.json"],
            },
            {
                "name": "envoy",
                "image": "public.ecr.aws/appmesh/aws-appmesh-envoy:v1.27.0.0-prod",
                "memory": 256,
                "essential": True,
                "user": "1337",
                "healthCheck": {"command": ["CMD-SHELL", "curl -s http://localhost:9901/server_info | grep state | grep -q LIVE"]},
                "resourceRequirements": [{"type": "GPU", "value": "1"}],
            },
            {
                "name": "log_router",
                "image": "public.ecr.aws/aws-observability/aws-for-fluent-bit:stable",
                "memoryReservation": 50,
                "essential": False,
                "firelensConfiguration": {"type": "fluentbit",
                                          "options": {"enable-ecs-log-metadata": "true"}},
                "logConfiguration": {"logDriver": "awslogs",
                                     "options": {"awslogs-group": "/firelens", "awslogs-region": "us-east-1",
                                                 "awslogs-stream-prefix": "fb"}},
            },
        ],
        "tags": [{"key": "team", "value": "core"}, {"key": "env", "value": ""}],
    }


# Keys AWS adds to every container definition when absent.
CONTAINER_DEFAULTS = {"cpu": 0, "portMappings": [], "essential": True, "environment": [],
                      "mountPoints": [], "volumesFrom": []}
COMPUTED_TD_KEYS = {"taskDefinitionArn", "revision", "status", "requiresAttributes", "compatibilities",
                    "registeredAt", "registeredBy"}


class HarnessSelfTest(unittest.TestCase):
    """The strict validator really is strict (otherwise every 'validated' response proves nothing)."""

    def test_validator_catches_violations(self):
        good = {"cluster": {"clusterArn": "a", "clusterName": "n", "status": "ACTIVE",
                            "registeredContainerInstancesCount": 0, "settings": [{"name": "containerInsights",
                                                                                  "value": "enabled"}],
                            "tags": [{"key": "k", "value": "v"}]}}
        self.assertEqual(h.validate_output("CreateCluster", good), [])
        bad = copy.deepcopy(good)
        bad["cluster"]["surprise"] = 1
        bad["cluster"]["registeredContainerInstancesCount"] = "0"
        bad["cluster"]["tags"][0]["key"] = 5
        bad["cluster"]["settings"][0]["name"] = "notAnEnum"
        bad["cluster"]["statistics"] = {"name": "x"}
        bad["extraTop"] = True
        errs = h.validate_output("CreateCluster", bad)
        self.assertEqual(len(errs), 6, errs)
        self.assertTrue(h.validate_output("CreateCluster", {"cluster": {"runningTasksCount": True}}))
        self.assertTrue(h.validate_output("CreateCluster", {"cluster": None}))
        # Required members: a DescribeClusters failure entry has none required; KeyValuePair none;
        # a ContainerDefinition's Ulimit requires name/softLimit/hardLimit.
        td = {"taskDefinition": {"containerDefinitions": [{"ulimits": [{"name": "nofile"}]}],
                                 "registeredAt": "2024-01-01"}}
        errs = h.validate_output("DescribeTaskDefinition", td)
        self.assertEqual(sum("missing required" in e for e in errs), 2, errs)
        self.assertEqual(sum("timestamp" in e for e in errs), 1, errs)

    def test_client_hook_validates_raw_body(self):
        import http.server
        import threading

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                body = b'{"clusterArns": ["a"], "unexpected": 1}'
                self.send_response(200)
                self.send_header("Content-Type", h.JSON_CT)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        srv = http.server.HTTPServer(("127.0.0.1", 0), H)
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        c = h.ecs_client(f"http://127.0.0.1:{srv.server_port}", "AKIAX", "s")
        with self.assertRaises(h.ShapeViolation) as cm:
            c.list_clusters()
        self.assertIn("unexpected", str(cm.exception))


class ClusterConformance(h.PaddockTestCase):

    def cluster_arn(self, name):
        return f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/{name}"

    def test_create_cluster_default_name(self):
        r = self.ecs.create_cluster()
        self.assertEqual(r["cluster"]["clusterName"], "default")
        self.assertEqual(r["cluster"]["clusterArn"], self.cluster_arn("default"))
        self.assertEqual(r["cluster"]["status"], "ACTIVE")
        # DescribeClusters without `clusters` describes the default cluster.
        d = self.ecs.describe_clusters()
        self.assertEqual([c["clusterName"] for c in d["clusters"]], ["default"])

    def test_create_cluster_full_and_describe_includes(self):
        name = uniq("full")
        tags = [{"key": "team", "value": "core"}, {"key": "empty", "value": ""}]
        settings = [{"name": "containerInsights", "value": "enabled"}]
        config = {"executeCommandConfiguration": {
            "kmsKeyId": "arn:aws:kms:us-east-1:%s:key/1234abcd-12ab-34cd-56ef-1234567890ab" % self.account,
            "logging": "OVERRIDE",
            "logConfiguration": {"cloudWatchLogGroupName": "/ecs/exec", "cloudWatchEncryptionEnabled": True,
                                 "s3BucketName": "exec-logs", "s3EncryptionEnabled": False,
                                 "s3KeyPrefix": "p/"}}}
        r = self.ecs.create_cluster(clusterName=name, tags=tags, settings=settings, configuration=config,
                                    capacityProviders=["FARGATE", "FARGATE_SPOT"],
                                    defaultCapacityProviderStrategy=[
                                        {"capacityProvider": "FARGATE", "weight": 1, "base": 1},
                                        {"capacityProvider": "FARGATE_SPOT", "weight": 4}])
        c = r["cluster"]
        self.assertEqual(c["clusterName"], name)
        self.assertEqual(c["clusterArn"], self.cluster_arn(name))
        self.assertEqual(c["status"], "ACTIVE")
        for k in ("registeredContainerInstancesCount", "runningTasksCount", "pendingTasksCount",
                  "activeServicesCount"):
            self.assertEqual(c[k], 0, k)
        self.assertEqual(c["settings"], settings)
        self.assertEqual(c["capacityProviders"], ["FARGATE", "FARGATE_SPOT"])

        full = self.ecs.describe_clusters(clusters=[name],
                                          include=["TAGS", "SETTINGS", "STATISTICS", "CONFIGURATIONS",
                                                   "ATTACHMENTS"])
        self.assertEqual(full["failures"], [])
        (c,) = full["clusters"]
        self.assertEqual(sorted(c["tags"], key=lambda t: t["key"]), sorted(tags, key=lambda t: t["key"]))
        self.assertEqual(c["settings"], settings)
        self.assertEqual(c["configuration"], config)
        self.assertIsInstance(c["statistics"], list)
        for st in c["statistics"]:
            self.assertEqual(set(st), {"name", "value"})
        strategy = c["defaultCapacityProviderStrategy"]
        self.assertEqual(strategy[0], {"capacityProvider": "FARGATE", "weight": 1, "base": 1})
        # An omitted base may come back as 0 or stay omitted.
        self.assertEqual(dict({"base": 0}, **strategy[1]),
                         {"capacityProvider": "FARGATE_SPOT", "weight": 4, "base": 0})

        # Each include on its own.
        for inc in (["TAGS"], ["SETTINGS"], ["STATISTICS"], ["CONFIGURATIONS"], ["ATTACHMENTS"]):
            r = self.ecs.describe_clusters(clusters=[self.cluster_arn(name)], include=inc)
            self.assertEqual(len(r["clusters"]), 1, inc)
        plain = self.ecs.describe_clusters(clusters=[name])["clusters"][0]
        # Without TAGS the tags are not returned (absent or empty).
        self.assertIn(plain.get("tags", []), ([],))
        with_tags = self.ecs.describe_clusters(clusters=[name], include=["TAGS"])["clusters"][0]
        self.assertEqual(len(with_tags["tags"]), 2)

    def test_describe_clusters_failures_for_missing(self):
        name = uniq("present")
        self.ecs.create_cluster(clusterName=name)
        missing = uniq("missing")
        r = self.ecs.describe_clusters(clusters=[name, missing, self.cluster_arn(missing + "x")])
        self.assertEqual([c["clusterName"] for c in r["clusters"]], [name])
        self.assertEqual(len(r["failures"]), 2, r["failures"])
        self.assertEqual(r["failures"][0], {"arn": self.cluster_arn(missing), "reason": "MISSING"})
        self.assertEqual(r["failures"][1], {"arn": self.cluster_arn(missing + "x"), "reason": "MISSING"})

    def test_create_cluster_is_idempotent(self):
        name = uniq("idem")
        a = self.ecs.create_cluster(clusterName=name)["cluster"]
        b = self.ecs.create_cluster(clusterName=name)["cluster"]
        self.assertEqual(a["clusterArn"], b["clusterArn"])
        arns = self._all_cluster_arns()
        self.assertEqual(arns.count(a["clusterArn"]), 1)

    def _all_cluster_arns(self, page=None):
        arns, token, pages = [], None, 0
        while True:
            kw = {}
            if page:
                kw["maxResults"] = page
            if token:
                kw["nextToken"] = token
            r = self.ecs.list_clusters(**kw)
            pages += 1
            if page:
                self.assertLessEqual(len(r["clusterArns"]), page)
            arns += r["clusterArns"]
            token = r.get("nextToken")
            if not token:
                break
            self.assertLess(pages, 1000)
        return arns

    def test_list_clusters_pagination(self):
        names = [uniq(f"page{i}") for i in range(7)]
        for n in names:
            self.ecs.create_cluster(clusterName=n)
        full = self._all_cluster_arns()
        for size in (1, 3, 100):
            paged = self._all_cluster_arns(page=size)
            self.assertEqual(paged, full, f"maxResults={size}")
            self.assertEqual(len(paged), len(set(paged)), "duplicates across pages")
        for n in names:
            self.assertIn(self.cluster_arn(n), full)
        # botocore's paginator agrees.
        via_paginator = []
        for pg in self.ecs.get_paginator("list_clusters").paginate(PaginationConfig={"PageSize": 2}):
            via_paginator += pg["clusterArns"]
        self.assertEqual(via_paginator, full)

    def test_list_clusters_bad_input(self):
        self.assertClientError("InvalidParameterException", self.ecs.list_clusters, maxResults=0, status=400)
        self.assertClientError("InvalidParameterException", self.ecs.list_clusters, maxResults=101, status=400)
        self.assertClientError("InvalidParameterException", self.ecs.list_clusters, nextToken="bm90LWEtdG9rZW4=")

    def test_delete_cluster(self):
        name = uniq("del")
        self.ecs.create_cluster(clusterName=name)
        r = self.ecs.delete_cluster(cluster=name)
        self.assertEqual(r["cluster"]["status"], "INACTIVE")
        self.assertEqual(r["cluster"]["clusterArn"], self.cluster_arn(name))
        self.assertNotIn(self.cluster_arn(name), self._all_cluster_arns())
        d = self.ecs.describe_clusters(clusters=[name])
        # INACTIVE clusters stay describable for a while (or are reported missing).
        if d["clusters"]:
            self.assertEqual(d["clusters"][0]["status"], "INACTIVE")
        else:
            self.assertEqual(d["failures"][0]["reason"], "MISSING")
        self.assertClientError("ClusterNotFoundException", self.ecs.delete_cluster, cluster=uniq("never"),
                               message="Cluster not found.")
        # Re-creating a deleted cluster gives an ACTIVE cluster again.
        self.assertEqual(self.ecs.create_cluster(clusterName=name)["cluster"]["status"], "ACTIVE")
        self.assertIn(self.cluster_arn(name), self._all_cluster_arns())

    def test_update_cluster_settings_and_capacity_providers(self):
        name = uniq("upd")
        self.ecs.create_cluster(clusterName=name)
        r = self.ecs.update_cluster_settings(cluster=name,
                                             settings=[{"name": "containerInsights", "value": "enhanced"}])
        self.assertEqual(r["cluster"]["settings"], [{"name": "containerInsights", "value": "enhanced"}])
        config = {"executeCommandConfiguration": {"logging": "DEFAULT"}}
        r = self.ecs.update_cluster(cluster=self.cluster_arn(name), configuration=config,
                                    settings=[{"name": "containerInsights", "value": "disabled"}])
        self.assertEqual(r["cluster"]["configuration"], config)
        r = self.ecs.put_cluster_capacity_providers(
            cluster=name, capacityProviders=["FARGATE_SPOT"],
            defaultCapacityProviderStrategy=[{"capacityProvider": "FARGATE_SPOT", "weight": 2, "base": 0}])
        self.assertEqual(r["cluster"]["capacityProviders"], ["FARGATE_SPOT"])
        self.assertEqual(r["cluster"]["defaultCapacityProviderStrategy"],
                         [{"capacityProvider": "FARGATE_SPOT", "weight": 2, "base": 0}])
        d = self.ecs.describe_clusters(clusters=[name], include=["SETTINGS", "CONFIGURATIONS"])["clusters"][0]
        self.assertEqual(d["settings"], [{"name": "containerInsights", "value": "disabled"}])
        self.assertEqual(d["configuration"], config)
        self.assertEqual(d["capacityProviders"], ["FARGATE_SPOT"])
        # Clearing the providers.
        r = self.ecs.put_cluster_capacity_providers(cluster=name, capacityProviders=[],
                                                    defaultCapacityProviderStrategy=[])
        self.assertEqual(r["cluster"]["capacityProviders"], [])
        missing = uniq("nope")
        self.assertClientError("ClusterNotFoundException", self.ecs.update_cluster_settings, cluster=missing,
                               settings=[{"name": "containerInsights", "value": "enabled"}])
        self.assertClientError("ClusterNotFoundException", self.ecs.update_cluster, cluster=missing,
                               configuration=config)
        self.assertClientError("ClusterNotFoundException", self.ecs.put_cluster_capacity_providers,
                               cluster=missing, capacityProviders=[], defaultCapacityProviderStrategy=[])
        self.assertClientError("InvalidParameterException", self.ecs.update_cluster_settings, cluster=name,
                               settings=[{"name": "containerInsights", "value": "sometimes"}])

    def test_cluster_tag_round_trip(self):
        name = uniq("tags")
        arn = self.ecs.create_cluster(clusterName=name, tags=[{"key": "a", "value": "1"}])["cluster"]["clusterArn"]
        self.assertEqual(self.ecs.list_tags_for_resource(resourceArn=arn)["tags"], [{"key": "a", "value": "1"}])
        self.ecs.tag_resource(resourceArn=arn, tags=[{"key": "b", "value": "2"}, {"key": "a", "value": "one"},
                                                     {"key": "sp ace+-=._:/@", "value": "\u00e9t\u00e9"}])
        got = {t["key"]: t["value"] for t in self.ecs.list_tags_for_resource(resourceArn=arn)["tags"]}
        self.assertEqual(got, {"a": "one", "b": "2", "sp ace+-=._:/@": "\u00e9t\u00e9"})
        self.ecs.untag_resource(resourceArn=arn, tagKeys=["a", "not-there"])
        got = {t["key"]: t["value"] for t in self.ecs.list_tags_for_resource(resourceArn=arn)["tags"]}
        self.assertEqual(got, {"b": "2", "sp ace+-=._:/@": "\u00e9t\u00e9"})
        d = self.ecs.describe_clusters(clusters=[name], include=["TAGS"])["clusters"][0]
        self.assertEqual({t["key"]: t["value"] for t in d["tags"]}, got)
        missing = self.cluster_arn(uniq("ghost"))
        self.assertClientError("ClusterNotFoundException", self.ecs.tag_resource, resourceArn=missing,
                               tags=[{"key": "x", "value": "y"}])
        self.assertClientError("InvalidParameterException", self.ecs.list_tags_for_resource,
                               resourceArn="arn:aws:ecr:us-east-1:%s:repository/x" % self.account,
                               message="The ARN provided is invalid.")
        self.assertClientError("InvalidParameterException", self.ecs.tag_resource, resourceArn=arn,
                               tags=[{"key": "aws:reserved", "value": "x"}])

    # A duplicated tag key is refused (InvalidParameterException) rather than half-stored.
    def test_duplicate_tag_keys_response_matches_stored_state(self):
        dup = [{"key": "a", "value": "1"}, {"key": "a", "value": "2"}]
        name = uniq("dup")
        try:
            created = self.ecs.create_cluster(clusterName=name, tags=dup)["cluster"]
        except ClientError as e:
            self.assertEqual(e.response["Error"]["Code"], "InvalidParameterException")
        else:
            stored = self.ecs.list_tags_for_resource(resourceArn=created["clusterArn"])["tags"]
            self.assertEqual(sorted_tags(created["tags"]), sorted_tags(stored))
        try:
            r = self.ecs.register_task_definition(**h.td_min(uniq("dup"), tags=dup))
        except ClientError as e:
            self.assertEqual(e.response["Error"]["Code"], "InvalidParameterException")
        else:
            stored = self.ecs.list_tags_for_resource(resourceArn=r["taskDefinition"]["taskDefinitionArn"])["tags"]
            self.assertEqual(sorted_tags(r["tags"]), sorted_tags(stored))

    def test_tagging_limits(self):
        name = uniq("lim")
        arn = self.ecs.create_cluster(clusterName=name)["cluster"]["clusterArn"]
        self.ecs.tag_resource(resourceArn=arn, tags=[{"key": f"k{i}", "value": "v"} for i in range(50)])
        self.assertEqual(len(self.ecs.list_tags_for_resource(resourceArn=arn)["tags"]), 50)
        self.assertClientError("InvalidParameterException", self.ecs.tag_resource, resourceArn=arn,
                               tags=[{"key": "one-too-many", "value": "v"}])
        # Overwriting an existing key does not count as a new tag.
        self.ecs.tag_resource(resourceArn=arn, tags=[{"key": "k0", "value": "new"}])
        self.assertClientError("InvalidParameterException", self.ecs.create_cluster, clusterName=uniq("lim"),
                               tags=[{"key": f"k{i}", "value": "v"} for i in range(51)])
        self.assertClientError("InvalidParameterException", self.ecs.tag_resource, resourceArn=arn,
                               tags=[{"key": "k" * 129, "value": "v"}])
        self.assertClientError("InvalidParameterException", self.ecs.tag_resource, resourceArn=arn,
                               tags=[{"key": "AwS:mixed", "value": "v"}])
        self.assertClientError("InvalidParameterException", self.ecs.list_tags_for_resource,
                               resourceArn=arn.replace("us-east-1", "eu-west-1"))

    def test_unknown_operation(self):
        # An action in botocore's model that Paddock does not implement (docs/api-coverage.md).
        resp = self.assertClientError("UnknownOperationException", self.ecs.list_daemons)
        self.assertEqual(resp["ResponseMetadata"]["HTTPStatusCode"], 400)


class TaskDefinitionConformance(h.PaddockTestCase):

    def td_arn(self, family, rev):
        return f"arn:aws:ecs:{h.REGION}:{self.account}:task-definition/{family}:{rev}"

    def register(self, family, **extra):
        return self.ecs.register_task_definition(**h.td_min(family, **extra))["taskDefinition"]

    def test_register_minimal_defaults_and_revisions(self):
        fam = uniq("min")
        td = self.register(fam)
        self.assertEqual(td["family"], fam)
        self.assertEqual(td["revision"], 1)
        self.assertEqual(td["taskDefinitionArn"], self.td_arn(fam, 1))
        self.assertEqual(td["status"], "ACTIVE")
        self.assertLess(abs(td["registeredAt"].timestamp() - time.time()), 300)
        self.assertTrue(td["registeredBy"].startswith(f"arn:aws:iam::{self.account}:"), td["registeredBy"])
        (c,) = td["containerDefinitions"]
        for k, v in CONTAINER_DEFAULTS.items():
            self.assertEqual(c[k], v, k)
        self.assertEqual(td["volumes"], [])
        self.assertEqual(td["placementConstraints"], [])
        self.assertNotIn("requiresCompatibilities", td)
        self.assertIn("EC2", td["compatibilities"])
        for rev in (2, 3):
            self.assertEqual(self.register(fam)["revision"], rev)
        # Describe by bare family (latest ACTIVE), family:rev and ARN.
        self.assertEqual(self.ecs.describe_task_definition(taskDefinition=fam)["taskDefinition"]["revision"], 3)
        self.assertEqual(self.ecs.describe_task_definition(taskDefinition=f"{fam}:2")["taskDefinition"]["revision"], 2)
        d = self.ecs.describe_task_definition(taskDefinition=self.td_arn(fam, 1))["taskDefinition"]
        self.assertEqual(d["revision"], 1)
        # Raw registeredAt is epoch seconds (a JSON number) and matches the register response.
        raw = h.raw_last_body(self.ecs)["taskDefinition"]["registeredAt"]
        self.assertIsInstance(raw, (int, float))
        self.assertLess(abs(raw - time.time()), 300)
        self.assertEqual(d, td)

    def test_describe_errors(self):
        fam = uniq("err")
        self.assertClientError("ClientException", self.ecs.describe_task_definition, taskDefinition=fam,
                               message="Unable to describe task definition.")
        self.register(fam)
        self.assertClientError("ClientException", self.ecs.describe_task_definition, taskDefinition=f"{fam}:2",
                               message="Unable to describe task definition.")
        self.assertClientError("ClientException", self.ecs.register_task_definition,
                               family="bad family!", containerDefinitions=[{"name": "a", "image": "b", "memory": 8}],
                               message="Family contains invalid characters.")
        self.assertClientError("ClientException", self.ecs.register_task_definition,
                               family=fam, containerDefinitions=[{"name": "a", "image": "", "memory": 8}],
                               message="Container.image should not be null or empty.")

    def test_full_featured_round_trip(self):
        fam = uniq("full")
        req = full_td(self.account, fam)
        sent = copy.deepcopy(req)
        r = self.ecs.register_task_definition(**req)
        self.assertEqual(req, sent, "boto3 mutated the request")
        self.assertEqual(sorted_tags(r["tags"]), sorted_tags(sent["tags"]))
        for how in (fam, f"{fam}:1", self.td_arn(fam, 1)):
            d = self.ecs.describe_task_definition(taskDefinition=how, include=["TAGS"])
            raw = h.raw_last_body(self.ecs)
            self.assertEqual(sorted_tags(raw["tags"]), sorted_tags(sent["tags"]))
            td = raw["taskDefinition"]
            self.assertEqual(d["taskDefinition"]["revision"], 1)
            # Every task-level field exactly as sent (tags come back beside, not inside).
            for k, v in sent.items():
                if k in ("tags", "containerDefinitions"):
                    continue
                self.assertIn(k, td, k)
                self.assertEqual(td[k], v, k)
            # Every container field exactly as sent; AWS's defaults for the rest.
            self.assertEqual([c["name"] for c in td["containerDefinitions"]],
                             [c["name"] for c in sent["containerDefinitions"]])
            for got, want in zip(td["containerDefinitions"], sent["containerDefinitions"]):
                for k, v in want.items():
                    self.assertEqual(got.get(k), v, f"{want['name']}.{k}")
                for k, v in CONTAINER_DEFAULTS.items():
                    if k not in want:
                        self.assertEqual(got.get(k), v, f"{want['name']}.{k} default")
                extra = set(got) - set(want) - set(CONTAINER_DEFAULTS) - {"systemControls"}
                self.assertEqual(extra, set(), f"unexpected container keys in {want['name']}")
            # Computed fields.
            extra = set(td) - set(sent) - COMPUTED_TD_KEYS
            self.assertEqual(extra, set(), "unexpected task-level keys")
            self.assertEqual(td["taskDefinitionArn"], self.td_arn(fam, 1))
            self.assertEqual(td["status"], "ACTIVE")
            self.assertIsInstance(td["registeredAt"], (int, float))
            self.assertEqual(td["registeredBy"].split(":")[4], self.account)
            self.assertIn("EC2", td["compatibilities"])
            names = {a["name"] for a in td["requiresAttributes"]}
            for need in ("ecs.capability.task-eni", "com.amazonaws.ecs.capability.task-iam-role",
                         "ecs.capability.container-health-check", "ecs.capability.container-ordering",
                         "ecs.capability.secrets.ssm.environment-variables"):
                self.assertIn(need, names)
        # String cpu/memory forms are normalised to unit strings.
        td2 = self.register(uniq("units"), cpu="1 vCPU", memory="2 GB")
        self.assertEqual((td2["cpu"], td2["memory"]), ("1024", "2048"))

    def test_secrets_need_execution_role(self):
        req = h.td_min(uniq("sec"))
        req["containerDefinitions"][0]["secrets"] = [{"name": "S", "valueFrom": "arn:aws:ssm:us-east-1:%s:parameter/s" % self.account}]
        self.assertClientError(
            "ClientException", self.ecs.register_task_definition, **req,
            message="When you are specifying container secrets, you must also specify a value for 'executionRoleArn'.")

    def test_list_task_definitions_filters_sort_pagination(self):
        a, b = uniq("lta"), uniq("ltb")
        for _ in range(4):
            self.register(a)
        for _ in range(3):
            self.register(b)
        self.ecs.deregister_task_definition(taskDefinition=f"{a}:2")
        self.ecs.deregister_task_definition(taskDefinition=f"{b}:3")

        def all_pages(**kw):
            out, token, n = [], None, 0
            while True:
                args = dict(kw)
                if token:
                    args["nextToken"] = token
                r = self.ecs.list_task_definitions(**args)
                if "maxResults" in kw:
                    self.assertLessEqual(len(r["taskDefinitionArns"]), kw["maxResults"])
                out += r["taskDefinitionArns"]
                token = r.get("nextToken")
                n += 1
                self.assertLess(n, 1000)
                if not token:
                    return out

        self.assertEqual(all_pages(familyPrefix=a), [self.td_arn(a, r) for r in (1, 3, 4)])
        self.assertEqual(all_pages(familyPrefix=a, status="ACTIVE"), [self.td_arn(a, r) for r in (1, 3, 4)])
        self.assertEqual(all_pages(familyPrefix=a, status="INACTIVE"), [self.td_arn(a, 2)])
        self.assertEqual(all_pages(familyPrefix=a, sort="DESC"), [self.td_arn(a, r) for r in (4, 3, 1)])
        self.assertEqual(all_pages(familyPrefix=a, maxResults=1), [self.td_arn(a, r) for r in (1, 3, 4)])
        self.assertEqual(all_pages(familyPrefix=a, maxResults=2, sort="DESC"),
                         [self.td_arn(a, r) for r in (4, 3, 1)])
        everything = all_pages()
        mine = [x for x in everything if f"/{a}:" in x or f"/{b}:" in x]
        want = [self.td_arn(a, r) for r in (1, 3, 4)] + [self.td_arn(b, r) for r in (1, 2)]
        self.assertEqual(mine, sorted(want, key=lambda s: (s.rsplit(":", 1)[0], int(s.rsplit(":", 1)[1]))))
        self.assertEqual(all_pages(maxResults=2), everything)
        desc = all_pages(sort="DESC", maxResults=3)
        self.assertEqual(desc, list(reversed(everything)))
        # familyPrefix on ListTaskDefinitions is the full family name (exact match).
        self.assertEqual(all_pages(familyPrefix=a[:-2]), [])
        self.assertClientError("InvalidParameterException", self.ecs.list_task_definitions, maxResults=0)
        self.assertClientError("InvalidParameterException", self.ecs.list_task_definitions,
                               nextToken="garbage-token")

    def test_list_task_definition_families(self):
        p = uniq("fam")
        act, inact = p + "-act", p + "-inact"
        self.register(act)
        self.register(act)
        self.register(inact)
        self.ecs.deregister_task_definition(taskDefinition=f"{inact}:1")
        self.ecs.deregister_task_definition(taskDefinition=f"{act}:1")

        def fams(**kw):
            out, token = [], None
            while True:
                args = dict(kw)
                if token:
                    args["nextToken"] = token
                r = self.ecs.list_task_definition_families(**args)
                out += r["families"]
                token = r.get("nextToken")
                if not token:
                    return out

        self.assertEqual(fams(familyPrefix=p), [act, inact])
        self.assertEqual(fams(familyPrefix=p, status="ALL"), [act, inact])
        self.assertEqual(fams(familyPrefix=p, status="ACTIVE"), [act])
        self.assertEqual(fams(familyPrefix=p, status="INACTIVE"), [inact])
        self.assertEqual(fams(familyPrefix=p, maxResults=1), [act, inact])
        self.assertEqual(fams(familyPrefix=uniq("nothing")), [])
        every = fams()
        self.assertEqual(fams(maxResults=1), every)
        self.assertEqual(every, sorted(every))

    def test_deregister(self):
        fam = uniq("dereg")
        self.register(fam)
        self.register(fam)
        r = self.ecs.deregister_task_definition(taskDefinition=f"{fam}:2")["taskDefinition"]
        self.assertEqual(r["status"], "INACTIVE")
        self.assertIn("deregisteredAt", r)
        # Bare family now resolves to the latest ACTIVE revision.
        self.assertEqual(self.ecs.describe_task_definition(taskDefinition=fam)["taskDefinition"]["revision"], 1)
        # The INACTIVE revision is still describable by revision.
        d = self.ecs.describe_task_definition(taskDefinition=f"{fam}:2")["taskDefinition"]
        self.assertEqual(d["status"], "INACTIVE")
        # Deregistering again succeeds and keeps deregisteredAt.
        again = self.ecs.deregister_task_definition(taskDefinition=self.td_arn(fam, 2))["taskDefinition"]
        self.assertEqual(again["status"], "INACTIVE")
        self.assertEqual(again["deregisteredAt"], r["deregisteredAt"])
        self.assertClientError("ClientException", self.ecs.deregister_task_definition, taskDefinition=fam)
        self.assertClientError("ClientException", self.ecs.deregister_task_definition,
                               taskDefinition=f"{fam}:99")
        self.ecs.deregister_task_definition(taskDefinition=f"{fam}:1")
        self.assertClientError("ClientException", self.ecs.describe_task_definition, taskDefinition=fam,
                               message="Unable to describe task definition.")
        # A new registration continues the revision sequence.
        self.assertEqual(self.register(fam)["revision"], 3)

    def test_delete_task_definitions_mixed(self):
        fam = uniq("delete")
        for _ in range(3):
            self.register(fam)
        self.ecs.deregister_task_definition(taskDefinition=f"{fam}:1")
        self.ecs.deregister_task_definition(taskDefinition=f"{fam}:2")
        refs = [f"{fam}:1", self.td_arn(fam, 2), f"{fam}:3", f"{fam}:9", fam, uniq("none") + ":1"]
        r = self.ecs.delete_task_definitions(taskDefinitions=refs)
        self.assertEqual([t["revision"] for t in r["taskDefinitions"]], [1, 2])
        for t in r["taskDefinitions"]:
            self.assertEqual(t["status"], "DELETE_IN_PROGRESS")
            self.assertIn("deleteRequestedAt", t)
        fails = {f["arn"]: f["reason"] for f in r["failures"]}
        self.assertEqual(set(fails), {f"{fam}:3", f"{fam}:9", fam, refs[5]})
        self.assertIn("ACTIVE", fails[f"{fam}:3"])
        self.assertIn("does not exist", fails[f"{fam}:9"])
        self.assertIn("invalid", fails[fam])
        # Deleted revisions are no longer listed as INACTIVE; the ACTIVE one stays.
        inactive = self.ecs.list_task_definitions(familyPrefix=fam, status="INACTIVE")["taskDefinitionArns"]
        self.assertEqual(inactive, [])
        self.assertEqual(self.ecs.list_task_definitions(familyPrefix=fam)["taskDefinitionArns"],
                         [self.td_arn(fam, 3)])
        self.assertClientError("InvalidParameterException", self.ecs.delete_task_definitions, taskDefinitions=[])
        self.assertClientError("InvalidParameterException", self.ecs.delete_task_definitions,
                               taskDefinitions=[f"{fam}:{i}" for i in range(1, 12)])

    def test_task_definition_tag_round_trip(self):
        fam = uniq("tdtag")
        td = self.ecs.register_task_definition(**h.td_min(fam, tags=[{"key": "k1", "value": "v1"}]))
        arn = td["taskDefinition"]["taskDefinitionArn"]
        self.assertEqual(td["tags"], [{"key": "k1", "value": "v1"}])
        self.assertEqual(self.ecs.list_tags_for_resource(resourceArn=arn)["tags"], [{"key": "k1", "value": "v1"}])
        self.ecs.tag_resource(resourceArn=arn, tags=[{"key": "k2", "value": "v2"}])
        self.ecs.untag_resource(resourceArn=arn, tagKeys=["k1"])
        self.assertEqual(self.ecs.list_tags_for_resource(resourceArn=arn)["tags"], [{"key": "k2", "value": "v2"}])
        d = self.ecs.describe_task_definition(taskDefinition=arn, include=["TAGS"])
        self.assertEqual(d["tags"], [{"key": "k2", "value": "v2"}])
        # Without include=TAGS no tags come back.
        d = self.ecs.describe_task_definition(taskDefinition=arn)
        self.assertIn(d.get("tags", []), ([],))
        # Tags are per revision.
        arn2 = self.register(fam)["taskDefinitionArn"]
        self.assertEqual(self.ecs.list_tags_for_resource(resourceArn=arn2)["tags"], [])
        # The error code for an unknown task definition is not pinned down by AWS docs.
        missing = self.td_arn(fam, 77)
        with self.assertRaises(ClientError) as cm:
            self.ecs.tag_resource(resourceArn=missing, tags=[{"key": "a", "value": "b"}])
        self.assertEqual(cm.exception.response["ResponseMetadata"]["HTTPStatusCode"], 400)
        self.assertIn(cm.exception.response["Error"]["Code"],
                      ("ResourceNotFoundException", "ClientException", "InvalidParameterException"))


# ----------------------------------------------------------------------------------------------
# AWS CLI v1 and v2


def _cli_env(home, key_id=None, secret=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["HOME"] = home
    env["AWS_CONFIG_FILE"] = os.path.join(home, ".aws", "config")
    env["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(home, ".aws", "credentials")
    env["AWS_PAGER"] = ""
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    if key_id:
        env["AWS_ACCESS_KEY_ID"] = key_id
        env["AWS_SECRET_ACCESS_KEY"] = secret
        env["AWS_DEFAULT_REGION"] = h.REGION
    return env


CLI_V1 = [sys.executable, "-m", "awscli"]
CLI_V2 = ["/usr/bin/aws"]


class _CliFlow:
    CLI = None

    @classmethod
    def setUpClass(cls):
        if cls.CLI is CLI_V2 and not os.path.exists(CLI_V2[0]):
            raise unittest.SkipTest("AWS CLI v2 (/usr/bin/aws) is not installed")
        if cls.CLI is CLI_V2:
            v = subprocess.run(CLI_V2 + ["--version"], capture_output=True, text=True)
            if "aws-cli/2" not in v.stdout + v.stderr:
                raise unittest.SkipTest(f"/usr/bin/aws is not AWS CLI v2: {v.stdout}{v.stderr}")
        super().setUpClass()
        cls.home = os.path.join(cls.tmp, "home")
        os.makedirs(cls.home, exist_ok=True)

    def aws(self, *args, expect_rc=0):
        r = subprocess.run(self.CLI + ["--endpoint-url", self.server.endpoint, "--output", "json", *args],
                           env=_cli_env(self.home, self.key_id, self.secret), capture_output=True,
                           text=True, timeout=120)
        if expect_rc is not None:
            self.assertEqual(r.returncode, expect_rc, f"aws {args}: {r.stdout}\n{r.stderr}")
        if r.returncode == 0 and r.stdout.strip():
            return json.loads(r.stdout)
        return r

    def test_core_flow(self):
        name = uniq("cli")
        c = self.aws("ecs", "create-cluster", "--cluster-name", name, "--tags", "key=t,value=1")["cluster"]
        self.assertEqual(c["clusterName"], name)
        arns = self.aws("ecs", "list-clusters")["clusterArns"]
        self.assertIn(c["clusterArn"], arns)
        d = self.aws("ecs", "describe-clusters", "--clusters", name, "missing-" + name, "--include", "TAGS")
        self.assertEqual(d["clusters"][0]["tags"], [{"key": "t", "value": "1"}])
        self.assertEqual(d["failures"][0]["reason"], "MISSING")
        fam = uniq("clitd")
        containers = json.dumps([{"name": "app", "image": "busybox", "memory": 64,
                                  "environment": [{"name": "X", "value": "y"}],
                                  "portMappings": [{"containerPort": 8080}]}])
        td = self.aws("ecs", "register-task-definition", "--family", fam, "--container-definitions", containers,
                      "--cpu", "256", "--memory", "512")["taskDefinition"]
        self.assertEqual(td["revision"], 1)
        req = full_td(self.account, fam)
        if self.CLI is CLI_V2:
            # Debian's CLI v2 (2.9) carries an older ECS model without these members.
            req.pop("enableFaultInjection")
            for k in ("restartPolicy", "versionConsistency", "credentialSpecs"):
                req["containerDefinitions"][0].pop(k)
        path = os.path.join(self.tmp, f"{fam}.json")
        with open(path, "w") as f:
            json.dump(req, f)
        td2 = self.aws("ecs", "register-task-definition", "--cli-input-json", "file://" + path)["taskDefinition"]
        self.assertEqual(td2["revision"], 2)
        self.assertEqual(td2["containerDefinitions"][0]["linuxParameters"],
                         req["containerDefinitions"][0]["linuxParameters"])
        got = self.aws("ecs", "describe-task-definition", "--task-definition", fam, "--include", "TAGS")
        self.assertEqual(got["taskDefinition"]["revision"], 2)
        self.assertEqual(sorted_tags(got["tags"]), sorted_tags(req["tags"]))
        self.assertEqual(got["taskDefinition"]["volumes"], req["volumes"])
        # --page-size 1 makes the CLI follow nextToken across pages.
        lst = self.aws("ecs", "list-task-definitions", "--family-prefix", fam, "--sort", "DESC",
                       "--page-size", "1")
        self.assertEqual([a.rsplit(":", 1)[1] for a in lst["taskDefinitionArns"]], ["2", "1"])
        self.aws("ecs", "tag-resource", "--resource-arn", td["taskDefinitionArn"], "--tags", "key=k,value=v")
        tags = self.aws("ecs", "list-tags-for-resource", "--resource-arn", td["taskDefinitionArn"])["tags"]
        self.assertEqual(tags, [{"key": "k", "value": "v"}])
        dereg = self.aws("ecs", "deregister-task-definition", "--task-definition", f"{fam}:1")
        self.assertEqual(dereg["taskDefinition"]["status"], "INACTIVE")
        if self.CLI is CLI_V1:  # CLI v2 2.9 predates DeleteTaskDefinitions
            dl = self.aws("ecs", "delete-task-definitions", "--task-definitions", f"{fam}:1", f"{fam}:2")
            self.assertEqual(len(dl["taskDefinitions"]), 1)
            self.assertEqual(len(dl["failures"]), 1)
        self.aws("ecs", "put-cluster-capacity-providers", "--cluster", name, "--capacity-providers", "FARGATE",
                 "--default-capacity-provider-strategy", "capacityProvider=FARGATE,weight=1")
        self.assertEqual(self.aws("ecs", "delete-cluster", "--cluster", name)["cluster"]["status"], "INACTIVE")
        # Errors surface as the CLI's ClientError line with the AWS code.
        r = self.aws("ecs", "describe-task-definition", "--task-definition", uniq("nope"), expect_rc=None)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ClientException", r.stderr)
        self.assertIn("Unable to describe task definition.", r.stderr)


class CliV1Flow(_CliFlow, h.PaddockTestCase):
    CLI = CLI_V1


class CliV2Flow(_CliFlow, h.PaddockTestCase):
    CLI = CLI_V2


class UpBootstrap(unittest.TestCase):
    """`paddock up` creates an account, a key and the `paddock` profile; the CLI then just works."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="paddock-up-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(self.home)
        env = dict(os.environ)
        env["HOME"] = self.home
        for k in list(env):
            if k.startswith("AWS_"):
                del env[k]
        self.state = os.path.join(self.tmp, "state")
        self.server = h.Server(self.state, mode="up", env=env)
        self.server.start()
        self.addCleanup(self.server.stop)

    def test_up_writes_profile_and_cli_works(self):
        for f in ("credentials", "config"):
            self.assertTrue(os.path.exists(os.path.join(self.state, f)), f)
        with open(os.path.join(self.home, ".aws", "config")) as f:
            config = f.read()
        self.assertIn("[profile paddock]", config)
        self.assertIn(f"endpoint_url = {self.server.endpoint}", config)
        with open(os.path.join(self.home, ".aws", "credentials")) as f:
            self.assertIn("[paddock]", f.read())
        env = _cli_env(self.home)
        # CLI v1 (botocore 1.43) honours endpoint_url from the profile.
        r = subprocess.run(CLI_V1 + ["--profile", "paddock", "ecs", "list-clusters"], env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), {"clusterArns": []})
        r = subprocess.run(CLI_V1 + ["--profile", "paddock", "ecs", "create-cluster", "--cluster-name", "up1"],
                           env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        accounts = h.admin(self.state, "list-accounts")
        self.assertEqual(len(accounts), 1)
        self.assertIn(f":{accounts[0]['account']}:cluster/up1", r.stdout)
        # CLI v2: Debian's 2.9 predates endpoint_url in profiles (added in 2.13), so pass it explicitly.
        if os.path.exists(CLI_V2[0]):
            r = subprocess.run(CLI_V2 + ["--profile", "paddock", "--endpoint-url", self.server.endpoint,
                                         "ecs", "list-clusters"], env=env, capture_output=True, text=True,
                               timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(len(json.loads(r.stdout)["clusterArns"]), 1)

    def test_up_restart_keeps_account(self):
        before = h.admin(self.state, "list-accounts")
        with open(os.path.join(self.state, "credentials")) as f:
            creds = f.read()
        self.server.stop()
        env = dict(os.environ, HOME=self.home)
        again = h.Server(self.state, mode="up", env=env).start()
        self.addCleanup(again.stop)
        self.assertEqual(h.admin(self.state, "list-accounts"), before)
        with open(os.path.join(self.state, "credentials")) as f:
            self.assertEqual(f.read(), creds)
        with open(os.path.join(self.home, ".aws", "config")) as f:
            self.assertIn(f"endpoint_url = {again.endpoint}", f.read())


if __name__ == "__main__":
    unittest.main()
