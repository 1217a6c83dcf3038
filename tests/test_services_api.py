"""ECS services through the API (docs/contracts/service.md), boto3 against a real server: create,
describe, list, update, delete, tags, idempotency, the service-deployment actions and their errors,
with every answer validated strictly against botocore's output shapes by the harness (raw body).
No containers run: the services are scaled to 0, or their tasks target EC2 in a cluster without
container instances, so nothing can be placed. The assertions hold with the service scheduler running
too: a scaled-to-0 deployment completes and an ACTIVE one without tasks is dropped at any moment, so
what depends on that uses an unplaceable EC2 service (its rollout never completes) or is asserted on
the changing call's own answer, which is rendered in its transaction."""

import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402
from test_conformance import CLI_V1, CLI_V2, _cli_env  # noqa: E402
from test_container_instances import _StrictCliOutput  # noqa: E402

DEPLOYMENT_ID = re.compile(r"^ecs-svc/\d{19}$")


class ServicesApi(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)
        cls.subnet = cls.ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        cls.ecs.create_cluster(clusterName="svc")
        cls.td1 = cls.register("svc-web", "nginx:1")
        cls.td2 = cls.register("svc-web", "nginx:2")
        cls.bridge = cls.ecs.register_task_definition(**h.td_min("svc-bridge"))["taskDefinition"]["taskDefinitionArn"]
        bridge2 = h.td_min("svc-bridge")
        bridge2["containerDefinitions"][0]["image"] = "busybox:2"
        cls.bridge2 = cls.ecs.register_task_definition(**bridge2)["taskDefinition"]["taskDefinitionArn"]

    @classmethod
    def register(cls, family, image):
        return cls.ecs.register_task_definition(
            family=family, networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "app", "image": image}])["taskDefinition"]["taskDefinitionArn"]

    def unplaceable(self, name, **kw):
        """An EC2 service of desiredCount 1 in "svc", which has no container instances: its tasks can
        never be placed, so its deployment stays IN_PROGRESS whatever the scheduler does."""
        return self.create(name, taskDefinition=self.bridge, launchType="EC2", networkConfiguration=None,
                           desiredCount=1, **kw)

    def network(self, **extra):
        cfg = {"subnets": [self.subnet]}
        cfg.update(extra)
        return {"awsvpcConfiguration": cfg}

    def create(self, name, **kw):
        """CreateService in "svc" (FARGATE, web:1, desiredCount 0) with `kw` over that; None drops a member."""
        args = dict(cluster="svc", serviceName=name, taskDefinition=self.td1, desiredCount=0, launchType="FARGATE",
                    networkConfiguration=self.network())
        args.update(kw)
        args = {k: v for k, v in args.items() if v is not None}
        return self.ecs.create_service(**args)["service"]

    def describe(self, *names, **kw):
        return self.ecs.describe_services(cluster="svc", services=list(names), **kw)

    def arn(self, name, cluster="svc"):
        return f"arn:aws:ecs:{h.REGION}:{self.account}:service/{cluster}/{name}"

    # ---- CreateService / DescribeServices ----

    def test_create_and_describe(self):
        s = self.create("web", tags=[{"key": "team", "value": "core"}], propagateTags="SERVICE",
                        healthCheckGracePeriodSeconds=15,
                        deploymentConfiguration={"maximumPercent": 150, "minimumHealthyPercent": 50,
                                                 "deploymentCircuitBreaker": {"enable": True, "rollback": True}})
        self.assertEqual(s["serviceArn"], self.arn("web"))
        self.assertEqual(s["status"], "ACTIVE")
        self.assertEqual(s["desiredCount"], 0)
        self.assertEqual(s["launchType"], "FARGATE")
        self.assertEqual(s["platformVersion"], "LATEST")
        self.assertEqual(s["taskDefinition"], self.td1)
        self.assertEqual(s["tags"], [{"key": "team", "value": "core"}])
        self.assertEqual(s["deploymentConfiguration"]["maximumPercent"], 150)
        self.assertEqual(s["deploymentConfiguration"]["deploymentCircuitBreaker"], {"enable": True, "rollback": True})
        self.assertEqual(s["events"], [])
        self.assertEqual(len(s["deployments"]), 1)
        d = s["deployments"][0]
        self.assertRegex(d["id"], DEPLOYMENT_ID)
        self.assertEqual(d["status"], "PRIMARY")
        self.assertEqual(d["rolloutState"], "IN_PROGRESS")
        self.assertEqual(d["rolloutStateReason"], f"ECS deployment {d['id']} in progress.")
        self.assertEqual(d["platformVersion"], "1.4.0")
        self.assertTrue(s["createdBy"].startswith("arn:aws:iam::"))
        self.assertRegex(s["currentServiceDeployment"],
                         rf"^arn:aws:ecs:{h.REGION}:{self.account}:service-deployment/svc/web/[A-Za-z0-9_-]{{21}}$")

        described = self.describe("web", self.arn("web"), "nope", include=["TAGS"])
        self.assertEqual(len(described["services"]), 2)
        self.assertEqual(described["services"][0]["tags"], [{"key": "team", "value": "core"}])
        # A missing name comes back as service/<name>, without the cluster, as on AWS.
        self.assertEqual(described["failures"],
                         [{"arn": f"arn:aws:ecs:{h.REGION}:{self.account}:service/nope", "reason": "MISSING"}])
        self.assertNotIn("tags", self.describe("web")["services"][0])

    def test_create_refuses_bad_input(self):
        self.assertClientError("InvalidParameterException", self.create, "bad name!", message_contains="is invalid")
        self.assertClientError("InvalidParameterException", self.create, "x", desiredCount=-1,
                               message_contains="desiredCount")
        self.assertClientError("InvalidParameterException", self.create, "x", schedulingStrategy="DAEMON",
                               message="The daemon scheduling strategy does not support a desired count for services. "
                                       "Remove the desired count value and try again")
        self.assertClientError(
            "InvalidParameterException", self.create, "x",
            capacityProviderStrategy=[{"capacityProvider": "FARGATE"}],
            message="Specifying both a launch type and capacity provider strategy is not supported. Remove one and try again.")
        self.assertClientError("InvalidParameterException", self.create, "x",
                               deploymentController={"type": "CODE_DEPLOY"}, message_contains="CODE_DEPLOY")
        self.assertClientError("InvalidParameterException", self.create, "x", networkConfiguration=None,
                               message="Network Configuration must be provided when networkMode 'awsvpc' is specified.")
        self.assertClientError("InvalidParameterException", self.create, "x", taskDefinition=self.bridge,
                               launchType="EC2",
                               message="Network Configuration is not valid for the given networkMode of this task definition.")
        self.assertClientError("InvalidParameterException", self.create, "x",
                               deploymentConfiguration={"minimumHealthyPercent": 120},
                               message_contains="minimumHealthyPercent")
        self.assertClientError("ClusterNotFoundException", self.create, "x", cluster="nope")
        self.assertClientError("PlatformUnknownException", self.create, "x", platformVersion="0.1.0")
        self.assertClientError("InvalidParameterException", self.create, "x",
                               placementStrategy=[{"type": "random"}],
                               message="Placement strategies are not supported with FARGATE launch type.")
        self.assertEqual(self.describe("x")["failures"][0]["reason"], "MISSING")

    def test_inactive_revision_is_refused(self):
        td = self.register("svc-old", "nginx:old")
        self.ecs.deregister_task_definition(taskDefinition=td)
        self.assertClientError("ClientException", self.create, "old", taskDefinition=td,
                               message_contains="TaskDefinition is inactive")

    def test_idempotency_and_names_in_use(self):
        first = self.create("idem", clientToken="token-1")
        again = self.create("idem", clientToken="token-1")
        self.assertEqual(again["deployments"][0]["id"], first["deployments"][0]["id"])
        self.assertClientError("InvalidParameterException", self.create, "idem", clientToken="token-2",
                               message="Creation of service was not idempotent.")
        self.assertClientError("InvalidParameterException", self.create, "idem",
                               message="Creation of service was not idempotent.")
        self.ecs.delete_service(cluster="svc", service="idem")
        # Without tasks the scheduler may already have made it INACTIVE, which frees the name (the
        # DRAINING refusal itself: golden CreateService/draining_name, ServicesTest).
        try:
            reborn = self.create("idem")
            self.assertEqual(reborn["status"], "ACTIVE")
            self.assertNotEqual(reborn["deployments"][0]["id"], first["deployments"][0]["id"])
        except ClientError as e:
            self.assertEqual(e.response["Error"]["Message"], "Unable to Start a service that is still Draining.")

    # ---- ListServices ----

    def test_list_pages_and_filters(self):
        self.ecs.create_cluster(clusterName="listing")
        for i in range(5):
            self.create(f"l{i}", cluster="listing")
        self.create("l-ec2", cluster="listing", taskDefinition=self.bridge, launchType="EC2", networkConfiguration=None)
        page = self.ecs.list_services(cluster="listing", maxResults=4)
        self.assertEqual(len(page["serviceArns"]), 4)
        rest = self.ecs.list_services(cluster="listing", maxResults=4, nextToken=page["nextToken"])
        self.assertEqual(len(rest["serviceArns"]), 2)
        self.assertNotIn("nextToken", rest)
        everything = []
        for p in self.ecs.get_paginator("list_services").paginate(cluster="listing", PaginationConfig={"PageSize": 2}):
            everything += p["serviceArns"]
        self.assertEqual(len(everything), 6)
        self.assertIn(self.arn("l0", "listing"), everything)
        self.assertEqual(self.ecs.list_services(cluster="listing", launchType="EC2")["serviceArns"],
                         [self.arn("l-ec2", "listing")])
        self.assertEqual(self.ecs.list_services(cluster="listing", schedulingStrategy="DAEMON")["serviceArns"], [])
        self.assertEqual(len(self.ecs.list_services(cluster="listing")["serviceArns"]), 6)  # default page 10
        self.assertClientError("InvalidParameterException", self.ecs.list_services, cluster="listing",
                               nextToken="garbage")
        self.assertClientError("ClusterNotFoundException", self.ecs.list_services, cluster="nope")

    # ---- UpdateService ----

    def test_update_starts_deployments_only_when_needed(self):
        s = self.create("upd")
        first = s["deployments"][0]["id"]
        scaled = self.ecs.update_service(cluster="svc", service="upd", desiredCount=0,
                                         deploymentConfiguration={"minimumHealthyPercent": 50})["service"]
        self.assertEqual([d["id"] for d in scaled["deployments"]], [first])
        self.assertEqual(scaled["deploymentConfiguration"]["minimumHealthyPercent"], 50)
        self.assertEqual(scaled["deploymentConfiguration"]["maximumPercent"], 200)
        moved = self.ecs.update_service(cluster="svc", service=self.arn("upd"), taskDefinition=self.td2)["service"]
        self.assertEqual([d["status"] for d in moved["deployments"]], ["PRIMARY", "ACTIVE"])
        self.assertEqual(moved["deployments"][0]["taskDefinition"], self.td2)
        self.assertEqual(moved["deployments"][1]["id"], first)
        self.assertEqual(moved["taskDefinition"], self.td2)
        self.assertEqual(len(moved["currentServiceRevisions"]), 2)
        # The new PRIMARY is there at once for every describe after the update.
        again = self.describe("upd")["services"][0]
        self.assertEqual(again["deployments"][0]["id"], moved["deployments"][0]["id"])
        forced = self.ecs.update_service(cluster="svc", service="upd", forceNewDeployment=True)["service"]
        self.assertEqual([d["status"] for d in forced["deployments"][:2]], ["PRIMARY", "ACTIVE"])
        self.assertEqual(forced["deployments"][0]["taskDefinition"], self.td2)
        self.assertEqual(forced["deployments"][1]["id"], moved["deployments"][0]["id"])

    def test_update_errors(self):
        self.assertClientError("ServiceNotFoundException", self.ecs.update_service, cluster="svc", service="nope",
                               desiredCount=1, message="Service not found.")
        self.assertClientError("ClusterNotFoundException", self.ecs.update_service, cluster="nope", service="x")
        self.create("upd-err")
        td = self.register("svc-gone", "nginx:gone")
        self.ecs.deregister_task_definition(taskDefinition=td)
        self.assertClientError("ClientException", self.ecs.update_service, cluster="svc", service="upd-err",
                               taskDefinition=td, message_contains="TaskDefinition is inactive")
        self.ecs.delete_service(cluster="svc", service="upd-err")
        self.assertClientError("ServiceNotActiveException", self.ecs.update_service, cluster="svc",
                               service="upd-err", desiredCount=1, message="Service was not ACTIVE.")

    # ---- DeleteService ----

    def test_delete(self):
        # An EC2 service in a cluster without container instances: nothing can be placed.
        self.create("del", taskDefinition=self.bridge, launchType="EC2", networkConfiguration=None, desiredCount=2)
        self.assertClientError("InvalidParameterException", self.ecs.delete_service, cluster="svc", service="del",
                               message="The service cannot be stopped while it is scaled above 0.")
        d = self.ecs.delete_service(cluster="svc", service="del", force=True)["service"]
        self.assertEqual(d["status"], "DRAINING")
        self.assertEqual(d["desiredCount"], 0)
        self.assertTrue(all(x["desiredCount"] == 0 for x in d["deployments"]))
        again = self.ecs.delete_service(cluster="svc", service="del")["service"]
        self.assertIn(again["status"], ("DRAINING", "INACTIVE"))
        self.assertClientError("ServiceNotFoundException", self.ecs.delete_service, cluster="svc", service="nope")

    def test_delete_cluster_with_services_is_refused(self):
        self.ecs.create_cluster(clusterName="busy")
        self.create("b", cluster="busy")
        self.assertEqual(self.ecs.describe_clusters(clusters=["busy"])["clusters"][0]["activeServicesCount"], 1)
        self.assertClientError("ClusterContainsServicesException", self.ecs.delete_cluster, cluster="busy",
                               message="The Cluster cannot be deleted while Services are active.")

    # ---- DAEMON and EXTERNAL ----

    def test_daemon_and_external_services(self):
        d = self.create("daemon", schedulingStrategy="DAEMON", desiredCount=None, taskDefinition=self.bridge,
                        launchType="EC2", networkConfiguration=None)
        self.assertEqual(d["schedulingStrategy"], "DAEMON")
        self.assertEqual(d["deploymentConfiguration"]["maximumPercent"], 100)
        self.assertEqual(d["deploymentConfiguration"]["minimumHealthyPercent"], 0)
        self.assertClientError("InvalidParameterException", self.create, "daemon-f", schedulingStrategy="DAEMON",
                               desiredCount=None,
                               message="The daemon scheduling strategy does not support the FARGATE launch type. "
                                       "Change the launch type and try again")
        self.assertClientError("InvalidParameterException", self.create, "daemon-s", schedulingStrategy="DAEMON",
                               desiredCount=None, taskDefinition=self.bridge, launchType="EC2",
                               networkConfiguration=None, placementStrategy=[{"type": "spread", "field": "host"}],
                               message="The daemon scheduling strategy does not support placement strategies.")
        self.ecs.delete_service(cluster="svc", service="daemon")  # DAEMON needs no force
        x = self.create("external", deploymentController={"type": "EXTERNAL"}, taskDefinition=None)
        self.assertEqual(x["deploymentController"], {"type": "EXTERNAL"})
        self.assertEqual(x["deployments"], [])
        self.assertEqual(x["taskSets"], [])
        self.assertNotIn("taskDefinition", x)
        self.assertClientError("InvalidParameterException", self.ecs.update_service, cluster="svc",
                               service="external", taskDefinition=self.td2, message_contains="EXTERNAL")

    # ---- Capacity providers ----

    def test_cluster_default_strategy_applies_without_launch_type(self):
        self.ecs.create_cluster(clusterName="cp", capacityProviders=["FARGATE", "FARGATE_SPOT"],
                                defaultCapacityProviderStrategy=[{"capacityProvider": "FARGATE_SPOT", "weight": 1}])
        s = self.create("cp", cluster="cp", launchType=None)
        self.assertNotIn("launchType", s)
        self.assertEqual(s["capacityProviderStrategy"], [{"capacityProvider": "FARGATE_SPOT", "weight": 1, "base": 0}])
        self.assertEqual(s["deployments"][0]["capacityProviderStrategy"], s["capacityProviderStrategy"])
        self.assertClientError("InvalidParameterException", self.create, "cp2", cluster="svc", launchType=None,
                               capacityProviderStrategy=[{"capacityProvider": "FARGATE"}],
                               message_contains="not associated with the cluster")

    # ---- Service deployments and revisions ----

    def test_service_deployments_and_revisions(self):
        s = self.unplaceable("sd")
        first = s["currentServiceDeployment"]
        moved = self.ecs.update_service(cluster="svc", service="sd", taskDefinition=self.bridge2)["service"]
        second = moved["currentServiceDeployment"]
        self.assertNotEqual(first, second)
        listed = self.ecs.list_service_deployments(cluster="svc", service="sd")["serviceDeployments"]
        self.assertEqual([x["serviceDeploymentArn"] for x in listed], [second, first])  # newest first
        self.assertEqual([x["status"] for x in listed], ["IN_PROGRESS", "STOPPED"])
        self.assertEqual(self.ecs.list_service_deployments(cluster="svc", service="sd", status=["STOPPED"])
                         ["serviceDeployments"][0]["serviceDeploymentArn"], first)
        page = self.ecs.list_service_deployments(cluster="svc", service="sd", maxResults=1)
        self.assertEqual(len(page["serviceDeployments"]), 1)
        rest = self.ecs.list_service_deployments(cluster="svc", service="sd", maxResults=1, nextToken=page["nextToken"])
        self.assertEqual(rest["serviceDeployments"][0]["serviceDeploymentArn"], first)
        self.assertNotIn("nextToken", rest)
        missing = second[:-3] + "zzz"
        d = self.ecs.describe_service_deployments(serviceDeploymentArns=[second, missing])
        self.assertEqual(d["failures"], [{"arn": missing, "reason": "MISSING"}])
        sd = d["serviceDeployments"][0]
        self.assertEqual(sd["status"], "IN_PROGRESS")
        self.assertEqual(sd["serviceArn"], self.arn("sd"))
        self.assertEqual(len(sd["sourceServiceRevisions"]), 1)
        target = sd["targetServiceRevision"]["arn"]
        self.assertRegex(target, rf"^arn:aws:ecs:{h.REGION}:{self.account}:service-revision/svc/sd/\d{{19}}$")
        r = self.ecs.describe_service_revisions(serviceRevisionArns=[target, sd["sourceServiceRevisions"][0]["arn"]])
        self.assertEqual(r["failures"], [])
        self.assertEqual([x["taskDefinition"] for x in r["serviceRevisions"]], [self.bridge2, self.bridge])
        self.assertEqual(r["serviceRevisions"][0]["containerImages"], [{"containerName": "app", "image": "busybox:2"}])
        self.assertClientError("ServiceNotFoundException", self.ecs.list_service_deployments, cluster="svc",
                               service="nope")
        self.assertClientError("InvalidParameterException", self.ecs.describe_service_revisions,
                               serviceRevisionArns=["arn:aws:ecs:us-east-1:123:nonsense"])

    def test_stop_service_deployment(self):
        s = self.unplaceable("stop")
        arn = s["currentServiceDeployment"]
        self.assertClientError("InvalidParameterException", self.ecs.stop_service_deployment,
                               serviceDeploymentArn=arn, stopType="ABORT", message_contains="ROLLBACK")
        self.assertEqual(self.ecs.stop_service_deployment(serviceDeploymentArn=arn, stopType="ROLLBACK")
                         ["serviceDeploymentArn"], arn)
        # The scheduler may already have tried the rollback: with no completed deployment it fails.
        got = self.ecs.describe_service_deployments(serviceDeploymentArns=[arn])["serviceDeployments"][0]
        self.assertIn(got["status"], ("ROLLBACK_REQUESTED", "ROLLBACK_FAILED"))
        # A newer deployment stops the old one: a finished deployment cannot be stopped.
        self.ecs.update_service(cluster="svc", service="stop", forceNewDeployment=True)
        self.assertIn(self.ecs.describe_service_deployments(serviceDeploymentArns=[arn])
                      ["serviceDeployments"][0]["status"], ("STOPPED", "ROLLBACK_FAILED"))
        self.assertClientError("ConflictException", self.ecs.stop_service_deployment, serviceDeploymentArn=arn,
                               stopType="ROLLBACK")
        self.assertClientError("ServiceDeploymentNotFoundException", self.ecs.stop_service_deployment,
                               serviceDeploymentArn=arn[:-3] + "zzz", stopType="ROLLBACK")

    # ---- ListServicesByNamespace ----

    def test_list_services_by_namespace_has_no_namespaces(self):
        self.assertClientError("NamespaceNotFoundException", self.ecs.list_services_by_namespace, namespace="ns")

    def test_stored_members_round_trip(self):
        lb = [{"targetGroupArn": f"arn:aws:elasticloadbalancing:{h.REGION}:{self.account}:targetgroup/tg/0123456789abcdef",
               "containerName": "app", "containerPort": 80}]
        # serviceRegistries name a real Cloud Map service (CreateService checks it): with the bridge
        # network mode, an SRV record and the container's mapped port.
        sd = h.json_client("servicediscovery", self.server.endpoint, self.key_id, self.secret, inject_host_prefix=False)
        vpc = h.client("ec2", self.server.endpoint, self.key_id, self.secret).describe_vpcs()["Vpcs"][0]["VpcId"]
        op = sd.create_private_dns_namespace(Name="stored.internal", Vpc=vpc)["OperationId"]
        deadline = time.monotonic() + 10
        while sd.get_operation(OperationId=op)["Operation"]["Status"] not in ("SUCCESS", "FAIL"):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.02)
        ns = sd.get_operation(OperationId=op)["Operation"]["Targets"]["NAMESPACE"]
        registry = sd.create_service(Name="stored", NamespaceId=ns,
                                     DnsConfig={"DnsRecords": [{"Type": "SRV", "TTL": 10}]})["Service"]["Arn"]
        ported = self.ecs.register_task_definition(**h.td_min("svc-bridge-ported", containerDefinitions=[
            {"name": "app", "image": "public.ecr.aws/docker/library/busybox:1.36", "memory": 64,
             "portMappings": [{"containerPort": 80}]}]))["taskDefinition"]["taskDefinitionArn"]
        reg = [{"registryArn": registry, "containerName": "app", "containerPort": 80}]
        s = self.create("stored", taskDefinition=ported, launchType="EC2", networkConfiguration=None,
                        loadBalancers=lb, serviceRegistries=reg, role="ecsServiceRole",
                        placementConstraints=[{"type": "distinctInstance"}],
                        placementStrategy=[{"type": "spread", "field": "attribute:ecs.availability-zone"}],
                        enableECSManagedTags=True, propagateTags="TASK_DEFINITION",
                        availabilityZoneRebalancing="DISABLED")
        self.assertEqual(s["loadBalancers"], lb)
        self.assertEqual(s["serviceRegistries"], reg)
        self.assertEqual(s["roleArn"], f"arn:aws:iam::{self.account}:role/ecsServiceRole")
        self.assertEqual(s["placementConstraints"], [{"type": "distinctInstance"}])
        self.assertEqual(s["availabilityZoneRebalancing"], "DISABLED")
        self.assertNotIn("platformVersion", s)
        first = s["deployments"][0]["id"]
        # Placement is no deployment; load balancers are.
        u = self.ecs.update_service(cluster="svc", service="stored", placementConstraints=[],
                                    placementStrategy=[{"type": "binpack", "field": "memory"}])["service"]
        self.assertEqual(u["placementConstraints"], [])
        self.assertEqual(u["placementStrategy"], [{"type": "binpack", "field": "memory"}])
        self.assertEqual([d["id"] for d in u["deployments"]], [first])
        u = self.ecs.update_service(cluster="svc", service="stored", loadBalancers=[])["service"]
        self.assertEqual(u["loadBalancers"], [])
        self.assertEqual(len(u["deployments"]), 2)
        self.assertClientError("InvalidParameterException", self.create, "exec", enableExecuteCommand=True,
                               message_contains="enableExecuteCommand")
        self.assertClientError("InvalidParameterException", self.create, "sc",
                               serviceConnectConfiguration={"enabled": True, "namespace": "ns"},
                               message_contains="Service Connect")

    def test_request_limits(self):
        self.assertClientError("InvalidParameterException", self.describe, *[f"s{i}" for i in range(11)])
        self.assertClientError("InvalidParameterException", self.ecs.list_services, cluster="svc", maxResults=101)
        self.assertClientError("ClusterNotFoundException", self.ecs.delete_service, cluster="nope", service="x")
        self.assertClientError("ClusterNotFoundException", self.ecs.describe_services, cluster="nope", services=["x"])
        self.assertClientError("InvalidParameterException", self.ecs.describe_service_deployments,
                               serviceDeploymentArns=[f"x{i}" for i in range(21)])

    def test_delete_account_removes_its_services(self):
        acct = "246813579024"
        _, key, secret = h.create_account(self.state_dir, acct, "doomed")
        doomed = h.ecs_client(self.server.endpoint, key, secret)
        doomed.create_cluster(clusterName="svc")
        td = doomed.register_task_definition(**h.td_min("svc-doomed"))["taskDefinition"]["taskDefinitionArn"]
        made = doomed.create_service(cluster="svc", serviceName="web", taskDefinition=td, desiredCount=0,
                                     launchType="EC2")["service"]
        mine = self.create("bystander")
        h.admin(self.state_dir, "delete-account", "--account", acct)
        _, key2, secret2 = h.create_account(self.state_dir, acct, "reborn")
        reborn = h.ecs_client(self.server.endpoint, key2, secret2)
        reborn.create_cluster(clusterName="svc")
        d = reborn.describe_services(cluster="svc", services=[made["serviceArn"]])
        self.assertEqual(d["failures"], [{"arn": made["serviceArn"], "reason": "MISSING"}])
        self.assertEqual(reborn.list_services(cluster="svc")["serviceArns"], [])
        self.assertEqual(self.describe("bystander")["services"][0]["serviceArn"], mine["serviceArn"])


    # ---- Tags ----

    def test_tags(self):
        self.create("tagged")
        arn = self.arn("tagged")
        self.ecs.tag_resource(resourceArn=arn, tags=[{"key": "a", "value": "1"}, {"key": "b", "value": "2"}])
        self.ecs.untag_resource(resourceArn=arn, tagKeys=["a"])
        self.assertEqual(self.ecs.list_tags_for_resource(resourceArn=arn)["tags"], [{"key": "b", "value": "2"}])
        # The model names ResourceNotFoundException for TagResource; a short ARN is refused.
        self.assertClientError("ResourceNotFoundException", self.ecs.tag_resource, resourceArn=self.arn("none"),
                               tags=[{"key": "a", "value": "1"}])
        short = f"arn:aws:ecs:{h.REGION}:{self.account}:service/tagged"
        self.assertClientError("InvalidParameterException", self.ecs.tag_resource, resourceArn=short,
                               tags=[{"key": "a", "value": "1"}],
                               message="Long arn format must be used for tagging operations")

    # ---- Other accounts ----

    def test_other_account_arn_is_denied(self):
        other = f"arn:aws:ecs:{h.REGION}:999999999999:service/svc/web"
        self.assertClientError("AccessDeniedException", self.describe, other)
        self.assertClientError("AccessDeniedException", self.ecs.update_service, cluster="svc", service=other)


