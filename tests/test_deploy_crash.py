"""The deploy controller survives `kill -9` after each of its writes, and two replicas on one store
have one writer (issue 15, "Crash safety"; ADR-0005 D1/D3/D4/D7/D13).

Each crash test runs a standalone `paddock controller` against `paddock server` through a proxy
(`deploy_harness.KillingProxy`) that SIGKILLs the controller at one call: after Paddock did the
call and answered (the controller never learns it happened), or before the call reaches Paddock.
A second controller on the same state directory then takes over at once (the dead holder's lease
is taken, not waited out) and must converge: the deployment Healthy with its task running, exactly
one ECS service per container of each live deployment, at most one task-definition revision more
than a run without the crash registers, and then no write for two ticks (no re-roll loop). The
crash points: PutParameter, RegisterTaskDefinition and CreateService answered; a roll's
UpdateService answered and its TagResource not sent; a retirement's UpdateService (to 0) and
DeleteService answered — after which the old service and its secret must be gone.

Two replicas: both on one state directory, each through its own proxy; only the lease holder calls
AWS at all; killed, the other leads at once and deploys the next revision.

Needs root, crun, nft, iptables and busybox-static."""

import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploy_harness as dh  # noqa: E402
import paddock_harness as h  # noqa: E402
import task_harness as th  # noqa: E402


def skip_reason():
    return th.skip_reason(tools=("crun", "nft", "iptables"))


