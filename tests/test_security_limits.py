"""Limits that hold against a hostile task, and a state directory a local user cannot abuse (issue 9,
sections 3 and 4; findings 4, 5, 6, 10 and 13 of the 2026-12 security research). Each test performs
the attack, bounded and self-stopping, and asserts it fails:

- Processes: a fork loop in one task stops at its task's pids.max (its forks fail with EAGAIN)
  while another task on the node still starts processes; a container's ulimits nproc applies
  within it.
- Logs: a container writing as fast as it can (`yes`, then `dd` reporting its rate) never takes its
  log directory past twice the 10 MiB cap, sampled all along; the output survives an agent restart
  (the pump resumes where it was, nothing lost).
- Images: a gzip bomb is refused by `paddock image import` and by a registry pull (the task stops
  with CannotPullContainerError), as is an image bigger than the state directory's free space, and
  nothing is left behind.
- Metadata connections: 300 idle connections from one task to its metadata endpoint cost the
  server at most the per-address cap of descriptors, and another task is still answered.
- Agent long-poll: 80 concurrent PollAssignments of one account's instances never keep another
  account's instance from waiting, and it is woken by its own assignment.
- State directory: 0700, the store and its WAL 0600 (tightened on start); a setuid-root binary of an
  imported layer, or one a container makes in its volume, cannot be reached by a local user; the
  container's own mounts are nosuid,nodev.

Needs root, crun and busybox-static (and skopeo plus docker-registry for the pull)."""

import concurrent.futures
import gzip
import hashlib
import http.client
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
import task_harness as th  # noqa: E402
from test_images import busybox_rootfs, image  # noqa: E402

IMAGE = "busybox:limits"
APPLETS = ("sleep", "yes", "timeout", "dd", "cp", "chmod", "seq", "true", "id", "tail", "nc", "printf")
# setpriv keeps root's capabilities until its own execve (whose path lookup they would pass): a
# shell it starts makes the real attempt, with none.
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "/bin/sh", "-c", 'exec "$0" "$@"']
MIB = 1 << 20


def skip_reason():
    return th.skip_reason(tools=("crun", "setpriv"))


def import_busybox(state_dir, work_dir):
    root = busybox_rootfs(os.path.join(work_dir, "limits-rootfs"), APPLETS)
    image(state_dir, "import-rootfs", root, "--name", IMAGE, "--cmd", "sh")


def as_nobody(*args):
    """Runs `args` as uid/gid 65534 with no groups; returns the CompletedProcess (output decoded,
    whatever bytes it holds)."""
    r = subprocess.run(NOBODY + list(args), capture_output=True, timeout=30)
    r.stdout = r.stdout.decode("utf-8", "replace")
    r.stderr = r.stderr.decode("utf-8", "replace")
    return r


def tree(path):
    """Every path under `path` with its size (files) — what 'unchanged' means for a directory."""
    out = {}
    for root, dirs, files in os.walk(path):
        for d in dirs:
            out[os.path.relpath(os.path.join(root, d), path) + "/"] = None
        for f in files:
            p = os.path.join(root, f)
            out[os.path.relpath(p, path)] = os.lstat(p).st_size
    return out


def log_dir_bytes(path):
    """Bytes in the log files of a task's log directory (its FIFOs hold none on disk)."""
    total = 0
    try:
        names = [n for n in os.listdir(path) if n.endswith((".log", ".log.1"))]
    except FileNotFoundError:
        return 0
    for name in names:
        try:
            st = os.lstat(os.path.join(path, name))
        except FileNotFoundError:
            continue  # rotated away between listdir and lstat
        if (st.st_mode & 0o170000) == 0o100000:
            total += st.st_size
    return total


