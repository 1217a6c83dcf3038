"""The web console (issue 17) end to end: headless Chromium (Debian's `chromium`, driven by
puppeteer-core from tests/console/e2e.mjs) against a `paddock up` of its own with real busybox tasks.

- `ConsoleUnits`: the console's SigV4 signer against AWS's published `get-vanilla` vector and
  against botocore's signatures of the console's own requests (JSON 1.1 with a target, a session
  token; the Query form of STS), and its event-stream decoder on frames built here (split anywhere,
  a bad CRC refused) — tests/console/unit.mjs runs the TypeScript sources bundled as they ship.
- `Console`: one server and one browser for the class; the tests run in order and build on each
  other: sign in (a wrong key shows the API's error), a service created through the API reaches
  steady state in the open page without a reload (the console's live updates), scale it from the
  console, stop a task and see its reason, follow a forced rolling update to COMPLETED, tail a task's
  logs live, see a deploy-platform deployment go Healthy, a phone-width page, and the tasks view's
  first render with 1,000 tasks (printed; a benchmark, not an assertion). Its server counts a
  RUNNING task without health checks healthy after 3 s (`[scheduler] settle_seconds`, AWS's 40 s by
  default), so a rollout the page follows completes in seconds.

Screenshots of each main view go to a temp directory the run prints (kept after the run).
PADDOCK_CONSOLE_DIST=<dist dir> serves that build of the console through
src/console/web/dev-proxy.mjs in front of the server instead of the binary's own /console (for
frontend work against a binary built before it). Needs node, chromium, `npm ci` in tests/console
and src/console/web, and for `Console` root, crun, nft, iptables and busybox-static."""

import concurrent.futures
import configparser
import datetime
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import zlib
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploy_harness as dh  # noqa: E402
import paddock_harness as h  # noqa: E402
import task_harness as th  # noqa: E402

CONSOLE_TESTS = os.path.join(h.REPO, "tests", "console")
WEB = os.path.join(h.REPO, "src", "console", "web")
CHROMIUM = os.environ.get("PADDOCK_CHROMIUM", "/usr/bin/chromium")


def node_skip_reason(browser=True):
    if shutil.which("node") is None:
        return "needs node"
    if not os.path.isdir(os.path.join(WEB, "node_modules", "esbuild")):
        return "needs `npm ci` in src/console/web"
    if browser:
        if not os.path.exists(CHROMIUM):
            return f"needs {CHROMIUM} (Debian's chromium)"
        if not os.path.isdir(os.path.join(CONSOLE_TESTS, "node_modules", "puppeteer-core")):
            return "needs `npm ci` in tests/console"
    return None


def console_skip_reason():
    return node_skip_reason() or th.skip_reason(tools=("crun", "nft", "iptables"))


# ----------------------------------------------------------------------------------------------
# the signer and the decoder


