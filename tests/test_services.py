"""ECS services end to end, with real busybox tasks (docs/contracts/service.md): the service scheduler
scales a REPLICA service up and down with ECS's event texts, keeps minimumHealthyPercent and
maximumPercent at every moment of a rolling update (a sampler thread watches the tasks throughout),
trips the deployment circuit breaker on a revision whose container cannot start and rolls back to the
last COMPLETED deployment, replaces every task on forceNewDeployment, drains and deletes a service,
runs DAEMON services on in-process EC2 instances and moves REPLICA tasks off a DRAINING instance,
runs EXTERNAL task sets side by side, backs off failed starts as [scheduler] configures, and finishes
a rollout cut by kill -9 of the server. Every
answer is validated strictly against botocore's output shapes by the harness. Needs root, crun and
busybox-static.

The server runs with [scheduler] settle_seconds = 0 (a RUNNING task without health checks counts as
healthy at once), resync_seconds = 2 and a 1 s..4 s backoff, so rollouts take seconds."""

import collections
import json
import math
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402
import task_harness as th  # noqa: E402
from test_images import busybox_rootfs, image  # noqa: E402

SCHEDULER_CONFIG = ("[scheduler]\nsettle_seconds = 0\nresync_seconds = 2\n"
                    "backoff_base_seconds = 1\nbackoff_cap_seconds = 4\n")
IMAGE = "busybox:svc"
PAGE = "served by a paddock service\n"
# The image's command: httpd in the background, a shell (PID 1) that exits at once on SIGTERM.
QUICK_STOP = ["/bin/sh", "-c", "trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"]
# Without the trap PID 1 ignores SIGTERM: the task stops only at its stopTimeout (SIGKILL).
SLOW_STOP = ["/bin/sh", "-c", "httpd -f -p 8080 -h /www & wait"]
DEPLOYMENT_ID = re.compile(r"^ecs-svc/\d{19}$")
TASK_ID = r"[0-9a-f]{32}"
POLL = 0.05


def import_service_image(state_dir, work_dir, name=IMAGE):
    root = busybox_rootfs(os.path.join(work_dir, "svc-rootfs-" + name.replace(":", "-")), ("sleep",), PAGE)
    image(state_dir, "import-rootfs", root, "--name", name, "--cmd", json.dumps(QUICK_STOP))


def task_id(arn):
    return arn.rsplit("/", 1)[1]


def lower_bound(desired, min_pct):
    return math.ceil(desired * min_pct / 100)


def upper_bound(desired, max_pct):
    return math.floor(desired * max_pct / 100)


def is_steady(svc, desired=None, deployment=None):
    """ECS's steady state for a rolling-update service, as services-stable and the rollout see it:
    one PRIMARY deployment, COMPLETED, every desired task RUNNING."""
    d = svc.get("deployments", [])
    return (len(d) == 1 and d[0]["status"] == "PRIMARY" and d[0].get("rolloutState") == "COMPLETED"
            and svc["runningCount"] == svc["desiredCount"] and svc["pendingCount"] == 0
            and d[0]["runningCount"] == d[0]["desiredCount"] == svc["desiredCount"]
            and (desired is None or svc["desiredCount"] == desired)
            and (deployment is None or d[0]["id"] == deployment))


def messages(svc):
    """The service's event messages, newest first (as DescribeServices lists them)."""
    return [e["message"] for e in svc.get("events", [])]


def index_of(msgs, pattern):
    """Index (newest first) of the newest event matching the regex `pattern`, or None."""
    rx = re.compile(pattern)
    for i, m in enumerate(msgs):
        if rx.fullmatch(m):
            return i
    return None


def list_service_tasks(ecs, cluster, service, desired_status="RUNNING"):
    arns = []
    for page in ecs.get_paginator("list_tasks").paginate(cluster=cluster, serviceName=service,
                                                         desiredStatus=desired_status):
        arns += page["taskArns"]
    return arns


def describe_tasks(ecs, cluster, arns, include_tags=False):
    out = []
    arns = list(arns)
    for i in range(0, len(arns), 100):
        kw = {"include": ["TAGS"]} if include_tags else {}
        r = ecs.describe_tasks(cluster=cluster, tasks=arns[i:i + 100], **kw)
        if r["failures"]:
            raise AssertionError(f"DescribeTasks failures: {r['failures']}")
        out += r["tasks"]
    return out


class BoundsSampler(threading.Thread):
    """Watches a service's tasks (ListTasks by serviceName, RUNNING and STOPPED desired status, then
    DescribeTasks) as fast as it can, and records every sample that breaks the rolling-update bounds:
    fewer than ceil(desired x min% / 100) tasks RUNNING and wanted RUNNING, or more than
    floor(desired x max% / 100) tasks not yet STOPPED. Uses its own client (the harness's, validated)."""

    def __init__(self, client, cluster, service, desired, min_pct, max_pct):
        super().__init__(daemon=True)
        self.ecs = client
        self.cluster = cluster
        self.service = service
        self.low = lower_bound(desired, min_pct)
        self.high = upper_bound(desired, max_pct)
        self.samples = []      # (monotonic time, healthy, live, Counter of live task definitions)
        self.violations = []
        self.errors = []
        self.dead = set()      # tasks already seen STOPPED (they never come back)
        self._halt = threading.Event()

    def sample(self):
        arns = set(list_service_tasks(self.ecs, self.cluster, self.service, "RUNNING"))
        arns |= set(list_service_tasks(self.ecs, self.cluster, self.service, "STOPPED"))
        arns -= self.dead
        tasks = describe_tasks(self.ecs, self.cluster, arns)
        healthy = 0
        live = 0
        revisions = collections.Counter()
        for t in tasks:
            if t["lastStatus"] == "STOPPED":
                self.dead.add(t["taskArn"])
                continue
            live += 1
            revisions[t["taskDefinitionArn"]] += 1
            if t["lastStatus"] == "RUNNING" and t["desiredStatus"] == "RUNNING":
                healthy += 1
        now = time.monotonic()
        self.samples.append((now, healthy, live, revisions))
        if healthy < self.low or live > self.high:
            # What the scheduler said, and how the tasks that died meanwhile ended: a violation
            # explains itself in the failure message.
            events = self.ecs.describe_services(cluster=self.cluster, services=[self.service])["services"]
            self.violations.append({
                "healthy": healthy, "live": live, "low": self.low, "high": self.high,
                "tasks": [(task_id(t["taskArn"]), t["taskDefinitionArn"].rsplit(":", 1)[1], t["lastStatus"],
                           t["desiredStatus"]) for t in tasks if t["lastStatus"] != "STOPPED"],
                "stopped": [(task_id(t["taskArn"]), t["taskDefinitionArn"].rsplit(":", 1)[1], t.get("stopCode"),
                             t.get("stoppedReason")) for t in tasks if t["lastStatus"] == "STOPPED"],
                "events": [e["message"] for e in events[0]["events"][:6]] if events else []})

    def run(self):
        while not self._halt.is_set():
            try:
                self.sample()
            except Exception as e:  # noqa: BLE001 — recorded, the test reports it
                self.errors.append(repr(e))
                if len(self.errors) > 20:
                    return
            self._halt.wait(0.01)

    def finish(self):
        self._halt.set()
        self.join(10)
        return self

    def mixed_samples(self):
        """Samples that saw live tasks of more than one revision (the rollout was under way)."""
        return [s for s in self.samples if len(s[3]) > 1]


