"""Tasks end to end: RunTask on the in-process Fargate agent runs a busybox httpd from the local
image store in its own awsvpc namespace, reachable at its IP from the host; StopTask takes it down;
an essential container that exits on its own stops its task. Needs root, crun and busybox-static."""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
import task_harness as th  # noqa: E402
from task_harness import skip_reason  # noqa: E402

PAGE = "hello from a paddock task\n"


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class Tasks(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        th.httpd_image(cls.state_dir, cls.tmp, "busybox:test", PAGE)
        cls.ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)
        cls.subnet = cls.ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        cls.ecs.create_cluster(clusterName="tasks")
        cls.task_ids = []

    def register(self, family, command=None):
        container = {"name": "web", "image": "busybox:test", "essential": True, "stopTimeout": 2}
        if command is not None:
            container["command"] = command
        return self.ecs.register_task_definition(
            family=family, networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256",
            memory="512", containerDefinitions=[container])["taskDefinition"]["taskDefinitionArn"]

    def run_one(self, td):
        r = self.ecs.run_task(cluster="tasks", taskDefinition=td, launchType="FARGATE",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        self.task_ids.append(arn.rsplit("/", 1)[1])
        return arn

    def wait_for(self, arn, status, timeout=30):
        return th.wait_for_status(self, self.ecs, "tasks", arn, status, timeout, self.server.log_tail)

    def test_1_httpd_runs_serves_its_page_and_stops(self):
        td = self.register("tasks-web")
        started = time.monotonic()
        arn = self.run_one(td)
        task = self.wait_for(arn, "RUNNING")
        elapsed = time.monotonic() - started
        print(f"\nRunTask -> RUNNING: {elapsed * 1000:.0f} ms", file=sys.stderr)
        self.assertEqual(task["containers"][0]["lastStatus"], "RUNNING")
        self.assertEqual(th.fetch(f"http://{th.task_ip(task)}:8080/"), PAGE)

        self.ecs.stop_task(cluster="tasks", task=arn, reason="test done")
        task = self.wait_for(arn, "STOPPED")
        self.assertEqual(task["stopCode"], "UserInitiated")
        self.assertEqual(task["stoppedReason"], "test done")
        self.assertIn("exitCode", task["containers"][0])
        self.assertEqual(task["containers"][0]["lastStatus"], "STOPPED")
        listed = self.ecs.list_tasks(cluster="tasks", desiredStatus="STOPPED")["taskArns"]
        self.assertIn(arn, listed)
        self.assertNotIn(arn, self.ecs.list_tasks(cluster="tasks")["taskArns"])

    def test_2_an_essential_container_exiting_stops_its_task(self):
        td = self.register("tasks-exit3", command=["sh", "-c", "exit 3"])
        arn = self.run_one(td)
        task = self.wait_for(arn, "STOPPED")
        self.assertEqual(task["stopCode"], "EssentialContainerExited")
        self.assertEqual(task["stoppedReason"], "Essential container in task exited")
        self.assertEqual(task["containers"][0]["exitCode"], 3)

    def test_3_an_image_not_in_the_store_fails_the_task(self):
        r = self.ecs.register_task_definition(
            family="tasks-missing", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256",
            memory="512", containerDefinitions=[{"name": "x", "image": "127.0.0.1:1/nothere:1"}])
        arn = self.run_one(r["taskDefinition"]["taskDefinitionArn"])
        task = self.wait_for(arn, "STOPPED")
        self.assertEqual(task["stopCode"], "TaskFailedToStart")
        # Not in the store, so pulled; nothing listens on loopback port 1 (tests/test_pull.py has the rest).
        self.assertTrue(task["stoppedReason"].startswith(
            "CannotPullContainerError: pull image manifest has been retried 1 time(s): failed to resolve ref "
            "127.0.0.1:1/nothere:1: failed to do request: "), task["stoppedReason"])

    def logs(self, *args):
        return subprocess.run([h.paddock_bin(), "logs", "--state-dir", self.state_dir, *args],
                              capture_output=True, text=True, timeout=30)

    def test_4_logs_capture_stdout_and_stderr(self):
        td = self.register("tasks-logs", command=["sh", "-c", "echo hello-stdout; echo hello-stderr >&2; exit 0"])
        arn = self.run_one(td)
        self.wait_for(arn, "STOPPED")
        task_id = arn.rsplit("/", 1)[1]
        for ref in (task_id, arn):
            r = self.logs(ref)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, "hello-stdout\nhello-stderr\n")
        r = self.logs(task_id, "--container", "web")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("hello-stdout\n", r.stdout)
        self.assertIn("hello-stderr\n", r.stdout)
        r = self.logs(task_id, "--follow")  # the task is STOPPED: prints and returns
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("hello-stderr\n", r.stdout)
        r = self.logs(task_id, "--container", "nope")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no container named nope", r.stderr)
        r = self.logs("0123456789abcdef0123456789abcdef")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no logs for task", r.stderr)

    def test_9_nothing_is_left_behind(self):
        # Runs last (by name): every task of this class is STOPPED, so its namespace is gone.
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
        for task_id in self.task_ids:
            self.assertNotIn(task_id, out)  # whatever the agent's namespace prefix
        containers = os.path.join(self.state_dir, "containers", "c")
        if os.path.isdir(containers):
            self.assertEqual(os.listdir(containers), [])


if __name__ == "__main__":
    unittest.main()
