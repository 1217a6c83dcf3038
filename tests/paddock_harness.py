"""Shared helpers for Paddock's multi-process tests (standard library unittest + boto3 only).

- `Server`: starts `paddock server` (or `paddock up`) on port 0 in a state dir, parses the
  listening line from stdout, stops it with SIGTERM (or SIGKILL) by PID.
- `admin(...)`: runs `paddock admin --state-dir DIR ...` and returns the parsed JSON lines.
- `ShapeValidator` / `validate_output`: STRICT validation of a raw JSON response body against
  botocore's output shape (unknown keys, wrong types, missing required members, bad enums fail).
- `ecs_client(...)`: a boto3 ECS client whose every successful response is validated from the
  RAW HTTP body (botocore's parser silently drops unknown keys, so parsed dicts prove nothing).
- `RawSigner`: signs raw requests with botocore's SigV4Auth, for hand-made bodies.
- `PaddockTestCase`: a TestCase with one server, one account and one key per test class.
"""

import datetime
import http.client
import hashlib
import json
import os
import re
import signal
import socket
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock



def relay(a, b):
    """Copies bytes both ways between connected sockets `a` and `b` on two daemon threads, until
    either side ends; then both are shut down (a test's TCP proxies)."""
    def pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    for src, dst in ((a, b), (b, a)):
        threading.Thread(target=pump, args=(src, dst), daemon=True).start()

def _missing_clients():
    """What this python3 lacks of what the tests drive the server with ("" when nothing)."""
    missing = []
    for name in ("boto3", "botocore"):
        try:
            module = __import__(name)
        except ImportError:
            missing.append(f"{name} (not installed)")
            continue
        if tuple(int(p) for p in module.__version__.split(".")[:2] if p.isdigit()) < (1, 40):
            missing.append(f"{name} >= 1.40 (it has {module.__version__})")
    return ", ".join(missing)


# Every test module imports this one before boto3, so on a python3 without current clients (Debian
# 12's own) each module is reported skipped, with what to do, rather than failing with a traceback.
if _missing_clients():
    raise unittest.SkipTest(f"{sys.executable} lacks {_missing_clients()}: scripts/python-env finds or makes a "
                            "python3 that has them (scripts/test uses it)")

import boto3  # noqa: E402
import botocore.auth  # noqa: E402
import botocore.awsrequest  # noqa: E402
import botocore.credentials  # noqa: E402
import botocore.session  # noqa: E402
from botocore.config import Config  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGION = "us-east-1"
TARGET_PREFIX = "AmazonEC2ContainerServiceV20141113"
JSON_CT = "application/x-amz-json-1.1"


def paddock_bin():
    env = os.environ.get("PADDOCK_BIN")
    if env:
        return env
    for rel in ("build/release/src/cli/paddock", "build/dev/src/cli/paddock"):
        p = os.path.join(REPO, rel)
        if os.path.exists(p):
            return p
    raise unittest.SkipTest("paddock binary not found; set PADDOCK_BIN")


def latency_scale():
    """How much slower than a release build the binary under test runs: a sanitizer build (scripts/test
    runs the suite against build/asan and build/tsan too) gets more time for a latency requirement, so
    the release run enforces the requirement and the sanitizer runs look for memory and thread errors."""
    path = os.environ.get("PADDOCK_BIN", "")
    if "/build/tsan/" in path:
        return 5.0
    if "/build/asan/" in path:
        return 3.0
    return 1.0


# ----------------------------------------------------------------------------------------------
# processes


def log_tail(path, n):
    """The last `n` bytes of the log file at `path` as text ("" when it cannot be read): what a test
    appends to a failure about a process it started (`Server`, and the `paddock agent` and `paddock
    edge` wrappers of test_remote_agent.py and test_edge.py)."""
    try:
        with open(path, "rb") as f:
            return f.read()[-n:].decode("utf-8", "replace")
    except OSError:
        return ""


# Every state directory a Server of this process has run on: stop_leftover_tasks() takes down what
# their tasks left on the host.
_STATE_DIRS_RUN = []