class ServiceMixin:
    """What the service test classes share; the class sets CLUSTER, ecs, subnet and server."""

    CLUSTER = "svc"

    def net(self):
        return {"awsvpcConfiguration": {"subnets": [self.subnet]}}

    def register(self, family, version, command=None, stop_timeout=2, compat="FARGATE", network_mode="awsvpc",
                 cpu="256", memory="512", container=None, **extra):
        c = {"name": "web", "image": IMAGE, "essential": True, "stopTimeout": stop_timeout,
             "environment": [{"name": "VERSION", "value": str(version)}], **(container or {})}
        if command is not None:
            c["command"] = command
        return self.ecs.register_task_definition(
            family=family, networkMode=network_mode, requiresCompatibilities=[compat], cpu=cpu, memory=memory,
            containerDefinitions=[c], **extra)["taskDefinition"]["taskDefinitionArn"]

    def create(self, name, td, desired, cluster=None, **kw):
        cluster = cluster or self.CLUSTER
        if kw.get("schedulingStrategy") != "DAEMON" and "launchType" not in kw:
            kw["launchType"] = "FARGATE"
        if kw.get("launchType") == "FARGATE":
            kw.setdefault("networkConfiguration", self.net())
        if desired is not None:
            kw["desiredCount"] = desired
        if td is not None:
            kw["taskDefinition"] = td
        kw = {k: v for k, v in kw.items() if v is not None}
        svc = self.ecs.create_service(cluster=cluster, serviceName=name, **kw)["service"]
        self.created.append((cluster, name))
        return svc

    def describe(self, name, cluster=None, **kw):
        r = self.ecs.describe_services(cluster=cluster or self.CLUSTER, services=[name], **kw)
        self.assertEqual(r["failures"], [], r)
        self.assertEqual(len(r["services"]), 1, r)
        return r["services"][0]

    def wait_service(self, name, pred, what, timeout=60, cluster=None):
        deadline = time.monotonic() + timeout
        while True:
            svc = self.describe(name, cluster)
            if pred(svc):
                return svc
            if time.monotonic() > deadline:
                self.fail(f"service {name} never became {what}: deployments={svc.get('deployments')} "
                          f"taskSets={svc.get('taskSets')} running={svc.get('runningCount')} "
                          f"pending={svc.get('pendingCount')} desired={svc.get('desiredCount')} "
                          f"status={svc.get('status')} events={messages(svc)[:12]}\n{self.server.log_tail(3000)}")
            time.sleep(POLL)

    def wait_steady(self, name, desired=None, deployment=None, timeout=60, cluster=None):
        return self.wait_service(name, lambda s: is_steady(s, desired, deployment),
                                 f"steady (desired {desired}, deployment {deployment})", timeout, cluster)

    def tasks(self, name, desired_status="RUNNING", cluster=None, include_tags=False):
        cluster = cluster or self.CLUSTER
        return describe_tasks(self.ecs, cluster, list_service_tasks(self.ecs, cluster, name, desired_status),
                              include_tags)

    def cleanup_services(self):
        """Deletes what the test created (force) and waits until none of its tasks runs, so no
        container outlives the test; StopTask on whatever still runs after that."""
        if self.server is None or not self.server.alive():
            return
        clusters = set()
        for cluster, name in self.created:
            clusters.add(cluster)
            try:
                self.ecs.delete_service(cluster=cluster, service=name, force=True)
            except ClientError:
                pass
        self.created = []
        for cluster in clusters:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                arns = self.ecs.list_tasks(cluster=cluster)["taskArns"]
                arns += self.ecs.list_tasks(cluster=cluster, desiredStatus="STOPPED")["taskArns"]
                live = [t for t in (describe_tasks(self.ecs, cluster, arns) if arns else [])
                        if t["lastStatus"] != "STOPPED"]
                if not live:
                    break
                if time.monotonic() > deadline - 15:
                    for t in live:
                        self.ecs.stop_task(cluster=cluster, task=t["taskArn"])
                time.sleep(0.2)

    def rollout_with_sampler(self, name, desired, min_pct, max_pct, new_td, **update):
        """UpdateService to `new_td` while a sampler watches the bounds; returns (response service,
        final service, sampler)."""
        sampler_client = h.ecs_client(self.server.endpoint, self.key_id, self.secret)
        sampler = BoundsSampler(sampler_client, self.CLUSTER, name, desired, min_pct, max_pct)
        sampler.sample()  # the stable starting point is within bounds too
        sampler.start()
        try:
            resp = self.ecs.update_service(cluster=self.CLUSTER, service=name, taskDefinition=new_td, **update)["service"]
            new_id = resp["deployments"][0]["id"]
            final = self.wait_steady(name, desired, new_id, timeout=90)
            sampler.sample()  # and so is the end
        finally:
            sampler.finish()
        return resp, final, sampler

    def assert_bounds_held(self, sampler):
        self.assertEqual(sampler.errors, [], "the sampler's calls failed")
        self.assertEqual(sampler.violations[:5], [],
                         f"{len(sampler.violations)} of {len(sampler.samples)} samples broke the bounds "
                         f"[{sampler.low}, {sampler.high}]")


