#!/usr/bin/env python3
"""RunTask -> RUNNING and StopTask -> STOPPED latency of real busybox tasks on a local Paddock.

Starts `paddock server` (release build) on 127.0.0.1:0 in a temp state dir, imports a busybox
rootfs whose command exits promptly on SIGTERM, and runs N tasks one after another: each is timed
from the RunTask call to the first DescribeTasks that reports RUNNING, then from the StopTask call
to the first that reports STOPPED (DescribeTasks is polled every 2 ms, so the figures include up
to 2 ms of polling granularity). Prints p50/p90/p99/max. Needs root, crun and busybox-static.

    sudo python3 bench/run_task_bench.py [--tasks 50]
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
os.environ.setdefault("PADDOCK_BIN", os.path.join(ROOT, "build/release/src/cli/paddock"))

import paddock_harness as h  # noqa: E402
from test_images import busybox_rootfs, image  # noqa: E402


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def wait_status(ecs, arn, status, deadline_s=30):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        t = ecs.describe_tasks(tasks=[arn])["tasks"][0]
        if t["lastStatus"] == status:
            return t
        if t["lastStatus"] == "STOPPED" and status != "STOPPED":
            raise RuntimeError(f"task stopped: {t.get('stoppedReason')}")
        time.sleep(0.002)
    raise RuntimeError(f"{arn} did not reach {status}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=50)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="paddock-runtask-bench-")
    server = None
    try:
        state = os.path.join(tmp, "state")
        os.makedirs(state)
        _, key, secret = h.create_account(state)
        root = os.path.join(tmp, "rootfs")
        busybox_rootfs(root)
        os.symlink("busybox", os.path.join(root, "bin", "sleep"))
        image(state, "import-rootfs", root, "--name", "busybox:bench",
              "--cmd", '["/bin/sh","-c","trap \'exit 0\' TERM; sleep 3600 & wait"]')
        server = h.Server(state)
        server.start()
        ecs = h.ecs_client(server.endpoint, key, secret, validate=False)
        import boto3
        ec2 = boto3.client("ec2", endpoint_url=server.endpoint, region_name=h.REGION,
                           aws_access_key_id=key, aws_secret_access_key=secret)
        subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        ecs.create_cluster()
        ecs.register_task_definition(
            family="bench", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "c", "image": "busybox:bench", "stopTimeout": 5}])
        run_ms, stop_ms = [], []
        for i in range(args.tasks):
            t0 = time.monotonic()
            arn = ecs.run_task(taskDefinition="bench", launchType="FARGATE", networkConfiguration={
                "awsvpcConfiguration": {"subnets": [subnet]}})["tasks"][0]["taskArn"]
            wait_status(ecs, arn, "RUNNING")
            t1 = time.monotonic()
            ecs.stop_task(task=arn)
            wait_status(ecs, arn, "STOPPED")
            t2 = time.monotonic()
            run_ms.append((t1 - t0) * 1000)
            stop_ms.append((t2 - t1) * 1000)
        for name, values in (("RunTask -> RUNNING", run_ms), ("StopTask -> STOPPED", stop_ms)):
            print(f"{name:22} n={len(values):3}  p50 {statistics.median(values):7.1f} ms  "
                  f"p90 {pct(values, 90):7.1f} ms  p99 {pct(values, 99):7.1f} ms  max {max(values):7.1f} ms")
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
