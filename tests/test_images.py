"""`paddock image` against a state dir while a server runs on it: import-rootfs from Debian's
busybox-static, import of a `docker save` archive built here, ls, rm and garbage collection."""

import concurrent.futures
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402

BUSYBOX = "/bin/busybox"


def image(state_dir, *args, check=True):
    """Runs `paddock image --state-dir DIR ARGS`; returns (rc, parsed JSON lines, stdout, stderr)."""
    r = subprocess.run([h.paddock_bin(), "image", "--state-dir", state_dir, *args],
                       capture_output=True, timeout=120)
    out, err = r.stdout.decode(), r.stderr.decode()
    if check and r.returncode != 0:
        raise AssertionError(f"paddock image {args} failed rc={r.returncode}: {out!r} {err!r}")
    lines = [json.loads(l) for l in out.splitlines() if l.strip().startswith("{")]
    return r.returncode, lines, out, err


def busybox_rootfs(path, applets=(), page=None):
    """A minimal rootfs: /bin/busybox plus a few applet symlinks (and `applets`) and an /etc; with
    `page`, /www/index.html holding it (for `httpd -h /www`)."""
    os.makedirs(os.path.join(path, "bin"))
    os.makedirs(os.path.join(path, "etc"))
    shutil.copy2(BUSYBOX, os.path.join(path, "bin", "busybox"))
    for applet in ("sh", "echo", "ls", "httpd", "cat", *applets):
        os.symlink("busybox", os.path.join(path, "bin", applet))
    with open(os.path.join(path, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\n")
    if page is not None:
        os.makedirs(os.path.join(path, "www"))
        with open(os.path.join(path, "www", "index.html"), "w") as f:
            f.write(page)
    return path


def docker_save_archive(path, repo_tag, layer_files):
    """A `docker save` archive with one image of one layer holding `layer_files` {name: bytes}."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in sorted(layer_files.items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755
            info.mtime = 1700000000
            t.addfile(info, io.BytesIO(data))
    layer_bytes = layer.getvalue()
    diff_id = "sha256:" + hashlib.sha256(layer_bytes).hexdigest()
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Cmd": ["/hello"]},
                         "rootfs": {"type": "layers", "diff_ids": [diff_id]}}).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [repo_tag],
                            "Layers": ["l1/layer.tar"]}]).encode()
    with tarfile.open(path, "w") as t:
        for name, data in ((config_name, config), ("l1/layer.tar", layer_bytes), ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return diff_id


class Images(h.PaddockTestCase):

    def images_dir(self):
        return os.path.join(self.state_dir, "images")

    def listed(self):
        return {i["reference"]: i for i in image(self.state_dir, "ls", "--json")[1]}

    def test_import_rootfs_ls_rm_while_the_server_runs(self):
        if not os.path.exists(BUSYBOX):
            self.skipTest("busybox-static is not installed")
        root = busybox_rootfs(os.path.join(self.tmp, "bb-rootfs"))
        _, out, _, _ = image(self.state_dir, "import-rootfs", root, "--name", "busybox:test",
                             "--cmd", "httpd -f -p 80", "--env", "A=1")
        self.assertEqual(out, [{"imported": "docker.io/library/busybox:test"}])
        listed = self.listed()
        self.assertIn("docker.io/library/busybox:test", listed)
        img = listed["docker.io/library/busybox:test"]
        self.assertRegex(img["manifestDigest"], r"^sha256:[0-9a-f]{64}$")
        self.assertEqual(img["layers"], 1)
        self.assertGreater(img["size"], os.path.getsize(BUSYBOX))
        # The table form too.
        _, _, table, _ = image(self.state_dir, "ls")
        self.assertIn("docker.io/library/busybox:test", table)
        self.assertIn(img["manifestDigest"][7:19], table)
        # The unpacked layer is a usable rootfs: its busybox runs.
        layers = os.listdir(os.path.join(self.images_dir(), "layers"))
        self.assertEqual(len(layers), 1)
        bb = os.path.join(self.images_dir(), "layers", layers[0], "bin", "busybox")
        self.assertEqual(subprocess.run([bb, "echo", "from-the-layer"], capture_output=True).stdout,
                         b"from-the-layer\n")
        self.assertEqual(os.readlink(os.path.join(self.images_dir(), "layers", layers[0], "bin", "sh")), "busybox")
        # The server on the same state directory is unaffected and keeps answering.
        self.ecs.create_cluster(clusterName="images-bystander")
        self.assertServerAlive()
        _, out, _, _ = image(self.state_dir, "rm", "busybox:test")
        self.assertEqual(out, [{"removed": "docker.io/library/busybox:test"}])
        self.assertNotIn("docker.io/library/busybox:test", self.listed())
        self.assertEqual(os.listdir(os.path.join(self.images_dir(), "layers")), [])
        rc, _, _, err = image(self.state_dir, "rm", "busybox:test", check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("not found", err)
        self.ecs.describe_clusters(clusters=["images-bystander"])
        self.assertServerAlive()

    def test_import_docker_save_archive_and_refuse_a_bad_one(self):
        archive = os.path.join(self.tmp, "hello.tar")
        docker_save_archive(archive, "localhost:5000/hello:1", {"hello": b"#!/bin/sh\necho hello\n"})
        _, out, _, _ = image(self.state_dir, "import", archive)
        self.assertEqual(out, [{"imported": "localhost:5000/hello:1"}])
        self.assertIn("localhost:5000/hello:1", self.listed())
        # Importing again is a no-op.
        before = self.listed()["localhost:5000/hello:1"]
        image(self.state_dir, "import", archive)
        self.assertEqual(self.listed()["localhost:5000/hello:1"], before)
        # A layer with a path climbing out of its root is refused and leaves nothing behind.
        bad = os.path.join(self.tmp, "bad.tar")
        docker_save_archive(bad, "bad:1", {"../../escape": b"x"})
        blobs = sorted(os.listdir(os.path.join(self.images_dir(), "blobs", "sha256")))
        rc, _, _, err = image(self.state_dir, "import", bad, check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("climbs out", err)
        self.assertNotIn("docker.io/library/bad:1", self.listed())
        self.assertEqual(sorted(os.listdir(os.path.join(self.images_dir(), "blobs", "sha256"))), blobs)
        self.assertEqual(os.listdir(os.path.join(self.images_dir(), "tmp")), [])
        image(self.state_dir, "rm", "localhost:5000/hello:1")
        self.assertServerAlive()

    def test_concurrent_imports_of_one_tree_unpack_it_once(self):
        root = os.path.join(self.tmp, "shared-rootfs")
        os.makedirs(os.path.join(root, "etc"))
        with open(os.path.join(root, "etc", "motd"), "w") as f:
            f.write("shared\n")
        names = [f"shared:{i}" for i in range(6)]
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            results = list(pool.map(
                lambda n: image(self.state_dir, "import-rootfs", root, "--name", n, check=False), names))
        for rc, _, out, err in results:
            self.assertEqual(rc, 0, (out, err))
        listed = self.listed()
        digests = {listed[f"docker.io/library/{n}"]["manifestDigest"] for n in names}
        self.assertEqual(len(digests), 1)
        layers = os.listdir(os.path.join(self.images_dir(), "layers"))
        self.assertEqual(len(layers), 1)
        # Removing all but one keeps the shared files; removing the last deletes them.
        image(self.state_dir, "rm", *names[:-1])
        self.assertEqual(os.listdir(os.path.join(self.images_dir(), "layers")), layers)
        image(self.state_dir, "rm", names[-1])
        self.assertEqual(os.listdir(os.path.join(self.images_dir(), "layers")), [])
        self.assertEqual(os.listdir(os.path.join(self.images_dir(), "blobs", "sha256")), [])


if __name__ == "__main__":
    unittest.main()
