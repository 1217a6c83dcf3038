"""The developer tooling on a fresh Debian 12: scripts/python-env (what scripts/test runs tests/ with)
takes a python3 that has boto3/botocore >= 1.40 and awscli, and on a machine without one (Debian's own
python3, no package index) stops with one message naming what is missing and how to provide it; and a
python3 without boto3 reports every test module skipped, never an import traceback. Standard library
only: this module must run on the python3 it tests."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEBIAN_PYTHON = "/usr/bin/python3"


def lacks_boto3(python):
    return subprocess.run([python, "-c", "import boto3"], capture_output=True).returncode != 0


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PythonEnv(unittest.TestCase):
    def run_python_env(self, **env):
        return subprocess.run([os.path.join(REPO, "scripts/python-env")], capture_output=True, text=True,
                              timeout=300, env={**os.environ, **env})

    @unittest.skipIf(lacks_boto3(sys.executable), f"{sys.executable} has no boto3")
    def test_a_python3_that_has_the_clients_is_taken_as_it_is(self):
        r = self.run_python_env(PADDOCK_PYTHON=sys.executable)
        self.assertEqual(r.returncode, 0, r.stderr)
        # The first candidate that has them, with nothing installed or made.
        self.assertEqual(r.stdout.strip(), sys.executable)
        self.assertEqual(r.stderr, "")

    @unittest.skipUnless(os.path.exists(DEBIAN_PYTHON) and lacks_boto3(DEBIAN_PYTHON),
                         f"needs a {DEBIAN_PYTHON} without boto3 (Debian 12's own)")
    @unittest.skipIf(os.environ.get("PADDOCK_INNER_DISCOVERY"), "inside the discovery of the test below")
    def test_a_machine_with_only_debians_python3_and_no_index_gets_one_message(self):
        tmp = tempfile.mkdtemp(prefix="paddock-pyenv-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        venv = os.path.join(tmp, "venv")
        # PATH as on a fresh Debian 12 (no pyenv), and an index that refuses connections at once.
        r = self.run_python_env(PATH="/usr/sbin:/usr/bin:/sbin:/bin", PADDOCK_PYTHON="", PADDOCK_VENV=venv,
                                PIP_INDEX_URL=f"http://127.0.0.1:{closed_port()}/simple")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "")
        for needed in ("boto3 (not installed)", "botocore (not installed)", "awscli", "PADDOCK_PYTHON=",
                       "PIP_INDEX_URL=", "tests/requirements.txt", DEBIAN_PYTHON):
            self.assertIn(needed, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertFalse(os.path.exists(venv), "a half-made venv was left behind")

    @unittest.skipUnless(os.path.exists(DEBIAN_PYTHON) and lacks_boto3(DEBIAN_PYTHON),
                         f"needs a {DEBIAN_PYTHON} without boto3 (Debian 12's own)")
    @unittest.skipIf(os.environ.get("PADDOCK_INNER_DISCOVERY"), "inside the discovery this test runs")
    def test_every_test_module_is_skipped_not_broken_on_a_python3_without_boto3(self):
        r = subprocess.run([DEBIAN_PYTHON, "-m", "unittest", "discover", "-s", os.path.join(REPO, "tests"),
                            "-p", "test_*.py"], capture_output=True, text=True, timeout=600, cwd=REPO,
                           env={**os.environ, "PADDOCK_INNER_DISCOVERY": "1", "PADDOCK_BIN": "/nonexistent"})
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertNotIn("Traceback", r.stderr)
        self.assertNotIn("ImportError", r.stderr)
        self.assertRegex(r.stderr, r"OK \(skipped=\d+\)")


if __name__ == "__main__":
    unittest.main()