class _CliServices:
    """The AWS CLI's service commands against the server; their parsed output validated against the
    output shapes (timestamps as the CLI prints them)."""
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
            return r
        self.assertEqual(r.returncode, expect_rc, f"aws ecs {operation} {args}: {r.stdout}\n{r.stderr}")
        out = json.loads(r.stdout) if r.stdout.strip() else {}
        name = "".join(p.capitalize() for p in operation.split("-"))
        shape = h.ECS_MODEL.operation_model(name).output_shape
        errors = _StrictCliOutput().validate(out, shape) if shape is not None else []
        self.assertEqual(errors, [], f"aws ecs {operation}: output violates {name}'s shape")
        return out

    def test_cli_flow(self):
        self.aws("create-cluster", "--cluster-name", "cli-svc")
        td = self.aws("register-task-definition", "--family", "cli-svc", "--container-definitions",
                      json.dumps([{"name": "app", "image": "nginx", "memory": 64}]))["taskDefinition"]
        s = self.aws("create-service", "--cluster", "cli-svc", "--service-name", "web", "--task-definition",
                     "cli-svc", "--desired-count", "0", "--launch-type", "EC2", "--tags", "key=a,value=1")["service"]
        self.assertEqual(s["taskDefinition"], td["taskDefinitionArn"])
        d = self.aws("describe-services", "--cluster", "cli-svc", "--services", "web", "--include", "TAGS")
        self.assertEqual(d["services"][0]["tags"], [{"key": "a", "value": "1"}])
        self.assertEqual(self.aws("list-services", "--cluster", "cli-svc")["serviceArns"], [s["serviceArn"]])
        u = self.aws("update-service", "--cluster", "cli-svc", "--service", "web", "--force-new-deployment")["service"]
        self.assertEqual(len(u["deployments"]), 2)
        if self.DEPLOYMENT_COMMANDS:
            sds = self.aws("list-service-deployments", "--cluster", "cli-svc", "--service", "web")["serviceDeployments"]
            self.assertEqual(len(sds), 2)
            self.aws("describe-service-deployments", "--service-deployment-arns", sds[0]["serviceDeploymentArn"])
            self.aws("describe-service-revisions", "--service-revision-arns", sds[0]["targetServiceRevisionArn"])
        g = self.aws("delete-service", "--cluster", "cli-svc", "--service", "web")["service"]
        self.assertEqual(g["status"], "DRAINING")
        r = self.aws("update-service", "--cluster", "cli-svc", "--service", "web", "--desired-count", "1",
                     expect_rc=None)
        self.assertIn("ServiceNotActiveException", r.stderr)