def run_units(cases):
    r = subprocess.run(["node", os.path.join(CONSOLE_TESTS, "unit.mjs")], input=json.dumps(cases),
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError(f"unit.mjs failed: {r.stderr}")
    return json.loads(r.stdout)


def frame(headers, payload, corrupt=False):
    """One event-stream message: string headers (type 7) and the payload, with both CRCs."""
    hb = b""
    for name, value in headers.items():
        n, v = name.encode(), value.encode()
        hb += bytes([len(n)]) + n + b"\x07" + struct.pack(">H", len(v)) + v
    total = 12 + len(hb) + len(payload) + 4
    prelude = struct.pack(">II", total, len(hb))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + hb + payload
    crc = zlib.crc32(body) ^ (1 if corrupt else 0)
    return body + struct.pack(">I", crc)


@unittest.skipIf(node_skip_reason(browser=False) is not None, node_skip_reason(browser=False) or "")
class ConsoleUnits(unittest.TestCase):

    def test_signer_matches_awss_get_vanilla_vector_and_botocore(self):
        import botocore.auth
        import botocore.awsrequest
        import botocore.credentials
        when = "2026-12-04T15:30:00Z"
        requests = [
            # (host, body, headers, creds, service)
            ("127.0.0.1:4566", '{"cluster":"default"}',
             {"content-type": "application/x-amz-json-1.1",
              "x-amz-target": "AmazonEC2ContainerServiceV20141113.ListServices"},
             {"accessKeyId": "AKIAEXAMPLE", "secretAccessKey": "s3cr3t/+key"}, "ecs"),
            ("console.example:8443", "{}",
             {"content-type": "application/x-amz-json-1.1", "x-amz-target": "PaddockConsole_20261204.WatchChanges"},
             {"accessKeyId": "ASIAEXAMPLE", "secretAccessKey": "other", "sessionToken": "tok/en+=="}, "paddock"),
            ("127.0.0.1:4566", "Action=GetSessionToken&Version=2011-06-15&DurationSeconds=3600",
             {"content-type": "application/x-www-form-urlencoded; charset=utf-8"},
             {"accessKeyId": "AKIAEXAMPLE", "secretAccessKey": "s3cr3t/+key"}, "sts"),
        ]
        cases = [{"method": "GET", "host": "example.amazonaws.com", "path": "/", "headers": {}, "body": "",
                  "creds": {"accessKeyId": "AKIDEXAMPLE", "secretAccessKey": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"},
                  "region": "us-east-1", "service": "service", "when": "2015-08-30T12:36:00Z"}]
        expected = ["AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
                    "SignedHeaders=host;x-amz-date, "
                    "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"]  # AWS's get-vanilla
        for host, body, headers, creds, service in requests:
            cases.append({"method": "POST", "host": host, "path": "/", "headers": headers, "body": body, "creds": creds,
                          "region": "us-east-1", "service": service, "when": when})
            req = botocore.awsrequest.AWSRequest(method="POST", url=f"http://{host}/", data=body.encode(),
                                                 headers=dict(headers))
            signer = botocore.auth.SigV4Auth(
                botocore.credentials.Credentials(creds["accessKeyId"], creds["secretAccessKey"], creds.get("sessionToken")),
                service, "us-east-1")
            with mock.patch("botocore.auth.get_current_datetime", return_value=datetime.datetime(2026, 12, 4, 15, 30)):
                signer.add_auth(req)
            self.assertEqual(req.headers["X-Amz-Date"], "20261204T153000Z")
            expected.append(req.headers["Authorization"])
        got = run_units({"sign": cases})["sign"]
        self.assertEqual([g["authorization"] for g in got], expected)
        self.assertEqual(got[2]["x-amz-security-token"], "tok/en+==")
        self.assertNotIn("host", got[1])  # the browser sends Host itself

    def test_decoder_reassembles_frames_split_anywhere_and_refuses_a_bad_crc(self):
        stream = (frame({":message-type": "event", ":event-type": "initial-response"}, b"{}")
                  + frame({":message-type": "event", ":event-type": "change", ":content-type": "application/json"},
                          b'{"sequence": 12, "kinds": ["ecs"]}'))
        pieces = [stream[i:i + 7] for i in range(0, len(stream), 7)]
        result = run_units({"frames": [
            {"chunks": [stream.hex()]},
            {"chunks": [p.hex() for p in pieces]},
            {"chunks": [frame({":event-type": "change"}, b"{}", corrupt=True).hex()]},
        ]})["frames"]
        want = [{"headers": {":message-type": "event", ":event-type": "initial-response"}, "payload": "{}"},
                {"headers": {":message-type": "event", ":event-type": "change", ":content-type": "application/json"},
                 "payload": '{"sequence": 12, "kinds": ["ecs"]}'}]
        self.assertEqual(result[0], want)
        self.assertEqual(result[1], want)
        self.assertIn("CRC", result[2]["error"])


# ----------------------------------------------------------------------------------------------
# the browser


class Browser:
    """tests/console/e2e.mjs: one headless Chromium page, a command per call."""

    def __init__(self, log_path, shots, width=1280, height=800):
        self.shots = shots
        self.log_path = log_path
        log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            ["node", os.path.join(CONSOLE_TESTS, "e2e.mjs"), "--chromium", CHROMIUM, "--width", str(width),
             "--height", str(height)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd=CONSOLE_TESTS)
        log.close()

    def __call__(self, cmd, limit=60, **args):
        """Runs `cmd` with `args`; its value, or AssertionError (with a screenshot) when it fails.
        `limit`: seconds to wait for the answer beyond the command's own timeout."""
        args["cmd"] = cmd
        self.proc.stdin.write((json.dumps(args) + "\n").encode())
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], limit + 30)
        if not ready:
            raise AssertionError(f"browser: no answer to {args} within {limit + 30}s")
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"browser exited: {h.log_tail(self.log_path, 3000)}")
        answer = json.loads(line)
        if not answer["ok"]:
            shot = os.path.join(self.shots, f"failure-{time.monotonic_ns()}.png")
            self.proc.stdin.write((json.dumps({"cmd": "screenshot", "path": shot}) + "\n").encode())
            self.proc.stdin.flush()
            self.proc.stdout.readline()
            main = self.text("main") if cmd != "text" else ""
            raise AssertionError(f"browser {args}: {answer['error']}; screenshot {shot}; page: {main[:1500]!r}")
        return answer["value"]

    def wait_gone(self, selector, text=None, timeout=30):
        """Until no element matching `selector` (whose text contains `text`) is in the page."""
        ms = int(timeout * 1000 * h.latency_scale())
        args = {"selector": selector, "timeout": ms}
        if text is not None:
            args["text"] = text
        return self("wait_gone", limit=ms / 1000, **args)

    def wait(self, selector, text=None, timeout=30):
        """Until an element matching `selector` (whose text contains `text`) is in the page."""
        ms = int(timeout * 1000 * h.latency_scale())
        args = {"selector": selector, "timeout": ms}
        if text is not None:
            args["text"] = text
        return self("wait", limit=ms / 1000, **args)

    def text(self, selector):
        return self("text", selector=selector)

    def eval(self, expr):
        return self("eval", expr=expr)

    def shot(self, name):
        path = os.path.join(self.shots, f"{name}.png")
        self("screenshot", path=path)
        return path

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b'{"cmd": "quit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def start_dev_proxy(dist, upstream, log_path):
    """src/console/web/dev-proxy.mjs serving `dist` in front of `upstream`: (process, its base URL)."""
    log = open(log_path, "wb")
    proc = subprocess.Popen(["node", os.path.join(WEB, "dev-proxy.mjs"), "--listen", "127.0.0.1:0", "--upstream",
                             upstream, "--dist", dist], stdout=subprocess.PIPE, stderr=log)
    log.close()
    line = proc.stdout.readline().decode()
    m = re.search(r"(http://\S+)", line)
    if not m:
        proc.kill()
        raise AssertionError(f"dev-proxy did not start: {line!r} {h.log_tail(log_path, 2000)}")
    return proc, m.group(1)


