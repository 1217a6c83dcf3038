"""The EC2 launch type through the API (docs/contracts/task.md, "Placement"): container instances
registered with RegisterContainerInstance take RunTask's tasks by placement strategy and constraint,
their resources are reserved and shown in DescribeContainerInstances, what does not fit is a
failures[] entry naming the instance and the reason, StartTask targets named instances, and
ListTasks filters by containerInstance. Every answer is validated strictly against botocore's
output shapes by the harness. In Ec2Placement no agent serves the instances, so the tasks stay PROVISIONING:
this is the control plane's half. Ec2Capacity runs real tasks on in-process EC2 instances until
their resources run out, and checks nothing leaks."""

import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import task_harness as th  # noqa: E402
from test_images import busybox_rootfs, image  # noqa: E402

CAPABILITIES = [{"name": "com.amazonaws.ecs.capability.docker-remote-api.1.21"}]


def total(cpu, memory):
    return [{"name": "CPU", "type": "INTEGER", "integerValue": cpu},
            {"name": "MEMORY", "type": "INTEGER", "integerValue": memory},
            {"name": "PORTS", "type": "STRINGSET", "stringSetValue": ["22"]}]


def remaining(ci, name):
    return next(r for r in ci["remainingResources"] if r["name"] == name)


class Ec2Placement(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ecs.create_cluster(clusterName="ec2")
        cls.ecs.register_task_definition(
            family="web", networkMode="bridge", requiresCompatibilities=["EC2"],
            containerDefinitions=[{"name": "app", "image": "busybox", "cpu": 256, "memory": 512,
                                   "portMappings": [{"containerPort": 80, "hostPort": 8080}]}])
        cls.ecs.register_task_definition(
            family="worker", networkMode="bridge",
            containerDefinitions=[{"name": "w", "image": "busybox", "cpu": 512, "memoryReservation": 256}])

    def register(self, zone, cpu=2048, memory=2048, attributes=()):
        doc = json.dumps({"availabilityZone": zone, "instanceType": "m5.large"})
        return self.ecs.register_container_instance(
            cluster="ec2", instanceIdentityDocument=doc, totalResources=total(cpu, memory),
            attributes=CAPABILITIES + list(attributes))["containerInstance"]["containerInstanceArn"]

    def describe(self, arn):
        return self.ecs.describe_container_instances(cluster="ec2", containerInstances=[arn])["containerInstances"][0]

    def test_1_placement_reservation_failures_and_the_list_filter(self):
        a = self.register("us-east-1a", attributes=[{"name": "stack", "value": "blue"}])
        b = self.register("us-east-1b", attributes=[{"name": "stack", "value": "green"}])
        c = self.register("us-east-1c", attributes=[{"name": "stack", "value": "green"}])

        # A fixed host port fits once per instance: three of four are placed, one per zone by spread.
        r = self.ecs.run_task(cluster="ec2", taskDefinition="web", launchType="EC2", count=4,
                              placementStrategy=[{"type": "spread", "field": "attribute:ecs.availability-zone"}])
        self.assertEqual(len(r["tasks"]), 3)
        self.assertEqual({t["containerInstanceArn"] for t in r["tasks"]}, {a, b, c})
        self.assertEqual({t["availabilityZone"] for t in r["tasks"]}, {"us-east-1a", "us-east-1b", "us-east-1c"})
        for t in r["tasks"]:
            self.assertEqual(t["launchType"], "EC2")
            self.assertNotIn("platformVersion", t)
        self.assertEqual(sorted((f["arn"], f["reason"]) for f in r["failures"]),
                         sorted((x, "RESOURCE:PORTS") for x in (a, b, c)))
        ci = self.describe(a)
        self.assertEqual(remaining(ci, "CPU")["integerValue"], 2048 - 256)
        self.assertEqual(remaining(ci, "MEMORY")["integerValue"], 2048 - 512)
        self.assertIn("8080", remaining(ci, "PORTS")["stringSetValue"])
        self.assertEqual(ci["pendingTasksCount"], 1)

        on_a = self.ecs.list_tasks(cluster="ec2", containerInstance=a)["taskArns"]
        self.assertEqual(on_a, [t["taskArn"] for t in r["tasks"] if t["containerInstanceArn"] == a])

        # memberOf keeps tasks on green instances; binpack on memory fills one before the other.
        r = self.ecs.run_task(cluster="ec2", taskDefinition="worker", launchType="EC2", count=2,
                              placementConstraints=[{"type": "memberOf", "expression": "attribute:stack == green"}],
                              placementStrategy=[{"type": "binpack", "field": "memory"}])
        self.assertEqual(len(r["tasks"]), 2, r["failures"])
        self.assertEqual(len({t["containerInstanceArn"] for t in r["tasks"]}), 1)
        self.assertIn(r["tasks"][0]["containerInstanceArn"], {b, c})

        # Stopping a task gives nothing back until its agent reports it STOPPED (none runs here),
        # but it leaves RUNNING for ListTasks at once.
        self.ecs.stop_task(cluster="ec2", task=on_a[0])
        self.assertEqual(self.ecs.list_tasks(cluster="ec2", containerInstance=a)["taskArns"], [])

    def test_2_start_task_on_named_instances(self):
        d = self.register("us-east-1a", cpu=1024, memory=1024)
        r = self.ecs.start_task(cluster="ec2", taskDefinition="worker", containerInstances=[d, d, d],
                                startedBy="starter")
        # 512 cpu each: two fit on d, the third is refused there.
        self.assertEqual(len(r["tasks"]), 2)
        self.assertEqual(r["failures"], [{"arn": d, "reason": "RESOURCE:CPU"}])
        self.assertEqual({t["containerInstanceArn"] for t in r["tasks"]}, {d})
        self.assertEqual({t["startedBy"] for t in r["tasks"]}, {"starter"})
        missing = d.rsplit("/", 1)[0] + "/" + "0" * 32
        r = self.ecs.start_task(cluster="ec2", taskDefinition="worker", containerInstances=[missing])
        self.assertEqual(r["failures"], [{"arn": missing, "reason": "MISSING"}])
        self.assertClientError("InvalidParameterException", self.ecs.start_task, cluster="ec2",
                               taskDefinition="worker", containerInstances=[])

    def test_3_refusals(self):
        self.ecs.create_cluster(clusterName="empty")
        self.assertClientError("InvalidParameterException", self.ecs.run_task, cluster="empty",
                               taskDefinition="worker", launchType="EC2")
        self.assertClientError("InvalidParameterException", self.ecs.run_task, cluster="ec2",
                               taskDefinition="worker", launchType="EC2",
                               placementStrategy=[{"type": "binpack", "field": "disk"}])
        self.assertClientError("InvalidParameterException", self.ecs.run_task, cluster="ec2",
                               taskDefinition="worker", launchType="EC2",
                               placementConstraints=[{"type": "memberOf", "expression": "(attribute:stack == green"}])
        self.assertClientError("InvalidParameterException", self.ecs.run_task, cluster="ec2",
                               taskDefinition="web", launchType="FARGATE")


if __name__ == "__main__":
    unittest.main()


@unittest.skipIf(th.skip_reason() is not None, th.skip_reason() or "")
class Ec2Capacity(h.PaddockTestCase):
    """Two in-process EC2 instances (`[[ec2_instance]]`) run real tasks until their resources run out:
    the rest are failures[] with RESOURCE:* reasons, and once everything stopped every instance has
    all its resources back — nothing leaks — and takes the same load again."""

    # Owned by the test's account (a plain `paddock server` has no bootstrap account); host access
    # for the host-path volume below.
    ACCOUNT_ID = "210000000004"
    CONFIG = ("[[ec2_instance]]\ncluster = \"cap\"\naccount = \"210000000004\"\nhost_access = true\n"
              "cpu = 2048\nmemory = 512\n"
              "[[ec2_instance]]\ncluster = \"cap\"\naccount = \"210000000004\"\nhost_access = true\n"
              "cpu = 2048\nmemory = 256\n")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        root = busybox_rootfs(os.path.join(cls.tmp, "bb-rootfs"))
        image(cls.state_dir, "import-rootfs", root, "--name", "busybox:cap", "--cmd", "httpd -f -p 8080 -h /")
        cls.ecs.create_cluster(clusterName="cap")
        cls.ecs.register_task_definition(
            family="cap", networkMode="none", requiresCompatibilities=["EC2"], cpu="256", memory="128",
            containerDefinitions=[{"name": "s", "image": "busybox:cap", "stopTimeout": 1}])

    def instances(self, timeout=15):
        deadline = time.monotonic() + timeout
        while True:
            arns = self.ecs.list_container_instances(cluster="cap")["containerInstanceArns"]
            if len(arns) == 2:
                cis = self.ecs.describe_container_instances(cluster="cap", containerInstances=arns)["containerInstances"]
                if all(ci["agentConnected"] for ci in cis):
                    return {ci["containerInstanceArn"]: ci for ci in cis}
            if time.monotonic() > deadline:
                self.fail(f"instances not connected: {arns} {self.server.log_tail()}")
            time.sleep(0.1)

    def fill(self):
        # 256 cpu / 128 MiB each: 4 fit the first (memory 512), 2 the second (memory 256).
        r = self.ecs.run_task(cluster="cap", taskDefinition="cap", launchType="EC2", count=10)
        self.assertEqual(len(r["tasks"]), 6, r["failures"])
        self.assertEqual({f["reason"] for f in r["failures"]}, {"RESOURCE:MEMORY"})
        arns = [t["taskArn"] for t in r["tasks"]]
        for arn in arns:
            th.wait_for_status(self, self.ecs, "cap", arn, "RUNNING", context=self.server.log_tail)
        more = self.ecs.run_task(cluster="cap", taskDefinition="cap", launchType="EC2", count=1)
        self.assertEqual(more["tasks"], [])
        return arns

    def test_fill_stop_and_fill_again(self):
        registered = self.instances()
        for _ in range(2):
            arns = self.fill()
            for ci in self.instances().values():
                self.assertEqual(remaining(ci, "MEMORY")["integerValue"], 0)
            for arn in arns:
                self.ecs.stop_task(cluster="cap", task=arn)
            for arn in arns:
                th.wait_for_status(self, self.ecs, "cap", arn, "STOPPED", context=self.server.log_tail)
            for arn, ci in self.instances().items():
                for name in ("CPU", "MEMORY"):
                    self.assertEqual(remaining(ci, name)["integerValue"],
                                     remaining(registered[arn], name)["integerValue"], name)
                self.assertEqual(ci["runningTasksCount"], 0)
                self.assertEqual(ci["pendingTasksCount"], 0)

    def test_host_path_volumes_bind_the_instances_directory(self):
        self.instances()
        host_dir = os.path.join(self.tmp, "host-data")
        td = self.ecs.register_task_definition(
            family="cap-host", networkMode="none", requiresCompatibilities=["EC2"], cpu="128", memory="64",
            volumes=[{"name": "data", "host": {"sourcePath": host_dir}}],
            containerDefinitions=[{"name": "w", "image": "busybox:cap", "command": ["sh", "-c", "echo hi > /data/out"],
                                   "mountPoints": [{"sourceVolume": "data", "containerPath": "/data"}]}],
        )["taskDefinition"]["taskDefinitionArn"]
        r = self.ecs.run_task(cluster="cap", taskDefinition=td, launchType="EC2")
        self.assertEqual(r["failures"], [])
        task = th.wait_for_status(self, self.ecs, "cap", r["tasks"][0]["taskArn"], "STOPPED",
                                  context=self.server.log_tail)
        self.assertEqual(task["containers"][0].get("exitCode"), 0, task)
        with open(os.path.join(host_dir, "out")) as f:
            self.assertEqual(f.read(), "hi\n")