@unittest.skipIf(th.skip_reason() is not None, th.skip_reason() or "")
class ServiceCase(ServiceMixin, h.PaddockTestCase):
    """A server with the service image, cluster CLUSTER and the default VPC's first subnet; each test's
    services are deleted after it (cleanup_services)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        import_service_image(cls.state_dir, cls.tmp)
        ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                           aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)
        cls.subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        cls.ecs.create_cluster(clusterName=cls.CLUSTER)

    def setUp(self):
        self.created = []
        self.addCleanup(self.cleanup_services)


class Services(ServiceCase):

    CONFIG = SCHEDULER_CONFIG


    # ---- 1 -------------------------------------------------------------------------------------

    def test_1_scale_up_and_down_with_events_tags_and_task_identity(self):
        td = self.register("scale", 1)
        svc = self.create("scale", td, 0, propagateTags="SERVICE", enableECSManagedTags=True,
                          tags=[{"key": "team", "value": "blue"}])
        self.assertEqual(svc["serviceArn"], f"arn:aws:ecs:{h.REGION}:{self.account}:service/{self.CLUSTER}/scale")
        self.assertEqual(svc["status"], "ACTIVE")
        self.assertEqual(svc["desiredCount"], 0)
        self.assertEqual(svc["schedulingStrategy"], "REPLICA")
        self.assertEqual(svc["launchType"], "FARGATE")
        self.assertEqual(svc["propagateTags"], "SERVICE")
        self.assertTrue(svc["enableECSManagedTags"])
        self.assertEqual(svc["deploymentConfiguration"]["maximumPercent"], 200)
        self.assertEqual(svc["deploymentConfiguration"]["minimumHealthyPercent"], 100)
        self.assertEqual(len(svc["deployments"]), 1)
        dep = svc["deployments"][0]
        self.assertRegex(dep["id"], DEPLOYMENT_ID)
        self.assertEqual(dep["status"], "PRIMARY")
        self.assertEqual(dep["taskDefinition"], td)
        self.assertIn(self.describe("scale")["serviceArn"],
                      self.ecs.list_services(cluster=self.CLUSTER)["serviceArns"])
        self.wait_steady("scale", 0, dep["id"])

        # 0 -> 3
        up = self.ecs.update_service(cluster=self.CLUSTER, service="scale", desiredCount=3)["service"]
        self.assertEqual(up["desiredCount"], 3)
        self.assertEqual([d["id"] for d in up["deployments"]], [dep["id"]], "a desiredCount change is no deployment")
        svc = self.wait_steady("scale", 3, dep["id"])
        self.assertEqual(svc["runningCount"], 3)
        self.assertEqual(svc["deployments"][0]["runningCount"], 3)
        self.assertEqual(svc["deployments"][0]["pendingCount"], 0)
        self.assertEqual(svc["deployments"][0]["failedTasks"], 0)
        tasks = self.tasks("scale", include_tags=True)
        self.assertEqual(len(tasks), 3)
        for t in tasks:
            self.assertEqual(t["lastStatus"], "RUNNING")
            self.assertEqual(t["group"], "service:scale")
            self.assertEqual(t["startedBy"], dep["id"])
            self.assertEqual(t["taskDefinitionArn"], td)
            tags = {x["key"]: x["value"] for x in t.get("tags", [])}
            self.assertEqual(tags.get("team"), "blue", f"propagateTags SERVICE: {tags}")
            self.assertEqual(tags.get("aws:ecs:serviceName"), "scale", tags)
            self.assertEqual(tags.get("aws:ecs:clusterName"), self.CLUSTER, tags)
        # A task serves: these are real containers.
        self.assertEqual(th.fetch(f"http://{th.task_ip(tasks[0])}:8080/"), PAGE)
        msgs = messages(svc)
        started = index_of(msgs, rf"\(service scale\) has started 3 tasks: (\(task {TASK_ID}\) ){{2}}\(task {TASK_ID}\)\.")
        self.assertIsNotNone(started, msgs)
        self.assertEqual(set(re.findall(TASK_ID, msgs[started])), {task_id(t["taskArn"]) for t in tasks})
        steady_up = index_of(msgs, r"\(service scale\) has reached a steady state\.")
        self.assertIsNotNone(steady_up, msgs)
        self.assertLess(steady_up, started, "the steady state comes after the tasks started")

        # 3 -> 1
        self.ecs.update_service(cluster=self.CLUSTER, service="scale", desiredCount=1)
        svc = self.wait_service("scale", lambda s: is_steady(s, 1) and len(self.tasks("scale")) == 1, "scaled to 1")
        self.assertEqual(svc["deployments"][0]["id"], dep["id"])
        self.assertEqual(svc["deployments"][0]["rolloutState"], "COMPLETED")
        kept = self.tasks("scale")
        gone = [t for t in describe_tasks(self.ecs, self.CLUSTER, [t["taskArn"] for t in tasks])
                if t["taskArn"] != kept[0]["taskArn"]]
        self.assertEqual(len(gone), 2)
        deadline = time.monotonic() + 30
        while any(t["lastStatus"] != "STOPPED" for t in gone) and time.monotonic() < deadline:
            time.sleep(POLL)
            gone = describe_tasks(self.ecs, self.CLUSTER, [t["taskArn"] for t in gone])
        for t in gone:
            self.assertEqual(t["lastStatus"], "STOPPED")
            self.assertEqual(t["stopCode"], "ServiceSchedulerInitiated")
            self.assertEqual(t["stoppedReason"], f"Scaling activity initiated by (deployment {dep['id']})")
        svc = self.wait_service("scale", lambda s: index_of(messages(s), r"\(service scale\) has stopped .*") is not None,
                                "reporting the stop")
        msgs = messages(svc)
        stopped = index_of(msgs, rf"\(service scale\) has stopped 2 running tasks: \(task {TASK_ID}\) \(task {TASK_ID}\)\.")
        self.assertIsNotNone(stopped, msgs)
        self.assertEqual(set(re.findall(TASK_ID, msgs[stopped])), {task_id(t["taskArn"]) for t in gone})
        def steady_after_stop(s):
            steady = index_of(messages(s), r"\(service scale\) has reached a steady state\.")
            stop = index_of(messages(s), r"\(service scale\) has stopped 2 running tasks: .*")
            return steady is not None and stop is not None and steady < stop
        self.wait_service("scale", steady_after_stop, "steady again after the stop")
        # The service's own tags are described with include TAGS.
        tagged = self.describe("scale", include=["TAGS"])
        self.assertEqual(tagged.get("tags"), [{"key": "team", "value": "blue"}])

    # ---- 2 -------------------------------------------------------------------------------------

    def _rolling_update(self, name, min_pct, max_pct):
        td1 = self.register(name, 1)
        td2 = self.register(name, 2)
        cfg = {}
        if min_pct is not None:
            cfg = {"deploymentConfiguration": {"minimumHealthyPercent": min_pct, "maximumPercent": max_pct}}
        svc = self.create(name, td1, 4, **cfg)
        min_pct = 100 if min_pct is None else min_pct
        max_pct = 200 if max_pct is None else max_pct
        self.assertEqual(svc["deploymentConfiguration"]["minimumHealthyPercent"], min_pct)
        self.assertEqual(svc["deploymentConfiguration"]["maximumPercent"], max_pct)
        first = svc["deployments"][0]["id"]
        self.wait_steady(name, 4, first)
        old = {t["taskArn"] for t in self.tasks(name)}

        resp, final, sampler = self.rollout_with_sampler(name, 4, min_pct, max_pct, td2)
        # The UpdateService answer already lists the new PRIMARY next to the old ACTIVE one.
        self.assertEqual([(d["status"], d["taskDefinition"]) for d in resp["deployments"]],
                         [("PRIMARY", td2), ("ACTIVE", td1)], resp["deployments"])
        self.assertEqual(resp["deployments"][1]["id"], first)
        self.assertNotEqual(resp["deployments"][0]["id"], first)
        self.assertRegex(resp["deployments"][0]["id"], DEPLOYMENT_ID)
        self.assertEqual(resp["deployments"][0]["rolloutState"], "IN_PROGRESS")
        self.assertEqual(resp["deployments"][0]["rolloutStateReason"],
                         f"ECS deployment {resp['deployments'][0]['id']} in progress.")
        self.assertEqual(resp["taskDefinition"], td2)

        self.assert_bounds_held(sampler)
        self.assertGreater(len(sampler.mixed_samples()), 0,
                           f"the sampler never saw both revisions at once ({len(sampler.samples)} samples)")
        dep = final["deployments"][0]
        self.assertEqual((dep["status"], dep["rolloutState"], dep["taskDefinition"]), ("PRIMARY", "COMPLETED", td2))
        self.assertEqual(dep["rolloutStateReason"], f"ECS deployment {dep['id']} completed.")
        self.assertEqual(final["taskDefinition"], td2)
        now = self.tasks(name)
        self.assertEqual(len(now), 4)
        self.assertEqual({t["taskDefinitionArn"] for t in now}, {td2})
        self.assertEqual({t["startedBy"] for t in now}, {dep["id"]})
        self.assertFalse(old & {t["taskArn"] for t in now})
        print(f"\n{name}: {len(sampler.samples)} samples, {len(sampler.mixed_samples())} mid-rollout, "
              f"healthy min {min(s[1] for s in sampler.samples)} (bound {sampler.low}), "
              f"live max {max(s[2] for s in sampler.samples)} (bound {sampler.high})", file=sys.stderr)

    def test_2a_rolling_update_within_50_150(self):
        self._rolling_update("roll-50-150", 50, 150)

    def test_2b_rolling_update_within_the_default_100_200(self):
        self._rolling_update("roll-100-200", None, None)

    # ---- 3 -------------------------------------------------------------------------------------

    def test_3a_circuit_breaker_fails_the_deployment_and_rolls_back(self):
        good = self.register("cb", 1)
        svc = self.create("cb", good, 2, deploymentConfiguration={
            "minimumHealthyPercent": 0, "maximumPercent": 100,
            "deploymentCircuitBreaker": {"enable": True, "rollback": True}})
        self.assertEqual(svc["deploymentConfiguration"]["deploymentCircuitBreaker"], {"enable": True, "rollback": True})
        d1 = svc["deployments"][0]["id"]
        self.wait_steady("cb", 2, d1)
        bad = self.register("cb", 2, command=["/bin/no-such-command"])
        resp = self.ecs.update_service(cluster=self.CLUSTER, service="cb", taskDefinition=bad)["service"]
        d2 = resp["deployments"][0]["id"]
        self.assertNotEqual(d2, d1)
        self.assertEqual(resp["deployments"][0]["taskDefinition"], bad)

        # min 0 / max 100: the old tasks go first, so the rollback must launch d1's tasks again and
        # its IN_PROGRESS phase lasts long enough to be seen.
        failed_seen, rollback_seen = None, None
        deadline = time.monotonic() + 90
        while True:
            svc = self.describe("cb")
            for d in svc["deployments"]:
                if d["id"] == d2 and d.get("rolloutState") == "FAILED" and failed_seen is None:
                    failed_seen = (d, svc["deployments"])
                if (d["id"] == d1 and d["status"] == "PRIMARY" and d.get("rolloutState") == "IN_PROGRESS"
                        and rollback_seen is None):
                    rollback_seen = (d, svc["deployments"])
            if is_steady(svc, 2, d1):
                break
            if time.monotonic() > deadline:
                self.fail(f"no rollback to {d1}: {svc['deployments']} {messages(svc)[:10]}\n{self.server.log_tail()}")
            time.sleep(0.02)

        self.assertIsNotNone(rollback_seen, "d1 was never PRIMARY IN_PROGRESS again (the rollback)")
        self.assertEqual(rollback_seen[0]["rolloutStateReason"],
                         f"ECS deployment circuit breaker: rolling back to deploymentId {d1}.")
        self.assertEqual(rollback_seen[0]["taskDefinition"], good)
        if failed_seen is not None:  # while the failed deployment is still listed, it is ACTIVE and FAILED
            d = failed_seen[0]
            self.assertEqual(d["status"], "ACTIVE", failed_seen[1])
            self.assertEqual(d["rolloutStateReason"], "ECS deployment circuit breaker: tasks failed to start.")
            self.assertGreaterEqual(d["failedTasks"], 3)
        final = svc["deployments"][0]
        self.assertEqual((final["id"], final["status"], final["rolloutState"], final["taskDefinition"]),
                         (d1, "PRIMARY", "COMPLETED", good))
        self.assertEqual(svc["taskDefinition"], good)

        msgs = messages(svc)
        failed = index_of(msgs, rf"\(service cb\) \(deployment {d2}\) deployment failed: tasks failed to start\.")
        rolling = index_of(msgs, rf"\(service cb\) rolling back to deployment {d1}\.")
        completed = index_of(msgs, rf"\(service cb\) \(deployment {d1}\) deployment completed\.")
        self.assertIsNotNone(failed, msgs)
        self.assertIsNotNone(rolling, msgs)
        self.assertIsNotNone(completed, msgs)
        self.assertTrue(completed < rolling < failed, f"newest first: completed, rolling back, failed: {msgs}")

        # At least the threshold (3) of d2's tasks failed to start; they never ran.
        # (A d2 task still starting when the rollback began is stopped by the scheduler instead.)
        stopped = [t for t in self.tasks("cb", "STOPPED") if t["startedBy"] == d2]
        failed_starts = [t for t in stopped if t["stopCode"] == "TaskFailedToStart"]
        self.assertGreaterEqual(len(failed_starts), 3, [(t["stopCode"], t.get("stoppedReason")) for t in stopped])
        for t in stopped:
            self.assertIn(t["stopCode"], ("TaskFailedToStart", "ServiceSchedulerInitiated"), t.get("stoppedReason"))
            self.assertNotIn("startedAt", t)
        running = self.tasks("cb")
        self.assertEqual(len(running), 2)
        self.assertEqual({(t["taskDefinitionArn"], t["startedBy"]) for t in running}, {(good, d1)})

    def test_3b_circuit_breaker_without_rollback_stops_launching(self):
        good = self.register("cbx", 1)
        svc = self.create("cbx", good, 2, deploymentConfiguration={
            "deploymentCircuitBreaker": {"enable": True, "rollback": False}})
        d1 = svc["deployments"][0]["id"]
        self.wait_steady("cbx", 2, d1)
        old = {t["taskArn"] for t in self.tasks("cbx")}
        bad = self.register("cbx", 2, command=["/bin/no-such-command"])
        d2 = self.ecs.update_service(cluster=self.CLUSTER, service="cbx", taskDefinition=bad)["service"]["deployments"][0]["id"]
        svc = self.wait_service("cbx", lambda s: s["deployments"][0].get("rolloutState") == "FAILED", "FAILED", 60)
        seen_failed_at = time.time()

        def d2_tasks():
            # RUNNING first: a task moves only from the RUNNING list to the STOPPED one, so every
            # task that exists when this starts is in one of the two.
            return {t["taskArn"]: t for t in self.tasks("cbx") + self.tasks("cbx", "STOPPED") if t["startedBy"] == d2}
        before = d2_tasks()
        dep = svc["deployments"][0]
        self.assertEqual((dep["id"], dep["status"]), (d2, "PRIMARY"))
        self.assertEqual(dep["rolloutStateReason"], "ECS deployment circuit breaker: tasks failed to start.")
        self.assertGreaterEqual(dep["failedTasks"], 3)
        # The old deployment keeps its tasks (minimumHealthyPercent 100).
        self.assertEqual([(d["id"], d["status"]) for d in svc["deployments"][1:]], [(d1, "ACTIVE")])
        self.assertEqual({t["taskArn"] for t in self.tasks("cbx") if t["startedBy"] == d1}, old)
        self.assertIsNotNone(index_of(messages(svc), rf"\(service cbx\) \(deployment {d2}\) deployment failed: tasks failed to start\."))
        self.assertIsNone(index_of(messages(svc), r"\(service cbx\) rolling back to deployment .*"))
        # A FAILED deployment launches nothing more: wait out more than the backoff cap (4 s).
        time.sleep(6)
        after = d2_tasks()
        late = [(task_id(a), t["createdAt"].timestamp() - seen_failed_at) for a, t in after.items() if a not in before]
        self.assertEqual(late, [], "tasks launched by the FAILED deployment after it was seen FAILED "
                                   "(id, createdAt - the time FAILED was seen)")
        # A good revision deploys again.
        d3 = self.ecs.update_service(cluster=self.CLUSTER, service="cbx", taskDefinition=good)["service"]["deployments"][0]["id"]
        self.wait_steady("cbx", 2, d3)

    # ---- 4 -------------------------------------------------------------------------------------

    def test_4_force_new_deployment_replaces_every_task(self):
        td = self.register("force", 1)
        svc = self.create("force", td, 2)
        d1 = svc["deployments"][0]["id"]
        self.wait_steady("force", 2, d1)
        before = [t["taskArn"] for t in self.tasks("force")]
        resp = self.ecs.update_service(cluster=self.CLUSTER, service="force", forceNewDeployment=True)["service"]
        self.assertEqual(len(resp["deployments"]), 2, resp["deployments"])
        d2 = resp["deployments"][0]["id"]
        self.assertNotEqual(d2, d1)
        self.assertEqual([(d["id"], d["status"], d["taskDefinition"]) for d in resp["deployments"]],
                         [(d2, "PRIMARY", td), (d1, "ACTIVE", td)])
        svc = self.wait_steady("force", 2, d2)
        after = self.tasks("force")
        self.assertEqual(len(after), 2)
        self.assertFalse(set(before) & {t["taskArn"] for t in after})
        self.assertEqual({(t["startedBy"], t["taskDefinitionArn"]) for t in after}, {(d2, td)})
        deadline = time.monotonic() + 30
        while True:
            old = describe_tasks(self.ecs, self.CLUSTER, before)
            if all(t["lastStatus"] == "STOPPED" for t in old) or time.monotonic() > deadline:
                break
            time.sleep(POLL)
        for t in old:
            self.assertEqual(t["lastStatus"], "STOPPED")
            self.assertEqual(t["stopCode"], "ServiceSchedulerInitiated")
            self.assertTrue(t["stoppedReason"].startswith("Scaling activity initiated by (deployment ecs-svc/"),
                            t["stoppedReason"])
        svc = self.wait_service("force", lambda s: index_of(
            messages(s), rf"\(service force\) \(deployment {d2}\) deployment completed\.") is not None,
            "reporting the completed deployment")

    # ---- 5 -------------------------------------------------------------------------------------

    def test_5_delete_service_drains_goes_inactive_and_frees_the_name(self):
        td = self.register("del", 1, command=SLOW_STOP, stop_timeout=2)
        svc = self.create("del", td, 2)
        arn = svc["serviceArn"]
        self.wait_steady("del", 2)
        tasks = [t["taskArn"] for t in self.tasks("del")]

        self.assertClientError("InvalidParameterException", self.ecs.delete_service, cluster=self.CLUSTER,
                               service="del", message="The service cannot be stopped while it is scaled above 0.")
        svc = self.describe("del")
        self.assertEqual((svc["status"], svc["desiredCount"]), ("ACTIVE", 2), "a refused delete changes nothing")
        self.assertIn(arn, self.ecs.list_services(cluster=self.CLUSTER)["serviceArns"])

        gone = self.ecs.delete_service(cluster=self.CLUSTER, service="del", force=True)["service"]
        self.assertEqual((gone["serviceArn"], gone["status"], gone["desiredCount"]), (arn, "DRAINING", 0))
        # DRAINING and INACTIVE services are no longer listed.
        self.assertNotIn(arn, self.ecs.list_services(cluster=self.CLUSTER)["serviceArns"])
        self.assertClientError("ServiceNotActiveException", self.ecs.update_service, cluster=self.CLUSTER,
                               service="del", desiredCount=1, message="Service was not ACTIVE.")

        svc = self.wait_service("del", lambda s: s["status"] == "INACTIVE", "INACTIVE", 60)
        self.assertEqual(svc["serviceArn"], arn)
        for t in describe_tasks(self.ecs, self.CLUSTER, tasks):
            self.assertIn(t["lastStatus"], ("DEACTIVATING", "STOPPING", "DEPROVISIONING", "STOPPED"))
            self.assertEqual(t["desiredStatus"], "STOPPED")
        deadline = time.monotonic() + 30
        while not all(t["lastStatus"] == "STOPPED" for t in describe_tasks(self.ecs, self.CLUSTER, tasks)):
            self.assertLess(time.monotonic(), deadline, "the deleted service's tasks never stopped")
            time.sleep(POLL)
        for t in describe_tasks(self.ecs, self.CLUSTER, tasks):
            self.assertEqual(t["stopCode"], "ServiceSchedulerInitiated")
        # Still describable, INACTIVE; deleting again returns it; not listed.
        again = self.ecs.delete_service(cluster=self.CLUSTER, service="del", force=True)["service"]
        self.assertEqual((again["serviceArn"], again["status"]), (arn, "INACTIVE"))
        self.assertEqual(self.describe("del")["status"], "INACTIVE")
        self.assertNotIn(arn, self.ecs.list_services(cluster=self.CLUSTER)["serviceArns"])

        # The name is free again: a new service, same ARN, a new deployment.
        fresh = self.create("del", td, 1)
        self.assertEqual((fresh["serviceArn"], fresh["status"], fresh["desiredCount"]), (arn, "ACTIVE", 1))
        self.assertNotIn(fresh["deployments"][0]["id"], {d["id"] for d in gone["deployments"]})
        self.assertIn(arn, self.ecs.list_services(cluster=self.CLUSTER)["serviceArns"])
        self.wait_steady("del", 1)

    # ---- 7 -------------------------------------------------------------------------------------

    def test_7_external_task_sets_run_side_by_side(self):
        tda = self.register("ext", 1)
        tdb = self.register("ext", 2)
        svc = self.create("ext", None, 2, deploymentController={"type": "EXTERNAL"}, launchType=None)
        self.assertEqual(svc["deploymentController"], {"type": "EXTERNAL"})
        self.assertEqual(svc.get("deployments", []), [])

        def create_set(td, pct):
            return self.ecs.create_task_set(cluster=self.CLUSTER, service="ext", taskDefinition=td, launchType="FARGATE",
                                            networkConfiguration=self.net(),
                                            scale={"value": pct, "unit": "PERCENT"})["taskSet"]
        a = create_set(tda, 100.0)
        b = create_set(tdb, 50.0)
        for ts, want in ((a, 2), (b, 1)):  # 2 x 50 % = 1; rounded up in general
            self.assertRegex(ts["id"], DEPLOYMENT_ID)
            self.assertEqual(ts["taskSetArn"],
                             f"arn:aws:ecs:{h.REGION}:{self.account}:task-set/{self.CLUSTER}/ext/{ts['id']}")
            self.assertEqual(ts["computedDesiredCount"], want)
            self.assertIn(ts["status"], ("PRIMARY", "ACTIVE"))

        def sets():
            r = self.ecs.describe_task_sets(cluster=self.CLUSTER, service="ext")
            return {ts["id"]: ts for ts in r["taskSets"]}

        def wait_sets(want, what):
            deadline = time.monotonic() + 60
            while True:
                now = sets()
                if {k: (v["runningCount"], v["pendingCount"]) for k, v in now.items()} == {k: (n, 0) for k, n in want.items()} \
                        and all(v["stabilityStatus"] == "STEADY_STATE" for v in now.values()):
                    return now
                if time.monotonic() > deadline:
                    self.fail(f"task sets never became {what}: {now}\n{self.server.log_tail()}")
                time.sleep(POLL)

        wait_sets({a["id"]: 2, b["id"]: 1}, "2 + 1")
        tasks = self.tasks("ext")
        self.assertEqual(sorted((t["startedBy"], t["taskDefinitionArn"]) for t in tasks),
                         sorted([(a["id"], tda), (a["id"], tda), (b["id"], tdb)]))
        self.assertEqual({t["group"] for t in tasks}, {"service:ext"})
        svc = self.describe("ext")
        self.assertEqual({ts["id"] for ts in svc["taskSets"]}, {a["id"], b["id"]})
        self.assertEqual(svc["runningCount"], 3)

        p = self.ecs.update_service_primary_task_set(cluster=self.CLUSTER, service="ext",
                                                     primaryTaskSet=b["taskSetArn"])["taskSet"]
        self.assertEqual((p["id"], p["status"]), (b["id"], "PRIMARY"))
        now = sets()
        self.assertEqual((now[a["id"]]["status"], now[b["id"]]["status"]), ("ACTIVE", "PRIMARY"))

        u = self.ecs.update_task_set(cluster=self.CLUSTER, service="ext", taskSet=b["id"],
                                     scale={"value": 100.0, "unit": "PERCENT"})["taskSet"]
        self.assertEqual(u["computedDesiredCount"], 2)
        u = self.ecs.update_task_set(cluster=self.CLUSTER, service="ext", taskSet=a["id"],
                                     scale={"value": 0.0, "unit": "PERCENT"})["taskSet"]
        self.assertEqual(u["computedDesiredCount"], 0)
        wait_sets({a["id"]: 0, b["id"]: 2}, "0 + 2")
        self.assertEqual(sorted(t["startedBy"] for t in self.tasks("ext")), [b["id"], b["id"]])

        # B still runs tasks: deleting it needs force; nothing changes without.
        with self.assertRaises(ClientError) as cm:
            self.ecs.delete_task_set(cluster=self.CLUSTER, service="ext", taskSet=b["id"])
        self.assertIn(cm.exception.response["Error"]["Code"], ("InvalidParameterException", "ClientException"))
        self.assertEqual(sets()[b["id"]]["status"], "PRIMARY")
        d = self.ecs.delete_task_set(cluster=self.CLUSTER, service="ext", taskSet=a["id"])["taskSet"]
        self.assertEqual((d["id"], d["status"]), (a["id"], "DRAINING"))
        self.wait_service("ext", lambda s: {ts["id"] for ts in s.get("taskSets", [])} == {b["id"]}, "without set A")
        self.assertEqual(len(self.tasks("ext")), 2)

    # ---- 8 -------------------------------------------------------------------------------------

    def test_8_failed_starts_back_off_as_configured(self):
        # No circuit breaker: tasks that never reach RUNNING are retried with a growing delay —
        # here [scheduler] backoff_base_seconds = 1 doubling to backoff_cap_seconds = 4 (AWS: about
        # 10 s up to 15 minutes) — and the service says it cannot start tasks consistently.
        bad = self.register("backoff", 1, command=["/bin/no-such-command"])
        self.create("backoff", bad, 1)
        deadline = time.monotonic() + 25
        while True:
            failed = sorted((t for t in self.tasks("backoff", "STOPPED") if t["lastStatus"] == "STOPPED"),
                            key=lambda t: t["createdAt"])
            if len(failed) >= 5 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        created = [t["createdAt"].timestamp() for t in failed]
        gaps = [round(b - a, 2) for a, b in zip(created, created[1:])]
        self.assertGreaterEqual(len(failed), 5, f"launch times {created} (gaps {gaps}): the configured backoff "
                                                f"(1 s doubling to 4 s) allows 5 attempts in ~12 s")
        for t in failed:
            self.assertEqual(t["stopCode"], "TaskFailedToStart")
            self.assertNotIn("startedAt", t)
        self.assertTrue(all(g >= 0.9 for g in gaps), f"each retry waits at least the base delay: {gaps}")
        self.assertTrue(all(g <= 6 for g in gaps), f"no retry waits much more than the cap: {gaps}")
        self.assertGreater(gaps[2], gaps[0], f"the delay grows: {gaps}")
        svc = self.describe("backoff")
        self.assertIsNotNone(index_of(messages(svc), r"\(service backoff\) is unable to consistently start tasks successfully\."),
                             messages(svc))
        self.assertEqual(svc["deployments"][0]["rolloutState"], "IN_PROGRESS", "no breaker: it keeps trying")

    # ---- the end -------------------------------------------------------------------------------

    def test_9_nothing_is_left_running(self):
        # Runs last: every earlier test cleaned up after itself.
        live = [t for t in describe_tasks(self.ecs, self.CLUSTER,
                                          self.ecs.list_tasks(cluster=self.CLUSTER)["taskArns"])
                if t["lastStatus"] != "STOPPED"]
        self.assertEqual(live, [])
        self.assertServerAlive()


@unittest.skipIf(th.skip_reason() is not None, th.skip_reason() or "")
class DaemonServices(ServiceMixin, h.PaddockTestCase):
    """Two in-process EC2 container instances in one cluster."""

    CLUSTER = "daemon"
    ACCOUNT_ID = "210000000002"  # the instances' owner (a plain `paddock server` has no bootstrap account)
    CONFIG = SCHEDULER_CONFIG + ("[[ec2_instance]]\ncluster = \"daemon\"\naccount = \"210000000002\"\ncpu = 2048\n"
                                 "memory = 1024\n"
                                 "[[ec2_instance]]\ncluster = \"daemon\"\naccount = \"210000000002\"\ncpu = 2048\n"
                                 "memory = 1024\n")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        import_service_image(cls.state_dir, cls.tmp)
        cls.subnet = None
        cls.ecs.create_cluster(clusterName=cls.CLUSTER)

    def setUp(self):
        self.created = []
        self.addCleanup(self.cleanup_services)

    def instances(self, timeout=20):
        deadline = time.monotonic() + timeout
        while True:
            arns = self.ecs.list_container_instances(cluster=self.CLUSTER)["containerInstanceArns"]
            if len(arns) == 2:
                cis = self.ecs.describe_container_instances(cluster=self.CLUSTER, containerInstances=arns)
                if all(ci["agentConnected"] for ci in cis["containerInstances"]):
                    return sorted(arns)
            if time.monotonic() > deadline:
                self.fail(f"instances not connected: {arns} {self.server.log_tail()}")
            time.sleep(0.1)

    def by_instance(self, name):
        out = collections.defaultdict(list)
        for t in self.tasks(name):
            if t["lastStatus"] == "RUNNING":
                out[t["containerInstanceArn"]].append(t["taskArn"])
        return dict(out)

    def test_daemon_one_task_per_instance_and_draining(self):
        a, b = self.instances()
        td = self.register("daemon", 1, compat="EC2", network_mode="none", cpu="128", memory="64")
        svc = self.create("d", td, None, schedulingStrategy="DAEMON", launchType="EC2")
        self.assertEqual(svc["schedulingStrategy"], "DAEMON")
        self.assertEqual(svc["deploymentConfiguration"]["maximumPercent"], 100)
        self.assertEqual(svc["deploymentConfiguration"]["minimumHealthyPercent"], 0)
        self.wait_service("d", lambda s: is_steady(s, 2) and len(self.by_instance("d")) == 2, "one task on each instance")
        placed = self.by_instance("d")
        self.assertEqual(sorted(placed), [a, b])
        self.assertEqual([len(v) for v in placed.values()], [1, 1])
        for t in self.tasks("d"):
            self.assertEqual((t["group"], t["launchType"]), ("service:d", "EC2"))

        # A REPLICA service spread over both instances.
        self.create("r", td, 2, launchType="EC2", placementStrategy=[{"type": "spread", "field": "instanceId"}])
        self.wait_service("r", lambda s: is_steady(s, 2) and len(self.by_instance("r")) == 2, "spread over both")
        on_a = self.by_instance("r")[a]
        daemon_on_a = placed[a]

        # Draining a: its daemon task stops; the replica task on it is replaced on b.
        r = self.ecs.update_container_instances_state(cluster=self.CLUSTER, containerInstances=[a], status="DRAINING")
        self.assertEqual(r["failures"], [])
        self.wait_service("d", lambda s: is_steady(s, 1) and list(self.by_instance("d")) == [b], "on b only")
        self.wait_service("r", lambda s: is_steady(s, 2) and list(self.by_instance("r")) == [b] and
                          len(self.by_instance("r")[b]) == 2, "moved to b")
        deadline = time.monotonic() + 30
        while True:
            old = describe_tasks(self.ecs, self.CLUSTER, daemon_on_a + on_a)
            if all(t["lastStatus"] == "STOPPED" for t in old):
                break
            self.assertLess(time.monotonic(), deadline, f"tasks on the DRAINING instance still run: {old}")
            time.sleep(POLL)

        # Back to ACTIVE: the daemon runs there again.
        self.ecs.update_container_instances_state(cluster=self.CLUSTER, containerInstances=[a], status="ACTIVE")
        self.wait_service("d", lambda s: is_steady(s, 2) and sorted(self.by_instance("d")) == [a, b], "on both again")

    def test_the_task_definitions_own_constraints_choose_the_instances(self):
        """The revision's memberOf constraint (the service has none) admits one of the two instances:
        it alone gets the daemon task, and desiredCount counts it alone (issue 20)."""
        a, b = self.instances()
        self.ecs.put_attributes(cluster=self.CLUSTER, attributes=[{"name": "role", "value": "edge", "targetId": a}])
        self.addCleanup(self.ecs.delete_attributes, cluster=self.CLUSTER,
                        attributes=[{"name": "role", "targetId": a}])
        td = self.register("daemon-edge", 1, compat="EC2", network_mode="none", cpu="128", memory="64",
                           placementConstraints=[{"type": "memberOf", "expression": "attribute:role == edge"}])
        self.create("e", td, None, schedulingStrategy="DAEMON", launchType="EC2")
        self.wait_service("e", lambda s: is_steady(s, 1) and list(self.by_instance("e")) == [a], "on a only")
        self.assertEqual([t["containerInstanceArn"] for t in self.tasks("e")], [a])


@unittest.skipIf(th.skip_reason() is not None, th.skip_reason() or "")
class ServiceCrash(ServiceMixin, unittest.TestCase):
    """kill -9 of the server in the middle of a rolling update; the restarted server (same state
    directory) finishes it, and the bounds hold before and after."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="paddock-svc-crash-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.state = os.path.join(self.tmp, "state")
        os.makedirs(self.state)
        self.account, self.key_id, self.secret = h.create_account(self.state)
        import_service_image(self.state, self.tmp)
        self.config = os.path.join(self.tmp, "paddock.toml")
        with open(self.config, "w") as f:
            f.write(SCHEDULER_CONFIG)
        self.server = None
        self.created = []
        self.addCleanup(self._stop_server)
        self.addCleanup(self.cleanup_services)  # runs first

    def _stop_server(self):
        if self.server is not None:
            self.server.stop()

    def start(self):
        self.server = h.Server(self.state, ("--config", self.config)).start()
        self.ecs = h.ecs_client(self.server.endpoint, self.key_id, self.secret)
        ec2 = boto3.client("ec2", endpoint_url=self.server.endpoint, region_name=h.REGION,
                           aws_access_key_id=self.key_id, aws_secret_access_key=self.secret)
        self.subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]

    def test_kill_9_mid_rollout_then_the_rollout_completes(self):
        self.start()
        self.ecs.create_cluster(clusterName=self.CLUSTER)
        # Old tasks ignore SIGTERM and stop at their 3 s stopTimeout: the rollout takes seconds.
        td1 = self.register("crash", 1, command=SLOW_STOP, stop_timeout=3)
        td2 = self.register("crash", 2)
        svc = self.create("crash", td1, 4, deploymentConfiguration={"minimumHealthyPercent": 50, "maximumPercent": 150})
        self.wait_steady("crash", 4, svc["deployments"][0]["id"])

        before = BoundsSampler(h.ecs_client(self.server.endpoint, self.key_id, self.secret),
                               self.CLUSTER, "crash", 4, 50, 150)
        before.sample()
        before.start()
        d2 = self.ecs.update_service(cluster=self.CLUSTER, service="crash", taskDefinition=td2)["service"]["deployments"][0]["id"]
        # Kill once both revisions run side by side and some task is on its way up or down.
        deadline = time.monotonic() + 30
        while not any(td2 in s[3] and len(s[3]) > 1 and s[1] < s[2] for s in before.samples[-3:]):
            self.assertLess(time.monotonic(), deadline, "the rollout never got under way")
            time.sleep(0.01)
        at_kill = self.describe("crash")
        self.server.kill()
        killed = time.monotonic()
        before.finish()
        self.assertFalse(is_steady(at_kill, 4, d2), "the rollout had already finished: nothing was cut")

        self.start()
        after = BoundsSampler(h.ecs_client(self.server.endpoint, self.key_id, self.secret),
                              self.CLUSTER, "crash", 4, 50, 150)
        after.sample()
        after.start()
        try:
            final = self.wait_steady("crash", 4, d2, timeout=90)
            after.sample()
        finally:
            after.finish()
        # Calls cut by the kill are not bound violations; every completed sample counts.
        self.assertEqual(before.violations[:5], [], "bounds broken before the kill")
        self.assert_bounds_held(after)
        self.assertEqual(final["deployments"][0]["rolloutState"], "COMPLETED")
        tasks = self.tasks("crash")
        self.assertEqual(len(tasks), 4)
        self.assertEqual({(t["taskDefinitionArn"], t["startedBy"], t["lastStatus"]) for t in tasks}, {(td2, d2, "RUNNING")})
        print(f"\ncrash: {len(before.samples)} samples before the kill, {len(after.samples)} after; "
              f"COMPLETED {time.monotonic() - killed:.1f} s after the kill", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
