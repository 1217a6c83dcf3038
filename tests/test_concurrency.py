"""Concurrent writers: 32 clients x 50 RegisterTaskDefinition of ONE family must produce exactly
revisions 1..1600, each holding the content its client sent."""

import json
import os
import queue
import sys
import threading
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402

THREADS = 32
PER_THREAD = 50


def request_for(family, t, i):
    return {"family": family,
            "containerDefinitions": [{
                "name": "app", "image": f"busybox:{t}", "memory": 64 + t,
                "environment": [{"name": "WRITER", "value": f"t{t}-i{i}"}],
                "dockerLabels": {"writer.thread": str(t), "writer.index": str(i)}}]}


class ConcurrentRegister(h.PaddockTestCase):

    def test_one_family_many_writers(self):
        family = f"conc-{uuid.uuid4().hex[:8]}"
        results = {}  # (t, i) -> revision
        errors = []
        lock = threading.Lock()
        start = threading.Barrier(THREADS)

        def writer(t):
            try:
                # Even threads: boto3 (own client, validated from the raw body); odd: raw keep-alive http.
                client = h.ecs_client(self.server.endpoint, self.key_id, self.secret) if t % 2 == 0 else None
                conn = None if client else h.RawConn(self.server.port, h.RawSigner(self.key_id, self.secret))
                start.wait(30)
                for i in range(PER_THREAD):
                    req = request_for(family, t, i)
                    if client:
                        td = client.register_task_definition(**req)["taskDefinition"]
                    else:
                        status, data = conn.call("RegisterTaskDefinition", req)
                        if status != 200:
                            raise AssertionError(f"thread {t} index {i}: HTTP {status} {data[:300]!r}")
                        errs = h.validate_output("RegisterTaskDefinition", data)
                        if errs:
                            raise AssertionError(f"shape: {errs}")
                        td = json.loads(data)["taskDefinition"]
                    env = td["containerDefinitions"][0]["environment"]
                    if env != [{"name": "WRITER", "value": f"t{t}-i{i}"}]:
                        raise AssertionError(f"register response echoes someone else's content: {env}")
                    with lock:
                        results[(t, i)] = td["revision"]
                if conn:
                    conn.close()
            except BaseException as e:  # noqa: BLE001 - reported below
                with lock:
                    errors.append(f"writer {t}: {e!r}")

        threads = [threading.Thread(target=writer, args=(t,)) for t in range(THREADS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(300)
        self.assertFalse(any(th.is_alive() for th in threads), "writers hung")
        self.assertEqual(errors, [])
        total = THREADS * PER_THREAD
        self.assertEqual(len(results), total)
        revisions = sorted(results.values())
        self.assertEqual(revisions, list(range(1, total + 1)), "revisions must be exactly 1..N, no gaps or dups")
        # Revisions of one writer increase in its own program order.
        for t in range(THREADS):
            mine = [results[(t, i)] for i in range(PER_THREAD)]
            self.assertEqual(mine, sorted(mine), f"thread {t} saw revisions go backwards")

        # The list agrees (paged), and every revision describes with its writer's content.
        arns, token = [], None
        while True:
            kw = {"familyPrefix": family, "maxResults": 100}
            if token:
                kw["nextToken"] = token
            r = self.ecs.list_task_definitions(**kw)
            arns += r["taskDefinitionArns"]
            token = r.get("nextToken")
            if not token:
                break
        self.assertEqual([int(a.rsplit(":", 1)[1]) for a in arns], list(range(1, total + 1)))
        self.assertEqual(self.ecs.describe_task_definition(taskDefinition=family)["taskDefinition"]["revision"],
                         total)

        by_rev = {rev: key for key, rev in results.items()}
        work = queue.Queue()
        for rev in range(1, total + 1):
            work.put(rev)
        mismatches = []

        def reader():
            conn = h.RawConn(self.server.port, h.RawSigner(self.key_id, self.secret))
            while True:
                try:
                    rev = work.get_nowait()
                except queue.Empty:
                    break
                status, data = conn.call("DescribeTaskDefinition", {"taskDefinition": f"{family}:{rev}"})
                if status != 200:
                    mismatches.append((rev, status, data[:200]))
                    continue
                td = json.loads(data)["taskDefinition"]
                t, i = by_rev[rev]
                want = request_for(family, t, i)["containerDefinitions"][0]
                got = td["containerDefinitions"][0]
                if (td["revision"] != rev or any(got.get(k) != v for k, v in want.items())):
                    mismatches.append((rev, (t, i), got))
            conn.close()

        readers = [threading.Thread(target=reader) for _ in range(8)]
        for th in readers:
            th.start()
        for th in readers:
            th.join(300)
        self.assertEqual(mismatches[:5], [])
        self.assertTrue(self.server.alive())


if __name__ == "__main__":
    unittest.main()
