"""The console's own service, PaddockConsole (console/console_service.h), against a real `paddock server`
through a botocore client built from the service's own model (src/console/models/): who the caller is,
and WatchChanges' event stream — a change event at once, then one for each write the caller's account
commits (by kind), and never one for another account's writes. The browser side is test_console.py."""
import os
import queue
import shutil
import tempfile
import threading
import time

import paddock_harness as h  # first: on a python3 without boto3 the module is skipped, not broken

import boto3  # noqa: E402
import botocore.session  # noqa: E402
from botocore.config import Config  # noqa: E402

MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "console", "models",
                     "paddockconsole-2026-12-04.json")
DEADLINE = 5  # seconds a change may take to be heard (the console's bar is 1 s; coalescing is 0.1 s)


def console_client(models_dir, endpoint, key_id, secret):
    session = botocore.session.get_session()
    session.get_component("data_loader").search_paths.insert(0, models_dir)
    return boto3.session.Session(botocore_session=session).client(
        "paddockconsole", endpoint_url=endpoint, region_name=h.REGION, aws_access_key_id=key_id,
        aws_secret_access_key=secret, config=Config(retries={"max_attempts": 1}, read_timeout=30))


def read_events(stream):
    """A queue of an event stream's events, read on a thread of its own (a closed stream's last
    entry says so)."""
    events = queue.Queue()

    def read():
        try:
            for event in stream:
                events.put(event)
        except Exception as e:  # the stream closed under the reader at clean-up
            events.put({"closed": str(e)})
    threading.Thread(target=read, daemon=True).start()
    return events


class ConsoleApi(h.PaddockTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.models = tempfile.mkdtemp(prefix="paddock-console-model-")
        cls.addClassCleanup(shutil.rmtree, cls.models, ignore_errors=True)
        os.makedirs(os.path.join(cls.models, "paddockconsole", "2026-12-04"))
        shutil.copy(MODEL, os.path.join(cls.models, "paddockconsole", "2026-12-04", "service-2.json"))
        cls.console = console_client(cls.models, cls.server.endpoint, cls.key_id, cls.secret)

    def watch(self):
        """A queue of the watch's events (name, body) read on a thread of its own, after the first."""
        stream = self.console.watch_changes()["changes"]
        self.addCleanup(stream.close)
        events = read_events(stream)
        first = events.get(timeout=DEADLINE)
        self.assertEqual(list(first), ["change"], first)
        self.assertEqual(first["change"]["kinds"], [])
        return events

    def kinds_until(self, events, wanted):
        """Every kind heard until `wanted` is, failing after DEADLINE."""
        heard, end = set(), time.monotonic() + DEADLINE
        while wanted not in heard:
            left = end - time.monotonic()
            self.assertGreater(left, 0, f"no {wanted} change within {DEADLINE}s; heard {heard}")
            event = events.get(timeout=left)
            self.assertIn("change", event, event)
            heard.update(event["change"]["kinds"])
        return heard

    def test_console_info_names_the_caller_and_a_bare_server_has_no_node_parts(self):
        info = self.console.get_console_info()
        self.assertEqual(info["account"], self.account)
        self.assertEqual(info["arn"], f"arn:aws:iam::{self.account}:root")
        self.assertEqual(info["region"], h.REGION)
        self.assertEqual(info["features"], {"edge": False, "deploy": False, "images": False})
        self.assertClientError("ResourceNotFoundException", self.console.describe_edge, what="routers")

    def test_a_watch_hears_its_own_accounts_writes_by_kind_and_nothing_of_another_account(self):
        other, other_id, other_secret = h.create_account(self.state_dir, None, "other")
        theirs = h.client("ecs", self.server.endpoint, other_id, other_secret)
        ssm = h.client("ssm", self.server.endpoint, self.key_id, self.secret)
        events = self.watch()
        started = time.monotonic()
        theirs.create_cluster(clusterName="theirs")  # another account's ECS write: never heard here
        self.ecs.list_clusters()                      # a read: publishes nothing
        ssm.put_parameter(Name="/console/feed", Value="1", Type="String")
        heard = self.kinds_until(events, "ssm")
        print(f"\n  an SSM write heard by the watch in {(time.monotonic() - started) * 1000:.0f} ms")
        self.assertNotIn("ecs", heard, "another account's write (or a read) was heard")
        self.ecs.create_cluster(clusterName="mine")
        self.assertIn("ecs", self.kinds_until(events, "ecs"))


if __name__ == "__main__":
    import unittest
    unittest.main()