class CliV1Services(_CliServices, h.PaddockTestCase):
    CLI = CLI_V1
    DEPLOYMENT_COMMANDS = True


class CliV2Services(_CliServices, h.PaddockTestCase):
    CLI = CLI_V2
    DEPLOYMENT_COMMANDS = False  # the installed v2 (2.9) predates the service-deployment commands


class ServicesRestart(h.PaddockTestCase):
    """Every service change is one durable transaction: a restarted server shows the same service."""

    def test_a_restart_keeps_services_their_deployments_and_tags(self):
        ec2 = boto3.client("ec2", endpoint_url=self.server.endpoint, region_name=h.REGION,
                           aws_access_key_id=self.key_id, aws_secret_access_key=self.secret)
        subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        td = self.ecs.register_task_definition(
            family="r", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "app", "image": "nginx"}])["taskDefinition"]["taskDefinitionArn"]
        self.ecs.create_cluster(clusterName="r")
        self.ecs.create_service(cluster="r", serviceName="r", taskDefinition=td, desiredCount=0, launchType="FARGATE",
                                networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet]}},
                                tags=[{"key": "k", "value": "v"}])
        before = self.ecs.update_service(cluster="r", service="r", forceNewDeployment=True)["service"]
        self.server.stop()
        restarted = h.Server(self.state_dir)
        restarted.start()
        self.addCleanup(restarted.stop)
        ecs = h.ecs_client(restarted.endpoint, self.key_id, self.secret)
        after = ecs.describe_services(cluster="r", services=["r"], include=["TAGS"])["services"][0]
        self.assertEqual(after["deployments"][0]["id"], before["deployments"][0]["id"])
        self.assertEqual(after["tags"], [{"key": "k", "value": "v"}])
        self.assertEqual(after["currentServiceDeployment"], before["currentServiceDeployment"])
        self.assertEqual(ecs.list_services(cluster="r")["serviceArns"], [before["serviceArn"]])


if __name__ == "__main__":
    unittest.main()
