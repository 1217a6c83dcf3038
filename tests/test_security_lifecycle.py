"""Issue 9, "State and lifecycle": a task is STOPPED only when its containers are gone, and nothing of
a deleted account keeps running (docs/security.md; findings 8 and 9 of the 2026-12 security review).

- Finding 8: an account's own key cannot report its EC2 task STOPPED (the agent protocol's
  ReportTaskState, ECS's SubmitTaskStateChange): only the instance's agent identity is accepted,
  and the task, its container and its address stay.
- The agent reconciles: a task marked STOPPED behind its agent's back (here straight in the store)
  has its container removed within a bound, and its address goes back to the pool only after that.
- Finding 9: `paddock admin delete-account` returns once the account's containers, networks and
  addresses are gone, and only then are its records; without a server it refuses (unless --force,
  after which the restarted server's agents remove the leftovers).
Needs root, crun and busybox-static.
"""

import json
import os
import sqlite3
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402
import task_harness as th  # noqa: E402

PAGE = "lifecycle\n"
AGENT_TARGET = "PaddockAgentV20261130"
BOUND = 15  # seconds within which an agent removes what must not run


def skip_reason():
    return th.skip_reason()


def crun_containers(state_dir, task_id):
    """The crun containers of the server at `state_dir` whose id names `task_id`: {id: pid}."""
    r = subprocess.run(["crun", "--root", os.path.join(state_dir, "containers", "crun"), "list", "--format", "json"],
                       capture_output=True, timeout=10)
    if r.returncode != 0 or not r.stdout.strip():
        return {}
    return {c["id"]: c.get("pid", 0) for c in json.loads(r.stdout) if task_id in c["id"]}


def namespaces(task_id):
    try:
        return [n for n in os.listdir("/var/run/netns") if n.endswith(task_id)]
    except FileNotFoundError:
        return []