class TaskCase(h.PaddockTestCase):
    """A server whose Fargate agent runs real tasks of busybox:limits in cluster "limits"."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        import_busybox(cls.state_dir, cls.tmp)
        cls.ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)
        cls.subnet = cls.ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        cls.ecs.create_cluster(clusterName="limits")
        cls.families = 0

    def register(self, command, cpu="256", memory="512", volumes=(), mount_points=(), user=None, ulimits=None):
        type(self).families += 1
        container = {"name": "app", "image": IMAGE, "essential": True, "stopTimeout": 1, "command": command}
        if mount_points:
            container["mountPoints"] = list(mount_points)
        if user:
            container["user"] = user
        if ulimits:
            container["ulimits"] = ulimits
        return self.ecs.register_task_definition(
            family=f"limits-{type(self).__name__.lower()}-{type(self).families}", networkMode="awsvpc",
            requiresCompatibilities=["FARGATE"], cpu=cpu, memory=memory, volumes=list(volumes),
            containerDefinitions=[container])["taskDefinition"]["taskDefinitionArn"]

    def run_one(self, td):
        r = self.ecs.run_task(cluster="limits", taskDefinition=td, launchType="FARGATE",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        # Whatever the test's outcome, no container outlives it (a stopped server leaves them running).
        self.addCleanup(th.stop_quietly, self.ecs, "limits", arn)
        return arn

    def wait_for(self, arn, status, timeout=30):
        return th.wait_for_status(self, self.ecs, "limits", arn, status, timeout, self.server.log_tail)

    def stop(self, arn):
        self.ecs.stop_task(cluster="limits", task=arn, reason="test done")
        return self.wait_for(arn, "STOPPED")

    def log_dir(self, arn):
        return os.path.join(self.state_dir, "logs", arn.rsplit("/", 1)[1])

    def log_text(self, arn):
        with open(os.path.join(self.log_dir(arn), "app.log"), errors="replace") as f:
            return f.read()

    def wait_for_log(self, arn, needle, timeout=20):
        deadline = time.monotonic() + timeout
        while True:
            try:
                text = self.log_text(arn)
            except FileNotFoundError:
                text = ""
            if needle in text:
                return text
            if time.monotonic() > deadline:
                self.fail(f"{needle!r} never appeared in the log: {text[-2000:]!r} {self.server.log_tail()}")
            time.sleep(0.05)

    def task_cgroup(self, arn, controller="pids"):
        """The task's cgroup directory in `controller`'s v1 hierarchy (the agent's task group)."""
        task_id = arn.rsplit("/", 1)[1]
        root = f"/sys/fs/cgroup/{controller}/paddock"
        for instance in os.listdir(root):
            candidate = os.path.join(root, instance, task_id)
            if os.path.isdir(candidate):
                return candidate
        self.fail(f"no {controller} cgroup for task {task_id} under {root}")


# A fork loop: backgrounds up to 500 sleeps, saying how many it got; a failed fork ends the loop
# (busy box's sh aborts the subshell), then PID 1 becomes a sleep without forking (exec).
FORK_LOOP = ("(n=0; while [ $n -lt 500 ]; do sleep 20 & n=$((n+1)); echo forked $n; done; echo all-forked) 2>&1; "
             "echo loop-ended; exec sleep 20")


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class Processes(TaskCase):
    """Finding 5: a node whose tasks may have 64 processes each (the default is 4,096)."""

    CONFIG = "[agent]\npids_per_task = 64\n"

    def forked(self, text):
        counts = [int(m) for m in re.findall(r"^forked (\d+)$", text, re.M)]
        return max(counts) if counts else 0

    def test_a_fork_loop_exhausts_only_its_own_task(self):
        bomb = self.run_one(self.register(["sh", "-c", FORK_LOOP]))
        self.wait_for(bomb, "RUNNING")
        text = self.wait_for_log(bomb, "loop-ended")
        cgroup = self.task_cgroup(bomb)
        with open(os.path.join(cgroup, "pids.max")) as f:
            self.assertEqual(f.read().strip(), "64")
        with open(os.path.join(cgroup, "pids.current")) as f:
            current = int(f.read())
        self.assertLessEqual(current, 64)
        self.assertIn("can't fork", text)
        self.assertNotIn("all-forked", text)
        self.assertLess(self.forked(text), 64)
        print(f"\nfork loop: {self.forked(text)} forks, then EAGAIN; task pids.current {current} of 64",
              file=sys.stderr)

        # The bomb's task is saturated; another task on the node starts processes as usual.
        other = self.run_one(self.register(
            ["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do sh -c 'echo spawned '$i || exit 1; done"]))
        task = self.wait_for(other, "STOPPED")
        self.assertEqual(task["containers"][0].get("exitCode"), 0, task)
        self.assertIn("spawned 10", self.log_text(other))
        self.stop(bomb)

    def test_a_containers_nproc_ulimit_applies_within_its_task(self):
        # RLIMIT_NPROC counts the user's processes (not root's): uid 4321 may have 8.
        arn = self.run_one(self.register(["sh", "-c", FORK_LOOP], user="4321",
                                         ulimits=[{"name": "nproc", "softLimit": 8, "hardLimit": 8}]))
        text = self.wait_for_log(arn, "loop-ended")
        self.assertIn("can't fork", text)
        self.assertLess(self.forked(text), 8)
        self.stop(arn)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class DefaultPidsLimit(TaskCase):
    """Without configuration, every task gets 4,096."""

    def test_every_task_has_the_default_pids_limit(self):
        arn = self.run_one(self.register(["sleep", "20"]))
        self.wait_for(arn, "RUNNING")
        with open(os.path.join(self.task_cgroup(arn), "pids.max")) as f:
            self.assertEqual(f.read().strip(), "4096")
        self.stop(arn)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class Logs(TaskCase):
    """Finding 6: the 10 MiB per-container cap against a writer as fast as the machine allows."""

    CAP = 10 * MIB

    def test_a_fast_writer_never_takes_its_logs_past_twice_the_cap(self):
        line = "A" * 100
        # `yes` for 6 s, then 160 MiB through dd, timed (in 1/100 s, from /proc/uptime): the rate
        # the pump let a writer write at.
        timed_dd = ("read t0 x < /proc/uptime; dd if=/dev/zero bs=65536 count=2560 2>/dev/null; "
                    "read t1 x < /proc/uptime; echo; echo dd-centiseconds $(( ${t1%.*}${t1#*.} - ${t0%.*}${t0#*.} ))")
        arn = self.run_one(self.register(
            ["sh", "-c", f"timeout 6 yes {line}; {timed_dd}; echo writer-done"], cpu="1024", memory="2048"))
        log_dir = self.log_dir(arn)
        most, samples = 0, 0
        deadline = time.monotonic() + 60
        while True:
            most = max(most, log_dir_bytes(log_dir))
            samples += 1
            r = self.ecs.describe_tasks(cluster="limits", tasks=[arn])["tasks"][0] if samples % 25 == 0 else None
            if r is not None and r["lastStatus"] == "STOPPED":
                break
            self.assertLess(time.monotonic(), deadline, "the writer never finished")
            time.sleep(0.01)
        task = self.wait_for(arn, "STOPPED")
        self.assertEqual(task["containers"][0].get("exitCode"), 0, task)
        self.assertLessEqual(most, 2 * self.CAP, f"log directory reached {most} bytes")
        self.assertLessEqual(log_dir_bytes(log_dir), 2 * self.CAP)
        # Nothing is lost at the end: dd's report and the last line are there, and no FIFO is left.
        text = self.log_text(arn)
        self.assertTrue(text.endswith("writer-done\n"), text[-300:])
        took = re.search(r"^dd-centiseconds (\d+)$", text, re.M)
        self.assertIsNotNone(took, text[-300:])
        rate = 160 / max(int(took.group(1)), 1) * 100
        self.assertFalse(any(n.endswith(".fifo") for n in os.listdir(log_dir)))
        print(f"\nlog cap: dd wrote 160 MiB at {rate:.0f} MiB/s through the pump; the log directory held at most "
              f"{most} bytes over {samples} samples (cap {self.CAP})", file=sys.stderr)
        # `paddock logs` reads what the pump wrote: the rotated part, then the current one.
        r = subprocess.run([h.paddock_bin(), "logs", "--state-dir", self.state_dir, arn], capture_output=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.endswith(b"writer-done\n"))
        self.assertGreater(len(r.stdout), self.CAP)  # both parts

    def test_output_written_while_the_agent_is_down_is_pumped_after_it_restarts(self):
        # Its own server: killed (-9) and started again on the same state directory.
        state = os.path.join(self.tmp, "restart-state")
        os.makedirs(state)
        _, key_id, secret = h.create_account(state, None, "restart")
        import_busybox(state, os.path.join(self.tmp, "restart-work"))
        live = {}  # the server now running, and its client: the cleanups use whichever is current
        live["server"] = h.Server(state).start()
        self.addCleanup(lambda: live["server"].stop())
        server = live["server"]
        ecs = live["ecs"] = h.ecs_client(server.endpoint, key_id, secret)
        ec2 = boto3.client("ec2", endpoint_url=server.endpoint, region_name=h.REGION,
                           aws_access_key_id=key_id, aws_secret_access_key=secret)
        subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        ecs.create_cluster(clusterName="limits")
        td = ecs.register_task_definition(
            family="ticker", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "app", "image": IMAGE, "essential": True, "stopTimeout": 1, "command": [
                "sh", "-c", "i=0; while [ $i -lt 100000 ]; do echo tick $i; i=$((i+1)); sleep 0.02; done"]}],
        )["taskDefinition"]["taskDefinitionArn"]
        arn = ecs.run_task(cluster="limits", taskDefinition=td, launchType="FARGATE",
                           networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet]}})["tasks"][0]["taskArn"]
        self.addCleanup(lambda: th.stop_quietly(live["ecs"], "limits", arn))
        th.wait_for_status(self, ecs, "limits", arn, "RUNNING", 30, server.log_tail)
        log = os.path.join(state, "logs", arn.rsplit("/", 1)[1], "app.log")
        time.sleep(0.5)
        server.kill()  # the agent goes; the container keeps writing into its FIFO
        size_down = os.path.getsize(log)
        time.sleep(1.5)
        self.assertEqual(os.path.getsize(log), size_down)  # nobody pumps meanwhile
        server = live["server"] = h.Server(state).start()
        ecs = live["ecs"] = h.ecs_client(server.endpoint, key_id, secret)
        deadline = time.monotonic() + 20
        while os.path.getsize(log) <= size_down:
            self.assertLess(time.monotonic(), deadline, f"the log never grew again: {server.log_tail()}")
            time.sleep(0.05)
        time.sleep(0.3)
        ecs.stop_task(cluster="limits", task=arn, reason="test done")
        th.wait_for_status(self, ecs, "limits", arn, "STOPPED", 30, server.log_tail)
        with open(log) as f:
            ticks = [int(m) for m in re.findall(r"^tick (\d+)$", f.read(), re.M)]
        # Every tick, in order, none lost while the agent was away.
        self.assertGreater(len(ticks), 50)
        self.assertEqual(ticks, list(range(len(ticks))))


