"""Standalone deploy controllers for the multi-process tests (issue 15): an endpoint's facts the
controller is given (`Backend`), one `paddock controller` process with its call log and the CLI
pointed at it (`Controller`), and a proxy between a controller and its endpoint that SIGKILLs the
controller at a chosen call (`KillingProxy`).

    backend = Backend("paddock", server.endpoint, key, server.log_tail)
    ctl = Controller(test, backend, os.path.join(tmp, "run-1"))
    d1 = ctl.deploy(SPEC.format(...))
    ctl.wait_state(d1, "Healthy")
"""

import http.client
import http.server
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.request

import paddock_harness as h

TRUST = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"}, "Action": "sts:AssumeRole"}]})

# The controller's AWS writes (everything else it calls is a read).
WRITES = {"RegisterTaskDefinition", "CreateService", "UpdateService", "DeleteService", "TagResource", "CreateCluster",
          "PutParameter", "DeleteParameters", "DeregisterTaskDefinition", "DeleteTaskDefinitions"}


def prepare_class(cls, prefix):
    """A test class's temp directory (removed after it), a HOME of its own in `cls.env` (no AWS_*
    variable, no XDG_CONFIG_HOME, so no user's config leaks in) and an empty state directory,
    whose path it returns."""
    cls.tmp = tempfile.mkdtemp(prefix=prefix)
    cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
    home = os.path.join(cls.tmp, "home")
    os.makedirs(home)
    cls.env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "XDG_CONFIG_HOME"}
    cls.env["HOME"] = home
    state_dir = os.path.join(cls.tmp, "state")
    os.makedirs(state_dir)
    return state_dir


class Backend:
    """An endpoint the controller runs against: its key, its cluster `default`, the default VPC's
    subnets and security group (what the controller is given), an execution role, and how to read
    its failure. `role_policy`: an inline policy for the execution role (what its tasks' secrets and
    logs need on an endpoint that evaluates it); None: none."""

    def __init__(self, name, endpoint, key, log_tail, ecs=None, role_policy=None):
        self.name, self.endpoint, self.key, self.log_tail = name, endpoint, key, log_tail
        ec2 = h.client("ec2", endpoint, *key)
        vpc = [v for v in ec2.describe_vpcs()["Vpcs"] if v.get("IsDefault")][0]["VpcId"]
        self.subnets = [s["SubnetId"] for s in ec2.describe_subnets(
            Filters=[{"Name": "vpc-id", "Values": [vpc]}])["Subnets"]][:1]
        self.security_group = ec2.describe_security_groups(Filters=[
            {"Name": "vpc-id", "Values": [vpc]}, {"Name": "group-name", "Values": ["default"]}])[
            "SecurityGroups"][0]["GroupId"]
        self.ecs = ecs or h.client("ecs", endpoint, *key)
        self.ecs.create_cluster(clusterName="default")
        # Secrets need an execution role (ECS refuses a task definition with secrets and none).
        iam = h.client("iam", endpoint, *key)
        self.execution_role = iam.create_role(RoleName="deploy-test-execution", AssumeRolePolicyDocument=TRUST)[
            "Role"]["Arn"]
        if role_policy is not None:
            iam.put_role_policy(RoleName="deploy-test-execution", PolicyName="test",
                                PolicyDocument=json.dumps(role_policy))