def stop_leftover_tasks():
    """`paddock down` on each state directory a Server ran on that still holds a task's files (a test
    that ended with tasks running, or killed its server): their containers, namespaces and routes go
    with them, and a later test's task given the same address is not answered by one of them. Runs
    once no server is left on the directory (class clean-ups stop them first)."""
    while _STATE_DIRS_RUN:
        state_dir = _STATE_DIRS_RUN.pop()
        tasks = os.path.join(state_dir, "tasks")
        if not os.path.isdir(tasks) or not os.listdir(tasks):
            continue
        r = subprocess.run([paddock_bin(), "down", "--state-dir", state_dir, "--timeout", "60"],
                           capture_output=True, timeout=120)
        if r.returncode != 0:
            print(f"paddock down --state-dir {state_dir}: exit {r.returncode}: {r.stdout.decode()!r} "
                  f"{r.stderr.decode()[-2000:]!r}", file=sys.stderr)


def store_args(state_dir):
    """`--store URL` when the suite runs on PostgreSQL (PADDOCK_TEST_STORE=postgres; issue 16): a
    database of its own for each state directory, on one PostgreSQL per test process."""
    if os.environ.get("PADDOCK_TEST_STORE") != "postgres":
        return []
    import pg_harness
    name = "s_" + hashlib.sha1(os.path.abspath(state_dir).encode()).hexdigest()[:16]
    return ["--store", pg_harness.shared().database(name)]


def share_node_key(from_state_dir, to_state_dir):
    """Servers of one store seal with one node key (docs/scaling.md, "Several servers"; a server with
    another is refused): copies `from_state_dir`'s keys/master.key into `to_state_dir`, unless it
    has one, keeping the modes the key ring requires (0700 directory, 0600 file)."""
    src = os.path.join(from_state_dir, "keys", "master.key")
    dst_dir = os.path.join(to_state_dir, "keys")
    if os.path.exists(os.path.join(dst_dir, "master.key")):
        return
    os.makedirs(dst_dir, mode=0o700, exist_ok=True)
    shutil.copy2(src, os.path.join(dst_dir, "master.key"))


