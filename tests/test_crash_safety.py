"""SIGKILL during writes: nothing acknowledged is ever lost, revisions stay unique and dense, and
the bare family resolves to the newest ACTIVE revision after every restart."""

import json
import os
import queue
import random
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402

KILLS = 20
TIME_BUDGET_S = 45  # for the kill loop; verification comes after
FAMILY = "crashy"


def request_for(tag):
    return {"family": FAMILY,
            "containerDefinitions": [{"name": "app", "image": "busybox", "memory": 32,
                                      "environment": [{"name": "SEQ", "value": tag}],
                                      "dockerLabels": {"seq": tag}}]}


def tag_of(td):
    return td["containerDefinitions"][0]["environment"][0]["value"]


class CrashSafety(unittest.TestCase):

    def setUp(self):
        import shutil
        import tempfile
        self.tmp = tempfile.mkdtemp(prefix="paddock-crash-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.state = os.path.join(self.tmp, "state")
        os.makedirs(self.state)
        self.account, self.key_id, self.secret = h.create_account(self.state)
        self.signer = h.RawSigner(self.key_id, self.secret)
        self.servers = []
        self.addCleanup(self._kill_all)

    def _kill_all(self):
        for s in self.servers:
            s.kill()

    def start_server(self):
        s = h.Server(self.state)
        self.servers.append(s)
        s.start()
        return s

    def test_sigkill_during_registers(self):
        rng = random.Random(int(os.environ.get("PADDOCK_CRASH_SEED", time.time())))
        acked = {}      # revision -> tag
        ack_errors = []
        sent = set()    # every tag ever sent (acknowledged or not)
        unacked = []    # tags whose request got no response
        highest_acked_before_kill = 0
        kills = 0
        t0 = time.monotonic()
        lock = threading.Lock()

        while kills < KILLS and time.monotonic() - t0 < TIME_BUDGET_S:
            server = self.start_server()
            cycle = kills
            # After every restart the bare family resolves to >= everything acknowledged so far.
            if acked:
                probe = h.RawConn(server.port, self.signer)
                status, data = probe.call("DescribeTaskDefinition", {"taskDefinition": FAMILY})
                probe.close()
                self.assertEqual(status, 200, data)
                rev = json.loads(data)["taskDefinition"]["revision"]
                self.assertGreaterEqual(rev, max(acked), f"restart {cycle} lost acknowledged revisions")
            stop = threading.Event()

            def writer(port=server.port, cycle=cycle, stop=stop):
                conn = h.RawConn(port, self.signer, timeout=10)
                n = 0
                while not stop.is_set():
                    tag = f"c{cycle}-n{n}"
                    n += 1
                    with lock:
                        sent.add(tag)
                    try:
                        status, data = conn.call("RegisterTaskDefinition", request_for(tag))
                    except Exception:  # killed mid-request: outcome unknown
                        with lock:
                            unacked.append(tag)
                        conn.close()
                        return
                    if status != 200:
                        with lock:
                            ack_errors.append((tag, status, data[:300]))
                            unacked.append(tag)
                        continue
                    td = json.loads(data)["taskDefinition"]
                    with lock:
                        if td["revision"] in acked:
                            ack_errors.append(("duplicate revision", td["revision"], acked[td["revision"]], tag))
                        acked[td["revision"]] = tag
                        if tag_of(td) != tag:
                            ack_errors.append(("echo mismatch", tag, tag_of(td)))

            th = threading.Thread(target=writer, daemon=True)
            th.start()
            # Let some writes land, then kill at a random moment.
            deadline = time.monotonic() + rng.uniform(0.05, 0.8)
            while time.monotonic() < deadline:
                time.sleep(0.01)
            server.kill()
            kills += 1
            stop.set()
            th.join(15)
            self.assertFalse(th.is_alive(), "writer hung after the server was killed")
            with lock:
                highest_acked_before_kill = max(acked) if acked else 0

        self.assertGreaterEqual(kills, KILLS, f"only {kills} kills in {TIME_BUDGET_S}s")
        self.assertEqual(ack_errors[:10], [])
        self.assertGreater(len(acked), KILLS, "too few acknowledged writes to prove anything")

        # Verification on a fresh server over the same state dir.
        server = self.start_server()
        ecs = h.ecs_client(server.endpoint, self.key_id, self.secret)
        listed, token = [], None
        while True:
            kw = {"familyPrefix": FAMILY, "maxResults": 100}
            if token:
                kw["nextToken"] = token
            r = ecs.list_task_definitions(**kw)
            listed += [int(a.rsplit(":", 1)[1]) for a in r["taskDefinitionArns"]]
            token = r.get("nextToken")
            if not token:
                break
        self.assertEqual(len(listed), len(set(listed)), "duplicate revisions listed")
        self.assertEqual(listed, sorted(listed))
        top = max(acked)
        for rev in acked:
            self.assertIn(rev, listed, f"acknowledged revision {rev} ({acked[rev]}) was lost")
        # One transaction per register: no holes in the sequence.
        self.assertEqual(listed, list(range(1, max(listed) + 1)), "revision sequence has holes")
        # Landed-but-unacknowledged revisions may exist only beyond acknowledged ones' numbers
        # (they took a number nobody was told about) and must carry a tag that was really sent.
        bare = ecs.describe_task_definition(taskDefinition=FAMILY)["taskDefinition"]
        self.assertGreaterEqual(bare["revision"], top)
        self.assertEqual(bare["revision"], max(listed))
        self.assertEqual(bare["status"], "ACTIVE")

        # Every listed revision describes; acknowledged ones with identical content.
        work = queue.Queue()
        for rev in listed:
            work.put(rev)
        problems, seen_tags = [], {}

        def reader():
            conn = h.RawConn(server.port, self.signer)
            while True:
                try:
                    rev = work.get_nowait()
                except queue.Empty:
                    break
                status, data = conn.call("DescribeTaskDefinition", {"taskDefinition": f"{FAMILY}:{rev}"})
                if status != 200:
                    problems.append((rev, status, data[:200]))
                    continue
                td = json.loads(data)["taskDefinition"]
                tag = tag_of(td)
                with lock:
                    if tag in seen_tags:
                        problems.append(("tag stored twice", tag, seen_tags[tag], rev))
                    seen_tags[tag] = rev
                got = td["containerDefinitions"][0]
                if any(got.get(k) != v for k, v in request_for(tag)["containerDefinitions"][0].items()):
                    problems.append(("content changed", rev, td["containerDefinitions"][0]))
                if rev in acked and tag != acked[rev]:
                    problems.append(("acknowledged content differs", rev, acked[rev], tag))
                if rev not in acked and tag not in unacked:
                    problems.append(("revision holds a tag that was acknowledged elsewhere or never sent",
                                     rev, tag))
            conn.close()

        readers = [threading.Thread(target=reader) for _ in range(4)]
        for th in readers:
            th.start()
        for th in readers:
            th.join(120)
        self.assertEqual(problems[:10], [])
        # After verification, the server still takes writes with the next revision.
        nxt = ecs.register_task_definition(**request_for("final"))["taskDefinition"]["revision"]
        self.assertEqual(nxt, max(listed) + 1)
        print(f"\n  crash-safety: {kills} kills, {len(acked)} acknowledged, "
              f"{len(listed) - len(acked)} landed unacknowledged, {len(unacked)} unanswered, "
              f"{time.monotonic() - t0:.1f}s", file=sys.stderr)


class SchedulerLeaseAfterKill9(unittest.TestCase):
    """A server killed with SIGKILL leaves its scheduler lease live (nothing released it). Restarted
    on the same state directory it is the same server (the directory's lock keeps it to one
    process): it takes the lease over at once, with a new epoch, instead of waiting the lease out.
    The lease here lasts 120 s; the restarted scheduler must act well inside that."""

    LEASE_SECONDS = 120

    def setUp(self):
        import shutil
        import tempfile
        self.tmp = tempfile.mkdtemp(prefix="paddock-lease-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.state = os.path.join(self.tmp, "state")
        os.makedirs(self.state)
        _, self.key_id, self.secret = h.create_account(self.state)
        self.config = os.path.join(self.tmp, "paddock.toml")
        with open(self.config, "w") as f:
            f.write(f"[scheduler]\nlease_seconds = {self.LEASE_SECONDS}\n")
        self.server = None
        self.addCleanup(lambda: self.server and self.server.stop())
        self.addCleanup(h.stop_leftover_tasks)

    def start(self):
        self.server = h.Server(self.state, ["--config", self.config]).start()
        self.ecs = h.ecs_client(self.server.endpoint, self.key_id, self.secret)

    def await_task_of(self, service, timeout):
        """Seconds until the scheduler has started a task of `service` (running or already stopped)."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            for status in ("RUNNING", "STOPPED"):
                if self.ecs.list_tasks(cluster="lease", serviceName=service, desiredStatus=status)["taskArns"]:
                    return time.monotonic() - t0
            time.sleep(0.1)
        self.fail(f"no task of {service} within {timeout} s: {self.server.log_tail()}")

    def test_a_restarted_server_takes_its_own_lease_at_once(self):
        self.start()
        ec2 = h.client("ec2", self.server.endpoint, self.key_id, self.secret)
        subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        self.ecs.create_cluster(clusterName="lease")
        td = self.ecs.register_task_definition(
            family="lease", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "app", "image": "busybox:lease-test-absent", "essential": True}],
        )["taskDefinition"]["taskDefinitionArn"]
        network = {"awsvpcConfiguration": {"subnets": [subnet]}}

        def service(name):
            self.ecs.create_service(cluster="lease", serviceName=name, taskDefinition=td, desiredCount=1,
                                    launchType="FARGATE", networkConfiguration=network)

        service("before")
        self.await_task_of("before", 60)  # the first life's scheduler holds the lease now
        self.server.kill()
        self.start()
        service("after")
        waited = self.await_task_of("after", self.LEASE_SECONDS / 2)
        print(f"\nscheduler acting after a SIGKILL and restart: {waited:.1f} s (lease {self.LEASE_SECONDS} s)",
              file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
