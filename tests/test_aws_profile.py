"""The AWS profile `paddock up` writes carries what clients need on a custom endpoint
(src/cli/aws_profile.h, README "Five-minute tour"): besides `endpoint_url`,
`disable_host_prefix_injection = true`, botocore's config-file key, without which botocore calls
StartLiveTail at "stream-127.0.0.1" and Cloud Map's DiscoverInstances at "data-127.0.0.1", which
resolve nowhere. Proved with the CLIs through the written profile only (no --endpoint-url for v1):
the AWS CLI v1 tails a log group with `aws logs start-live-tail` and its prefixed Cloud Map call
reaches the server (and, the control, does not when AWS_DISABLE_HOST_PREFIX_INJECTION=false overrides
the profile); Debian 12's AWS CLI v2 (2.9) predates the key (its botocore has no such setting):
for it the test pins that limitation, and checks the key is honoured when a newer v2 is installed."""
import configparser
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import paddock_harness as h

V2 = "/usr/bin/aws"
V2_CONFIGPROVIDER = "/usr/lib/python3/dist-packages/awscli/botocore/configprovider.py"


def isolated_aws_env(home):
    env = dict(os.environ, HOME=home, AWS_SHARED_CREDENTIALS_FILE=os.path.join(home, ".aws", "credentials"),
               AWS_CONFIG_FILE=os.path.join(home, ".aws", "config"), AWS_PROFILE="paddock", AWS_PAGER="")
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION",
              "AWS_REGION", "AWS_ENDPOINT_URL", "AWS_DISABLE_HOST_PREFIX_INJECTION"):
        env.pop(k, None)
    return env


def v2_honours_the_key():
    try:
        with open(V2_CONFIGPROVIDER) as f:
            return "disable_host_prefix_injection" in f.read()
    except OSError:
        return False


class ProfileOnACustomEndpoint(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="paddock-awsprof-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        cls.env = isolated_aws_env(os.path.join(cls.tmp, "home"))
        cls.server = h.Server(os.path.join(cls.tmp, "proj", ".paddock"), mode="up", env=cls.env).start()
        cls.addClassCleanup(cls.server.stop)
        cfg = configparser.ConfigParser()
        cfg.read(cls.env["AWS_CONFIG_FILE"])
        cls.profile = cfg["profile paddock"]

    def aws(self, cli, *args, extra=(), timeout=60):
        return subprocess.run([cli, *extra, *args], env=self.env, capture_output=True, timeout=timeout)

    def test_the_profile_disables_host_prefix_injection(self):
        self.assertEqual(self.profile["endpoint_url"], self.server.endpoint)
        self.assertEqual(self.profile["disable_host_prefix_injection"], "true")

    def test_cli_v1_tails_a_log_group_through_the_profile(self):
        out = self.aws("aws", "logs", "create-log-group", "--log-group-name", "/prof/g")
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        self.aws("aws", "logs", "create-log-stream", "--log-group-name", "/prof/g", "--log-stream-name", "s")
        arn = json.loads(self.aws("aws", "logs", "describe-log-groups", "--log-group-name-prefix",
                                  "/prof/g").stdout)["logGroups"][0]["logGroupArn"]
        # The CLI prints each streamed event's message, one a line (awscli/customizations/logs).
        tail = subprocess.Popen(["aws", "logs", "start-live-tail", "--log-group-identifiers", arn],
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: (tail.kill(), tail.wait(), tail.stdout.close(), tail.stderr.close()))
        seen = threading.Event()

        def read():
            for line in tail.stdout:
                if line.startswith(b"through the profile"):
                    seen.set()
        threading.Thread(target=read, daemon=True).start()
        # Lines written before the session started are not tailed: write one every half second
        # until one shows.
        deadline = time.monotonic() + 20
        n = 0
        while not seen.wait(0.5) and time.monotonic() < deadline:
            self.assertIsNone(tail.poll(), tail.stderr.read().decode() if tail.poll() is not None else "")
            n += 1
            out = self.aws("aws", "logs", "put-log-events", "--log-group-name", "/prof/g", "--log-stream-name", "s",
                           "--log-events", f"timestamp={int(time.time() * 1000)},message=through the profile {n}")
            self.assertEqual(out.returncode, 0, out.stderr.decode())
        self.assertTrue(seen.is_set(), "start-live-tail printed no line written after it started")

    def assertReachesTheServer(self, out, host_prefix):
        err = out.stderr.decode()
        # The namespace does not exist: Cloud Map's own error from the server, not a DNS failure.
        self.assertNotEqual(out.returncode, 0)
        self.assertNotIn(f"{host_prefix}127.0.0.1", err)
        self.assertIn("(NamespaceNotFound)", err)
        self.assertIn("Namespace not found: n", err)

    def test_cli_v1_sends_a_prefixed_cloud_map_call_to_the_endpoint(self):
        args = ("servicediscovery", "discover-instances", "--namespace-name", "n", "--service-name", "s")
        out = self.aws("aws", *args)
        self.assertReachesTheServer(out, "data-")
        # The control: the environment overrides the profile, and then the prefix goes before the host.
        env = dict(self.env, AWS_DISABLE_HOST_PREFIX_INJECTION="false")
        out = subprocess.run(["aws", "--cli-connect-timeout", "5", *args], env=env, capture_output=True, timeout=60)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("data-127.0.0.1", out.stderr.decode())

    def test_cli_v2_through_the_profile(self):
        if not os.path.exists(V2):
            self.skipTest("no AWS CLI v2 at /usr/bin/aws")
        # v2 2.9 ignores the profile's endpoint_url too (README): it is given on the command line.
        endpoint = ("--endpoint-url", self.server.endpoint)
        out = self.aws(V2, "logs", "describe-log-groups", extra=endpoint)
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        out = self.aws(V2, "servicediscovery", "discover-instances", "--namespace-name", "n", "--service-name", "s",
                       "--cli-read-timeout", "5", "--cli-connect-timeout", "5", extra=endpoint)
        if v2_honours_the_key():
            self.assertReachesTheServer(out, "data-")
        else:
            # The limitation, pinned: this v2 puts the prefix before the endpoint's host whatever the profile says.
            self.assertNotEqual(out.returncode, 0)
            self.assertIn("data-127.0.0.1", out.stderr.decode())


if __name__ == "__main__":
    unittest.main()
