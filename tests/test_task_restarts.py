"""kill -9 of the server (and with it the in-process agent) while tasks run: no task is lost, their
containers are re-adopted by the restarted agent and keep serving at their IPs, no address is given
to a second task, and the re-adopted tasks stop normally afterwards (docs/contracts/task.md,
"Restart and interruption" and "Agent restart"). Needs root, crun and busybox-static."""

import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
import task_harness as th  # noqa: E402
from task_harness import skip_reason  # noqa: E402

PAGE = "still here\n"


def ip_of(task):
    return th.task_ip(task)


def fetch(ip, timeout=10):
    return th.fetch(f"http://{ip}:8080/", timeout)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class TaskRestarts(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="paddock-restart-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.state = os.path.join(self.tmp, "state")
        os.makedirs(self.state)
        self.account, self.key_id, self.secret = h.create_account(self.state)
        th.httpd_image(self.state, self.tmp, "busybox:restart", PAGE)
        self.server = None
        self.addCleanup(self._stop_server)

    def _stop_server(self):
        if self.server is not None:
            self.server.stop()

    def start(self):
        self.server = h.Server(self.state).start()
        self.ecs = h.ecs_client(self.server.endpoint, self.key_id, self.secret)
        ec2 = boto3.client("ec2", endpoint_url=self.server.endpoint, region_name=h.REGION,
                           aws_access_key_id=self.key_id, aws_secret_access_key=self.secret)
        self.subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]

    def _stop_all_tasks(self):
        # A failed assertion must not leave containers running (a stopped server leaves them for
        # re-adoption): stop what is left through the server that runs now.
        if self.server is None or not self.server.alive():
            return
        arns = self.ecs.list_tasks(cluster="restarts")["taskArns"]
        for arn in arns:
            self.ecs.stop_task(cluster="restarts", task=arn)
        if arns:
            self.wait_all(arns, "STOPPED")

    def run_tasks(self, td, n):
        r = self.ecs.run_task(cluster="restarts", taskDefinition=td, launchType="FARGATE", count=n,
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [])
        return [t["taskArn"] for t in r["tasks"]]

    def wait_all(self, arns, status, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            tasks = self.ecs.describe_tasks(cluster="restarts", tasks=arns)
            self.assertEqual(tasks["failures"], [])
            if all(t["lastStatus"] == status for t in tasks["tasks"]):
                return {t["taskArn"]: t for t in tasks["tasks"]}
            if time.monotonic() > deadline:
                self.fail(f"not all {status}: {[t['lastStatus'] for t in tasks['tasks']]} {self.server.log_tail()}")
            time.sleep(0.05)

    def test_sigkill_of_the_server_loses_no_task_and_reuses_no_address(self):
        self.start()
        self.ecs.create_cluster(clusterName="restarts")
        self.addCleanup(self._stop_all_tasks)  # runs before _stop_server
        td = self.ecs.register_task_definition(
            family="restarts", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "web", "image": "busybox:restart", "stopTimeout": 2}],
        )["taskDefinition"]["taskDefinitionArn"]
        before = self.wait_all(self.run_tasks(td, 3), "RUNNING")
        ips = {arn: ip_of(t) for arn, t in before.items()}
        for ip in ips.values():
            self.assertEqual(fetch(ip), PAGE)

        self.server.kill()  # SIGKILL: no shutdown path runs
        self.start()

        # Every task is still there, still RUNNING (re-adopted, not restarted: same runtimeId), and
        # still answers at its address.
        after = self.wait_all(list(before), "RUNNING")
        for arn, t in after.items():
            self.assertEqual(ip_of(t), ips[arn])
            self.assertEqual(t["containers"][0]["runtimeId"], before[arn]["containers"][0]["runtimeId"])
            self.assertEqual(fetch(ips[arn]), PAGE)

        # New tasks get new addresses while the old ones hold theirs.
        fresh = self.wait_all(self.run_tasks(td, 3), "RUNNING")
        self.assertFalse({ip_of(t) for t in fresh.values()} & set(ips.values()))

        # Re-adopted tasks stop as any other.
        everything = list(before) + list(fresh)
        for arn in everything:
            self.ecs.stop_task(cluster="restarts", task=arn)
        stopped = self.wait_all(everything, "STOPPED")
        for arn in before:
            self.assertEqual(stopped[arn]["stopCode"], "UserInitiated")
        netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
        for arn in everything:
            self.assertNotIn(arn.rsplit("/", 1)[1], netns)


if __name__ == "__main__":
    unittest.main()
