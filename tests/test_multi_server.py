"""Several `paddock server` replicas on one PostgreSQL database (issue 16 §2): each server's Fargate
agent runs only the tasks placed on it (a task runs once, whichever replica took RunTask and
whichever is asked to stop it); a change committed through one replica wakes the agents and the
scheduler of the others at once (LISTEN/NOTIFY), so a task placed through replica A starts at once
on a `paddock agent` long-polling replica B; killing the scheduler lease's holder hands the lease
over within its time to live, and the other replica's scheduler keeps services at their count; a
client that switches replicas reads its writes. Needs root, crun, busybox-static and PostgreSQL.
SharedRateLimits (PostgreSQL only): with `--api-rate-limits aws`, two replicas together admit one
account's budget, not one each.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402  (after the harness, which skips without botocore)
import pg_harness  # noqa: E402
import task_harness as th  # noqa: E402
from test_console_api import MODEL as CONSOLE_MODEL, console_client, read_events  # noqa: E402
from test_host_loss import crun_running  # noqa: E402
from test_remote_agent import AgentProcess, write_agent_credentials  # noqa: E402
from test_security_lifecycle import namespaces, wait_until  # noqa: E402

PAGE = "hello from one of several replicas\n"
LEASE_SECONDS = 3
AGENT_TIMEOUT = 6
CONFIG = f"agent_timeout_seconds = {AGENT_TIMEOUT}\n[scheduler]\nlease_seconds = {LEASE_SECONDS}\nresync_seconds = 30\n"


def pg_skip_reason():
    try:
        pg_harness._bindir()
    except RuntimeError as e:
        return str(e)
    return None


def skip_reason():
    return th.skip_reason() or pg_skip_reason()


def shared_database(cls, name):
    """The class's database `name` on the tests' shared PostgreSQL, and a temp dir of its own."""
    cls.pg = pg_harness.shared()
    cls.url = cls.pg.database(name)
    cls.tmp = tempfile.mkdtemp(prefix="paddock-test-")
    cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)


def admin(state_dir, url, *args):
    r = subprocess.run([h.paddock_bin(), "admin", "--state-dir", state_dir, "--store", url, *args],
                       capture_output=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError(f"paddock admin {args}: {r.stdout!r} {r.stderr!r}")
    return json.loads(r.stdout)


def stop_every_task(ecs, cluster, timeout=60):
    """A class's clean-up: its services deleted, its tasks stopped, and every task asked to stop (a
    deleted service's too) waited for until its agent has it STOPPED (at most `timeout`)."""
    for svc in ecs.list_services(cluster=cluster)["serviceArns"]:
        ecs.delete_service(cluster=cluster, service=svc, force=True)
    for arn in ecs.list_tasks(cluster=cluster)["taskArns"]:
        ecs.stop_task(cluster=cluster, task=arn, reason="test cleanup")
    arns = ecs.list_tasks(cluster=cluster, desiredStatus="STOPPED")["taskArns"]
    deadline = time.monotonic() + timeout
    while arns and time.monotonic() < deadline:
        tasks = []
        for i in range(0, len(arns), 100):
            tasks += ecs.describe_tasks(cluster=cluster, tasks=arns[i:i + 100])["tasks"]
        if all(t["lastStatus"] == "STOPPED" for t in tasks):
            return
        time.sleep(0.2)


