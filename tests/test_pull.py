"""Pulling task images from a registry: a real Debian docker-registry on 127.0.0.1 (plain HTTP,
filesystem storage in a temp dir) holding a busybox image pushed with skopeo. The registry is on the
node's loopback, so the node's config lists it ([images] local_registries: tasks may pull from no
other registry on the node's own addresses). RunTask of an image the store lacks pulls it (skopeo)
and runs it; a missing tag, an unreachable registry, a registry that wants credentials and a node
that refuses plain HTTP stop the task with ECS's CannotPullContainerError text. Needs root, crun,
skopeo, docker-registry and busybox-static."""

import concurrent.futures
import hashlib
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
import task_harness as th  # noqa: E402
from test_images import busybox_rootfs, image  # noqa: E402

PAGE = "hello from a pulled image\n"
PULL_PREFIX = "CannotPullContainerError: pull image manifest has been retried 1 time(s): failed to resolve ref "


def skip_reason():
    return th.skip_reason(tools=("crun", "skopeo", "docker-registry"))


def free_port():
    """A loopback port nothing listens on (bound once to port 0, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bcrypt_htpasswd(user, password):
    """An htpasswd line the registry accepts (bcrypt, from glibc's crypt), or None."""
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import crypt
        hashed = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))
    except Exception:  # noqa: BLE001 - no crypt module or no bcrypt in libcrypt
        return None
    return f"{user}:{hashed}\n" if hashed and hashed.startswith("$2") else None


class Registry:
    """One `docker-registry serve` on 127.0.0.1:<free port>, stopped by its PID."""

    def __init__(self, workdir, storage, htpasswd=None, start_timeout=10, port=None):
        os.makedirs(workdir, exist_ok=True)
        self.port = port or free_port()
        self.log_path = os.path.join(workdir, "registry.log")
        config = ["version: 0.1", "log:", "  level: error", "storage:", "  filesystem:",
                  f"    rootdirectory: {storage}", "http:", f"  addr: 127.0.0.1:{self.port}"]
        if htpasswd:
            path = os.path.join(workdir, "htpasswd")
            with open(path, "w") as f:
                f.write(htpasswd)
            config += ["auth:", "  htpasswd:", "    realm: paddock-test", f"    path: {path}"]
        config_path = os.path.join(workdir, "config.yml")
        with open(config_path, "w") as f:
            f.write("\n".join(config) + "\n")
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(["docker-registry", "serve", config_path], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/v2/", timeout=1).close()
                break
            except urllib.error.HTTPError:
                break  # 401 from an authenticating registry: it answers
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"docker-registry did not start: {self.log()}")
                time.sleep(0.02)

    @property
    def host(self):
        return f"127.0.0.1:{self.port}"

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, 15)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, 9)
                self.proc.wait(timeout=10)