def alive(pid):
    """Whether `pid` still runs (a zombie waiting for whoever adopted it to reap it does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def wait_until(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


class LifecycleCase(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        th.httpd_image(cls.state_dir, cls.tmp, "busybox:lifecycle", PAGE)
        cls.ec2 = cls.ec2_client(cls.key_id, cls.secret)
        cls.subnet = cls.ec2.describe_subnets()["Subnets"][0]["SubnetId"]

    @classmethod
    def ec2_client(cls, key, secret):
        return boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                            aws_access_key_id=key, aws_secret_access_key=secret)

    def available(self, ec2=None, subnet=None):
        return (ec2 or self.ec2).describe_subnets(SubnetIds=[subnet or self.subnet])["Subnets"][0][
            "AvailableIpAddressCount"]

    def raw(self, key, secret, target, payload):
        """One raw SigV4-signed JSON call, as the finding's reproduction sends it: (status, body)."""
        body = json.dumps(payload).encode()
        host = f"127.0.0.1:{self.server.port}"
        headers = h.RawSigner(key, secret).headers(host, body, target=target)
        status, _, data = h.raw_request(self.server.port, "POST", "/", body, headers)
        return status, json.loads(data or b"{}")


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class TaskStoppedOnlyWhenItsContainersAreGone(LifecycleCase):
    """Finding 8 and the agent's reconcile, on the server's in-process EC2 instance."""

    ACCOUNT_ID = "210000000091"  # the instance's owner (a plain `paddock server` has no bootstrap account)
    CONFIG = '[[ec2_instance]]\ncluster = "lc-ec2"\naccount = "210000000091"\ncpu = 1024\nmemory = 600\n'

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ecs.create_cluster(clusterName="lc-ec2")
        deadline = time.monotonic() + 20
        while True:
            arns = cls.ecs.list_container_instances(cluster="lc-ec2")["containerInstanceArns"]
            if arns:
                cls.instance = arns[0]
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"no in-process instance registered: {cls.server.log_tail()}")
            time.sleep(0.2)
        cls.td = cls.ecs.register_task_definition(
            family="lc-web", networkMode="awsvpc", requiresCompatibilities=["EC2"], cpu="256", memory="128",
            containerDefinitions=[{"name": "web", "image": "busybox:lifecycle", "essential": True, "stopTimeout": 2}],
        )["taskDefinition"]["taskDefinitionArn"]

    def run_web(self):
        r = self.ecs.run_task(cluster="lc-ec2", taskDefinition=self.td, launchType="EC2",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        task = th.wait_for_status(self, self.ecs, "lc-ec2", arn, "RUNNING", 30, self.server.log_tail)
        self.addCleanup(self.stop, arn)
        return arn, arn.rsplit("/", 1)[1], th.task_ip(task)

    def stop(self, arn):
        """Stops the task and waits until its agent has torn it down (the server stops after the
        class: nothing may be left running)."""
        self.ecs.stop_task(cluster="lc-ec2", task=arn)
        wait_until(lambda: self.ecs.describe_tasks(cluster="lc-ec2", tasks=[arn])["tasks"][0]["lastStatus"] == "STOPPED",
                   30, f"{arn} to stop")

    def test_an_accounts_own_key_cannot_report_its_ec2_task_stopped(self):
        arn, task_id, ip = self.run_web()
        before = self.available()
        status, body = self.raw(self.key_id, self.secret, f"{AGENT_TARGET}.ReportTaskState",
                                {"cluster": "lc-ec2", "containerInstance": self.instance, "task": arn,
                                 "status": "STOPPED", "reason": "faked by tenant key"})
        self.assertEqual((status, body.get("__type")), (400, "AccessDeniedException"), body)
        status, body = self.raw(self.key_id, self.secret, f"{h.TARGET_PREFIX}.SubmitTaskStateChange",
                                {"cluster": "lc-ec2", "task": arn, "status": "STOPPED", "reason": "faked"})
        self.assertEqual((status, body.get("__type")), (400, "AccessDeniedException"), body)
        # Nor may the key poll the instance's assignments or take it over by re-registering it.
        status, body = self.raw(self.key_id, self.secret, f"{AGENT_TARGET}.PollAssignments",
                                {"cluster": "lc-ec2", "containerInstance": self.instance})
        self.assertEqual((status, body.get("__type")), (400, "AccessDeniedException"), body)
        with self.assertRaises(ClientError) as cm:
            self.ecs.register_container_instance(cluster="lc-ec2", containerInstanceArn=self.instance)
        self.assertEqual(cm.exception.response["Error"]["Code"], "AccessDeniedException")

        task = self.ecs.describe_tasks(cluster="lc-ec2", tasks=[arn])["tasks"][0]
        self.assertEqual((task["lastStatus"], task["desiredStatus"]), ("RUNNING", "RUNNING"))
        self.assertEqual(th.fetch(f"http://{ip}:8080/"), PAGE)
        self.assertTrue(crun_containers(self.state_dir, task_id))
        self.assertEqual(self.available(), before)  # the address is still the task's

    def test_a_task_marked_stopped_behind_the_agents_back_is_torn_down_before_its_address_goes(self):
        arn, task_id, ip = self.run_web()
        held = self.available()
        containers = crun_containers(self.state_dir, task_id)
        self.assertTrue(containers)
        # The forgery no API allows any more: the stored record says STOPPED, nothing else changes.
        db = sqlite3.connect(os.path.join(self.state_dir, "paddock.db"), timeout=10)
        try:
            rows = [(k, v) for k, v in db.execute("SELECT k, v FROM t_tasks") if task_id.encode() in bytes(k)]
            self.assertEqual(len(rows), 1)
            record = json.loads(bytes(rows[0][1]))
            record["lastStatus"] = "STOPPED"
            db.execute("UPDATE t_tasks SET v = ? WHERE k = ?", (json.dumps(record).encode(), rows[0][0]))
            db.commit()
        finally:
            db.close()
        # The agent removes the container within the bound; the address never goes back before.
        forged = time.monotonic()
        deadline = forged + BOUND
        while True:
            released = self.available() > held
            running = bool(crun_containers(self.state_dir, task_id))
            self.assertFalse(released and running, "the address went back while the container still ran")
            if released and not running:
                print(f"\nrecord forged STOPPED -> container gone and address released: "
                      f"{time.monotonic() - forged:.1f} s", file=sys.stderr)
                break
            if time.monotonic() > deadline:
                self.fail(f"not torn down within {BOUND} s (running={running}, released={released}): "
                          f"{self.server.log_tail()}")
            time.sleep(0.1)
        self.assertFalse(any(alive(pid) for pid in containers.values() if pid))
        self.assertEqual(namespaces(task_id), [])
        self.assertEqual(self.ecs.describe_tasks(cluster="lc-ec2", tasks=[arn])["tasks"][0]["lastStatus"], "STOPPED")


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class DeleteAccountStopsEverything(LifecycleCase):
    """Finding 9: `paddock admin delete-account` leaves nothing of the account running."""

    def doomed_account(self, name, acct=None):
        """An account running a task and a service's task; returns (account, its subnet, the
        addresses available in it before, task ids, container pids)."""
        acct, key, secret = h.create_account(self.state_dir, acct, name)
        ecs = h.ecs_client(self.server.endpoint, key, secret)
        ec2 = self.ec2_client(key, secret)
        subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        before = self.available(ec2, subnet)
        ecs.create_cluster(clusterName="doomed")
        td = ecs.register_task_definition(
            family="doomed", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "web", "image": "busybox:lifecycle", "essential": True, "stopTimeout": 2}],
        )["taskDefinition"]["taskDefinitionArn"]
        net = {"awsvpcConfiguration": {"subnets": [subnet]}}
        arn = ecs.run_task(cluster="doomed", taskDefinition=td, launchType="FARGATE",
                           networkConfiguration=net)["tasks"][0]["taskArn"]
        # A service too: nothing may replace what the deletion stops.
        ecs.create_service(cluster="doomed", serviceName="svc", taskDefinition=td, desiredCount=1,
                           launchType="FARGATE", networkConfiguration=net)
        th.wait_for_status(self, ecs, "doomed", arn, "RUNNING", 30, self.server.log_tail)
        deadline = time.monotonic() + 30
        while True:  # the service's task runs too
            arns = ecs.list_tasks(cluster="doomed")["taskArns"]
            tasks = ecs.describe_tasks(cluster="doomed", tasks=arns)["tasks"] if arns else []
            if len(tasks) == 2 and all(t["lastStatus"] == "RUNNING" for t in tasks):
                break
            if time.monotonic() > deadline:
                self.fail(f"the service's task did not start: {tasks}")
            time.sleep(0.1)
        ids = [t["taskArn"].rsplit("/", 1)[1] for t in tasks]
        pids = [pid for i in ids for pid in crun_containers(self.state_dir, i).values() if pid]
        self.assertEqual(len(pids), 2)
        self.assertTrue(all(namespaces(i) for i in ids))
        self.assertEqual(self.available(ec2, subnet), before - 2)
        return acct, subnet, before, ids, pids

    def available_after(self, acct, subnet):
        """The addresses available in the deleted account's subnet, seen by the account made again."""
        _, key, secret = h.create_account(self.state_dir, acct, "reborn")
        return self.available(self.ec2_client(key, secret), subnet)

    def assert_nothing_runs(self, ids, pids):
        for i in ids:
            self.assertEqual(crun_containers(self.state_dir, i), {}, f"task {i}'s containers remain")
            self.assertEqual(namespaces(i), [], f"task {i}'s network namespace remains")
        self.assertEqual([p for p in pids if alive(p)], [], "a process of the account's tasks remains")

    def test_delete_account_stops_its_tasks_then_removes_its_records(self):
        acct, subnet, before, ids, pids = self.doomed_account("doomed")
        started = time.monotonic()
        rc, out, err = h.admin(self.state_dir, "delete-account", "--account", acct, check=False)
        print(f"\ndelete-account with 2 running tasks: {time.monotonic() - started:.1f} s", file=sys.stderr)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, [{"deleted": acct}])
        # When it returns, nothing of the account runs, and then its records are gone.
        self.assert_nothing_runs(ids, pids)
        self.assertNotIn(acct, [a["account"] for a in h.admin(self.state_dir, "list-accounts")])
        # Nothing comes back (the service was deleted before its task was stopped); the addresses
        # are free again.
        time.sleep(1)
        self.assert_nothing_runs(ids, pids)
        self.assertEqual(self.available_after(acct, subnet), before)

    def test_without_a_server_it_refuses_and_force_leaves_the_leftovers_to_the_agents(self):
        acct, subnet, before, ids, pids = self.doomed_account("doomed-offline")
        self.server.stop()  # its containers keep running, as after any server stop
        try:
            self.assertTrue(all(alive(p) for p in pids))
            rc, _, err = h.admin(self.state_dir, "delete-account", "--account", acct, "--timeout", "5", check=False)
            self.assertNotEqual(rc, 0)
            self.assertIn("no Paddock server is running", err)
            self.assertIn("--force", err)
            accounts = {a["account"]: a for a in h.admin(self.state_dir, "list-accounts")}
            self.assertTrue(accounts[acct].get("deleting"), accounts)  # keys gone, records kept
            rc, out, err = h.admin(self.state_dir, "delete-account", "--account", acct, "--force", check=False)
            self.assertEqual(rc, 0, err)
            self.assertEqual(out, [{"deleted": acct}])
        finally:
            self.server.start()
            type(self).ecs = h.ecs_client(self.server.endpoint, self.key_id, self.secret)
            type(self).ec2 = self.ec2_client(self.key_id, self.secret)
        # The restarted server's agent finds them assigned to no one and removes them.
        wait_until(lambda: not any(crun_containers(self.state_dir, i) for i in ids), BOUND, "the leftovers' removal")
        wait_until(lambda: not any(namespaces(i) for i in ids), BOUND, "the leftovers' namespaces' removal")
        self.assert_nothing_runs(ids, pids)
        self.assertEqual(self.available_after(acct, subnet), before)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class RemoteAgentOfADeletedAccount(LifecycleCase):
    """`paddock agent` signs with its instance's own credential (kept 0600 in its state directory);
    when its account is deleted the agent stops the account's containers — while it runs, or when
    it comes back after a forced deletion — and exits."""

    def start_doomed_agent(self, name):
        from test_remote_agent import AgentProcess
        acct, key, secret = h.create_account(self.state_dir, None, name)
        ecs = h.ecs_client(self.server.endpoint, key, secret)
        ecs.create_cluster(clusterName="remote")
        creds = os.path.join(self.tmp, f"{name}-credentials")
        with open(creds, "w") as f:
            f.write(f"[agent]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\n")
        agent_dir = os.path.join(self.tmp, f"{name}-agent")
        os.makedirs(agent_dir)
        th.httpd_image(agent_dir, agent_dir + "-work", "busybox:remote-lc", PAGE)
        args = ["--endpoint", self.server.endpoint, "--cluster", "remote", "--state-dir", agent_dir,
                "--credentials", creds, "--profile", "agent"]
        agent = AgentProcess(args, os.path.join(self.tmp, f"{name}-agent.log")).start()
        self.addCleanup(agent.stop)
        td = ecs.register_task_definition(
            family="remote-lc", networkMode="awsvpc", requiresCompatibilities=["EC2"], cpu="256", memory="128",
            containerDefinitions=[{"name": "web", "image": "busybox:remote-lc", "essential": True, "stopTimeout": 2}],
        )["taskDefinition"]["taskDefinitionArn"]
        subnet = self.ec2_client(key, secret).describe_subnets()["Subnets"][0]["SubnetId"]
        arn = ecs.run_task(cluster="remote", taskDefinition=td, launchType="EC2",
                           networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet]}})["tasks"][0]["taskArn"]
        th.wait_for_status(self, ecs, "remote", arn, "RUNNING", 30, agent.log_tail)
        task_id = arn.rsplit("/", 1)[1]
        pids = [p for p in crun_containers(agent_dir, task_id).values() if p]
        self.assertEqual(len(pids), 1)
        return acct, key, agent, agent_dir, args, task_id, pids

    def test_the_agent_signs_with_its_own_credential_and_stops_a_deleted_accounts_containers(self):
        acct, key, agent, agent_dir, _, task_id, pids = self.start_doomed_agent("doomed-remote")
        identity = os.path.join(agent_dir, "instance.json")
        self.assertEqual(os.stat(identity).st_mode & 0o777, 0o600)
        with open(identity) as f:
            stored = json.load(f)
        self.assertEqual(stored["containerInstanceArn"], agent.arn)
        self.assertTrue(stored["credentials"]["accessKeyId"].startswith("ASIA"))
        self.assertNotEqual(stored["credentials"]["accessKeyId"], key)

        rc, out, err = h.admin(self.state_dir, "delete-account", "--account", acct, check=False)
        self.assertEqual(rc, 0, err)
        self.assertEqual(crun_containers(agent_dir, task_id), {})
        self.assertEqual(namespaces(task_id), [])
        self.assertFalse(any(alive(p) for p in pids))
        # Its instance is gone with the account, so is its credential: the agent exits.
        self.assertEqual(agent.proc.wait(BOUND + 10), 1, agent.log_tail())

    def test_an_agent_that_was_down_removes_the_containers_of_its_force_deleted_account(self):
        from test_remote_agent import AgentProcess
        acct, _, agent, agent_dir, args, task_id, pids = self.start_doomed_agent("doomed-remote-down")
        agent.kill()  # its containers keep running
        rc, _, err = h.admin(self.state_dir, "delete-account", "--account", acct, "--timeout", "2", check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("not confirmed stopped by their agents", err)
        rc, _, err = h.admin(self.state_dir, "delete-account", "--account", acct, "--timeout", "2", "--force",
                             check=False)
        self.assertEqual(rc, 0, err)
        self.assertTrue(all(alive(p) for p in pids))
        # Back, it is no longer recognised, cannot register anew (the key is gone too), removes what
        # it still runs and exits.
        again = subprocess.run([h.paddock_bin(), "agent", *args], capture_output=True, timeout=BOUND + 30)
        self.assertNotEqual(again.returncode, 0)
        self.assertIn(b"stopping what it still runs", again.stderr)
        self.assertEqual(crun_containers(agent_dir, task_id), {})
        self.assertEqual(namespaces(task_id), [])
        self.assertFalse(any(alive(p) for p in pids))


if __name__ == "__main__":
    unittest.main()