IMAGE = "busybox:crash"
SPEC = """\
[project]
name = "{project}"

[containers.web]
image = "{image}"
port = 8080

[deploy]
replicas = 1
"""
SECRET = "crash-safe-secret"
# What the tasks' execution role needs on an endpoint that evaluates it: their secret, their logs.
ROLE_POLICY = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": ["ssm:GetParameters", "logs:CreateLogGroup", "logs:CreateLogStream",
                                   "logs:PutLogEvents"], "Resource": "*"}]}


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class ControllerCrash(unittest.TestCase):
    """One `paddock server` for the class; every test deploys its own project."""

    @classmethod
    def setUpClass(cls):
        state_dir = dh.prepare_class(cls, "paddock-deploy-crash-")
        cls.addClassCleanup(h.stop_leftover_tasks)
        _, key_id, secret = h.create_account(state_dir, name="main")
        th.httpd_image(state_dir, cls.tmp, IMAGE, "crash\n")
        cls.server = h.Server(state_dir, env=cls.env).start()
        cls.addClassCleanup(cls.server.stop)
        cls.backend = dh.Backend("paddock", cls.server.endpoint, (key_id, secret), cls.server.log_tail,
                                 role_policy=ROLE_POLICY)
        cls.ecs = cls.backend.ecs
        cls.ssm = h.client("ssm", cls.server.endpoint, key_id, secret)
        cls.runs = 0

    def setUp(self):
        type(self).runs += 1
        self.work = os.path.join(self.tmp, f"run-{self.runs}")
        self.state = os.path.join(self.work, "state")
        self.proxy = dh.KillingProxy(self.server.endpoint)
        self.addCleanup(self.proxy.stop)
        self.project = f"crash{self.runs}"
        self.lives = 0

    def controller(self, extra=(), proxy=None):
        """A controller life on this test's state directory, through the proxy. Each test's
        controllers are a class of their own: another test's (separate store) would see this
        test's services as orphans of its class and collect them."""
        self.lives += 1
        return dh.Controller(self, self.backend, os.path.join(self.work, f"life-{self.lives}"),
                             extra=("--class", self.project, *extra), endpoint=(proxy or self.proxy).endpoint,
                             state_dir=self.state)

    def spec(self):
        return SPEC.format(project=self.project, image=IMAGE)

    def crash(self, ctl, action, when, nth=1):
        """Arms the proxy to SIGKILL `ctl` at `action` and waits until it did."""
        self.proxy.arm(action, when, pid_of=lambda: ctl.proc.pid, nth=nth)
        ctl.wait_until(f"the kill at {action} ({when})", lambda: ctl.proc.poll() is not None, timeout=60)
        self.assertTrue(self.proxy.killed.is_set(), ctl.context())
        self.assertEqual(ctl.proc.returncode, -signal.SIGKILL, ctl.context())

    def services(self):
        prefix = f"paddock_{self.project}_"
        names = [a.rsplit("/", 1)[1] for a in self.ecs.list_services(cluster="default")["serviceArns"]]
        return sorted(n for n in names if n.startswith(prefix))

    def revisions(self):
        family = f"paddock_{self.project}_default_web"
        return sum(len(self.ecs.list_task_definitions(familyPrefix=family, status=status)["taskDefinitionArns"])
                   for status in ("ACTIVE", "INACTIVE"))

    def secrets(self, deployment):
        path = f"/paddock/{self.project}/{self.project}/default/{deployment}"
        return [p["Name"] for p in self.ssm.get_parameters_by_path(Path=path, Recursive=True)["Parameters"]]

    def assertQuiet(self, ctl, ticks=2):
        """After one more tick (a new life's first may still mend a cache, such as a tag), no write
        for `ticks` ticks (each tick's snapshot starts with ListServices)."""
        mark = self.proxy.mark()
        ctl.wait_until("a tick", lambda: any(a == "ListServices" for a, _ in self.proxy.calls_since(mark)), timeout=30)
        mark = self.proxy.mark()
        ctl.wait_until(f"{ticks} more ticks",
                       lambda: sum(a == "ListServices" for a, _ in self.proxy.calls_since(mark)) > ticks, timeout=30)
        wrote = [a for a, _ in self.proxy.calls_since(mark) if a in dh.WRITES]
        self.assertEqual(wrote, [], f"a converged controller kept writing: {ctl.context()}")

    def assertRunning(self, deployment, ctl):
        service = f"paddock_{self.project}_default_{deployment}_web"
        described = self.ecs.describe_services(cluster="default", services=[service])["services"]
        self.assertEqual([(s["status"], s["runningCount"]) for s in described], [("ACTIVE", 1)], ctl.context())

    def deploy_through_a_crash(self, action, when, with_secret=False, nth=1):
        """A first deploy with the controller killed at `action`; a second life converges."""
        first = self.controller()
        if with_secret:
            first.paddock("env", "set", "--secret", "--project", self.project, "DB_PASSWORD", SECRET)
        self.proxy.arm(action, when, pid_of=lambda: first.proc.pid, nth=nth)
        d1 = first.deploy(self.spec())
        first.wait_until(f"the kill at {action}", lambda: first.proc.poll() is not None)
        self.assertEqual(first.proc.returncode, -signal.SIGKILL, first.context())
        second = self.controller()
        second.ids = [d1]
        second.wait_state(d1, "Healthy")
        self.assertEqual(self.services(), [f"paddock_{self.project}_default_{d1}_web"], second.context())
        self.assertRunning(d1, second)
        self.assertLessEqual(self.revisions(), 2, "at most one extra revision")
        self.assertQuiet(second)
        return d1, second

    def test_a_crash_after_put_parameter_converges(self):
        d1, ctl = self.deploy_through_a_crash("PutParameter", "answered", with_secret=True)
        self.assertEqual(self.secrets(d1), [f"/paddock/{self.project}/{self.project}/default/{d1}/DB_PASSWORD"])

    def test_a_crash_after_register_task_definition_converges(self):
        self.deploy_through_a_crash("RegisterTaskDefinition", "answered")

    def test_a_crash_after_create_service_makes_no_second_service(self):
        self.deploy_through_a_crash("CreateService", "answered")
        self.assertEqual(self.revisions(), 1, "the created service's revision is the one kept")

    def test_a_crash_in_a_roll_before_tag_resource_rolls_once(self):
        """A changed rendering (the controller restarted with awslogs) rolls the running service:
        killed after its UpdateService and before the hash tag, the next life does not roll again."""
        first = self.controller(extra=("--log-group", ""))
        d1 = first.deploy(self.spec())
        first.wait_state(d1, "Healthy")
        first.stop()
        mark = self.proxy.mark()
        second = self.controller(extra=("--log-group", f"/crash/{self.project}"))
        second.ids = [d1]
        self.crash(second, "TagResource", "sent")
        self.assertEqual([a for a, s in self.proxy.calls_since(mark) if a in dh.WRITES],
                         ["RegisterTaskDefinition", "UpdateService", "TagResource"], second.context())
        third = self.controller(extra=("--log-group", f"/crash/{self.project}"))
        third.ids = [d1]
        third.wait_state(d1, "Healthy")
        self.assertQuiet(third)
        service = self.ecs.describe_services(cluster="default",
                                             services=[f"paddock_{self.project}_default_{d1}_web"])["services"][0]
        task_definition = self.ecs.describe_task_definition(taskDefinition=service["taskDefinition"])["taskDefinition"]
        self.assertEqual(task_definition["containerDefinitions"][0]["logConfiguration"]["options"]["awslogs-group"],
                         f"/crash/{self.project}", "the service runs the rolled revision")
        self.assertLessEqual(self.revisions(), 3)

    def redeploy_through_a_crash(self, action, when, nth=1):
        """D1 Healthy (with a secret), then D2; the controller is killed at `action` of D1's
        retirement; the next life retires D1 completely: its service and its secret gone."""
        first = self.controller()
        first.paddock("env", "set", "--secret", "--project", self.project, "DB_PASSWORD", SECRET)
        d1 = first.deploy(self.spec())
        first.wait_state(d1, "Healthy")
        self.proxy.arm(action, when, pid_of=lambda: first.proc.pid, nth=nth)
        d2 = first.deploy(self.spec())
        first.wait_until(f"the kill at {action}", lambda: first.proc.poll() is not None)
        self.assertEqual(first.proc.returncode, -signal.SIGKILL, first.context())
        second = self.controller()
        second.ids = [d1, d2]
        second.wait_state(d2, "Healthy")
        second.wait_until("D1's retirement", lambda: second.show(d1)["retired"])
        self.assertEqual(second.show(d1)["state"], "Superseded")
        self.assertEqual(self.services(), [f"paddock_{self.project}_default_{d2}_web"], second.context())
        self.assertEqual(self.secrets(d1), [], "the retired deployment's secret is deleted")
        self.assertEqual(len(self.secrets(d2)), 1)
        self.assertRunning(d2, second)
        self.assertQuiet(second)

    def test_a_crash_after_retirements_scale_to_zero_still_retires(self):
        self.redeploy_through_a_crash("UpdateService", "answered")

    def test_a_crash_after_retirements_delete_service_still_deletes_the_secret(self):
        self.redeploy_through_a_crash("DeleteService", "answered")

    def test_two_replicas_have_one_writer_and_the_survivor_takes_over(self):
        other = dh.KillingProxy(self.server.endpoint)
        self.addCleanup(other.stop)
        a = self.controller()
        b = self.controller(proxy=other)
        # Each has made its startup preflight's reads; from here on only the leader calls AWS.
        marks = {a: self.proxy.mark(), b: other.mark()}
        d1 = a.deploy(self.spec())
        a.wait_state(d1, "Healthy")
        b.ids = [d1]
        # Whichever took the lease first does everything; the other calls nothing at all.
        leader, follower = (a, b) if self.proxy.mark() > marks[a] else (b, a)
        idle = other if leader is a else self.proxy
        self.assertEqual(idle.calls_since(marks[follower]), [], "the follower called AWS")
        os.kill(leader.proc.pid, signal.SIGKILL)
        leader.proc.wait(10)
        follower.ids = [d1]
        d2 = follower.deploy(self.spec())
        follower.wait_state(d2, "Healthy")
        follower.wait_until("D1's retirement", lambda: follower.show(d1)["retired"])
        self.assertEqual(self.services(), [f"paddock_{self.project}_default_{d2}_web"], follower.context())
        self.assertIn("CreateService", [a for a, _ in idle.calls_since(marks[follower])])


if __name__ == "__main__":
    unittest.main()
