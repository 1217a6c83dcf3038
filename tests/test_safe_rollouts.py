"""Safe rollouts by default (issue 10, docs/contracts/service.md "Healthy", "Circuit breaker"): a
server started with NO configuration (so [scheduler] settle_seconds is its default, AWS's 40 s)
runs a service whose first revision has a container health check; UpdateService to a revision
whose essential container exits right after it starts (`sh -c "exit 1"`) fails that deployment at
the circuit breaker's threshold ("deployment failed: tasks failed to start."), rolls back to the
COMPLETED deployment ("rolling back to deployment …") and the service ends on the old revision with
its old tasks never stopped; a revision whose tasks run a few seconds before exiting fails the same
way (a task that stops before the deployment completes is a failure); a rollout of health-checked
tasks is not held by the settle time; and the configurable breaker's members (AWS's current API,
which the machine's botocore cannot send) go through the model to the scheduler. Every botocore
answer is validated against its output shape by the harness. Needs root, crun and busybox-static."""

import json
import os
import sys
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402  (first: it skips the module where boto3 is missing)

import task_harness as th  # noqa: E402
from test_services import ServiceCase, index_of, is_steady, messages  # noqa: E402

# A check that passes as soon as it runs (httpd serves /www; the first check runs 1 s after start).
HEALTH_CHECK = {"command": ["CMD-SHELL", "cat /www/index.html"], "interval": 1, "timeout": 2, "retries": 3}
CRASH = ["/bin/sh", "-c", "exit 1"]
CRASH_LATER = ["/bin/sh", "-c", "sleep 3; exit 1"]
BREAKER = {"deploymentCircuitBreaker": {"enable": True, "rollback": True}}