class Server:
    """One `paddock server` (or `paddock up`) process on 127.0.0.1:0."""

    LISTEN_PREFIX = "paddock server listening on http://"

    def __init__(self, state_dir, extra_args=(), mode="server", env=None, start_timeout=20, listen="127.0.0.1:0",
                 short_timings=True, prefix=()):
        self.state_dir = state_dir
        self.prefix = list(prefix)  # e.g. ["nsenter", "--net=/var/run/netns/H"]: a simulated host
        self.short_timings = short_timings  # --short-timings: timings below ECS's minimums accepted
        self.listen = listen  # the endpoint below is still 127.0.0.1:<port> (0.0.0.0 includes it)
        self.extra_args = list(extra_args)
        self.mode = mode
        self.env = env
        self.start_timeout = start_timeout
        self.proc = None
        self.port = None
        self._log_path = None
        self._drain = None

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        os.makedirs(self.state_dir, exist_ok=True)
        if self.state_dir not in _STATE_DIRS_RUN:
            _STATE_DIRS_RUN.append(self.state_dir)
        self._log_path = os.path.join(
            os.path.dirname(self.state_dir.rstrip("/")), f"server-{os.getpid()}-{time.monotonic_ns()}.log")
        log = open(self._log_path, "wb")
        args = [paddock_bin(), self.mode, "--listen", self.listen, "--state-dir", self.state_dir]
        if self.mode in ("server", "up") and "--store" not in self.extra_args:
            args += store_args(self.state_dir)
        if self.mode in ("server", "up") and self.short_timings:
            # Restart and health-check tests use 1 s timings, below ECS's minimums (test mode).
            args.append("--short-timings")
        if self.mode == "up" and not any(a in ("--edge-web", "--edge-api", "--no-edge") for a in self.extra_args):
            # `paddock up`'s edge on ports of its own, never the default 8000/8081 others may hold.
            args += ["--edge-web", "127.0.0.1:0", "--edge-api", "127.0.0.1:0"]
        self.proc = subprocess.Popen(self.prefix + args + self.extra_args, stdout=subprocess.PIPE, stderr=log,
                                     stdin=subprocess.DEVNULL, env=self.env)
        log.close()
        # Read lines until the listening line; a watchdog kills the process if it never comes.
        timer = threading.Timer(self.start_timeout, self._kill_quietly)
        timer.start()
        lines = []
        try:
            while True:
                line = self.proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"paddock {self.mode} exited before listening: "
                                       f"stdout={lines!r} stderr={self.log_tail()!r}")
                text = line.decode("utf-8", "replace").strip()
                lines.append(text)
                # `server` prints "paddock server listening on http://H:P"; `up` prints a
                # banner with "  endpoint     http://H:P".
                if text.startswith(self.LISTEN_PREFIX) or (
                        self.mode == "up" and text.startswith("endpoint") and "http://" in text):
                    self.port = int(text.rsplit(":", 1)[1].strip().rstrip("/"))
                    break
        finally:
            timer.cancel()
        self.stdout_lines = lines
        # Keep draining stdout so the server never blocks on a full pipe.
        self._drain = threading.Thread(target=self._drain_stdout, daemon=True)
        self._drain.start()
        return self

    def edge_ports(self, timeout=10):
        """`paddock up`'s edge: (web port, API port), from its banner line
        `  edge         http://127.0.0.1:P (API http://127.0.0.1:Q/api/overview, dashboard ...)`."""
        deadline = time.monotonic() + timeout
        while True:
            for line in list(self.stdout_lines):
                m = re.match(r"\s*edge\s+http://[^:]+:(\d+) \(API http://[^:]+:(\d+)/", line)
                if m:
                    return int(m.group(1)), int(m.group(2))
            if time.monotonic() > deadline:
                raise AssertionError(f"no edge line in {self.stdout_lines!r}: {self.log_tail()}")
            time.sleep(0.02)

    def edge_tls_port(self, timeout=10):
        """`paddock up --edge-websecure`'s port, from its banner line `  edge (TLS)   https://HOST:P`."""
        deadline = time.monotonic() + timeout
        while True:
            for line in list(self.stdout_lines):
                m = re.match(r"\s*edge \(TLS\)\s+https://[^:]+:(\d+)", line)
                if m:
                    return int(m.group(1))
            if time.monotonic() > deadline:
                raise AssertionError(f"no edge (TLS) line in {self.stdout_lines!r}: {self.log_tail()}")
            time.sleep(0.02)

    def _drain_stdout(self):
        try:
            for line in self.proc.stdout:
                self.stdout_lines.append(line.decode("utf-8", "replace").rstrip())
        except (ValueError, OSError):
            pass

    def _kill_quietly(self):
        try:
            self.proc.kill()
        except OSError:
            pass

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n=4000):
        return log_tail(self._log_path, n)

    def stop(self, timeout=10):
        """SIGTERM and wait (SIGKILL if it does not exit in time). Returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._close()
        return self.proc.returncode

    def kill(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._close()

    def _close(self):
        if self.proc.stdout:
            try:
                self.proc.stdout.close()
            except OSError:
                pass
        if self._drain is not None:
            self._drain.join(2)


def admin(state_dir, *args, check=True):
    """Runs `paddock admin --state-dir DIR ARGS`; returns a list of parsed JSON lines."""
    r = subprocess.run([paddock_bin(), "admin", "--state-dir", state_dir, *store_args(state_dir), *args],
                       capture_output=True, timeout=60)
    if check and r.returncode != 0:
        raise AssertionError(f"paddock admin {args} failed rc={r.returncode}: "
                             f"{r.stdout.decode()!r} {r.stderr.decode()!r}")
    out = []
    for line in r.stdout.decode().splitlines():
        line = line.strip()
        if line:
            out.append(json.loads(line))
    return out if check else (r.returncode, out, r.stderr.decode())


def create_account(state_dir, account_id=None, name=None):
    args = ["create-account"]
    if account_id:
        args += ["--id", account_id]
    if name:
        args += ["--name", name]
    acct = admin(state_dir, *args)[0]["account"]
    key = admin(state_dir, "create-access-key", "--account", acct)[0]
    return acct, key["accessKeyId"], key["secretAccessKey"]


# ----------------------------------------------------------------------------------------------
# strict shape validation

_SESSION = botocore.session.get_session()
ECS_MODEL = _SESSION.get_service_model("ecs")
_MODELS = {"ecs": ECS_MODEL}


def service_model(service):
    """botocore's model of `service` (loaded once)."""
    if service not in _MODELS:
        _MODELS[service] = _SESSION.get_service_model(service)
    return _MODELS[service]


