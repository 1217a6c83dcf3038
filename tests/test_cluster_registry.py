"""One image store per cluster, as users see it: an image imported on the server runs on a `paddock
agent` with a state directory (and image store) of its own. The agent asks the server for the image
(GetImageAccess, with its instance's own credential), the server copies it from its store into its
registry (Debian's docker-registry, which it runs itself, on loopback like its API) and hands out a
pull token for that image alone; the agent pulls it by digest and runs the task. A misspelled name
says where it is not: neither in the agent's store, nor in the cluster's, nor in its registry, with
the name it probably meant. The registry serves nothing without a token: no listing, no manifest.
Needs root, crun, busybox-static, skopeo and docker-registry (docs/contracts/image.md, "Cluster
registry")."""

import os
import re
import sys
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
import task_harness as th  # noqa: E402
from test_images import image  # noqa: E402
from test_remote_agent import AgentProcess  # noqa: E402

PAGE = "hello from the server's image store\n"
REGISTRY_LINE = re.compile(r"the cluster's registry \(docker-registry\) serves the node's images to remote agents on "
                           r"(\S+)")


def skip_reason():
    return th.skip_reason(tools=("crun", "skopeo", "docker-registry"))


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class ClusterRegistry(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        from test_remote_agent import write_agent_credentials
        cls.creds = os.path.join(cls.tmp, "agent-credentials")
        write_agent_credentials(cls.state_dir, cls.account, cls.creds)
        # The image is imported on the SERVER; the agent's own store starts empty.
        th.httpd_image(cls.state_dir, cls.tmp, "busybox:cluster", PAGE)
        cls.agent_dir = os.path.join(cls.tmp, "agent")
        os.makedirs(cls.agent_dir)
        cls.ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)
        cls.subnet = cls.ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        cls.ecs.create_cluster(clusterName="shared")
        cls.agent = AgentProcess(["--endpoint", cls.server.endpoint, "--cluster", "shared", "--state-dir",
                                  cls.agent_dir, "--credentials", cls.creds, "--profile", "agent"],
                                 os.path.join(cls.tmp, "agent.log")).start()
        cls.addClassCleanup(cls.cleanup)

    @classmethod
    def cleanup(cls):
        try:
            arns = cls.ecs.list_tasks(cluster="shared")["taskArns"]
            for arn in arns:
                cls.ecs.stop_task(cluster="shared", task=arn)
            deadline = time.monotonic() + 30
            while arns and time.monotonic() < deadline:
                if all(t["lastStatus"] == "STOPPED" for t in cls.ecs.describe_tasks(cluster="shared", tasks=arns)["tasks"]):
                    break
                time.sleep(0.1)
        finally:
            cls.agent.stop()

    def run_on_agent(self, image_ref, family):
        td = self.ecs.register_task_definition(
            family=family, networkMode="awsvpc", requiresCompatibilities=["EC2"], cpu="256", memory="128",
            containerDefinitions=[{"name": "web", "image": image_ref, "essential": True, "stopTimeout": 2}],
        )["taskDefinition"]["taskDefinitionArn"]
        r = self.ecs.run_task(cluster="shared", taskDefinition=td, launchType="EC2",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [])
        self.assertEqual(r["tasks"][0]["containerInstanceArn"], self.agent.arn)
        return r["tasks"][0]["taskArn"]

    def wait_for(self, arn, status, timeout=60):
        return th.wait_for_status(self, self.ecs, "shared", arn, status, timeout,
                                  lambda: f"\nagent: {self.agent.log_tail()}\nserver: {self.server.log_tail()}")

    def stored(self, state_dir):
        return {i["reference"]: i["manifestDigest"] for i in image(state_dir, "ls", "--json")[1]}

    def registry_address(self):
        found = REGISTRY_LINE.search(self.server.log_tail(100000))
        return found.group(1) if found else None

    def test_1_an_image_imported_on_the_server_runs_on_a_remote_agent(self):
        ref = "docker.io/library/busybox:cluster"
        self.assertNotIn(ref, self.stored(self.agent_dir))
        self.assertIsNone(self.registry_address(), "the registry runs before any agent asked for an image")
        started = time.monotonic()
        arn = self.run_on_agent("busybox:cluster", "cluster-web")
        task = self.wait_for(arn, "RUNNING")
        print(f"\nRunTask (remote agent, image from the server's store) -> RUNNING: "
              f"{(time.monotonic() - started) * 1000:.0f} ms", file=sys.stderr)
        self.assertEqual(th.fetch(f"http://{th.task_ip(task)}:8080/"), PAGE)
        # The agent now holds exactly the server's image (same manifest), under the task's name.
        self.assertEqual(self.stored(self.agent_dir)[ref], self.stored(self.state_dir)[ref])
        self.assertEqual(task["containers"][0]["imageDigest"], self.stored(self.state_dir)[ref])
        # The registry the server started listens where its API does (loopback here).
        self.assertRegex(self.registry_address() or "", r"^127\.0\.0\.1:\d+$")
        self.ecs.stop_task(cluster="shared", task=arn, reason="test done")
        self.wait_for(arn, "STOPPED")

    def test_2_the_registry_serves_nothing_without_a_token(self):
        address = self.registry_address()
        if address is None:
            self.run_on_agent("busybox:cluster", "cluster-web-2")
            deadline = time.monotonic() + 30
            while self.registry_address() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            address = self.registry_address()
        digest = self.stored(self.state_dir)["docker.io/library/busybox:cluster"]
        for path in ("/v2/_catalog", f"/v2/images/{digest.split(':')[1]}/manifests/{digest}"):
            with self.assertRaises(urllib.error.HTTPError) as cm:
                urllib.request.urlopen(f"http://{address}{path}", timeout=5)
            self.assertEqual(cm.exception.code, 401, path)

    def test_3_a_misspelled_name_says_it_is_in_no_store_and_what_it_probably_meant(self):
        arn = self.run_on_agent("busybx:cluster", "cluster-typo")
        task = self.wait_for(arn, "STOPPED")
        self.assertEqual(task["stopCode"], "TaskFailedToStart")
        reason = task["stoppedReason"]
        self.assertTrue(reason.startswith("CannotPullContainerError: pull image manifest has been retried 1 time(s): "
                                          "failed to resolve ref docker.io/library/busybx:cluster: "), reason)
        # Docker Hub unreachable (offline) or refusing (no such repository): either way, where it is not.
        self.assertRegex(reason, r"; docker\.io/library/busybx:cluster is (neither in this node's image store nor in "
                                 r"the cluster's image store nor in its registry docker\.io|not in this node's image "
                                 r"store, nor in the cluster's image store, and its registry docker\.io .*)"
                                 r" \(did you mean busybox:cluster\?\)$")
        self.assertEqual(task["containers"][0]["reason"], reason)


if __name__ == "__main__":
    unittest.main()
