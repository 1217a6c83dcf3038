"""Server lifecycle: SIGTERM is graceful (in-flight requests are answered, exit code 0, the store
closes cleanly) and everything acknowledged before it is there after a restart."""
import json
import os
import shutil
import tempfile
import threading
import unittest

import paddock_harness as h


class GracefulStop(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="paddock-lifecycle-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.state_dir = os.path.join(self.tmp, "state")
        os.makedirs(self.state_dir)
        self.account, self.key_id, self.secret = h.create_account(self.state_dir)

    def test_sigterm_under_load_answers_in_flight_and_loses_nothing(self):
        server = h.Server(self.state_dir)
        server.start()
        self.addCleanup(server.kill)
        signer = h.RawSigner(self.key_id, self.secret)
        acked = []
        bad_statuses = []
        lock = threading.Lock()
        first_acks = threading.Barrier(9)

        def writer(n):
            conn = h.RawConn(server.port, signer, timeout=10)
            waited = False
            for i in range(10_000):
                try:
                    status, body = conn.call("RegisterTaskDefinition",
                                             h.td_min("graceful", tags=[{"key": "w", "value": f"{n}-{i}"}]))
                except OSError:
                    break  # the server closed the connection: no answer means nothing was acknowledged
                if status == 200:
                    rev = json.loads(body)["taskDefinition"]["revision"]
                    with lock:
                        acked.append(rev)
                else:
                    with lock:
                        bad_statuses.append((status, body[:200]))
                    break
                if not waited:
                    waited = True
                    first_acks.wait(timeout=30)
            conn.close()

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        first_acks.wait(timeout=30)  # every writer has an acknowledged register in
        rc = server.stop(timeout=30)
        for t in threads:
            t.join(30)
        self.assertEqual(rc, 0, server.log_tail())
        # Requests in flight at SIGTERM were answered, not failed with a server error.
        self.assertEqual(bad_statuses, [])
        self.assertGreaterEqual(len(acked), 8)

        restarted = h.Server(self.state_dir)
        restarted.start()
        self.addCleanup(restarted.stop)
        ecs = h.ecs_client(restarted.endpoint, self.key_id, self.secret)
        listed = []
        for page in ecs.get_paginator("list_task_definitions").paginate(familyPrefix="graceful"):
            listed += [int(a.rsplit(":", 1)[1]) for a in page["taskDefinitionArns"]]
        self.assertTrue(set(acked) <= set(listed), "an acknowledged revision was lost")
        self.assertEqual(sorted(listed), list(range(1, len(listed) + 1)))


if __name__ == "__main__":
    unittest.main()
