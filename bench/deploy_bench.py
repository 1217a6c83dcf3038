#!/usr/bin/env python3
"""`paddock deploy --wait` to Healthy, end to end, on a local `paddock up` (issue 15).

Starts `paddock up` (release build unless PADDOCK_BIN says otherwise) in a temp state directory with
its edge and deploy controller, imports two busybox httpd images, and --rounds times runs
`paddock deploy --wait` of a 2-replica app with a health check, alternating the two images, timing
each command from its start to its exit (Healthy: both incoming tasks RUNNING and UP in the edge's
serverStatus). Each round is a redeploy that overlaps the previous deployment, as a user's would.
Prints p50/p90/max; the target is p50 <= 3 s. Needs root, crun and busybox-static.

    sudo python3 bench/deploy_bench.py [--rounds 10]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
os.environ.setdefault("PADDOCK_BIN", os.path.join(ROOT, "build/release/src/cli/paddock"))

import paddock_harness as h  # noqa: E402
import task_harness as th  # noqa: E402

SPEC = """\
[project]
name = "bench"

[containers.web]
image = "busybox:bench"
port = 8080
health_check = { path = "/", interval = "2s", timeout = "1s" }

[deploy]
replicas = 2

[routes]
"/" = "web"
"""


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="paddock-deploy-bench-")
    server = None
    try:
        home = os.path.join(tmp, "home")
        os.makedirs(home)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "XDG_CONFIG_HOME"}
        env["HOME"] = home
        state = os.path.join(tmp, "state")
        os.makedirs(state)
        for tag in ("a", "b"):
            th.httpd_image(state, tmp, f"busybox:{tag}", tag + "\n")
        server = h.Server(state, mode="up", env=env).start()
        with open(os.path.join(tmp, "paddock.toml"), "w") as f:
            f.write(SPEC)
        times = []
        for i in range(args.rounds + 1):
            image = "busybox:a" if i % 2 == 0 else "busybox:b"
            start = time.monotonic()
            r = subprocess.run([h.paddock_bin(), "deploy", "--image", f"web={image}", "--wait", "--wait-timeout", "120s"],
                               cwd=tmp, env=env, capture_output=True, text=True, timeout=180)
            took = time.monotonic() - start
            if r.returncode != 0:
                raise SystemExit(f"round {i}: {r.stdout} {r.stderr}")
            if i > 0:  # the first deploy also makes the cluster and the log group: reported apart
                times.append(took)
            else:
                first = took
            # The next round starts once the previous deployment's predecessor is gone (one overlap at a time).
            time.sleep(3)
        print(f"paddock deploy --wait -> Healthy, 2 replicas with a health check, {args.rounds} redeploys")
        print(f"  first deploy {first:.2f} s")
        print(f"  redeploys    p50 {statistics.median(times):.2f} s   p90 {pct(times, 90):.2f} s   max {max(times):.2f} s"
              f"   (target p50 <= 3 s)")
    finally:
        if server:
            server.stop(timeout=120)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