def open_descriptors(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


# Asks the task's own metadata endpoint for its task document and prints the status line.
ASK_METADATA = ('p=${ECS_CONTAINER_METADATA_URI_V4#http://169.254.170.2}; '
                'printf "GET $p/task HTTP/1.0\\r\\n\\r\\n" | nc 169.254.170.2 80 | head -1')


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class MetadataConnections(TaskCase):
    """A task cannot spend the node process's descriptors through its metadata endpoint (found by
    the issue 9 red team: 24 processes of one task held 20,000 idle connections, the server's
    whole RLIMIT_NOFILE, and the agents failed to list containers, apply security groups and open
    image blobs — another account's task stopped with CannotPullContainerError)."""

    HOLDERS = 300

    def test_one_task_holds_at_most_its_share_of_connections_and_others_are_still_served(self):
        baseline = open_descriptors(self.server.proc.pid)
        flood = self.run_one(self.register(
            ["/bin/sh", "-c", f"for i in $(seq {self.HOLDERS}); do (sleep 40 | nc 169.254.170.2 80) & done; "
                              "echo holders-started; exec sleep 40"]))
        self.wait_for(flood, "RUNNING")
        self.wait_for_log(flood, "holders-started")
        # Every nc has connected (or been refused) well within this; sample all along.
        most = baseline
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            most = max(most, open_descriptors(self.server.proc.pid))
            time.sleep(0.05)
        print(f"\n{self.HOLDERS} idle connections from one task: the server's descriptors went from {baseline} "
              f"to at most {most}", file=sys.stderr)
        # The cap (64 per address) plus what running a task costs the agent (FIFOs, pidfds, ...).
        self.assertLess(most - baseline, 64 + 40, self.server.log_tail())
        # ... and the flood did reach it: the cap's 64 were held (a flood that never connected proves nothing).
        self.assertGreaterEqual(most - baseline, 64, self.server.log_tail())
        # Another task of the node still gets its metadata while the flood holds.
        other = self.run_one(self.register(["/bin/sh", "-c", f"{ASK_METADATA}; exec sleep 30"]))
        self.wait_for(other, "RUNNING")
        self.assertIn("HTTP/1.1 200", self.wait_for_log(other, "HTTP/1.1"))
        self.stop(flood)
        self.stop(other)


class _Hashing(io.RawIOBase):
    """A write-only stream that hashes and counts what passes through to `out`."""

    def __init__(self, out):
        self.out = out
        self.sha = hashlib.sha256()
        self.size = 0

    def writable(self):
        return True

    def write(self, b):
        self.sha.update(b)
        self.size += len(b)
        return self.out.write(b)


def bomb_layout(path, unpacked_bytes):
    """An OCI image layout at `path` named bomb:1 whose one gzip layer expands to `unpacked_bytes`
    of zeros (a small archive: zeros compress ~1000:1), written as a stream. Returns the layer's
    compressed size."""
    blobs = os.path.join(path, "blobs", "sha256")
    os.makedirs(blobs)

    def blob(data):
        digest = hashlib.sha256(data).hexdigest()
        with open(os.path.join(blobs, digest), "wb") as f:
            f.write(data)
        return {"digest": "sha256:" + digest, "size": len(data)}

    staged = os.path.join(path, "layer.tmp")
    with open(staged, "wb") as raw:
        compressed = _Hashing(raw)
        with gzip.GzipFile(fileobj=compressed, mode="wb", compresslevel=9, mtime=0) as gz:
            uncompressed = _Hashing(gz)
            with tarfile.open(fileobj=uncompressed, mode="w|", format=tarfile.PAX_FORMAT) as t:
                info = tarfile.TarInfo("zeros")
                info.size = unpacked_bytes
                chunk = bytes(MIB)

                class Zeros:
                    left = unpacked_bytes

                    def read(self, n=-1):
                        n = min(self.left, MIB if n is None or n < 0 else n)
                        self.left -= n
                        return chunk[:n]

                t.addfile(info, Zeros())
    layer_digest = compressed.sha.hexdigest()
    os.rename(staged, os.path.join(blobs, layer_digest))
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Cmd": ["sh"]},
                         "rootfs": {"type": "layers", "diff_ids": ["sha256:" + uncompressed.sha.hexdigest()]}}).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **blob(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": "sha256:" + layer_digest,
                    "size": compressed.size}]}).encode()
    with open(os.path.join(path, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", **blob(manifest),
             "annotations": {"org.opencontainers.image.ref.name": "bomb:1"}}]}, f)
    with open(os.path.join(path, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    return compressed.size


def tar_of(directory, out):
    with tarfile.open(out, "w") as t:
        for name in sorted(os.listdir(directory)):
            t.add(os.path.join(directory, name), arcname=name)
    return out


BOUND = 8 * MIB
BOMB_BYTES = 256 * MIB
EXTRACT = re.compile(r"failed to extract layer sha256:[0-9a-f]{64}: the image unpacks to more than 8 MiB, this "
                     r"node's limit \(images.max_unpacked_bytes = 8388608\)")


def pull_skip_reason():
    return th.skip_reason(tools=("crun", "skopeo", "docker-registry"))


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class Images(h.PaddockTestCase):
    """Finding 10: a node that unpacks at most 8 MiB per image, and a bomb expanding to 256 MiB."""

    @classmethod
    def setUpClass(cls):
        from test_pull import free_port
        # The bomb's registry is on the node's loopback: listed, or the pull would be refused first.
        cls.registry_port = free_port()
        cls.CONFIG = f'[images]\nmax_unpacked_bytes = {BOUND}\nlocal_registries = ["127.0.0.1:{cls.registry_port}"]\n'
        super().setUpClass()
        cls.layout = os.path.join(cls.tmp, "bomb-layout")
        cls.compressed = bomb_layout(cls.layout, BOMB_BYTES)
        cls.archive = tar_of(cls.layout, os.path.join(cls.tmp, "bomb.tar"))
        import_busybox(cls.state_dir, cls.tmp)  # the store holds an image: "unchanged" means something

    def images_dir(self, state=None):
        return os.path.join(state or self.state_dir, "images")

    def test_import_of_a_gzip_bomb_is_refused_early_and_leaves_nothing(self):
        before = tree(self.images_dir())
        started = time.monotonic()
        rc, out, _, err = image(self.state_dir, "--max-unpacked-bytes", str(BOUND), "import", self.archive,
                                check=False)
        elapsed = time.monotonic() - started
        self.assertEqual(rc, 1, err)
        self.assertEqual(out, [])
        self.assertRegex(err, EXTRACT)
        self.assertEqual(tree(self.images_dir()), before)
        print(f"\nbomb ({self.compressed} bytes gzipped, {BOMB_BYTES >> 20} MiB unpacked) refused in "
              f"{elapsed:.2f} s", file=sys.stderr)

    def test_an_image_bigger_than_the_free_space_is_refused_and_leaves_nothing(self):
        # A state directory on a 48 MiB tmpfs: the bound (20 GiB by default) is not what stops it.
        state = os.path.join(self.tmp, "small-state")
        os.makedirs(state)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m,mode=0700", "tmpfs", state], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", state], check=False)
        import_busybox(state, os.path.join(self.tmp, "small-work"))
        before = tree(self.images_dir(state))
        rc, out, _, err = image(state, "import", self.archive, check=False)
        self.assertEqual(rc, 1, err)
        self.assertRegex(err, r"failed to extract layer sha256:[0-9a-f]{64}: no space left on device: the image "
                              r"needs more than the [0-9.]+ MiB free in .*/images")
        self.assertEqual(tree(self.images_dir(state)), before)

    @unittest.skipIf(pull_skip_reason() is not None, pull_skip_reason() or "")
    def test_a_pulled_bomb_stops_its_task_with_cannot_pull_and_leaves_nothing(self):
        from test_pull import Registry, push
        registry = Registry(os.path.join(self.tmp, "registry"), os.path.join(self.tmp, "registry-storage"),
                            port=self.registry_port)
        self.addCleanup(registry.stop)
        ref = f"{registry.host}/bomb:1"
        push(self.layout, ref)
        ec2 = boto3.client("ec2", endpoint_url=self.server.endpoint, region_name=h.REGION,
                           aws_access_key_id=self.key_id, aws_secret_access_key=self.secret)
        subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        self.ecs.create_cluster(clusterName="bomb")
        td = self.ecs.register_task_definition(
            family="bomb", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "app", "image": ref, "essential": True}])["taskDefinition"]
        before = tree(self.images_dir())
        arn = self.ecs.run_task(cluster="bomb", taskDefinition=td["taskDefinitionArn"], launchType="FARGATE",
                                networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet]}})["tasks"][0]["taskArn"]
        task = th.wait_for_status(self, self.ecs, "bomb", arn, "STOPPED", 60, self.server.log_tail)
        self.assertEqual(task["stopCode"], "TaskFailedToStart")
        reason = task["stoppedReason"]
        self.assertTrue(reason.startswith(f"CannotPullContainerError: ref pull has been retried 1 time(s): the pulled "
                                          f"image {ref} cannot be stored: "), reason)
        self.assertRegex(reason, EXTRACT)
        self.assertEqual(task["containers"][0]["reason"], reason)
        self.assertEqual(tree(self.images_dir()), before)
        # `paddock image pull` is refused the same way.
        rc, out, _, err = image(self.state_dir, "--max-unpacked-bytes", str(BOUND), "pull", ref, check=False)
        self.assertEqual(rc, 1)
        self.assertIn("CannotPullContainerError: ref pull has been retried 1 time(s)", err)
        self.assertRegex(err, EXTRACT)
        self.assertEqual(tree(self.images_dir()), before)