def oci_layout(path, rootfs, cmd):
    """An OCI image layout at `path`: one uncompressed layer of the tree `rootfs`, config with Cmd."""
    blobs = os.path.join(path, "blobs", "sha256")
    os.makedirs(blobs)

    def blob(data):
        digest = hashlib.sha256(data).hexdigest()
        with open(os.path.join(blobs, digest), "wb") as f:
            f.write(data)
        return {"digest": "sha256:" + digest, "size": len(data)}

    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name in sorted(os.listdir(rootfs)):
            t.add(os.path.join(rootfs, name), arcname=name)
    layer_bytes = layer.getvalue()
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Cmd": cmd},
                         "rootfs": {"type": "layers",
                                    "diff_ids": ["sha256:" + hashlib.sha256(layer_bytes).hexdigest()]}}).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **blob(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **blob(layer_bytes)}]}).encode()
    with open(os.path.join(path, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", **blob(manifest)}]}, f)
    with open(os.path.join(path, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)


class SlowProxy:
    """A loopback TCP proxy to `port` that passes what the server sends back at about `rate` bytes a
    second (what comes from the client goes at once): a slow registry, for pulls that take seconds."""

    def __init__(self, port, rate, listen_port=0):
        self.target, self.rate = port, rate
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", listen_port))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=self._pump, args=(client, upstream, None), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, self.rate), daemon=True).start()

    @staticmethod
    def _pump(src, dst, rate):
        chunk = 16 * 1024
        try:
            while True:
                data = src.recv(chunk)
                if not data:
                    break
                dst.sendall(data)
                if rate:
                    time.sleep(len(data) / rate)  # the throttle itself
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self):
        self.listener.close()


def push(layout, ref):
    subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", "--dest-no-creds",
                    f"oci:{layout}", f"docker://{ref}"], check=True, capture_output=True, timeout=60)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class Pull(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        # The node's loopback registries its tasks may pull from: the registry, the one that wants
        # credentials and a port where nothing listens (all chosen before the server starts).
        cls.registry_port, cls.locked_port, cls.unreachable_port = free_port(), free_port(), free_port()
        cls.slow_port = free_port()  # test_9b's slow proxy to the registry
        listed = ", ".join(f'"127.0.0.1:{p}"' for p in (cls.registry_port, cls.locked_port, cls.unreachable_port,
                                                        cls.slow_port))
        cls.CONFIG = f"[images]\nlocal_registries = [{listed}]\n"
        super().setUpClass()
        root = cls.rootfs = busybox_rootfs(os.path.join(cls.tmp, "bb-rootfs"), page=PAGE)
        cls.layout = os.path.join(cls.tmp, "layout")
        oci_layout(cls.layout, root, ["httpd", "-f", "-p", "8080", "-h", "/www"])
        cls.storage = os.path.join(cls.tmp, "registry-storage")
        cls.registry = Registry(os.path.join(cls.tmp, "registry"), cls.storage, port=cls.registry_port)
        cls.addClassCleanup(cls.registry.stop)
        for tag in ("1", "2", "3"):
            push(cls.layout, f"{cls.registry.host}/busybox:{tag}")
        # Another image (same layer, another config) for the pull by digest.
        cls.other_layout = os.path.join(cls.tmp, "other-layout")
        oci_layout(cls.other_layout, root, ["sh", "-c", "exit 0"])
        push(cls.other_layout, f"{cls.registry.host}/other:1")
        cls.ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)
        cls.subnet = cls.ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        cls.ecs.create_cluster(clusterName="pull")
        cls.families = 0

    def register(self, image, command=None, ecs=None):
        Pull.families += 1
        container = {"name": "app", "image": image, "essential": True, "stopTimeout": 2}
        if command is not None:
            container["command"] = command
        return (ecs or self.ecs).register_task_definition(
            family=f"pull-{Pull.families}", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256",
            memory="512", containerDefinitions=[container])["taskDefinition"]["taskDefinitionArn"]

    def run_one(self, td, ecs=None, subnet=None):
        r = (ecs or self.ecs).run_task(
            cluster="pull", taskDefinition=td, launchType="FARGATE",
            networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet or self.subnet]}})
        self.assertEqual(r["failures"], [])
        return r["tasks"][0]["taskArn"]

    def wait_for(self, arn, status, timeout=60, ecs=None):
        return th.wait_for_status(self, ecs or self.ecs, "pull", arn, status, timeout, self.server.log_tail)

    def listed(self):
        return {i["reference"] for i in image(self.state_dir, "ls", "--json")[1]}

    def blob_gets(self):
        """GETs of each blob the registry served, by digest."""
        counts = {}
        for line in self.registry.log().splitlines():
            if '"GET /v2/busybox/blobs/sha256:' in line:
                digest = line.split("/blobs/", 1)[1].split(" ", 1)[0]
                counts[digest] = counts.get(digest, 0) + 1
        return counts

    def assertPullFailure(self, image_ref, expected_prefix, ecs=None, subnet=None):
        arn = self.run_one(self.register(image_ref, ecs=ecs), ecs=ecs, subnet=subnet)
        task = self.wait_for(arn, "STOPPED", ecs=ecs)
        self.assertEqual(task["stopCode"], "TaskFailedToStart")
        reason = task["stoppedReason"]
        self.assertTrue(reason.startswith(expected_prefix), reason)
        # The container carries the same reason, as ECS reports it.
        self.assertEqual(task["containers"][0]["reason"], reason)
        self.assertEqual(task["containers"][0]["lastStatus"], "STOPPED")
        self.assertNotIn("exitCode", task["containers"][0])
        return reason

    def test_1_a_task_pulls_its_image_runs_and_serves(self):
        ref = f"{self.registry.host}/busybox:1"
        self.assertNotIn(ref, self.listed())
        arn = self.run_one(self.register(ref))
        task = self.wait_for(arn, "RUNNING")
        self.assertIn(ref, self.listed())
        self.assertLessEqual(task["pullStartedAt"], task["pullStoppedAt"])
        self.assertEqual(th.fetch(f"http://{th.task_ip(task)}:8080/"), PAGE)
        self.ecs.stop_task(cluster="pull", task=arn, reason="test done")
        self.wait_for(arn, "STOPPED")
        # A second task of the same image runs from the store: nothing more is fetched.
        before = self.blob_gets()
        arn = self.run_one(self.register(ref, command=["sh", "-c", "exit 0"]))
        task = self.wait_for(arn, "STOPPED")
        self.assertEqual(task["containers"][0]["exitCode"], 0)
        self.assertEqual(self.blob_gets(), before)

    def test_2_concurrent_tasks_of_one_new_image_fetch_it_once(self):
        ref = f"{self.registry.host}/busybox:2"
        before = self.blob_gets()
        td = self.register(ref, command=["sh", "-c", "exit 0"])
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            arns = list(pool.map(lambda _: self.run_one(td), range(4)))
        for arn in arns:
            task = self.wait_for(arn, "STOPPED")
            self.assertEqual(task["stopCode"], "EssentialContainerExited", task)
            self.assertEqual(task["containers"][0]["exitCode"], 0)
        self.assertIn(ref, self.listed())
        fetched = {d: n - before.get(d, 0) for d, n in self.blob_gets().items() if n != before.get(d, 0)}
        # Tag 2 is the same image as tag 1 (already stored) or new blobs: never any blob twice.
        self.assertTrue(all(n == 1 for n in fetched.values()), fetched)

    def test_3_a_missing_tag_stops_the_task_with_cannot_pull(self):
        ref = f"{self.registry.host}/busybox:nope"
        reason = self.assertPullFailure(ref, f"{PULL_PREFIX}{ref}: {ref}: not found; ")
        # ECS's words and where the image is not, nothing of the registry's.
        self.assertTrue(reason.startswith(f"{PULL_PREFIX}{ref}: {ref}: not found; {ref} is neither in this node's "
                                          f"image store nor in its registry {self.registry.host}"), reason)
        self.assertNotIn("manifest unknown", reason)  # the registry's own words stay in the node's log
        missing_repo = f"{self.registry.host}/nothing-here:1"
        self.assertPullFailure(missing_repo, f"{PULL_PREFIX}{missing_repo}: {missing_repo}: not found")
        self.assertNotIn(ref, self.listed())

    def test_4_an_unreachable_registry_stops_the_task_with_cannot_pull(self):
        port = self.unreachable_port
        ref = f"127.0.0.1:{port}/busybox:1"
        self.assertPullFailure(
            ref, f'{PULL_PREFIX}{ref}: failed to do request: Get "http://127.0.0.1:{port}/v2/": dial tcp: connect: '
                 f'connection refused')

    def test_5_a_registry_wanting_credentials_stops_the_task_with_pull_access_denied(self):
        htpasswd = bcrypt_htpasswd("someone", "secret")
        if htpasswd is None:
            self.skipTest("no bcrypt crypt() to write an htpasswd file")
        locked = Registry(os.path.join(self.tmp, "registry-auth"), self.storage, htpasswd=htpasswd,
                          port=self.locked_port)
        self.addCleanup(locked.stop)
        ref = f"{locked.host}/busybox:1"
        reason = self.assertPullFailure(
            ref, f"{PULL_PREFIX}{ref}: pull access denied, repository does not exist or may require authorization: ")
        self.assertTrue(reason.startswith(f"{PULL_PREFIX}{ref}: pull access denied, repository does not exist or may "
                                          f"require authorization: authentication required; "), reason)
        self.assertNotIn("realm", reason)  # nothing of the registry's answer

    def test_6_a_node_that_refuses_plain_http_says_so(self):
        # A second node whose config turns loopback's exemption off: it talks HTTPS to the registry.
        config = os.path.join(self.tmp, "strict.toml")
        with open(config, "w") as f:
            f.write(f'[images]\ninsecure_loopback = false\npull_timeout_seconds = 30\n'
                    f'local_registries = ["{self.registry.host}"]\n')
        state = os.path.join(self.tmp, "strict-state")
        os.makedirs(state)
        _, key_id, secret = h.create_account(state, None, "strict")
        server = h.Server(state, ["--config", config])
        server.start()
        self.addCleanup(server.stop)
        ecs = h.ecs_client(server.endpoint, key_id, secret)
        ec2 = boto3.client("ec2", endpoint_url=server.endpoint, region_name=h.REGION,
                           aws_access_key_id=key_id, aws_secret_access_key=secret)
        subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        ecs.create_cluster(clusterName="pull")
        ref = f"{self.registry.host}/busybox:3"
        reason = self.assertPullFailure(
            ref, f'{PULL_PREFIX}{ref}: failed to do request: Get "https://{self.registry.host}/v2/": ',
            ecs=ecs, subnet=subnet)
        self.assertIn("server gave HTTP response to HTTPS client", reason)

    def test_7_an_image_named_by_digest_is_pulled_by_that_digest(self):
        out = subprocess.run(["skopeo", "inspect", "--tls-verify=false", "--no-creds",
                              f"docker://{self.registry.host}/other:1"],
                             check=True, capture_output=True, text=True, timeout=60).stdout
        digest = json.loads(out)["Digest"]
        stored = lambda: {i["manifestDigest"] for i in image(self.state_dir, "ls", "--json")[1]}  # noqa: E731
        self.assertNotIn(digest, stored())
        ref = f"{self.registry.host}/other@{digest}"
        arn = self.run_one(self.register(ref))
        task = self.wait_for(arn, "STOPPED")
        self.assertEqual(task["stopCode"], "EssentialContainerExited", task)
        self.assertEqual(task["containers"][0]["exitCode"], 0)  # the image's own Cmd ran
        if "imageDigest" in task["containers"][0]:  # once the agent reports it
            self.assertEqual(task["containers"][0]["imageDigest"], digest)
        self.assertIn(digest, stored())  # kept under the registry's digest
        # A digest the repository lacks.
        absent = f"{self.registry.host}/other@sha256:{'0' * 64}"
        self.assertPullFailure(absent, f"{PULL_PREFIX}{absent}: {absent}: not found")

    def test_8_paddock_image_pull_fetches_as_a_task_would(self):
        ref = f"{self.registry.host}/other:1"
        rc, out, _, err = image(self.state_dir, "pull", ref)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out[0]["pulled"], ref)
        self.assertRegex(out[0]["manifestDigest"], r"^sha256:[0-9a-f]{64}$")
        self.assertIn(ref, self.listed())
        before = self.blob_gets()
        self.assertEqual(image(self.state_dir, "pull", ref)[0], 0)  # already stored: nothing fetched
        self.assertEqual(self.blob_gets(), before)
        missing = f"{self.registry.host}/other:nope"
        rc, out, _, err = image(self.state_dir, "pull", missing, check=False)
        self.assertEqual(rc, 1)
        self.assertEqual(out, [])
        self.assertIn(f"CannotPullContainerError: pull image manifest has been retried 1 time(s): failed to resolve "
                      f"ref {missing}: {missing}: not found; ", err)
        self.assertNotIn(missing, self.listed())

    def test_9_a_misspelled_name_says_it_is_neither_here_nor_in_the_registry(self):
        local = f"{self.registry.host}/busybox:demo"
        image(self.state_dir, "import-rootfs", self.rootfs, "--name", local, "--cmd", "httpd -f -p 8080 -h /www")
        typo = f"{self.registry.host}/busybx:demo"
        reason = self.assertPullFailure(typo, f"{PULL_PREFIX}{typo}: {typo}: not found; ")
        self.assertTrue(reason.endswith(f"; {typo} is neither in this node's image store nor in its registry "
                                        f"{self.registry.host} (did you mean {local}?)"), reason)
        self.assertLessEqual(len(reason), 1024)
        # paddock image pull says the same.
        rc, _, _, err = image(self.state_dir, "pull", typo, check=False)
        self.assertEqual(rc, 1)
        self.assertIn(f"is neither in this node's image store nor in its registry {self.registry.host} (did you mean "
                      f"{local}?)", err)

    def test_9b_a_slow_pull_shows_its_progress(self):
        # One 4 MiB layer of noise, served at 1 MiB/s: a pull of about 4 s.
        root = os.path.join(self.tmp, "big-rootfs")
        shutil.copytree(self.rootfs, root, symlinks=True)
        with open(os.path.join(root, "noise"), "wb") as f:
            f.write(os.urandom(4 << 20))
        layout = os.path.join(self.tmp, "big-layout")
        oci_layout(layout, root, ["sh", "-c", "exit 0"])
        for tag in ("1", "2"):
            push(layout, f"{self.registry.host}/big:{tag}")
        proxy = SlowProxy(self.registry.port, 1 << 20, listen_port=self.slow_port)  # listed: on the node's loopback
        self.addCleanup(proxy.close)

        # paddock image pull: a progress line on stderr per finished layer and every 2 s; stdout as before.
        ref = f"127.0.0.1:{proxy.port}/big:1"
        rc, out, _, err = image(self.state_dir, "pull", ref)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out[0]["pulled"], ref)
        lines = [line for line in err.splitlines() if line.startswith(f"pulling {ref}: ")]
        self.assertRegex(lines[0], r": (starting|0/1 layers?, [\d.]+ \w*B of [\d.]+ MiB)$")
        last = re.search(r": 1/1 layer, (\d+\.\d MiB) of (\d+\.\d MiB)$", lines[-1])
        self.assertTrue(last and last.group(1) == last.group(2), lines[-1])
        # Bytes as they came, between the first and the last line.
        self.assertTrue(any(re.search(r": 0/1 layer, [1-9][\d.]* MiB of \d", line) for line in lines), lines)

        # A task in PENDING: `paddock logs` shows its pull on stderr (ECS's API shows none of it).
        ref = f"127.0.0.1:{proxy.port}/big:2"
        arn = self.run_one(self.register(ref))
        task_id = arn.rsplit("/", 1)[1]
        seen = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status = self.ecs.describe_tasks(cluster="pull", tasks=[arn])["tasks"][0]["lastStatus"]
            logs = subprocess.run([h.paddock_bin(), "logs", "--state-dir", self.state_dir, task_id],
                                  capture_output=True, text=True, timeout=30)
            if status == "PENDING" and re.search(r"0/1 layer, [1-9][\d.]* MiB of \d", logs.stderr):
                seen.append(logs.stderr)
                break
            if status == "STOPPED":
                break
            time.sleep(0.1)
        self.assertTrue(seen, "no pull progress while PENDING")
        self.assertRegex(seen[0], rf"^paddock: pulling {re.escape(ref)} for container app: 0/1 layer, ")
        task = self.wait_for(arn, "STOPPED")
        self.assertEqual(task["stopCode"], "EssentialContainerExited", task)
        # Once pulled, nothing of it is left.
        logs = subprocess.run([h.paddock_bin(), "logs", "--state-dir", self.state_dir, task_id],
                              capture_output=True, text=True, timeout=30)
        self.assertNotIn("pulling", logs.stderr)

    def test_9c_a_docker_format_image_pulled_by_tag_reports_the_registrys_digest(self):
        # A Docker schema 2 image: the node stores it in OCI form (skopeo rewrites the manifest),
        # but the task's imageDigest is the registry's digest for the tag, as ECS reports it.
        ref = f"{self.registry.host}/dockerfmt:1"
        subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", "--dest-no-creds", "--format", "v2s2",
                        f"oci:{self.layout}", f"docker://{ref}"], check=True, capture_output=True, timeout=60)
        head = urllib.request.Request(f"http://{self.registry.host}/v2/dockerfmt/manifests/1", method="HEAD",
                                      headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"})
        with urllib.request.urlopen(head, timeout=10) as r:
            self.assertEqual(r.headers["Content-Type"], "application/vnd.docker.distribution.manifest.v2+json")
            served = r.headers["Docker-Content-Digest"]
        td = self.register(ref)
        for _ in range(2):  # the pull, then a task from the store
            arn = self.run_one(td)
            task = self.wait_for(arn, "RUNNING")
            self.assertEqual(task["containers"][0]["imageDigest"], served)
            self.ecs.stop_task(cluster="pull", task=arn, reason="test done")
            self.wait_for(arn, "STOPPED")
        stored = {i["reference"]: i for i in image(self.state_dir, "ls", "--json")[1]}[ref]
        self.assertNotEqual(stored["manifestDigest"], served)  # the OCI form skopeo wrote


if __name__ == "__main__":
    unittest.main()
