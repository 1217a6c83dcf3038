"""Paddock as a developer tool (issue 10, sections 2 and 3): a host that cannot run containers says
so and its tasks stop at once; `paddock doctor`; Ctrl-C on `paddock up` stops its tasks (and their
networks) unless --keep-tasks; `paddock down` through a running server and without one; the state
directory's lock; `scripts/up` passing its arguments through; `--access-log`; `paddock image` and
`paddock logs` finding the running server's state directory from any working directory; install.

Every server here records itself under a private PADDOCK_RUN_DIR, so that servers of other tests on
the host never count as "the running server". The tests that run containers need root, crun and
busybox-static (tests/task_harness.py skip_reason); the others run anywhere.
"""

import configparser
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
import paddock_harness as h  # noqa: E402  (first: it skips the module where boto3 is missing)

import boto3  # noqa: E402
import botocore.exceptions  # noqa: E402
from botocore.config import Config  # noqa: E402
import task_harness as th  # noqa: E402
from task_harness import skip_reason  # noqa: E402

UP_REASON = "Task stopped: paddock up was stopped (pass --keep-tasks to keep tasks running)"
DOWN_REASON = "Task stopped: paddock down"
PAGE = "hello from the devtool test\n"


def isolated_env(tmp, **extra):
    """An environment whose AWS files and running-server records live under `tmp`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "PADDOCK_CRUN"}
    home = os.path.join(tmp, "home")
    os.makedirs(home, exist_ok=True)
    env["HOME"] = home
    env["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(home, ".aws", "credentials")
    env["AWS_CONFIG_FILE"] = os.path.join(home, ".aws", "config")
    env["PADDOCK_RUN_DIR"] = os.path.join(tmp, "run")
    env.update(extra)
    return env


def paddock(env, *args, cwd=None, timeout=120):
    return subprocess.run([h.paddock_bin(), *args], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=cwd)


def up_credentials(state_dir):
    """The key `paddock up` wrote into <state-dir>/credentials."""
    cp = configparser.ConfigParser()
    cp.read(os.path.join(state_dir, "credentials"))
    section = cp[cp.sections()[0]]
    return section["aws_access_key_id"], section["aws_secret_access_key"]


def clients(endpoint, key_id, secret):
    cfg = Config(retries={"max_attempts": 1, "mode": "standard"})
    kw = dict(endpoint_url=endpoint, region_name=h.REGION, aws_access_key_id=key_id, aws_secret_access_key=secret,
              config=cfg)
    return boto3.client("ecs", **kw), boto3.client("ec2", **kw)


def wait_exit(server, timeout):
    """Waits for the server process to exit on its own; returns its exit code."""
    try:
        return server.proc.wait(timeout)
    finally:
        server._close()


def netns_names():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def vpc_namespace_of(task_id):
    """The VPC router namespace a running awsvpc task is attached to (its eth0's peer's namespace)."""
    task_ns = [n for n in netns_names() if n.endswith(task_id)]
    if not task_ns:
        return None
    out = subprocess.run(["ip", "-n", task_ns[0], "-o", "link", "show", "eth0"], capture_output=True,
                         text=True).stdout
    m = re.search(r"link-netns (\S+)", out)
    return m.group(1) if m else None


class DevtoolCase(unittest.TestCase):
    """A private temp dir and environment per test; servers stopped at the end."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="paddock-devtool-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.env = isolated_env(self.tmp)
        self.servers = []

    def tearDown(self):
        # Stopped, not killed: a server removes its VPC namespaces (lingering after their last
        # task) as it exits; then whatever a test left running goes (paddock down).
        for s in self.servers:
            if s.alive():
                s.stop()
        h.stop_leftover_tasks()

    def state(self, name="state"):
        path = os.path.join(self.tmp, name)
        os.makedirs(path, exist_ok=True)
        return path

    def start(self, state_dir, mode="server", args=(), env=None):
        s = h.Server(state_dir, list(args), mode=mode, env=env or self.env)
        s.start()
        self.servers.append(s)
        return s

    def account(self, state_dir):
        return h.create_account(state_dir)

    def task_definition(self, ecs, family, image="busybox:devtool"):
        return ecs.register_task_definition(
            family=family, networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "web", "image": image, "essential": True, "stopTimeout": 2}],
        )["taskDefinition"]["taskDefinitionArn"]

    def run_task(self, ecs, ec2, cluster, td):
        subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        r = ecs.run_task(cluster=cluster, taskDefinition=td, launchType="FARGATE",
                         networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet]}})
        self.assertEqual(r["failures"], [])
        return r["tasks"][0]["taskArn"]