AGENT_TARGET = "PaddockAgentV20261130"


def total(cpu=2048, memory=2048):
    return [{"name": "CPU", "type": "INTEGER", "integerValue": cpu},
            {"name": "MEMORY", "type": "INTEGER", "integerValue": memory}]


class LongPolls(h.PaddockTestCase):
    """Finding 13: 16 wait slots (the default), an attacker account with 20 instances polling 80
    times at once, and a victim account's one instance."""

    CONFIG = "agent_timeout_seconds = 30\n"  # a long-poll waits at most 10 s

    def register(self, account_signer, cluster):
        """Registers a container instance as `paddock agent` does (RegisterAgent, signed with the
        account's key) and returns its ARN and a signer with the instance's own agent credential:
        only that credential may poll for it (docs/agent-protocol.md, "Identity")."""
        answer = self.call(account_signer, "RegisterAgent", {
            "cluster": cluster, "totalResources": total(),
            "attributes": [{"name": "com.amazonaws.ecs.capability.docker-remote-api.1.21"}]})
        creds = answer["credentials"]
        return (answer["containerInstance"]["containerInstanceArn"],
                h.RawSigner(creds["accessKeyId"], creds["secretAccessKey"]))

    def call(self, signer, action, doc, timeout=40):
        body = json.dumps(doc).encode()
        host = f"127.0.0.1:{self.server.port}"
        headers = signer.headers(host, body, target=f"{AGENT_TARGET}.{action}")
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=timeout)
        try:
            conn.request("POST", "/", body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
        finally:
            conn.close()
        self.assertEqual(r.status, 200, data)
        return json.loads(data)

    def poll(self, signer, cluster, instance, version, wait=20, timeout=40):
        return self.call(signer, "PollAssignments", {"cluster": cluster, "containerInstance": instance,
                                                      "knownVersion": version, "waitSeconds": wait}, timeout)

    def test_one_accounts_flood_never_keeps_another_accounts_instance_from_waiting(self):
        self.ecs.create_cluster(clusterName="lp")
        instances = [self.register(h.RawSigner(self.key_id, self.secret), "lp") for _ in range(20)]
        victim_account, victim_key, victim_secret = h.create_account(self.state_dir, None, "victim")
        victim_ecs = h.ecs_client(self.server.endpoint, victim_key, victim_secret)
        victim_ecs.create_cluster(clusterName="lp")
        mine, victim = self.register(h.RawSigner(victim_key, victim_secret), "lp")
        version = self.poll(victim, "lp", mine, "", wait=0)["version"]  # no version known: at once

        # 80 polls of the attacker's 20 instances at once: at most 16 wait, the rest come back busy.
        pool = concurrent.futures.ThreadPoolExecutor(80)
        self.addCleanup(pool.shutdown, wait=False)
        flood = [pool.submit(self.poll, instances[i % 20][1], "lp", instances[i % 20][0], version) for i in range(80)]
        deadline = time.monotonic() + 10
        while sum(f.done() for f in flood) < 64:
            self.assertLess(time.monotonic(), deadline, "the flood's refused polls never came back")
            time.sleep(0.02)
        time.sleep(0.3)  # the rest are waiting now

        # The victim's instance polls: it gets a slot (no busy answer), and its own assignment wakes it.
        started = time.monotonic()
        waiting = pool.submit(self.poll, victim, "lp", mine, version)
        time.sleep(0.5)
        self.assertFalse(waiting.done(), f"the victim's poll did not wait: {waiting.result() if waiting.done() else ''}")
        td = victim_ecs.register_task_definition(
            family="lp", requiresCompatibilities=["EC2"], networkMode="bridge",
            containerDefinitions=[{"name": "app", "image": IMAGE, "memory": 64}])["taskDefinition"]["taskDefinitionArn"]
        arn = victim_ecs.run_task(cluster="lp", taskDefinition=td, launchType="EC2")["tasks"][0]["taskArn"]
        answer = waiting.result(timeout=10)
        woken = time.monotonic() - started
        self.assertFalse(answer["busy"], answer)
        self.assertEqual([t["taskArn"] for t in answer["tasks"]], [arn])
        self.assertLess(woken, 5)
        busy = sum(1 for f in flood if f.done() and f.result()["busy"])
        print(f"\nlong-poll: {busy} of 80 flood polls answered busy; the victim waited and was woken "
              f"{woken:.2f} s after it polled", file=sys.stderr)
        victim_ecs.stop_task(cluster="lp", task=arn, reason="test done")


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class StateDirectory(TaskCase):
    """Finding 4, as a local user (nobody) would try it."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The temp directory (0700 from mkdtemp) must not be what keeps nobody out.
        os.chmod(cls.tmp, 0o755)

    def mode(self, path):
        return os.stat(path).st_mode & 0o7777

    def test_the_store_and_its_wal_are_root_only(self):
        self.assertEqual(self.mode(self.state_dir), 0o700)
        for name in ("paddock.db", "paddock.db-wal", "paddock.db-shm", "logs.db", "logs.db-wal", "logs.db-shm"):
            path = os.path.join(self.state_dir, name)
            if os.path.exists(path):
                self.assertEqual(self.mode(path), 0o600, name)
        r = as_nobody("cat", os.path.join(self.state_dir, "paddock.db"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Permission denied", r.stderr)
        # The logs store (issue 12: <state-dir>/logs.db, every tenant's log events) is as private.
        self.assertTrue(os.path.exists(os.path.join(self.state_dir, "logs.db")))
        r = as_nobody("cat", os.path.join(self.state_dir, "logs.db"))
        self.assertIn("Permission denied", r.stderr)
        # Loosened by hand (or made by an older Paddock): tightened on the next start.
        state = os.path.join(self.tmp, "loose-state")
        os.makedirs(state)
        h.create_account(state, None, "loose")
        for name in os.listdir(state):
            os.chmod(os.path.join(state, name), 0o644)
        os.chmod(state, 0o755)
        r = as_nobody("cat", os.path.join(state, "paddock.db"))
        self.assertEqual(r.returncode, 0, "the loosened store is readable, as the attack needs")
        h.Server(state).start().stop()
        self.assertEqual(self.mode(state), 0o700)
        for name in ("paddock.db", "paddock.db-wal", "paddock.db-shm", "logs.db", "logs.db-wal", "logs.db-shm"):
            if os.path.exists(os.path.join(state, name)):
                self.assertEqual(self.mode(os.path.join(state, name)), 0o600, name)
        os.chmod(state, 0o755)  # even so, the files themselves refuse nobody
        r = as_nobody("cat", os.path.join(state, "paddock.db"))
        self.assertIn("Permission denied", r.stderr)

    def test_a_setuid_binary_of_an_imported_layer_is_out_of_reach(self):
        # A layer holding a setuid-root `id` (prints the effective uid: 0 if the bit works).
        layer = io.BytesIO()
        with tarfile.open(fileobj=layer, mode="w") as t:
            info = t.gettarinfo(shutil.which("id"), arcname="bin/rootme")
            info.mode, info.uid, info.gid = 0o4755, 0, 0
            with open(shutil.which("id"), "rb") as f:
                t.addfile(info, f)
        layer_bytes = layer.getvalue()
        diff_id = hashlib.sha256(layer_bytes).hexdigest()
        config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Cmd": ["/bin/rootme"]},
                             "rootfs": {"type": "layers", "diff_ids": ["sha256:" + diff_id]}}).encode()
        config_name = hashlib.sha256(config).hexdigest() + ".json"
        archive = os.path.join(self.tmp, "suid.tar")
        with tarfile.open(archive, "w") as t:
            for name, data in ((config_name, config), ("l/layer.tar", layer_bytes),
                               ("manifest.json", json.dumps([{"Config": config_name, "RepoTags": ["suid:1"],
                                                              "Layers": ["l/layer.tar"]}]).encode())):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        image(self.state_dir, "import", archive)
        rootme = os.path.join(self.state_dir, "images", "layers", diff_id, "bin", "rootme")
        self.assertEqual(self.mode(rootme), 0o4755)  # the image is kept as it is
        self.assertEqual(self.mode(os.path.join(self.state_dir, "images")), 0o700)
        try:
            for state_mode in (0o700, 0o755):  # as made, and with the state directory loosened by hand
                os.chmod(self.state_dir, state_mode)
                r = as_nobody(rootme, "-u")
                self.assertNotEqual(r.returncode, 0, f"state directory {state_mode:o}: {r.stdout}")
                self.assertNotIn("0", r.stdout.split())
                self.assertIn("Permission denied", r.stderr)
        finally:
            os.chmod(self.state_dir, 0o700)

    def test_a_setuid_file_made_in_a_volume_is_out_of_reach_and_the_mounts_are_nosuid_nodev(self):
        arn = self.run_one(self.register(
            ["sh", "-c", "cp /bin/busybox /v/rootme && chmod 4755 /v/rootme && echo made && "
                         "cat /proc/self/mountinfo && echo mounts-done && exec sleep 20"],
            volumes=[{"name": "v"}], mount_points=[{"sourceVolume": "v", "containerPath": "/v"}]))
        text = self.wait_for_log(arn, "mounts-done")
        task_dir = os.path.join(self.state_dir, "tasks", arn.rsplit("/", 1)[1])
        rootme = os.path.join(task_dir, "volumes", "v", "rootme")
        self.assertEqual(self.mode(rootme), 0o4755)
        self.assertEqual(self.mode(task_dir), 0o700)
        self.assertEqual(self.mode(os.path.join(self.state_dir, "tasks")), 0o700)
        os.chmod(self.state_dir, 0o755)  # even with the state directory loosened by hand
        try:
            r = as_nobody(rootme, "id", "-u")
        finally:
            os.chmod(self.state_dir, 0o700)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("Permission denied", r.stderr)
        # The container's root and its volume are mounted nosuid,nodev.
        options = {}
        for line in text.splitlines():
            fields = line.split()
            if len(fields) > 5 and fields[4] in ("/", "/v"):
                options[fields[4]] = set(fields[5].split(","))
        self.assertEqual(set(options), {"/", "/v"}, text)
        for point, opts in options.items():
            self.assertTrue({"nosuid", "nodev"} <= opts, f"{point}: {opts}")
        self.stop(arn)

    def test_root_still_uses_the_state_directory(self):
        self.assertEqual(image(self.state_dir, "ls")[0], 0)
        self.assertIn(self.account, [a["account"] for a in h.admin(self.state_dir, "list-accounts")])
        arn = self.run_one(self.register(["sh", "-c", "echo hello-logs"]))
        self.wait_for(arn, "STOPPED")
        r = subprocess.run([h.paddock_bin(), "logs", "--state-dir", self.state_dir, arn], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "hello-logs\n")


if __name__ == "__main__":
    unittest.main()