SPEC = """\
[project]
name = "shop"

[containers.web]
image = "busybox:v1"
port = 8080
health_check = { path = "/", interval = "2s", timeout = "1s" }

[deploy]
replicas = 1

[routes]
"/" = "web"
"""

TICKER = "i=0; while true; do echo tick $i; i=$((i+1)); sleep 1; done"


@unittest.skipIf(console_skip_reason() is not None, console_skip_reason() or "")
class Console(unittest.TestCase):
    """One `paddock up` and one browser page for the class; the tests run in order (test_1 … test_9)."""

    @classmethod
    def setUpClass(cls):
        cls.state_dir = dh.prepare_class(cls, "paddock-console-")
        cls.addClassCleanup(h.stop_leftover_tasks)
        cls.shots = tempfile.mkdtemp(prefix="paddock-console-shots-")
        print(f"\nconsole screenshots: {cls.shots}", file=sys.stderr)
        th.httpd_image(cls.state_dir, cls.tmp, "busybox:v1", "v1\n", applets=("sleep", "wget"))
        config = os.path.join(cls.tmp, "paddock.toml")
        with open(config, "w") as f:
            f.write("[scheduler]\nsettle_seconds = 3\n")
        cls.server = h.Server(cls.state_dir, mode="up", env=cls.env, extra_args=["--config", config]).start()
        # After the server stops (clean-ups run last first): whatever its stop left of the tasks'
        # networks (the VPC's router namespace) goes, even when no task's files are left.
        cls.addClassCleanup(subprocess.run, [h.paddock_bin(), "down", "--state-dir", cls.state_dir, "--timeout", "30"],
                            capture_output=True, timeout=90)
        cls.addClassCleanup(cls.server.stop)
        creds = configparser.ConfigParser()
        creds.read(os.path.join(cls.state_dir, "credentials"))
        section = creds[creds.sections()[0]]
        cls.key = (section["aws_access_key_id"], section["aws_secret_access_key"])
        cls.ecs = h.client("ecs", cls.server.endpoint, *cls.key)
        cls.logs = h.client("logs", cls.server.endpoint, *cls.key)
        cls.ec2 = h.client("ec2", cls.server.endpoint, *cls.key)
        cls.ecs.create_cluster(clusterName="default")
        # awslogs on Fargate needs an execution role (ECS refuses the task definition without one).
        iam = h.client("iam", cls.server.endpoint, *cls.key)
        cls.execution_role = iam.create_role(RoleName="console-test-execution",
                                             AssumeRolePolicyDocument=dh.TRUST)["Role"]["Arn"]
        iam.put_role_policy(RoleName="console-test-execution", PolicyName="logs", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Resource": "*",
                                                    "Action": ["logs:CreateLogStream", "logs:PutLogEvents"]}]}))
        cls.subnet = cls.ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        cls.base = cls.server.endpoint
        dist = os.environ.get("PADDOCK_CONSOLE_DIST")
        if dist:
            proc, cls.base = start_dev_proxy(dist, cls.server.endpoint, os.path.join(cls.tmp, "dev-proxy.log"))
            cls.addClassCleanup(lambda: (proc.kill(), proc.wait()))
        cls.browser = Browser(os.path.join(cls.tmp, "browser.log"), cls.shots)
        cls.addClassCleanup(cls.browser.close)

    # helpers

    def wait_until(self, what, predicate, timeout=60):
        deadline = time.monotonic() + timeout * h.latency_scale()
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                self.fail(f"{what} did not happen within {timeout}s: {self.server.log_tail(2000)}")
            time.sleep(0.1)

    def open(self, *segments):
        """Goes to a view by its hash, as a click on a link does (no reload)."""
        self.browser("hash", hash="#/" + "/".join(urllib.parse.quote(s, safe="") for s in segments))

    def mark_page(self):
        """Marks the loaded document: assert_not_reloaded() fails if a reload replaced it."""
        self.browser.eval("window.__consoleTestMark = 'kept'")

    def assert_not_reloaded(self):
        self.assertEqual(self.browser.eval("window.__consoleTestMark"), "kept", "the page was reloaded")

    def sign_in(self, key_id, secret):
        b = self.browser
        b("type", selector="#key-id", text=key_id)
        b("type", selector="#secret", text=secret)
        b("click", selector="button[type=submit]")

    def register_web(self, family="web", command=None, log_group=None):
        container = {"name": "web", "image": "busybox:v1", "stopTimeout": 2, "portMappings": [{"containerPort": 8080}]}
        if command:
            container["command"] = ["sh", "-c", command]
        if log_group:
            container["logConfiguration"] = {"logDriver": "awslogs", "options": {
                "awslogs-group": log_group, "awslogs-region": h.REGION, "awslogs-stream-prefix": "app"}}
        extra = {"executionRoleArn": self.execution_role} if log_group else {}
        return self.ecs.register_task_definition(
            **extra, family=family, networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[container])["taskDefinition"]["taskDefinitionArn"]

    def service(self, name="web"):
        return self.ecs.describe_services(cluster="default", services=[name])["services"][0]

    def deployment_rows(self):
        return self.browser.eval(
            "Array.from(document.querySelectorAll('#deployments tbody tr'))"
            ".map(r => [r.querySelector('th').innerText, r.dataset.status, r.dataset.rollout || ''])")

    # the scenarios

    def test_1_sign_in_shows_the_apis_error_for_a_wrong_key_and_keeps_only_a_session(self):
        b = self.browser
        b("goto", url=self.base + "/console/")
        b.wait("h2", "Sign in")
        b.shot("sign-in")
        self.sign_in(self.key[0], "not-the-secret")
        b.wait(".error", "SignatureDoesNotMatch")
        self.sign_in("AKIAAAAAAAAAAAAAAAAA", "whatever")
        b.wait(".error", "InvalidClientTokenId")
        self.sign_in(*self.key)
        b.wait("h1", "Clusters")
        b.wait("table th a", "default")
        b.wait(".live", "Live")
        stored = b.eval("JSON.stringify([Object.assign({}, sessionStorage), Object.assign({}, localStorage)])")
        self.assertNotIn(self.key[1], stored)
        session = json.loads(json.loads(stored)[0]["paddock-console-session"])
        self.assertTrue(session["accessKeyId"].startswith("ASIA"), session)
        self.assertTrue(session["sessionToken"])
        self.assertNotIn(self.key[1], b.eval("location.href"))
        b.shot("clusters")

    def test_2_a_service_created_through_the_api_reaches_steady_state_in_the_open_page(self):
        b = self.browser
        self.open("clusters", "default", "services", "web")
        b.wait("p", "No such service")
        self.mark_page()
        self.register_web()
        self.ecs.create_service(cluster="default", serviceName="web", taskDefinition="web", desiredCount=1,
                                launchType="FARGATE", networkConfiguration={"awsvpcConfiguration": {
                                    "subnets": [self.subnet], "assignPublicIp": "DISABLED"}})
        b.wait("#service-counts [data-field=running]", "1", timeout=60)
        b.wait("#deployments tr[data-rollout=COMPLETED]", timeout=60)
        b.wait("#events td", "has reached a steady state", timeout=60)
        self.assert_not_reloaded()
        b.shot("service")
        self.open("clusters", "default")
        b.wait("table th a", "web")
        b.wait("h2", "Container instances")
        b.shot("cluster")

    def test_3_scale_the_service_from_the_console(self):
        b = self.browser
        self.open("clusters", "default", "services", "web")
        b.wait("#desired-count")
        b("type", selector="#desired-count", text="2")
        b("click", selector="#scale")
        self.wait_until("desiredCount 2", lambda: self.service()["desiredCount"] == 2, timeout=10)
        b.wait("#service-counts [data-field=running]", "2", timeout=60)
        b.wait("#service-counts [data-field=desired]", "2")

    def test_4_stop_a_task_from_the_console_and_see_its_reason(self):
        b = self.browser
        arn = self.ecs.list_tasks(cluster="default", serviceName="web")["taskArns"][0]
        task_id = arn.rsplit("/", 1)[1]
        self.open("clusters", "default", "tasks")
        b.wait("#tasks th a", task_id)
        b.shot("tasks")
        b("click", selector="#tasks th a", text=task_id)
        b.wait("h1", f"Task {task_id}")
        b.wait("#stop-reason")
        b("type", selector="#stop-reason", text="stopped from the console <b>test</b>")
        b("click", selector="#stop-task")
        b("click", selector=".confirm button", text="Confirm")
        b.wait("#task-facts [data-field=stoppedReason]", "stopped from the console <b>test</b>", timeout=30)
        b.wait("#task-facts [data-field=lastStatus]", "STOPPED", timeout=60)
        b.wait("#task-facts [data-field=stopCode]", "UserInitiated")
        task = self.ecs.describe_tasks(cluster="default", tasks=[arn])["tasks"][0]
        self.assertEqual(task["stoppedReason"], "stopped from the console <b>test</b>")
        self.assertEqual(b.eval("document.querySelectorAll('#task-facts b').length"), 0)  # text, not markup
        b.shot("task-stopped")

    def test_5_follow_a_forced_rolling_update_to_completed(self):
        b = self.browser
        self.wait_until("the service back at 2 running", lambda: self.service()["runningCount"] == 2
                        and len(self.service()["deployments"]) == 1)
        before = self.service()["deployments"][0]["id"]
        self.open("clusters", "default", "services", "web")
        b.wait("#deployments th", before)
        self.mark_page()
        b("click", selector="#force-deploy")
        b("click", selector=".confirm button", text="Confirm")
        seen = set()  # (a new deployment?, status, rolloutState) of every row the page showed
        deadline = time.monotonic() + 90 * h.latency_scale()
        while True:
            rows = self.deployment_rows()
            seen.update((row[0] != before, row[1], row[2]) for row in rows)
            if rows and all(r[0] != before for r in rows) and (True, "PRIMARY", "COMPLETED") in seen:
                break
            if time.monotonic() > deadline:
                self.fail(f"the rollout did not complete in the page: {rows} seen {seen}")
            time.sleep(0.1)
        self.assertIn((True, "PRIMARY", "IN_PROGRESS"), seen)
        self.assertTrue(any(not new and status == "ACTIVE" for new, status, _ in seen), seen)
        self.assert_not_reloaded()
        b.shot("rolling-update")

    def test_6_tail_a_tasks_logs_live(self):
        b = self.browser
        self.logs.create_log_group(logGroupName="/console/ticker")
        self.register_web("ticker", command=TICKER, log_group="/console/ticker")
        arn = self.ecs.run_task(cluster="default", taskDefinition="ticker", launchType="FARGATE",
                                networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})["tasks"][0]["taskArn"]
        self.addCleanup(th.stop_quietly, self.ecs, "default", arn)
        task_id = arn.rsplit("/", 1)[1]
        self.open("clusters", "default", "tasks", task_id)
        b.wait("p", f"app/web/{task_id}")
        b.wait(".log-line", "tick 1", timeout=60)
        self.mark_page()
        shown = b.eval("Array.from(document.querySelectorAll('.log-line .log-message')).map(e => e.innerText)")
        last = max(int(m.group(1)) for m in (re.match(r"tick (\d+)", s) for s in shown) if m)
        b.wait(".log-line .log-message", f"tick {last + 2}", timeout=30)
        self.assert_not_reloaded()
        b.shot("task-log-tail")
        self.open("logs", "/console/ticker")
        b.wait(".log-line", "tick", timeout=30)
        b("type", selector="#filter-pattern", text='"tick 1"')
        b("click", selector="form[role=search] button[type=submit]")
        b.wait("[aria-label='Filtered lines'] .log-line", "tick 1")
        b.shot("log-group")

    def test_7_a_deployment_goes_healthy_in_the_deploy_view(self):
        b = self.browser
        with open(os.path.join(self.tmp, "paddock.toml"), "w") as f:
            f.write(SPEC)
        self.open("deploy")
        b.wait("h1", "Deployments")
        self.mark_page()
        r = subprocess.run([h.paddock_bin(), "deploy"], capture_output=True, text=True, env=self.env, cwd=self.tmp,
                           timeout=120, input="")
        self.assertEqual(r.returncode, 0, f"paddock deploy: {r.stdout} {r.stderr} {self.server.log_tail(2000)}")
        deployment = r.stdout.strip()
        self.assertRegex(deployment, r"^\d{8}-\d{6}-[a-z0-9]{4}$", r.stderr)
        type(self).deployment = deployment
        b.wait("#deployments th a", deployment, timeout=30)
        b("click", selector="#deployments th a", text=deployment)
        b.wait("#deployment-facts [data-field=state]", "Healthy", timeout=120)
        b.wait("#deployment-events li", "Healthy")
        self.assert_not_reloaded()
        b.shot("deployment")
        self.open("edge")
        b.wait("h2", "Routers")
        b.shot("edge")

    def test_7b_redeploy_and_stop_a_deployment_from_the_console(self):
        b = self.browser
        first = self.deployment
        self.open("deploy", first)
        b.wait("#deployment-facts [data-field=state]", "Healthy")
        b("click", selector="#redeploy")
        b("click", selector=".confirm button", text="Confirm")
        b.wait("[role=status] a")
        second = b.text("[role=status] a")
        self.assertNotEqual(second, first)
        b("click", selector="[role=status] a")
        b.wait("h1", f"Deployment {second}")
        b.wait("#deployment-facts dd", first)  # its From
        b("click", selector="#stop-deployment")
        b("click", selector=".confirm button", text="Confirm")
        b.wait("#deployment-facts [data-field=state]", "Stopped", timeout=30)
        b("click", selector="#stop-deployment")
        b("click", selector=".confirm button", text="Confirm")
        b.wait(".error", "ConflictException")  # a finished deployment cannot stop again: the API's refusal

    def test_7c_task_definitions_diff_run_and_deregister(self):
        b = self.browser
        self.ecs.register_task_definition(
            family="web", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "web", "image": "busybox:v1", "stopTimeout": 2,
                                   "portMappings": [{"containerPort": 8080}],
                                   "environment": [{"name": "VERSION", "value": "2"}]}])
        self.open("taskdefs", "web")
        b.wait("h2", "Revision 2")
        b("click", selector="summary", text="Compare two revisions")
        b.wait(".diff .add", '"value": "2"')
        b("click", selector="summary", text="Run a task")
        b.wait("#run-subnet option", self.subnet)
        b("click", selector="#run-task")
        b.wait("[aria-label='Run task results'] a")
        task_id = b.text("[aria-label='Run task results'] a")
        task = self.ecs.describe_tasks(cluster="default", tasks=[task_id])["tasks"][0]
        self.addCleanup(th.stop_quietly, self.ecs, "default", task["taskArn"])
        self.assertTrue(task["taskDefinitionArn"].endswith("/web:2"), task["taskDefinitionArn"])
        b.shot("task-definition")
        self.open("taskdefs", "web", "2")
        b.wait("h2", "Revision 2")
        b("click", selector="#deregister")
        b("click", selector=".confirm button", text="Confirm")
        self.wait_until("revision 2 inactive", lambda: self.ecs.describe_task_definition(
            taskDefinition="web:2")["taskDefinition"]["status"] == "INACTIVE", timeout=10)
        b.wait_gone(".list.inline a", "web:2")

    def test_7d_parameters_are_hidden_until_asked_and_decrypted_only_on_a_click(self):
        b = self.browser
        ssm = h.client("ssm", self.server.endpoint, *self.key)
        ssm.put_parameter(Name="/console/plain", Value="plain-value", Type="String")
        ssm.put_parameter(Name="/console/secret", Value="s3cret-value", Type="SecureString")
        self.open("parameters")
        b.wait("tbody th", "/console/secret")
        self.assertNotIn("s3cret-value", b.text("main"))
        self.assertNotIn("plain-value", b.text("main"))
        b("click", selector="button[aria-label='Show /console/plain']")
        b.wait("code.value", "plain-value")
        self.assertNotIn("s3cret-value", b.text("main"))
        b("click", selector="button[aria-label='Decrypt /console/secret']")
        b.wait("code.value", "s3cret-value")
        b.shot("parameters")

    def test_8_a_phone_width_page_collapses_its_navigation_and_scrolls_tables_inside_their_box(self):
        b = self.browser
        b("viewport", width=390, height=844)
        try:
            self.open("clusters", "default", "services", "web")
            b.wait("#deployments")
            self.assertFalse(b.eval("document.querySelector('#nav').offsetParent !== null"))
            b("click", selector=".nav-toggle")
            b.wait("#nav.open a", "Logs")
            self.assertTrue(b.eval("document.querySelector('#nav').offsetParent !== null"))
            b("click", selector=".nav-toggle")
            # The page itself never scrolls sideways; a wide table scrolls inside its box.
            self.assertLessEqual(b.eval("document.documentElement.scrollWidth"), 390)
            b.shot("service-phone")
        finally:
            b("viewport", width=1280, height=800)

    def test_9_the_tasks_views_first_render_with_1000_tasks_reloaded_six_times(self):
        """1,000 tasks on an instance no agent runs (they stay PENDING): the tasks view's first render
        and paint with rows, from navigation start, printed (docs/benchmarks.md). Six loads in a row:
        each ends its page's streams, so none waits for a connection the last one's stream held (the
        fifth did, ~55 s, before pages ended them on pagehide). The first load comes from another
        page (about:blank), the others are reloads."""
        b = self.browser
        self.ecs.create_cluster(clusterName="big")
        doc = json.dumps({"availabilityZone": "us-east-1a", "instanceType": "m5.24xlarge"})
        self.ecs.register_container_instance(
            cluster="big", instanceIdentityDocument=doc,
            totalResources=[{"name": "CPU", "type": "INTEGER", "integerValue": 1_000_000},
                            {"name": "MEMORY", "type": "INTEGER", "integerValue": 1_000_000}],
            attributes=[{"name": "com.amazonaws.ecs.capability.docker-remote-api.1.21"}])
        self.ecs.register_task_definition(family="tiny", networkMode="bridge", requiresCompatibilities=["EC2"],
                                          containerDefinitions=[{"name": "t", "image": "busybox:v1", "cpu": 1,
                                                                 "memory": 6}])
        ecs = [h.client("ecs", self.server.endpoint, *self.key) for _ in range(4)]

        def run(i):
            r = ecs[i % 4].run_task(cluster="big", taskDefinition="tiny", launchType="EC2", count=10)
            return len(r["tasks"])
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            self.assertEqual(sum(pool.map(run, range(100))), 1000)
        url = self.base + "/console/#/clusters/big/tasks"
        results = []
        b("goto", url="about:blank")
        b("goto", url=url)
        for i in range(6):
            if i:
                b("reload")  # a new document each time: the measures start at its navigation
            b.wait("#tasks tbody tr", timeout=30)
            b.wait("#task-count", "1000 of 1000 tasks", timeout=60)
            results.append(self.wait_until("the first-render measures", lambda: b.eval(
                "(() => { const m = n => performance.getEntriesByName(n, 'measure')[0]?.duration;"
                " const r = [m('tasks-first-render'), m('tasks-first-render-from-view'), m('tasks-first-paint')];"
                " const doc = performance.getEntriesByType('navigation')[0].responseEnd;"
                " const app = performance.getEntriesByName('app-start', 'mark')[0].startTime;"
                " return r.every(x => x !== undefined) ? r.concat([doc, app, document.querySelectorAll('#tasks tbody tr').length,"
                " document.getElementsByTagName('*').length]) : null; })()"), timeout=10))
        b.shot("tasks-1000")
        for render, from_view, paint, doc, app, rows, elements in results:
            self.assertEqual(rows, 100)
            self.assertLess(from_view, 10_000 * h.latency_scale(), "the view waited for a connection")
            print(f"\ntasks view, 1,000 tasks: first rows in the DOM {render:.0f} ms after navigation start "
                  f"({from_view:.0f} ms after the view mounted; the page had arrived at {doc:.0f} ms and the "
                  f"script started at {app:.0f} ms), painted at {paint:.0f} ms; {rows} rows, {elements} elements",
                  file=sys.stderr)
        problems = b("problems")
        self.assertEqual(problems, [], problems)


if __name__ == "__main__":
    unittest.main()