# ----------------------------------------------------------------------------------------------
# A host that cannot run containers


class NoRuntime(DevtoolCase):
    """PADDOCK_CRUN at a missing binary stands for any host that cannot run containers (not root, no
    cgroups, ...: the unit tests cover each check); it disturbs nothing else on the host."""

    def setUp(self):
        super().setUp()
        self.env["PADDOCK_CRUN"] = "/nonexistent/crun"
        self.dir = self.state()
        _, key, secret = self.account(self.dir)
        self.server = self.start(self.dir)
        self.ecs, self.ec2 = clients(self.server.endpoint, key, secret)
        self.ecs.create_cluster(clusterName="c")
        self.td = self.task_definition(self.ecs, "noruntime")

    def test_the_start_says_what_is_missing_in_one_block(self):
        out = "\n".join(self.server.stdout_lines)
        self.assertIn("This host cannot run containers.", out)
        self.assertRegex(out, r"FAIL +crun +'/nonexistent/crun' is not an installed program — fix: point PADDOCK_CRUN")
        self.assertIn("`paddock doctor` runs every check.", out)

    def test_run_task_stops_within_a_second_with_the_reason(self):
        started = time.monotonic()
        arn = self.run_task(self.ecs, self.ec2, "c", self.td)
        while True:
            task = self.ecs.describe_tasks(cluster="c", tasks=[arn])["tasks"][0]
            if task["lastStatus"] == "STOPPED" or time.monotonic() - started > 5:
                break
            time.sleep(0.02)
        elapsed = time.monotonic() - started
        print(f"\nRunTask -> STOPPED on a host without a runtime: {elapsed * 1000:.0f} ms", file=sys.stderr)
        self.assertEqual(task["lastStatus"], "STOPPED", task)
        self.assertLess(elapsed, 1.0)
        self.assertEqual(task["stopCode"], "TaskFailedToStart")
        self.assertTrue(task["stoppedReason"].startswith(
            "ResourceInitializationError: this Paddock node cannot run containers: crun: '/nonexistent/crun' is not "
            "an installed program (fix: point PADDOCK_CRUN at crun"), task["stoppedReason"])
        self.assertIn("Run `paddock doctor`", task["stoppedReason"])
        self.assertEqual(task["containers"][0]["lastStatus"], "STOPPED")
        # Not running: listed among the stopped tasks, and the cluster counts nothing pending.
        self.assertIn(arn, self.ecs.list_tasks(cluster="c", desiredStatus="STOPPED")["taskArns"])
        self.assertEqual(self.ecs.describe_clusters(clusters=["c"])["clusters"][0]["pendingTasksCount"], 0)

    def test_the_tasks_running_waiter_fails_at_once(self):
        arn = self.run_task(self.ecs, self.ec2, "c", self.td)
        started = time.monotonic()
        with self.assertRaises(botocore.exceptions.WaiterError) as cm:
            self.ecs.get_waiter("tasks_running").wait(cluster="c", tasks=[arn],
                                                      WaiterConfig={"Delay": 1, "MaxAttempts": 30})
        elapsed = time.monotonic() - started
        self.assertIn("terminal failure state", str(cm.exception))
        self.assertLess(elapsed, 2.5, "the waiter should fail on its first or second poll")
        task = cm.exception.last_response["tasks"][0]
        self.assertEqual(task["stopCode"], "TaskFailedToStart")
        self.assertIn("this Paddock node cannot run containers", task["stoppedReason"])

    def test_a_remote_agent_says_so_before_it_registers(self):
        r = paddock(self.env, "agent", "--endpoint", self.server.endpoint, "--cluster", "c", "--state-dir",
                    self.state("agent"), timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertIn("paddock agent: this host cannot run containers:", r.stderr)
        self.assertRegex(r.stderr, r"FAIL +crun +'/nonexistent/crun' is not an installed program")
        self.assertEqual(self.ecs.list_container_instances(cluster="c")["containerInstanceArns"], [])

    def test_doctor_fails_naming_the_fix(self):
        r = paddock(self.env, "doctor", "--state-dir", self.dir, "--listen", "127.0.0.1:0")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"\n  FAIL  crun +'/nonexistent/crun' is not an installed program — fix: ")
        self.assertIn("tasks cannot run here until the failures marked above are fixed", r.stdout)
        self.assertIn(f"paddock server (pid {self.server.proc.pid}, {self.server.endpoint}) runs on this state "
                      "directory.", r.stdout)
        for name in ("root", "cgroups", "cgroup controllers", "crun", "overlayfs", "nftables", "iproute2", "iptables",
                     "ip_forward", "tini", "seccomp", "skopeo", "free disk", "api port"):
            self.assertRegex(r.stdout, rf"\n  (ok|warn|FAIL|skip) +{re.escape(name)} ", name)


