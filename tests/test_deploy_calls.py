"""The deploy controller's AWS calls agree, call for call, on Paddock and on moto's server (issue 15).

The same `paddock controller` runs the same sequence twice — once against `paddock server`, once
against moto (`python -m moto.server`, the ECS/SSM API with nothing behind it) — each with
`--call-log`, at a 1 s interval and a 1 s drain, without an edge (readiness is RUNNING tasks). The
two logs, with each run's deployment ids named D1, D2 in the order they were made, must hold the
same writes in the same order (and the writes this test expects), the same set of reads, and the
same success of each. A secret's value is in neither.

- deploy, then stop (the controller's retirement: UpdateService to 0, DeleteService after the
  drain), with one replica: on Paddock its task really runs (the deployment becomes Healthy); moto
  runs none, so there it stays Deploying and the one read only Paddock makes is DescribeTasks (of
  the tasks ListTasks named). Needs root, crun, nft, iptables and busybox-static.
- deploy, redeploy, stop with zero replicas and a secret: ready on both (0 of 0 tasks), so the
  redeploy supersedes and retires the first deployment on both — SSM's PutParameter,
  GetParametersByPath and DeleteParameters included. No task runs: needs only moto and boto3.

What moto does not do as ECS does, and how this test meets it: an awsvpcConfiguration without
securityGroups makes CreateService fail with HTTP 500 (a KeyError in moto), so both controllers are
given the default VPC's default security group; moto needs the cluster made first (both get it from
boto3); a deleted service stays in moto's ListServices (as INACTIVE: the controller skips it). moto
also takes a task definition with secrets and no execution role, which ECS (and Paddock) refuse, so
both controllers are given a role made with IAM's CreateRole."""

import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploy_harness as dh  # noqa: E402
import paddock_harness as h  # noqa: E402
import task_harness as th  # noqa: E402
import boto3  # noqa: E402  (after the harness, which skips the module on a python3 without current clients)


def moto_missing():
    try:
        import moto  # noqa: F401
    except ImportError:
        return f"{sys.executable} has no moto (its server is the other endpoint)"
    return None


def tasks_skip_reason():
    return th.skip_reason(tools=("crun", "nft", "iptables"))


IMAGE = "busybox:calls"
SPEC = """\
[project]
name = "shop"

[containers.web]
image = "{image}"
port = 8080

[deploy]
replicas = {replicas}

[routes]
"/" = "web"
"""

SECRET = "hunter2-never-logged"
class Moto:
    """One `python -m moto.server` on 127.0.0.1:0 (its port read from its first lines)."""

    def __init__(self, work_dir):
        self.log_path = os.path.join(work_dir, "moto.log")
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", "0"],
                                     stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + 30
        while True:
            m = re.search(r"Running on http://127\.0\.0\.1:(\d+)", self.log_tail())
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"moto did not start: {self.log_tail()}")
            time.sleep(0.05)
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def log_tail(self, n=4000):
        return h.log_tail(self.log_path, n)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def canonical(call):
    return (call["service"], call["action"], call["ok"], json.dumps(call["key"], sort_keys=True))


def writes(calls):
    return [canonical(c) for c in calls if c["action"] in dh.WRITES]


def reads(calls):
    return {canonical(c) for c in calls if c["action"] not in dh.WRITES}


