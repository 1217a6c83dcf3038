"""ECS container semantics on real containers (crun, busybox-static): dependsOn (an init container
that writes a file to a task volume and must succeed before the app, which reads it, starts), health checks (HEALTHY, UNHEALTHY), restart policies,
stopTimeout (SIGKILL after it: 137), OOM kills (137 + OutOfMemoryError), the exit code of a
non-essential container, each container's imageDigest, and re-adoption of a running task when the
node restarts. Needs root, crun and busybox-static.
Each test takes a few seconds: intervals and timeouts are the shortest the agent accepts."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
import task_harness as th  # noqa: E402
from test_images import busybox_rootfs, image  # noqa: E402

IMAGE = "busybox:semantics"
OOM_REASON = "OutOfMemoryError: Container killed due to memory usage"


def skip_reason():
    return th.skip_reason()


def container(task, name):
    for c in task["containers"]:
        if c["name"] == name:
            return c
    raise AssertionError(f"no container {name} in {task}")


class _TaskCase(h.PaddockTestCase):
    """A server with the busybox image imported and a cluster; helpers to run and watch tasks."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        root = busybox_rootfs(os.path.join(cls.tmp, "bb-rootfs"), applets=("sleep", "dd", "false", "true", "test"))
        image(cls.state_dir, "import-rootfs", root, "--name", IMAGE, "--cmd", "sleep 3600")
        cls.digest = next(i["manifestDigest"] for i in image(cls.state_dir, "ls", "--json")[1]
                          if i["reference"].endswith("/" + IMAGE))
        cls.connect()
        ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                           aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)
        cls.subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        cls.ecs.create_cluster(clusterName="semantics")
        cls.families = 0

    @classmethod
    def connect(cls):
        cls.ecs = h.ecs_client(cls.server.endpoint, cls.key_id, cls.secret)

    def run_task(self, containers, volumes=()):
        # sleep as PID 1 ignores SIGTERM: without a short stopTimeout every cleanup waits 30 s.
        for c in containers:
            c.setdefault("stopTimeout", 1)
        type(self).families += 1
        td = self.ecs.register_task_definition(
            family=f"{type(self).__name__.lower()}-{self.families}", networkMode="awsvpc", requiresCompatibilities=["FARGATE"],
            cpu="256", memory="512", containerDefinitions=containers,
            volumes=list(volumes))["taskDefinition"]["taskDefinitionArn"]
        r = self.ecs.run_task(cluster="semantics", taskDefinition=td, launchType="FARGATE",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        self.addCleanup(self.stop_quietly, arn)
        return arn

    def stop_quietly(self, arn):
        task = self.describe(arn)
        if task["lastStatus"] != "STOPPED":
            self.ecs.stop_task(cluster="semantics", task=arn, reason="test cleanup")
            self.wait_until(arn, lambda t: t["lastStatus"] == "STOPPED", "STOPPED")

    def describe(self, arn):
        r = self.ecs.describe_tasks(cluster="semantics", tasks=[arn])
        self.assertEqual(r["failures"], [])
        return r["tasks"][0]

    def wait_until(self, arn, done, what, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            task = self.describe(arn)
            if done(task):
                return task
            if time.monotonic() > deadline:
                self.fail(f"task did not reach {what}: {task} {self.server.log_tail()}")
            time.sleep(0.05)

    def wait_status(self, arn, status, timeout=30):
        def done(t):
            if t["lastStatus"] == "STOPPED" and status != "STOPPED":
                self.fail(f"task stopped before {status}: {t}")
            return t["lastStatus"] == status
        return self.wait_until(arn, done, status, timeout)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class TaskSemantics(_TaskCase):

    def test_depends_on_success_runs_the_init_container_first(self):
        shared = [{"sourceVolume": "shared", "containerPath": "/shared"}]
        arn = self.run_task([
            {"name": "init", "image": IMAGE, "essential": False, "mountPoints": shared,
             "command": ["sh", "-c", "sleep 1; echo written by init > /shared/flag; exit 0"]},
            {"name": "app", "image": IMAGE, "mountPoints": shared,
             "command": ["sh", "-c", "cat /shared/flag; sleep 3600"],
             "dependsOn": [{"containerName": "init", "condition": "SUCCESS"}]},
        ], volumes=[{"name": "shared"}])
        # While the init container runs, the app waits and the task is not RUNNING yet.
        task = self.wait_until(arn, lambda t: container(t, "init")["lastStatus"] == "RUNNING", "init RUNNING")
        self.assertEqual(container(task, "app")["lastStatus"], "PENDING")
        self.assertIn(task["lastStatus"], ("PENDING", "ACTIVATING"))
        task = self.wait_status(arn, "RUNNING")
        init, app = container(task, "init"), container(task, "app")
        self.assertEqual(init["lastStatus"], "STOPPED")
        self.assertEqual(init["exitCode"], 0)
        self.assertEqual(app["lastStatus"], "RUNNING")
        self.assertEqual(app["imageDigest"], self.digest)
        self.assertEqual(init["imageDigest"], self.digest)
        # The app started after the init container had written its file.
        log = os.path.join(self.state_dir, "logs", arn.rsplit("/", 1)[1], "app.log")
        deadline = time.monotonic() + 10
        while not (os.path.exists(log) and os.path.getsize(log) > 0) and time.monotonic() < deadline:
            time.sleep(0.05)
        with open(log) as f:
            self.assertEqual(f.read(), "written by init\n")

    def test_depends_on_success_with_a_failing_init_fails_the_task(self):
        arn = self.run_task([
            {"name": "init", "image": IMAGE, "essential": False, "command": ["sh", "-c", "exit 3"]},
            {"name": "app", "image": IMAGE, "dependsOn": [{"containerName": "init", "condition": "SUCCESS"}]},
        ])
        task = self.wait_status(arn, "STOPPED")
        self.assertEqual(task["stopCode"], "TaskFailedToStart")
        self.assertEqual(task["stoppedReason"],
                         "CannotStartContainerError: dependency graph: failed to resolve container ordering "
                         "dependency [init] for target [app] as dependency did not exit successfully.")
        self.assertEqual(container(task, "init")["exitCode"], 3)
        self.assertNotIn("exitCode", container(task, "app"))

    def test_health_checks_healthy_and_unhealthy(self):
        arn = self.run_task([
            {"name": "app", "image": IMAGE, "command": ["sh", "-c", "echo > /ready; sleep 3600"],
             "healthCheck": {"command": ["CMD-SHELL", "test -f /ready"], "interval": 1, "retries": 2}},
            {"name": "web", "image": IMAGE, "dependsOn": [{"containerName": "app", "condition": "HEALTHY"}]},
        ])
        task = self.wait_status(arn, "RUNNING")  # web started: app passed a check
        self.assertEqual(container(task, "app")["healthStatus"], "HEALTHY")
        self.assertEqual(task["healthStatus"], "HEALTHY")

        sick = self.run_task([
            {"name": "app", "image": IMAGE,
             "healthCheck": {"command": ["CMD", "false"], "interval": 1, "retries": 2, "timeout": 2}},
        ])
        task = self.wait_until(sick, lambda t: t.get("healthStatus") == "UNHEALTHY", "UNHEALTHY")
        self.assertEqual(container(task, "app")["healthStatus"], "UNHEALTHY")
        # A task run on its own (not by a service) keeps running when unhealthy, as on ECS.
        self.assertEqual(task["lastStatus"], "RUNNING")

    def test_restart_policy_restarts_an_exited_container(self):
        arn = self.run_task([
            {"name": "app", "image": IMAGE, "command": ["sh", "-c", "echo started; sleep 1; exit 1"],
             "restartPolicy": {"enabled": True, "restartAttemptPeriod": 1}},
        ])
        self.wait_status(arn, "RUNNING")
        log = os.path.join(self.state_dir, "logs", arn.rsplit("/", 1)[1], "app.log")
        deadline = time.monotonic() + 20
        while True:
            runs = 0
            if os.path.exists(log):
                with open(log) as f:
                    runs = f.read().count("started\n")
            if runs >= 3:
                break
            if time.monotonic() > deadline:
                self.fail(f"not restarted: {runs} runs; {self.describe(arn)} {self.server.log_tail()}")
            time.sleep(0.1)
        task = self.describe(arn)
        self.assertEqual(task["lastStatus"], "RUNNING")  # the essential container's exits did not stop it
        self.assertEqual(container(task, "app")["lastStatus"], "RUNNING")

    def test_stop_timeout_kills_a_container_that_ignores_sigterm(self):
        arn = self.run_task([
            {"name": "app", "image": IMAGE, "stopTimeout": 1, "command": ["sh", "-c", "trap '' TERM; sleep 3600"]},
        ])
        self.wait_status(arn, "RUNNING")
        started = time.monotonic()
        self.ecs.stop_task(cluster="semantics", task=arn)
        task = self.wait_status(arn, "STOPPED")
        self.assertGreaterEqual(time.monotonic() - started, 1.0)
        self.assertEqual(task["stopCode"], "UserInitiated")
        self.assertEqual(container(task, "app")["exitCode"], 137)

    def test_oom_kill_gives_137_and_the_oom_reason(self):
        arn = self.run_task([
            {"name": "app", "image": IMAGE, "memory": 16,
             "command": ["dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"]},
        ])
        task = self.wait_status(arn, "STOPPED")
        self.assertEqual(task["stopCode"], "EssentialContainerExited")
        app = container(task, "app")
        self.assertEqual(app["exitCode"], 137, task)
        self.assertEqual(app["reason"], OOM_REASON)

    def test_a_non_essential_containers_exit_code_is_reported(self):
        arn = self.run_task([
            {"name": "app", "image": IMAGE},
            {"name": "side", "image": IMAGE, "essential": False, "command": ["sh", "-c", "exit 5"]},
        ])
        task = self.wait_until(arn, lambda t: container(t, "side")["lastStatus"] == "STOPPED", "side STOPPED")
        self.assertEqual(container(task, "side")["exitCode"], 5)
        self.assertIn(task["lastStatus"], ("ACTIVATING", "RUNNING"))
        task = self.wait_status(arn, "RUNNING")
        self.assertEqual(container(task, "app")["lastStatus"], "RUNNING")


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class AgentRestart(_TaskCase):
    """The node restarts (its agent with it) while a task runs: the new agent re-adopts the task."""

    def test_a_running_task_is_readopted_not_restarted(self):
        arn = self.run_task([
            {"name": "app", "image": IMAGE, "command": ["sh", "-c", "echo started; sleep 3600"]},
            {"name": "side", "image": IMAGE, "essential": False, "command": ["sh", "-c", "sleep 2; exit 6"]},
        ])
        task = self.wait_status(arn, "RUNNING")
        self.assertEqual(container(task, "side")["lastStatus"], "RUNNING")
        self.assertEqual(self.server.stop(), 0)
        # side exits (after its 2 s) while no agent runs; the next one finds it stopped.
        self.server.start()
        self.connect()
        task = self.wait_until(arn, lambda t: container(t, "side")["lastStatus"] == "STOPPED", "side STOPPED")
        side = container(task, "side")
        if "exitCode" in side:
            self.assertEqual(side["exitCode"], 6)
        else:
            self.assertEqual(side["reason"],
                             "the container's exit code is unknown: it was started before the agent restarted")
        self.assertEqual(task["lastStatus"], "RUNNING")
        self.assertEqual(container(task, "app")["lastStatus"], "RUNNING")
        with open(os.path.join(self.state_dir, "logs", arn.rsplit("/", 1)[1], "app.log")) as f:
            self.assertEqual(f.read(), "started\n")  # re-adopted, not started again
        # Watched again: StopTask stops it (sleep ignores SIGTERM as PID 1: SIGKILL at stopTimeout).
        self.ecs.stop_task(cluster="semantics", task=arn)
        task = self.wait_status(arn, "STOPPED")
        self.assertEqual(task["stopCode"], "UserInitiated")
        self.assertEqual(container(task, "app")["exitCode"], 137)


if __name__ == "__main__":
    unittest.main()