class Controller:
    """One `paddock controller --call-log` against `backend` (or `endpoint`, e.g. a proxy in front of
    it), with its state in `state_dir` (default: <work_dir>/controller; two replicas share one), and
    the CLI pointed at it. Stopped (SIGTERM) at the test's end if still running."""

    def __init__(self, test, backend, work_dir, extra=(), endpoint=None, state_dir=None):
        self.test, self.backend = test, backend
        os.makedirs(work_dir, exist_ok=True)
        self.work_dir = work_dir
        self.call_log = os.path.join(work_dir, "calls.jsonl")
        creds = os.path.join(work_dir, "credentials")
        with open(creds, "w") as f:
            f.write(f"[paddock]\naws_access_key_id = {backend.key[0]}\naws_secret_access_key = {backend.key[1]}\n")
        state = state_dir or os.path.join(work_dir, "controller")
        self.stdout_path = os.path.join(work_dir, "controller.out")
        self.stderr_path = os.path.join(work_dir, "controller.err")
        args = [h.paddock_bin(), "controller", "--endpoint", endpoint or backend.endpoint, "--credentials", creds,
                "--listen", "127.0.0.1:0", "--state-dir", state, "--interval", "1s", "--drain", "1s",
                "--call-log", self.call_log, "--security-group", backend.security_group,
                "--execution-role-arn", backend.execution_role, *extra]
        for s in backend.subnets:
            args += ["--subnet", s]
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(args, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         env=test.env, cwd=work_dir)
        test.addCleanup(self.stop)
        deadline = time.monotonic() + 20
        while True:
            with open(self.stdout_path) as f:
                m = re.search(r" on (http://127\.0\.0\.1:\d+) ", f.read())
            if m:
                self.url = m.group(1)
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                test.fail(f"paddock controller did not start: {self.context()}")
            time.sleep(0.05)
        with open(os.path.join(state, "controller.token")) as f:
            self.token = f.read().strip()
        self.ids = []

    def context(self):
        shown = []
        for d in self.ids:
            try:
                shown.append(json.dumps({k: v for k, v in self.show(d).items()
                                         if k in ("id", "state", "reason", "retired")}))
            except OSError as e:
                shown.append(f"{d}: {e!r}")
        return (f"\ndeployments: {shown}\ncalls: {h.log_tail(self.call_log, 3000)}"
                f"\ncontroller stderr ({self.backend.name}): {h.log_tail(self.stderr_path, 3000)}"
                f"\n{self.backend.name}'s log: {self.backend.log_tail(3000)}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def paddock(self, *args):
        env = dict(self.test.env, PADDOCK_DEPLOY_URL=self.url, PADDOCK_DEPLOY_TOKEN=self.token)
        r = subprocess.run([h.paddock_bin(), *args], capture_output=True, text=True, env=env, timeout=60,
                           cwd=self.work_dir, stdin=subprocess.DEVNULL)
        self.test.assertEqual(r.returncode, 0, f"paddock {args}: {r.stdout} {r.stderr} {self.context()}")
        return r.stdout

    def deploy(self, spec):
        path = os.path.join(self.work_dir, "paddock.toml")
        with open(path, "w") as f:
            f.write(spec)
        self.ids.append(self.paddock("deploy", "-f", path).strip())
        return self.ids[-1]

    def show(self, deployment):
        req = urllib.request.Request(f"{self.url}/v1/deployments/{deployment}",
                                     headers={"Authorization": "Bearer " + self.token})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.load(resp)

    def wait_until(self, what, predicate, timeout=60):
        deadline = time.monotonic() + timeout * h.latency_scale()
        while not predicate():
            if time.monotonic() > deadline:
                self.test.fail(f"{what} did not happen within {timeout}s on {self.backend.name}: {self.context()}")
            time.sleep(0.1)

    def wait_state(self, deployment, state, timeout=60):
        """Waits until the deployment is in `state`; fails at once when it ends in another."""
        def reached():
            d = self.show(deployment)
            if d["state"] != state and d["state"] in ("Failed", "Stopped", "Expired", "Superseded"):
                self.test.fail(f"{deployment} is {d['state']} ({d.get('reason')}), not {state}: {self.context()}")
            return d["state"] == state
        self.wait_until(f"{deployment} to be {state}", reached, timeout)

    def calls(self):
        """The log's calls, each deployment id replaced by D1, D2, ... in the order they were made."""
        if not os.path.exists(self.call_log):
            return []
        with open(self.call_log) as f:
            text = f.read()
        for i, d in enumerate(self.ids):
            text = text.replace(d, f"D{i + 1}")
        return [json.loads(line) for line in text.splitlines()]


def action_of(headers, body):
    """The AWS action a request names: X-Amz-Target's (JSON protocols) or the form's Action (Query)."""
    target = headers.get("X-Amz-Target")
    if target:
        return target.rsplit(".", 1)[-1]
    m = re.search(rb"(?:^|&)Action=([A-Za-z]+)", body or b"")
    return m.group(1).decode() if m else ""


class KillingProxy:
    """An HTTP proxy on 127.0.0.1:0 in front of `upstream` (http://HOST:PORT) that records every call's
    action and, once armed, SIGKILLs a process at the `nth` call of `action`: `when="answered"` after
    the upstream did it and answered (the caller never learns it happened), `when="sent"` before the
    request reaches the upstream (it never happens). The killed call's connection is closed with no
    answer; the proxy forwards everything else, before and after.

        proxy = KillingProxy(server.endpoint)
        proxy.arm("CreateService", "answered", pid_of=lambda: ctl.proc.pid)
    """

    def __init__(self, upstream, tls=None):
        """`tls`: (certificate file, key file) to serve HTTPS with; its endpoint is then https://."""
        m = re.match(r"http://([^:/]+):(\d+)", upstream)
        self.upstream = (m.group(1), int(m.group(2)))
        self.actions = []  # (action, status or None when killed before the upstream)
        self.lock = threading.Lock()
        self.armed = None
        self.killed = threading.Event()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                proxy.forward(self)

            def do_GET(self):
                proxy.forward(self)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        scheme = "http"
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.endpoint = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def arm(self, action, when, pid_of, nth=1):
        assert when in ("answered", "sent")
        with self.lock:
            self.armed = {"action": action, "when": when, "pid_of": pid_of, "left": nth}
            self.killed.clear()

    def _due(self, action, when):
        with self.lock:
            a = self.armed
            if a is None or a["action"] != action or a["when"] != when:
                return None
            a["left"] -= 1
            if a["left"] > 0:
                return None
            self.armed = None
            return a["pid_of"]()

    def _kill(self, pid):
        os.kill(pid, signal.SIGKILL)
        self.killed.set()

    def forward(self, req):
        length = int(req.headers.get("Content-Length") or 0)
        body = req.rfile.read(length) if length else b""
        action = action_of(req.headers, body)
        pid = self._due(action, "sent")
        if pid is not None:
            with self.lock:
                self.actions.append((action, None))
            self._kill(pid)
            req.close_connection = True
            return
        conn = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            headers = {k: v for k, v in req.headers.items() if k.lower() not in ("connection", "keep-alive")}
            conn.request(req.command, req.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            status, reason, resp_headers = resp.status, resp.reason, resp.getheaders()
        finally:
            conn.close()
        with self.lock:
            self.actions.append((action, status))
        pid = self._due(action, "answered")
        if pid is not None:
            self._kill(pid)
            req.close_connection = True
            return
        req.send_response_only(status, reason)
        for k, v in resp_headers:
            if k.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length"):
                req.send_header(k, v)
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data)

    def calls_since(self, mark):
        with self.lock:
            return list(self.actions[mark:])

    def mark(self):
        with self.lock:
            return len(self.actions)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
