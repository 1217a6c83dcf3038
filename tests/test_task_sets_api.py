"""Task sets of EXTERNAL-controller services through boto3 (docs/contracts/service.md, "Task sets"):
CreateTaskSet, UpdateTaskSet, DeleteTaskSet, DescribeTaskSets, UpdateServicePrimaryTaskSet and the
taskSets DescribeServices shows. Every answer is validated strictly against botocore's output shapes
by the harness.

No containers run: the sets use launchType EC2 in a cluster without container instances, so a set
with computedDesiredCount > 0 can place nothing, and the tests assert only the records the API
answers (computedDesiredCount, scale, status), never task counts. The scheduler may move a set to
STEADY_STATE and remove a DRAINING set without tasks at any time; the tests allow for both."""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402

SET_ID = re.compile(r"^ecs-svc/\d{19}$")
NOT_EXTERNAL = ("Amazon ECS only supports task set management on services configured to use external "
                "deployment controllers.")


class TaskSetsApi(h.PaddockTestCase):
    CLUSTER = "sets"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ecs.create_cluster(clusterName=cls.CLUSTER)
        cls.td = cls.ecs.register_task_definition(**h.td_min("setapp"))["taskDefinition"]["taskDefinitionArn"]
        cls.td2 = cls.ecs.register_task_definition(**h.td_min("setapp"))["taskDefinition"]["taskDefinitionArn"]

    def service(self, name, desired, controller="EXTERNAL"):
        kw = {"cluster": self.CLUSTER, "serviceName": name, "desiredCount": desired,
              "deploymentController": {"type": controller}}
        if controller == "ECS":
            kw.update(taskDefinition=self.td, launchType="EC2")
        svc = self.ecs.create_service(**kw)["service"]
        self.addCleanup(self.ecs.delete_service, cluster=self.CLUSTER, service=name, force=True)
        return svc

    def create_set(self, service, **kw):
        kw.setdefault("taskDefinition", self.td)
        kw.setdefault("launchType", "EC2")
        return self.ecs.create_task_set(cluster=self.CLUSTER, service=service, **kw)["taskSet"]

    def sets(self, service, **kw):
        return self.ecs.describe_task_sets(cluster=self.CLUSTER, service=service, **kw)

    def test_create_answers_an_active_set_with_scale_zero_by_default(self):
        self.service("plain", 3)
        ts = self.create_set("plain", externalId="deploy-7")
        self.assertRegex(ts["id"], SET_ID)
        self.assertEqual(ts["taskSetArn"],
                         f"arn:aws:ecs:{h.REGION}:{self.account}:task-set/{self.CLUSTER}/plain/{ts['id']}")
        self.assertEqual(ts["serviceArn"], f"arn:aws:ecs:{h.REGION}:{self.account}:service/{self.CLUSTER}/plain")
        self.assertEqual(ts["clusterArn"], f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/{self.CLUSTER}")
        self.assertEqual((ts["status"], ts["stabilityStatus"]), ("ACTIVE", "STABILIZING"))
        self.assertEqual(ts["scale"], {"value": 0.0, "unit": "PERCENT"})
        self.assertEqual(ts["computedDesiredCount"], 0)
        self.assertEqual((ts["taskDefinition"], ts["externalId"], ts["launchType"]), (self.td, "deploy-7", "EC2"))
        self.assertEqual((ts["loadBalancers"], ts["serviceRegistries"]), ([], []))
        self.assertNotIn("startedBy", ts)
        self.assertEqual(ts["createdAt"], ts["updatedAt"])

    def test_computed_desired_count_rounds_up_and_follows_scale_and_desired_count(self):
        self.service("scaled", 3)
        ts = self.create_set("scaled", scale={"value": 40.0, "unit": "PERCENT"})
        self.assertEqual(ts["computedDesiredCount"], 2)  # 1.2 -> 2
        u = self.ecs.update_task_set(cluster=self.CLUSTER, service="scaled", taskSet=ts["taskSetArn"],
                                     scale={"value": 100.0, "unit": "PERCENT"})["taskSet"]
        self.assertEqual((u["id"], u["computedDesiredCount"], u["scale"]["value"]), (ts["id"], 3, 100.0))
        self.ecs.update_service(cluster=self.CLUSTER, service="scaled", desiredCount=5)
        (now,) = self.sets("scaled")["taskSets"]
        self.assertEqual(now["computedDesiredCount"], 5)
        # Out of range: refused, nothing changed.
        self.assertClientError("InvalidParameterException", self.ecs.update_task_set, cluster=self.CLUSTER,
                               service="scaled", taskSet=ts["id"], scale={"value": 101.0, "unit": "PERCENT"})
        self.assertEqual(self.sets("scaled")["taskSets"][0]["scale"]["value"], 100.0)
        # A scaled set needs force to be deleted; nothing changes without.
        self.assertClientError("InvalidParameterException", self.ecs.delete_task_set, cluster=self.CLUSTER,
                               service="scaled", taskSet=ts["id"])
        self.assertEqual(self.sets("scaled")["taskSets"][0]["status"], "ACTIVE")
        d = self.ecs.delete_task_set(cluster=self.CLUSTER, service="scaled", taskSet=ts["id"], force=True)["taskSet"]
        self.assertEqual((d["id"], d["status"], d["computedDesiredCount"]), (ts["id"], "DRAINING", 0))
        left = self.sets("scaled")["taskSets"]  # DRAINING until the scheduler finds no task of it
        self.assertTrue(left == [] or [s["status"] for s in left] == ["DRAINING"], left)

    def test_update_service_primary_task_set_swaps_the_primary(self):
        self.service("swap", 0)
        a = self.create_set("swap")
        b = self.create_set("swap", taskDefinition=self.td2)
        p = self.ecs.update_service_primary_task_set(cluster=self.CLUSTER, service="swap",
                                                     primaryTaskSet=a["taskSetArn"])["taskSet"]
        self.assertEqual((p["id"], p["status"]), (a["id"], "PRIMARY"))
        p = self.ecs.update_service_primary_task_set(cluster=self.CLUSTER, service="swap",
                                                     primaryTaskSet=b["id"])["taskSet"]
        self.assertEqual((p["id"], p["status"]), (b["id"], "PRIMARY"))
        status = {s["id"]: s["status"] for s in self.sets("swap")["taskSets"]}
        self.assertEqual(status, {a["id"]: "ACTIVE", b["id"]: "PRIMARY"})
        # DescribeServices lists both in taskSets (and no deployments).
        svc = self.ecs.describe_services(cluster=self.CLUSTER, services=["swap"])["services"][0]
        self.assertEqual({s["id"]: s["status"] for s in svc["taskSets"]}, status)
        self.assertEqual(svc["deployments"], [])

    def test_describe_task_sets_by_id_or_arn_missing_and_tags(self):
        self.service("desc", 0)
        lb = {"targetGroupArn": f"arn:aws:elasticloadbalancing:{h.REGION}:{self.account}:targetgroup/tg/0123456789abcdef",
              "containerName": "app", "containerPort": 80}
        ts = self.create_set("desc", tags=[{"key": "team", "value": "blue"}], loadBalancers=[lb])
        missing = f"arn:aws:ecs:{h.REGION}:{self.account}:task-set/{self.CLUSTER}/desc/ecs-svc/1234567890123456789"
        r = self.sets("desc", taskSets=[ts["id"], missing, ts["taskSetArn"]], include=["TAGS"])
        self.assertEqual([s["id"] for s in r["taskSets"]], [ts["id"], ts["id"]])
        self.assertEqual(r["taskSets"][0]["tags"], [{"key": "team", "value": "blue"}])
        self.assertEqual(r["taskSets"][0]["loadBalancers"], [lb])
        self.assertEqual(r["failures"], [{"arn": missing, "reason": "MISSING"}])
        r = self.sets("desc")
        self.assertEqual([s["id"] for s in r["taskSets"]], [ts["id"]])
        self.assertNotIn("tags", r["taskSets"][0])
        svc = self.ecs.describe_services(cluster=self.CLUSTER, services=["desc"])["services"][0]
        self.assertEqual(svc["taskSets"][0]["loadBalancers"], [lb])
        # Not a task set identifier (a task ARN): AWS's InvalidParameterException.
        task_arn = f"arn:aws:ecs:{h.REGION}:{self.account}:task/{self.CLUSTER}/0123456789abcdef0123456789abcdef"
        self.assertClientError("InvalidParameterException", self.sets, "desc", taskSets=[task_arn],
                               message="Task Set Identifier is invalid")

    def test_a_client_token_answers_the_same_request_with_the_same_set(self):
        self.service("tok", 0)
        a = self.create_set("tok", clientToken="token-1")
        b = self.create_set("tok", clientToken="token-1")
        self.assertEqual(a["id"], b["id"])
        self.assertClientError("InvalidParameterException", self.create_set, "tok", clientToken="token-1",
                               externalId="different")
        self.assertEqual(len(self.sets("tok")["taskSets"]), 1)

    def test_errors_name_aws_exceptions_and_change_nothing(self):
        self.service("ecsctl", 0, controller="ECS")
        self.service("ext", 0)
        self.assertClientError("InvalidParameterException", self.create_set, "ecsctl", message=NOT_EXTERNAL)
        self.assertClientError("InvalidParameterException", self.sets, "ecsctl", message=NOT_EXTERNAL)
        self.assertClientError("ServiceNotFoundException", self.create_set, "nope", message="Service not found.")
        self.assertClientError("ClusterNotFoundException", self.ecs.create_task_set, cluster="no-such-cluster",
                               service="ext", taskDefinition=self.td)
        self.assertClientError("TaskSetNotFoundException", self.ecs.update_task_set, cluster=self.CLUSTER,
                               service="ext", taskSet="ecs-svc/1234567890123456789",
                               scale={"value": 50.0, "unit": "PERCENT"})
        self.assertClientError("TaskSetNotFoundException", self.ecs.delete_task_set, cluster=self.CLUSTER,
                               service="ext", taskSet="ecs-svc/1234567890123456789")
        self.assertClientError("TaskSetNotFoundException", self.ecs.update_service_primary_task_set,
                               cluster=self.CLUSTER, service="ext", primaryTaskSet="ecs-svc/1234567890123456789")
        self.assertClientError("InvalidParameterException", self.create_set, "ext",
                               launchType="EC2", capacityProviderStrategy=[{"capacityProvider": "FARGATE"}])
        self.assertClientError("InvalidParameterException", self.create_set, "ext",
                               scale={"value": 150.0, "unit": "PERCENT"})
        self.assertEqual(self.sets("ext")["taskSets"], [])
        # A DRAINING service is not ACTIVE.
        self.ecs.delete_service(cluster=self.CLUSTER, service="ext", force=True)
        self.assertClientError("ServiceNotActiveException", self.create_set, "ext", message="Service was not ACTIVE.")
        self.assertServerAlive()


if __name__ == "__main__":
    unittest.main()