@unittest.skipIf(th.skip_reason() is not None, th.skip_reason() or "")
class SafeRollouts(ServiceCase):

    CLUSTER = "safe"
    CONFIG = None  # the defaults: settle 40 s, resync 10 s, backoff 10 s doubling to 15 minutes

    def healthy_revision(self, family, version):
        return self.register(family, version, container={"healthCheck": HEALTH_CHECK})

    def start_healthy(self, name, desired, **kw):
        """A service of `desired` health-checked tasks, COMPLETED; returns (task definition, deployment id)."""
        td = self.healthy_revision(name, 1)
        svc = self.create(name, td, desired, **kw)
        d1 = svc["deployments"][0]["id"]
        self.wait_steady(name, desired, d1, timeout=60)
        return td, d1

    def roll_back(self, name, desired, good, d1, bad):
        """UpdateService to `bad`; waits for the rollback to d1 and checks it. Returns (d2, seconds
        from the update to the steady state on d1, the final service, the FAILED d2 if seen)."""
        old = {t["taskArn"] for t in self.tasks(name)}
        t0 = time.monotonic()
        resp = self.ecs.update_service(cluster=self.CLUSTER, service=name, taskDefinition=bad)["service"]
        d2 = resp["deployments"][0]["id"]
        self.assertEqual([(d["id"], d["status"]) for d in resp["deployments"]], [(d2, "PRIMARY"), (d1, "ACTIVE")])
        failed_seen = None
        deadline = time.monotonic() + 120
        while True:
            svc = self.describe(name)
            for d in svc["deployments"]:
                if d["id"] == d2 and d.get("rolloutState") == "FAILED" and failed_seen is None:
                    failed_seen = d
                self.assertNotEqual((d["id"], d.get("rolloutState")), (d2, "COMPLETED"),
                                    f"the crash-looping revision completed: {messages(svc)[:8]}")
            if is_steady(svc, desired, d1):
                break
            if time.monotonic() > deadline:
                self.fail(f"no rollback to {d1}: {svc['deployments']} {messages(svc)[:10]}\n{self.server.log_tail()}")
            time.sleep(0.05)
        elapsed = time.monotonic() - t0

        msgs = messages(svc)
        failed = index_of(msgs, rf"\(service {name}\) \(deployment {d2}\) deployment failed: tasks failed to start\.")
        rolling = index_of(msgs, rf"\(service {name}\) rolling back to deployment {d1}\.")
        completed = index_of(msgs, rf"\(service {name}\) \(deployment {d1}\) deployment completed\.")
        self.assertIsNotNone(failed, msgs)
        self.assertIsNotNone(rolling, msgs)
        self.assertIsNotNone(completed, msgs)
        self.assertTrue(completed < rolling < failed, f"newest first: completed, rolling back, failed: {msgs}")
        final = svc["deployments"][0]
        self.assertEqual((final["id"], final["status"], final["rolloutState"], final["taskDefinition"]),
                         (d1, "PRIMARY", "COMPLETED", good))
        self.assertEqual(svc["taskDefinition"], good)
        # The old tasks ran throughout: minimumHealthyPercent 100 never let one go for a new task
        # that was not healthy.
        now = self.tasks(name)
        self.assertEqual({t["taskArn"] for t in now}, old)
        self.assertEqual({(t["taskDefinitionArn"], t["startedBy"], t["lastStatus"]) for t in now}, {(good, d1, "RUNNING")})
        # The failed deployment's service deployment rolled back successfully.
        sds = self.ecs.list_service_deployments(cluster=self.CLUSTER, service=name)["serviceDeployments"]
        by_target = {sd["targetServiceRevisionArn"]: sd for sd in sds}
        self.assertEqual(len(sds), 2, sds)
        rolled = [sd for sd in sds if sd["status"] == "ROLLBACK_SUCCESSFUL"]
        self.assertEqual(len(rolled), 1, by_target)
        return d2, elapsed, svc, failed_seen

    def test_1_a_crash_looping_revision_fails_and_rolls_back_with_the_default_config(self):
        good, d1 = self.start_healthy("crash", 3, deploymentConfiguration=BREAKER)
        bad = self.register("crash", 2, command=CRASH)  # no health check: the settle time applies
        d2, elapsed, svc, failed_seen = self.roll_back("crash", 3, good, d1, bad)
        if failed_seen is not None:
            self.assertEqual(failed_seen["rolloutStateReason"], "ECS deployment circuit breaker: tasks failed to start.")
            self.assertGreaterEqual(failed_seen["failedTasks"], 3)
        stopped = [t for t in self.tasks("crash", "STOPPED") if t["startedBy"] == d2]
        failures = [t for t in stopped if t["stopCode"] in ("EssentialContainerExited", "TaskFailedToStart")]
        self.assertGreaterEqual(len(failures), 3, "the threshold for 3 tasks is 3 failures")
        for t in stopped:  # a replacement still starting when the rollback began is the scheduler's to stop
            self.assertIn(t["stopCode"], ("EssentialContainerExited", "TaskFailedToStart", "ServiceSchedulerInitiated"),
                          t.get("stoppedReason"))
        # services-stable (botocore's waiter) sees the service back on the old revision.
        self.ecs.get_waiter("services_stable").wait(cluster=self.CLUSTER, services=["crash"],
                                                    WaiterConfig={"Delay": 1, "MaxAttempts": 30})
        svc = self.describe("crash")
        self.assertEqual([(d["id"], d["taskDefinition"]) for d in svc["deployments"]], [(d1, good)])
        print(f"\ncrash loop (sh -c 'exit 1', 3 tasks, defaults): UpdateService -> back on {d1} COMPLETED "
              f"in {elapsed:.1f} s; d2's tasks: {sorted(t['stopCode'] + (' (ran)' if 'startedAt' in t else '') for t in stopped)}", file=sys.stderr)

    def test_2_a_task_that_runs_a_few_seconds_then_exits_is_a_failure_too(self):
        good, d1 = self.start_healthy("later", 3, deploymentConfiguration=BREAKER)
        bad = self.register("later", 2, command=CRASH_LATER)
        d2, elapsed, svc, _ = self.roll_back("later", 3, good, d1, bad)
        stopped = [t for t in self.tasks("later", "STOPPED") if t["startedBy"] == d2]
        ran = [t for t in stopped if t["stopCode"] == "EssentialContainerExited" and "startedAt" in t]
        self.assertGreaterEqual(len(ran), 3, [(t["stopCode"], t.get("startedAt")) for t in stopped])
        for t in ran:
            self.assertGreaterEqual((t["stoppedAt"] - t["startedAt"]).total_seconds(), 2.5, "it ran before exiting")
        print(f"\ncrash after 3 s RUNNING (3 tasks, defaults): back on {d1} COMPLETED in {elapsed:.1f} s",
              file=sys.stderr)

    def test_3_health_checked_tasks_roll_out_without_the_settle_wait(self):
        td1, d1 = self.start_healthy("checked", 4)
        td2 = self.healthy_revision("checked", 2)
        t0 = time.monotonic()
        d2 = self.ecs.update_service(cluster=self.CLUSTER, service="checked", taskDefinition=td2)["service"]["deployments"][0]["id"]
        self.ecs.get_waiter("services_stable").wait(cluster=self.CLUSTER, services=["checked"],
                                                    WaiterConfig={"Delay": 1, "MaxAttempts": 60})
        elapsed = time.monotonic() - t0
        svc = self.describe("checked")
        self.assertTrue(is_steady(svc, 4, d2), svc["deployments"])
        self.assertLess(elapsed, 20, "HEALTHY tasks do not wait for the 40 s settle time")
        for t in self.tasks("checked"):
            self.assertEqual((t["taskDefinitionArn"], t["healthStatus"]), (td2, "HEALTHY"))
        print(f"\nhealth-checked rollout (4 tasks, defaults): services-stable after {elapsed:.1f} s", file=sys.stderr)

    def test_4_the_configurable_breaker_goes_through_to_the_scheduler(self):
        # botocore 1.43.11 has no resetOnHealthyTask / thresholdConfiguration: signed raw requests
        # send them, and this test's botocore client does not validate the answers that echo them
        # (botocore drops the members it does not know).
        self.ecs = h.ecs_client(self.server.endpoint, self.key_id, self.secret, validate=False)
        port = urllib.parse.urlparse(self.server.endpoint).port
        raw = h.RawConn(port, h.RawSigner(self.key_id, self.secret))
        self.addCleanup(raw.close)
        good = self.healthy_revision("count1", 1)
        breaker = {"enable": True, "rollback": True, "resetOnHealthyTask": False,
                   "thresholdConfiguration": {"type": "COUNT", "value": 1}}
        status, body = raw.call("CreateService", {
            "cluster": self.CLUSTER, "serviceName": "count1", "taskDefinition": good, "desiredCount": 1,
            "launchType": "FARGATE", "networkConfiguration": self.net(),
            "deploymentConfiguration": {"deploymentCircuitBreaker": breaker}})
        self.assertEqual(status, 200, body)
        self.created.append((self.CLUSTER, "count1"))
        svc = json.loads(body)["service"]
        self.assertEqual(svc["deploymentConfiguration"]["deploymentCircuitBreaker"], breaker)
        d1 = svc["deployments"][0]["id"]
        self.wait_steady("count1", 1, d1)

        bad = self.register("count1", 2, command=CRASH)
        d2, _, _, _ = self.roll_back("count1", 1, good, d1, bad)
        launched = [t for t in self.tasks("count1", "STOPPED") if t["startedBy"] == d2]
        self.assertEqual(len(launched), 1, "COUNT 1: the first failure fails the deployment (the default "
                                           "threshold for 1 task, 3, would have launched three)")
        status, body = raw.call("UpdateService", {
            "cluster": self.CLUSTER, "service": "count1",
            "deploymentConfiguration": {"deploymentCircuitBreaker": {
                "enable": True, "rollback": True, "thresholdConfiguration": {"type": "BOUNDED_PERCENT", "value": 101}}}})
        self.assertEqual(status, 400, body)
        self.assertEqual(json.loads(body)["__type"], "InvalidParameterException")
        self.assertIn("must be between 1 and 100 for BOUNDED_PERCENT", json.loads(body)["message"])


if __name__ == "__main__":
    unittest.main()
