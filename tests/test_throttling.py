"""API rate limits are wired: AWS's per-account token buckets with --api-rate-limits aws, none with off.
(The exact bucket arithmetic is proven by a fake-clock unit test in C++.)"""

import json
import os
import sys
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402

from botocore.exceptions import ClientError  # noqa: E402


def burst(client, n, prefix, times=None):
    """n CreateCluster calls as fast as possible; returns list of 'ok' or (code, status, message, raw).
    If `times` is a list, the monotonic start time of each call is appended to it."""
    out = []
    for i in range(n):
        if times is not None:
            times.append(time.monotonic())
        try:
            client.create_cluster(clusterName=f"{prefix}-{i}")
            out.append("ok")
        except ClientError as e:
            r = e.response
            out.append((r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"], r["Error"].get("Message"),
                        client.paddock_capture.last[3]))
    return out


class ThrottlingOn(h.PaddockTestCase):
    SERVER_ARGS = ("--api-rate-limits", "aws")

    def test_cluster_modify_bucket(self):
        prefix = f"thr-{uuid.uuid4().hex[:6]}"
        times = []
        res = burst(self.ecs, 25, prefix, times)
        times.append(time.monotonic())
        self.assertEqual(res[:20], ["ok"] * 20, res)
        throttled = [r for r in res if r != "ok"]
        self.assertTrue(throttled, "25 CreateCluster in a burst were never throttled")
        code, status, message, raw = throttled[0]
        self.assertEqual((code, status, message), ("ThrottlingException", 400, "Rate exceeded"))
        self.assertEqual(json.loads(raw), {"__type": "ThrottlingException", "message": "Rate exceeded"})
        # Once throttled, only refill tokens (1 per second) let calls through.
        first = res.index(throttled[0])
        elapsed = times[-1] - times[0]
        self.assertLessEqual(res[first:].count("ok"), int(elapsed * 1) + 1, (elapsed, res))

        # Other buckets are separate: reads still work.
        self.assertTrue(self.ecs.list_clusters()["clusterArns"])
        self.ecs.register_task_definition(**h.td_min(prefix))

        # Buckets are per account: another account has its own full bucket.
        _, kb, sb = h.create_account(self.state_dir)
        other = h.ecs_client(self.server.endpoint, kb, sb)
        self.assertEqual(burst(other, 5, prefix + "-b"), ["ok"] * 5)

        # Refill: a token comes back within ~1 s (poll, bounded).
        deadline = time.monotonic() + 5
        while True:
            try:
                self.ecs.create_cluster(clusterName=f"{prefix}-refill")
                break
            except ClientError as e:
                self.assertEqual(e.response["Error"]["Code"], "ThrottlingException")
                self.assertLess(time.monotonic(), deadline, "bucket never refilled")
                time.sleep(0.2)

    def test_botocore_retries_absorb_throttling(self):
        """With botocore's standard retry mode the SDK sees ThrottlingException as retryable."""
        prefix = f"retry-{uuid.uuid4().hex[:6]}"
        _, kb, sb = h.create_account(self.state_dir)
        c = h.ecs_client(self.server.endpoint, kb, sb, retries=1)
        res = burst(c, 22, prefix)
        self.assertIn("ThrottlingException", [r[0] for r in res if r != "ok"])
        retrying = h.ecs_client(self.server.endpoint, kb, sb, retries=3)
        try:
            retrying.create_cluster(clusterName=prefix + "-r")
        except ClientError as e:
            self.assertEqual(e.response["Error"]["Code"], "ThrottlingException")
            self.assertGreater(e.response["ResponseMetadata"].get("RetryAttempts", 0), 0,
                               "botocore did not retry ThrottlingException")


class ThrottlingOff(h.PaddockTestCase):
    SERVER_ARGS = ("--api-rate-limits", "off")

    def test_no_throttling(self):
        prefix = f"off-{uuid.uuid4().hex[:6]}"
        res = burst(self.ecs, 60, prefix)
        self.assertEqual(res, ["ok"] * 60)


class ThrottlingDefault(h.PaddockTestCase):

    def test_default_is_off(self):
        res = burst(self.ecs, 30, f"dflt-{uuid.uuid4().hex[:6]}")
        self.assertEqual(res, ["ok"] * 30)


if __name__ == "__main__":
    unittest.main()
