"""The README's five-minute tour, run as written with Debian 12's AWS CLI v2 (/usr/bin/aws, 2.9, which
ignores the profile's endpoint_url) against a `paddock up` of its own: a temp HOME (its ~/.aws gets
the profile), its own port, its own state directory (`.paddock` in a temp working directory), as root
with real containers.

The tour's ```sh blocks are read from README.md, so the README cannot drift from what is tested; they
run in order in one bash (`set -euo pipefail`), as a reader pastes them into a shell. The only
substitutions: `scripts/up ARGS` (re)starts `paddock up --listen 127.0.0.1:PORT --state-dir .paddock
ARGS` in the background and waits for its banner (the reader's first terminal); the endpoint
`127.0.0.1:4566` becomes the test's port; `build/release/src/cli/paddock` the binary under test. TOUR
(the tour's temp directory) is set to one inside the test's. Then the rootfs lines run a second time:
they are idempotent. One thing differs from a reader's shell: the CLI's ECS waiters poll every second
(AWS_DATA_PATH holds a copy of its waiters-2.json with `delay` 1 and the same total wait), where
the CLI's own poll every 6 s (tasks) or 15 s (services) — about 90 s of sleeping per run, which the
tour's text does not depend on. Needs root, crun, busybox-static and Debian's awscli."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import task_harness as th  # noqa: E402

README = os.path.join(h.REPO, "README.md")
CLI_V2 = "/usr/bin/aws"
README_ENDPOINT = "127.0.0.1:4566"
README_BINARY = "build/release/src/cli/paddock"


def tour_blocks():
    """The ```sh blocks of the README's "Five-minute tour", in order."""
    with open(README) as f:
        text = f.read()
    tour = text[text.index("## Five-minute tour"):text.index("## Running it yourself")]
    return re.findall(r"^```sh\n(.*?)^```", tour, flags=re.S | re.M)


def skip_reason():
    reason = th.skip_reason()
    if reason:
        return reason
    if not os.path.exists(CLI_V2):
        return f"needs Debian's awscli ({CLI_V2})"
    v = subprocess.run([CLI_V2, "--version"], capture_output=True, text=True)
    if "aws-cli/2" not in v.stdout + v.stderr:
        return f"{CLI_V2} is not AWS CLI v2: {v.stdout}{v.stderr}"
    return None


# Defined before the tour: what `scripts/up` does in the reader's first terminal, in the background.
PRELUDE = r'''
set -euo pipefail
UPS=0
tour_up() {
  if [[ -n "${SERVER_PID:-}" ]]; then kill -TERM "$SERVER_PID"; wait "$SERVER_PID" || true; fi
  UPS=$((UPS + 1))
  "$PADDOCK_BIN" up --listen "127.0.0.1:$TOUR_PORT" --state-dir .paddock "$@" > "server-$UPS.log" 2>&1 &
  SERVER_PID=$!
  echo "$SERVER_PID" > server.pid
  # Its banner says it serves (the reader waits for it too).
  for _ in $(seq 600); do
    grep -q "^Paddock is running" "server-$UPS.log" && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.05
  done
  echo "paddock up did not start:" >&2; cat "server-$UPS.log" >&2; return 1
}
# What `paddock agent` does in the reader's third terminal, in the background.
tour_agent() {
  "$PADDOCK_BIN" agent "$@" > agent.log 2>&1 &
  echo "$!" > agent.pid
  for _ in $(seq 600); do
    grep -q "^paddock agent registered as" agent.log && return 0
    kill -0 "$(cat agent.pid)" 2>/dev/null || break
    sleep 0.05
  done
  echo "paddock agent did not start:" >&2; cat agent.log >&2; return 1
}
'''


CLI_V2_ECS_WAITERS = "/usr/lib/python3/dist-packages/awscli/botocore/data/ecs/2014-11-13/waiters-2.json"


def fast_waiters(data_path):
    """A botocore data directory for AWS_DATA_PATH whose ECS waiters poll every second, as long in
    all as the CLI's own (delay x maxAttempts kept); nothing when the CLI's file is not there."""
    if not os.path.exists(CLI_V2_ECS_WAITERS):
        return
    with open(CLI_V2_ECS_WAITERS) as f:
        waiters = json.load(f)
    for w in waiters["waiters"].values():
        w["maxAttempts"] = w["delay"] * w["maxAttempts"]
        w["delay"] = 1
    target = os.path.join(data_path, "ecs", "2014-11-13")
    os.makedirs(target)
    with open(os.path.join(target, "waiters-2.json"), "w") as f:
        json.dump(waiters, f)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class ReadmeTour(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="paddock-tour-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.work = os.path.join(self.tmp, "work")
        self.home = os.path.join(self.tmp, "home")
        for d in (self.work, self.home):
            os.makedirs(d)
        self.port = free_port()
        self.addCleanup(self.stop_everything)

    def script(self, blocks):
        out = []
        for block in blocks:
            block = block.replace(README_ENDPOINT, f"127.0.0.1:{self.port}")
            block = re.sub(rf"^{re.escape(README_BINARY)} agent\b", "tour_agent", block, flags=re.M)
            block = block.replace(README_BINARY, '"$PADDOCK_BIN"')
            block = re.sub(r"^scripts/up\b", "tour_up", block, flags=re.M)
            out.append(block)
        return PRELUDE + "\n".join(out)

    def test_the_tour_runs_as_written_with_debians_cli_v2(self):
        blocks = tour_blocks()
        self.assertGreaterEqual(len(blocks), 6, "the tour's blocks were not found in README.md")
        self.assertTrue(blocks[0].strip().startswith("scripts/up"), blocks[0])
        image_lines = next(b for b in blocks if "import-rootfs" in b).split("\n\n")[0]
        # The reader's shell: Debian's tools first (no pyenv's aws), no AWS_* of the caller's.
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(HOME=self.home, PATH="/usr/sbin:/usr/bin:/sbin:/bin", PADDOCK_BIN=os.path.abspath(h.paddock_bin()),
                   TOUR_PORT=str(self.port), TOUR=os.path.join(self.tmp, "tour"),
                   AWS_DATA_PATH=os.path.join(self.tmp, "botocore-data"))
        fast_waiters(env["AWS_DATA_PATH"])
        # The whole tour, then its image lines again (idempotent: same image, no "File exists").
        script = self.script(blocks) + "\n" + image_lines.replace(README_BINARY, '"$PADDOCK_BIN"') + "\n"
        started = time.monotonic()
        r = subprocess.run(["bash", "-c", script], cwd=self.work, env=env, capture_output=True, text=True,
                           timeout=1200)
        took = time.monotonic() - started
        self.assertEqual(r.returncode, 0, f"the tour failed after {took:.0f} s:\n--- stdout\n{r.stdout[-4000:]}\n"
                                          f"--- stderr\n{r.stderr[-6000:]}\n--- server\n{self.server_log()}")
        out = r.stdout
        # Every curl (the Fargate task, the edge's route to a service, an EC2 task's host port, the
        # remote agent's task) got the page.
        self.assertEqual(out.count("hello from paddock"), 4, out)
        # The edge's API showed the routed service's two servers, both UP, in Traefik's shape.
        self.assertIn('"serverStatus":{', out)
        self.assertEqual(out.count('":"UP"'), 2, out)
        with open(os.path.join(self.work, "agent.log"), errors="replace") as f:
            agent_log = f.read()
        # The agent ran the server's image (it has its own store) and started without a false alarm.
        self.assertNotIn("no answer from the control plane yet", agent_log)
        self.assertIn('"PRIMARY"', out)  # update-service showed the new deployment
        self.assertIn("has reached a steady state", out)
        # The endpoint came from the tour's own `aws` function: the profile's is not read by CLI 2.9.
        with open(os.path.join(self.home, ".aws", "config")) as f:
            self.assertIn(f"endpoint_url = http://127.0.0.1:{self.port}", f.read())
        self.assertEqual(out.count('{"imported": "docker.io/library/busybox:demo"}'), 2, out)

    def server_log(self):
        logs = sorted(f for f in os.listdir(self.work) if f.startswith("server-") or f == "agent.log")
        text = ""
        for name in logs:
            with open(os.path.join(self.work, name), errors="replace") as f:
                text += f"--- {name}\n{f.read()[-3000:]}"
        return text

    def stop_everything(self):
        """Removes what the tour started: its services and tasks (through the API, while their agents
        run, so their networks go too), then the agent and the server."""
        pid_file = os.path.join(self.work, "server.pid")
        if not os.path.exists(pid_file):
            return
        try:
            creds = {}
            with open(os.path.join(self.work, ".paddock", "credentials")) as f:
                for line in f:
                    if "=" in line:
                        k, v = (x.strip() for x in line.split("=", 1))
                        creds[k] = v
            ecs = h.ecs_client(f"http://127.0.0.1:{self.port}", creds["aws_access_key_id"],
                               creds["aws_secret_access_key"], validate=False)
            arns = []
            for cluster in ecs.list_clusters()["clusterArns"]:
                for service in ecs.list_services(cluster=cluster)["serviceArns"]:
                    ecs.delete_service(cluster=cluster, service=service, force=True)
                for arn in ecs.list_tasks(cluster=cluster)["taskArns"]:
                    ecs.stop_task(cluster=cluster, task=arn, reason="test done")
                    arns.append((cluster, arn))
            deadline = time.monotonic() + 60
            for cluster, arn in arns:
                while time.monotonic() < deadline:
                    if ecs.describe_tasks(cluster=cluster, tasks=[arn])["tasks"][0]["lastStatus"] == "STOPPED":
                        break
                    time.sleep(0.2)
        finally:
            self.kill_by_pid_file(os.path.join(self.work, "agent.pid"))
            self.kill_by_pid_file(pid_file)

    @staticmethod
    def kill_by_pid_file(pid_file):
        if os.path.exists(pid_file):
            with open(pid_file) as f:
                pid = int(f.read())
            try:
                os.kill(pid, signal.SIGTERM)
                for _ in range(200):
                    os.kill(pid, 0)
                    time.sleep(0.05)
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


if __name__ == "__main__":
    unittest.main()
