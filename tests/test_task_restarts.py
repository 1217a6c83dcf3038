"""kill -9 of the server (and with it the in-process agent) while tasks run: no task is lost, their
containers are re-adopted by the restarted agent and keep serving at their IPs, no address is given
to a second task, and the re-adopted tasks stop normally afterwards (docs/contracts/task.md,
"Restart and interruption" and "Agent restart"). A task caught mid-launch (its image pull held by
a gate in front of a registry) is launched again after the restart and reaches RUNNING under its
ARN and address. Needs root, crun and busybox-static (the mid-launch test also skopeo and
docker-registry)."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
import task_harness as th  # noqa: E402
from task_harness import skip_reason  # noqa: E402
from test_images import busybox_rootfs  # noqa: E402
from test_pull import Registry, free_port, oci_layout, push  # noqa: E402

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


class PullGate:
    """A loopback TCP proxy to `port` that holds every connection it accepts until open(): a
    registry whose pulls hang, for a task kept in PENDING as long as the test wants. drop_held()
    closes the connections held so far (those of a killed server's pull)."""

    def __init__(self, port, listen_port):
        self.target = port
        self.cond = threading.Condition()
        self.accepted = 0
        self.opened = False
        self.held = []
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", listen_port))
        self.listener.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.cond:
                self.accepted += 1
                self.cond.notify_all()
                if not self.opened:
                    self.held.append(client)
                    continue
            self._forward(client)

    def _forward(self, client):
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target))
        except OSError:  # the registry is gone (the test is ending)
            client.close()
            return
        h.relay(client, upstream)

    def wait_accepted(self, n, timeout=30):
        with self.cond:
            return self.cond.wait_for(lambda: self.accepted >= n, timeout)

    def drop_held(self):
        with self.cond:
            held, self.held = self.held, []
        for c in held:
            c.close()

    def open(self):
        with self.cond:
            self.opened = True
            held, self.held = self.held, []
        for c in held:
            self._forward(c)

    def close(self):
        self.listener.close()
        self.drop_held()


def pull_skip_reason():
    return skip_reason(tools=("crun", "skopeo", "docker-registry"))


@unittest.skipIf(pull_skip_reason() is not None, pull_skip_reason() or "")
class LaunchRestarts(unittest.TestCase):
    """kill -9 of the server while a task's image is being pulled (PENDING): the restarted agent
    launches it again (docs/contracts/task.md, "Agent restart")."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="paddock-relaunch-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.addCleanup(h.stop_leftover_tasks)  # runs last: after the server stopped
        self.state = os.path.join(self.tmp, "state")
        os.makedirs(self.state)
        self.account, self.key_id, self.secret = h.create_account(self.state)
        root = busybox_rootfs(os.path.join(self.tmp, "rootfs"), page=PAGE)
        layout = os.path.join(self.tmp, "layout")
        oci_layout(layout, root, ["httpd", "-f", "-p", "8080", "-h", "/www"])
        registry = Registry(os.path.join(self.tmp, "registry"), os.path.join(self.tmp, "storage"))
        self.addCleanup(registry.stop)
        push(layout, f"{registry.host}/busybox:1")
        self.gate = PullGate(registry.port, free_port())
        self.addCleanup(self.gate.close)
        port = self.gate.listener.getsockname()[1]
        self.image = f"127.0.0.1:{port}/busybox:1"
        self.config = os.path.join(self.tmp, "paddock.toml")
        with open(self.config, "w") as f:
            f.write(f'[images]\nlocal_registries = ["127.0.0.1:{port}"]\n')
        self.server = None
        self.addCleanup(self._stop_server)

    def _stop_server(self):
        if self.server is not None:
            self.server.stop()

    def start(self):
        self.server = h.Server(self.state, ("--config", self.config)).start()
        self.ecs = h.ecs_client(self.server.endpoint, self.key_id, self.secret)

    def describe(self, arn):
        r = self.ecs.describe_tasks(cluster="relaunch", tasks=[arn])
        self.assertEqual(r["failures"], [])
        return r["tasks"][0]

    def test_a_task_caught_mid_launch_by_a_kill_9_is_launched_again_and_runs(self):
        self.start()
        self.ecs.create_cluster(clusterName="relaunch")
        subnet = boto3.client("ec2", endpoint_url=self.server.endpoint, region_name=h.REGION,
                              aws_access_key_id=self.key_id,
                              aws_secret_access_key=self.secret).describe_subnets()["Subnets"][0]["SubnetId"]
        td = self.ecs.register_task_definition(
            family="relaunch", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "web", "image": self.image, "stopTimeout": 2}],
        )["taskDefinition"]["taskDefinitionArn"]
        r = self.ecs.run_task(cluster="relaunch", taskDefinition=td, launchType="FARGATE",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet]}})
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        ip = th.task_ip(r["tasks"][0])

        # Its pull reached the registry and hangs there: the task is PENDING.
        self.assertTrue(self.gate.wait_accepted(1), self.server.log_tail())
        self.assertEqual(self.describe(arn)["lastStatus"], "PENDING")
        self.server.kill()  # SIGKILL mid-launch: no shutdown path runs
        pulls_before = self.gate.accepted
        self.gate.drop_held()  # the killed server's pull ends with it

        self.start()
        # A pull reaches the gate again (the new agent's, as its launch starts over, or the killed
        # server's orphaned skopeo retrying): the registry answers from now on.
        self.assertTrue(self.gate.wait_accepted(pulls_before + 1), self.server.log_tail())
        self.gate.open()
        task = th.wait_for_status(self, self.ecs, "relaunch", arn, "RUNNING", 60, self.server.log_tail)
        self.assertEqual(task["taskArn"], arn)
        self.assertEqual(th.task_ip(task), ip)
        self.assertNotIn("stopCode", task)
        self.assertEqual(fetch(ip), PAGE)
        self.assertIn("caught mid-launch (PENDING) by an agent restart: launching it again", self.server.log_tail(20000))

        self.ecs.stop_task(cluster="relaunch", task=arn)
        stopped = th.wait_for_status(self, self.ecs, "relaunch", arn, "STOPPED", 30, self.server.log_tail)
        self.assertEqual(stopped["stopCode"], "UserInitiated")
        netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
        self.assertNotIn(arn.rsplit("/", 1)[1], netns)


if __name__ == "__main__":
    unittest.main()