@unittest.skipIf(moto_missing() is not None, moto_missing() or "")
class DeployCallsAgree(unittest.TestCase):
    """One `paddock server` and one moto server for the class; each test runs its sequence on both."""

    @classmethod
    def setUpClass(cls):
        cls.state_dir = dh.prepare_class(cls, "paddock-deploy-calls-")
        cls.addClassCleanup(h.stop_leftover_tasks)
        _, key_id, secret = h.create_account(cls.state_dir, name="main")
        if tasks_skip_reason() is None:
            th.httpd_image(cls.state_dir, cls.tmp, IMAGE, "calls\n")
        cls.server = h.Server(cls.state_dir, env=cls.env).start()
        cls.addClassCleanup(cls.server.stop)
        cls.paddock = dh.Backend("paddock", cls.server.endpoint, (key_id, secret), cls.server.log_tail)
        cls.moto = Moto(cls.tmp)
        cls.addClassCleanup(cls.moto.stop)
        # moto's clients are not the strict ones: its answers are not what this test is about.
        moto_ecs = boto3.client("ecs", endpoint_url=cls.moto.endpoint, region_name=h.REGION,
                                aws_access_key_id="testing", aws_secret_access_key="testing")
        cls.moto_backend = dh.Backend("moto", cls.moto.endpoint, ("testing", "testing"), cls.moto.log_tail, ecs=moto_ecs)
        cls.runs = 0

    def run_on_both(self, sequence, extra=()):
        logs = {}
        for backend in (self.paddock, self.moto_backend):
            type(self).runs += 1
            run = dh.Controller(self, backend, os.path.join(self.tmp, f"run-{self.runs}-{backend.name}"), extra)
            sequence(run)
            run.stop()
            logs[backend.name] = run.calls()
            with open(run.call_log) as f:
                self.assertNotIn(SECRET, f.read())
        return logs["paddock"], logs["moto"]

    def assertAgree(self, paddock, moto, expected_writes, only_paddock_reads=()):
        shown = ("\n--- paddock's calls:\n" + "\n".join(json.dumps(c) for c in paddock) +
                 "\n--- moto's calls:\n" + "\n".join(json.dumps(c) for c in moto))
        self.assertEqual(writes(paddock), writes(moto), "the writes differ" + shown)
        self.assertEqual(writes(paddock), [canonical(dict(c, ok=True)) for c in expected_writes],
                         "the writes are not the sequence's" + shown)
        self.assertEqual({r for r in reads(paddock) if r[1] not in only_paddock_reads}, reads(moto),
                         "the reads differ" + shown)
        for action in only_paddock_reads:
            self.assertIn(action, {r[1] for r in reads(paddock)}, shown)

    @unittest.skipIf(tasks_skip_reason() is not None, tasks_skip_reason() or "")
    def test_deploy_then_stop_makes_the_same_calls(self):
        def sequence(run):
            d1 = run.deploy(SPEC.format(image=IMAGE, replicas=1))
            # A tick after the create: the service is in the snapshot and its tasks were read.
            def read_after_create():
                actions = [c["action"] for c in run.calls()]
                return "CreateService" in actions and "ListTasks" in actions[actions.index("CreateService"):]
            run.wait_until("a tick that read the new service's tasks", read_after_create)
            if run.backend.name == "paddock":
                run.wait_state(d1, "Healthy")  # its task runs
            else:
                self.assertEqual(run.show(d1)["state"], "Deploying")  # moto runs no task
            run.paddock("deployments", "stop", d1)
            run.wait_until("the stopped deployment's retirement", lambda: run.show(d1)["retired"])

        paddock, moto = self.run_on_both(sequence, extra=("--log-group", ""))
        service = {"cluster": "default", "service": "paddock_shop_default_D1_web"}
        self.assertAgree(paddock, moto, [
            {"service": "ecs", "action": "RegisterTaskDefinition", "key": {"family": "paddock_shop_default_web"}},
            {"service": "ecs", "action": "CreateService",
             "key": {"cluster": "default", "serviceName": "paddock_shop_default_D1_web", "desiredCount": 1,
                     "taskDefinition": "paddock_shop_default_web"}},
            {"service": "ecs", "action": "UpdateService", "key": dict(service, desiredCount=0)},
            {"service": "ecs", "action": "DeleteService", "key": service},
        ], only_paddock_reads=("DescribeTasks",))

    def test_deploy_redeploy_and_stop_with_a_secret_make_the_same_calls(self):
        def sequence(run):
            run.paddock("env", "set", "--secret", "--project", "shop", "DB_PASSWORD", SECRET)
            d1 = run.deploy(SPEC.format(image=IMAGE, replicas=0))
            run.wait_state(d1, "Healthy")
            d2 = run.deploy(SPEC.format(image=IMAGE, replicas=0))
            run.wait_state(d2, "Healthy")
            run.wait_until("the first deployment's retirement", lambda: run.show(d1)["retired"])
            self.assertEqual(run.show(d1)["state"], "Superseded")
            run.paddock("deployments", "stop", d2)
            run.wait_until("the redeploy's retirement", lambda: run.show(d2)["retired"])

        paddock, moto = self.run_on_both(sequence)
        expected = []
        for d in ("D1", "D2"):
            expected += [
                {"service": "ssm", "action": "PutParameter",
                 "key": {"Name": f"/paddock/default/shop/default/{d}/DB_PASSWORD"}},
                {"service": "ecs", "action": "RegisterTaskDefinition", "key": {"family": "paddock_shop_default_web"}},
                {"service": "ecs", "action": "CreateService",
                 "key": {"cluster": "default", "serviceName": f"paddock_shop_default_{d}_web", "desiredCount": 0,
                         "taskDefinition": "paddock_shop_default_web"}},
            ]
        for d in ("D1", "D2"):
            expected += [
                {"service": "ecs", "action": "DeleteService",
                 "key": {"cluster": "default", "service": f"paddock_shop_default_{d}_web"}},
                {"service": "ssm", "action": "DeleteParameters",
                 "key": {"Names": [f"/paddock/default/shop/default/{d}/DB_PASSWORD"]}},
            ]
        self.assertAgree(paddock, moto, expected)


if __name__ == "__main__":
    unittest.main()