class ShapeValidator:
    """Validates a JSON value (as it came off the wire) against a botocore shape, strictly."""

    def __init__(self, check_enums=True):
        self.check_enums = check_enums

    def validate(self, value, shape, path="$"):
        errors = []
        self._v(value, shape, path, errors)
        return errors

    def _v(self, value, shape, path, errors):
        t = shape.type_name
        if value is None:
            errors.append(f"{path}: null is not a valid {t} ({shape.name})")
            return
        if t == "structure":
            if not isinstance(value, dict):
                errors.append(f"{path}: expected object for {shape.name}, got {type(value).__name__}")
                return
            members = shape.members
            for k, v in value.items():
                if k not in members:
                    errors.append(f"{path}: unknown member {k!r} in {shape.name}")
                    continue
                self._v(v, members[k], f"{path}.{k}", errors)
            for req in shape.required_members:
                if req not in value:
                    errors.append(f"{path}: missing required member {req!r} of {shape.name}")
            if shape.is_tagged_union and len(value) != 1:
                errors.append(f"{path}: union {shape.name} must have exactly one member")
        elif t == "list":
            if not isinstance(value, list):
                errors.append(f"{path}: expected list for {shape.name}, got {type(value).__name__}")
                return
            for i, item in enumerate(value):
                self._v(item, shape.member, f"{path}[{i}]", errors)
        elif t == "map":
            if not isinstance(value, dict):
                errors.append(f"{path}: expected map for {shape.name}, got {type(value).__name__}")
                return
            for k, v in value.items():
                self._v(k, shape.key, f"{path}<key {k!r}>", errors)
                self._v(v, shape.value, f"{path}[{k!r}]", errors)
        elif t == "string":
            if not isinstance(value, str):
                errors.append(f"{path}: expected string for {shape.name}, got {type(value).__name__} {value!r}")
                return
            enum = shape.enum
            if self.check_enums and enum and value not in enum:
                errors.append(f"{path}: {value!r} is not in enum {shape.name} {list(enum)}")
        elif t in ("integer", "long"):
            if isinstance(value, bool) or not isinstance(value, int):
                errors.append(f"{path}: expected {t} for {shape.name}, got {type(value).__name__} {value!r}")
        elif t == "boolean":
            if not isinstance(value, bool):
                errors.append(f"{path}: expected boolean for {shape.name}, got {type(value).__name__} {value!r}")
        elif t in ("double", "float"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                errors.append(f"{path}: expected {t} for {shape.name}, got {type(value).__name__} {value!r}")
        elif t == "timestamp":
            # JSON 1.1: epoch seconds as a number.
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                errors.append(f"{path}: expected epoch-seconds number for timestamp {shape.name}, "
                              f"got {type(value).__name__} {value!r}")
        elif t == "blob":
            if not isinstance(value, str):
                errors.append(f"{path}: expected base64 string for blob {shape.name}")
        else:
            errors.append(f"{path}: validator does not know shape type {t}")


VALIDATOR = ShapeValidator()


def validate_output(operation, body, service="ecs"):
    """Validates a raw response body (bytes, str or parsed dict) against the output shape of `service`'s
    operation (a JSON-protocol service). Returns a list of violation strings (empty = valid)."""
    if isinstance(body, (bytes, bytearray)):
        body = json.loads(body.decode("utf-8") or "{}")
    elif isinstance(body, str):
        body = json.loads(body or "{}")
    shape = service_model(service).operation_model(operation).output_shape
    if shape is None:
        return [] if body in ({}, None) else [f"{operation} has no output shape but body is {body!r}"]
    return VALIDATOR.validate(body, shape)


def validate_error_body(body):
    """AWS JSON 1.1 error body: {"__type": str, "message": str?}, nothing else required."""
    errs = []
    if isinstance(body, (bytes, bytearray)):
        try:
            body = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            return [f"error body is not JSON: {e}: {body[:200]!r}"]
    if not isinstance(body, dict):
        return [f"error body is not an object: {body!r}"]
    if not isinstance(body.get("__type"), str) or not body["__type"]:
        errs.append(f"error body has no __type: {body!r}")
    if "message" in body and not isinstance(body["message"], str):
        errs.append(f"error message is not a string: {body!r}")
    return errs


class ShapeViolation(AssertionError):
    pass


class _RawCapture:
    """before-parse hook: keeps the raw response and validates successful bodies strictly."""

    def __init__(self, service="ecs"):
        self.service = service
        self.last = None  # (operation, status, headers, body bytes)
        self.validated = 0

    def __call__(self, operation_model, response_dict, **kwargs):
        op = operation_model.name
        status = response_dict["status_code"]
        body = response_dict["body"]
        self.last = (op, status, dict(response_dict["headers"]), body)
        if 200 <= status < 300 and operation_model.has_event_stream_output:
            return  # a stream (StartLiveTail): its events are the test's to check, as they come
        if 200 <= status < 300:
            try:
                errs = validate_output(op, body, self.service)
            except ValueError as e:
                errs = [f"body is not JSON: {e}: {body[:300]!r}"]
            if errs:
                raise ShapeViolation(f"{op} response violates the botocore output shape:\n  " +
                                     "\n  ".join(errs[:30]) + f"\nraw body: {body[:2000]!r}")
            self.validated += 1
        else:
            errs = validate_error_body(body)
            if errs:
                raise ShapeViolation(f"{op} error response malformed: {errs}")


# The JSON-protocol services whose clients check every response strictly (json_client).
JSON_SERVICES = ("ecs", "ssm", "secretsmanager", "logs", "servicediscovery")


def json_client(service, endpoint, key_id, secret, region=REGION, retries=1, validate=True, timeout=30,
                max_pool=10, inject_host_prefix=True):
    """A boto3 client of `service` (one of JSON_SERVICES) whose every successful response is validated
    strictly against botocore's output shape and every error body against JSON 1.1's (a violation
    raises ShapeViolation); client.paddock_capture keeps the last raw response. An event-stream
    answer (StartLiveTail) is left to the test. inject_host_prefix=False: what a custom endpoint needs
    for operations whose model names a host prefix ("stream-" for StartLiveTail)."""
    assert service in JSON_SERVICES, service
    cfg = Config(retries={"max_attempts": retries, "mode": "standard"}, connect_timeout=timeout,
                 read_timeout=timeout, max_pool_connections=max_pool, inject_host_prefix=inject_host_prefix)
    c = boto3.session.Session().client(
        service, endpoint_url=endpoint, region_name=region, aws_access_key_id=key_id,
        aws_secret_access_key=secret, config=cfg)
    cap = _RawCapture(service)
    if validate:
        c.meta.events.register(f"before-parse.{service}.*", cap)
    c.paddock_capture = cap
    return c


def ecs_client(endpoint, key_id, secret, retries=1, validate=True, timeout=30, max_pool=10):
    return json_client("ecs", endpoint, key_id, secret, retries=retries, validate=validate, timeout=timeout,
                       max_pool=max_pool)


def client(service, endpoint, key_id, secret, region=REGION):
    """A boto3 client of any service Paddock serves, with no retries: a JSON service's checked strictly
    (json_client); IAM's signed for us-east-1, where IAM lives, whatever `region` says."""
    if service in JSON_SERVICES:
        return json_client(service, endpoint, key_id, secret, region=region)
    return boto3.session.Session().client(
        service, endpoint_url=endpoint, region_name=region if service != "iam" else "us-east-1",
        aws_access_key_id=key_id, aws_secret_access_key=secret,
        config=Config(retries={"max_attempts": 1, "mode": "standard"}))


def raw_last_body(client):
    """The last raw response body parsed as JSON."""
    return json.loads(client.paddock_capture.last[3])


# ----------------------------------------------------------------------------------------------
# raw signed requests


class RawSigner:
    def __init__(self, key_id, secret, region=REGION, service="ecs"):
        self.creds = botocore.credentials.Credentials(key_id, secret)
        self.region = region
        self.service = service

    def headers(self, host, body, operation=None, target=None, extra=None, when=None,
                content_type=JSON_CT, method="POST", path="/"):
        """Returns headers (dict) for a SigV4-signed request. `when` (aware datetime) signs at
        that time instead of now."""
        h = {"Content-Type": content_type} if content_type else {}
        if target is not None or operation is not None:
            h["X-Amz-Target"] = target if target is not None else f"{TARGET_PREFIX}.{operation}"
        if extra:
            h.update(extra)
        req = botocore.awsrequest.AWSRequest(method=method, url=f"http://{host}{path}", data=body,
                                             headers=h)
        auth = botocore.auth.SigV4Auth(self.creds, self.service, self.region)
        if when is None:
            auth.add_auth(req)
        else:
            fixed = when.astimezone(datetime.timezone.utc).replace(tzinfo=None)
            with mock.patch.object(botocore.auth, "get_current_datetime", lambda *a, **k: fixed):
                auth.add_auth(req)
        out = dict(req.headers.items())
        out["Host"] = host
        return out


class RawConn:
    """A keep-alive http.client connection that sends signed ECS JSON requests."""

    def __init__(self, port, signer, timeout=30):
        self.port = port
        self.host = f"127.0.0.1:{port}"
        self.signer = signer
        self.timeout = timeout
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def call(self, operation, payload):
        body = payload if isinstance(payload, (bytes, bytearray)) else json.dumps(payload).encode()
        hdrs = self.signer.headers(self.host, body, operation=operation)
        try:
            self.conn.request("POST", "/", body=body, headers=hdrs)
            r = self.conn.getresponse()
            data = r.read()
        except Exception:
            self.close()
            raise
        if r.getheader("Connection", "").lower() == "close":
            self.close()
        return r.status, data

    def close(self):
        """Closes the socket; a later call reconnects."""
        try:
            self.conn.close()
        except Exception:
            pass


def raw_request(port, method="POST", path="/", body=b"", headers=None, timeout=10):
    """One request on a fresh connection; returns (status, headers dict lower-cased, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        conn.close()


# ----------------------------------------------------------------------------------------------
# test cases


def td_min(family, **extra):
    """A minimal valid RegisterTaskDefinition request."""
    req = {"family": family,
           "containerDefinitions": [{"name": "app", "image": "public.ecr.aws/docker/library/busybox:1.36",
                                     "memory": 64}]}
    req.update(extra)
    return req


class PaddockTestCase(unittest.TestCase):
    """One server + one account + one key per class (setUpClass); helpers for more."""

    SERVER_ARGS = ()
    LISTEN = "127.0.0.1:0"  # the server's --listen
    ACCOUNT_ID = None
    CONFIG = None  # the text of a paddock.toml the server is started with (--config), if any

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="paddock-test-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        cls.addClassCleanup(stop_leftover_tasks)  # after the servers stop (clean-ups run last first)
        cls.state_dir = os.path.join(cls.tmp, "state")
        os.makedirs(cls.state_dir)
        cls.account, cls.key_id, cls.secret = create_account(cls.state_dir, cls.ACCOUNT_ID, "main")
        args = tuple(cls.SERVER_ARGS)
        if cls.CONFIG is not None:
            config = os.path.join(cls.tmp, "paddock.toml")
            with open(config, "w") as f:
                f.write(cls.CONFIG)
            args += ("--config", config)
        cls.server = Server(cls.state_dir, args, listen=cls.LISTEN)
        cls.server.start()
        cls.addClassCleanup(cls.server.stop)
        cls.ecs = ecs_client(cls.server.endpoint, cls.key_id, cls.secret)

    def assertServerAlive(self):
        self.assertTrue(self.server.alive(), f"server died: {self.server.log_tail()}")

    def assertClientError(self, code, fn, *args, message=None, message_contains=None, status=400, **kwargs):
        from botocore.exceptions import ClientError
        with self.assertRaises(ClientError) as cm:
            fn(*args, **kwargs)
        err = cm.exception.response["Error"]
        meta = cm.exception.response["ResponseMetadata"]
        self.assertEqual(err["Code"], code, cm.exception.response)
        if status is not None:
            self.assertEqual(meta["HTTPStatusCode"], status, cm.exception.response)
        if message is not None:
            self.assertEqual(err.get("Message"), message)
        if message_contains is not None:
            self.assertIn(message_contains, err.get("Message", ""))
        return cm.exception.response