def containers_of(state_dir, task_id):
    """The crun containers of task `task_id` the server on `state_dir` runs (its agent's runtime)."""
    root = os.path.join(state_dir, "containers", "crun")
    if not os.path.isdir(root):
        return []
    r = subprocess.run(["crun", "--root", root, "list", "-q"], capture_output=True, text=True, timeout=30)
    return [c for c in r.stdout.split() if f"-{task_id}-" in c]


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class MultiServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shared_database(cls, "multi")
        cls.config = os.path.join(cls.tmp, "paddock.toml")
        with open(cls.config, "w") as f:
            f.write(CONFIG)
        cls.dirs = {name: os.path.join(cls.tmp, name) for name in ("a", "b")}
        for d in cls.dirs.values():
            os.makedirs(d)
            os.makedirs(d + "-work")
            # Images are the node's own (its state directory), so each replica gets the image.
            th.httpd_image(d, d + "-work", "busybox:multi", PAGE)
        admin_out = admin(cls.dirs["a"], cls.url, "create-account", "--name", "main")
        cls.account = admin_out["account"]
        key = admin(cls.dirs["a"], cls.url, "create-access-key", "--account", cls.account)
        cls.key_id, cls.secret = key["accessKeyId"], key["secretAccessKey"]
        cls.servers = {}
        cls.addClassCleanup(cls.stop_everything)
        for name in ("a", "b"):
            cls.start_server(name)
        cls.ecs = {name: h.ecs_client(s.endpoint, cls.key_id, cls.secret) for name, s in cls.servers.items()}
        ec2 = h.client("ec2", cls.servers["a"].endpoint, cls.key_id, cls.secret)
        cls.subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        cls.ecs["a"].create_cluster(clusterName="multi")
        cls.td = cls.ecs["a"].register_task_definition(
            family="multi-web", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "web", "image": "busybox:multi", "essential": True, "stopTimeout": 2}],
        )["taskDefinition"]["taskDefinitionArn"]

    @classmethod
    def start_server(cls, name):
        if name != "a":
            h.share_node_key(cls.dirs["a"], cls.dirs[name])
        server = h.Server(cls.dirs[name], ["--store", cls.url, "--config", cls.config])
        server.start()
        cls.servers[name] = server
        if hasattr(cls, "ecs"):
            cls.ecs[name] = h.ecs_client(server.endpoint, cls.key_id, cls.secret)
        return server

    @classmethod
    def stop_everything(cls):
        # Every replica back (a killed one re-adopts its tasks), every task stopped through the API,
        # then the replicas: nothing is left running on the host.
        try:
            for name in ("a", "b"):
                if name not in cls.servers or not cls.servers[name].alive():
                    cls.start_server(name)
            ecs = cls.ecs["a"]
            for cluster in ecs.list_clusters()["clusterArns"]:
                stop_every_task(ecs, cluster)
        finally:
            for server in cls.servers.values():
                server.stop()

    def setUp(self):
        # A replica an earlier test killed comes back on its state directory (re-adopting its tasks).
        for name in ("a", "b"):
            if not self.servers[name].alive():
                self.start_server(name)

    def context(self):
        return "".join(f"\nserver {n}: {s.log_tail(1500)}" for n, s in self.servers.items())

    def run_fargate(self, via, **extra):
        r = self.ecs[via].run_task(cluster="multi", taskDefinition=self.td, launchType="FARGATE",
                                   networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}}, **extra)
        self.assertEqual(r["failures"], [], self.context())
        return r["tasks"][0]["taskArn"]

    def wait_for(self, via, arn, status, timeout=30):
        return th.wait_for_status(self, self.ecs[via], "multi", arn, status, timeout, self.context)

    def running_copies(self, task_id):
        return {name: containers_of(d, task_id) for name, d in self.dirs.items()}

    def test_1_a_fargate_task_runs_once_whichever_replica_takes_it_and_stops_through_either(self):
        for via, stop_via in (("a", "b"), ("b", "a")):
            arn = self.run_fargate(via)
            task_id = arn.rsplit("/", 1)[1]
            task = self.wait_for(stop_via, arn, "RUNNING")
            self.assertEqual(th.fetch(f"http://{th.task_ip(task)}:8080/"), PAGE)
            # Both agents had every chance to pick it up: each polls its assignments every second.
            time.sleep(2.5)
            copies = self.running_copies(task_id)
            self.assertEqual(sum(len(c) for c in copies.values()), 1,
                             f"task placed through {via} runs as {copies}{self.context()}")
            # Both hosts idle and alike: a tie, which the placing replica's own host takes.
            self.assertEqual(len(copies[via]), 1, f"the replica that placed it runs it: {copies}")
            started = time.monotonic()
            self.ecs[stop_via].stop_task(cluster="multi", task=arn, reason="stopped through the other replica")
            task = self.wait_for(stop_via, arn, "STOPPED")
            stop_seconds = time.monotonic() - started
            print(f"\nRunTask via {via}, StopTask via {stop_via} -> STOPPED: {stop_seconds * 1000:.0f} ms",
                  file=sys.stderr)
            self.assertEqual(task["stopCode"], "UserInitiated")
            self.assertEqual(self.running_copies(task_id), {"a": [], "b": []})

    def test_2_a_task_placed_through_one_replica_starts_at_once_on_an_agent_polling_the_other(self):
        # A `paddock agent` long-polling replica b.
        agent = self.start_agent("agent", "multi", ["b"])
        td = self.ecs["a"].register_task_definition(
            family="multi-ec2", networkMode="awsvpc", requiresCompatibilities=["EC2"], cpu="256", memory="128",
            containerDefinitions=[{"name": "web", "image": "busybox:multi", "essential": True, "stopTimeout": 2}],
        )["taskDefinition"]["taskDefinitionArn"]
        th.connected_instance(self.ecs["a"], "multi", context=agent.log_tail)
        # Replica b's long-poll waits up to 2 s between its own looks at the store; only a's commit,
        # heard through PostgreSQL, answers it sooner: the agent takes the task (its first report
        # moves it out of PROVISIONING) within half a second each time. Four runs, so that luck
        # (a 1 in 4 chance each without the notification) cannot pass for it.
        for attempt in range(4):
            started = time.monotonic()
            r = self.ecs["a"].run_task(cluster="multi", taskDefinition=td, launchType="EC2",
                                       networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
            self.assertEqual(r["failures"], [], f"{self.context()}\nagent: {agent.log_tail()}")
            arn = r["tasks"][0]["taskArn"]
            self.assertEqual(r["tasks"][0]["containerInstanceArn"], agent.arn)
            while self.ecs["a"].describe_tasks(cluster="multi", tasks=[arn])["tasks"][0]["lastStatus"] == "PROVISIONING":
                self.assertLess(time.monotonic() - started, 10, agent.log_tail())
                time.sleep(0.02)
            taken = time.monotonic() - started
            task = th.wait_for_status(self, self.ecs["a"], "multi", arn, "RUNNING", 30,
                                      lambda: f"\nagent: {agent.log_tail()}")
            running = time.monotonic() - started
            print(f"\nRunTask via a -> taken by b's agent: {taken * 1000:.0f} ms, RUNNING: {running * 1000:.0f} ms",
                  file=sys.stderr)
            self.assertLess(taken, 0.5, "the agent polling b heard of a's task only at its next look")
            self.assertEqual(th.fetch(f"http://{th.task_ip(task)}:8080/"), PAGE)
            self.ecs["a"].stop_task(cluster="multi", task=arn)
            th.wait_for_status(self, self.ecs["b"], "multi", arn, "STOPPED", 30, lambda: agent.log_tail())

    def test_6_an_agent_given_both_replicas_turns_to_the_other_when_its_server_dies(self):
        # `paddock agent --endpoint b --endpoint a`: b killed, the agent's next calls go to a, so a
        # task placed through a runs on it and it is not fenced off or found lost.
        self.ecs["a"].create_cluster(clusterName="failover")
        agent = self.start_agent("agent-failover", "failover", ["b", "a"])
        td = self.ecs["a"].register_task_definition(
            family="failover-ec2", networkMode="awsvpc", requiresCompatibilities=["EC2"], cpu="256", memory="128",
            containerDefinitions=[{"name": "web", "image": "busybox:multi", "essential": True, "stopTimeout": 2}],
        )["taskDefinition"]["taskDefinitionArn"]
        th.connected_instance(self.ecs["a"], "failover", context=agent.log_tail)
        self.servers["b"].kill()
        killed = time.monotonic()
        r = self.ecs["a"].run_task(cluster="failover", taskDefinition=td, launchType="EC2",
                                   networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [], f"{self.context()}\nagent: {agent.log_tail()}")
        arn = r["tasks"][0]["taskArn"]
        task = th.wait_for_status(self, self.ecs["a"], "failover", arn, "RUNNING", 30,
                                  lambda: f"\nagent: {agent.log_tail()}")
        print(f"\nserver b killed -> the agent's task placed through a RUNNING {time.monotonic() - killed:.1f} s after",
              file=sys.stderr)
        self.assertEqual(th.fetch(f"http://{th.task_ip(task)}:8080/"), PAGE)
        self.ecs["a"].stop_task(cluster="failover", task=arn)
        th.wait_for_status(self, self.ecs["a"], "failover", arn, "STOPPED", 30, lambda: agent.log_tail())

    def start_agent(self, name, cluster, replicas):
        """A `paddock agent` of the account in `cluster`, given the `replicas`' endpoints in that order;
        its image in its own state directory."""
        agent_dir = os.path.join(self.tmp, name)
        os.makedirs(agent_dir)
        th.httpd_image(agent_dir, agent_dir + "-work", "busybox:multi", PAGE)
        key = admin(self.dirs["a"], self.url, "create-access-key", "--account", self.account)
        creds = os.path.join(self.tmp, name + "-credentials")
        with open(creds, "w") as f:
            f.write(f"[agent]\naws_access_key_id = {key['accessKeyId']}\n"
                    f"aws_secret_access_key = {key['secretAccessKey']}\n")
        endpoints = [arg for r in replicas for arg in ("--endpoint", self.servers[r].endpoint)]
        agent = AgentProcess([*endpoints, "--cluster", cluster, "--state-dir", agent_dir, "--credentials", creds,
                              "--profile", "agent"], os.path.join(self.tmp, name + ".log")).start()
        self.addCleanup(agent.stop)
        return agent

    def lease(self):
        """(holder pid, epoch, expires ms) of the scheduler lease, read from the database."""
        row = self.pg.psql("multi", "SELECT convert_from(v, 'UTF8') FROM t_scheduler_lease").stdout.strip()
        holder, epoch, expires = row.rsplit(" ", 2)
        return int(holder.split(":")[2]), int(epoch), int(expires)

    def wait_running_count(self, via, service, count, timeout):
        deadline = time.monotonic() + timeout
        while True:
            svc = self.ecs[via].describe_services(cluster="multi", services=[service])["services"][0]
            if svc["runningCount"] == count and svc["desiredCount"] == count:
                return svc
            if time.monotonic() > deadline:
                self.fail(f"{service} did not reach {count}: {svc['runningCount']} running, events "
                          f"{[e['message'] for e in svc['events'][:5]]}{self.context()}")
            time.sleep(0.1)

    def test_3_killing_the_lease_holder_hands_the_scheduler_over_within_the_lease_time(self):
        pids = {s.proc.pid: name for name, s in self.servers.items()}
        holder_pid, epoch, _ = self.lease()
        leader = pids[holder_pid]
        other = "b" if leader == "a" else "a"
        self.ecs[other].create_service(
            cluster="multi", serviceName="handover", taskDefinition=self.td, desiredCount=1, launchType="FARGATE",
            networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.wait_running_count(other, "handover", 1, 30)
        first = self.ecs[other].list_tasks(cluster="multi", serviceName="handover")["taskArns"][0].rsplit("/", 1)[1]
        self.assertEqual(len(containers_of(self.dirs[leader], first)), 1, "the leader's scheduler placed it on itself")

        self.servers[leader].kill()
        killed = time.monotonic()
        # Scaled after the kill, through the survivor: its scheduler must take the lease to act.
        self.ecs[other].update_service(cluster="multi", service="handover", desiredCount=2)
        while True:
            holder_pid, new_epoch, _ = self.lease()
            if pids.get(holder_pid) == other:
                break
            self.assertLess(time.monotonic() - killed, LEASE_SECONDS + 5, "the lease was not taken over")
            time.sleep(0.05)
        handover = time.monotonic() - killed
        print(f"\nlease holder killed -> the other replica holds the lease: {handover * 1000:.0f} ms "
              f"(lease_seconds = {LEASE_SECONDS})", file=sys.stderr)
        # The dead holder's last renewal lasts the lease's time; the survivor tries every third of it.
        self.assertLessEqual(handover, LEASE_SECONDS * 4 / 3 + 1)
        self.assertGreater(new_epoch, epoch, "a takeover starts a new fencing epoch")
        self.wait_running_count(other, "handover", 2, 30)
        arns = self.ecs[other].list_tasks(cluster="multi", serviceName="handover")["taskArns"]
        second = [a.rsplit("/", 1)[1] for a in arns if not a.endswith(first)]
        self.assertEqual(len(second), 1)
        self.assertEqual(len(containers_of(self.dirs[other], second[0])), 1, "the new leader placed it on itself")
        # The dead replica's task is still RUNNING in the records: its containers outlive the server
        # (a server restarted on its state directory re-adopts them); nothing stops it in the meantime.
        self.assertEqual(len(containers_of(self.dirs[leader], first)), 1)

    def test_4_a_client_that_switches_replicas_reads_its_writes(self):
        # Every write commits before it is acknowledged and every read is a new snapshot of the one
        # primary, so a read through the other replica right after a write sees it.
        for i in range(20):
            writer, reader = ("a", "b") if i % 2 == 0 else ("b", "a")
            arn = self.ecs[writer].register_task_definition(**h.td_min(f"ryw-{i}"))["taskDefinition"]["taskDefinitionArn"]
            self.assertEqual(self.ecs[reader].describe_task_definition(taskDefinition=f"ryw-{i}")
                             ["taskDefinition"]["taskDefinitionArn"], arn)
            self.ecs[writer].tag_resource(resourceArn=arn, tags=[{"key": "n", "value": str(i)}])
            self.assertEqual(self.ecs[reader].list_tags_for_resource(resourceArn=arn)["tags"],
                             [{"key": "n", "value": str(i)}])
            self.ecs[writer].deregister_task_definition(taskDefinition=arn)
            self.assertEqual(self.ecs[reader].describe_task_definition(taskDefinition=arn)
                             ["taskDefinition"]["status"], "INACTIVE")

    def test_5_a_log_written_through_one_replica_is_read_through_the_other(self):
        # CloudWatch Logs live in the shared database too: a task's awslogs on one server's host, read
        # through whichever replica the load balancer picks.
        logs = {n: h.client("logs", s.endpoint, self.key_id, self.secret) for n, s in self.servers.items()}
        logs["a"].create_log_group(logGroupName="/multi/app")
        logs["b"].create_log_stream(logGroupName="/multi/app", logStreamName="web")
        now = int(time.time() * 1000)
        logs["a"].put_log_events(logGroupName="/multi/app", logStreamName="web",
                                 logEvents=[{"timestamp": now, "message": f"line {i}"} for i in range(3)])
        got = logs["b"].get_log_events(logGroupName="/multi/app", logStreamName="web", startFromHead=True)["events"]
        self.assertEqual([e["message"] for e in got], ["line 0", "line 1", "line 2"])
        self.assertEqual([g["logGroupName"] for g in logs["b"].describe_log_groups()["logGroups"]], ["/multi/app"])
        logs["b"].delete_log_group(logGroupName="/multi/app")
        self.assertEqual(logs["a"].describe_log_groups()["logGroups"], [])

    def test_7_a_console_on_one_replica_hears_the_others_changes_of_its_account_only(self):
        # A console watches through one replica; writes go through the other (cli/console_relay.h).
        models = tempfile.mkdtemp(prefix="paddock-console-model-")
        self.addCleanup(shutil.rmtree, models, ignore_errors=True)
        os.makedirs(os.path.join(models, "paddockconsole", "2026-12-04"))
        shutil.copy(CONSOLE_MODEL, os.path.join(models, "paddockconsole", "2026-12-04", "service-2.json"))
        stream = console_client(models, self.servers["b"].endpoint, self.key_id, self.secret) \
            .watch_changes()["changes"]
        self.addCleanup(stream.close)
        events = read_events(stream)
        self.assertEqual(events.get(timeout=10)["change"]["kinds"], [])  # the first, at once

        # Another account's write through the other replica (an SSM parameter), then this account's
        # (a cluster): relayed in that order, so had the first reached this watch it would come
        # first or with the second — the first change heard is the second alone ("ecs", not "ssm").
        other = admin(self.dirs["a"], self.url, "create-account", "--name", "console-other")["account"]
        key = admin(self.dirs["a"], self.url, "create-access-key", "--account", other)
        h.client("ssm", self.servers["a"].endpoint, key["accessKeyId"], key["secretAccessKey"]) \
            .put_parameter(Name="/theirs", Value="x", Type="String")
        written = time.monotonic()
        self.ecs["a"].create_cluster(clusterName="console-relay")
        event = events.get(timeout=10)
        heard = time.monotonic() - written
        self.assertIn("change", event, event)
        self.assertEqual(event["change"]["kinds"], ["ecs"])
        self.assertLess(heard, 1.0, "the console's bar: a change shown within a second")
        print(f"\nwrite through a -> console on b told: {heard * 1000:.0f} ms", file=sys.stderr)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class InProcessInstanceLoss(unittest.TestCase):
    """Issue 16 §3 for a server's own [[ec2_instance]]: on a shared store, a server killed with kill -9
    is a lost host like any other — its watchdog kills its instance's containers within the fence
    time, and another server records the instance's task STOPPED as ECS does once host_lost_seconds
    have passed (docs/contracts/task.md, "Losing a host")."""

    HOST_LOST = 6  # the fence time is (6 - 3/4) / 2 = 2.625 s

    @classmethod
    def setUpClass(cls):
        shared_database(cls, "inprocessloss")
        cls.dirs = {name: os.path.join(cls.tmp, name) for name in ("a", "b")}
        for d in cls.dirs.values():
            os.makedirs(d)
        os.makedirs(cls.dirs["b"] + "-work")
        th.httpd_image(cls.dirs["b"], cls.dirs["b"] + "-work", "busybox:ec2loss", PAGE)
        cls.account = admin(cls.dirs["a"], cls.url, "create-account", "--name", "main")["account"]
        key = admin(cls.dirs["a"], cls.url, "create-access-key", "--account", cls.account)
        base = (f"agent_timeout_seconds = 3\nhost_lost_seconds = {cls.HOST_LOST}\n"
                f"[scheduler]\nlease_seconds = {LEASE_SECONDS}\nresync_seconds = 1\nbackoff_base_seconds = 1\n")
        cls.servers = {}
        cls.addClassCleanup(cls.stop_everything)
        for name in ("a", "b"):
            config = os.path.join(cls.tmp, f"{name}.toml")
            with open(config, "w") as f:  # b runs the account's EC2 instance
                f.write(base + (f"[[ec2_instance]]\ncluster = \"ec2\"\naccount = \"{cls.account}\"\n"
                                f"cpu = 1024\nmemory = 512\n" if name == "b" else ""))
            if name != "a":
                h.share_node_key(cls.dirs["a"], cls.dirs[name])
            cls.servers[name] = h.Server(cls.dirs[name], ["--store", cls.url, "--config", config]).start()
        cls.ecs = h.ecs_client(cls.servers["a"].endpoint, key["accessKeyId"], key["secretAccessKey"])
        cls.subnet = h.client("ec2", cls.servers["a"].endpoint, key["accessKeyId"], key["secretAccessKey"]) \
            .describe_subnets()["Subnets"][0]["SubnetId"]
        cls.ecs.create_cluster(clusterName="ec2")
        cls.td = cls.ecs.register_task_definition(
            family="ec2loss", networkMode="awsvpc", requiresCompatibilities=["EC2"], cpu="256", memory="128",
            containerDefinitions=[{"name": "web", "image": "busybox:ec2loss", "essential": True, "stopTimeout": 2}],
        )["taskDefinition"]["taskDefinitionArn"]

    @classmethod
    def stop_everything(cls):
        # A killed server comes back on its state directory and removes what its lost task left (its
        # network namespace, then its VPC's router when it stops), as any agent does for a task no
        # longer assigned to it.
        try:
            for name, server in cls.servers.items():
                if not server.alive():
                    cls.servers[name] = h.Server(cls.dirs[name], server.extra_args).start()
            for task_id in getattr(cls, "task_ids", []):
                wait_until(lambda: not namespaces(task_id), 60, f"task {task_id}'s namespace removed")
        finally:
            for server in cls.servers.values():
                server.stop()

    def context(self):
        return "".join(f"\nserver {n}: {s.log_tail(1500)}" for n, s in self.servers.items())

    def test_a_killed_servers_instance_is_lost_after_its_containers_and_its_task_stopped_as_ecs_does(self):
        instances = wait_until(lambda: self.ecs.list_container_instances(cluster="ec2")["containerInstanceArns"],
                               30, "b's [[ec2_instance]] registered")
        ec2_id = self.ecs.describe_container_instances(cluster="ec2", containerInstances=instances) \
            ["containerInstances"][0]["ec2InstanceId"]
        r = self.ecs.run_task(cluster="ec2", taskDefinition=self.td, launchType="EC2",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [], self.context())
        arn = r["tasks"][0]["taskArn"]
        task_id = arn.rsplit("/", 1)[1]
        type(self).task_ids = [task_id]
        th.wait_for_status(self, self.ecs, "ec2", arn, "RUNNING", 60, self.context)
        self.assertEqual(len(crun_running(self.dirs["b"], task_id)), 1)

        self.servers["b"].proc.send_signal(signal.SIGKILL)
        self.servers["b"].proc.wait()
        killed = time.monotonic()
        stopped = th.wait_for_status(self, self.ecs, "ec2", arn, "STOPPED", 60, self.context)
        after = time.monotonic() - killed
        self.assertEqual(crun_running(self.dirs["b"], task_id), [], "recorded STOPPED while its container ran")
        self.assertEqual((stopped["stopCode"], stopped["stoppedReason"]),
                         ("TerminationNotice", f"Host EC2 (instance {ec2_id}) terminated."))
        self.assertGreaterEqual(after, self.HOST_LOST - 1)  # the stored heartbeat is up to 3/4 s old
        print(f"\nserver b killed -> its [[ec2_instance]]'s task STOPPED through a {after:.1f} s after",
              file=sys.stderr)


# AWS's task-definition-modify bucket (src/ecs/api/throttle_table.cc): RegisterTaskDefinition and
# DeregisterTaskDefinition. A refill of 1 a second keeps the budget's time term small beside its burst.
BURST, REFILL = 20, 1
# cli/node.cc: a presence row lives 6 s and is renewed every 2 s.
PRESENCE_TTL, PRESENCE_RENEWAL = 6, 2
SHARED = "2 servers share each account's API rate limits"
ALONE = "this server alone holds each account's API rate limits"


@unittest.skipIf(pg_skip_reason() is not None, pg_skip_reason() or "")
class SharedRateLimits(unittest.TestCase):
    """docs/scaling.md, "Several servers", Throttling: each replica holds 1/N of every bucket."""

    @classmethod
    def setUpClass(cls):
        shared_database(cls, "throttle")
        cls.dirs = {name: os.path.join(cls.tmp, name) for name in ("a", "b")}
        account = admin(cls.dirs["a"], cls.url, "create-account", "--name", "main")["account"]
        key = admin(cls.dirs["a"], cls.url, "create-access-key", "--account", account)
        cls.key_id, cls.secret = key["accessKeyId"], key["secretAccessKey"]
        cls.servers = {}
        cls.addClassCleanup(lambda: [s.stop() for s in cls.servers.values()])
        for name in ("a", "b"):
            cls.start_server(name)

    @classmethod
    def start_server(cls, name):
        if name != "a":
            h.share_node_key(cls.dirs["a"], cls.dirs[name])
        server = h.Server(cls.dirs[name], ["--store", cls.url, "--api-rate-limits", "aws"])
        server.start()
        cls.servers[name] = server
        return server

    def wait_line(self, server, line, after=0, timeout=10):
        """Waits until `server` prints `line` (its stdout's lines from index `after` on); returns the
        seconds it took."""
        start = time.monotonic()
        while not any(line in printed for printed in server.stdout_lines[after:]):
            if time.monotonic() - start > timeout:
                raise AssertionError(f"no {line!r} in {server.stdout_lines!r}: {server.log_tail()}")
            time.sleep(0.01)
        return time.monotonic() - start

    def test_two_replicas_admit_one_accounts_budget_and_follow_a_replica_leaving(self):
        # Both have seen the other: b at its start, a at b's row's notification.
        for name in ("a", "b"):
            self.wait_line(self.servers[name], SHARED)
        # No retries (botocore's max_attempts counts retries): each call is one request, admitted or not.
        ecs = {name: h.ecs_client(s.endpoint, self.key_id, self.secret, retries=0) for name, s in self.servers.items()}
        admitted = {"a": 0, "b": 0}
        calls = 200
        start = time.monotonic()
        for i in range(calls):
            name = "ab"[i % 2]
            try:
                ecs[name].register_task_definition(**h.td_min("shared-budget"))
                admitted[name] += 1
            except ClientError as e:
                self.assertEqual((e.response["Error"]["Code"], e.response["Error"]["Message"]),
                                 ("ThrottlingException", "Rate exceeded"))
        elapsed = time.monotonic() - start
        # Every bucket starts full at its first call and refills at its rate until its last, all
        # inside `elapsed`: one account's budget is burst + refill × elapsed, and each replica's
        # share of it half of that.
        budget = BURST + REFILL * elapsed
        print(f"\n  {calls} RegisterTaskDefinition in {elapsed:.2f} s through two replicas: admitted {admitted} "
              f"(one account's budget {budget:.1f})", file=sys.stderr)
        self.assertGreater(calls / 2, 2 * budget,
                           "the calls were too slow for a replica keeping a whole budget to have shown")
        self.assertLessEqual(admitted["a"] + admitted["b"], budget)
        for name in ("a", "b"):
            self.assertGreaterEqual(admitted[name], BURST / 2, "each replica admits its half burst")
            self.assertLessEqual(admitted[name], budget / 2)

        # A replica that stops cleanly removes its row: the other takes the whole budget at once
        # (the row's notification) or at its own next renewal, not at the row's expiry.
        seen = len(self.servers["a"].stdout_lines)
        self.servers["b"].stop()
        left = self.wait_line(self.servers["a"], ALONE, seen)
        self.assertLessEqual(left, PRESENCE_RENEWAL)
        seen = len(self.servers["a"].stdout_lines)
        self.start_server("b")
        self.wait_line(self.servers["a"], SHARED, seen)
        # A replica killed keeps its row until it expires; the other stops counting it at its first
        # renewal after that.
        seen = len(self.servers["a"].stdout_lines)
        self.servers["b"].kill()
        waited = self.wait_line(self.servers["a"], ALONE, seen, timeout=PRESENCE_TTL + PRESENCE_RENEWAL + 5)
        self.assertLessEqual(waited, PRESENCE_TTL + PRESENCE_RENEWAL + 1)
        print(f"  the other replica alone {left:.2f} s after a clean stop, {waited:.1f} s after a kill -9",
              file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