# Run inside `ip netns exec` by HiddenCgroups: a server there, one task, its state after at most 5 s.
_IN_NETNS = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import boto3, paddock_harness as h
state = sys.argv[2]
acct, key, secret = h.create_account(state)
s = h.Server(state).start()
try:
    kw = dict(endpoint_url=s.endpoint, region_name=h.REGION, aws_access_key_id=key, aws_secret_access_key=secret)
    ecs, ec2 = boto3.client("ecs", **kw), boto3.client("ec2", **kw)
    ecs.create_cluster(clusterName="c")
    ecs.register_task_definition(family="f", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256",
                                 memory="512", containerDefinitions=[{"name": "web", "image": "busybox"}])
    subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
    arn = ecs.run_task(cluster="c", taskDefinition="f", launchType="FARGATE",
                       networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet]}})["tasks"][0]["taskArn"]
    started = time.monotonic()
    while True:
        task = ecs.describe_tasks(cluster="c", tasks=[arn])["tasks"][0]
        if task["lastStatus"] == "STOPPED" or time.monotonic() - started > 5:
            break
        time.sleep(0.05)
    print(json.dumps({"task": task, "seconds": time.monotonic() - started, "stdout": s.stdout_lines}, default=str))
finally:
    s.stop()
"""


@unittest.skipIf(os.geteuid() != 0 or shutil.which("ip") is None, "needs root and iproute2 (ip netns)")
class HiddenCgroups(DevtoolCase):
    """The case from the first-run notes, for real: a server started under `ip netns exec`, which
    remounts /sys and hides /sys/fs/cgroup. Its task used to sit in PROVISIONING for ever."""

    def test_a_task_stops_at_once_and_the_fix_is_nsenter(self):
        ns = f"pdk-devtool-{os.getpid()}"
        subprocess.run(["ip", "netns", "add", ns], check=True)
        self.addCleanup(subprocess.run, ["ip", "netns", "del", ns])
        subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"], check=True)
        r = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", _IN_NETNS, os.path.dirname(__file__),
                            self.state()], capture_output=True, text=True, timeout=120, env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.loads(r.stdout.strip().splitlines()[-1])
        task = got["task"]
        self.assertEqual(task["lastStatus"], "STOPPED", task)
        self.assertLess(got["seconds"], 1.0)
        self.assertEqual(task["stopCode"], "TaskFailedToStart")
        self.assertIn(f"`ip netns exec {ns}`", task["stoppedReason"])
        self.assertIn(f"nsenter --net=/var/run/netns/{ns}", task["stoppedReason"])
        self.assertIn("This host cannot run containers.", "\n".join(got["stdout"]))


class Doctor(DevtoolCase):

    def test_exit_status_follows_the_failures(self):
        r = paddock(self.env, "doctor", "--state-dir", self.state(), "--listen", "127.0.0.1:0")
        failed = re.findall(r"^  FAIL ", r.stdout, re.M)
        self.assertEqual(r.returncode, 1 if failed else 0, r.stdout)
        if not failed:
            self.assertIn("Every check passed", r.stdout)

    def test_the_api_port_in_use_or_served_by_this_state_directory(self):
        mine = self.state("mine")
        server = self.start(mine)
        r = paddock(self.env, "doctor", "--state-dir", mine, "--listen", f"127.0.0.1:{server.port}")
        self.assertRegex(r.stdout, rf"  ok +api port +127\.0\.0\.1:{server.port} is served by paddock server "
                                   rf"\(pid {server.proc.pid}")
        r = paddock(self.env, "doctor", "--state-dir", self.state("other"), "--listen", f"127.0.0.1:{server.port}")
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stdout, rf"  FAIL +api port +cannot listen on 127\.0\.0\.1:{server.port}: the address is "
                                   rf"in use — fix: stop what listens there, or pass --listen 127\.0\.0\.1:"
                                   rf"{server.port + 1}")


# ----------------------------------------------------------------------------------------------
# The lock


class Lock(DevtoolCase):

    def test_a_second_server_or_agent_on_one_state_directory_is_refused(self):
        d = self.state()
        server = self.start(d)
        holder = f"paddock server (pid {server.proc.pid}, {server.endpoint})"
        for args in (["server", "--listen", "127.0.0.1:0", "--state-dir", d],
                     ["up", "--listen", "127.0.0.1:0", "--state-dir", d],
                     ["agent", "--endpoint", server.endpoint, "--state-dir", d]):
            r = paddock(self.env, *args, timeout=30)
            self.assertEqual(r.returncode, 1, args)
            self.assertIn(f"state directory {os.path.realpath(d)} is in use by {holder}", r.stderr)
            self.assertIn("another --state-dir", r.stderr)
        self.assertTrue(server.alive())
        # What works beside a server still does.
        self.assertEqual(paddock(self.env, "admin", "--state-dir", d, "list-accounts").returncode, 0)
        self.assertEqual(paddock(self.env, "image", "--state-dir", d, "ls").returncode, 0)
        r = paddock(self.env, "logs", "--state-dir", d, "0123456789abcdef0123456789abcdef")
        self.assertIn("no logs for task", r.stderr)

    def test_kill_9_releases_the_lock(self):
        d = self.state()
        server = self.start(d)
        server.kill()
        again = self.start(d)  # would exit "in use" if the lock outlived the process
        self.assertTrue(again.alive())


# ----------------------------------------------------------------------------------------------
# --access-log


class AccessLog(DevtoolCase):
    LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (\S+) (\S+) (\d{3}) (\S+) (\d+\.\d)ms$")

    def lines(self, server, n, timeout=5):
        deadline = time.monotonic() + timeout
        while True:
            found = [m for m in map(self.LINE.match, server.stdout_lines) if m]
            if len(found) >= n or time.monotonic() > deadline:
                return found
            time.sleep(0.02)

    def test_one_line_per_request(self):
        d = self.state()
        account, key, secret = self.account(d)
        server = self.start(d, args=["--access-log"])
        ecs, ec2 = clients(server.endpoint, key, secret)
        ecs.list_clusters()
        with self.assertRaises(botocore.exceptions.ClientError):
            ecs.list_services(cluster="nope")
        ec2.describe_subnets()
        bad, _ = clients(server.endpoint, "AKIAUNKNOWNKEY000000", "x" * 40)
        with self.assertRaises(botocore.exceptions.ClientError):
            bad.list_clusters()
        found = self.lines(server, 4)
        self.assertEqual([m.group(2, 3, 4, 5) for m in found], [
            (account, "ecs.ListClusters", "200", "-"),
            (account, "ecs.ListServices", "400", "ClusterNotFoundException"),
            (account, "ec2.DescribeSubnets", "200", "-"),
            ("-", "ecs.ListClusters", "400", "UnrecognizedClientException"),
        ])

    def test_off_by_default(self):
        d = self.state()
        _, key, secret = self.account(d)
        server = self.start(d)
        ecs, _ = clients(server.endpoint, key, secret)
        ecs.list_clusters()
        time.sleep(0.2)  # a line would be printed before the answer returns; give the drain a moment
        self.assertEqual([l for l in server.stdout_lines if self.LINE.match(l)], [])


# ----------------------------------------------------------------------------------------------
# image and logs from any directory


class FromAnyDirectory(DevtoolCase):

    def fake_logs(self, state_dir, task_id, text):
        d = os.path.join(state_dir, "logs", task_id)
        os.makedirs(d)
        with open(os.path.join(d, "containers"), "w") as f:
            f.write("web\n")
        with open(os.path.join(d, "web.log"), "w") as f:
            f.write(text)

    def test_logs_and_image_find_the_running_server(self):
        d = self.state()
        server = self.start(d)
        task_id = "0123456789abcdef0123456789abcdef"
        self.fake_logs(d, task_id, "from the running server's state\n")
        elsewhere = os.path.join(self.tmp, "elsewhere")
        os.makedirs(elsewhere)
        r = paddock(self.env, "logs", task_id, cwd=elsewhere)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "from the running server's state\n")
        self.assertIn(f"using the state directory of paddock server (pid {server.proc.pid}", r.stderr)
        r = paddock(self.env, "image", "ls", "--json", cwd=elsewhere)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(elsewhere, ".paddock")), "no stray state directory")
        # --state-dir still wins.
        r = paddock(self.env, "logs", "--state-dir", os.path.join(elsewhere, "none"), task_id, cwd=elsewhere)
        self.assertEqual(r.returncode, 1)
        # With two servers, it asks which, unless one of them is ./.paddock here.
        second = self.start(self.state("second"))
        r = paddock(self.env, "logs", task_id, cwd=elsewhere)
        self.assertEqual(r.returncode, 1)
        self.assertIn("several Paddock servers are running and none uses ./.paddock; pass --state-dir", r.stderr)
        self.assertIn(f"paddock server (pid {server.proc.pid}", r.stderr)
        self.assertIn(f"paddock server (pid {second.proc.pid}", r.stderr)
        os.symlink(d, os.path.join(elsewhere, ".paddock"))
        r = paddock(self.env, "logs", task_id, cwd=elsewhere)
        self.assertEqual(r.stdout, "from the running server's state\n", r.stderr)
        # Once the server is gone, its record no longer counts.
        second.stop()
        os.unlink(os.path.join(elsewhere, ".paddock"))
        server.stop()
        r = paddock(self.env, "logs", task_id, cwd=elsewhere)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no logs for task", r.stderr)
        self.assertIn("./.paddock", r.stderr)


# ----------------------------------------------------------------------------------------------
# scripts/up and install


class Scripts(DevtoolCase):

    def test_scripts_up_passes_its_arguments_through(self):
        d = self.state()
        env = dict(self.env, PADDOCK_BIN=h.paddock_bin())
        proc = subprocess.Popen([os.path.join(h.REPO, "scripts", "up"), "--listen", "127.0.0.1:0", "--state-dir", d,
                                 "--access-log"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                stdin=subprocess.DEVNULL)
        try:
            endpoint = None
            deadline = time.monotonic() + 30
            while endpoint is None and time.monotonic() < deadline:
                line = proc.stdout.readline()
                if not line:
                    break
                if line.strip().startswith("endpoint"):
                    endpoint = line.split()[-1]
            self.assertIsNotNone(endpoint, proc.stderr.read() if proc.poll() is not None else "")
            self.assertNotEqual(endpoint, "http://127.0.0.1:4566")
            self.assertTrue(os.path.exists(os.path.join(d, "credentials")), "the state directory given was used")
            key, secret = up_credentials(d)
            ecs, _ = clients(endpoint, key, secret)
            ecs.list_clusters()
            line = proc.stdout.readline()
            while line and "ecs.ListClusters" not in line:
                line = proc.stdout.readline()
            self.assertIn(" ecs.ListClusters 200 - ", line)  # --access-log reached paddock up
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(30)
            proc.stdout.close()
            proc.stderr.close()

    def test_cmake_install_puts_paddock_in_prefix_bin(self):
        build = os.path.dirname(os.path.dirname(os.path.dirname(h.paddock_bin())))
        if not os.path.exists(os.path.join(build, "cmake_install.cmake")):
            self.skipTest(f"{build} is not a CMake build directory")
        prefix = os.path.join(self.tmp, "prefix")
        r = subprocess.run(["cmake", "--install", build, "--prefix", prefix, "--component", "paddock"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        installed = os.path.join(prefix, "bin", "paddock")
        self.assertTrue(os.access(installed, os.X_OK))
        self.assertEqual(subprocess.run([installed, "--help"], capture_output=True).returncode, 0)
        # scripts/install does the same (its build step is a no-op for an up-to-date tree).
        if os.path.realpath(build) == os.path.realpath(os.path.join(h.REPO, "build", "release")):
            prefix2 = os.path.join(self.tmp, "prefix2")
            r = subprocess.run([os.path.join(h.REPO, "scripts", "install"), "--prefix", prefix2], capture_output=True,
                               text=True, timeout=900)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertTrue(os.access(os.path.join(prefix2, "bin", "paddock"), os.X_OK))


# ----------------------------------------------------------------------------------------------
# Stopping: Ctrl-C, --keep-tasks, paddock down (real containers)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class Stopping(DevtoolCase):

    def up(self, state_dir, *args):
        server = self.start(state_dir, mode="up", args=args)
        key, secret = up_credentials(state_dir)
        ecs, ec2 = clients(server.endpoint, key, secret)
        return server, ecs, ec2

    def running_task(self, state_dir, ecs, ec2):
        """Imports the httpd image, runs one task and waits for it to run; returns (arn, task id, VPC ns).
        (Its page is not fetched: another test's task on this host may hold the same address, and then
        the host reaches neither by address. tests/test_tasks.py covers serving.)"""
        th.httpd_image(state_dir, self.tmp, "busybox:devtool", PAGE)
        ecs.create_cluster(clusterName="dev")
        arn = self.run_task(ecs, ec2, "dev", self.task_definition(ecs, "devtool"))
        th.wait_for_status(self, ecs, "dev", arn, "RUNNING")
        task_id = arn.rsplit("/", 1)[1]
        self.assertEqual(len(self.containers_of(state_dir)), 1)
        return arn, task_id, vpc_namespace_of(task_id)

    def containers_of(self, state_dir):
        c = os.path.join(state_dir, "containers", "c")
        return os.listdir(c) if os.path.isdir(c) else []

    def assertGone(self, state_dir, task_id, vpc_ns):
        names = netns_names()
        self.assertFalse([n for n in names if n.endswith(task_id)], "the task's namespace is left")
        if vpc_ns:
            self.assertNotIn(vpc_ns, names, "the VPC namespace is left")
        self.assertEqual(self.containers_of(state_dir), [])

    def described(self, state_dir, arn):
        """The task as a fresh server (no tasks of its own running) describes it."""
        server = self.start(state_dir, mode="up")
        key, secret = up_credentials(state_dir)
        ecs, _ = clients(server.endpoint, key, secret)
        task = ecs.describe_tasks(cluster="dev", tasks=[arn])["tasks"][0]
        server.stop()
        return task

    def test_ctrl_c_stops_the_tasks_and_their_networks(self):
        d = self.state()
        server, ecs, ec2 = self.up(d)
        arn, task_id, vpc_ns = self.running_task(d, ecs, ec2)
        self.assertIsNotNone(vpc_ns)
        # A service's task too: the scheduler stops first, so nothing replaces it while the server stops.
        subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        ecs.create_service(cluster="dev", serviceName="svc", taskDefinition="devtool", desiredCount=1,
                           launchType="FARGATE", networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet]}})
        deadline = time.monotonic() + 30
        while not ecs.list_tasks(cluster="dev", serviceName="svc")["taskArns"] and time.monotonic() < deadline:
            time.sleep(0.1)
        service_task = ecs.list_tasks(cluster="dev", serviceName="svc")["taskArns"][0]
        th.wait_for_status(self, ecs, "dev", service_task, "RUNNING")
        started = time.monotonic()
        server.proc.send_signal(signal.SIGINT)
        self.assertEqual(wait_exit(server, 60), 0)
        print(f"\nCtrl-C with one running task -> exited in {time.monotonic() - started:.1f} s", file=sys.stderr)
        out = "\n".join(server.stdout_lines)
        self.assertIn("paddock: SIGINT received, stopping the tasks, then the server", out)
        self.assertIn("paddock: 2 task(s) stopped", out)
        self.assertGone(d, task_id, vpc_ns)
        self.assertGone(d, service_task.rsplit("/", 1)[1], None)
        task = self.described(d, arn)
        self.assertEqual((task["lastStatus"], task["stopCode"], task["stoppedReason"]),
                         ("STOPPED", "UserInitiated", UP_REASON))

    def test_keep_tasks_keeps_them_and_down_stops_them_through_the_server(self):
        d = self.state()
        server, ecs, ec2 = self.up(d, "--keep-tasks")
        arn, task_id, vpc_ns = self.running_task(d, ecs, ec2)
        server.proc.send_signal(signal.SIGTERM)
        self.assertEqual(wait_exit(server, 30), 0)
        self.assertIn("tasks keep running", "\n".join(server.stdout_lines))
        self.assertEqual(len(self.containers_of(d)), 1, "the container should still run")
        self.assertTrue([n for n in netns_names() if n.endswith(task_id)])
        # The next server re-adopts it; `paddock down` asks that server to stop it, and it exits.
        server = self.start(d, mode="up", args=["--keep-tasks"])
        th.wait_for_status(self, ecs_for(server, d), "dev", arn, "RUNNING")
        r = paddock(self.env, "down", "--state-dir", d, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"asking paddock up (pid {server.proc.pid}, {server.endpoint}) to stop its tasks, then exit",
                      r.stdout)
        self.assertIn("paddock down: no task is running in", r.stdout)
        self.assertFalse(server.alive())
        self.assertIn("paddock: 1 task(s) stopped", "\n".join(server.stdout_lines))
        self.assertGone(d, task_id, vpc_ns)
        task = self.described(d, arn)
        self.assertEqual((task["lastStatus"], task["stopCode"], task["stoppedReason"]),
                         ("STOPPED", "UserInitiated", DOWN_REASON))

    def test_down_without_a_server_stops_what_was_kept(self):
        d = self.state()
        server, ecs, ec2 = self.up(d, "--keep-tasks")
        arn, task_id, vpc_ns = self.running_task(d, ecs, ec2)
        server.proc.send_signal(signal.SIGINT)
        self.assertEqual(wait_exit(server, 30), 0)
        self.assertEqual(len(self.containers_of(d)), 1)
        r = paddock(self.env, "down", "--state-dir", d, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("paddock down: 1 task(s) stopped", r.stdout)
        self.assertGone(d, task_id, vpc_ns)
        task = self.described(d, arn)
        self.assertEqual((task["lastStatus"], task["stopCode"], task["stoppedReason"]),
                         ("STOPPED", "UserInitiated", DOWN_REASON))
        # Nothing left: a second down says so.
        r = paddock(self.env, "down", "--state-dir", d, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("no task is running", r.stdout)

    def test_paddock_server_keeps_its_tasks_for_re_adoption(self):
        d = self.state()
        _, key, secret = self.account(d)
        server = self.start(d)
        ecs, ec2 = clients(server.endpoint, key, secret)
        arn, task_id, _ = self.running_task(d, ecs, ec2)
        server.proc.send_signal(signal.SIGINT)
        self.assertEqual(wait_exit(server, 30), 0)
        self.assertEqual(len(self.containers_of(d)), 1)
        server = self.start(d)
        ecs, _ = clients(server.endpoint, key, secret)
        th.wait_for_status(self, ecs, "dev", arn, "RUNNING")
        ecs.stop_task(cluster="dev", task=arn)
        th.wait_for_status(self, ecs, "dev", arn, "STOPPED")


def ecs_for(server, state_dir):
    key, secret = up_credentials(state_dir)
    return clients(server.endpoint, key, secret)[0]


if __name__ == "__main__":
    unittest.main()
