"""The AWS CLI / botocore ECS waiters against a real server with real tasks (docs/contracts/service.md):
services-stable returns only once a rolling update has finished (one deployment, runningCount ==
desiredCount) and fails at once on a missing service, services-inactive returns once a deleted
service is INACTIVE, tasks-running and tasks-stopped follow the service's tasks, and one run of the
real `python3 -m awscli ecs wait services-stable` (botocore's own 15 s delay) succeeds after an
UpdateService. The botocore waiters run through the harness's client (every DescribeServices and
DescribeTasks answer validated against botocore's output shape) with a 1 s delay. Needs root, crun
and busybox-static."""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
from botocore.exceptions import WaiterError  # noqa: E402
import task_harness as th  # noqa: E402
from test_services import SCHEDULER_CONFIG, ServiceCase, is_steady  # noqa: E402

FAST = {"Delay": 1, "MaxAttempts": 60}


@unittest.skipIf(th.skip_reason() is not None, th.skip_reason() or "")
class ServiceWaiters(ServiceCase):

    CLUSTER = "waiters"
    CONFIG = SCHEDULER_CONFIG

    def waiter(self, name):
        return self.ecs.get_waiter(name)  # the harness's client: every answer is validated

    def test_services_stable_waits_for_the_rollout_and_tasks_waiters_follow_it(self):
        td1 = self.register("wstable", 1)
        td2 = self.register("wstable", 2)
        self.create("wstable", td1, 3)
        validated = self.ecs.paddock_capture.validated
        self.waiter("services_stable").wait(cluster=self.CLUSTER, services=["wstable"], WaiterConfig=FAST)
        self.assertGreater(self.ecs.paddock_capture.validated, validated)
        svc = self.describe("wstable")
        self.assertEqual((len(svc["deployments"]), svc["runningCount"], svc["desiredCount"]), (1, 3, 3))

        arns = [t["taskArn"] for t in self.tasks("wstable")]
        self.assertEqual(len(arns), 3)
        self.waiter("tasks_running").wait(cluster=self.CLUSTER, tasks=arns, WaiterConfig=FAST)
        for t in self.ecs.describe_tasks(cluster=self.CLUSTER, tasks=arns)["tasks"]:
            self.assertEqual(t["lastStatus"], "RUNNING")

        # Right after UpdateService the answer lists two deployments, so the waiter cannot return
        # before the old deployment is gone: when it returns every task runs the new revision.
        resp = self.ecs.update_service(cluster=self.CLUSTER, service="wstable", taskDefinition=td2)["service"]
        self.assertEqual(len(resp["deployments"]), 2)
        self.waiter("services_stable").wait(cluster=self.CLUSTER, services=["wstable"], WaiterConfig=FAST)
        svc = self.describe("wstable")
        self.assertEqual([(d["id"], d["taskDefinition"]) for d in svc["deployments"]],
                         [(resp["deployments"][0]["id"], td2)])
        now = self.tasks("wstable")
        self.assertEqual([t["taskDefinitionArn"] for t in now], [td2] * 3)
        # The old revision's tasks were stopped (the scheduler stops them before the old deployment
        # leaves deployments[]); tasks-stopped sees them all STOPPED.
        self.waiter("tasks_stopped").wait(cluster=self.CLUSTER, tasks=arns, WaiterConfig=FAST)
        for t in self.ecs.describe_tasks(cluster=self.CLUSTER, tasks=arns)["tasks"]:
            self.assertEqual(t["lastStatus"], "STOPPED")

    def test_services_stable_fails_at_once_on_a_missing_service(self):
        started = time.monotonic()
        with self.assertRaises(WaiterError) as cm:
            self.waiter("services_stable").wait(cluster=self.CLUSTER, services=["no-such-service"], WaiterConfig=FAST)
        self.assertIn("failure state", str(cm.exception))
        self.assertLess(time.monotonic() - started, 5, "the MISSING acceptor ends the waiter on the first answer")
        failures = cm.exception.last_response["failures"]
        self.assertEqual([f["reason"] for f in failures], ["MISSING"])
        # A name comes back as service/<name>, without the cluster, as AWS reports it (service.md).
        self.assertEqual(failures[0]["arn"], f"arn:aws:ecs:{h.REGION}:{self.account}:service/no-such-service")

    def test_services_inactive_after_delete_and_tasks_stopped(self):
        td = self.register("winactive", 1)
        self.create("winactive", td, 2)
        self.waiter("services_stable").wait(cluster=self.CLUSTER, services=["winactive"], WaiterConfig=FAST)
        arns = [t["taskArn"] for t in self.tasks("winactive")]
        gone = self.ecs.delete_service(cluster=self.CLUSTER, service="winactive", force=True)["service"]
        self.assertEqual(gone["status"], "DRAINING")
        # services-stable fails on a DRAINING (or already INACTIVE) service at its first answer.
        with self.assertRaises(WaiterError) as cm:
            self.waiter("services_stable").wait(cluster=self.CLUSTER, services=["winactive"],
                                                WaiterConfig={"Delay": 1, "MaxAttempts": 1})
        self.assertIn("failure state", str(cm.exception))
        self.waiter("services_inactive").wait(cluster=self.CLUSTER, services=["winactive"], WaiterConfig=FAST)
        self.assertEqual(self.describe("winactive")["status"], "INACTIVE")
        self.waiter("tasks_stopped").wait(cluster=self.CLUSTER, tasks=arns, WaiterConfig=FAST)
        for t in self.ecs.describe_tasks(cluster=self.CLUSTER, tasks=arns)["tasks"]:
            self.assertEqual((t["lastStatus"], t["stopCode"]), ("STOPPED", "ServiceSchedulerInitiated"))
        # An INACTIVE service makes services-stable fail, not wait.
        with self.assertRaises(WaiterError) as cm:
            self.waiter("services_stable").wait(cluster=self.CLUSTER, services=["winactive"], WaiterConfig=FAST)
        self.assertIn("failure state", str(cm.exception))

    def test_tasks_running_fails_on_a_task_that_stops(self):
        bad = self.register("wbad", 1, command=["/bin/no-such-command"])
        r = self.ecs.run_task(cluster=self.CLUSTER, taskDefinition=bad, launchType="FARGATE",
                              networkConfiguration=self.net())
        arn = r["tasks"][0]["taskArn"]
        with self.assertRaises(WaiterError) as cm:
            self.waiter("tasks_running").wait(cluster=self.CLUSTER, tasks=[arn], WaiterConfig=FAST)
        self.assertIn("failure state", str(cm.exception))
        self.assertEqual(cm.exception.last_response["tasks"][0]["lastStatus"], "STOPPED")

    def test_aws_cli_wait_services_stable(self):
        td1 = self.register("wcli", 1)
        # The new revision turns HEALTHY about 8 s after it starts (its failing checks before that
        # fall in the 15 s start period), so the rollout is still under way at the CLI's first
        # poll, however long the CLI takes to start on a loaded machine (it took 3.9 s once, when
        # the new tasks were healthy after 3 s and the rollout was done before its first poll): it
        # has to wait (botocore's 15 s delay) and poll again.
        td2 = self.register("wcli", 2, command=[
            "/bin/sh", "-c", "trap 'exit 0' TERM; (sleep 8; : > /ready) & httpd -f -p 8080 -h /www & wait"],
            container={"healthCheck": {"command": ["CMD-SHELL", "test -f /ready"], "interval": 1, "retries": 3,
                                       "startPeriod": 15}})
        self.create("wcli", td1, 2)
        self.wait_steady("wcli", 2)
        new_id = self.ecs.update_service(cluster=self.CLUSTER, service="wcli",
                                         taskDefinition=td2)["service"]["deployments"][0]["id"]
        env = dict(os.environ, AWS_ACCESS_KEY_ID=self.key_id, AWS_SECRET_ACCESS_KEY=self.secret,
                   AWS_DEFAULT_REGION=h.REGION, AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null")
        env.pop("AWS_PROFILE", None)
        env.pop("AWS_SESSION_TOKEN", None)
        started = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "awscli", "ecs", "wait", "services-stable",
                            "--endpoint-url", self.server.endpoint, "--cluster", self.CLUSTER, "--services", "wcli"],
                           capture_output=True, text=True, timeout=660, env=env)
        elapsed = time.monotonic() - started
        self.assertEqual(r.returncode, 0, f"stdout={r.stdout!r} stderr={r.stderr!r}")
        self.assertEqual(r.stdout, "")
        self.assertGreater(elapsed, 14, "the first poll already saw the rollout finished: the CLI never waited")
        svc = self.describe("wcli")
        self.assertTrue(is_steady(svc, 2, new_id), svc["deployments"])
        self.assertEqual({t["taskDefinitionArn"] for t in self.tasks("wcli")}, {td2})
        print(f"\naws ecs wait services-stable returned after {elapsed:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
